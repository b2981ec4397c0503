//! Proximal policy optimisation for the placement policy.
//!
//! A rollout is one whole placement: the policy proposes a chip per node
//! and the caller scores it (the reward, e.g. from the solver-corrected
//! partition; it is computed elsewhere). Episodes are one step long, so the
//! advantage is reward minus the value predicted when the proposal was made.

use super::features::GraphFeatures;
use super::net::{Policy, PolicyOutput};
use super::PolicyError;
use candle_core::{DType, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// How the probability ratio of a placement is formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ratio {
    /// One ratio per node, all sharing the placement's advantage. With
    /// thousands of nodes the joint ratio leaves the clip range after one
    /// step and stops the gradient; the per-node ratios do not.
    PerNode,
    /// The ratio of the whole placement (sum of per-node log-probs): the
    /// textbook objective, fine for small graphs.
    Joint,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PpoConfig {
    /// Rollouts collected per update (used by the caller).
    pub rollouts: usize,
    pub minibatches: usize,
    pub epochs: usize,
    pub clip: f64,
    pub lr: f64,
    pub entropy: f64,
    pub value_coef: f64,
    /// Global gradient-norm clip; 0 or less turns it off.
    pub max_grad_norm: f64,
    pub ratio: Ratio,
}

impl Default for PpoConfig {
    fn default() -> Self {
        PpoConfig {
            rollouts: 20,
            minibatches: 4,
            epochs: 10,
            clip: 0.2,
            lr: 3e-4,
            entropy: 0.01,
            value_coef: 0.5,
            max_grad_norm: 0.5,
            ratio: Ratio::PerNode,
        }
    }
}

/// One scored placement.
#[derive(Clone, Debug, PartialEq)]
pub struct Rollout {
    /// Index of the graph's features in [`Batch::features`].
    pub graph: usize,
    /// The placement the policy was given as `prev` when it proposed.
    pub prev: Option<Vec<u32>>,
    /// The chip the policy proposed for each node (before any solver repair).
    pub actions: Vec<u32>,
    /// Log-probability of each proposed chip under the policy that proposed.
    pub old_log_probs: Vec<f32>,
    /// The nodes whose chips were the rollout's decisions (sorted); `None`
    /// when every node's was. Only these nodes' ratios enter the policy
    /// loss: a rollout that moves a few nodes from the placement it refines
    /// says nothing about the others.
    pub credit: Option<Vec<u32>>,
    pub reward: f32,
    /// The value the policy predicted when it proposed.
    pub value: f32,
}

/// Rollouts and the features of the graphs they were drawn on.
pub struct Batch<'a> {
    pub features: &'a [GraphFeatures],
    pub rollouts: Vec<Rollout>,
}

/// Averages over the minibatch steps of one update.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UpdateStats {
    pub policy_loss: f64,
    pub value_loss: f64,
    pub entropy: f64,
    pub approx_kl: f64,
    pub clip_frac: f64,
}

/// The loss of a set of rollouts and its parts (parts as numbers).
pub struct Loss {
    /// policy + value_coef * value - entropy_coef * entropy, to minimise.
    pub total: Tensor,
    pub stats: UpdateStats,
}

/// An AdamW optimiser over the policy's variables with `cfg.lr`.
pub fn optimizer(policy: &Policy, cfg: &PpoConfig) -> Result<AdamW, PolicyError> {
    let vars = policy.vars().into_iter().map(|(_, v)| v).collect();
    Ok(AdamW::new(
        vars,
        ParamsAdamW {
            lr: cfg.lr,
            ..ParamsAdamW::default()
        },
    )?)
}

/// Draws a chip per node from `probs`; returns the chips and their log-probabilities.
pub fn sample_actions(probs: &[Vec<f32>], rng: &mut impl Rng) -> (Vec<u32>, Vec<f32>) {
    let mut actions = Vec::with_capacity(probs.len());
    let mut log_probs = Vec::with_capacity(probs.len());
    for p in probs {
        let total: f32 = p.iter().sum();
        let pick = draw_index(p, rng.random::<f32>());
        actions.push(pick as u32);
        log_probs.push((p[pick] / total).max(f32::MIN_POSITIVE).ln());
    }
    (actions, log_probs)
}

/// The index `u` (uniform in [0, 1)) falls on in `p`'s cumulative weights.
/// Rounding can carry `u` past the last weight: then the last chip with a
/// positive weight, never one the policy gives no chance.
fn draw_index(p: &[f32], u: f32) -> usize {
    let total: f32 = p.iter().sum();
    let mut x = u * total;
    for (c, &w) in p.iter().enumerate() {
        if x < w {
            return c;
        }
        x -= w;
    }
    p.iter().rposition(|&w| w > 0.0).unwrap_or(p.len().saturating_sub(1))
}

/// Log-probabilities of given chips, for proposals drawn outside [`sample_actions`].
pub fn log_probs_of(probs: &[Vec<f32>], actions: &[u32]) -> Vec<f32> {
    probs
        .iter()
        .zip(actions)
        .map(|(p, &a)| p[a as usize].max(f32::MIN_POSITIVE).ln())
        .collect()
}

