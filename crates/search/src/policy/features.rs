//! Inputs of the policy network, computed once per (graph, package) pair.
//!
//! Every feature is scaled to be O(1) by a fixed constant (not by statistics
//! of one graph) so that a checkpoint sees the same units on every graph.
//! Chip features are relative (normalised id, compute against the package
//! mean) so that one network serves any chip count.

use super::PolicyError;
use candle_core::{DType, Device, Tensor};
use mcm_core::graph::Graph;
use mcm_core::package::Package;

/// Version of the feature layout; checkpoints record it and refuse others.
pub const FEATURE_SCHEMA: u32 = 4;
/// Numeric features per decision node (besides the operator bucket).
pub const NODE_FEATURES: usize = 10;
/// Features per chip.
pub const CHIP_FEATURES: usize = 6;

/// What the columns of the numeric node features are, in order (the
/// scaling of each is in [`GraphFeatures::new`]).
pub const NODE_FEATURE_NAMES: [&str; NODE_FEATURES] = [
    "log_flops",
    "log_params",
    "log_output_bytes",
    "log_in_degree",
    "log_out_degree",
    "depth",
    "flops_share",
    "params_share",
    "flops_before",
    "params_before",
];
/// What the columns of the chip features are, in order.
pub const CHIP_FEATURE_NAMES: [&str; CHIP_FEATURES] = [
    "id",
    "log_memory",
    "log_relative_compute",
    "memory_over_weights",
    "log_chips",
    "log_nodes_per_chip",
];

/// `ln(1 + flops)` of the largest operators is about 25-30.
const FLOPS_SCALE: f64 = 30.0;
/// `ln(1 + bytes)` of a few GiB is about 22.
const BYTES_SCALE: f64 = 25.0;
const DEGREE_SCALE: f64 = 3.0;
/// Shares relative to the mean node (`ln(1 + N * x / total)`).
const SHARE_SCALE: f64 = 5.0;
/// Chip counts up to about 64 map to [0, 1].
const CHIPS_SCALE: f64 = 4.16; // ln(64)
const NODES_PER_CHIP_SCALE: f64 = 7.0;
/// The memory-to-weights ratio is clipped here: past it, memory is no constraint.
const MEMORY_RATIO_CAP: f64 = 4.0;

/// The operator bucket of `op`: FNV-1a of the name modulo `buckets`.
pub fn op_bucket(op: &str, buckets: usize) -> u32 {
    let h = mcm_core::digest::Fnv1a::new().update(op.as_bytes()).value();
    (h % buckets.max(1) as u64) as u32
}

/// The tensors the network reads, on one device in one dtype.
#[derive(Clone, Debug)]
pub struct GraphFeatures {
    /// Decision nodes (N).
    pub num_nodes: usize,
    /// Chips (C).
    pub num_chips: usize,
    /// Longest-path depth of each decision node over the maximum, in [0, 1].
    pub depth: Vec<f32>,
    /// Buckets the operator indices were hashed into.
    pub op_buckets: usize,
    /// Operator bucket per node, u32 [N].
    pub(crate) ops: Tensor,
    /// Numeric node features [N, NODE_FEATURES].
    pub(crate) nodes: Tensor,
    /// Chip features [C, CHIP_FEATURES].
    pub(crate) chips: Tensor,
    /// Normalised chip id per chip [C, 1], what a node is told of its previous chip.
    pub(crate) chip_ids: Tensor,
    /// Per node and chip, how far the node's place in the pipeline (the
    /// share of all flops up to its middle) lies past the chip's middle, in
    /// chips [N, C]: chips take consecutive spans of the pipeline in id
    /// order, each as wide as its share of the compute. A pairwise feature
    /// the policy head weighs per node: scoring embeddings alone, it has to
    /// learn "node at 40% of the graph -> chip 14 of 36" for every chip count.
    pub(crate) pipeline: Tensor,
    /// Its square.
    pub(crate) pipeline_sq: Tensor,
    /// Chip ids 0..C as reals [1, C], to measure distances from a node's previous chip.
    pub(crate) chip_index: Tensor,
    /// Placed edges src -> dst as u32 [E]; `None` when the graph has no edges.
    pub(crate) edges: Option<(Tensor, Tensor)>,
    /// 1 / max(1, in-degree) and 1 / max(1, out-degree), [N, 1].
    pub(crate) inv_in: Tensor,
    pub(crate) inv_out: Tensor,
    /// What [`GraphFeatures::anchor_terms`] reads: each node's share of all
    /// flops, each chip's share of all compute, placed edges as lists, and
    /// which nodes are weights used by one node alone (they move with it).
    flops_share: Vec<f64>,
    rate_share: Vec<f64>,
    inputs: Vec<Vec<u32>>,
    outputs: Vec<Vec<u32>>,
    travels: Vec<bool>,
}

