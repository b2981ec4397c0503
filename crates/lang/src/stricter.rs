//! A problem's stricter twin: the same problem with the pipeline rules of
//! `std::placement` it does not require grounded and added, which the
//! search tries first where they make good partitions easy to find and to
//! prove ([`mcm_core::problem::Stricter`]).

use crate::ast::{ConstraintUse, Ident};
use crate::eval::Interpreter;
use crate::{loader, types};
use mcm_core::problem::{Problem, Stricter};
use std::path::Path;
use std::sync::Arc;

/// The rules of the MCM paper's pipeline, as `std::placement` names them.
pub const PIPELINE_RULES: [&str; 4] = ["acyclic_flow", "no_skip", "triangle_dependency", "memory_capacity"];

/// The pipeline rules `problem` does not require (a user's copy under the
/// same name counts as required only when it is the standard one).
pub fn missing_rules(problem: &Problem) -> Vec<&'static str> {
    PIPELINE_RULES
        .into_iter()
        .filter(|r| !problem.constraints.iter().any(|c| c.native.as_deref() == Some(*r)))
        .collect()
}

/// The maker the front end gives every problem it builds.
pub fn maker() -> Stricter {
    Stricter::new(Arc::new(twin))
}

/// `problem` with the pipeline rules it lacks; `None` when it lacks none or
/// they cannot be grounded over its graph and package.
pub fn twin(problem: &Problem) -> Option<Problem> {
    let missing = missing_rules(problem);
    if missing.is_empty() {
        return None;
    }
    let text = format!("use std::placement::{{{}}}\n", missing.join(", "));
    let (program, diags) = loader::load_str("<pipeline rules>", &text, Path::new("."));
    if !diags.is_empty() {
        return None;
    }
    let (diags, types) = types::check_program(&program);
    if !diags.is_empty() {
        return None;
    }
    let mut ev = Interpreter::new(&program, &types);
    let mut constraints = problem.constraints.clone();
    for name in missing {
        let u = ConstraintUse {
            name: Ident {
                name: name.to_string(),
                span: Default::default(),
            },
            args: None,
            span: Default::default(),
        };
        let mut c = ev.ground(0, &[], &u, &problem.graph, &problem.package).ok()?;
        // Its spans are in a source the problem's reports do not know.
        c.decl_span = problem.span;
        c.use_span = problem.span;
        constraints.push(c);
    }
    Some(Problem {
        constraints,
        stricter: Stricter::default(),
        ..problem.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(rules: &str) -> Problem {
        let text = format!(
            "use std::placement::{{{rules}}}\nuse std::topologies::ring\n\
             let g = graph(\"../../examples/data/tiny_mlp.json\")\n\
             let p = ring(n = 4, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)\n\
             partition g onto p {{ require {rules}\n maximize throughput }}\n"
        );
        let c = crate::compile_str("t.mcm", &text, Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(c.ok(), "{:?}", c.diags);
        c.problems[0].clone()
    }

    #[test]
    fn the_twin_adds_the_pipeline_rules_a_problem_lacks() {
        let p = problem("memory_capacity");
        assert_eq!(
            missing_rules(&p),
            vec!["acyclic_flow", "no_skip", "triangle_dependency"]
        );
        let t = p.stricter().expect("a twin");
        let names: Vec<_> = t.constraints.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["memory_capacity", "acyclic_flow", "no_skip", "triangle_dependency"]
        );
        assert!(t.constraints.iter().all(|c| c.native.is_some()));
        // acyclic_flow is grounded once per edge.
        assert_eq!(t.constraints[1].instances.len(), p.graph.placed_edges().len());
        assert!(missing_rules(t).is_empty());
        assert!(t.stricter().is_none());
    }

    #[test]
    fn a_problem_with_every_pipeline_rule_has_no_twin() {
        let p = problem("acyclic_flow, no_skip, triangle_dependency, memory_capacity");
        assert!(p.stricter().is_none());
    }
}
