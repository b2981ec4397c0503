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

/// The policy's likeliest change to the anchor (`rl`'s first rollout for
/// each anchor): as many moves as the policy expects, the nodes likeliest
/// to leave their anchor chip each to its likeliest other chip, decided
/// first by FIX (a move down takes its ancestors along), a weight with its
/// user; PPO credits the nodes sent away alone; a policy that would move
/// nothing (or only a weight beside its user) proposes nothing.
#[test]
fn the_likeliest_change_moves_the_nodes_the_policy_expects_to_leave() {
    use mcm_search::policy::rollout::propose_likeliest_moves;
    let p = chain("likeliest", 3);
    let valid = |chips: &[u32]| {
        let broken = check(&p.graph, &p.package, &p.constraints, &Placement::new(chips.to_vec()));
        assert!(broken.is_empty(), "{chips:?} breaks {broken:?}");
    };
    let likeliest = |probs: &[Vec<f32>], anchor: &[u32], seed: u64| {
        let mut solver = Solver::new(&p, Options::default()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let r = propose_likeliest_moves(probs, &mut solver, &mut rng, anchor).unwrap();
        if let Some(r) = &r {
            assert!(!r.fell_back);
            valid(&r.chips);
        }
        r
    };
    //               input w  n0 n1 n2 n3 n4 n5
    let anchor = [0, 0, 0, 0, 1, 1, 2, 2];
    assert_eq!(likeliest(&certain(&anchor, 3, &[]), &anchor, 0), None);
    assert_eq!(
        likeliest(&certain(&anchor, 3, &[(W, 2)]), &anchor, 0),
        None,
        "a weight moves with its user"
    );
    let mut probs = certain(&anchor, 3, &[]);
    probs[n(3)] = vec![0.9, 0.1, 0.0];
    probs[n(5)] = vec![0.0, 0.8, 0.2];
    for seed in 0..5 {
        // Two moves expected (0.9 + 0.8): both made.
        let r = likeliest(&probs, &anchor, seed).expect("two nodes the policy sends away");
        assert_eq!(r.credit, Some(vec![n(3) as u32, n(5) as u32]), "seed {seed}");
        assert_eq!(
            (r.chips[n(3)], r.chips[n(2)], r.chips[n(5)]),
            (0, 0, 1),
            "{:?}",
            r.chips
        );
    }
    // One move expected (0.6 + 0.3): the likelier leaver's, to its likeliest other chip.
    probs[n(3)] = vec![0.6, 0.0, 0.4];
    probs[n(5)] = vec![0.0, 0.3, 0.7];
    let r = likeliest(&probs, &anchor, 1).expect("one node the policy sends away");
    assert_eq!(r.credit, Some(vec![n(3) as u32]));
    assert_eq!(
        (r.chips[n(3)], r.chips[n(2)], r.chips[n(5)]),
        (0, 0, 2),
        "{:?}",
        r.chips
    );
    // n0 sent up to its consumer's chip: its weight follows, the input stays.
    let anchor = [0, 0, 0, 1, 1, 1, 2, 2];
    let r = likeliest(&certain(&anchor, 3, &[(n(0), 1)]), &anchor, 1).expect("n0 moves");
    assert_eq!(r.credit, Some(vec![n(0) as u32]));
    assert_eq!((r.chips[W], r.chips[n(0)], r.chips[INPUT]), (1, 1, 0), "{:?}", r.chips);
}

/// A weight the repair left behind rejoins its user: the change sends n1
/// from chip 1 to chip 2 (n2 follows), `no_skip` then needs a node on chip
/// 1, and FIX, keeping the input and n0's weight on chip 0 (decided before
/// n0), moves n0 there alone. Rejoined, the weight sits with n0 and
/// nothing else moves; with nothing left behind there is nothing to do.
#[test]
fn a_weight_the_repair_left_behind_rejoins_its_user() {
    use mcm_search::policy::rollout::rejoin_weights;
    let p = chain("rejoin", 3);
    //               input w  n0 n1 n2 n3 n4 n5
    let anchor = [0, 0, 0, 1, 1, 2, 2, 2];
    let probs = certain(&anchor, 3, &[(n(1), 2)]);
    for seed in 0..5 {
        let (chips, _) = run(&p, &probs, Draw::Moves(1), &anchor, seed);
        assert_eq!(
            (chips[W], chips[n(0)], chips[n(1)]),
            (0, 1, 2),
            "seed {seed}: {chips:?}"
        );
        let mut solver = Solver::new(&p, Options::default()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let joined = rejoin_weights(&probs, &chips, &mut solver, &mut rng, &anchor)
            .unwrap()
            .expect("the weight rejoins n0");
        let broken = check(&p.graph, &p.package, &p.constraints, &Placement::new(joined.clone()));
        assert!(broken.is_empty(), "{joined:?} breaks {broken:?}");
        let mut expected = chips.clone();
        expected[W] = 1;
        assert_eq!(joined, expected, "seed {seed}");
        assert_eq!(
            rejoin_weights(&probs, &joined, &mut solver, &mut rng, &anchor).unwrap(),
            None,
            "nothing left behind"
        );
    }
}
