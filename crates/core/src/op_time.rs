//! The time of one op on one chip, shared by every cost model:
//! `flops / compute + overhead`, where `overhead` is an optional per-op
//! time on the chip (default 0).

use crate::graph::Graph;
use crate::latency::LatencyError;
use crate::package::Package;
use std::sync::Arc;

#[derive(Debug)]
pub struct OpTimes {
    pub graph: Arc<Graph>,
    /// FLOP/s per chip.
    pub compute: Vec<f64>,
    /// Seconds added to every op per chip.
    pub overhead: Vec<f64>,
}

impl OpTimes {
    pub fn new(graph: Arc<Graph>, package: Arc<Package>) -> Result<OpTimes, LatencyError> {
        let mut compute = Vec::with_capacity(package.num_chips());
        let mut overhead = Vec::with_capacity(package.num_chips());
        for (i, chip) in package.chips.iter().enumerate() {
            match package.chip_compute(i as u32) {
                Some(x) if x > 0.0 && x.is_finite() => compute.push(x),
                _ => {
                    return Err(LatencyError {
                        message: format!("chip `{}` (chip {i}) has no positive `compute`", chip.name),
                        help: "the cost model needs `compute = ... TFLOP/s` on every chip".into(),
                    })
                }
            }
            match package.chip_number(i as u32, "overhead") {
                None => overhead.push(0.0),
                Some(x) if x >= 0.0 && x.is_finite() => overhead.push(x),
                Some(_) => {
                    return Err(LatencyError {
                        message: format!("chip `{}` has a negative or infinite `overhead`", chip.name),
                        help: "`overhead` is a time added to every op on the chip, e.g. `overhead = 5 us`".into(),
                    })
                }
            }
        }
        Ok(OpTimes {
            graph,
            compute,
            overhead,
        })
    }

    /// Seconds graph node `node` (index in the node list) takes on `chip`.
    pub fn time(&self, node: usize, chip: u32) -> f64 {
        let c = chip as usize;
        self.graph.nodes[node].flops as f64 / self.compute[c] + self.overhead[c]
    }
}