fn usable(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite() && *v > 0.0)
}

impl GraphFeatures {
    /// Computes the features of `graph` on `package`.
    pub fn new(
        graph: &Graph,
        package: &Package,
        op_buckets: usize,
        device: &Device,
        dtype: DType,
    ) -> Result<GraphFeatures, PolicyError> {
        let n = graph.num_placed();
        let c = package.num_chips();
        if n == 0 {
            return Err(PolicyError::Input(format!(
                "graph `{}` has no nodes to place",
                graph.name
            )));
        }
        if c == 0 {
            return Err(PolicyError::Input(format!("package `{}` has no chips", package.name)));
        }
        let edges = graph.placed_edges();
        let mut indeg = vec![0u32; n];
        let mut outdeg = vec![0u32; n];
        let mut inputs: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut outputs: Vec<Vec<u32>> = vec![Vec::new(); n];
        for e in edges {
            outdeg[e.src as usize] += 1;
            indeg[e.dst as usize] += 1;
            inputs[e.dst as usize].push(e.src);
            outputs[e.src as usize].push(e.dst);
        }
        let depth = depths(graph);
        // Where a node sits in the pipeline: the shares of all flops and of
        // all weights before it in the pipeline order (weights right before
        // their first consumer), the position a pipeline cut reads.
        let mut prefix = vec![(0.0f64, 0.0f64); n];
        {
            let (tf, tp) = (
                graph
                    .placed_nodes()
                    .iter()
                    .map(|&i| graph.nodes[i].flops as f64)
                    .sum::<f64>(),
                graph
                    .placed_nodes()
                    .iter()
                    .map(|&i| graph.nodes[i].params as f64)
                    .sum::<f64>(),
            );
            let (mut f, mut p) = (0.0, 0.0);
            for d in graph.pipeline_order() {
                let node = graph.placed_node(d);
                prefix[d as usize] = (if tf > 0.0 { f / tf } else { 0.0 }, if tp > 0.0 { p / tp } else { 0.0 });
                f += node.flops as f64;
                p += node.params as f64;
            }
        }
        let total_flops = graph
            .placed_nodes()
            .iter()
            .map(|&i| graph.nodes[i].flops as f64)
            .sum::<f64>();
        let total_params = graph.total_params() as f64;
        let share = |x: f64, total: f64| {
            if total > 0.0 {
                (n as f64 * x / total).ln_1p() / SHARE_SCALE
            } else {
                0.0
            }
        };
        let mut ops = Vec::with_capacity(n);
        let mut feats = Vec::with_capacity(n * NODE_FEATURES);
        for d in 0..n {
            let node = graph.placed_node(d as u32);
            ops.push(op_bucket(&node.op, op_buckets));
            feats.extend_from_slice(&[
                (node.flops as f64).ln_1p() / FLOPS_SCALE,
                (node.params as f64).ln_1p() / BYTES_SCALE,
                (node.output_bytes as f64).ln_1p() / BYTES_SCALE,
                (indeg[d] as f64).ln_1p() / DEGREE_SCALE,
                (outdeg[d] as f64).ln_1p() / DEGREE_SCALE,
                depth[d] as f64,
                share(node.flops as f64, total_flops),
                share(node.params as f64, total_params),
                prefix[d].0,
                prefix[d].1,
            ]);
        }
        let memory: Vec<Option<f64>> = (0..c as u32).map(|i| usable(package.chip_memory(i))).collect();
        let compute: Vec<Option<f64>> = (0..c as u32).map(|i| usable(package.chip_compute(i))).collect();
        let known: Vec<f64> = compute.iter().flatten().copied().collect();
        let mean_compute = if known.is_empty() {
            1.0
        } else {
            known.iter().sum::<f64>() / known.len() as f64
        };
        let mut chips = Vec::with_capacity(c * CHIP_FEATURES);
        let mut chip_ids = Vec::with_capacity(c);
        for i in 0..c {
            let id = if c > 1 { i as f64 / (c - 1) as f64 } else { 0.0 };
            let mem = memory[i].unwrap_or(0.0);
            let ratio = if total_params > 0.0 {
                (mem * c as f64 / total_params).min(MEMORY_RATIO_CAP)
            } else {
                MEMORY_RATIO_CAP
            };
            chip_ids.push(id);
            chips.extend_from_slice(&[
                id,
                mem.ln_1p() / BYTES_SCALE,
                compute[i].map_or(0.0, |v| (v / mean_compute).ln()),
                ratio / MEMORY_RATIO_CAP,
                (c as f64).ln() / CHIPS_SCALE,
                (n as f64 / c as f64).ln_1p() / NODES_PER_CHIP_SCALE,
            ]);
        }
        let rates: Vec<f64> = compute.iter().map(|r| r.unwrap_or(mean_compute)).collect();
        let total_rate: f64 = rates.iter().sum();
        let mut middles = Vec::with_capacity(c);
        let mut start = 0.0;
        for r in &rates {
            middles.push(start + 0.5 * r / total_rate);
            start += r / total_rate;
        }
        let flops_share: Vec<f64> = (0..n)
            .map(|d| {
                if total_flops > 0.0 {
                    graph.placed_node(d as u32).flops as f64 / total_flops
                } else {
                    0.0
                }
            })
            .collect();
        let mut pipeline = Vec::with_capacity(n * c);
        for (&(before, _), own) in prefix.iter().zip(&flops_share) {
            let at = before + 0.5 * own;
            pipeline.extend(middles.iter().map(|m| (at - m) * c as f64));
        }
        let inv = |deg: &[u32]| -> Vec<f64> { deg.iter().map(|&k| 1.0 / k.max(1) as f64).collect() };
        let edge_tensors = if edges.is_empty() {
            None
        } else {
            let src: Vec<u32> = edges.iter().map(|e| e.src).collect();
            let dst: Vec<u32> = edges.iter().map(|e| e.dst).collect();
            let e = src.len();
            Some((Tensor::from_vec(src, e, device)?, Tensor::from_vec(dst, e, device)?))
        };
        let real = |v: Vec<f64>, shape: (usize, usize)| -> Result<Tensor, PolicyError> {
            Ok(Tensor::from_vec(v, shape, device)?.to_dtype(dtype)?)
        };
        Ok(GraphFeatures {
            num_nodes: n,
            num_chips: c,
            depth,
            op_buckets,
            ops: Tensor::from_vec(ops, n, device)?,
            nodes: real(feats, (n, NODE_FEATURES))?,
            chips: real(chips, (c, CHIP_FEATURES))?,
            chip_ids: real(chip_ids, (c, 1))?,
            pipeline_sq: real(pipeline.iter().map(|d| d * d).collect(), (n, c))?,
            pipeline: real(pipeline, (n, c))?,
            chip_index: real((0..c).map(|i| i as f64).collect(), (1, c))?,
            edges: edge_tensors,
            inv_in: real(inv(&indeg), (n, 1))?,
            inv_out: real(inv(&outdeg), (n, 1))?,
            flops_share,
            rate_share: rates.iter().map(|r| r / total_rate).collect(),
            travels: graph.weight_users().iter().map(Option::is_some).collect(),
            inputs,
            outputs,
        })
    }

