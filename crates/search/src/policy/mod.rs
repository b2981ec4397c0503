//! The learned placement policy of the `rl` strategy: graph and package
//! features ([`features`]), a GraphSAGE encoder with a chip-attention head
//! refined over a few non-autoregressive iterations ([`net`]), the PPO loss
//! and update ([`ppo`]) and checkpoints ([`checkpoint`]).
//!
//! The head scores a node against a key computed from each chip's features,
//! so one set of weights serves any chip count and any graph size.

pub mod checkpoint;
pub mod features;
pub mod net;
pub mod ppo;
pub mod rollout;
pub(crate) mod sage;

pub use checkpoint::{load, save, FORMAT_VERSION};
pub use features::{GraphFeatures, FEATURE_SCHEMA};
pub use net::{Policy, PolicyOutput};

use serde::{Deserialize, Serialize};
use std::fmt;

/// The shape of a policy network; saved beside its weights.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyConfig {
    /// GraphSAGE layers.
    pub layers: usize,
    /// Width of node embeddings, chip keys and queries.
    pub hidden: usize,
    /// Refinement iterations; each sees the previous one's placement.
    pub iterations: usize,
    /// Buckets the operator names are hashed into (so unseen ops still work).
    pub op_buckets: usize,
    /// Seeds the weight initialisation.
    pub seed: u64,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            layers: 8,
            hidden: 128,
            iterations: 3,
            op_buckets: 64,
            seed: 0,
        }
    }
}

impl PolicyConfig {
    /// The largest shape accepted, field by field: far beyond any useful
    /// network, and small enough that a typo (or an edited sidecar, which
    /// the weights' checksum does not cover) cannot make every forward pass
    /// run for hours or allocate without end. `iterations` adds no weights,
    /// so the parameter count of a checkpoint cannot catch it.
    pub const LIMITS: [(&'static str, usize); 4] = [
        ("layers", 256),
        ("hidden", 8192),
        ("iterations", 64),
        ("op_buckets", 1 << 16),
    ];

    /// Rejects shapes the network cannot be built with.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.hidden == 0 || self.iterations == 0 || self.op_buckets == 0 {
            return Err(PolicyError::Config(format!(
                "hidden ({}), iterations ({}) and op_buckets ({}) must all be at least 1",
                self.hidden, self.iterations, self.op_buckets
            )));
        }
        let values = [self.layers, self.hidden, self.iterations, self.op_buckets];
        for ((name, max), value) in Self::LIMITS.into_iter().zip(values) {
            if value > max {
                return Err(PolicyError::Config(format!("{name} ({value}) must be at most {max}")));
            }
        }
        Ok(())
    }
}

/// Why the policy could not be built, run, saved or loaded.
#[derive(Debug)]
pub enum PolicyError {
    /// A file could not be read or written.
    Io { path: String, message: String },
    /// A checkpoint file is damaged or not what it claims to be.
    Corrupt { path: String, message: String },
    /// A checkpoint does not match the configuration or the code.
    Mismatch(String),
    /// A configuration that cannot be used.
    Config(String),
    /// A graph or package the features cannot describe.
    Input(String),
    /// A tensor operation failed (a bug or an exhausted device).
    Tensor(String),
    /// Training produced a non-finite loss or gradient: the update is not
    /// applied, and what was saved before stays as it was.
    Diverged(String),
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::Io { path, message } => write!(f, "cannot access `{path}`: {message}"),
            PolicyError::Corrupt { path, message } => write!(f, "checkpoint file `{path}` is damaged: {message}"),
            PolicyError::Mismatch(m) => write!(f, "checkpoint does not match: {m}"),
            PolicyError::Config(m) => write!(f, "invalid policy configuration: {m}"),
            PolicyError::Input(m) => write!(f, "cannot build policy features: {m}"),
            PolicyError::Tensor(m) => write!(f, "policy tensor error: {m}"),
            PolicyError::Diverged(m) => write!(f, "training diverged: {m}"),
        }
    }
}

impl std::error::Error for PolicyError {}

impl From<candle_core::Error> for PolicyError {
    fn from(e: candle_core::Error) -> Self {
        PolicyError::Tensor(e.to_string())
    }
}

#[cfg(test)]
mod tests;
