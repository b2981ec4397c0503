//! What the REINFORCE placers (`hdp`, `placeto`) share: the optimiser step
//! with global gradient clipping, the moving-average baseline, Bello's
//! squashed logits, drawing actions, and checkpoints of a [`VarMap`] with a
//! JSON sidecar naming the placer and its configuration.

use crate::policy::features::FEATURE_SCHEMA;
use crate::policy::ppo::{diverged, sample_actions};
use crate::policy::PolicyError;
use candle_core::{DType, Tensor, D};
use candle_nn::{AdamW, Optimizer, ParamsAdamW, VarMap};
use mcm_core::digest::fnv1a;
use rand::Rng;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// An Adam optimiser (no weight decay, as the papers' Adam) over every variable of `varmap`.
pub(crate) fn adam(varmap: &VarMap, lr: f64) -> Result<AdamW, PolicyError> {
    Ok(AdamW::new(
        varmap.all_vars(),
        ParamsAdamW {
            lr,
            weight_decay: 0.0,
            ..ParamsAdamW::default()
        },
    )?)
}

/// One optimiser step on `loss`, the gradient clipped to `max_norm` (global
/// norm; 0 turns clipping off). A non-finite loss or gradient is refused
/// before anything changes.
pub(crate) fn step(opt: &mut AdamW, varmap: &VarMap, loss: &Tensor, max_norm: f64) -> Result<(), PolicyError> {
    let value = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
    if !value.is_finite() {
        return Err(diverged(format!("the REINFORCE loss is {value}")));
    }
    let mut grads = loss.backward()?;
    let vars = varmap.all_vars();
    let mut sq = 0.0;
    for v in &vars {
        if let Some(g) = grads.get(v.as_tensor()) {
            sq += g.sqr()?.sum_all()?.to_dtype(DType::F64)?.to_scalar::<f64>()?;
        }
    }
    let norm = sq.sqrt();
    if !norm.is_finite() {
        return Err(diverged(format!("the gradient's norm is {norm}")));
    }
    if max_norm > 0.0 && norm > max_norm {
        for v in &vars {
            if let Some(g) = grads.remove(v.as_tensor()) {
                grads.insert(v.as_tensor(), (g * (max_norm / norm))?);
            }
        }
    }
    opt.step(&grads)?;
    Ok(())
}

/// The exponential moving average of rewards, REINFORCE's baseline (HDP:
/// "the exponential moving average of the reward was an effective baseline").
#[derive(Clone, Debug)]
pub(crate) struct Ema {
    value: Option<f64>,
    decay: f64,
}

impl Ema {
    pub fn new(decay: f64) -> Ema {
        Ema { value: None, decay }
    }

    /// The baseline for `reward` (the average so far, or `reward` itself
    /// the first time), then folds `reward` in.
    pub fn advance(&mut self, reward: f64) -> f64 {
        let b = self.value.unwrap_or(reward);
        self.value = Some(self.decay * b + (1.0 - self.decay) * reward);
        b
    }
}

/// Bello et al.'s squashing of logits, `c * tanh(l / t)`: a softmax over
/// them never saturates, so the policy keeps exploring.
pub(crate) fn squash(logits: &Tensor, c: f64, t: f64) -> candle_core::Result<Tensor> {
    (logits / t)?.tanh()? * c
}

/// Draws one index per row of `log_probs` ([B, K] log-softmax); returns the
/// draws and the sum of their log-probabilities as a tensor (with gradient).
pub(crate) fn draw(log_probs: &Tensor, rng: &mut impl Rng) -> Result<(Vec<u32>, Tensor), PolicyError> {
    let probs = log_probs.exp()?.to_dtype(DType::F32)?.to_vec2::<f32>()?;
    let (actions, _) = sample_actions(&probs, rng);
    let chosen = chosen(log_probs, &actions)?;
    Ok((actions, chosen))
}

/// The log-probabilities of `actions`, one per row of `log_probs` [B, K]: [B].
pub(crate) fn chosen(log_probs: &Tensor, actions: &[u32]) -> candle_core::Result<Tensor> {
    let idx = Tensor::from_vec(actions.to_vec(), (actions.len(), 1), log_probs.device())?;
    log_probs.gather(&idx, D::Minus1)?.squeeze(D::Minus1)
}

