use super::Triangle;
use crate::harness::{
    check_incremental_against_scratch, check_incremental_against_scratch_sized, graph, native, ring, TestSolver,
};

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
    // c on chip 0 closes the cycle 0 -> 1 -> 0; c on chip 2 makes the arc
    // 0 -> 2 next to the walk 0 -> 1 -> 2 (a and b feed both b and c from
    // chip 0, and b reaches c: c joins b).
    s.assert_dom(2, &[1]);
}

#[test]
fn a_shortcut_fails_when_it_is_made() {
    let (g, p) = (triangle(), ring(&[9; 3]));
    let rule = native("triangle_dependency");
    let mut s = TestSolver::new(&g, &p);
    s.post(Triangle::build, &rule).unwrap();
    s.set(0, &[0]).unwrap();
    s.set(2, &[2]).unwrap();
    s.set(1, &[1]).unwrap();
    assert!(s.propagate().is_err());
}

#[test]
fn a_node_far_from_a_new_arc_is_confined_by_it() {
    // x1 -> x2; p -> u -> v -> w -> q; r -> t.
    let g = graph(&[0; 9], &[(0, 1), (2, 3), (3, 4), (4, 5), (5, 6), (7, 8)]);
    let p = ring(&[9; 4]);
    let rule = native("triangle_dependency");
    let mut s = TestSolver::new(&g, &p);
    s.post(Triangle::build, &rule).unwrap();
    // A first arc, 0 -> 1, then v between chips 0 and 2 with no arc
    // between them: v may go anywhere.
    for (x, chip) in [(0, 0), (1, 1), (2, 0), (6, 2)] {
        s.set(x, &[chip]).unwrap();
        s.propagate().unwrap();
    }
    s.assert_dom(4, &[0, 1, 2, 3]);
    // The arc 0 -> 2 appears elsewhere: v, next to no fixed node, may
    // only join one of its ends.
    for (x, chip) in [(7, 0), (8, 2)] {
        s.set(x, &[chip]).unwrap();
        s.propagate().unwrap();
    }
    s.assert_dom(4, &[0, 2]);
}

/// With acyclic flow and a per-chip count at 1.5x the average (the pipeline
/// rules and a binding count, as a user writes them), against enumeration:
/// no chip of a valid completion of random decisions is pruned, and
/// propagation fails only when none exists.
#[test]
fn with_flow_and_a_tight_count_no_valid_completion_is_pruned() {
    use crate::checker::Checker;
    use crate::harness::{counts, random_instance, rule};
    use mcm_core::problem::{CmpOp, Formula, Term};
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(61);
    let tri = native("triangle_dependency");
    let (mut pruned, mut failed) = (0, 0);
    for case in 0..300 {
        let (g, p) = random_instance(&mut rng, 6, 4);
        let (n, c) = (g.num_placed(), p.num_chips());
        let cap = (1.5 * n as f64 / c as f64).ceil();
        let count = rule(counts(n as u32, c as u32, cap));
        let flow = rule(
            g.placed_edges()
                .iter()
                .map(|e| Formula::Cmp(CmpOp::Le, Term::Chip(e.src), Term::Chip(e.dst)))
                .collect(),
        );
        let fixed: Vec<Option<u32>> = (0..n)
            .map(|_| rng.random_bool(0.4).then(|| rng.random_range(0..c as u32)))
            .collect();
        let mut s = TestSolver::new(&g, &p).upward();
        let ok = (|| {
            s.post(crate::rules::Precedence::build, &flow)?;
            s.post(Triangle::build, &tri)?;
            s.post(crate::families::build, &count)?;
            for (x, f) in fixed.iter().enumerate() {
                if let Some(v) = f {
                    s.set(x as u32, &[*v])?;
                }
            }
            s.propagate()
        })()
        .is_ok();
        let mut place = vec![0u32; n];
        for k in 0..c.pow(n as u32) {
            let mut r = k;
            for v in place.iter_mut() {
                *v = (r % c) as u32;
                r /= c;
            }
            if fixed.iter().zip(&place).any(|(f, v)| f.is_some_and(|f| f != *v)) || !holds(&g, c, &place) {
                continue;
            }
            let checker = Checker::over(&g, &p, &place);
            if !flow
                .instances
                .iter()
                .chain(count.instances.iter())
                .all(|i| checker.holds(&i.formula))
            {
                continue;
            }
            assert!(
                ok,
                "case {case}: propagation failed, but {place:?} completes the decisions"
            );
            for (x, &v) in place.iter().enumerate() {
                assert!(
                    s.dom(x as u32).contains(&v),
                    "case {case}: chip {v} of node {x} pruned; {place:?} is valid"
                );
            }
        }
        failed += usize::from(!ok);
        pruned += (0..n).filter(|&x| ok && s.dom(x as u32).len() < c).count();
    }
    assert!(
        failed > 0 && pruned > 0,
        "the rules bind: {failed} failed, {pruned} pruned"
    );
}

/// Weights w1 and w2 feed s and t, and s feeds t.
fn two_weights() -> mcm_core::graph::Graph {
    graph(&[1, 1, 0, 0], &[(0, 2), (1, 3), (2, 3)])
}

