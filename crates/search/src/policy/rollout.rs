//! One rollout: the policy's distributions become a partition request, in
//! one of three ways (the paper's variants). Training and the `rl`
//! strategies share this, so what is trained is what is deployed.

use super::ppo::{log_probs_of, sample_actions};
use mcm_solver::{fix_or, node_order, sample, Infeasible, Order, Solver};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// How a proposal meets the solver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Correction {
    /// The policy draws a chip per node; FIX keeps every draw still allowed
    /// and puts the rest on the nearest allowed chip (or, when it gives up on
    /// a draw near the partition the policy refines, merges the draw into
    /// it). Always valid.
    #[default]
    Fix,
    /// SAMPLE draws each node from the policy's distribution restricted to
    /// its current domain. Always valid.
    Sample,
    /// The draw as it is, no solver (the paper's ablation): a partition that
    /// breaks a rule is an invalid sample.
    NoSolver,
}

/// How a rollout turns the policy's distributions into a proposal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Draw {
    /// Every node draws its chip from its distribution (the paper's
    /// rollout).
    Dense,
    /// From the placement the policy refines (the anchor), one to `k` moves
    /// (uniformly many): a node is picked with the probability the policy
    /// gives to its leaving the anchor's chip, and goes to another chip with
    /// the policy's probabilities. A weight only one node uses goes where
    /// that node goes, and a weight the anchor keeps away from its user
    /// joins it when picked. FIX then decides the moved nodes first, so that
    /// propagation carries a move's consequences (a node moved up takes
    /// along the descendants the chip flow needs above it; one moved down,
    /// the ancestors) instead of undoing it: the block moves that balance a
    /// pipeline, which independent per-node draws almost never make. With no
    /// anchor, a dense draw.
    Moves(usize),
}

/// How rollouts are made: how a draw meets the solver, and how it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    pub mode: Correction,
    pub draw: Draw,
}

/// What one rollout asked for and what it got.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    /// The chips the PPO update credits (the policy's own draw; the
    /// partition itself under SAMPLE, where no separate draw exists).
    pub actions: Vec<u32>,
    pub log_probs: Vec<f32>,
    /// The nodes whose actions are the rollout's decisions, when not all
    /// are: a [`Draw::Moves`] rollout's picked nodes.
    pub credit: Option<Vec<u32>>,
    /// The partition to evaluate.
    pub chips: Vec<u32>,
    /// FIX gave up on the proposal and could merge none of it into the
    /// fallback partition, which it returned: not the policy's work, so it
    /// earns no reward and is not evaluated.
    pub fell_back: bool,
}

/// A rollout from `probs` (a distribution per node, as [`super::Policy::probs`] gives).
/// `anchor`, the valid partition the policy refines, bounds FIX's time
/// (see [`fix_or`]) and is where [`Draw::Moves`] start from.
pub fn propose(
    probs: &[Vec<f32>],
    style: Style,
    solver: &mut Solver,
    rng: &mut impl Rng,
    anchor: Option<&[u32]>,
) -> Result<Proposal, Infeasible> {
    propose_among(probs, style, solver, rng, anchor, None)
}

/// Like [`propose`], a [`Draw::Moves`] rollout picking its nodes only among
/// those `among` marks (with the policy's probabilities, renormalised over
/// them), when it marks any the policy gives a chance to leave.
pub fn propose_among(
    probs: &[Vec<f32>],
    Style { mode, draw }: Style,
    solver: &mut Solver,
    rng: &mut impl Rng,
    anchor: Option<&[u32]>,
    among: Option<&[bool]>,
) -> Result<Proposal, Infeasible> {
    if mode == Correction::Sample {
        let order = node_order(solver, Order::Random, rng);
        let p = sample(solver, &order, Some(probs), rng)?;
        return Ok(Proposal {
            log_probs: log_probs_of(probs, &p.chips),
            actions: p.chips.clone(),
            credit: None,
            chips: p.chips,
            fell_back: false,
        });
    }
    match (draw, anchor) {
        (Draw::Moves(k), Some(anchor)) => {
            let (actions, picked) = draw_moves(probs, anchor, k, solver.problem.graph.weight_users(), among, rng);
            let log_probs = log_probs_of(probs, &actions);
            let mut p = settle(probs, mode, (actions, log_probs), solver, rng, Some(anchor), true)?;
            p.credit = Some(picked);
            Ok(p)
        }
        _ => settle(probs, mode, sample_actions(probs, rng), solver, rng, anchor, false),
    }
}

