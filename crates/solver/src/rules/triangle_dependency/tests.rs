use super::Triangle;
use crate::harness::{check_incremental_against_scratch, graph, native, ring, TestSolver};

/// a -> b -> c and a -> c.
fn triangle() -> mcm_core::graph::Graph {
    graph(&[0; 3], &[(0, 1), (1, 2), (0, 2)])
}

#[test]
fn a_node_between_the_ends_of_an_arc_goes_to_one_of_them() {
    let (g, p) = (triangle(), ring(&[9; 4]));
    let rule = native("triangle_dependency");
    let mut s = TestSolver::new(&g, &p);
    s.post(Triangle::build, &rule).unwrap();
    s.set(0, &[0]).unwrap();
    s.set(2, &[1]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(1, &[0, 1]);
}

#[test]
fn chips_that_close_a_cycle_are_pruned_and_a_shortcut_fails() {
    let (g, p) = (triangle(), ring(&[9; 3]));
    let rule = native("triangle_dependency");
    let mut s = TestSolver::new(&g, &p);
    s.post(Triangle::build, &rule).unwrap();
    s.set(0, &[0]).unwrap();
    s.set(1, &[1]).unwrap();
    s.propagate().unwrap();
    // c on chip 0 closes the cycle 0 -> 1 -> 0.
    s.assert_dom(2, &[1, 2]);
    s.push();
    // c on chip 2: the arc 0 -> 2 next to the walk 0 -> 1 -> 2.
    s.set(2, &[2]).unwrap();
    assert!(s.propagate().is_err());
    s.pop();
    s.assert_dom(2, &[1, 2]);
}

#[test]
fn incremental_propagation_matches_from_scratch() {
    let failed = check_incremental_against_scratch(14, 1500, Triangle::build, |_| native("triangle_dependency"));
    assert!(failed > 0, "some decisions fail");
}
