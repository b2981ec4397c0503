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
//!
//! Two valid inequalities tighten it. **Granularity**: an ideal between
//! the forced sets has flops between theirs, so each interval is clipped
//! to [F(inside), F − F(outside)] (on a chain of ops the axis keeps only
//! the flops its prefixes can have). **Memory** (when `memory_capacity`
//! holds): stage d's weights P(U_d) − P(U_{d−1}) fit chip d's memory M_d.
//! P(U_d) is at least the weights forced inside φ_d's interval, and
//! P(U_{d−1}) at most the weights of the nodes not forced outside φ_{d−1}'s,
//! except that a node in U_{d−1} with a consumer forced outside sends its
//! output over link d−1: those whose weights are at most their output's
//! bytes hold at most bw_{d−1}·T of weights together. Both ends grow with
//! φ, so a chip that goes further still never hurts the next, and the last
//! chip holds the rest of the weights too.
//!
//! **Any package** (when the routes do not run along a line: a mesh, a
//! torus, a ring with links both ways): U_d is still an ideal and chip d
//! still computes F(U_d) − F(U_{d−1}), but a tensor leaving U_d may cross
//! out of chips 0..=d on any link x → y with x ≤ d < y, charged to x. With
//! X_d those sources, the crossing links carry at least cut(U_d), so
//! cut(U_d) ≤ B · Σ_{x ∈ X_d} (T − compute(x)), B the widest such link.
//! When every X_d lies within the last k chips d−k+1..=d (k = the columns
//! of a row-major mesh), the window holds X_d and each other chip in it
//! adds a term ≥ 0, so
//!
//!   k·T ≥ (F(U_d) − F(U_{d−k})) / c + cut(U_d) / B,
//!
//! c the fastest chip, beside T ≥ (F(U_d) − F(U_{d−1})) / c_d. Going as far
//! as it can is still best for each chip (a further start only loosens the
//! windows after it, and a chip may always stay put), and the tensors that
//! cross a boundary before a memory check are at most k·B·T. With k = 1
//! this is the line.

use super::bounds::{Bound, BoundKind};
use mcm_core::graph::{Graph, PlacedEdge};
use mcm_core::latency::LatencyModel;
use petgraph::algo::dinics;
use petgraph::graph::DiGraph;

/// Intervals of flops kept (neighbours merged beyond): two minimum cuts each
/// (its lower end, its inside).
const MAX_INTERVALS: usize = 4_096;

/// The largest graph the bound is computed for (a minimum cut per interval).
pub(super) const MAX_NODES: usize = 8_192;

/// The largest package whose routes are checked (cubic in the chips).
const MAX_CHIPS: usize = 1_024;

/// Bisection steps on T (the interval shrinks 2^-50).
const STEPS: usize = 50;

/// The bound, when `ordered` (`acyclic_flow` is required), the chips form a
/// line and the op times are flops over rates; `None` otherwise. `memory`:
/// the problem requires `memory_capacity`.
pub(super) fn bound(graph: &Graph, model: &LatencyModel, ordered: bool, memory: bool) -> Option<Bound> {
    let n = graph.num_placed();
    if !ordered || n == 0 || n > MAX_NODES {
        return None;
    }
    let (line, window) = match Line::of(model) {
        Some(line) => (line, 1),
        None => Line::windowed(model)?,
    };
    let flops: Vec<f64> = (0..n as u32).map(|u| graph.placed_node(u).flops as f64).collect();
    let capacity: Vec<f64> = (0..line.compute.len() as u32)
        .map(|d| model.package.memory_or_unlimited(d))
        .collect();
    let weights = Weights {
        capacity: &capacity,
        total: (0..n as u32).map(|u| graph.placed_node(u).params as f64).sum(),
    };
    let chips = Chips {
        compute: &line.compute,
        bandwidth: &line.bandwidth,
        weights: memory.then_some(weights),
        window,
        tail_s: 0.0,
        held_back: 0.0,
    };
    let latency_s = relax(graph, &flops, &chips)?;
    let because = match window {
        1 => "stage boundaries: each chip's flops plus the cheapest cut its boundary can take".into(),
        k => format!(
            "stage boundaries in chip order: each chip's flops, and the cheapest cut of each boundary \
             on the links that cross it from the last {k} chips"
        ),
    };
    Some(Bound {
        kind: BoundKind::StageCuts,
        latency_s,
        because,
    })
}

