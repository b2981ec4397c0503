//! Whole operations packed along the pipeline ([`super::pack`]): the root
//! bounds and the chips a fixed node closes, against enumeration.

use super::build;
use super::tests::{completions, some_fixed, sound};
use crate::harness::{graph, on, random_instance, ring, rule, walk_against_scratch, TestSolver};
use crate::rules::Precedence;
use mcm_core::graph::Graph;
use mcm_core::problem::{CmpOp, Formula, GroundConstraint, Term};
use rand::{Rng, SeedableRng};

/// `sum(chip(u) == k: w[u]) <= cap` for every chip k.
fn sums(w: &[f64], chips: u32, cap: f64) -> GroundConstraint {
    rule(
        (0..chips)
            .map(|k| {
                let items = w
                    .iter()
                    .enumerate()
                    .map(|(u, &x)| (on(u as u32, k), Term::Const(x)))
                    .collect();
                Formula::Cmp(CmpOp::Le, Term::Sum(items), Term::Const(cap))
            })
            .collect(),
    )
}

/// `chip(u) <= chip(v)` for every edge.
fn upward_edges(g: &Graph) -> GroundConstraint {
    rule(
        g.placed_edges()
            .iter()
            .map(|e| Formula::Cmp(CmpOp::Le, Term::Chip(e.src), Term::Chip(e.dst)))
            .collect(),
    )
}

/// The flow rule and `sum` posted on `g`, and `decide` applied, propagated.
fn propagate(
    g: &Graph,
    p: &mcm_core::package::Package,
    rs: &[GroundConstraint; 2],
    decide: &[(u32, Vec<u32>)],
    packed: bool,
) -> Result<Vec<Vec<u32>>, crate::store::Fail> {
    super::pack::OFF.with(|o| o.set(!packed));
    let mut s = TestSolver::new(g, p).upward();
    let got = (|| {
        s.post(Precedence::build, &rs[0])?;
        s.post(build, &rs[1])?;
        for (u, d) in decide {
            s.set(*u, d)?;
        }
        s.propagate().map(|_| s.domains())
    })();
    super::pack::OFF.with(|o| o.set(false));
    got
}

/// A chain of 3, 3, 3, 2 and 2 on four chips of 5: the sum lets the first
/// node sit on chip 1 (13 fits chips 1 to 3), but no two of the 3s share a
/// chip, so each needs one of its own, and the 2s share the last.
#[test]
fn whole_operations_pack_along_a_chain() {
    let g = graph(&[0; 5], &[(0, 1), (1, 2), (2, 3), (3, 4)]);
    let p = ring(&[9; 4]);
    let rs = [upward_edges(&g), sums(&[3.0, 3.0, 3.0, 2.0, 2.0], 4, 5.0)];
    let d = propagate(&g, &p, &rs, &[], true).unwrap();
    assert_eq!(d, [vec![0], vec![1], vec![2], vec![2, 3], vec![3]]);
    // The divisible sum alone (the cone bounds) leaves the first node two chips.
    let plain = propagate(&g, &p, &rs, &[], false).unwrap();
    assert_eq!(plain[0], [0, 1]);
}

/// x (2) alone, b (2) feeding y (3), on two chips of 6. With x on chip 1,
/// b alone still fits there, but b's cone (b and y, 5) does not beside x:
/// b loses chip 1 before it or y is placed.
#[test]
fn a_fixed_node_closes_its_chip_to_a_cone_that_no_longer_fits() {
    let g = graph(&[0; 3], &[(1, 2)]);
    let p = ring(&[9; 2]);
    let rs = [upward_edges(&g), sums(&[2.0, 2.0, 3.0], 2, 6.0)];
    let root = propagate(&g, &p, &rs, &[], true).unwrap();
    assert_eq!(root, [vec![0, 1], vec![0, 1], vec![0, 1]]);
    let d = propagate(&g, &p, &rs, &[(0, vec![1])], true).unwrap();
    assert_eq!(d[1], [0]);
    let plain = propagate(&g, &p, &rs, &[(0, vec![1])], false).unwrap();
    assert_eq!(plain[1], [0, 1]);
}

/// A random small instance with weights of 0 to 4 (some alike, some not)
/// and a cap that binds.
fn weighted(rng: &mut impl Rng) -> (Graph, mcm_core::package::Package, [GroundConstraint; 2]) {
    let (g, p) = random_instance(rng, 7, 5);
    let n = g.num_placed();
    let c = p.num_chips() as u32;
    let w: Vec<f64> = (0..n)
        .map(|_| f64::from(rng.random_range(0..=4u32)) * if rng.random_bool(0.3) { 0.7 } else { 1.0 })
        .collect();
    let total: f64 = w.iter().sum();
    let cap = (total / f64::from(c) * rng.random_range(1.0..2.5)).max(2.0).round();
    let rs = [upward_edges(&g), sums(&w, c, cap)];
    (g, p, rs)
}

/// Against enumeration, under the flow rule: the packing bounds and the
/// chips fixed nodes close remove no chip of a valid completion and fail
/// only when none exists; and they prune beyond the divisible sum.
#[test]
fn packing_keeps_every_solution() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(61);
    let (mut failed, mut pruned) = (0, 0);
    for case in 0..1500 {
        let (g, p, rs) = weighted(&mut rng);
        let n = g.num_placed() as u32;
        let c = p.num_chips() as u32;
        let doms = some_fixed(&mut rng, n, c, 3);
        let decide: Vec<(u32, Vec<u32>)> = doms
            .iter()
            .enumerate()
            .filter(|(_, d)| d.len() == 1)
            .map(|(u, d)| (u as u32, d.clone()))
            .collect();
        let valid = completions(&g, &p, &rs, &doms);
        let got = propagate(&g, &p, &rs, &decide, true);
        failed += usize::from(sound(case, &got, &valid));
        let plain = propagate(&g, &p, &rs, &decide, false);
        pruned += usize::from(got.ok() != plain.ok());
    }
    assert!(
        failed > 0 && pruned > 0,
        "failures {failed}, pruned beyond the sum {pruned}"
    );
}

/// Random decisions and undos under the flow rule and a sum: incremental
/// propagation gives the domains from-scratch propagation of the standing
/// decisions gives, or both fail.
#[test]
fn packing_matches_from_scratch() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(67);
    let mut failures = 0;
    for case in 0..300 {
        let (g, p, rs) = weighted(&mut rng);
        let scratch = |decisions: &[(u32, Vec<u32>)]| -> Option<Vec<Vec<u32>>> {
            let mut s = TestSolver::new(&g, &p).upward();
            s.post(Precedence::build, &rs[0]).ok()?;
            s.post(build, &rs[1]).ok()?;
            s.propagate_from_scratch().ok()?;
            for (x, chips) in decisions {
                s.set(*x, chips).ok()?;
            }
            s.propagate_from_scratch().ok()?;
            Some(s.domains())
        };
        let mut inc = TestSolver::new(&g, &p).upward();
        let root = inc
            .post(Precedence::build, &rs[0])
            .and_then(|_| inc.post(build, &rs[1]))
            .and_then(|_| {
                inc.wake_all();
                inc.propagate()
            });
        assert_eq!(
            root.as_ref().ok().map(|_| inc.domains()),
            scratch(&[]),
            "case {case} at the root"
        );
        if root.is_err() {
            continue;
        }
        failures += walk_against_scratch(&mut rng, &mut inc, &g, (case, 12), false, &scratch);
    }
    assert!(failures > 0, "some decisions fail");
}
