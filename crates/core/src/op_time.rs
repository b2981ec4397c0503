//! The time of one op on one chip, shared by every cost model:
//! `flops / compute + overhead`, where `overhead` is an optional per-op
//! time on the chip (default 0). When the graph gives the node a measured
//! time for the chip's `kind` (the graph format's `times`), that time
//! replaces `flops / compute`.

use crate::graph::Graph;
use crate::latency::LatencyError;
use crate::package::Package;
use std::sync::Arc;

/// No measured column: the chip has no kind, or no node was measured on it.
const NO_KIND: u32 = u32::MAX;

/// The graph's measured times laid out for one package: a dense table of
/// rows (nodes, in an order the cost model chooses) by the kinds that some
/// chip of the package has, NaN where a node was not measured on a kind.
/// Empty when no chip's kind was measured, so that the unprofiled path
/// only tests [`Measured::is_empty`] once.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// Per chip, its column, or [`NO_KIND`].
    chip_kind: Vec<u32>,
    columns: usize,
    table: Vec<f64>,
}

impl Measured {
    /// The table for `rows` (node indices of `graph`) on `package`.
    pub fn new(graph: &Graph, package: &Package, rows: &[usize]) -> Measured {
        let profile = graph.profile();
        let mut chip_kind = vec![NO_KIND; package.num_chips()];
        // Graph kind index -> column, for the kinds some chip has.
        let mut column: Vec<u32> = vec![NO_KIND; profile.kinds().len()];
        let mut columns = 0;
        for (c, slot) in chip_kind.iter_mut().enumerate() {
            let Some(k) = package.chip_kind(c as u32).and_then(|k| profile.kind_index(k)) else {
                continue;
            };
            if column[k as usize] == NO_KIND {
                column[k as usize] = columns;
                columns += 1;
            }
            *slot = column[k as usize];
        }
        if columns == 0 {
            return Measured::default();
        }
        let columns = columns as usize;
        let mut table = vec![f64::NAN; rows.len() * columns];
        for (r, &node) in rows.iter().enumerate() {
            for &(k, t) in profile.times(node) {
                if column[k as usize] != NO_KIND {
                    table[r * columns + column[k as usize] as usize] = t;
                }
            }
        }
        Measured {
            chip_kind,
            columns,
            table,
        }
    }

    /// No chip's kind has a measured time: every op costs flops / compute.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The measured seconds of row `row` on `chip`, if any.
    #[inline]
    pub fn get(&self, row: usize, chip: u32) -> Option<f64> {
        let k = *self.chip_kind.get(chip as usize)?;
        if k == NO_KIND {
            return None;
        }
        let t = self.table[row * self.columns + k as usize];
        (!t.is_nan()).then_some(t)
    }

    /// The column of `chip`'s kind, `None` when no node was measured on it.
    pub fn column(&self, chip: u32) -> Option<u32> {
        self.chip_kind.get(chip as usize).copied().filter(|&k| k != NO_KIND)
    }
}

