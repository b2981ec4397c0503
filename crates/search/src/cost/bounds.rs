//! Lower bounds on the latency of every partition that the problem's rules
//! allow, cheap enough to compute for every report. Each is a theorem about
//! the analytical model (stage(d) = compute(d) + the links leaving d,
//! latency = the slowest stage); the proven bound is their maximum.
//!
//! - **Total compute**: every node that runs is computed at least once, so
//!   the chips together spend at least F = the flops that run; a chip d
//!   spends at most T·c_d of them within latency T, so T ≥ F / Σc.
//! - **Largest node**: a node runs on some chip, at most the fastest:
//!   T ≥ flops(u) / max c.
//! - **Edge span**: for an edge u -> v, a set S of nodes that every valid
//!   partition puts on chip(u) and chip(v) only. Without rules S = {u, v};
//!   when the problem requires `acyclic_flow` and `triangle_dependency`, S
//!   is every node between them (descendants of u that are ancestors of v):
//!   for w on a path u ~> w ~> v, acyclic_flow gives chip(u) ≤ chip(w) ≤
//!   chip(v); if chip(w) were a third chip, the path's arcs would form a
//!   chip-flow path chip(u) ~> chip(w) ~> chip(v) of two arcs or more, so
//!   longest_path(chip(u), chip(v)) ≠ 1 while the edge u -> v crosses
//!   chips: triangle_dependency fails. Then, with F_S the flops of S:
//!   on one chip, T ≥ F_S / max c; on two chips a ≠ b (u on a), a's stage
//!   also carries u's output (at least the edge's bytes B) over the first
//!   link l of the route a -> b, so T ≥ compute(a) + B / bw(l) and
//!   T ≥ compute(b), while c_a·compute(a) + c_b·compute(b) ≥ F_S; hence
//!   T ≥ (F_S + c_a·B / bw(l)) / (c_a + c_b). The bound is the least of
//!   these over the cases (one chip, every ordered pair with a route).
//!
//! - **Stage cuts**: on a line of chips under `acyclic_flow`, each chip's
//!   flops plus the cheapest cut its stage boundary can take
//!   ([`super::stage_cuts`], added by the cost model beside these), and
//!   the same for a chain of confined spans on as many chips as the chain
//!   has nodes ([`super::chain_cuts`]).
//!
//! With measured op times a node's time depends on the chip's kind, not
//! on flops / c alone. Each bound above then holds with every node charged
//! its shortest time on any chip (a chip spends at least that on it) in
//! place of its flops, and every chip's rate set to 1: the total is the
//! sum of shortest times over the number of chips, the largest node its
//! shortest time, and an edge span's work W_S splits as T ≥ W_S on one
//! chip, T ≥ (W_S + B / bw(l)) / 2 on two.
//!
//! Not claimed: a node whose consumers sit on several chips confines its
//! whole neighbourhood to those chips only, not to two, so nothing is
//! derived from it.

use mcm_core::graph::Graph;

/// Which structural bound binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundKind {
    /// Total flops / total compute.
    TotalCompute,
    /// The largest node on the fastest chip.
    LargestNode,
    /// An edge and the nodes it confines to its two chips.
    EdgeSpan,
    /// The pipeline's stage boundaries: each chip's flops plus the cheapest
    /// cut its boundary can take (`stage_cuts`).
    StageCuts,
    /// A target the `exact` strategy's SAT search proved unreachable.
    Exact,
    /// Step time: the longest path, each op at its fastest.
    CriticalPath,
    /// Step time: the ops' work spread over every chip.
    TotalWork,
    /// Step time: the ops the rules confine to one chip, one after another.
    Pinned,
}

impl BoundKind {
    /// Its name in reports, as JSON spells it.
    pub fn name(self) -> &'static str {
        match self {
            BoundKind::TotalCompute => "total_compute",
            BoundKind::LargestNode => "largest_node",
            BoundKind::EdgeSpan => "edge_span",
            BoundKind::StageCuts => "stage_cuts",
            BoundKind::Exact => "exact",
            BoundKind::CriticalPath => "critical_path",
            BoundKind::TotalWork => "total_work",
            BoundKind::Pinned => "pinned",
        }
    }
}

