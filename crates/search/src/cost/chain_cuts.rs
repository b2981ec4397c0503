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

use super::bounds::{Bound, BoundKind, Reach};
use super::stage_cuts::{self, Chips, Line};
use mcm_core::graph::Graph;
use mcm_core::latency::LatencyModel;

/// Bisection steps on the flops per chip of the chain.
const STEPS: usize = 60;

/// The bound, when `confined` (`acyclic_flow` and `triangle_dependency`
/// required) on a line of chips, for the chain with the most flops per
/// chip when it has fewer nodes than the package has chips; `None`
/// otherwise.
pub(super) fn bound(graph: &Graph, model: &LatencyModel, confined: bool) -> Option<Bound> {
    let n = graph.num_placed();
    if !confined || !(2..=stage_cuts::MAX_NODES).contains(&n) {
        return None;
    }
    let line = Line::of(model)?;
    let flops: Vec<f64> = (0..n as u32).map(|u| graph.placed_node(u).flops as f64).collect();
    let reach = Reach::new(graph);
    let chain = best_chain(graph, &reach, &flops);
    let m = chain.len();
    if m >= line.compute.len() {
        return None;
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
    let latency_s = stage_cuts::relax(graph, &chain_flops, &chips)?;
    let name = |u: usize| &graph.placed_node(u as u32).id;
    Some(Bound {
        kind: BoundKind::StageCuts,
        latency_s,
        because: format!(
            "stage boundaries of the chain `{}` -> ... -> `{}`: its {m} nodes and those between them on at most {m} chips",
            name(chain[0]),
            name(chain[m - 1])
        ),
    })
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