#[derive(Debug)]
pub struct OpTimes {
    pub graph: Arc<Graph>,
    /// FLOP/s per chip.
    pub compute: Vec<f64>,
    /// Seconds added to every op per chip.
    pub overhead: Vec<f64>,
    /// Measured times by graph node index.
    pub measured: Measured,
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
        let measured = Measured::new(&graph, &package, &(0..graph.nodes.len()).collect::<Vec<_>>());
        Ok(OpTimes {
            graph,
            compute,
            overhead,
            measured,
        })
    }

    /// Seconds graph node `node` (index in the node list) takes on `chip`:
    /// its measured time on the chip's kind, else flops / compute, plus the
    /// chip's overhead.
    #[inline]
    pub fn time(&self, node: usize, chip: u32) -> f64 {
        let c = chip as usize;
        let run = match self.measured.get(node, chip) {
            Some(t) => t,
            None => self.graph.nodes[node].flops as f64 / self.compute[c],
        };
        run + self.overhead[c]
    }

    /// Whether node `node` has a measured time on `chip`'s kind.
    pub fn is_measured(&self, node: usize, chip: u32) -> bool {
        self.measured.get(node, chip).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::parse_graph_json;
    use crate::package::Chip;
    use crate::quantity::{Dim, Scalar};
    use std::collections::BTreeMap;

    fn chip(name: &str, compute: f64, kind: Option<&str>, overhead: f64) -> Chip {
        let mut attrs = BTreeMap::new();
        attrs.insert("compute".into(), Scalar::Num(compute, Dim::FLOP_RATE));
        attrs.insert("overhead".into(), Scalar::Num(overhead, Dim::TIME));
        if let Some(k) = kind {
            attrs.insert("kind".into(), Scalar::Str(k.into()));
        }
        Chip {
            name: name.into(),
            attrs,
        }
    }

    /// A measured time replaces flops / compute on chips of its kind only;
    /// the overhead is added either way.
    #[test]
    fn a_measured_time_counts_on_its_kind_only() {
        let g = parse_graph_json(
            r#"{"nodes": [
                {"id": "a", "flops": 100, "times": {"gpu": 0.5, "tpu": 9.0}},
                {"id": "b", "flops": 300},
                {"id": "c", "flops": 40, "times": {"cpu": 2.0}}],
               "edges": [{"from": "a", "to": "b"}]}"#,
        )
        .unwrap();
        let p = Package::new(
            "p",
            vec![
                chip("g", 10.0, Some("gpu"), 1.0),
                chip("c", 20.0, Some("cpu"), 0.0),
                chip("x", 50.0, None, 0.25),
                chip("e", 4.0, Some(""), 0.0),
            ],
            vec![],
        )
        .unwrap();
        let t = OpTimes::new(Arc::new(g), Arc::new(p)).unwrap();
        let all: Vec<Vec<f64>> = (0..3).map(|n| (0..4).map(|c| t.time(n, c)).collect()).collect();
        assert_eq!(
            all,
            [
                [0.5 + 1.0, 100.0 / 20.0, 100.0 / 50.0 + 0.25, 100.0 / 4.0],
                [300.0 / 10.0 + 1.0, 300.0 / 20.0, 300.0 / 50.0 + 0.25, 300.0 / 4.0],
                [40.0 / 10.0 + 1.0, 2.0, 40.0 / 50.0 + 0.25, 40.0 / 4.0],
            ]
        );
        assert!(t.is_measured(0, 0) && !t.is_measured(0, 1) && t.is_measured(2, 1) && !t.is_measured(1, 0));
    }

    /// The step-time model runs ops for their measured times: a chain
    /// x -> y on two chips of kind `gpu` (overhead 1 s on the first), x
    /// measured 0.5 s, y unmeasured (300 FLOP at 10 FLOP/s), one 40-byte
    /// transfer at 20 B/s between them.
    #[test]
    fn the_step_time_model_runs_ops_for_their_measured_times() {
        let g = parse_graph_json(
            r#"{"nodes": [
                {"id": "x", "flops": 100, "output_bytes": 40, "times": {"gpu": 0.5}},
                {"id": "y", "flops": 300, "times": {"cpu": 9.0}}],
               "edges": [{"from": "x", "to": "y"}]}"#,
        )
        .unwrap();
        let mut attrs = BTreeMap::new();
        attrs.insert("bandwidth".into(), Scalar::Num(20.0, Dim::RATE));
        let link = crate::package::Link { src: 0, dst: 1, attrs };
        let chips = vec![chip("a", 10.0, Some("gpu"), 1.0), chip("b", 10.0, Some("gpu"), 0.0)];
        let p = Package::new("p", chips, vec![link]).unwrap();
        let m = crate::step_time::StepTimeModel::new(Arc::new(g), Arc::new(p)).unwrap();
        assert_eq!(m.step_time(&[0, 1]).unwrap(), 0.5 + 1.0 + 40.0 / 20.0 + 300.0 / 10.0);
        assert_eq!(m.step_time(&[0, 0]).unwrap(), 0.5 + 1.0 + 300.0 / 10.0 + 1.0);
    }

    /// A package whose kinds no node was measured on costs by flops alone.
    #[test]
    fn no_measured_kind_is_an_empty_table() {
        let g = parse_graph_json(r#"{"nodes": [{"id": "a", "flops": 8, "times": {"gpu": 0.5}}]}"#).unwrap();
        let p = Package::new("p", vec![chip("c", 2.0, Some("cpu"), 0.0)], vec![]).unwrap();
        let t = OpTimes::new(Arc::new(g), Arc::new(p)).unwrap();
        assert!(t.measured.is_empty());
        assert_eq!(t.time(0, 0), 4.0);
    }
}