/// A [`Draw::Moves`] draw: the chips, and the nodes picked to move.
fn draw_moves(
    probs: &[Vec<f32>],
    anchor: &[u32],
    k: usize,
    weight_users: &[Option<u32>],
    among: Option<&[bool]>,
    rng: &mut impl Rng,
) -> (Vec<u32>, Vec<u32>) {
    let with_user = |w: usize| weight_users[w].is_some_and(|u| anchor[u as usize] == anchor[w]);
    // A weight beside its user moves only with it, so it is never picked.
    let mut leave: Vec<f64> = (0..probs.len())
        .map(|u| match with_user(u) {
            true => 0.0,
            false => (1.0 - probs[u][anchor[u] as usize] as f64).max(0.0),
        })
        .collect();
    if let Some(among) = among {
        let within: Vec<f64> = leave
            .iter()
            .zip(among)
            .map(|(&l, &m)| if m { l } else { 0.0 })
            .collect();
        if within.iter().any(|&l| l > 0.0) {
            leave = within;
        }
    }
    let mut actions = anchor.to_vec();
    let mut picked = Vec::new();
    for _ in 0..rng.random_range(1..=k.max(1)) {
        let Some(u) = pick(&leave, rng) else { break };
        let away: Vec<f64> = (0..probs[u].len())
            .map(|c| if c as u32 == anchor[u] { 0.0 } else { probs[u][c] as f64 })
            .collect();
        if let Some(c) = pick(&away, rng) {
            actions[u] = c as u32;
            picked.push(u as u32);
        }
    }
    follow_users(&mut actions, anchor, weight_users);
    picked.sort_unstable();
    picked.dedup();
    (actions, picked)
}

/// A weight only one node uses goes where that node goes when it sat
/// beside it in `anchor` or was sent elsewhere itself.
fn follow_users(actions: &mut [u32], anchor: &[u32], weight_users: &[Option<u32>]) {
    for (w, user) in weight_users.iter().enumerate() {
        if let Some(u) = *user {
            if anchor[u as usize] == anchor[w] || actions[w] != anchor[w] {
                actions[w] = actions[u as usize];
            }
        }
    }
}

/// An index drawn with probability proportional to its weight; `None` when
/// every weight is 0.
fn pick(weights: &[f64], rng: &mut impl Rng) -> Option<usize> {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 || !total.is_finite() {
        return None;
    }
    let mut x = rng.random::<f64>() * total;
    let last = weights.iter().rposition(|&w| w > 0.0)?;
    for (i, &w) in weights.iter().enumerate() {
        if x < w {
            return Some(i);
        }
        x -= w;
    }
    Some(last)
}

/// Like [`propose`], with each node's most likely chip instead of a draw
/// (greedy decoding; under `sample` it is a plain [`propose`]).
pub fn propose_likeliest(
    probs: &[Vec<f32>],
    mode: Correction,
    solver: &mut Solver,
    rng: &mut impl Rng,
    fallback: Option<&[u32]>,
) -> Result<Proposal, Infeasible> {
    if mode == Correction::Sample {
        let style = Style {
            mode,
            draw: Draw::Dense,
        };
        return propose(probs, style, solver, rng, fallback);
    }
    let actions: Vec<u32> = probs
        .iter()
        .map(|p| (0..p.len()).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap_or(0) as u32)
        .collect();
    let log_probs = log_probs_of(probs, &actions);
    settle(probs, mode, (actions, log_probs), solver, rng, fallback, false)
}