/// A lower bound on the cost of every valid partition.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Bound {
    pub kind: BoundKind,
    /// The bound on the model's cost: the pipeline's latency, or the step
    /// time (a bound of the step-time model).
    pub latency_s: f64,
    /// What it rests on, in words: `total flops / total compute`, the node,
    /// or the edge with its span.
    pub because: String,
}

/// The package as the bounds see it.
pub(super) struct Chips<'a> {
    /// FLOP/s per chip.
    pub compute: &'a [f64],
    /// Per ordered pair (a, b), a ≠ b with a route: (c_a, c_b, the first
    /// link's bandwidth), deduplicated; `None` when there are too many to
    /// try per edge (then links are left out, which only weakens the bound).
    pub pairs: Option<Vec<(f64, f64, f64)>>,
    /// With measured op times: per graph node, its shortest time on any
    /// chip (`LatencyModel::shortest_op_times`); the bounds then count
    /// seconds instead of flops.
    pub shortest: Option<Vec<f64>>,
}

/// The most distinct (c_a, c_b, bandwidth) pairs tried per edge.
pub(super) const MAX_PAIRS: usize = 256;

/// The largest graph whose between-sets are computed (two n² bit matrices,
/// 32 MiB each at this size); a larger one keeps S = {u, v}.
const MAX_SPAN_NODES: usize = 16_384;

/// Every structural bound of `graph` on `chips`; `confined`: the rules force
/// the nodes between an edge's ends onto its two chips.
pub(super) fn structural(graph: &Graph, chips: &Chips, confined: bool) -> Vec<Bound> {
    let Some(shortest) = &chips.shortest else {
        return structural_in(
            graph,
            chips,
            running(graph, |v| graph.nodes[v].flops as f64),
            confined,
            false,
        );
    };
    // Seconds on chips of rate 1: see the module's note on measured times.
    let ones = vec![1.0; chips.compute.len()];
    let pairs = chips.pairs.as_ref().map(|p| {
        let mut bw: Vec<f64> = p.iter().map(|&(_, _, w)| w).collect();
        bw.sort_by(f64::total_cmp);
        bw.dedup();
        bw.into_iter().map(|w| (1.0, 1.0, w)).collect()
    });
    let seconds = Chips {
        compute: &ones,
        pairs,
        shortest: None,
    };
    structural_in(graph, &seconds, running(graph, |v| shortest[v]), confined, true)
}

/// [`structural`] over a work per node: flops on chips of their rates, or
/// seconds (`timed`) on chips of rate 1.
fn structural_in(graph: &Graph, chips: &Chips, flops: Vec<f64>, confined: bool, timed: bool) -> Vec<Bound> {
    let total: f64 = chips.compute.iter().sum();
    let fastest = chips.compute.iter().copied().fold(0.0, f64::max);
    let mut out = vec![Bound {
        kind: BoundKind::TotalCompute,
        latency_s: flops.iter().sum::<f64>() / total,
        because: if timed {
            "total shortest op time / chips (measured op times)".into()
        } else {
            "total flops / total compute".into()
        },
    }];
    if let Some((u, f)) = flops
        .iter()
        .enumerate()
        .fold(None, |m: Option<(usize, f64)>, (u, &f)| match m {
            Some((_, g)) if g >= f => m,
            _ => Some((u, f)),
        })
    {
        out.push(Bound {
            kind: BoundKind::LargestNode,
            latency_s: f / fastest,
            because: if timed {
                format!("node `{}` at its shortest time on any chip", graph.nodes[u].id)
            } else {
                format!("node `{}` on the fastest chip", graph.nodes[u].id)
            },
        });
    }
    if let Some(b) = edge_span(graph, chips, &flops, confined && graph.num_placed() <= MAX_SPAN_NODES) {
        out.push(b);
    }
    out
}