/// The chips of a package whose routes run along a line, in line order.
pub(super) struct Line {
    pub compute: Vec<f64>,
    /// Per chip below the last, its link to the next.
    pub bandwidth: Vec<f64>,
}

impl Line {
    /// The package's line, when every route from a lower chip to a higher
    /// one follows the links d -> d+1 in order and op times are flops over
    /// rates.
    pub(super) fn of(model: &LatencyModel) -> Option<Line> {
        let c = model.num_chips();
        if model.is_profiled() || !(2..=MAX_CHIPS).contains(&c) {
            return None;
        }
        let links = line_links(model)?;
        Some(Line {
            compute: model.compute.clone(),
            bandwidth: links.iter().map(|&l| model.bandwidth[l]).collect(),
        })
    }

    /// Any package with op times of flops over rates: the chips in id
    /// order, each boundary's cut on the widest link that crosses it, and
    /// the window `k` of chips d−k+1..=d that holds every source of a link
    /// across boundary d (see the module's notes).
    fn windowed(model: &LatencyModel) -> Option<(Line, usize)> {
        let c = model.num_chips();
        if model.is_profiled() || !(2..=MAX_CHIPS).contains(&c) {
            return None;
        }
        let package = &model.package;
        // Per chip, the farthest chip above it that a link reaches: link
        // x -> y crosses every boundary d with x <= d < y.
        let mut reach = vec![0usize; c];
        let mut widest: f64 = 0.0;
        for (l, link) in package.links.iter().enumerate() {
            let (x, y) = (link.src as usize, link.dst as usize);
            if x < y {
                reach[x] = reach[x].max(y);
                widest = widest.max(model.bandwidth[l]);
            }
        }
        let mut window = 1;
        for d in 0..c - 1 {
            if let Some(x) = (0..=d).find(|&x| reach[x] > d) {
                window = window.max(d - x + 1);
            }
        }
        // No link goes up: nothing crosses a boundary, and no cut is charged.
        let widest = if widest > 0.0 { widest } else { f64::INFINITY };
        Some((
            Line {
                compute: model.compute.clone(),
                bandwidth: vec![widest; c - 1],
            },
            window,
        ))
    }
}

/// The relaxation's least latency, with `flops` per placed node: the
/// largest T found infeasible, or `None` when no T is feasible (memory) or
/// the graph is too large.
pub(super) fn relax(graph: &Graph, flops: &[f64], chips: &Chips) -> Option<f64> {
    Axis::new(graph, flops)?.least(chips)
}

/// The flops axis of a graph, cut into intervals with their cheapest cuts:
/// the costly part of the relaxation, shared by runs on different chips.
pub(super) struct Axis {
    intervals: Vec<Interval>,
    total: f64,
}

impl Axis {
    /// The axis of `flops` per placed node; `None` past [`MAX_NODES`].
    pub(super) fn new(graph: &Graph, flops: &[f64]) -> Option<Axis> {
        Axis::sent_by(graph, flops, None)
    }

    /// The axis with only the tensors of `senders` charged to a cut (the
    /// others cross for free): off a line, where only those nodes' chips
    /// are known to pay for what they send.
    pub(super) fn sent_by(graph: &Graph, flops: &[f64], senders: Option<&[bool]>) -> Option<Axis> {
        if graph.num_placed() > MAX_NODES {
            return None;
        }
        let params: Vec<f64> = (0..graph.num_placed() as u32)
            .map(|u| graph.placed_node(u).params as f64)
            .collect();
        Some(Axis {
            intervals: intervals(graph.placed_edges(), &params, flops, senders),
            total: flops.iter().sum(),
        })
    }

    /// The axis of a graph given by its edges (nodes 0..`flops.len()`),
    /// with `params` per node.
    pub(super) fn of_edges(edges: &[PlacedEdge], params: &[f64], flops: &[f64]) -> Axis {
        Axis {
            intervals: intervals(edges, params, flops, None),
            total: flops.iter().sum(),
        }
    }

    /// The most flops an ideal may weigh, between `least` and `most`, when
    /// its flops over `rate` plus its cut over `bandwidth` fit in `budget`
    /// seconds, where the ideal's first `least` flops come free; `None`
    /// when no ideal in that range fits.
    pub(super) fn farthest(&self, budget: f64, rate: f64, bandwidth: f64, least: f64, most: f64) -> Option<f64> {
        let mut best: Option<f64> = None;
        for i in self.intervals.iter().filter(|i| i.cut.is_finite() && i.hi >= least) {
            let room = budget - i.cut / bandwidth;
            if room < 0.0 {
                continue;
            }
            let psi = i.hi.min(most).min(least + rate * room);
            if psi >= i.lo.max(least) && best.is_none_or(|b| psi > b) {
                best = Some(psi);
            }
        }
        best
    }

