//! Semantics of the language that are easy to get subtly wrong: integer
//! division, aggregates at the end of a line, expectations by bare name,
//! and built-ins that a `let` might shadow.

use crate::common;

use mcmpart::problem::Placement;
use mcmpart::solver::check;
use mcmpart::testing::{self, Status};

fn run_tests(text: &str) -> Vec<testing::TestResult> {
    let c = common::compile_ok(text);
    c.tests.iter().map(testing::run).collect()
}

#[test]
fn constant_and_placement_dependent_division_agree() {
    // (x + 7) / -2 and (x + 7) % -2 for x on chip 0, computed once from a
    // constant chip id and once from chip(u): both round down.
    let c = common::compile_ok(
        "topology t() { chips c[3] }\nlet g = graph { a }\n\
         constraint by_chip() { forall d in chips where d == 0: (d + 7) / -2 == -4 and (d + 7) % -2 == -1 }\n\
         constraint by_node() { forall u in nodes: (chip(u) + 7) / -2 == -4 and (chip(u) + 7) % -2 == -1 }\n\
         partition g onto t() { require by_chip, by_node }\n",
    );
    let p = c.problem(None).unwrap();
    assert!(check(&p.graph, &p.package, &p.constraints, &Placement::new(vec![0])).is_empty());
    // On chip 1, (1 + 7) / -2 == -4 exactly and 8 % -2 == 0: by_node breaks.
    let v = check(&p.graph, &p.package, &p.constraints, &Placement::new(vec![1]));
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].name, "by_node");
}

#[test]
fn count_at_the_end_of_a_line_does_not_swallow_the_next() {
    let c = common::compile_ok(
        "let k = count(i in 0..4)\ntopology t() { chips c[k] }\nlet p = t()\npartition graph { a } onto p\n",
    );
    assert_eq!(c.problem(None).unwrap().package.num_chips(), 4);
}

#[test]
fn expect_violates_by_bare_name_matches_a_required_rule_with_arguments() {
    let rs = run_tests(
        "use std::topologies::mesh\n\
         constraint near(k: int) { forall (u, v) in edges: hops(chip(u), chip(v)) <= k }\n\
         test \"far\" {\n  let g = graph { a -> b }\n\
         let t = mesh(rows = 2, cols = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         place g onto t { a: 0, b: 3 }\n  require near(1)\n  expect violates near\n}\n",
    );
    assert_eq!(rs[0].status, Status::Pass, "{}", rs[0].message);
}

#[test]
fn expect_violates_with_other_arguments_is_checked_on_its_own() {
    let rs = run_tests(
        "use std::topologies::mesh\n\
         constraint near(k: int) { forall (u, v) in edges: hops(chip(u), chip(v)) <= k }\n\
         test \"not that far\" {\n  let g = graph { a -> b }\n\
         let t = mesh(rows = 2, cols = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         place g onto t { a: 0, b: 3 }\n  require near(1)\n  expect violates near(2)\n}\n",
    );
    assert_eq!(rs[0].status, Status::Fail);
    assert!(rs[0].message.contains("expected it to break near"), "{}", rs[0].message);
}

#[test]
fn a_let_does_not_hide_a_builtin_function() {
    let c = common::compile_ok(
        "let chip = 3\ntopology t() { chips c[5] }\nconstraint low() { forall u in nodes: chip(u) <= chip }\n\
         partition graph { a } onto t() { require low }\n",
    );
    // `chip(u)` is the built-in, `chip` alone the let: a on 3 holds, on 4 not.
    let p = c.problem(None).unwrap();
    assert!(check(&p.graph, &p.package, &p.constraints, &Placement::new(vec![3])).is_empty());
    assert_eq!(
        check(&p.graph, &p.package, &p.constraints, &Placement::new(vec![4])).len(),
        1
    );
}

#[test]
fn violation_reports_carry_units() {
    let rs = run_tests(
        "use std::placement::memory_capacity\nuse std::topologies::ring\n\
         test \"too heavy\" {\n  let g = graph { a { params = 4 MiB } }\n\
         let t = ring(n = 1, memory = 3 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         place g onto t { a: 0 }\n  expect violates memory_capacity\n}\n",
    );
    assert!(
        rs[0].violations[0].contains("4 MiB <= 3 MiB is false"),
        "{:?}",
        rs[0].violations
    );
}