/// The proven bound of a run: the structural one, or the bound its
/// strategy proved (`proved`, seconds: see `Outcome::proven_bound_s`) when
/// that is higher.
pub fn with_proved(structural: &Bound, proved: Option<f64>) -> Bound {
    match proved {
        Some(t) if t > structural.latency_s => Bound {
            kind: BoundKind::Exact,
            latency_s: t,
            because: "exact search: SAT found no valid partition faster".into(),
        },
        _ => structural.clone(),
    }
}

/// The largest of `bounds`, the first on ties; `None` for none.
pub fn proven(bounds: &[Bound]) -> Option<&Bound> {
    bounds.iter().fold(None, |m: Option<&Bound>, b| match m {
        Some(x) if x.latency_s >= b.latency_s => m,
        _ => Some(b),
    })
}

/// The work (flops or seconds) per node that is computed at least once:
/// placed nodes, and replicable nodes copied next to some placed consumer
/// (one with none is never computed, and counts 0).
fn running(g: &Graph, work: impl Fn(usize) -> f64) -> Vec<f64> {
    let mut runs: Vec<bool> = (0..g.nodes.len()).map(|v| g.decision_of(v).is_some()).collect();
    let mut outs: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    for e in &g.edges {
        outs[e.src].push(e.dst);
    }
    for &v in g.topological_order().iter().rev() {
        if !runs[v] {
            runs[v] = outs[v].iter().any(|&w| runs[w]);
        }
    }
    runs.into_iter()
        .enumerate()
        .map(|(v, r)| if r { work(v) } else { 0.0 })
        .collect()
}

/// [`running`] of the flops.
#[cfg(test)]
fn running_flops(g: &Graph) -> Vec<f64> {
    running(g, |v| g.nodes[v].flops as f64)
}

/// The tightest edge bound: S = the nodes between the edge's ends when
/// `between`, else its two ends.
fn edge_span(g: &Graph, chips: &Chips, flops: &[f64], between: bool) -> Option<Bound> {
    let placed_flops: Vec<f64> = g.placed_nodes().iter().map(|&v| flops[v]).collect();
    let reach = between.then(|| Reach::new(g));
    // (F_S, edge index, |S|) per edge, the heaviest spans first: an edge's
    // bound is at most F_S / max c, so the scan stops once that is below
    // the best found.
    let mut spans: Vec<(f64, usize, usize)> = g
        .placed_edges()
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (u, v) = (e.src as usize, e.dst as usize);
            match &reach {
                Some(r) => {
                    let (f, k) = r.between(u, v, &placed_flops);
                    (f + placed_flops[u] + placed_flops[v], i, k + 2)
                }
                None => (placed_flops[u] + placed_flops[v], i, 2),
            }
        })
        .collect();
    spans.sort_by(|a, b| b.0.total_cmp(&a.0));
    let fastest = chips.compute.iter().copied().fold(0.0, f64::max);
    let mut two = chips.compute.to_vec();
    two.sort_by(|a, b| b.total_cmp(a));
    let top_two = two.iter().take(2).sum::<f64>();
    let mut best: Option<(f64, usize, usize)> = None;
    for (f, i, k) in spans {
        if best.is_some_and(|(t, ..)| f / fastest <= t) {
            break;
        }
        let bytes = g.placed_edges()[i].bytes as f64;
        let split = match &chips.pairs {
            Some(pairs) => pairs
                .iter()
                .map(|&(ca, cb, bw)| {
                    let link = bytes / bw;
                    ((f + ca * link) / (ca + cb)).max(link)
                })
                .fold(f64::INFINITY, f64::min),
            None => f / top_two,
        };
        let t = split.min(f / fastest);
        if best.is_none_or(|(b, ..)| t > b) {
            best = Some((t, i, k));
        }
    }
    let (t, i, k) = best?;
    let e = g.placed_edges()[i];
    let (u, v) = (&g.placed_node(e.src).id, &g.placed_node(e.dst).id);
    let because = if k > 2 {
        format!(
            "edge `{u}` -> `{v}` and the {} nodes between, on at most two chips",
            k - 2
        )
    } else {
        format!("edge `{u}` -> `{v}` on one chip or two")
    };
    Some(Bound {
        kind: BoundKind::EdgeSpan,
        latency_s: t,
        because,
    })
}