    /// The relaxation's least latency on `chips` (see [`relax`]).
    pub(super) fn least(&self, chips: &Chips) -> Option<f64> {
        let total = self.total;
        let feasible = |t: f64| reaches(&self.intervals, total, chips, t);
        let (mut lo, mut hi) = (0.0, total / chips.compute[0] + chips.tail_s);
        if hi.is_nan() || hi <= 0.0 {
            return None;
        }
        // Memory can make the whole graph on chip 0 infeasible: widen until
        // some latency is (none: no partition fits, and nothing is claimed).
        let mut widen = 0;
        while !feasible(hi) {
            widen += 1;
            if widen > 64 || !hi.is_finite() {
                return None;
            }
            lo = hi;
            hi *= 2.0;
        }
        for _ in 0..STEPS {
            let mid = 0.5 * (lo + hi);
            if feasible(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        // Below the last T found infeasible by a rounding's width.
        Some(lo * (1.0 - 1e-12))
    }
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
/// ends, clipped to what an ideal between its forced sets can weigh), and
/// the cheapest cut (bytes) of an ideal whose flops may lie there
/// (`INFINITY`: none can).
#[derive(Clone, Copy, Debug)]
struct Interval {
    /// Where the interval starts before clipping: intervals are in this
    /// order, and the forced sets only grow (inside) or shrink (outside)
    /// along it.
    at: f64,
    lo: f64,
    hi: f64,
    cut: f64,
    /// Weights (params) of the nodes forced inside.
    held: f64,
    /// Weights of the nodes not forced outside, but for `sent`.
    free: f64,
    /// Weights of the nodes not forced outside that have a consumer forced
    /// outside and weights at most their output's bytes: an ideal holding
    /// them sends at least as many bytes over its boundary.
    sent: f64,
}

impl Interval {
    /// The most weights an ideal in this interval can hold when its
    /// boundary sends at most `bytes`.
    fn most_weights(&self, bytes: f64) -> f64 {
        self.free + self.sent.min(bytes)
    }
}

/// The chips as the relaxation sees them, in line order.
pub(super) struct Chips<'a> {
    pub compute: &'a [f64],
    /// Per chip below the last, its link to the next.
    pub bandwidth: &'a [f64],
    /// When `memory_capacity` holds.
    pub weights: Option<Weights<'a>>,
    /// The chips d−k+1..=d whose links carry boundary d's cut: 1 on a line
    /// (chip d's own link), more on other packages, whose `bandwidth` is
    /// then the widest crossing link for every boundary.
    pub window: usize,
    /// Seconds the chip that takes the last flops spends beyond them: 0
    /// when it may be the package's last chip; more for a chain whose last
    /// node has consumers (`chain_cuts`), which that chip computes or sends.
    pub tail_s: f64,
    /// Flops that only the chip ending the pipeline takes: a chain's last
    /// node lies on its highest chip, so every chip below stops short of
    /// it (0 for the whole graph).
    pub held_back: f64,
}

/// Memory per chip and the weights the stages share.
pub(super) struct Weights<'a> {
    capacity: &'a [f64],
    total: f64,
}

/// Whether chips 0.. in order, each at most `t`, can take all `total`
/// flops: chip d goes from φ to the furthest ψ with
/// (ψ − φ) / c_d + cut(ψ) / bw_d ≤ t (and, under memory, the weights forced
/// in at ψ less the most U_{d−1} can hold within chip d's memory), or ends
/// the pipeline when (total − φ) / c_d + tail_s ≤ t and the rest of the
/// weights fit.
fn reaches(intervals: &[Interval], total: f64, chips: &Chips, t: f64) -> bool {
    let mut phi = 0.0;
    // The most weights U_{d−1} can hold (nothing before chip 0).
    let mut before = 0.0;
    let k = chips.window.max(1);
    let fastest = chips.compute.iter().copied().fold(0.0, f64::max);
    // φ_{d−1}, φ_{d−2}, …: the window's start is φ_{d−k} (0 before chip 0).
    let mut reached: Vec<f64> = Vec::with_capacity(chips.compute.len());
    let cap = total - chips.held_back;
    for (d, &cd) in chips.compute.iter().enumerate() {
        let room_for = |held: f64| chips.weights.as_ref().is_none_or(|w| held - before <= w.capacity[d]);
        if (total - phi) / cd + chips.tail_s <= t && room_for(chips.weights.as_ref().map_or(0.0, |w| w.total)) {
            return true;
        }
        let Some(&bw) = chips.bandwidth.get(d) else {
            return false;
        };
        // The window's chips (d−k+1..=d, fewer near chip 0) and where it
        // starts; on a line (k = 1) chip d alone, at its own rate.
        let (width, start, rate) = match k {
            1 => (1.0, phi, cd),
            _ => (
                (k.min(d + 1)) as f64,
                d.checked_sub(k).map_or(0.0, |j| reached[j]),
                fastest,
            ),
        };
        let mut best = phi;
        for i in intervals.iter().filter(|i| i.hi >= phi && i.cut.is_finite()) {
            let room = width * t - i.cut / bw;
            if room < 0.0 || !room_for(i.held) {
                continue;
            }
            let psi = i.hi.min(phi + cd * t).min(start + rate * room).min(cap);
            if psi >= i.lo.max(phi) && psi > best {
                best = psi;
            }
        }
        phi = best;
        reached.push(phi);
        if chips.weights.is_some() {
            // U_d may lie in any interval starting at or below φ_d; its
            // boundary sends at most bw_d · t over each of the window's
            // chips.
            before = intervals
                .iter()
                .take_while(|i| i.at <= phi)
                .map(|i| i.most_weights(width * bw * t))
                .fold(0.0, f64::max);
        }
    }
    false
}

/// The flops axis cut at every value an ideal's bounds change (a node's
/// ancestors' flops, the flops outside its descendants), at most
/// [`MAX_INTERVALS`] intervals, each with its cheapest cut; `params` and
/// `flops` per node, nodes 0..`flops.len()`; with `senders`, only their
/// tensors are charged to a cut.
fn intervals(edges: &[PlacedEdge], params: &[f64], flops: &[f64], senders: Option<&[bool]>) -> Vec<Interval> {
    let n = flops.len();
    let total: f64 = flops.iter().sum();
    // Sums of the same flops in another order may round apart on huge
    // graphs: the clipping gives them this much room.
    let slack = total * 1e-12;
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut succs: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut bytes = vec![u64::MAX; n];
    for e in edges {
        preds[e.dst as usize].push(e.src);
        succs[e.src as usize].push(e.dst);
        bytes[e.src as usize] = bytes[e.src as usize].min(e.bytes);
    }
    if let Some(senders) = senders {
        for (b, _) in bytes.iter_mut().zip(senders).filter(|(b, &s)| !s && **b != u64::MAX) {
            *b = 0;
        }
    }
    let order = topological(&preds, &succs);
    // Ancestors' and descendants' flops (each node with itself), by bitsets.
    let words = n.div_ceil(64);
    // Only nodes with flops add to a closure's sum (few, for a chain's W).
    let heavy: Vec<usize> = (0..n).filter(|&x| flops[x] != 0.0).collect();
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
            out[u] = heavy
                .iter()
                .filter(|&&x| sets[u * words + x / 64] >> (x % 64) & 1 == 1)
                .map(|&x| flops[x])
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
        let sum = |set: &[bool], of: &[f64]| -> f64 { (0..n).filter(|&u| set[u]).map(|u| of[u]).sum() };
        // An ideal holding `inside` and none of `outside` weighs between them.
        let clipped_lo = lo.max(sum(&inside, flops) - slack);
        let clipped_hi = hi.min(total - sum(&outside, flops) + slack);
        let cut = if clipped_lo > clipped_hi || (0..n).any(|u| inside[u] && outside[u]) {
            f64::INFINITY
        } else {
            match min_cut(&succs, &preds, &bytes, &inside, &outside, infinite) {
                v if v >= infinite => f64::INFINITY,
                v => v as f64,
            }
        };
        let (mut free, mut sent) = (0.0, 0.0);
        for u in (0..n).filter(|&u| !outside[u] && params[u] > 0.0) {
            if params[u] <= bytes[u] as f64 && succs[u].iter().any(|&v| outside[v as usize]) {
                sent += params[u];
            } else {
                free += params[u];
            }
        }
        Interval {
            at: lo,
            lo: clipped_lo,
            hi: clipped_hi,
            cut,
            held: sum(&inside, params),
            free,
            sent,
        }
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
pub(crate) fn topological(preds: &[Vec<u32>], succs: &[Vec<u32>]) -> Vec<u32> {
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
