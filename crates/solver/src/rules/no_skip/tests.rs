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

#[test]
fn empty_chips_outnumbering_the_nodes_left_fail_at_once() {
    // Node 0 on chip 3 needs chips 0..=2 filled; two nodes are left.
    let (g, p) = (graph(&[0; 3], &[]), ring(&[9; 4]));
    let rule = native("no_skip");
    let mut s = solver(&g, &p, &rule);
    s.set(0, &[3]).unwrap();
    assert!(s.propagate().is_err());
}

#[test]
fn nodes_every_filling_needs_take_the_empty_chips() {
    // Chips 0 and 1 must be filled, by nodes 1 and 2: neither may join node 0.
    let (g, p) = (graph(&[0; 4], &[]), ring(&[9; 4]));
    let rule = native("no_skip");
    let mut s = solver(&g, &p, &rule);
    s.set(0, &[2]).unwrap();
    s.set(3, &[2, 3]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(1, &[0, 1]);
    s.assert_dom(2, &[0, 1]);
}

#[test]
fn a_node_confined_to_filled_chips_fills_nothing() {
    // Node 3 may only join node 0 on chip 2: chips 0 and 1 need nodes 1 and 2.
    let (g, p) = (graph(&[0; 4], &[]), ring(&[9; 3]));
    let rule = native("no_skip");
    let mut s = solver(&g, &p, &rule);
    s.set(0, &[2]).unwrap();
    s.set(3, &[2]).unwrap();
    s.set(1, &[0]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(2, &[1]);
}

/// Whether the chips in use are 0..k.
fn no_gap(chips: &[u32]) -> bool {
    let top = chips.iter().copied().max().unwrap_or(0);
    (0..=top).all(|c| chips.contains(&c))
}

/// Every placement within `doms`, in odometer order.
fn placements(doms: &[Vec<u32>], mut f: impl FnMut(&[u32])) {
    let mut at = vec![0usize; doms.len()];
    loop {
        let p: Vec<u32> = at.iter().zip(doms).map(|(&i, d)| d[i]).collect();
        f(&p);
        let mut i = 0;
        loop {
            if i == doms.len() {
                return;
            }
            at[i] += 1;
            if at[i] < doms[i].len() {
                break;
            }
            at[i] = 0;
            i += 1;
        }
    }
}

#[test]
fn propagation_keeps_every_solution_and_fails_exactly_when_there_is_none() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
    let rule = native("no_skip");
    let (mut failed, mut pruned) = (0, 0);
    for case in 0..3000 {
        let n = rng.random_range(1..=6);
        let c = rng.random_range(1..=5);
        let (g, p) = (graph(&vec![0; n], &[]), ring(&vec![9; c]));
        let mut s = TestSolver::new(&g, &p);
        s.post(NoSkip::build, &rule).unwrap();
        // Random domains: each node keeps a random nonempty subset.
        let mut doms = Vec::new();
        for x in 0..n as u32 {
            let mut keep: Vec<u32> = (0..c as u32).filter(|_| rng.random_bool(0.7)).collect();
            if keep.is_empty() {
                keep.push(rng.random_range(0..c as u32));
            }
            s.set(x, &keep).unwrap();
            doms.push(keep);
        }
        let mut solutions = Vec::new();
        placements(&doms, |pl| {
            if no_gap(pl) {
                solutions.push(pl.to_vec());
            }
        });
        s.wake_all();
        match s.propagate() {
            Err(_) => {
                assert!(solutions.is_empty(), "case {case}: {doms:?} failed with {solutions:?}");
                failed += 1;
            }
            Ok(()) => {
                assert!(!solutions.is_empty(), "case {case}: {doms:?} has no solution");
                for sol in &solutions {
                    for (x, &v) in sol.iter().enumerate() {
                        assert!(s.dom(x as u32).contains(&v), "case {case}: {doms:?} lost {sol:?}");
                    }
                }
                if s.domains() != doms {
                    pruned += 1;
                }
            }
        }
    }
    assert!(
        failed > 20 && pruned > 20,
        "both sides exercised: {failed} failed, {pruned} pruned"
    );
}
