//! The stage-cut bound of a chain of confined spans.
//!
//! Under `acyclic_flow` and `triangle_dependency` the nodes between an
//! edge's ends lie on the ends' two chips (the edge-span bound's theorem,
//! [`super::bounds`]). Along a chain of edges x_0 -> x_1 -> … -> x_K (a
//! transformer's residual adds, a dense block's input and its last concat)
//! every node of W = {x_0} ∪ ⋃_k (between(x_{k−1}, x_k) ∪ {x_k}) therefore
//! lies on one of the chips of x_0, …, x_K: W's flops are computed on at
//! most K + 1 chips. On a line of chips, with q_0 < … < q_m those chips and
//! U_j the nodes on chips ≤ q_j, chip q_j computes W's flops in U_j ∖ U_{j−1}
//! and its link carries every tensor leaving U_j: the stage-cut relaxation
//! ([`super::stage_cuts`]) of the graph with only W's flops, on K + 1 chips
//! each as fast as the fastest chip and linked as the widest link, is below
//! every valid partition. The other nodes keep their tensors (a shared
//! weight that several stages read crosses each boundary between them).
//!
//! The chain is the one whose W carries the most flops per chip (a
//! parametric longest path: Σ (gain − λ) over paths, λ bisected).
//!
//! Under `memory_capacity` W's chips also hold only so much of the weights
//! W reads: a weight W reads that sits below its consumer's chip q crosses
//! the link q−1 -> q (on a line, every route up passes it), and W's at most
//! m chips have at most m such links, each at most T of some chip's stage.
//! So m·T·(the widest link) is at least the bytes of the weights W's chips
//! cannot hold ([`streamed`]): an encoder-decoder's decoder, confined to
//! two chips, streams what two chips' memory cannot hold.

use super::bounds::{Bound, BoundKind, Reach};
use super::stage_cuts::{self, Chips, Line};
use mcm_core::graph::Graph;
use mcm_core::latency::LatencyModel;

/// Bisection steps on the flops per chip of the chain.
const STEPS: usize = 60;

/// The bounds, when `confined` (`acyclic_flow` and `triangle_dependency`
/// required) on a line of chips, for the chain with the most flops per chip
/// when it has fewer nodes than the package has chips: the stage-cut
/// relaxation of W, and, under `memory` (`memory_capacity` required), the
/// weights W reads beyond what its chips hold ([`streamed`]) over its at
/// most m links in. Empty otherwise.
pub(super) fn bound(graph: &Graph, model: &LatencyModel, confined: bool, memory: bool) -> Vec<Bound> {
    let n = graph.num_placed();
    if !confined || !(2..=stage_cuts::MAX_NODES).contains(&n) {
        return Vec::new();
    }
    let Some(line) = Line::of(model) else {
        return Vec::new();
    };
    let flops: Vec<f64> = (0..n as u32).map(|u| graph.placed_node(u).flops as f64).collect();
    let reach = Reach::new(graph);
    let chain = best_chain(graph, &reach, &flops);
    let m = chain.len();
    if m >= line.compute.len() {
        return Vec::new();
    }
    let mut in_w = vec![false; n];
    in_w[chain[0]] = true;
    for w in chain.windows(2) {
        reach.mark_between(w[0], w[1], &mut in_w);
        in_w[w[1]] = true;
    }
    let chain_flops: Vec<f64> = (0..n).map(|u| if in_w[u] { flops[u] } else { 0.0 }).collect();
    let fastest = line.compute.iter().copied().fold(0.0, f64::max);
    let widest = line.bandwidth.iter().copied().fold(0.0, f64::max);
    let (compute, bandwidth) = (vec![fastest; m], vec![widest; m - 1]);
    let chips = Chips {
        compute: &compute,
        bandwidth: &bandwidth,
        weights: None,
        window: 1,
    };
    let name = |u: usize| &graph.placed_node(u as u32).id;
    let chain_is = format!("the chain `{}` -> ... -> `{}`", name(chain[0]), name(chain[m - 1]));
    let mut out = Vec::new();
    if let Some(latency_s) = stage_cuts::relax(graph, &chain_flops, &chips) {
        out.push(Bound {
            kind: BoundKind::StageCuts,
            latency_s,
            because: format!(
                "stage boundaries of {chain_is}: its {m} nodes and those between them on at most {m} chips"
            ),
        });
    }
    if memory {
        let roomiest = (0..line.compute.len() as u32)
            .map(|d| model.package.memory_or_unlimited(d))
            .fold(0.0, f64::max);
        let latency_s = streamed(graph, &in_w, m as f64 * roomiest) / (m as f64 * widest);
        if latency_s > 0.0 {
            out.push(Bound {
                kind: BoundKind::StageCuts,
                latency_s,
                because: format!(
                    "weights streamed into {chain_is}: its {m} nodes and those between them on at most {m} chips, whose memory holds only part of the weights they read"
                ),
            });
        }
    }
    out
}

