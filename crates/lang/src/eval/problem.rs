//! Problems and tests: a `partition` line becomes a grounded problem, a
//! `test` block a case with its placement or question and its constraints.

use super::{name_graph, Interpreter, Value};
use crate::ast::*;
use crate::loader::{self, Program};
use crate::{Expect, ExpectedViolation, TestCase, TestQuestion};
use mcm_core::diag::{unknown_help, Diag};
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{Evaluator, GroundConstraint, Metric, Objective, Placement, Problem, Sense};
use mcm_core::source::Span;
use std::sync::Arc;

fn graph_and_package(
    ev: &mut Interpreter,
    locals: &[(String, Value)],
    g: &Expr,
    p: &Expr,
) -> Result<(Arc<Graph>, Arc<Package>), Vec<Diag>> {
    let gv = ev.value(0, locals, g);
    let pv = ev.value(0, locals, p);
    match (gv, pv) {
        (Ok(Value::Graph(g)), Ok(Value::Package(p))) => Ok((g, p)),
        (a, b) => {
            let mut d = Vec::new();
            for r in [a, b] {
                if let Err(e) = r {
                    d.push(e);
                }
            }
            if d.is_empty() {
                d.push(Diag::error("mcm::type", "expected a graph and a package").label(g.span.to(p.span), ""));
            }
            Err(d)
        }
    }
}