/// Advantages `reward - value`, normalised over the batch when it has two or more.
pub fn advantages(rollouts: &[Rollout]) -> Vec<f64> {
    let raw: Vec<f64> = rollouts.iter().map(|r| r.reward as f64 - r.value as f64).collect();
    if raw.len() < 2 {
        return raw;
    }
    let mean = raw.iter().sum::<f64>() / raw.len() as f64;
    let var = raw.iter().map(|a| (a - mean) * (a - mean)).sum::<f64>() / raw.len() as f64;
    let std = var.sqrt() + 1e-8;
    raw.iter().map(|a| (a - mean) / std).collect()
}

/// The PPO loss of the rollouts `which` (indices into `batch.rollouts`),
/// with `advantages` indexed like `batch.rollouts`. Rollouts on the same
/// graph from the same `prev` share one forward pass.
pub fn loss(
    policy: &Policy,
    batch: &Batch,
    which: &[usize],
    advantages: &[f64],
    cfg: &PpoConfig,
) -> Result<Loss, PolicyError> {
    loss_from(policy, batch, which, advantages, cfg, None)
}

/// [`loss`], with `cached` as the policy's output for rollouts whose graph
/// and `prev` are the first rollout's, when the caller has it from the same
/// weights (the forward pass the rollouts were drawn from): a deployment
/// round then costs one forward pass and one backward, not two and one.
fn loss_from(
    policy: &Policy,
    batch: &Batch,
    which: &[usize],
    advantages: &[f64],
    cfg: &PpoConfig,
    cached: Option<&PolicyOutput>,
) -> Result<Loss, PolicyError> {
    if which.is_empty() {
        return Err(PolicyError::Input("a PPO loss needs at least one rollout".into()));
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &i in which {
        let r = &batch.rollouts[i];
        match groups.iter_mut().find(|g| {
            let h = &batch.rollouts[g[0]];
            h.graph == r.graph && h.prev == r.prev
        }) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    let dev = policy.device();
    let dtype = policy.dtype();
    let mut terms = Vec::with_capacity(which.len());
    let mut stats = UpdateStats::default();
    let mut ratios_seen = 0usize;
    for group in groups {
        let first = &batch.rollouts[group[0]];
        let f = batch.features.get(first.graph).ok_or_else(|| {
            PolicyError::Input(format!(
                "rollout names graph {} of {}",
                first.graph,
                batch.features.len()
            ))
        })?;
        let lead = &batch.rollouts[0];
        let out = match cached {
            Some(out) if first.graph == lead.graph && first.prev == lead.prev => out.clone(),
            _ => policy.forward(f, first.prev.as_deref())?,
        };
        let lp = out.last();
        let entropy = lp.exp()?.mul(lp)?.sum(1)?.mean(0)?.neg()?;
        let entropy_value = entropy.to_dtype(DType::F64)?.to_scalar::<f64>()?;
        for &i in &group {
            let r = &batch.rollouts[i];
            if r.actions.len() != f.num_nodes || r.old_log_probs.len() != f.num_nodes {
                return Err(PolicyError::Input(format!(
                    "rollout {i} has {} actions and {} log-probs for a graph of {} nodes",
                    r.actions.len(),
                    r.old_log_probs.len(),
                    f.num_nodes
                )));
            }
            let actions = Tensor::from_slice(&r.actions, (f.num_nodes, 1), dev)?;
            let mut new = lp.gather(&actions, 1)?.squeeze(1)?;
            let mut old: Vec<f64> = r.old_log_probs.iter().map(|&x| x as f64).collect();
            if let Some(credit) = &r.credit {
                if let Some(&u) = credit.iter().find(|&&u| u as usize >= f.num_nodes) {
                    return Err(PolicyError::Input(format!(
                        "rollout {i} credits node {u} of a graph of {} nodes",
                        f.num_nodes
                    )));
                }
                new = new.index_select(&Tensor::from_slice(credit, credit.len(), dev)?, 0)?;
                old = credit.iter().map(|&u| old[u as usize]).collect();
            }
            let value_loss = (&out.value - r.reward as f64)?.sqr()?;
            let mut term = (&value_loss * cfg.value_coef)?;
            // A rollout that credits no node (its moves all came to nothing)
            // trains the value head only.
            if !old.is_empty() {
                let k = old.len();
                let old = Tensor::from_vec(old, k, dev)?.to_dtype(dtype)?;
                let log_ratio = match cfg.ratio {
                    Ratio::PerNode => (new - old)?,
                    Ratio::Joint => (new.sum_keepdim(0)? - old.sum_keepdim(0)?)?,
                };
                // Keeps exp finite when a joint ratio is far outside the clip range.
                let ratio = log_ratio.clamp(-20.0, 20.0)?.exp()?;
                let a = advantages[i];
                let unclipped = (&ratio * a)?;
                let clipped = (ratio.clamp(1.0 - cfg.clip, 1.0 + cfg.clip)? * a)?;
                let policy_loss = unclipped.minimum(&clipped)?.mean(0)?.neg()?;
                term = (&policy_loss + term)?;
                stats.policy_loss += policy_loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
                let rs = ratio.to_dtype(DType::F64)?.to_vec1::<f64>()?;
                for &x in &rs {
                    stats.approx_kl += (x - 1.0) - x.ln();
                    stats.clip_frac += ((x - 1.0).abs() > cfg.clip) as u8 as f64;
                }
                ratios_seen += rs.len();
            }
            terms.push((term - (&entropy * cfg.entropy)?)?);
            stats.value_loss += value_loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
            stats.entropy += entropy_value;
        }
    }
    let k = which.len() as f64;
    stats.policy_loss /= k;
    stats.value_loss /= k;
    stats.entropy /= k;
    stats.approx_kl /= ratios_seen.max(1) as f64;
    stats.clip_frac /= ratios_seen.max(1) as f64;
    let total = Tensor::stack(&terms, 0)?.mean(0)?;
    Ok(Loss { total, stats })
}

pub(crate) fn diverged(what: String) -> PolicyError {
    PolicyError::Diverged(format!("{what} (a learning rate or entropy bonus too large?)"))
}

/// One PPO update: `cfg.epochs` passes over the batch in `cfg.minibatches`
/// shuffled minibatches, each an AdamW step on the clipped gradient.
pub fn update(
    policy: &Policy,
    optimizer: &mut AdamW,
    batch: &Batch,
    cfg: &PpoConfig,
    rng: &mut impl Rng,
) -> Result<UpdateStats, PolicyError> {
    update_from(policy, optimizer, batch, cfg, rng, None)
}

/// [`update`], given the policy's output under the current weights for the
/// graph and `prev` of the batch's first rollout (the forward pass its
/// rollouts were drawn from), which the first step reuses (the weights
/// change after it).
pub fn update_from(
    policy: &Policy,
    optimizer: &mut AdamW,
    batch: &Batch,
    cfg: &PpoConfig,
    rng: &mut impl Rng,
    drawn_from: Option<&PolicyOutput>,
) -> Result<UpdateStats, PolicyError> {
    let n = batch.rollouts.len();
    if n == 0 {
        return Ok(UpdateStats::default());
    }
    let adv = advantages(&batch.rollouts);
    let size = n.div_ceil(cfg.minibatches.clamp(1, n));
    let vars = policy.vars();
    let mut order: Vec<usize> = (0..n).collect();
    let mut sum = UpdateStats::default();
    let mut steps = 0usize;
    for _ in 0..cfg.epochs {
        order.shuffle(rng);
        for chunk in order.chunks(size) {
            let cached = drawn_from.filter(|_| steps == 0);
            let l = loss_from(policy, batch, chunk, &adv, cfg, cached)?;
            let total = l.total.to_dtype(DType::F64)?.to_scalar::<f64>()?;
            if !total.is_finite() {
                return Err(diverged(format!("the PPO loss is {total}")));
            }
            let mut grads = l.total.backward()?;
            if cfg.max_grad_norm > 0.0 {
                let mut sq = 0.0;
                for (_, v) in &vars {
                    if let Some(g) = grads.get(v.as_tensor()) {
                        sq += g.sqr()?.sum_all()?.to_dtype(DType::F64)?.to_scalar::<f64>()?;
                    }
                }
                let norm = sq.sqrt();
                if !norm.is_finite() {
                    return Err(diverged(format!("the gradient's norm is {norm}")));
                }
                if norm > cfg.max_grad_norm {
                    let scale = cfg.max_grad_norm / norm;
                    for (_, v) in &vars {
                        if let Some(g) = grads.remove(v.as_tensor()) {
                            grads.insert(v.as_tensor(), (g * scale)?);
                        }
                    }
                }
            }
            optimizer.step(&grads)?;
            let s = l.stats;
            sum.policy_loss += s.policy_loss;
            sum.value_loss += s.value_loss;
            sum.entropy += s.entropy;
            sum.approx_kl += s.approx_kl;
            sum.clip_frac += s.clip_frac;
            steps += 1;
        }
    }
    let k = steps.max(1) as f64;
    Ok(UpdateStats {
        policy_loss: sum.policy_loss / k,
        value_loss: sum.value_loss / k,
        entropy: sum.entropy / k,
        approx_kl: sum.approx_kl / k,
        clip_frac: sum.clip_frac / k,
    })
}

#[cfg(test)]
mod draw_tests {
    use super::draw_index;

    #[test]
    fn a_draw_carried_past_the_weights_takes_the_last_possible_chip() {
        assert_eq!(draw_index(&[0.25, 0.75, 0.0], 0.1), 0);
        assert_eq!(draw_index(&[0.25, 0.75, 0.0], 0.5), 1);
        // u = 1 stands for rounding that carries the draw past the sum.
        assert_eq!(draw_index(&[0.25, 0.75, 0.0], 1.0), 1);
        assert_eq!(draw_index(&[0.0, 0.0], 1.0), 1, "no weight at all: the last chip");
    }
}
