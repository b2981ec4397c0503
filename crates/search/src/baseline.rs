//! A problem's baseline, the yardstick `solve` and `compare` measure a
//! search by: greedy's one partition (the reference a strategy must beat)
//! and the proven lower bound on the objective's cost (what no valid
//! partition can beat). Its throughputs are scores, one over the cost (see
//! [`crate::cost::score`]): under `minimize step_time`, steps per second.

use crate::cost::{Bound, Judge};
use crate::strategy::{self, Budget, Greedy, Outcome};
use mcm_core::problem::Problem;
use mcm_solver::Infeasible;

/// Greedy's run and the bound of one problem.
#[derive(Clone, Debug)]
pub struct Baseline {
    /// Greedy's run (one sample, not counted in any budget); `Err` when the
    /// problem has no valid partition.
    pub greedy: Result<Outcome, Infeasible>,
    /// The proven lower bound on the cost, with the structural bound that
    /// binds; `None` when the cost model cannot judge the problem.
    pub bound: Option<Bound>,
}

impl Baseline {
    /// Greedy's partition, one chip per placed node, when it was valid at
    /// evaluation.
    pub fn partition(&self) -> Option<&[u32]> {
        self.best().map(|b| b.chips.as_slice())
    }

    /// Greedy's throughput; `None` when its partition was invalid at
    /// evaluation (or the problem has none).
    pub fn throughput(&self) -> Option<f64> {
        self.best().map(|b| b.throughput)
    }

    /// Greedy's cost in seconds (the inverse of its score).
    pub fn latency(&self) -> Option<f64> {
        self.throughput().map(|t| 1.0 / t)
    }

    /// The throughput of the proven bound (no valid partition does better).
    /// It is infinite for a graph without flops: callers that average it filter.
    pub fn bound_throughput(&self) -> Option<f64> {
        self.bound.as_ref().map(|b| 1.0 / b.latency_s)
    }

    fn best(&self) -> Option<&strategy::Best> {
        self.greedy.as_ref().ok().and_then(|o| o.best.as_ref())
    }
}

/// Runs greedy once on `judge` with `seed` and computes the bound.
pub fn baseline(problem: &Problem, judge: &Judge, seed: u64) -> Baseline {
    baseline_within(problem, judge, seed, Budget::Samples(1))
}

/// [`baseline`] within `budget`: under a time budget greedy's partition is
/// judged only if the solver makes it valid in time (else greedy's outcome
/// has no best partition).
pub fn baseline_within(problem: &Problem, judge: &Judge, seed: u64, budget: Budget) -> Baseline {
    Baseline {
        greedy: strategy::run(problem, judge, &mut Greedy, budget, seed, None),
        bound: judge
            .objective()
            .cloned()
            .or_else(|| crate::cost::objective::objective(problem).ok())
            .map(|o| o.bound()),
    }
}
