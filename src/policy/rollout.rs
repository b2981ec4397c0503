//! One rollout: the policy's distributions become a partition request, in
//! one of three ways (the paper's variants). Training and the `rl`
//! strategies share this, so what is trained is what is deployed.

use super::ppo::{log_probs_of, sample_actions};
use crate::solver::{fix_or, node_order, sample, Infeasible, Order, Solver};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// How a proposal meets the solver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
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

/// What one rollout asked for and what it got.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    /// The chips the PPO update credits (the policy's own draw; the
    /// partition itself under SAMPLE, where no separate draw exists).
    pub actions: Vec<u32>,
    pub log_probs: Vec<f32>,
    /// The partition to evaluate.
    pub chips: Vec<u32>,
    /// FIX gave up on the proposal and could merge none of it into the
    /// fallback partition, which it returned: not the policy's work, so it
    /// earns no reward and is not evaluated.
    pub fell_back: bool,
}

/// A rollout from `probs` (a distribution per node, as [`super::Policy::probs`] gives).
/// `fallback`, a valid partition, bounds FIX's time (see [`fix_or`]).
pub fn propose(
    probs: &[Vec<f32>],
    mode: Mode,
    solver: &mut Solver,
    rng: &mut impl Rng,
    fallback: Option<&[u32]>,
) -> Result<Proposal, Infeasible> {
    if mode == Mode::Sample {
        let order = node_order(solver, Order::Random, rng);
        let p = sample(solver, &order, Some(probs), rng)?;
        return Ok(Proposal {
            log_probs: log_probs_of(probs, &p.chips),
            actions: p.chips.clone(),
            chips: p.chips,
            fell_back: false,
        });
    }
    let (actions, log_probs) = sample_actions(probs, rng);
    settle(probs, mode, actions, log_probs, solver, rng, fallback)
}

/// Like [`propose`], with each node's most likely chip instead of a draw
/// (greedy decoding; under `sample` it is a plain [`propose`]).
pub fn propose_likeliest(
    probs: &[Vec<f32>],
    mode: Mode,
    solver: &mut Solver,
    rng: &mut impl Rng,
    fallback: Option<&[u32]>,
) -> Result<Proposal, Infeasible> {
    if mode == Mode::Sample {
        return propose(probs, mode, solver, rng, fallback);
    }
    let actions: Vec<u32> = probs
        .iter()
        .map(|p| (0..p.len()).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap_or(0) as u32)
        .collect();
    let log_probs = log_probs_of(probs, &actions);
    settle(probs, mode, actions, log_probs, solver, rng, fallback)
}

/// The partition of chosen chips: FIX'd, or as they are without the solver.
fn settle(
    probs: &[Vec<f32>],
    mode: Mode,
    actions: Vec<u32>,
    log_probs: Vec<f32>,
    solver: &mut Solver,
    rng: &mut impl Rng,
    fallback: Option<&[u32]>,
) -> Result<Proposal, Infeasible> {
    let before = solver.stats.fallbacks;
    let chips = if mode == Mode::NoSolver {
        actions.clone()
    } else {
        let proposal: Vec<Option<u32>> = actions.iter().copied().map(Some).collect();
        let order = node_order(solver, Order::Random, rng);
        fix_or(solver, &order, &proposal, Some(probs), rng, fallback)?.0.chips
    };
    Ok(Proposal {
        actions,
        log_probs,
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