/// Descendants and ancestors of every placed node as bit rows, for the
/// nodes between two in O(n / 64).
pub(super) struct Reach {
    /// The placed nodes (decision indices) in topological order.
    pub order: Vec<usize>,
    words: usize,
    desc: Vec<u64>,
    anc: Vec<u64>,
}

impl Reach {
    pub(super) fn new(g: &Graph) -> Reach {
        let n = g.num_placed();
        let words = n.div_ceil(64);
        let (mut desc, mut anc) = (vec![0u64; n * words], vec![0u64; n * words]);
        let order: Vec<usize> = g
            .topological_order()
            .iter()
            .filter_map(|&v| g.decision_of(v).map(|d| d as usize))
            .collect();
        let (mut succ, mut pred) = (vec![Vec::new(); n], vec![Vec::new(); n]);
        for e in g.placed_edges() {
            succ[e.src as usize].push(e.dst as usize);
            pred[e.dst as usize].push(e.src as usize);
        }
        // A node's row is the union of its successors' rows and bits.
        let fill = |rows: &mut Vec<u64>, next: &[Vec<usize>], order: &mut dyn Iterator<Item = usize>| {
            for u in order {
                for &w in &next[u] {
                    for k in 0..words {
                        rows[u * words + k] |= rows[w * words + k];
                    }
                    rows[u * words + w / 64] |= 1 << (w % 64);
                }
            }
        };
        fill(&mut desc, &succ, &mut order.iter().rev().copied());
        fill(&mut anc, &pred, &mut order.iter().copied());
        Reach {
            order,
            words,
            desc,
            anc,
        }
    }

    /// Marks the nodes strictly between `u` and `v` in `set`.
    pub(super) fn mark_between(&self, u: usize, v: usize, set: &mut [bool]) {
        let w = self.words;
        let (du, av) = (&self.desc[u * w..(u + 1) * w], &self.anc[v * w..(v + 1) * w]);
        for (i, (a, b)) in du.iter().zip(av).enumerate() {
            let mut bits = a & b;
            while bits != 0 {
                set[i * 64 + bits.trailing_zeros() as usize] = true;
                bits &= bits - 1;
            }
        }
    }