    /// Two [N, C] terms of a placement `anchor` (the one the policy refines):
    /// `slide` is 1 on the neighbouring chip a node can move to without
    /// turning the chip flow back (up one when all its consumers are past
    /// its chip, down one when all its inputs are before it, a weight used by
    /// it alone moving along), 0 elsewhere; `relief` is `slide` times how
    /// much lighter in compute time that chip is than the node's own, over
    /// the slowest chip's (a weight shares its consumer's, and one left on a
    /// chip before its consumer has none: it carries no compute). These are
    /// the moves that balance a pipeline (the anneal strategy's slides and
    /// reliefs), which per-node scores cannot see: they depend on the whole
    /// placement.
    pub(crate) fn anchor_terms(&self, anchor: &[u32]) -> Result<(Tensor, Tensor), PolicyError> {
        let (n, c) = (self.num_nodes, self.num_chips);
        let (slide, relief) = self.slides(anchor)?;
        let device = self.chip_index.device();
        let dtype = self.chip_index.dtype();
        Ok((
            Tensor::from_vec(slide, (n, c), device)?.to_dtype(dtype)?,
            Tensor::from_vec(relief, (n, c), device)?.to_dtype(dtype)?,
        ))
    }

    /// The numeric node features as a row-major [N * NODE_FEATURES]
    /// vector, and each node's operator bucket: the policy's inputs for
    /// callers outside candle (the Python package's GNN features).
    pub fn node_table(&self) -> Result<(Vec<f32>, Vec<u32>), PolicyError> {
        Ok((
            self.nodes.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?,
            self.ops.to_vec1::<u32>()?,
        ))
    }

    /// The chip features as a row-major [C * CHIP_FEATURES] vector.
    pub fn chip_table(&self) -> Result<Vec<f32>, PolicyError> {
        Ok(self.chips.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?)
    }

