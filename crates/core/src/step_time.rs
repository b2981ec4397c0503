//! The step-time objective (`minimize step_time`, `shared/spec/step-time.md`):
//! one input flows through the whole graph; ops run one at a time per chip in
//! order of readiness, transfers one at a time per link down the route tree
//! of their producer, every tie broken as the spec writes it.
//!
//! API agreed between the simulator and the cost-model seam; the bodies are
//! being written on the `steptime` branch.

use crate::graph::Graph;
use crate::latency::LatencyError;
use crate::op_time::OpTimes;
use crate::package::Package;
use std::sync::Arc;

/// The static part of the step-time model of one graph on one package.
#[derive(Debug)]
pub struct StepTimeModel {
    pub graph: Arc<Graph>,
    pub package: Arc<Package>,
    pub times: Arc<OpTimes>,
}

/// Who an op runs for: a placed node (decision index) or a copy of a
/// replicable node (graph node index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "index", rename_all = "snake_case")]
pub enum OpOf {
    Placed(u32),
    Replica(u32),
}

/// One op of the schedule.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct OpRun {
    pub of: OpOf,
    /// The graph node's index in the file's node list.
    pub node: u32,
    pub chip: u32,
    pub start_s: f64,
    pub end_s: f64,
}

/// One transfer of a node's output over one link.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TransferRun {
    /// The producing placed node (decision index).
    pub node: u32,
    pub link: u32,
    pub bytes: u64,
    pub start_s: f64,
    pub end_s: f64,
}

/// A whole simulated step.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Schedule {
    /// The instant the last op ends.
    pub step_time_s: f64,
    /// Every op, in the order they start (ties: chip order).
    pub ops: Vec<OpRun>,
    /// Every transfer, in the order they start (ties: link order).
    pub transfers: Vec<TransferRun>,
    /// Seconds each chip computes.
    pub chip_busy_s: Vec<f64>,
    /// Seconds each link carries data.
    pub link_busy_s: Vec<f64>,
    /// Index into `ops` of the op that ends last (the first such in `ops`).
    pub last_op: Option<usize>,
    /// Index into `transfers` of the transfer that ends last.
    pub last_transfer: Option<usize>,
    /// The critical path, back from `last_op`: indices into `ops` and
    /// `transfers`, first to last, each entry waiting on the one before.
    pub critical_path: Vec<PathStep>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "index", rename_all = "snake_case")]
pub enum PathStep {
    Op(usize),
    Transfer(usize),
}

impl StepTimeModel {
    /// Refuses a package the model cannot cost (no chips, a chip without a
    /// positive `compute`, a link without a positive `bandwidth`), as
    /// [`crate::latency::LatencyModel::new`] does.
    pub fn new(graph: Arc<Graph>, package: Arc<Package>) -> Result<StepTimeModel, LatencyError> {
        let times = Arc::new(OpTimes::new(graph.clone(), package.clone())?);
        let _ = (&graph, &package, &times);
        todo!("step-time simulator")
    }

    /// The step time alone (the fast path the search asks many times).
    /// `Err` for a partition of the wrong length, an unknown chip, or a
    /// transfer no route can carry (the message names it).
    pub fn step_time(&self, chips: &[u32]) -> Result<f64, String> {
        let _ = chips;
        todo!("step-time simulator")
    }

    /// The whole schedule, for reports and the timeline picture.
    pub fn simulate(&self, chips: &[u32]) -> Result<Schedule, String> {
        let _ = chips;
        todo!("step-time simulator")
    }
}
