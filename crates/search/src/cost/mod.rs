//! Judging valid partitions: the cost models behind one seam
//! ([`Objective`], registered per metric in [`objective::MODELS`]: the
//! pipeline model of the solver brief, step time), the dynamic peak-memory
//! check, external evaluators, and the evaluation service (cache, parallel
//! runs) the search strategies ask.
//!
//! Everything here takes a full placement as one chip id per decision node
//! (`&[u32]`, as the solver hands it out) and returns a [`Verdict`].

mod analytical;
pub mod bounds;
mod chain_chips;
mod chain_cuts;
mod external;
mod memory;
pub mod objective;
mod service;
mod stage_cuts;
mod step;

pub use analytical::{ChipCost, CostModel, CostReport, LinkCost};
pub use bounds::{Bound, BoundKind};
pub use external::{parse_reply, External};
pub use memory::{MemoryOverflow, PeakMemory};
pub use objective::{score, Objective, Report};
pub use service::{Judge, JudgeOptions, JudgeStats};
pub(crate) use stage_cuts::topological;
pub use step::StepTime;

use mcm_core::problem::Problem;
use std::fmt;
use std::sync::Arc;

/// What an evaluation says of one partition.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    /// A partition that runs, with the score the search maximises: one over
    /// the objective's cost ([`score`]). Under `maximize throughput` it is
    /// the throughput; under `minimize step_time`, steps per second.
    Valid { throughput: f64 },
    /// A partition that fails at evaluation (the dynamic check, an
    /// evaluator's refusal, crash, timeout or unreadable output).
    Invalid { reason: String },
}

impl Verdict {
    /// The score of a valid partition (higher is better).
    pub fn throughput(&self) -> Option<f64> {
        match self {
            Verdict::Valid { throughput } => Some(*throughput),
            Verdict::Invalid { .. } => None,
        }
    }
}

/// Judges partitions of one problem. Implementations must be callable from
/// several threads at once (evaluations run in parallel).
pub trait Evaluate: Send + Sync {
    fn evaluate(&self, chips: &[u32]) -> Verdict;
}

/// A problem the cost model cannot judge (a missing attribute, a package
/// without room for its graph's routes), found before any search starts.
#[derive(Clone, Debug, PartialEq)]
pub struct CostError {
    pub message: String,
    pub help: Option<String>,
}

impl CostError {
    fn new(message: impl Into<String>, help: impl Into<String>) -> CostError {
        CostError {
            message: message.into(),
            help: Some(help.into()),
        }
    }
}

impl fmt::Display for CostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The built-in judge: the dynamic peak-memory check, then the objective's
/// cost model.
pub struct Analytical {
    /// The pipeline model, whose dynamic check this is.
    pub model: Arc<CostModel>,
    /// The cost model of the problem's objective.
    pub objective: Arc<dyn Objective>,
    /// Run the dynamic check first (on by default).
    pub dynamic_check: bool,
}

impl Analytical {
    pub fn new(problem: &Problem) -> Result<Analytical, CostError> {
        let model = Arc::new(CostModel::new(problem)?);
        Ok(Analytical {
            objective: objective::objective_with(problem, &model)?,
            model,
            dynamic_check: true,
        })
    }
}

impl Evaluate for Analytical {
    fn evaluate(&self, chips: &[u32]) -> Verdict {
        if self.dynamic_check {
            if let Err(o) = self.model.peak_memory(chips) {
                return Verdict::Invalid { reason: o.to_string() };
            }
        }
        match self.objective.cost(chips) {
            Ok(c) => {
                match score(c) {
                    Some(throughput) => Verdict::Valid { throughput },
                    // An infinite score makes every ratio to it NaN (`vs greedy
                    // NaNx`): such a partition is no sample to compare.
                    None => {
                        Verdict::Invalid {
                            reason: format!(
                        "the partition takes no time: nothing on it computes or moves data, so its {} is undefined",
                        if self.objective.name() == "pipeline" { "throughput" } else { "score" }
                    ),
                        }
                    }
                }
            }
            Err(reason) => Verdict::Invalid { reason },
        }
    }
}

/// The report line on measured op times: how many ops a cost model charged
/// a measured time on their chip's kind (`eval` shows it whenever the graph
/// has `times`).
pub(crate) fn profiled_line(profiled: usize, ops: usize) -> String {
    format!(
        "profiled: {} of {} ops on their chip's kind (the rest cost flops / compute)",
        grouped(profiled),
        grouped(ops)
    )
}

/// `1034` as `1,034`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod profiled_tests {
    #[test]
    fn counts_are_grouped_by_thousands() {
        let g: Vec<String> = [0, 999, 1000, 1034, 1234567].into_iter().map(super::grouped).collect();
        assert_eq!(g, ["0", "999", "1,000", "1,034", "1,234,567"]);
        assert_eq!(
            super::profiled_line(812, 1034),
            "profiled: 812 of 1,034 ops on their chip's kind (the rest cost flops / compute)"
        );
    }
}
