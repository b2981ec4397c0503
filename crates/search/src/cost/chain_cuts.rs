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
//! The relaxation lets W's highest chip q_m end the pipeline, its link
//! free. But the descendants D of the chain's last node x_K lie on q_m or
//! above it (`acyclic_flow`), so q_m computes D ∩ U_m and its link carries
//! every tensor leaving U_m, an ideal holding x_K and its ancestors, unless
//! U_m is the whole graph: the cheapest such U_m ([`tail_s`], a minimum cut
//! with node costs) is added to the chip that takes W's last flops. On an
//! encoder-decoder it is what the decoder's upper chip pays to hand its
//! last layer on.
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
use petgraph::algo::dinics;
use petgraph::graph::DiGraph;

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
    let mut chips = Chips {
        compute: &compute,
        bandwidth: &bandwidth,
        weights: None,
        window: 1,
        tail_s: 0.0,
    };
    let name = |u: usize| &graph.placed_node(u as u32).id;
    let chain_is = format!("the chain `{}` -> ... -> `{}`", name(chain[0]), name(chain[m - 1]));
    let mut out = Vec::new();
    let axis = stage_cuts::Axis::new(graph, &chain_flops);
    let plain = axis.as_ref().and_then(|a| a.least(&chips));
    if let Some(latency_s) = plain {
        out.push(Bound {
            kind: BoundKind::StageCuts,
            latency_s,
            because: format!(
                "stage boundaries of {chain_is}: its {m} nodes and those between them on at most {m} chips"
            ),
        });
    }
    if let (Some(axis), Some(plain)) = (&axis, plain) {
        chips.tail_s = tail_s(graph, &flops, chain[m - 1], fastest, widest);
        match axis.least(&chips) {
            Some(latency_s) if chips.tail_s > 0.0 && latency_s > plain => out.push(Bound {
                kind: BoundKind::StageCuts,
                latency_s,
                because: format!(
                    "stage boundaries of {chain_is}: its {m} nodes and those between them on at most {m} chips, \
                     the highest of which computes or sends on what follows `{}`",
                    name(chain[m - 1])
                ),
            }),
            _ => {}
        }
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

/// The least time the chain's highest chip q spends beyond W's flops: the
/// descendants D of the chain's last node `last` lie on q or above
/// (`acyclic_flow`), so with U the nodes on q and below (an ideal holding
/// `last` and its ancestors) q computes D ∩ U, and its link carries every
/// tensor leaving U (each node once, at least its smallest edge), unless U
/// is the whole graph. The cheapest such U is a minimum cut: a node of D
/// taken into U costs its flops on the fastest chip, a node of U with a
/// consumer outside its tensor on the widest link. Costs are rounded down
/// to whole units (a picosecond, or coarser on huge totals), so the cut
/// stays below the true least.
fn tail_s(graph: &Graph, flops: &[f64], last: usize, fastest: f64, widest: f64) -> f64 {
    let n = flops.len();
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut bytes = vec![f64::INFINITY; n];
    for e in graph.placed_edges() {
        let (u, v) = (e.src as usize, e.dst as usize);
        succs[u].push(v);
        preds[v].push(u);
        bytes[u] = bytes[u].min(e.bytes as f64);
    }
    // U holds `last` and its ancestors; D is what descends from `last`.
    let mut forced = vec![false; n];
    let mut stack = vec![last];
    forced[last] = true;
    while let Some(u) = stack.pop() {
        for &w in &preds[u] {
            if !forced[w] {
                forced[w] = true;
                stack.push(w);
            }
        }
    }
    let mut below = vec![false; n];
    let mut stack = vec![last];
    while let Some(u) = stack.pop() {
        for &w in &succs[u] {
            if !below[w] {
                below[w] = true;
                stack.push(w);
            }
        }
    }
    let compute_s: Vec<f64> = (0..n)
        .map(|u| if below[u] { flops[u] / fastest } else { 0.0 })
        .collect();
    let send_s: Vec<f64> = bytes
        .iter()
        .map(|&b| if b.is_finite() { b / widest } else { 0.0 })
        .collect();
    let total_s: f64 = compute_s.iter().chain(&send_s).sum();
    if !total_s.is_finite() || total_s <= 0.0 {
        return 0.0;
    }
    // Whole units of at least a picosecond, at most 2^50 of them in all, so
    // that no capacity or flow overflows.
    let unit = (total_s / (1u64 << 50) as f64).max(1e-12);
    let units = |seconds: f64| (seconds / unit).floor() as u64;
    let compute: Vec<u64> = compute_s.iter().map(|&x| units(x)).collect();
    let send: Vec<u64> = send_s.iter().map(|&x| units(x)).collect();
    let infinite = compute.iter().chain(&send).fold(1u64, |s, &c| s.saturating_add(c));
    let mut net: DiGraph<(), u64> = DiGraph::new();
    let (s, t) = (net.add_node(()), net.add_node(()));
    let id: Vec<_> = (0..n).map(|u| if forced[u] { s } else { net.add_node(()) }).collect();
    for u in 0..n {
        if compute[u] > 0 && !forced[u] {
            net.add_edge(id[u], t, compute[u]);
        }
        if send[u] > 0 && succs[u].iter().any(|&v| !forced[v]) {
            // u pays its tensor unless every consumer is in U too.
            let twin = net.add_node(());
            net.add_edge(id[u], twin, send[u]);
            for &v in succs[u].iter().filter(|&&v| !forced[v]) {
                net.add_edge(twin, id[v], infinite);
            }
        }
        if !forced[u] {
            // U holds the producers of what it holds.
            for &w in preds[u].iter().filter(|&&w| !forced[w]) {
                net.add_edge(id[u], id[w], infinite);
            }
        }
    }
    dinics(&net, s, t).0 as f64 * unit
}

/// The chain (placed nodes, each an edge from the last) whose W has the
/// most flops per node.
fn best_chain(g: &Graph, reach: &Reach, flops: &[f64]) -> Vec<usize> {
    let gains = gains(g, reach, flops);
    let (mut lo, mut hi) = (0.0, flops.iter().sum::<f64>());
    for _ in 0..STEPS {
        let mid = 0.5 * (lo + hi);
        let (chain, w) = longest(reach, flops, &gains, mid);
        if w > mid * chain.len() as f64 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    longest(reach, flops, &gains, lo).0
}

/// The chain whose W has the most flops, of those the fewest nodes (each
/// node a billionth of the average node's flops lighter): the fewer its
/// nodes, the larger the spans its ends confine.
pub(super) fn heaviest_chain(g: &Graph, reach: &Reach, flops: &[f64]) -> Vec<usize> {
    let per_node = flops.iter().sum::<f64>() / flops.len().max(1) as f64 * 1e-9;
    longest(reach, flops, &gains(g, reach, flops), per_node).0
}

/// Per node, its producers with what the edge adds to W: the nodes
/// strictly between and the node itself.
fn gains(g: &Graph, reach: &Reach, flops: &[f64]) -> Vec<Vec<(usize, f64)>> {
    let mut preds: Vec<Vec<(usize, f64)>> = vec![Vec::new(); flops.len()];
    for e in g.placed_edges() {
        let (u, v) = (e.src as usize, e.dst as usize);
        preds[v].push((u, reach.between(u, v, flops).0 + flops[v]));
    }
    preds
}

/// The chain with the heaviest Σ (gain − λ) and its W's flops.
fn longest(reach: &Reach, flops: &[f64], preds: &[Vec<(usize, f64)>], lambda: f64) -> (Vec<usize>, f64) {
    let n = flops.len();
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
}
