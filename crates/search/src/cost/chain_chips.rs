//! The chips a chain of confined spans needs.
//!
//! Under `acyclic_flow` and `triangle_dependency` the nodes S_k strictly
//! between the ends of an edge x_{k−1} -> x_k lie on the ends' chips (the
//! edge-span theorem, [`super::bounds`]). Along a chain x_0 -> … -> x_K the
//! chips q_k = chip(x_k) never go down, so each chip the chain uses holds a
//! run of its nodes x_i..x_j, the spans between them whole, the upper part
//! of S_i (the rest on x_{i−1}'s chip) and a lower part L of S_{j+1}. With
//! x_j, L is an ideal of the span's subgraph {x_j} ∪ S_{j+1} ∪ {x_{j+1}}
//! without x_{j+1}, and every tensor of it that the rest of the subgraph
//! reads lies on a higher chip: it crosses the chip's link out (on a line,
//! the link to the next chip; each node's tensor once, at least its
//! smallest edge there). So each such chip but the last spends at least
//!
//!   (the flops it holds) / (the fastest chip) + cut(L) / (the widest link),
//!
//! a chip holds no node of a span without one of its ends, and the chain
//! uses at most as many chips as the package has. For a latency T, the
//! fewest chips that hold the chain within T each (a search over where
//! each chip ends, keeping per span the largest lower part per count of
//! chips) is more than the package has only when T is below every valid
//! partition, and T is bisected. Each span's cheapest cut per flops of L
//! comes from the stage-cut axis ([`super::stage_cuts`]) of its subgraph.
//!
//! It is what a transformer's layers cost when every feed-forward block
//! split over two chips sends its wide hidden tensor: the chain through
//! every residual add needs as many chips as the layers' heaviest blocks
//! allow, which the package may not have.

use super::bounds::{Bound, BoundKind, Reach};
use super::chain_cuts::{self, Chains};
use super::stage_cuts::{Axis, Line};
use mcm_core::graph::{Graph, PlacedEdge};
use mcm_core::latency::LatencyModel;

/// Bisection steps on T.
const STEPS: usize = 50;