    /// [`GraphFeatures::anchor_terms`] as row-major [N * C] vectors.
    fn slides(&self, anchor: &[u32]) -> Result<(Vec<f64>, Vec<f64>), PolicyError> {
        let (n, c) = (self.num_nodes, self.num_chips);
        if anchor.len() != n || anchor.iter().any(|&a| a as usize >= c) {
            return Err(PolicyError::Input(format!(
                "the anchor placement must give one chip below {c} for each of the {n} nodes"
            )));
        }
        let mut load = vec![0.0f64; c];
        for (u, &a) in anchor.iter().enumerate() {
            load[a as usize] += self.flops_share[u];
        }
        for (l, r) in load.iter_mut().zip(&self.rate_share) {
            *l /= r.max(f64::MIN_POSITIVE);
        }
        let max = load.iter().copied().fold(0.0, f64::max);
        if max > 0.0 {
            load.iter_mut().for_each(|l| *l /= max);
        }
        let mut slide = vec![0.0f64; n * c];
        let mut relief = vec![0.0f64; n * c];
        for u in 0..n {
            if self.travels[u] {
                continue;
            }
            let a = anchor[u] as usize;
            let up = a + 1 < c && self.outputs[u].iter().all(|&v| anchor[v as usize] as usize > a);
            let down = a > 0
                && self.inputs[u].iter().all(|&w| {
                    let at = anchor[w as usize] as usize;
                    at < a || (at == a && self.travels[w as usize])
                });
            for (ok, to) in [(up, a + 1), (down, a.wrapping_sub(1))] {
                if ok {
                    slide[u * c + to] = 1.0;
                    relief[u * c + to] = load[a] - load[to];
                }
            }
        }
        // A weight on its consumer's chip moves as the consumer does; one
        // left before it may move up towards it.
        for u in (0..n).filter(|&u| self.travels[u]) {
            let (a, v) = (anchor[u] as usize, self.outputs[u][0] as usize);
            if anchor[v] as usize == a {
                for to in [a.wrapping_sub(1), a + 1].into_iter().filter(|&t| t < c) {
                    slide[u * c + to] = slide[v * c + to];
                    relief[u * c + to] = relief[v * c + to];
                }
            } else if a + 1 < c && anchor[v] as usize > a {
                slide[u * c + a + 1] = 1.0;
            }
        }
        Ok((slide, relief))
    }

    /// What a one-step refinement of `anchor` towards `better` keeps: the
    /// chip of `better` for each node whose move there is a slide from
    /// `anchor` (see [`GraphFeatures::anchor_terms`]), the anchor's chip for
    /// every other node. What the imitation of a demonstration teaches: the
    /// moves the policy can see, not the ones only later slides made possible.
    pub fn slide_target(&self, anchor: &[u32], better: &[u32]) -> Result<Vec<u32>, PolicyError> {
        if better.len() != anchor.len() {
            return Err(PolicyError::Input(format!(
                "a demonstration of {} chips for a graph of {} nodes",
                better.len(),
                anchor.len()
            )));
        }
        let c = self.num_chips;
        let (slide, _) = self.slides(anchor)?;
        Ok(anchor
            .iter()
            .zip(better)
            .enumerate()
            .map(|(u, (&a, &b))| {
                if (b as usize) < c && slide[u * c + b as usize] > 0.0 {
                    b
                } else {
                    a
                }
            })
            .collect())
    }
}

/// Longest-path depth of each decision node over placed edges, divided by
/// the largest depth (0 everywhere for a graph without placed edges).
fn depths(graph: &Graph) -> Vec<f32> {
    let n = graph.num_placed();
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for e in graph.placed_edges() {
        preds[e.dst as usize].push(e.src);
    }
    let mut depth = vec![0u32; n];
    // The graph's topological order restricted to decisions orders placed edges too.
    for &node in graph.topological_order() {
        if let Some(d) = graph.decision_of(node) {
            let d = d as usize;
            depth[d] = preds[d].iter().map(|&p| depth[p as usize] + 1).max().unwrap_or(0);
        }
    }
    let max = depth.iter().copied().max().unwrap_or(0).max(1) as f32;
    depth.iter().map(|&x| x as f32 / max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_buckets_are_stable_and_in_range() {
        // Pinned: a trained checkpoint's embedding rows mean these buckets
        // (FNV-1a 64 of the name, modulo the bucket count).
        assert_eq!(op_bucket("linear", 64), 32);
        assert_eq!(op_bucket("conv2d", 64), 17);
        assert_eq!(op_bucket("linear", 1 << 16), 28256);
        let used: std::collections::BTreeSet<u32> = (0..1000).map(|i| op_bucket(&format!("op{i}"), 64)).collect();
        assert!(used.iter().all(|&b| b < 64) && used.len() == 64, "{used:?}");
        assert_eq!(op_bucket("anything", 1), 0);
    }
}
