//! Runs the `test` blocks of a file: each judges a hand-made placement, or
//! asks whether any valid partition exists, and says why it passed or failed.

use crate::lang::{Expect, ExpectedViolation, TestCase, TestQuestion};
use crate::solver::{check, Violation};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
}

#[derive(Clone, Debug, Serialize)]
pub struct TestResult {
    pub name: String,
    pub status: Status,
    /// Why it passed or failed, in one sentence.
    pub message: String,
    /// What the placement breaks (for `place` tests).
    pub violations: Vec<String>,
}

pub fn run(t: &TestCase) -> TestResult {
    let result = |status, message: String, violations: Vec<String>| TestResult {
        name: t.name.clone(),
        status,
        message,
        violations,
    };
    match &t.question {
        TestQuestion::Place(p) => {
            let vs = check(&t.graph, &t.package, &t.constraints, p);
            let shown: Vec<String> = vs.iter().map(Violation::describe).collect();
            match &t.expect {
                Expect::Valid if vs.is_empty() => result(Status::Pass, format!("valid under {}", names(t)), shown),
                Expect::Valid => result(
                    Status::Fail,
                    format!("expected valid, but it breaks {}", broken(&vs)),
                    shown,
                ),
                Expect::Violates(expected) => {
                    let missing: Vec<&ExpectedViolation> = expected
                        .iter()
                        .filter(|x| !vs.iter().any(|v| matches(t, x, v)))
                        .collect();
                    if missing.is_empty() {
                        result(Status::Pass, format!("breaks {} as expected", broken(&vs)), shown)
                    } else {
                        let m: Vec<&str> = missing.iter().map(|x| x.name.as_str()).collect();
                        let also = if vs.is_empty() {
                            "it breaks nothing".to_string()
                        } else {
                            format!("it breaks {}", broken(&vs))
                        };
                        result(
                            Status::Fail,
                            format!("expected it to break {}, but {also}", m.join(", ")),
                            shown,
                        )
                    }
                }
                _ => result(
                    Status::Fail,
                    "a placement test must expect valid or violates".into(),
                    shown,
                ),
            }
        }
        TestQuestion::Partition => {
            let want_sat = matches!(t.expect, Expect::Satisfiable);
            match solve(t) {
                Ok(p) => {
                    let witness = witness(t, &p);
                    if want_sat {
                        result(Status::Pass, format!("satisfiable, e.g. {witness}"), Vec::new())
                    } else {
                        result(
                            Status::Fail,
                            format!("expected unsatisfiable, but {witness} is valid"),
                            Vec::new(),
                        )
                    }
                }
                Err(conflict) => {
                    if want_sat {
                        result(
                            Status::Fail,
                            format!("expected satisfiable, but {conflict}"),
                            Vec::new(),
                        )
                    } else {
                        result(Status::Pass, format!("unsatisfiable: {conflict}"), Vec::new())
                    }
                }
            }
        }
    }
}

/// Asks the solver for a valid placement; on failure, names the rules in conflict.
fn solve(t: &TestCase) -> Result<crate::problem::Placement, String> {
    use crate::solver::{node_order, sample, Options, Order, Solver};
    use rand::SeedableRng;
    let problem = crate::problem::Problem {
        name: t.name.clone(),
        graph: t.graph.clone(),
        package: t.package.clone(),
        constraints: t.constraints.clone(),
        objective: crate::problem::Objective {
            sense: crate::problem::Sense::Maximize,
            metric: crate::problem::Metric::Throughput,
        },
        evaluator: None,
        span: t.span,
        stricter: Default::default(),
    };
    let conflict = |cs: &[usize]| -> String {
        match cs {
            [] => format!("no placement satisfies {}", names(t)),
            [one] => format!("no placement satisfies {}", t.constraints[*one].display_name()),
            many => {
                let v: Vec<String> = many.iter().map(|&i| t.constraints[i].display_name()).collect();
                format!("{} conflict", v.join(", "))
            }
        }
    };
    let mut solver = Solver::new(&problem, Options::default()).map_err(|inf| conflict(&inf.constraints))?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let order = node_order(&solver, Order::Topological, &mut rng);
    sample(&mut solver, &order, None, &mut rng).map_err(|inf| conflict(&inf.constraints))
}

fn matches(t: &TestCase, x: &ExpectedViolation, v: &Violation) -> bool {
    let c = &t.constraints[v.constraint];
    c.name == x.name && x.args.as_ref().is_none_or(|a| *a == c.args)
}

fn names(t: &TestCase) -> String {
    if t.constraints.is_empty() {
        return "no constraints".into();
    }
    let v: Vec<String> = t.constraints.iter().map(|c| c.display_name()).collect();
    v.join(", ")
}

fn broken(vs: &[Violation]) -> String {
    let mut names: Vec<&str> = vs.iter().map(|v| v.name.as_str()).collect();
    names.dedup();
    let mut seen = Vec::new();
    for n in names {
        if !seen.contains(&n) {
            seen.push(n);
        }
    }
    seen.join(", ")
}

fn witness(t: &TestCase, p: &crate::problem::Placement) -> String {
    let parts: Vec<String> = p
        .chips
        .iter()
        .enumerate()
        .take(8)
        .map(|(d, c)| format!("{}: {c}", t.graph.placed_node(d as u32).id))
        .collect();
    let more = if p.chips.len() > 8 { ", ..." } else { "" };
    format!("{{ {}{more} }}", parts.join(", "))
}
