use super::NoSkip;
use crate::harness::{check_incremental_against_scratch, graph, native, ring, TestSolver};
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::GroundConstraint;

/// The propagator posted and run at the root.
fn solver<'p>(g: &'p Graph, p: &'p Package, rule: &'p GroundConstraint) -> TestSolver<'p> {
    let mut s = TestSolver::new(g, p);
    s.post(NoSkip::build, rule).unwrap();
    s.wake_all();
    s.propagate().unwrap();
    s
}

#[test]
fn a_chip_only_one_node_can_fill_gets_it() {
    let (g, p) = (graph(&[0; 3], &[]), ring(&[9; 3]));
    let rule = native("no_skip");
    let mut s = solver(&g, &p, &rule);
    s.set(0, &[2]).unwrap();
    s.set(1, &[0]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(2, &[1]);
}

#[test]
fn a_chip_nobody_can_take_caps_every_domain() {
    let (g, p) = (graph(&[0; 3], &[]), ring(&[9; 4]));
    let rule = native("no_skip");
    let mut s = solver(&g, &p, &rule);
    for x in 0..3 {
        s.remove(x, 2).unwrap();
    }
    s.propagate().unwrap();
    for x in 0..3 {
        s.assert_dom(x, &[0, 1]);
    }
}

#[test]
fn a_gap_below_a_used_chip_fails() {
    let (g, p) = (graph(&[0; 2], &[]), ring(&[9; 3]));
    let rule = native("no_skip");
    let mut s = solver(&g, &p, &rule);
    s.set(0, &[2]).unwrap();
    s.set(1, &[2]).unwrap();
    assert!(s.propagate().is_err());
}

#[test]
fn incremental_propagation_matches_from_scratch() {
    let failed = check_incremental_against_scratch(12, 300, NoSkip::build, |_| native("no_skip"));
    assert!(failed > 0, "some decisions fail");
}