/// The policy's likeliest change to `anchor`, as a [`Draw::Moves`]
/// rollout of as many moves as the policy expects (the sum over nodes of
/// the probability of leaving the anchor chip, rounded, at least one):
/// the nodes likeliest to leave, each to its likeliest other chip (weights
/// following their only user, as in a draw of moves), decided first by
/// FIX; PPO credits them alone. `None` when the policy would move nothing,
/// or more nodes than a refinement does. What a pretrained policy learnt
/// (imitation teaches the slides that improve its anchor) shows at once in
/// its likeliest change, which draws of one to three moves reach only
/// piece by piece; a policy that knows nothing (fresh weights, near
/// uniform) expects to move nearly every node and proposes none.
pub fn propose_likeliest_moves(
    probs: &[Vec<f32>],
    solver: &mut Solver,
    rng: &mut impl Rng,
    anchor: &[u32],
) -> Result<Option<Proposal>, Infeasible> {
    let weight_users = solver.problem.graph.weight_users();
    let beside_user = |w: usize| weight_users[w].is_some_and(|u| anchor[u as usize] == anchor[w]);
    // Each node's chance to leave its anchor chip; a weight beside its
    // user moves only with it.
    let leave: Vec<f64> = (0..probs.len())
        .map(|u| match beside_user(u) {
            true => 0.0,
            false => (1.0 - probs[u][anchor[u] as usize] as f64).max(0.0),
        })
        .collect();
    let expected = leave.iter().sum::<f64>().round() as usize;
    // A change as large as FIX would not merge into its anchor (more than
    // an eighth of the nodes: a fresh policy expects to move about every
    // node it can) is no refinement of it.
    if expected > mcm_solver::modes::merge_limit(probs.len()) {
        return Ok(None);
    }
    let mut order: Vec<usize> = (0..probs.len()).filter(|&u| leave[u] > 0.0).collect();
    if order.is_empty() {
        return Ok(None);
    }
    order.sort_by(|&a, &b| leave[b].total_cmp(&leave[a]).then(a.cmp(&b)));
    order.truncate(expected.max(1));
    let mut actions = anchor.to_vec();
    for &u in &order {
        let away = (0..probs[u].len())
            .filter(|&c| c as u32 != anchor[u])
            .max_by(|&x, &y| probs[u][x].total_cmp(&probs[u][y]).then(y.cmp(&x)));
        if let Some(c) = away {
            actions[u] = c as u32;
        }
    }
    follow_users(&mut actions, anchor, weight_users);
    let log_probs = log_probs_of(probs, &actions);
    let mut p = settle(
        probs,
        Correction::Fix,
        (actions, log_probs),
        solver,
        rng,
        Some(anchor),
        true,
    )?;
    order.sort_unstable();
    p.credit = Some(order.into_iter().map(|u| u as u32).collect());
    Ok(Some(p))
}

/// `chips`, a proposal near `valid` (a valid partition), made valid by FIX
/// deciding the nodes that differ from `valid` first; `None` when FIX gave
/// up on it (and returned `valid`).
pub fn fix_near(
    probs: &[Vec<f32>],
    chips: &[u32],
    solver: &mut Solver,
    rng: &mut impl Rng,
    valid: &[u32],
) -> Result<Option<Vec<u32>>, Infeasible> {
    let p = settle(
        probs,
        Correction::Fix,
        (chips.to_vec(), Vec::new()),
        solver,
        rng,
        Some(valid),
        true,
    )?;
    Ok((!p.fell_back).then_some(p.chips))
}

