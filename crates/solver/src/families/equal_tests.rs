//! A per-chip count that weighs the equality groups of another rule: it
//! closes a chip to a group that does not fit before any member is placed,
//! and it prunes no valid completion.

use super::tests::{completions, sound};
use crate::harness::{counts, graph, random_instance, ring, rule, TestSolver};
use mcm_core::problem::{CmpOp, Formula, GroundConstraint, Term};
use rand::{Rng, SeedableRng};

/// `count(u in nodes where chip(u) == d) <= cap` for every chip d.
fn count(n: u32, chips: u32, cap: f64) -> GroundConstraint {
    rule(counts(n, chips, cap))
}

/// `chip(a) == chip(b)` for each pair, in the given form.
fn equal(pairs: &[(u32, u32)], form: fn(u32, u32) -> Formula) -> GroundConstraint {
    rule(pairs.iter().map(|&(a, b)| form(a, b)).collect())
}

fn eq(a: u32, b: u32) -> Formula {
    Formula::Cmp(CmpOp::Eq, Term::Chip(a), Term::Chip(b))
}

/// Equality written another way: `chip(a) <= chip(b) and chip(b) <= chip(a)`.
fn both_ways(a: u32, b: u32) -> Formula {
    let le = |x, y| Formula::Cmp(CmpOp::Le, Term::Chip(x), Term::Chip(y));
    Formula::And(vec![le(a, b), le(b, a)])
}

/// Nodes 0-1-2 forced together, nodes 3 and 4 free; at most 3 a chip.
/// Once chip 0 holds one free node, the group of three no longer fits
/// there, and each member loses the chip while all are still open.
#[test]
fn a_chip_too_full_for_a_group_is_closed_to_each_member() {
    for form in [eq as fn(u32, u32) -> Formula, both_ways] {
        let (g, p) = (graph(&[0; 5], &[]), ring(&[9; 3]));
        let rs = [count(5, 3, 3.0), equal(&[(0, 1), (2, 1)], form)];
        let mut s = TestSolver::new(&g, &p).rules(&rs);
        s.post(super::build, &rs[0]).unwrap();
        s.post(super::build, &rs[1]).unwrap();
        s.propagate().unwrap();
        s.set(3, &[0]).unwrap();
        s.propagate().unwrap();
        for u in 0..3 {
            s.assert_dom(u, &[1, 2]);
        }
        s.assert_dom(4, &[0, 1, 2]);
        // Without the other rule in view, the count weighs each node alone.
        let mut s = TestSolver::new(&g, &p);
        s.post(super::build, &rs[0]).unwrap();
        s.post(super::build, &rs[1]).unwrap();
        s.set(3, &[0]).unwrap();
        s.propagate().unwrap();
        s.assert_dom(0, &[0, 1, 2]);
    }
}

/// A group member counted on the chip leaves its mates only their own
/// weight to fit: the chip stays open to them.
#[test]
fn a_counted_member_is_not_weighed_twice() {
    let (g, p) = (graph(&[0; 4], &[]), ring(&[9; 2]));
    let rs = [count(4, 2, 3.0), equal(&[(0, 1), (1, 2)], eq)];
    let mut s = TestSolver::new(&g, &p).rules(&rs);
    s.post(super::build, &rs[0]).unwrap();
    s.set(0, &[0]).unwrap();
    s.propagate().unwrap();
    // Only the count is posted: 1 and 2 are open, the group fits (3 of 3).
    s.assert_dom(1, &[0, 1]);
    s.assert_dom(2, &[0, 1]);
    s.set(3, &[0]).unwrap();
    s.propagate().unwrap();
    // Now chip 0 holds 0 and 3: the two open members need 2, one is left.
    s.assert_dom(1, &[1]);
    s.assert_dom(2, &[1]);
}

/// Random tiny graphs with edges kept upward, a per-chip count at 1.5x the
/// average, and an equality over the edges into nodes of one kind, chosen
/// at random (as `norm_with_inputs` chooses layer norms by operation),
/// against enumeration of the completions of random decisions: no chip of
/// a valid completion is pruned, propagation fails only when none exists,
/// and the groups prune more than the count alone in some cases.
#[test]
fn with_a_count_and_an_equality_no_valid_completion_is_pruned() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(36);
    let (mut failed, mut stronger) = (0, 0);
    for case in 0..400 {
        let (g, p) = random_instance(&mut rng, 7, 4);
        let (n, c) = (g.num_placed() as u32, p.num_chips() as u32);
        let cap = (1.5 * n as f64 / c as f64).ceil();
        let kind: Vec<bool> = (0..n).map(|_| rng.random_bool(0.3)).collect();
        let edges: Vec<(u32, u32)> = g.placed_edges().iter().map(|e| (e.src, e.dst)).collect();
        let into_kind: Vec<(u32, u32)> = edges.iter().copied().filter(|&(_, v)| kind[v as usize]).collect();
        let form = if rng.random_bool(0.5) { eq } else { both_ways };
        let flow = rule(
            edges
                .iter()
                .map(|&(u, v)| Formula::Cmp(CmpOp::Le, Term::Chip(u), Term::Chip(v)))
                .collect(),
        );
        let rs = [flow, count(n, c, cap), equal(&into_kind, form)];
        let mut doms: Vec<Vec<u32>> = (0..n).map(|_| (0..c).collect()).collect();
        for d in doms.iter_mut() {
            if rng.random_bool(0.25) {
                *d = vec![rng.random_range(0..c)];
            }
        }
        let valid = completions(&g, &p, &rs, &doms);
        let run = |with_groups: bool| {
            let mut s = TestSolver::new(&g, &p).upward();
            if with_groups {
                s = s.rules(&rs);
            }
            s.post(crate::rules::Precedence::build, &rs[0])?;
            s.post(super::build, &rs[1])?;
            s.post(super::build, &rs[2])?;
            for (u, d) in doms.iter().enumerate() {
                s.set(u as u32, d)?;
            }
            s.propagate().map(|_| s.domains())
        };
        let grouped = run(true);
        failed += usize::from(sound(case, &grouped, &valid));
        let alone = run(false);
        let smaller = match (&grouped, &alone) {
            (Err(_), Ok(_)) => true,
            (Ok(a), Ok(b)) => a != b,
            _ => false,
        };
        stronger += usize::from(smaller);
    }
    assert!(failed > 0 && stronger > 0, "failed {failed}, stronger {stronger}");
}

/// Chain 0 -> 1 -> 2 -> 4 with weight 3 feeding 2 and tied to it, at most
/// two nodes a chip on three chips, edges upward: node 0's descendant cone
/// (0, 1, 2, 4) fits chips 1 and 2, but with 2's mate it weighs five, so 0
/// may only take chip 0.
#[test]
fn a_cone_weighs_the_mates_of_its_members() {
    let g = graph(&[0; 5], &[(0, 1), (1, 2), (2, 4), (3, 2)]);
    let p = ring(&[9; 3]);
    let up = rule(
        g.placed_edges()
            .iter()
            .map(|e| Formula::Cmp(CmpOp::Le, Term::Chip(e.src), Term::Chip(e.dst)))
            .collect(),
    );
    let rs = [up, count(5, 3, 2.0), equal(&[(3, 2)], eq)];
    let root = |with_groups: bool| {
        let mut s = TestSolver::new(&g, &p).upward();
        if with_groups {
            s = s.rules(&rs);
        }
        s.post(super::build, &rs[1]).unwrap();
        s.dom(0)
    };
    assert_eq!(root(true), [0]);
    assert_eq!(root(false), [0, 1]);
}
