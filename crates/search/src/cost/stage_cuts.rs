//! A lower bound from the pipeline's stage boundaries, after the relaxation
//! of contiguous stages in Archer et al. (ICML 2024, "Practical Performance
//! Guarantees for Pipelined DNN Inference"), specialised to a package whose
//! chips form a line.
//!
//! Where `acyclic_flow` holds (chip(u) ≤ chip(v) on every edge) and every
//! route from a lower chip a to a higher chip b runs a → a+1 → … → b (a
//! unidirectional ring or a line), the nodes on chips 0..=d form an ideal
//! U_d of the graph (closed under predecessors), and every tensor leaving
//! U_d crosses the link d → d+1, whose time is chip d's. So for every chip
//! d below the last,
//!
//!   T ≥ (F(U_d) − F(U_{d−1})) / c_d + cut(U_d) / bw_d,
//!
//! with F the flops of an ideal and cut its outgoing bytes (each node once,
//! at least its smallest edge), and the last chip holds the rest:
//! T ≥ (F − F(U_{C−2})) / c_{C−1}. The relaxation keeps only F(U_d) of
//! each ideal, a number φ_d, and charges it the smallest cut of any ideal
//! whose flops can lie in φ_d's interval: a node whose ancestors outweigh
//! the interval's top lies outside, one whose descendants leave less than
//! its bottom lies inside, and the cheapest ideal between those two sets is
//! a minimum cut (Dinic's, petgraph). A latency T for which no sequence
//! 0 ≤ φ_0 ≤ … reaches F is below every valid partition; each chip goes as
//! far as it can (going further never hurts the next), and T is bisected.

use super::bounds::{Bound, BoundKind};
use mcm_core::graph::Graph;
use mcm_core::latency::LatencyModel;
use petgraph::algo::dinics;
use petgraph::graph::DiGraph;

/// Intervals of flops kept (neighbours merged beyond): two minimum cuts each
/// (its lower end, its inside).
const MAX_INTERVALS: usize = 4_096;

/// The largest graph the bound is computed for (a minimum cut per interval).
const MAX_NODES: usize = 8_192;

/// The largest package whose routes are checked (cubic in the chips).
const MAX_CHIPS: usize = 1_024;

/// Bisection steps on T (the interval shrinks 2^-50).
const STEPS: usize = 50;