/// `chips` (a valid partition, a rollout's repair of a change to `anchor`)
/// with the weights that the repair left behind back beside their users,
/// where the rules let them: each weight that `anchor` kept beside its only
/// user and that now sits on another chip than that user is proposed on the
/// user's chip, FIX deciding every other node first (each keeps its chip)
/// and those weights last (each on its user's chip, or drawn where the
/// rules let it when that chip is refused). `None` when no weight was left
/// behind, or when the pass would have moved any other node.
///
/// FIX puts a node the rules no longer allow on its chip on the nearest
/// allowed one (a cell whose consumer a change sent two chips on, past
/// `no_skip`), and the weights decided before it stay where they were: they
/// then stream their bytes over a link at every inference (on a recurrent
/// net, a cell moved one chip from its ten megabytes of weights ran at a
/// fifth of its anchor's throughput). A draw of moves takes a picked node's
/// weights along; this does the same for the nodes its repair moved.
pub fn rejoin_weights(
    probs: &[Vec<f32>],
    chips: &[u32],
    solver: &mut Solver,
    rng: &mut impl Rng,
    anchor: &[u32],
) -> Result<Option<Vec<u32>>, Infeasible> {
    let users = solver.problem.graph.weight_users();
    let left: Vec<bool> = (0..chips.len())
        .map(|w| users[w].is_some_and(|u| anchor[u as usize] == anchor[w] && chips[u as usize] != chips[w]))
        .collect();
    if !left.contains(&true) {
        return Ok(None);
    }
    let proposal: Vec<Option<u32>> = (0..chips.len())
        .map(|w| match (left[w], users[w]) {
            (true, Some(u)) => Some(chips[u as usize]),
            _ => Some(chips[w]),
        })
        .collect();
    let (mut order, last): (Vec<u32>, Vec<u32>) = node_order(solver, Order::Random, rng)
        .into_iter()
        .partition(|&u| !left[u as usize]);
    order.extend(last);
    let before = solver.stats.fallbacks;
    let joined = fix_or(solver, &order, &proposal, Some(probs), rng, Some(chips))?
        .0
        .chips;
    let others_kept = joined
        .iter()
        .zip(chips)
        .enumerate()
        .all(|(u, (a, b))| a == b || left[u]);
    let changed = joined.as_slice() != chips;
    Ok((changed && others_kept && solver.stats.fallbacks == before).then_some(joined))
}

/// The proposal of chosen chips, the partition FIX'd, or as they are
/// without the solver. With `moved_first`, FIX decides the nodes whose chip
/// differs from `fallback` first (in the random topological order's turn),
/// then the rest.
fn settle(
    probs: &[Vec<f32>],
    mode: Correction,
    (actions, log_probs): (Vec<u32>, Vec<f32>),
    solver: &mut Solver,
    rng: &mut impl Rng,
    fallback: Option<&[u32]>,
    moved_first: bool,
) -> Result<Proposal, Infeasible> {
    let before = solver.stats.fallbacks;
    let chips = if mode == Correction::NoSolver {
        actions.clone()
    } else {
        let proposal: Vec<Option<u32>> = actions.iter().copied().map(Some).collect();
        let mut order = node_order(solver, Order::Random, rng);
        if let (true, Some(anchor)) = (moved_first, fallback) {
            let (mut moved, kept): (Vec<u32>, Vec<u32>) =
                order.iter().partition(|&&u| actions[u as usize] != anchor[u as usize]);
            moved.extend(kept);
            order = moved;
        }
        fix_or(solver, &order, &proposal, Some(probs), rng, fallback)?.0.chips
    };
    Ok(Proposal {
        actions,
        log_probs,
        credit: None,
        chips,
        fell_back: solver.stats.fallbacks > before,
    })
}

/// The reason recorded for a rollout whose proposal FIX gave up on.
pub const FELL_BACK: &str = "FIX gave up on the policy's proposal and kept none of it (its fallback is not evaluated)";

/// The reward of a throughput: its ratio to the greedy baseline's on the
/// same problem (0 for an invalid partition), so graphs of very different
/// speeds weigh alike.
pub fn reward(throughput: Option<f64>, greedy: f64) -> f32 {
    match throughput {
        Some(t) if greedy > 0.0 && t.is_finite() => (t / greedy) as f32,
        _ => 0.0,
    }
}
