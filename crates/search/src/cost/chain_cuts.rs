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
//! No chip below q_m holds x_K, so each stops short of x_K's flops on the
//! axis, and only the chip that ends the relaxation takes them.
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
//! parametric longest path: Σ (gain − λ) over paths, λ bisected), and
//! beside it each of the heaviest confined spans, a chain of one edge on
//! two chips: where a span's work is a few big ops (a window attention's
//! projections), it splits over its two chips only at whole ops, which a
//! chain spread over more chips does not see.
//!
//! Off a line a tensor leaving U_j may cross on another chip's link, so
//! only chains of one or two nodes are relaxed there: W's nodes on the
//! lower chip q_0 are all of W in U_0, and what they send leaves q_0 on
//! its own links, so the boundary's cut counts W's tensors only; the tail
//! counts what q_m itself sends (x_K's tensor and D ∩ U's, all on q_m).
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

/// What the chain bounds (these and [`super::chain_chips`]) share of a
/// graph: flops per placed node and the nodes between any two, built once.
pub(super) struct Chains {
    pub(super) flops: Vec<f64>,
    pub(super) reach: Reach,
}

impl Chains {
    /// `None` unless `confined` (`acyclic_flow` and `triangle_dependency`
    /// required) and the graph has 2 to [`stage_cuts::MAX_NODES`] placed
    /// nodes: the chain bounds hold only then.
    pub(super) fn of(graph: &Graph, confined: bool) -> Option<Chains> {
        let n = graph.num_placed();
        if !confined || !(2..=stage_cuts::MAX_NODES).contains(&n) {
            return None;
        }
        Some(Chains {
            flops: (0..n as u32).map(|u| graph.placed_node(u).flops as f64).collect(),
            reach: Reach::new(graph),
        })
    }
}

/// The bounds on a graph's [`Chains`], when op times are flops over rates: the stage-cut relaxation
/// of W for the chain with the most flops per chip and, beside it, for the
/// heaviest confined spans as chains of one edge ([`SPANS`]), each when it
/// has fewer nodes than the package has chips; under `memory`
/// (`memory_capacity` required) on a line, the weights the best chain's W
/// reads beyond what its chips hold ([`streamed`]) over its at most m
/// links in. Off a line only chains of one or two nodes are taken (see
/// [`Package`]). Empty otherwise.
pub(super) fn bound(graph: &Graph, model: &LatencyModel, chains: &Chains, memory: bool) -> Vec<Bound> {
    let Some(package) = Package::of(model) else {
        return Vec::new();
    };
    let (flops, reach) = (&chains.flops[..], &chains.reach);
    let best = best_chain(graph, reach, flops);
    let mut out = Vec::new();
    if let Some(relaxed) = package.relax(graph, reach, flops, &best) {
        out.extend(relaxed.bounds(graph, "chain"));
        if memory && package.line {
            let m = best.len();
            let latency_s = streamed(graph, &relaxed.in_w, m as f64 * package.roomiest) / (m as f64 * package.widest);
            if latency_s > 0.0 {
                out.push(Bound {
                    kind: BoundKind::StageCuts,
                    latency_s,
                    because: format!(
                        "weights streamed into {}: its {m} nodes and those between them on at most {m} chips, whose memory holds only part of the weights they read",
                        relaxed.named(graph, "chain")
                    ),
                });
            }
        }
    }
    // The heaviest spans' own relaxations: a span whose work is a few big
    // ops splits over its two chips only at whole ops, which the best
    // chain, spread over more chips, does not see. The highest is kept.
    let spans = heaviest_spans(graph, reach, flops)
        .into_iter()
        .filter(|span| *span != best)
        .filter_map(|span| package.relax(graph, reach, flops, &span))
        .flat_map(|r| r.bounds(graph, "span"))
        .reduce(|b, x| if b.latency_s >= x.latency_s { b } else { x });
    out.extend(spans);
    out
}

/// Confined spans (an edge and the nodes between its ends) relaxed besides
/// the best chain: the heaviest in flops, one of each flops and size.
const SPANS: usize = 6;

/// The package as the chain's relaxation sees it.
struct Package {
    /// The routes run along a line of chips in id order: every tensor
    /// leaving the chips up to q crosses q's own link.
    line: bool,
    chips: usize,
    fastest: f64,
    /// The widest link (on a line, of the line's).
    widest: f64,
    /// The largest chip memory.
    roomiest: f64,
}

impl Package {
    /// `None` with measured op times or fewer than two chips.
    fn of(model: &LatencyModel) -> Option<Package> {
        let chips = model.num_chips();
        if model.is_profiled() || chips < 2 {
            return None;
        }
        let line = Line::of(model);
        let widest = match &line {
            Some(l) => l.bandwidth.iter().copied().fold(0.0, f64::max),
            None => model.bandwidth.iter().copied().fold(0.0, f64::max),
        };
        Some(Package {
            line: line.is_some(),
            chips,
            fastest: model.compute.iter().copied().fold(0.0, f64::max),
            widest,
            roomiest: (0..chips as u32)
                .map(|d| model.package.memory_or_unlimited(d))
                .fold(0.0, f64::max),
        })
    }