/// The bound on a graph's [`Chains`] (`acyclic_flow` and
/// `triangle_dependency` required) on a line of chips, for the chain whose W
/// has the most flops; `None` otherwise.
pub(super) fn bound(graph: &Graph, model: &LatencyModel, chains: &Chains) -> Option<Bound> {
    let line = Line::of(model)?;
    let (flops, reach) = (&chains.flops[..], &chains.reach);
    let chain = chain_cuts::heaviest_chain(graph, reach, flops);
    if chain.len() < 2 {
        return None;
    }
    let fastest = line.compute.iter().copied().fold(0.0, f64::max);
    let widest = line.bandwidth.iter().copied().fold(0.0, f64::max);
    let spans: Vec<Span> = chain
        .windows(2)
        .map(|w| Span::new(graph, reach, flops, w[0], w[1]))
        .collect();
    let ends: Vec<f64> = chain.iter().map(|&x| flops[x]).collect();
    let chips = Chain {
        spans: &spans,
        ends: &ends,
        rate: fastest,
        bandwidth: widest,
    };
    let available = line.compute.len();
    let mut hi = ends.iter().sum::<f64>() / fastest + spans.iter().map(|s| s.flops).sum::<f64>() / fastest;
    if !hi.is_finite() || hi <= 0.0 || chips.needs(hi, available) > available {
        return None;
    }
    let mut lo = 0.0;
    for _ in 0..STEPS {
        let mid = 0.5 * (lo + hi);
        if chips.needs(mid, available) <= available {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let name = |u: usize| &graph.placed_node(u as u32).id;
    Some(Bound {
        kind: BoundKind::StageCuts,
        latency_s: lo * (1.0 - 1e-12),
        because: format!(
            "the chips the chain `{}` -> ... -> `{}` needs: each of its {} spans on its two ends' chips, \
             each chip's flops plus what it sends up, on at most {available} chips",
            name(chain[0]),
            name(chain[chain.len() - 1]),
            spans.len()
        ),
    })
}

/// The nodes strictly between two chain nodes, and how their lower part
/// may be cut off.
struct Span {
    /// Flops of the nodes strictly between.
    flops: f64,
    /// The subgraph's axis: node 0 the lower end (weighing `free`, so that
    /// an ideal holding it weighs at least that), then the nodes between,
    /// then the upper end (heavier than the rest together, so that no
    /// ideal of the span's flops holds it). `None`: an empty span, cut
    /// only by the lower end's tensor.
    axis: Option<Axis>,
    /// The lower end's flops on the axis.
    free: f64,
    /// The lower end's tensor to the upper end (an empty span).
    direct: f64,
}

impl Span {
    fn new(graph: &Graph, reach: &Reach, flops: &[f64], lower: usize, upper: usize) -> Span {
        let mut inside = vec![false; flops.len()];
        reach.mark_between(lower, upper, &mut inside);
        let mut members: Vec<usize> = vec![lower];
        members.extend((0..flops.len()).filter(|&u| inside[u]));
        members.push(upper);
        let between: f64 = members[1..members.len() - 1].iter().map(|&u| flops[u]).sum();
        let direct = graph
            .placed_edges()
            .iter()
            .filter(|e| e.src as usize == lower && e.dst as usize == upper)
            .map(|e| e.bytes as f64)
            .fold(f64::INFINITY, f64::min);
        if members.len() == 2 {
            return Span {
                flops: 0.0,
                axis: None,
                free: 0.0,
                direct,
            };
        }
        let mut local = vec![usize::MAX; flops.len()];
        for (i, &u) in members.iter().enumerate() {
            local[u] = i;
        }
        let edges: Vec<PlacedEdge> = graph
            .placed_edges()
            .iter()
            .filter(|e| local[e.src as usize] != usize::MAX && local[e.dst as usize] != usize::MAX)
            .map(|e| PlacedEdge {
                src: local[e.src as usize] as u32,
                dst: local[e.dst as usize] as u32,
                bytes: e.bytes,
            })
            .collect();
        // The lower end weighs a sliver of the span, far above the axis'
        // rounding room (a trillionth of its total), in whole flops: sums
        // of whole flops are exact, so the axis sorts each node into or
        // out of an ideal the same way from either side.
        let free = (between * 1e-6).ceil().max(1.0);
        let mut weights: Vec<f64> = members.iter().map(|&u| flops[u]).collect();
        weights[0] = free;
        *weights.last_mut().unwrap() = between + free + 1.0;
        Span {
            flops: between,
            axis: Some(Axis::of_edges(&edges, &vec![0.0; members.len()], &weights)),
            free,
            direct,
        }
    }

    /// The most flops of the span a chip holding its lower end can take
    /// within `budget` seconds, sending what its upper part reads; `None`
    /// when not even the lower end's tensor fits.
    fn farthest(&self, budget: f64, rate: f64, bandwidth: f64) -> Option<f64> {
        match &self.axis {
            None => (self.direct / bandwidth <= budget).then_some(0.0),
            Some(axis) => axis
                .farthest(budget, rate, bandwidth, self.free, self.flops + self.free)
                .map(|f| (f - self.free).clamp(0.0, self.flops)),
        }
    }
}

/// The chain as the relaxation sees it.
struct Chain<'a> {
    spans: &'a [Span],
    /// The chain nodes' flops.
    ends: &'a [f64],
    rate: f64,
    bandwidth: f64,
}

impl Chain<'_> {
    /// The fewest chips that hold the chain within `t` each (`usize::MAX`:
    /// none do, or more than `limit`). A chip ends in some span j, holding
    /// x_{j−1} and a lower part of S_j; the next holds the rest of S_j with
    /// x_j. Per span, a state reached with more chips is kept only when its
    /// lower part is larger than every state reached with fewer: the next
    /// chip then has less to hold, and every end it reaches stays reachable.
    fn needs(&self, t: f64, limit: usize) -> usize {
        let spans = self.spans.len();
        // Per span, the largest lower part reached so far (with fewer chips).
        let mut reached: Vec<f64> = vec![f64::NEG_INFINITY; spans + 1];
        // The chips' starts at this count: (the first span the chip may end
        // in, the seconds it holds before it).
        let mut starts: Vec<(usize, f64)> = vec![(1, self.ends[0] / self.rate)];
        for chips in 1..=limit.min(self.ends.len()) {
            let mut ends: Vec<(usize, f64)> = Vec::new();
            for &(first, carry) in &starts {
                if carry > t {
                    continue;
                }
                let mut load = carry;
                for j in first..=spans + 1 {
                    if j > spans {
                        // This chip ends the chain: nothing left to send.
                        return chips;
                    }
                    let span = &self.spans[j - 1];
                    if let Some(f) = span.farthest(t - load, self.rate, self.bandwidth) {
                        ends.push((j, f));
                    }
                    load += (span.flops + self.ends[j]) / self.rate;
                    if load > t {
                        break;
                    }
                }
            }
            // The best end per span, kept when it beats every fewer-chip one.
            ends.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
            ends.dedup_by_key(|e| e.0);
            starts.clear();
            for (j, f) in ends {
                if f > reached[j] {
                    reached[j] = f;
                    let carry = ((self.spans[j - 1].flops - f).max(0.0) + self.ends[j]) / self.rate;
                    starts.push((j + 1, carry));
                }
            }
            if starts.is_empty() {
                break;
            }
        }
        usize::MAX
    }
}
