use super::Memory;
use crate::harness::{check_incremental_against_scratch, graph, native, ring, TestSolver};

#[test]
fn weights_that_fit_no_chip_are_removed_at_the_root() {
    let (g, p) = (graph(&[5, 1], &[]), ring(&[4, 6]));
    let rule = native("memory_capacity");
    let mut s = TestSolver::new(&g, &p);
    s.post(Memory::build, &rule).unwrap();
    s.assert_dom(0, &[1]);
    s.assert_dom(1, &[0, 1]);
}

#[test]
fn a_full_chip_turns_heavy_nodes_away() {
    let (g, p) = (graph(&[3, 2, 1], &[]), ring(&[4, 9]));
    let rule = native("memory_capacity");
    let mut s = TestSolver::new(&g, &p);
    s.post(Memory::build, &rule).unwrap();
    s.set(0, &[0]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(1, &[1]);
    s.assert_dom(2, &[0, 1]);
}

#[test]
fn an_overfull_chip_fails() {
    let (g, p) = (graph(&[3, 3, 2], &[]), ring(&[4, 4]));
    let rule = native("memory_capacity");
    let mut s = TestSolver::new(&g, &p);
    s.post(Memory::build, &rule).unwrap();
    s.set(0, &[0]).unwrap();
    assert!(
        s.propagate().is_err(),
        "nodes 1 and 2 both go to chip 1, which holds 4 of their 5"
    );
}

#[test]
fn incremental_propagation_matches_from_scratch() {
    let failed = check_incremental_against_scratch(13, 300, Memory::build, |_| native("memory_capacity"));
    assert!(failed > 0, "some decisions fail");
}

#[test]
fn weights_over_every_memory_together_fail_at_the_root() {
    // Each node fits any chip alone; together they outweigh both chips.
    let (g, p) = (graph(&[3, 3, 3], &[]), ring(&[4, 4]));
    let rule = native("memory_capacity");
    let mut s = TestSolver::new(&g, &p);
    assert!(s.post(Memory::build, &rule).is_err(), "9 bytes of weights, 8 of memory");
    let (g, p) = (graph(&[3, 3, 2], &[]), ring(&[4, 4]));
    let mut s = TestSolver::new(&g, &p);
    assert!(s.post(Memory::build, &rule).is_ok(), "8 bytes fit 8 until placed");
}