#[test]
fn weights_on_one_chip_tie_their_consumers_to_one_chip() {
    let (g, p) = (two_weights(), ring(&[9; 5]));
    let rule = native("triangle_dependency");
    let mut s = TestSolver::new(&g, &p);
    s.post(Triangle::build, &rule).unwrap();
    s.set(0, &[0]).unwrap();
    s.set(1, &[0]).unwrap();
    s.set(2, &[1, 2]).unwrap();
    s.set(3, &[2, 3]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(2, &[2]);
    s.assert_dom(3, &[2]);
    // Consumers bound to different chips: the second weight cannot join the first.
    let mut s = TestSolver::new(&g, &p);
    s.post(Triangle::build, &rule).unwrap();
    s.set(2, &[1, 2]).unwrap();
    s.set(3, &[3, 4]).unwrap();
    s.set(0, &[0]).unwrap();
    s.propagate().unwrap();
    s.push();
    s.set(1, &[0]).unwrap();
    assert!(s.propagate().is_err());
    s.pop();
    s.set(1, &[1]).unwrap();
    s.propagate().unwrap();
}

/// Whether a full placement keeps every arc the only path between its ends.
fn holds(g: &mcm_core::graph::Graph, chips: usize, place: &[u32]) -> bool {
    let mut f = crate::flow::ChipFlow::new(chips);
    for e in g.placed_edges() {
        f.add(place[e.src as usize], place[e.dst as usize]);
    }
    g.placed_edges().iter().all(|e| {
        let (a, b) = (place[e.src as usize], place[e.dst as usize]);
        a == b || f.longest(a, b) == 1
    })
}

#[test]
fn no_chip_of_a_valid_completion_is_pruned() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
    let rule = native("triangle_dependency");
    let mut pruned = 0;
    for _ in 0..400 {
        let (g, p) = crate::harness::random_instance(&mut rng, 6, 4);
        let (n, c) = (g.num_placed(), p.num_chips());
        let mut s = TestSolver::new(&g, &p);
        s.post(Triangle::build, &rule).unwrap();
        let fixed: Vec<Option<u32>> = (0..n)
            .map(|_| rng.random_bool(0.5).then(|| rng.random_range(0..c as u32)))
            .collect();
        for (x, f) in fixed.iter().enumerate() {
            if let Some(v) = f {
                s.set(x as u32, &[*v]).unwrap();
            }
        }
        let ok = s.propagate().is_ok();
        // Every completion of the fixed nodes, enumerated.
        let mut place = vec![0u32; n];
        let total = c.pow(n as u32);
        for k in 0..total {
            let mut r = k;
            for v in place.iter_mut() {
                *v = (r % c) as u32;
                r /= c;
            }
            if fixed.iter().zip(&place).any(|(f, v)| f.is_some_and(|f| f != *v)) || !holds(&g, c, &place) {
                continue;
            }
            assert!(ok, "propagation failed, but {place:?} completes the decisions");
            for (x, &v) in place.iter().enumerate() {
                assert!(
                    s.dom(x as u32).contains(&v),
                    "chip {v} of node {x} pruned; {place:?} is valid"
                );
            }
        }
        pruned += usize::from(!ok) + (0..n).filter(|&x| s.dom(x as u32).len() < c).count();
    }
    assert!(pruned > 0);
}

#[test]
fn incremental_propagation_matches_from_scratch() {
    let failed = check_incremental_against_scratch(14, 1500, Triangle::build, |_| native("triangle_dependency"));
    assert!(failed > 0, "some decisions fail");
}

/// Longer runs of decisions on larger graphs, where new arcs follow one
/// another without a backtrack and a sweep of the nodes next to fixed ones
/// skips those the new arcs cannot affect: after every step, the same
/// domains as from scratch (a node skipped that a new arc confines would
/// keep a chip here). Every change also checks the closed flags and the
/// ancestor and descendant chips of every node not closed against a
/// recomputation, through pushes and pops (a spread that stopped short, or
/// a flag left stale by a backtrack, fails here).
#[test]
fn sweeps_that_skip_unaffected_nodes_match_from_scratch() {
    let skipped = super::propagator::SKIPPED.with(|k| k.get());
    super::propagator::AUDIT.with(|a| a.set(true));
    let failed = check_incremental_against_scratch_sized(15, 300, (16, 6, 24), Triangle::build, |_| {
        native("triangle_dependency")
    });
    assert!(failed > 0, "some decisions fail");
    let skipped = super::propagator::SKIPPED.with(|k| k.get()) - skipped;
    assert!(skipped > 0, "no sweep skipped a node");
}

#[test]
fn a_front_sorted_but_for_its_tail_is_sorted_whole() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut scratch = Vec::new();
    for _ in 0..200 {
        let mut all: Vec<u32> = (0..rng.random_range(0..40)).map(|_| rng.random_range(0..100)).collect();
        all.sort_unstable();
        all.dedup();
        // A sorted part, then some of its values moved to the end in any order.
        let mut v: Vec<u32> = all.iter().copied().filter(|_| rng.random_bool(0.7)).collect();
        let mut tail: Vec<u32> = all.iter().copied().filter(|x| !v.contains(x)).collect();
        tail.reverse();
        v.extend(tail);
        super::propagator::sort_after_sorted_prefix(&mut v, &mut scratch);
        assert_eq!(v, all);
    }
}