/// Version of the placers' checkpoint layout; loading refuses any other.
pub const PLACER_FORMAT: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Sidecar<C> {
    placer: String,
    format_version: u32,
    feature_schema: u32,
    config: C,
    /// FNV-1a 64 of the weights file, in hex.
    checksum: String,
}

fn io(path: &Path, e: impl std::fmt::Display) -> PolicyError {
    PolicyError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Saves `varmap` as `STEM.safetensors` and `config` in `STEM.json`
/// (written to temporaries and renamed into place, weights first).
pub(crate) fn save<C: Serialize>(varmap: &VarMap, placer: &str, config: &C, stem: &Path) -> Result<(), PolicyError> {
    let (weights, sidecar) = crate::policy::checkpoint::paths(stem);
    let tmp = weights.with_extension("safetensors.tmp");
    varmap.save(&tmp).map_err(|e| io(&tmp, e))?;
    let bytes = std::fs::read(&tmp).map_err(|e| io(&tmp, e))?;
    let meta = Sidecar {
        placer: placer.to_string(),
        format_version: PLACER_FORMAT,
        feature_schema: FEATURE_SCHEMA,
        config,
        checksum: fnv1a(&bytes),
    };
    let json = serde_json::to_string_pretty(&meta).map_err(|e| io(&sidecar, e))?;
    let tmp_side = sidecar.with_extension("json.tmp");
    std::fs::write(&tmp_side, json).map_err(|e| io(&tmp_side, e))?;
    std::fs::rename(&tmp, &weights).map_err(|e| io(&weights, e))?;
    std::fs::rename(&tmp_side, &sidecar).map_err(|e| io(&sidecar, e))?;
    Ok(())
}

/// The configuration of the checkpoint at `stem`, after checking that it is
/// `placer`'s, of this layout and feature schema, and that its weights file
/// is the one the sidecar describes.
pub(crate) fn load_config<C: DeserializeOwned>(placer: &str, stem: &Path) -> Result<C, PolicyError> {
    let (weights, sidecar) = crate::policy::checkpoint::paths(stem);
    let text = std::fs::read_to_string(&sidecar).map_err(|e| io(&sidecar, e))?;
    let meta: Sidecar<C> = serde_json::from_str(&text).map_err(|e| PolicyError::Corrupt {
        path: sidecar.display().to_string(),
        message: format!("not a {placer} checkpoint sidecar: {e}"),
    })?;
    if meta.placer != placer {
        return Err(PolicyError::Mismatch(format!(
            "`{}` is a {} checkpoint, not a {placer} one",
            sidecar.display(),
            meta.placer
        )));
    }
    if meta.format_version != PLACER_FORMAT || meta.feature_schema != FEATURE_SCHEMA {
        return Err(PolicyError::Mismatch(format!(
            "checkpoint format {} on feature schema {}, but this build reads format {PLACER_FORMAT} on schema {FEATURE_SCHEMA}",
            meta.format_version, meta.feature_schema
        )));
    }
    let bytes = std::fs::read(&weights).map_err(|e| io(&weights, e))?;
    let sum = fnv1a(&bytes);
    if sum != meta.checksum {
        return Err(PolicyError::Corrupt {
            path: weights.display().to_string(),
            message: format!("checksum {sum} differs from {} recorded in the sidecar", meta.checksum),
        });
    }
    Ok(meta.config)
}

/// Loads the weights at `stem` into `varmap`, whose variables must all be
/// in the file with the same shapes.
pub(crate) fn load_weights(varmap: &mut VarMap, stem: &Path) -> Result<(), PolicyError> {
    let (weights, _) = crate::policy::checkpoint::paths(stem);
    varmap
        .load(&weights)
        .map_err(|e| PolicyError::Mismatch(format!("`{}`: {e}", weights.display())))
}

#[cfg(test)]
mod tests {
    use super::Ema;

    #[test]
    fn the_baseline_starts_at_the_first_reward_and_follows_the_rest() {
        let mut b = Ema::new(0.5);
        assert_eq!(b.advance(2.0), 2.0);
        assert_eq!(b.advance(4.0), 2.0);
        assert_eq!(b.advance(0.0), 3.0);
    }
}