fn ground_all(
    ev: &mut Interpreter,
    locals: &[(String, Value)],
    uses: &[ConstraintUse],
    g: &Arc<Graph>,
    p: &Arc<Package>,
) -> Result<Vec<GroundConstraint>, Vec<Diag>> {
    let mut out = Vec::new();
    let mut errs = Vec::new();
    for u in uses {
        match ev.ground(0, locals, u, g, p) {
            Ok(c) => out.push(c),
            Err(d) => errs.push(d),
        }
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}

pub(crate) fn build_problem(
    prog: &Program,
    ev: &mut Interpreter,
    p: &PartitionDecl,
    index: usize,
    graph: Option<&Arc<Graph>>,
) -> Result<Problem, Vec<Diag>> {
    let (graph, package) = match graph {
        None => graph_and_package(ev, &[], &p.graph, &p.package)?,
        Some(g) => match ev.value(0, &[], &p.package) {
            Ok(Value::Package(k)) => (g.clone(), k),
            Ok(_) => {
                return Err(vec![
                    Diag::error("mcm::type", "expected a package").label(p.package.span, "")
                ])
            }
            Err(d) => return Err(vec![d]),
        },
    };
    // Every strategy, the cost model and the policy need a node to place;
    // an empty partition would "run" at infinite throughput.
    if graph.num_placed() == 0 {
        let all = graph.nodes.len();
        return Err(vec![Diag::error(
            "mcm::graph",
            format!("graph `{}` has no nodes to place", graph.name),
        )
        .label(
            p.graph.span,
            match all {
                0 => "this graph is empty".to_string(),
                n => format!("its {n} node(s) are all replicable"),
            },
        )
        .help("a problem needs at least one node that is not replicable")]);
    }
    // No chip: every partition is impossible, and the solver's "no valid
    // partition" would name no rule.
    if package.num_chips() == 0 {
        return Err(vec![Diag::error("mcm::package", "the package has no chips")
            .label(p.package.span, "this package has 0 chips")
            .help(
                "a problem needs a package of at least one chip (`ring(n = 0, ...)` makes none)",
            )]);
    }
    let constraints = ground_all(ev, &[], &p.requires, &graph, &package)?;
    let name = match (&p.alias, &p.graph.kind) {
        (Some(a), _) => a.name.clone(),
        (None, ExprKind::Var(v)) => v.clone(),
        _ => format!("problem{}", index + 1),
    };
    let objective = match &p.objective {
        Some(o) => Objective {
            sense: o.sense,
            // The type checker has refused any other name.
            metric: Metric::from_name(&o.metric.name).unwrap_or(Metric::Throughput),
        },
        None => Objective {
            sense: Sense::Maximize,
            metric: Metric::Throughput,
        },
    };
    let evaluator = p.evaluator.as_ref().map(|(cmd, span)| Evaluator {
        command: cmd.clone(),
        dir: prog.sources.base_dir(span.file),
    });
    Ok(Problem {
        name,
        graph,
        package,
        constraints,
        objective,
        evaluator,
        span: p.span,
        stricter: crate::stricter::maker(),
    })
}

pub(crate) fn build_test(prog: &Program, ev: &mut Interpreter, t: &TestDecl) -> Result<TestCase, Vec<Diag>> {
    let mut locals: Vec<(String, Value)> = Vec::new();
    let mut setup: Option<(Arc<Graph>, Arc<Package>, TestQuestion)> = None;
    let mut requires: Option<Vec<ConstraintUse>> = None;
    let mut expect = None;
    for s in &t.body {
        match s {
            TestStmt::Let(l) => {
                let v = ev.value(0, &locals, &l.value).map_err(|d| vec![d])?;
                locals.push((l.name.name.clone(), name_graph(v, &l.value, &l.name.name)));
            }
            TestStmt::Place(p) => {
                let (g, k) = graph_and_package(ev, &locals, &p.graph, &p.package)?;
                let placement = build_placement(ev, &locals, p, &g, &k)?;
                setup = Some((g, k, TestQuestion::Place(placement)));
            }
            TestStmt::Partition(p) => {
                let (g, k) = graph_and_package(ev, &locals, &p.graph, &p.package)?;
                if !p.requires.is_empty() {
                    requires.get_or_insert_with(Vec::new).extend(p.requires.iter().cloned());
                }
                setup = Some((g, k, TestQuestion::Partition));
            }
            TestStmt::Require(us, _) => requires.get_or_insert_with(Vec::new).extend(us.iter().cloned()),
            TestStmt::Expect(x, span) => expect = Some((x.clone(), *span)),
        }
    }
    let (Some((graph, package, question)), Some((x, expect_span))) = (setup, expect) else {
        return Err(vec![Diag::error(
            "mcm::test",
            format!("test \"{}\" is incomplete", t.name),
        )
        .label(t.name_span, "")]);
    };
    // The constraints to check: required ones, or every parameterless one in
    // scope, then those the test expects broken (grounded with their own
    // arguments, duplicates dropped after grounding).
    let mut uses = requires.unwrap_or_else(|| default_uses(prog, t.span));
    let required = uses.len();
    // Where each expected violation is grounded: a bare name already
    // required is matched by name; anything else is grounded on its own.
    let mut expected_at: Vec<Option<usize>> = Vec::new();
    if let Expectation::Violates(vs) = &x {
        for v in vs {
            if v.args.is_none() && uses[..required].iter().any(|u| u.name.name == v.name.name) {
                expected_at.push(None);
            } else {
                uses.push(v.clone());
                expected_at.push(Some(uses.len() - 1));
            }
        }
    }
    let grounded = ground_all(ev, &locals, &uses, &graph, &package)?;
    let expected_args: Vec<Option<Vec<(String, mcm_core::quantity::Scalar)>>> = expected_at
        .iter()
        .map(|at| at.filter(|&i| uses[i].args.is_some()).map(|i| grounded[i].args.clone()))
        .collect();
    let mut constraints: Vec<GroundConstraint> = Vec::new();
    for (i, c) in grounded.into_iter().enumerate() {
        let unnamed_args = i >= required && uses[i].args.is_none();
        let dup = constraints
            .iter()
            .any(|k| k.name == c.name && (unnamed_args || k.args == c.args));
        if !dup {
            constraints.push(c);
        }
    }
    let expect = match x {
        Expectation::Valid => Expect::Valid,
        Expectation::Satisfiable => Expect::Satisfiable,
        Expectation::Unsatisfiable => Expect::Unsatisfiable,
        Expectation::Violates(vs) => {
            let out = vs
                .iter()
                .zip(expected_args)
                .map(|(v, args)| ExpectedViolation {
                    name: v.name.name.clone(),
                    args,
                    span: v.span,
                })
                .collect();
            Expect::Violates(out)
        }
    };
    Ok(TestCase {
        name: t.name.clone(),
        span: t.name_span,
        graph,
        package,
        question,
        constraints,
        expect,
        expect_span,
    })
}

fn default_uses(prog: &Program, span: Span) -> Vec<ConstraintUse> {
    let mut names: Vec<(&String, &loader::ItemRef)> = prog.modules[0]
        .scope
        .iter()
        .filter(|(_, r)| matches!(prog.item(**r), Item::Constraint(c) if c.params.iter().all(|p| p.default.is_some())))
        .collect();
    // Declaration order: by module, then position.
    names.sort_by_key(|(_, r)| (r.module, r.index));
    names
        .into_iter()
        .map(|(n, _)| ConstraintUse {
            name: Ident { name: n.clone(), span },
            args: None,
            span,
        })
        .collect()
}

fn build_placement(
    ev: &mut Interpreter,
    locals: &[(String, Value)],
    p: &PlaceStmt,
    g: &Graph,
    k: &Package,
) -> Result<Placement, Vec<Diag>> {
    let mut chips: Vec<Option<(u32, Span)>> = vec![None; g.num_placed()];
    let mut errs = Vec::new();
    for e in &p.entries {
        let Some(node) = g.node_index(&e.node) else {
            errs.push(
                Diag::error("mcm::name", format!("graph `{}` has no node `{}`", g.name, e.node))
                    .label(e.node_span, "unknown node")
                    .help(unknown_help(&e.node, "node", g.ids())),
            );
            continue;
        };
        let Some(d) = g.decision_of(node) else {
            errs.push(
                Diag::error(
                    "mcm::test",
                    format!("node `{}` is replicable and takes no placement", e.node),
                )
                .label(e.node_span, "replicable")
                .help("leave it out of the placement"),
            );
            continue;
        };
        let chip = match ev.value(0, locals, &e.chip) {
            Ok(Value::Int(c)) if c >= 0 && (c as usize) < k.num_chips() => c as u32,
            Ok(Value::Int(c)) => {
                errs.push(
                    Diag::error("mcm::test", format!("chip {c} does not exist"))
                        .label(e.chip.span, format!("the package has chips 0..{}", k.num_chips()))
                        .help(format!("pick a chip id below {}", k.num_chips())),
                );
                continue;
            }
            Ok(_) => {
                errs.push(Diag::error("mcm::type", "expected a chip id").label(e.chip.span, ""));
                continue;
            }
            Err(d) => {
                errs.push(d);
                continue;
            }
        };
        if let Some((_, first)) = chips[d as usize] {
            errs.push(
                Diag::error("mcm::test", format!("node `{}` is placed twice", e.node))
                    .label(e.node_span, "again here")
                    .label(first, "first here"),
            );
            continue;
        }
        chips[d as usize] = Some((chip, e.node_span));
    }
    let missing: Vec<&str> = (0..g.num_placed())
        .filter(|d| chips[*d].is_none())
        .map(|d| g.placed_node(d as u32).id.as_str())
        .collect();
    if !missing.is_empty() && errs.is_empty() {
        errs.push(
            Diag::error(
                "mcm::test",
                format!(
                    "the placement leaves out {}",
                    mcm_core::graph::list_ids(missing.iter().copied())
                ),
            )
            .label(p.span, "incomplete placement")
            .help("give every node that is not replicable a chip"),
        );
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(Placement::new(
        chips.into_iter().map(|c| c.map_or(0, |x| x.0)).collect(),
    ))
}
