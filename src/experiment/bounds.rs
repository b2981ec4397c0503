//! The structural bounds against real partitions: per problem, the old
//! bound (total flops / total compute), the proven bound and which binds,
//! and a strategy's best latency, which no proven bound may exceed. `bench
//! bounds` runs it over a data set; the tests over a sample of it.

use crate::cost::{Bound, BoundKind, CostModel, Judge, JudgeOptions};
use crate::problem::Problem;
use crate::strategy::{self, Budget, RlOptions};
use std::time::Instant;

/// One problem's bounds and best partition.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub graph: String,
    pub nodes: usize,
    /// Total flops / total compute, the bound before the structural ones.
    pub total_compute_s: f64,
    /// The proven bound: the largest structural one.
    pub proven: Bound,
    /// Seconds to compute every bound.
    pub bounds_seconds: f64,
    pub strategy: String,
    /// The strategy's best latency under the analytical model (the dynamic
    /// check off: the bounds speak of the rules only); `None` when it found
    /// no partition the model can cost.
    pub best_latency_s: Option<f64>,
}

impl Row {
    /// Best latency over the proven bound.
    pub fn gap(&self) -> Option<f64> {
        self.best_latency_s.map(|b| b / self.proven.latency_s)
    }

    /// The best partition is no faster than the proven bound (up to the
    /// rounding of summing the same flops in other orders).
    pub fn sound(&self) -> bool {
        self.best_latency_s
            .is_none_or(|b| b >= self.proven.latency_s * (1.0 - 1e-9))
    }
}

/// Computes the bounds of `p` and runs `strategy` for `budget` samples.
pub fn measure(p: &Problem, strategy: &str, budget: usize, seed: u64) -> Result<Row, String> {
    let t = Instant::now();
    let model = CostModel::new(p).map_err(|e| e.message)?;
    let proven = model.bound().clone();
    let bounds_seconds = t.elapsed().as_secs_f64();
    let total_compute_s = model
        .bounds()
        .iter()
        .find(|b| b.kind == BoundKind::TotalCompute)
        .map_or(0.0, |b| b.latency_s);
    let opts = JudgeOptions {
        analytical: true,
        dynamic_check: false,
        ..JudgeOptions::default()
    };
    let judge = Judge::new(p, &opts).map_err(|e| e.message)?;
    let mut s = strategy::by_name(strategy, &RlOptions::default())
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("unknown strategy `{strategy}`"))?;
    let o = strategy::run(p, &judge, s.as_mut(), Budget::Samples(budget), seed, None)
        .map_err(|_| "the problem has no valid partition".to_string())?;
    Ok(Row {
        graph: p.graph.name.clone(),
        nodes: p.graph.num_placed(),
        total_compute_s,
        proven,
        bounds_seconds,
        strategy: strategy.to_string(),
        best_latency_s: o.best.map(|b| 1.0 / b.throughput),
    })
}
