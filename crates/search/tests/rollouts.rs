//! Rollouts that move a few nodes from the partition the policy refines
//! (`Draw::Moves`): FIX decides the moved nodes first, so a move carries
//! along what the chip flow needs instead of being undone; a weight goes
//! with its only user. Hand-made distributions make each draw certain.

use crate::common;

use mcm_core::problem::{Placement, Problem};
use mcm_search::policy::rollout::{propose, Correction, Draw, Style};
use mcm_solver::{check, Options, Solver};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

// Decision indices of `common::chain_graph` with a weight: the input, the
// weight of n0, then n0..n5 in a chain.
const INPUT: usize = 0;
const W: usize = 1;
fn n(i: usize) -> usize {
    2 + i
}

/// A six-node chain (n0 with its weight) on a ring of `chips` dies, in a
/// scratch folder of its own (`name`: tests run at once).
fn chain(name: &str, chips: usize) -> Problem {
    let dir = common::scratch(&format!("rollouts-{name}"));
    std::fs::write(dir.join("chain.json"), common::chain_graph("chain", 6, 4096)).unwrap();
    let c = common::compile_in(&dir, &common::ring_problem("chain.json", chips));
    assert!(c.ok(), "{:?}", c.diags);
    c.problem(None).unwrap().clone()
}

/// Distributions certain of `anchor` except for `moves`: (node, chip).
fn certain(anchor: &[u32], chips: usize, moves: &[(usize, u32)]) -> Vec<Vec<f32>> {
    let mut probs: Vec<Vec<f32>> = anchor
        .iter()
        .map(|&a| (0..chips).map(|c| (c as u32 == a) as u8 as f32).collect())
        .collect();
    for &(u, to) in moves {
        probs[u] = (0..chips).map(|c| (c as u32 == to) as u8 as f32).collect();
    }
    probs
}

fn run(p: &Problem, probs: &[Vec<f32>], draw: Draw, anchor: &[u32], seed: u64) -> (Vec<u32>, Option<Vec<u32>>) {
    let mut solver = Solver::new(p, Options::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let style = Style {
        mode: Correction::Fix,
        draw,
    };
    let r = propose(probs, style, &mut solver, &mut rng, Some(anchor)).unwrap();
    let broken = check(&p.graph, &p.package, &p.constraints, &Placement::new(r.chips.clone()));
    assert!(broken.is_empty(), "{:?} breaks {broken:?}", r.chips);
    (r.chips, r.credit)
}

#[test]
fn a_move_down_takes_the_ancestors_the_chip_flow_needs() {
    let p = chain("down", 3);
    //               input w  n0 n1 n2 n3 n4 n5
    let anchor = [0, 0, 0, 0, 1, 1, 2, 2];
    assert!(check(&p.graph, &p.package, &p.constraints, &Placement::new(anchor.to_vec())).is_empty());
    // n3 wants chip 0, where its input n2 is not.
    let probs = certain(&anchor, 3, &[(n(3), 0)]);
    for seed in 0..5 {
        let (chips, credit) = run(&p, &probs, Draw::Moves(1), &anchor, seed);
        assert_eq!(credit, Some(vec![n(3) as u32]));
        assert_eq!(chips[n(3)], 0, "the move is kept: {chips:?}");
        assert_eq!(chips[n(2)], 0, "n2 comes along: {chips:?}");
        // A dense draw asks for the same placement, but FIX in topological
        // order decides n2 first, and n3 cannot leave it.
        let (dense, credit) = run(&p, &probs, Draw::Dense, &anchor, seed);
        assert_eq!(credit, None);
        assert_eq!(dense[n(3)], 1, "{dense:?}");
    }
}

#[test]
fn a_weight_goes_with_its_only_user() {
    let p = chain("follow", 3);
    //               input w  n0 n1 n2 n3 n4 n5
    let anchor = [0, 0, 0, 1, 1, 1, 2, 2];
    // n0 moves up to its consumer's chip: its weight follows, the input stays.
    let probs = certain(&anchor, 3, &[(n(0), 1)]);
    let (chips, credit) = run(&p, &probs, Draw::Moves(3), &anchor, 1);
    assert_eq!(credit, Some(vec![n(0) as u32]));
    assert_eq!((chips[W], chips[n(0)], chips[INPUT]), (1, 1, 0), "{chips:?}");

    // A weight beside its user is never picked on its own.
    let probs = certain(&anchor, 3, &[(W, 2)]);
    let (chips, credit) = run(&p, &probs, Draw::Moves(3), &anchor, 2);
    assert_eq!(credit, Some(vec![]));
    assert_eq!(chips, anchor.to_vec());
}

#[test]
fn a_weight_kept_away_from_its_user_joins_it() {
    let p = chain("join", 3);
    //               input w  n0 n1 n2 n3 n4 n5
    let anchor = [0, 0, 1, 1, 1, 2, 2, 2];
    assert!(check(&p.graph, &p.package, &p.constraints, &Placement::new(anchor.to_vec())).is_empty());
    // Picked, the weight goes to its user's chip, not the one it drew.
    let probs = certain(&anchor, 3, &[(W, 2)]);
    let (chips, credit) = run(&p, &probs, Draw::Moves(1), &anchor, 3);
    assert_eq!(credit, Some(vec![W as u32]));
    assert_eq!(chips[W], 1, "{chips:?}");
}

/// `propose_among` picks its moves only among the marked nodes (the
/// slowest chips' in `rl`), by the policy's probabilities renormalised over
/// them; with none marked that the policy would move, as `propose` does.
#[test]
fn moves_among_marked_nodes_pick_only_those() {
    use mcm_search::policy::rollout::propose_among;
    let p = chain("among", 3);
    //               input w  n0 n1 n2 n3 n4 n5
    let anchor = [0, 0, 0, 0, 1, 1, 2, 2];
    // The policy would move n3 down or n4 up, equally sure of each.
    let mut probs = certain(&anchor, 3, &[]);
    probs[n(3)] = vec![0.5, 0.5, 0.0];
    probs[n(4)] = vec![0.0, 0.5, 0.5];
    let style = Style {
        mode: Correction::Fix,
        draw: Draw::Moves(1),
    };
    let mut among = vec![false; anchor.len()];
    among[n(4)] = true;
    let nothing = vec![false; anchor.len()];
    let mut picked_n3 = false;
    for seed in 0..20 {
        let mut solver = Solver::new(&p, Options::default()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let r = propose_among(&probs, style, &mut solver, &mut rng, Some(&anchor), Some(&among)).unwrap();
        assert_eq!(r.credit, Some(vec![n(4) as u32]), "seed {seed}");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let r = propose_among(&probs, style, &mut solver, &mut rng, Some(&anchor), Some(&nothing)).unwrap();
        picked_n3 |= r.credit == Some(vec![n(3) as u32]);
    }
    assert!(picked_n3, "with nothing marked, the policy's picks stand");
}