/// The least bytes of weights that the links into `in_w`'s chips carry, a
/// set on chips of `capacity` bytes of memory together, on a line under
/// `acyclic_flow`: a placed node with params outside the set that an edge
/// reads into it sits on one of those chips, or below the consumer's chip
/// q, and then its output (at least the smallest of its edges into the
/// set) crosses the link q−1 -> q, one of the set's at most m links in
/// (the caller divides by m times the widest). Which weights fit is a
/// knapsack; its fractional relaxation (the largest bytes per param kept
/// first) is below every choice. The set's own params take room first.
fn streamed(graph: &Graph, in_w: &[bool], capacity: f64) -> f64 {
    let n = in_w.len();
    let mut sent = vec![f64::INFINITY; n];
    for e in graph.placed_edges() {
        let (u, v) = (e.src as usize, e.dst as usize);
        if in_w[v] && !in_w[u] {
            sent[u] = sent[u].min(e.bytes as f64);
        }
    }
    let params = |u: usize| graph.placed_node(u as u32).params as f64;
    let mut room = capacity - (0..n).filter(|&u| in_w[u]).map(params).sum::<f64>();
    let mut read: Vec<(f64, f64)> = (0..n)
        .filter(|&u| sent[u].is_finite() && sent[u] > 0.0 && params(u) > 0.0)
        .map(|u| (sent[u], params(u)))
        .collect();
    read.sort_by(|a, b| (b.0 / b.1).total_cmp(&(a.0 / a.1)));
    let mut streamed = 0.0;
    for (bytes, p) in read {
        let kept = room.clamp(0.0, p);
        room -= kept;
        streamed += bytes * (p - kept) / p;
    }
    streamed
}

/// The chain (placed nodes, each an edge from the last) whose W has the
/// most flops per node.
fn best_chain(g: &Graph, reach: &Reach, flops: &[f64]) -> Vec<usize> {
    let n = flops.len();
    // Per node, its producers with what the edge adds to W: the nodes
    // strictly between and the node itself.
    let mut preds: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for e in g.placed_edges() {
        let (u, v) = (e.src as usize, e.dst as usize);
        preds[v].push((u, reach.between(u, v, flops).0 + flops[v]));
    }
    // The heaviest Σ (gain − λ) over chains: the chain and its W.
    let longest = |lambda: f64| -> (Vec<usize>, f64) {
        let mut value = vec![0.0; n];
        let mut from = vec![usize::MAX; n];
        for &v in &reach.order {
            value[v] = flops[v] - lambda;
            for &(u, gain) in &preds[v] {
                let through = value[u] + gain - lambda;
                if through > value[v] {
                    value[v] = through;
                    from[v] = u;
                }
            }
        }
        let end = (0..n).fold(0, |b, v| if value[v] > value[b] { v } else { b });
        let mut chain = vec![end];
        while from[*chain.last().unwrap()] != usize::MAX {
            chain.push(from[*chain.last().unwrap()]);
        }
        chain.reverse();
        let w = flops[chain[0]]
            + chain
                .windows(2)
                .map(|p| preds[p[1]].iter().find(|&&(u, _)| u == p[0]).map_or(0.0, |&(_, g)| g))
                .sum::<f64>();
        (chain, w)
    };
    let (mut lo, mut hi) = (0.0, flops.iter().sum::<f64>());
    for _ in 0..STEPS {
        let mid = 0.5 * (lo + hi);
        let (chain, w) = longest(mid);
        if w > mid * chain.len() as f64 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    longest(lo).0
}