    /// The flops and the count of the nodes strictly between `u` and `v`.
    pub(super) fn between(&self, u: usize, v: usize, flops: &[f64]) -> (f64, usize) {
        let w = self.words;
        let (du, av) = (&self.desc[u * w..(u + 1) * w], &self.anc[v * w..(v + 1) * w]);
        let (mut f, mut k) = (0.0, 0);
        for (i, (a, b)) in du.iter().zip(av).enumerate() {
            let mut bits = a & b;
            while bits != 0 {
                f += flops[i * 64 + bits.trailing_zeros() as usize];
                k += 1;
                bits &= bits - 1;
            }
        }
        (f, k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcm_core::graph::Node;

    fn node(id: &str, flops: u64, replicable: bool) -> Node {
        let mut n = Node::new(id);
        n.flops = flops;
        n.output_bytes = 1000;
        n.replicable = replicable;
        n
    }

    /// A diamond with a skip edge and a lone replicable node: the nodes
    /// between two are the descendants of one that are ancestors of the other.
    fn diamond() -> Graph {
        let nodes = vec![
            node("a", 1, false),
            node("b", 2, false),
            node("c", 4, false),
            node("d", 8, false),
            node("r", 100, true),
        ];
        Graph::new(
            "g",
            nodes,
            vec![(0, 1, None), (0, 2, None), (1, 3, None), (2, 3, None), (0, 3, None)],
        )
        .unwrap()
    }

    #[test]
    fn between_is_descendants_and_ancestors() {
        let g = diamond();
        let r = Reach::new(&g);
        let f = [1.0, 2.0, 4.0, 8.0];
        assert_eq!(r.between(0, 3, &f), (6.0, 2));
        assert_eq!(r.between(0, 1, &f), (0.0, 0));
        assert_eq!(r.between(1, 2, &f), (0.0, 0));
    }

    /// A replicable node no placed node consumes never runs, so it adds no
    /// flops to any bound.
    #[test]
    fn an_unused_replica_does_not_count() {
        let g = diamond();
        assert_eq!(running_flops(&g), vec![1.0, 2.0, 4.0, 8.0, 0.0]);
    }

    /// On two equal chips without links to pay: total 15 / 2, the largest
    /// node 8, the edge a -> d with b and c between 15 / 2 once confined
    /// (on one chip 15, split at least 7.5), and a -> d alone 9 / 2.
    #[test]
    fn the_bounds_of_a_diamond() {
        for k in [
            BoundKind::TotalCompute,
            BoundKind::LargestNode,
            BoundKind::EdgeSpan,
            BoundKind::Exact,
        ] {
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
        let g = diamond();
        let chips = Chips {
            compute: &[1.0, 1.0],
            pairs: None,
            shortest: None,
        };
        let latency = |confined: bool, k: BoundKind| {
            structural(&g, &chips, confined)
                .into_iter()
                .find(|b| b.kind == k)
                .unwrap()
                .latency_s
        };
        assert_eq!(latency(true, BoundKind::TotalCompute), 7.5);
        assert_eq!(latency(true, BoundKind::LargestNode), 8.0);
        assert_eq!(latency(true, BoundKind::EdgeSpan), 7.5);
        assert_eq!(latency(false, BoundKind::EdgeSpan), 6.0);
        let all = structural(&g, &chips, true);
        assert_eq!(proven(&all).unwrap().kind, BoundKind::LargestNode);
        // A link of bandwidth 100 between them: split, c -> d costs 10 of
        // link on c's chip, so (12 + 10) / 2 = 11 < 12 on one chip.
        let linked = Chips {
            compute: &[1.0, 1.0],
            pairs: Some(vec![(1.0, 1.0, 100.0)]),
            shortest: None,
        };
        let b = structural(&g, &linked, false);
        let span = b.iter().find(|b| b.kind == BoundKind::EdgeSpan).unwrap();
        assert_eq!(span.latency_s, 11.0);
        assert!(span.because.contains("`c` -> `d`"), "{span:?}");
    }

    /// With measured times the bounds count each node's shortest time on
    /// chips of rate 1, whatever the chips' flop rates: the diamond with
    /// times 3, 1, 2, 0.5 (and the unused replica's 50 not counted) on
    /// three chips.
    #[test]
    fn measured_times_bound_in_seconds() {
        let g = diamond();
        let chips = Chips {
            compute: &[1e9, 2e9, 4e9],
            pairs: Some(vec![(1e9, 2e9, 4.0), (2e9, 1e9, 8.0)]),
            shortest: Some(vec![3.0, 1.0, 2.0, 0.5, 50.0]),
        };
        let bounds = structural(&g, &chips, true);
        let get = |k: BoundKind| bounds.iter().find(|b| b.kind == k).unwrap();
        assert_eq!(get(BoundKind::TotalCompute).latency_s, 6.5 / 3.0);
        assert!(get(BoundKind::TotalCompute).because.contains("shortest op time"));
        assert_eq!(get(BoundKind::LargestNode).latency_s, 3.0);
        assert!(get(BoundKind::LargestNode).because.contains("`a`"));
        // a -> d confined with b and c: 6.5 on one chip; on two, the fastest
        // link a -> d carries 1000 B at 8 B/s: (6.5 + 125) / 2 > 6.5.
        assert_eq!(get(BoundKind::EdgeSpan).latency_s, 6.5);
    }
}