/// The bound, when `ordered` (`acyclic_flow` is required), the chips form a
/// line and the op times are flops over rates; `None` otherwise.
pub(super) fn bound(graph: &Graph, model: &LatencyModel, ordered: bool) -> Option<Bound> {
    let c = model.num_chips();
    let n = graph.num_placed();
    if !ordered || model.is_profiled() || !(2..=MAX_CHIPS).contains(&c) || n == 0 || n > MAX_NODES {
        return None;
    }
    let links = line_links(model)?;
    let compute = &model.compute;
    let bandwidth: Vec<f64> = links.iter().map(|&l| model.bandwidth[l]).collect();
    let intervals = intervals(graph);
    let total = intervals.last().map_or(0.0, |i| i.hi);
    let feasible = |t: f64| reaches(&intervals, total, compute, &bandwidth, t);
    let (mut lo, mut hi) = (0.0, total / compute[0]);
    if hi.is_nan() || hi <= 0.0 || !feasible(hi) {
        return None;
    }
    for _ in 0..STEPS {
        let mid = 0.5 * (lo + hi);
        if feasible(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(Bound {
        kind: BoundKind::StageCuts,
        // Below the last T found infeasible by a rounding's width.
        latency_s: lo * (1.0 - 1e-12),
        because: "stage boundaries: each chip's flops plus the cheapest cut its boundary can take".into(),
    })
}

/// Per chip d below the last, the link d -> d+1, when every route from a
/// lower chip to a higher one follows these links in order.
fn line_links(model: &LatencyModel) -> Option<Vec<usize>> {
    let c = model.num_chips() as u32;
    let links: Vec<usize> = (0..c - 1).map(|d| model.first_link(d, d + 1)).collect::<Option<_>>()?;
    let package = &model.package;
    for (d, &l) in links.iter().enumerate() {
        if (package.links[l].src, package.links[l].dst) != (d as u32, d as u32 + 1) {
            return None;
        }
    }
    for a in 0..c {
        for b in a + 1..c {
            let mut at = a;
            for l in model.route(a, b)? {
                if at >= b || l != links[at as usize] {
                    return None;
                }
                at += 1;
            }
            if at != b {
                return None;
            }
        }
    }
    Some(links)
}

/// Flops from `lo` to `hi` (a point, or an open interval taken with its
/// ends), and the cheapest cut (bytes) of an ideal whose flops may lie
/// there (`INFINITY`: none can).
#[derive(Clone, Copy, Debug)]
struct Interval {
    lo: f64,
    hi: f64,
    cut: f64,
}

/// Whether chips 0.. in order, each at most `t`, can take all `total`
/// flops: chip d goes from φ to the furthest ψ with
/// (ψ − φ) / c_d + cut(ψ) / bw_d ≤ t, or ends the pipeline when
/// (total − φ) / c_d ≤ t.
fn reaches(intervals: &[Interval], total: f64, compute: &[f64], bandwidth: &[f64], t: f64) -> bool {
    let mut phi = 0.0;
    for (d, &cd) in compute.iter().enumerate() {
        if (total - phi) / cd <= t {
            return true;
        }
        let Some(&bw) = bandwidth.get(d) else {
            return false;
        };
        let mut best = phi;
        for i in intervals.iter().filter(|i| i.hi >= phi && i.cut.is_finite()) {
            let room = t - i.cut / bw;
            if room < 0.0 {
                continue;
            }
            let psi = i.hi.min(phi + cd * room);
            if psi >= i.lo.max(phi) && psi > best {
                best = psi;
            }
        }
        phi = best;
    }
    false
}

/// The flops axis cut at every value an ideal's bounds change (a node's
/// ancestors' flops, the flops outside its descendants), at most
/// [`MAX_INTERVALS`] intervals, each with its cheapest cut.
fn intervals(g: &Graph) -> Vec<Interval> {
    let n = g.num_placed();
    let flops: Vec<f64> = (0..n as u32).map(|u| g.placed_node(u).flops as f64).collect();
    let total: f64 = flops.iter().sum();
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut succs: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut bytes = vec![u64::MAX; n];
    for e in g.placed_edges() {
        preds[e.dst as usize].push(e.src);
        succs[e.src as usize].push(e.dst);
        bytes[e.src as usize] = bytes[e.src as usize].min(e.bytes);
    }
    let order = topological(&preds, &succs);
    // Ancestors' and descendants' flops (each node with itself), by bitsets.
    let words = n.div_ceil(64);
    let closure_flops = |first: &[u32], next: &[Vec<u32>]| -> Vec<f64> {
        let mut sets = vec![0u64; n * words];
        let mut out = vec![0.0; n];
        for &u in first {
            let u = u as usize;
            sets[u * words + u / 64] |= 1 << (u % 64);
            for &v in &next[u] {
                for w in 0..words {
                    sets[u * words + w] |= sets[v as usize * words + w];
                }
            }
            out[u] = (0..n)
                .filter(|&x| sets[u * words + x / 64] >> (x % 64) & 1 == 1)
                .map(|x| flops[x])
                .sum();
        }
        out
    };
    let ancestors = closure_flops(&order, &preds);
    let reversed: Vec<u32> = order.iter().rev().copied().collect();
    let descendants = closure_flops(&reversed, &succs);
    // A node is outside every ideal lighter than `above[u]` and inside
    // every ideal heavier than `below[u]`.
    let above = ancestors;
    let below: Vec<f64> = descendants.iter().map(|&d| total - d).collect();
    let mut points: Vec<f64> = above.iter().chain(&below).copied().chain([0.0, total]).collect();
    points.sort_by(f64::total_cmp);
    points.dedup();
    if points.len() > MAX_INTERVALS + 1 {
        let m = points.len() - 1;
        points = (0..=MAX_INTERVALS).map(|k| points[k * m / MAX_INTERVALS]).collect();
    }
    let capacity_sum: u64 = bytes
        .iter()
        .filter(|&&b| b != u64::MAX)
        .fold(0u64, |s, &b| s.saturating_add(b));
    let infinite = capacity_sum.saturating_add(1);
    // Each point (the ideals of exactly that many flops) and each open
    // interval between two points (a node whose bound is an end is forced
    // there too: a node heavier than the gap leaves no ideal inside it).
    let piece = |lo: f64, hi: f64, open: bool| {
        let inside: Vec<bool> = below.iter().map(|&b| b < lo || (open && b <= lo)).collect();
        let outside: Vec<bool> = above.iter().map(|&a| a > hi || (open && a >= hi)).collect();
        let cut = if (0..n).any(|u| inside[u] && outside[u]) {
            f64::INFINITY
        } else {
            match min_cut(&succs, &preds, &bytes, &inside, &outside, infinite) {
                v if v >= infinite => f64::INFINITY,
                v => v as f64,
            }
        };
        Interval { lo, hi, cut }
    };
    let mut out: Vec<Interval> = points
        .windows(2)
        .flat_map(|w| [piece(w[0], w[0], false), piece(w[0], w[1], true)])
        .collect();
    out.push(piece(total, total, false));
    out
}

/// The cheapest ideal containing `inside` and none of `outside`: each node
/// with consumers outside the ideal costs its bytes once. The forced nodes
/// are the source and the sink (the producers of a forced node are forced
/// too), so the network holds only the free nodes and their neighbours.
fn min_cut(
    succs: &[Vec<u32>],
    preds: &[Vec<u32>],
    bytes: &[u64],
    inside: &[bool],
    outside: &[bool],
    infinite: u64,
) -> u64 {
    if !inside.iter().any(|&x| x) || !outside.iter().any(|&x| x) {
        return 0;
    }
    let n = succs.len();
    let mut net: DiGraph<(), u64> = DiGraph::new();
    let (s, t) = (net.add_node(()), net.add_node(()));
    let mut id = vec![s; n];
    for u in 0..n {
        if outside[u] {
            id[u] = t;
        } else if !inside[u] {
            id[u] = net.add_node(());
        }
    }
    let mut constant = 0u64;
    for u in 0..n {
        if outside[u] || succs[u].is_empty() {
            continue;
        }
        if inside[u] {
            if succs[u].iter().any(|&v| outside[v as usize]) {
                constant = constant.saturating_add(bytes[u]);
                continue;
            }
            if succs[u].iter().all(|&v| inside[v as usize]) {
                continue;
            }
        }
        // "Every consumer of u is in the ideal": u pays unless it holds.
        let twin = net.add_node(());
        net.add_edge(id[u], twin, bytes[u]);
        for &v in &succs[u] {
            if !inside[v as usize] {
                net.add_edge(twin, id[v as usize], infinite);
            }
        }
    }
    for v in (0..n).filter(|&v| !inside[v] && !outside[v]) {
        // An ideal holds the producers of what it holds.
        for &u in &preds[v] {
            if !inside[u as usize] {
                net.add_edge(id[v], id[u as usize], infinite);
            }
        }
    }
    constant.saturating_add(dinics(&net, s, t).0)
}

/// A topological order of the placed nodes (Kahn's).
fn topological(preds: &[Vec<u32>], succs: &[Vec<u32>]) -> Vec<u32> {
    let mut indegree: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut order: Vec<u32> = (0..preds.len() as u32).filter(|&u| indegree[u as usize] == 0).collect();
    let mut k = 0;
    while k < order.len() {
        for &v in &succs[order[k] as usize] {
            indegree[v as usize] -= 1;
            if indegree[v as usize] == 0 {
                order.push(v);
            }
        }
        k += 1;
    }
    order
}
