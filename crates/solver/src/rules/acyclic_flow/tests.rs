use super::Precedence;
use crate::harness::{check_incremental_against_scratch, graph, native, ring, TestSolver};

#[test]
fn bounds_travel_down_and_up_the_edges() {
    // a -> b -> c on four chips.
    let (g, p) = (graph(&[0; 3], &[(0, 1), (1, 2)]), ring(&[9; 4]));
    let rule = native("acyclic_flow");
    let mut s = TestSolver::new(&g, &p);
    s.post(Precedence::build, &rule).unwrap();
    s.set(0, &[2, 3]).unwrap();
    s.set(2, &[0, 1, 2]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(1, &[2]);
    s.assert_dom(2, &[2]);
    s.assert_dom(0, &[2]);
}

#[test]
fn a_node_above_its_consumer_fails() {
    let (g, p) = (graph(&[0; 3], &[(0, 1), (1, 2)]), ring(&[9; 4]));
    let rule = native("acyclic_flow");
    let mut s = TestSolver::new(&g, &p);
    s.post(Precedence::build, &rule).unwrap();
    s.set(0, &[3]).unwrap();
    s.set(2, &[1, 2]).unwrap();
    assert_eq!(s.propagate().unwrap_err().constraint, 0);
}

#[test]
fn incremental_propagation_matches_from_scratch() {
    let failed = check_incremental_against_scratch(11, 300, Precedence::build, |_| native("acyclic_flow"));
    // Bounds of `<=` over a DAG are globally consistent: a choice within
    // the domains never fails.
    assert_eq!(failed, 0);
}