    /// The relaxation of `chain`'s W on as many chips as it has nodes, and
    /// with the tail of what follows its last node; `None` when the package
    /// has no more chips than that, or off a line for a chain of more than
    /// two nodes. Off a line a tensor that leaves the chips up to q may
    /// cross on another chip's link, but one that W's node on q sends
    /// leaves q on q's own links: with one or two chips of W the only
    /// boundary's cut counts W's tensors only (those on the lower chip),
    /// and the tail what the highest chip itself sends.
    fn relax(&self, graph: &Graph, reach: &Reach, flops: &[f64], chain: &[usize]) -> Option<Relaxed> {
        let m = chain.len();
        if m == 0 || m >= self.chips || (!self.line && m > 2) {
            return None;
        }
        let n = flops.len();
        let mut in_w = vec![false; n];
        in_w[chain[0]] = true;
        for w in chain.windows(2) {
            reach.mark_between(w[0], w[1], &mut in_w);
            in_w[w[1]] = true;
        }
        let chain_flops: Vec<f64> = (0..n).map(|u| if in_w[u] { flops[u] } else { 0.0 }).collect();
        let (compute, bandwidth) = (vec![self.fastest; m], vec![self.widest; m - 1]);
        let mut chips = Chips {
            compute: &compute,
            bandwidth: &bandwidth,
            weights: None,
            window: 1,
            tail_s: 0.0,
            held_back: chain_flops[chain[m - 1]],
        };
        let senders = (!self.line).then_some(&in_w[..]);
        let axis = stage_cuts::Axis::sent_by(graph, &chain_flops, senders)?;
        let plain = axis.least(&chips)?;
        chips.tail_s = tail_s(graph, flops, chain[m - 1], self.fastest, self.widest, !self.line);
        let tail = match axis.least(&chips) {
            Some(t) if chips.tail_s > 0.0 && t > plain => Some(t),
            _ => None,
        };
        Some(Relaxed {
            first: chain[0],
            last: chain[m - 1],
            m,
            in_w,
            plain,
            tail,
        })
    }
}

/// A chain's relaxation: its W and the latencies without and with the tail.
struct Relaxed {
    first: usize,
    last: usize,
    m: usize,
    in_w: Vec<bool>,
    plain: f64,
    tail: Option<f64>,
}

impl Relaxed {
    /// "the chain `a` -> ... -> `b`" (or span).
    fn named(&self, graph: &Graph, what: &str) -> String {
        let name = |u: usize| &graph.placed_node(u as u32).id;
        format!("the {what} `{}` -> ... -> `{}`", name(self.first), name(self.last))
    }

    /// The bound without the tail, and with it when higher.
    fn bounds(&self, graph: &Graph, what: &str) -> Vec<Bound> {
        let (m, chain_is) = (self.m, self.named(graph, what));
        let mut out = vec![Bound {
            kind: BoundKind::StageCuts,
            latency_s: self.plain,
            because: format!(
                "stage boundaries of {chain_is}: its {m} nodes and those between them on at most {m} chips"
            ),
        }];
        if let Some(latency_s) = self.tail {
            out.push(Bound {
                kind: BoundKind::StageCuts,
                latency_s,
                because: format!(
                    "stage boundaries of {chain_is}: its {m} nodes and those between them on at most {m} chips, \
                     the highest of which computes or sends on what follows `{}`",
                    graph.placed_node(self.last as u32).id
                ),
            });
        }
        out
    }
}

/// The [`SPANS`] heaviest confined spans as chains of one edge `[u, v]`,
/// the heaviest first, one per distinct (flops, nodes between).
fn heaviest_spans(graph: &Graph, reach: &Reach, flops: &[f64]) -> Vec<Vec<usize>> {
    let mut spans: Vec<(f64, usize, usize, usize)> = graph
        .placed_edges()
        .iter()
        .map(|e| {
            let (u, v) = (e.src as usize, e.dst as usize);
            let (f, k) = reach.between(u, v, flops);
            (f + flops[u] + flops[v], k, u, v)
        })
        .filter(|&(_, k, ..)| k > 0)
        .collect();
    spans.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    spans.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    spans.into_iter().take(SPANS).map(|(_, _, u, v)| vec![u, v]).collect()
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
fn tail_s(graph: &Graph, flops: &[f64], last: usize, fastest: f64, widest: f64, own: bool) -> f64 {
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
    // With `own`, only what the chip itself holds (`last` and D ∩ U)
    // is charged: off a line another node's tensor may leave on another
    // chip's link.
    let send_s: Vec<f64> = (0..n)
        .map(|u| match bytes[u] {
            b if b.is_finite() && (!own || below[u] || u == last) => b / widest,
            _ => 0.0,
        })
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
