//! The objective inside the solver: a latency target `T`, every chip's
//! stage (compute plus the links leaving it, as the analytical cost model
//! counts them: [`mcm_core::latency`]) at most `T`.
//!
//! It is not a rule of the problem but an extra constraint a search sets
//! ([`crate::Solver::with_target`], [`crate::sat::SatOracle::set_target`]):
//! - the engine propagates a sound relaxation ([`propagator`]): per chip the
//!   compute of the nodes fixed there (trailed loads) plus the transfers
//!   that fixed pairs force; a chip whose room is gone turns heavy nodes
//!   away; a complete placement is judged exactly;
//! - SAT encodes it ([`encode`]): per chip a sequential counter of the
//!   weights rounded down to units of `T / K` (sound), and lazy cuts, each a
//!   small set of a chip's parts whose stage alone is above `T`.
//!
//! So a SAT answer "unsatisfiable under T" proves that no partition valid
//! under the rules has a latency of `T` or less.

pub(crate) mod encode;
mod propagator;
#[cfg(test)]
mod tests;

pub use propagator::TargetPropagator;

use mcm_core::latency::LatencyModel;
use std::sync::Arc;

/// Propagation prunes only past `T · (1 + SLACK)`: its sums add in another
/// order than the model's; the complete placement is judged exactly.
pub(crate) const SLACK: f64 = 1e-9;

/// A latency target on one problem's model.
#[derive(Clone, Debug)]
pub struct Target {
    pub model: Arc<LatencyModel>,
    /// Seconds: a partition is allowed when its latency is at most this.
    pub latency_s: f64,
}

impl Target {
    /// Whether a complete placement meets the target, judged by the model
    /// (a transfer without a route never does).
    pub fn holds(&self, chips: &[u32]) -> bool {
        self.model.latency(chips).is_ok_and(|l| l <= self.latency_s)
    }
}
