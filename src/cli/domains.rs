//! `mcmpart domains FILE [--set NODE=CHIPS]...`: the chips each node can
//! still take after propagation, at the root or after the given decisions
//! (each one `set_domain`, in order): what the solver offers a placer.

use super::output::Output;
use super::problem::{with_problem, SolverArgs};
use crate::error::{Error, Result, Status};
use crate::graph::Graph;
use crate::problem::Problem;
use crate::solver::Solver;

/// One `--set NODE=CHIPS`: a node id and the chips (`3`, or `1,2,5`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub node: String,
    pub chips: Vec<u32>,
}

/// Parses `NODE=C[,C...]` (the node id may hold `=`; the last one splits).
pub fn decision(s: &str) -> std::result::Result<Decision, String> {
    let (node, chips) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("`{s}` is not NODE=CHIPS (for example `fc1=2` or `fc1=0,1`)"))?;
    let chips = chips
        .split(',')
        .map(|c| {
            c.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{c}` in `{s}` is not a chip number"))
        })
        .collect::<std::result::Result<Vec<u32>, String>>()?;
    Ok(Decision {
        node: node.to_string(),
        chips,
    })
}

/// What the solver says after the decisions.
#[derive(Debug, PartialEq)]
pub struct Domains {
    /// Decisions standing after each `--set` (fewer than its position
    /// after a conflict).
    pub standing: Vec<usize>,
    /// Each placed node's domain, by placed index.
    pub domains: Vec<Vec<u32>>,
    /// The rules in conflict, once a conflict undid every decision.
    pub infeasible: Option<Vec<String>>,
}

/// Applies `sets` to `solver` in order and reads every domain.
pub fn after(p: &Problem, solver: &mut Solver, sets: &[Decision]) -> Result<Domains> {
    let mut standing = Vec::with_capacity(sets.len());
    for d in sets {
        let u = placed(&p.graph, &d.node)?;
        if let Some(&c) = d.chips.iter().find(|&&c| c as usize >= p.package.num_chips()) {
            return Err(Error::usage(format!(
                "chip {c} in `--set {}=...` is past the package's {} chips",
                d.node,
                p.package.num_chips()
            )));
        }
        standing.push(solver.set_domain(u, &d.chips));
    }
    Ok(Domains {
        standing,
        domains: (0..solver.num_nodes() as u32).map(|u| solver.get_domain(u)).collect(),
        infeasible: solver.infeasible().map(|inf| {
            inf.constraints
                .iter()
                .map(|&k| p.constraints[k].display_name())
                .collect()
        }),
    })
}

fn placed(g: &Graph, id: &str) -> Result<u32> {
    let k = g.node_index(id).ok_or_else(|| {
        Error::usage(format!("no node `{id}` in graph `{}`", g.name)).with_help(crate::diag::unknown_help(
            id,
            "node",
            g.ids(),
        ))
    })?;
    g.decision_of(k)
        .ok_or_else(|| Error::usage(format!("node `{id}` is replicable: it is copied, not placed")))
}

pub fn run(out: &Output, file: &std::path::Path, args: &SolverArgs, sets: &[Decision]) -> Result {
    with_problem(file, args.problem.as_deref(), None, |p, sources| {
        let mut solver = args.solver(p, sources)?;
        let d = after(p, &mut solver, sets)?;
        let g = &p.graph;
        if out.json {
            let domains: serde_json::Map<String, serde_json::Value> = d
                .domains
                .iter()
                .enumerate()
                .map(|(u, dom)| (g.placed_node(u as u32).id.clone(), serde_json::json!(dom)))
                .collect();
            out.print_json(&serde_json::json!({
                "problem": p.name, "standing": d.standing, "decisions": solver.num_decisions(),
                "infeasible": d.infeasible, "domains": domains, "stats": solver.stats,
            }));
        } else {
            for (u, dom) in d.domains.iter().enumerate() {
                let chips: Vec<String> = dom.iter().map(u32::to_string).collect();
                println!("{}: {}", g.placed_node(u as u32).id, chips.join(" "));
            }
            println!(
                "{} decision(s) standing of {} given",
                solver.num_decisions(),
                sets.len()
            );
            if let Some(rules) = &d.infeasible {
                println!("infeasible: {} conflict", rules.join(", "));
            }
        }
        Ok(Status::Success)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::compile_str;
    use crate::solver::Options;

    #[test]
    fn decisions_parse_and_refuse_what_is_no_decision() {
        assert_eq!(
            decision("fc1=0,2").unwrap(),
            Decision {
                node: "fc1".into(),
                chips: vec![0, 2]
            }
        );
        assert_eq!(decision("a=b=3").unwrap().node, "a=b");
        assert!(decision("fc1").unwrap_err().contains("NODE=CHIPS"));
        assert!(decision("fc1=x").unwrap_err().contains("`x`"));
    }

    #[test]
    fn domains_follow_the_decisions_and_report_a_conflict() {
        let c = compile_str(
            "t.mcm",
            "use std::placement::{acyclic_flow, no_skip}\nuse std::topologies::ring\n\
             let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
             let g = graph { a -> b -> c }\npartition g onto t { require acyclic_flow, no_skip }\n",
            std::path::Path::new("."),
        );
        let p = c.problem(None).unwrap();
        let mut s = Solver::new(p, Options::default()).unwrap();
        let set = |s: &str| decision(s).unwrap();
        // c on 1 puts a and b on chips <= 1; a on 2 then fails and is undone.
        let d = after(p, &mut s, &[set("c=1"), set("a=2")]).unwrap();
        assert_eq!(d.standing, vec![1, 1]);
        assert_eq!(d.domains[1], vec![0, 1]);
        assert_eq!(d.infeasible, None);
        let e = after(p, &mut s, &[set("zz=1")]).unwrap_err();
        assert!(e.message.contains("no node `zz`"), "{}", e.message);
        assert!(after(p, &mut s, &[set("a=7")])
            .unwrap_err()
            .message
            .contains("past the package"));
    }
}
