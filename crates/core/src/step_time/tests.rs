//! The simulator against hand-computed steps, against a naive
//! implementation written straight from the spec on random small problems,
//! the schedule's invariants, the bounds against the exhaustive optimum, and
//! the timeline picture.

use super::bounds::{best, step_time_bounds, StepBoundKind};
use super::*;
use crate::graph::Node;
use crate::package::{Chip, Link};
use crate::quantity::{Dim, Scalar};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// Nodes as (id, flops, replicable); edges as (from, to, bytes).
fn graph(nodes: &[(&str, u64, bool)], edges: &[(usize, usize, u64)]) -> Graph {
    let nodes = nodes
        .iter()
        .map(|&(id, f, r)| {
            let mut n = Node::new(id);
            n.flops = f;
            n.replicable = r;
            n
        })
        .collect();
    Graph::new("g", nodes, edges.iter().map(|&(a, b, x)| (a, b, Some(x))).collect()).unwrap()
}

/// Chips as (compute, overhead); links as (from, to, bandwidth, latency).
fn package(chips: &[(f64, f64)], links: &[(u32, u32, f64, f64)]) -> Package {
    let chips = chips
        .iter()
        .enumerate()
        .map(|(i, &(c, o))| {
            let mut attrs = BTreeMap::new();
            attrs.insert("compute".into(), Scalar::Num(c, Dim::FLOP_RATE));
            if o != 0.0 {
                attrs.insert("overhead".into(), Scalar::Num(o, Dim::TIME));
            }
            Chip {
                name: format!("c{i}"),
                attrs,
            }
        })
        .collect();
    let links = links
        .iter()
        .map(|&(a, b, bw, lat)| {
            let mut attrs = BTreeMap::new();
            attrs.insert("bandwidth".into(), Scalar::Num(bw, Dim::RATE));
            if lat != 0.0 {
                attrs.insert("latency".into(), Scalar::Num(lat, Dim::TIME));
            }
            Link { src: a, dst: b, attrs }
        })
        .collect();
    Package::new("p", chips, links).unwrap()
}

fn model(g: Graph, p: Package) -> StepTimeModel {
    StepTimeModel::new(Arc::new(g), Arc::new(p)).unwrap()
}

/// Unit-speed chips joined both ways with one bandwidth.
fn line(n: u32, bw: f64) -> Package {
    let links: Vec<_> = (0..n - 1)
        .flat_map(|i| [(i, i + 1, bw, 0.0), (i + 1, i, bw, 0.0)])
        .collect();
    package(&vec![(1.0, 0.0); n as usize], &links)
}

/// (node id, chip, start, end) of every op, by start.
fn ops(m: &StepTimeModel, s: &Schedule) -> Vec<(String, u32, f64, f64)> {
    s.ops
        .iter()
        .map(|o| (m.graph.nodes[o.node as usize].id.clone(), o.chip, o.start_s, o.end_s))
        .collect()
}

fn op(id: &str, chip: u32, a: f64, b: f64) -> (String, u32, f64, f64) {
    (id.to_string(), chip, a, b)
}

/// (producer id, link src, link dst, start, end) of every transfer.
fn txs(m: &StepTimeModel, s: &Schedule) -> Vec<(String, u32, u32, f64, f64)> {
    s.transfers
        .iter()
        .map(|t| {
            let l = &m.package.links[t.link as usize];
            (m.graph.placed_node(t.node).id.clone(), l.src, l.dst, t.start_s, t.end_s)
        })
        .collect()
}

fn tx(id: &str, a: u32, b: u32, s: f64, e: f64) -> (String, u32, u32, f64, f64) {
    (id.to_string(), a, b, s, e)
}

/// Simulates, checks the fast path agrees and the invariants hold.
fn sim(m: &StepTimeModel, chips: &[u32]) -> Schedule {
    let s = m.simulate(chips).unwrap();
    assert_eq!(m.step_time(chips).unwrap().to_bits(), s.step_time_s.to_bits());
    invariants(m, chips, &s);
    s
}

#[test]
fn a_chain_on_one_chip_runs_back_to_back() {
    let m = model(
        graph(
            &[("a", 2, false), ("b", 3, false), ("c", 4, false)],
            &[(0, 1, 8), (1, 2, 8)],
        ),
        line(2, 1.0),
    );
    let s = sim(&m, &[0, 0, 0]);
    assert_eq!(s.step_time_s, 9.0);
    assert_eq!(
        ops(&m, &s),
        vec![op("a", 0, 0.0, 2.0), op("b", 0, 2.0, 5.0), op("c", 0, 5.0, 9.0)]
    );
    assert!(s.transfers.is_empty());
    assert_eq!(s.chip_busy_s, vec![9.0, 0.0]);
    assert_eq!(s.critical_path, vec![PathStep::Op(0), PathStep::Op(1), PathStep::Op(2)]);
}

#[test]
fn a_chain_across_chips_waits_for_latency_and_bytes() {
    // 10 bytes at 5 B/s after 1 s of latency: the transfer takes 3 s.
    let p = package(&[(1.0, 0.0), (1.0, 0.0)], &[(0, 1, 5.0, 1.0)]);
    let m = model(graph(&[("a", 2, false), ("b", 3, false)], &[(0, 1, 10)]), p);
    let s = sim(&m, &[0, 1]);
    assert_eq!(s.step_time_s, 8.0);
    assert_eq!(ops(&m, &s), vec![op("a", 0, 0.0, 2.0), op("b", 1, 5.0, 8.0)]);
    assert_eq!(txs(&m, &s), vec![tx("a", 0, 1, 2.0, 5.0)]);
    assert_eq!(s.link_busy_s, vec![3.0]);
    assert_eq!(s.last_transfer, Some(0));
    assert_eq!(
        s.critical_path,
        vec![PathStep::Op(0), PathStep::Transfer(0), PathStep::Op(1)]
    );
}

#[test]
fn fork_join_waits_for_the_later_branch() {
    let g = graph(
        &[("a", 1, false), ("b", 4, false), ("c", 2, false), ("d", 1, false)],
        &[(0, 1, 4), (0, 2, 4), (1, 3, 2), (2, 3, 2)],
    );
    let m = model(g, line(2, 2.0));
    let s = sim(&m, &[0, 0, 1, 0]);
    // b runs 1..5 on c0 while a's output crosses (1..3) and c runs 3..5;
    // c's output is back at 6, so d runs 6..7.
    assert_eq!(
        ops(&m, &s),
        vec![
            op("a", 0, 0.0, 1.0),
            op("b", 0, 1.0, 5.0),
            op("c", 1, 3.0, 5.0),
            op("d", 0, 6.0, 7.0)
        ]
    );
    assert_eq!(txs(&m, &s), vec![tx("a", 0, 1, 1.0, 3.0), tx("c", 1, 0, 5.0, 6.0)]);
    assert_eq!(s.step_time_s, 7.0);
    assert_eq!(
        s.critical_path,
        vec![
            PathStep::Op(0),
            PathStep::Transfer(0),
            PathStep::Op(2),
            PathStep::Transfer(1),
            PathStep::Op(3)
        ]
    );
}

#[test]
fn a_multicast_crosses_each_link_of_its_route_tree_once() {
    // a on c0 feeds b on c1 and c on c2 of the line c0 - c1 - c2: its
    // output (8 bytes, its largest edge off the chip) crosses c0 -> c1 once
    // and goes on to c2 from there.
    let g = graph(
        &[("a", 1, false), ("b", 1, false), ("c", 1, false)],
        &[(0, 1, 4), (0, 2, 8)],
    );
    let m = model(g, line(3, 4.0));
    let s = sim(&m, &[0, 1, 2]);
    assert_eq!(txs(&m, &s), vec![tx("a", 0, 1, 1.0, 3.0), tx("a", 1, 2, 3.0, 5.0)]);
    assert!(s.transfers.iter().all(|t| t.bytes == 8));
    assert_eq!(ops(&m, &s)[1..], [op("b", 1, 3.0, 4.0), op("c", 2, 5.0, 6.0)]);
    assert_eq!(s.step_time_s, 6.0);
}

#[test]
fn two_transfers_contend_for_one_link() {
    let g = graph(
        &[("a", 1, false), ("b", 1, false), ("c", 1, false), ("d", 1, false)],
        &[(0, 2, 10), (1, 3, 10)],
    );
    let m = model(g, line(2, 1.0));
    let s = sim(&m, &[0, 0, 1, 1]);
    // b's output is ready at 2 but the link carries a's until 11.
    assert_eq!(txs(&m, &s), vec![tx("a", 0, 1, 1.0, 11.0), tx("b", 0, 1, 11.0, 21.0)]);
    assert_eq!(s.step_time_s, 22.0);
    // d waited for b's transfer, which waited for the link, busy with a's.
    assert_eq!(
        s.critical_path,
        vec![
            PathStep::Op(0),
            PathStep::Transfer(0),
            PathStep::Transfer(1),
            PathStep::Op(3)
        ]
    );
}

#[test]
fn an_op_ready_first_runs_first_and_ties_go_to_the_node_list() {
    // Both ready at 0: the first in the node list runs first, though longer.
    let m = model(graph(&[("x", 3, false), ("y", 1, false)], &[]), line(1, 1.0));
    assert_eq!(
        ops(&m, &sim(&m, &[0, 0])),
        vec![op("x", 0, 0.0, 3.0), op("y", 0, 3.0, 4.0)]
    );
    let m = model(graph(&[("y", 1, false), ("x", 3, false)], &[]), line(1, 1.0));
    assert_eq!(
        ops(&m, &sim(&m, &[0, 0])),
        vec![op("y", 0, 0.0, 1.0), op("x", 0, 1.0, 4.0)]
    );
    // q becomes ready at 1, r at 0: r runs first though later in the list.
    let m = model(
        graph(&[("p", 1, false), ("q", 1, false), ("r", 5, false)], &[(0, 1, 1)]),
        line(1, 1.0),
    );
    assert_eq!(
        ops(&m, &sim(&m, &[0, 0, 0])),
        vec![op("p", 0, 0.0, 1.0), op("r", 0, 1.0, 6.0), op("q", 0, 6.0, 7.0)]
    );
}

#[test]
fn everything_at_an_instant_is_applied_before_a_chip_picks() {
    // At 1, l ends on c1 (m becomes ready) and a's output arrives there (b
    // becomes ready): b comes first in the node list, so it runs first,
    // though l's end is an op event and the arrival a transfer event.
    let g = graph(
        &[("a", 0, false), ("b", 1, false), ("m", 1, false), ("l", 1, false)],
        &[(0, 1, 1), (3, 2, 1)],
    );
    let m = model(g, line(2, 1.0));
    let s = sim(&m, &[0, 1, 1, 1]);
    assert_eq!(
        ops(&m, &s),
        vec![
            op("a", 0, 0.0, 0.0),
            op("l", 1, 0.0, 1.0),
            op("b", 1, 1.0, 2.0),
            op("m", 1, 2.0, 3.0)
        ]
    );
}

#[test]
fn transfers_able_at_once_go_in_node_list_order() {
    // c2 -> c0 -> c1: x's output (from c2) reaches c0 at 1, when y ends
    // there; both go on over c0 -> c1, y first as it comes first in the
    // list; swapping the list swaps them.
    let p = package(&[(1.0, 0.0); 3], &[(2, 0, 1.0, 0.0), (0, 1, 1.0, 0.0)]);
    let names = |first: &str, second: &str| -> Vec<(String, u64, bool)> {
        vec![(first.into(), 0, false), (second.into(), 0, false)]
    };
    for (order, expect_first) in [(["y", "x"], "y"), (["x", "y"], "x")] {
        let ns = names(order[0], order[1]);
        let mut nodes: Vec<(&str, u64, bool)> = ns.iter().map(|(a, b, c)| (a.as_str(), *b, *c)).collect();
        // y takes 1 s on c0; x nothing on c2.
        for n in &mut nodes {
            if n.0 == "y" {
                n.1 = 1;
            }
        }
        nodes.push(("sx", 0, false));
        nodes.push(("sy", 0, false));
        let (ix, iy) = if order[0] == "x" { (0, 1) } else { (1, 0) };
        let g = graph(&nodes, &[(ix, 2, 1), (iy, 3, 2)]);
        let m = model(g, p.clone());
        let mut chips = vec![0u32; 4];
        chips[ix] = 2;
        chips[iy] = 0;
        chips[2] = 1;
        chips[3] = 1;
        let s = sim(&m, &chips);
        let over01: Vec<_> = txs(&m, &s).into_iter().filter(|t| (t.1, t.2) == (0, 1)).collect();
        assert_eq!(over01[0].0, expect_first);
        assert_eq!(over01[0].3, 1.0);
        let second = if expect_first == "y" { 3.0 } else { 2.0 };
        assert_eq!(over01[1].3, second, "{over01:?}");
    }
}

#[test]
fn zero_time_ops_end_when_they_start() {
    // At 0, c (second in the list) and z are ready; c goes first: z is
    // later in the list. z takes no time, so at 1 it starts and ends and b
    // starts at that same instant.
    let g = graph(&[("b", 1, false), ("c", 1, false), ("z", 0, false)], &[(2, 0, 1)]);
    let m = model(g, line(1, 1.0));
    let s = sim(&m, &[0, 0, 0]);
    assert_eq!(
        ops(&m, &s),
        vec![op("c", 0, 0.0, 1.0), op("z", 0, 1.0, 1.0), op("b", 0, 1.0, 2.0)]
    );
    // z first in the list: it runs at 0, ends at 0, and b, ready at 0,
    // goes before c.
    let g = graph(&[("z", 0, false), ("b", 1, false), ("c", 1, false)], &[(0, 1, 1)]);
    let m = model(g, line(1, 1.0));
    let s = sim(&m, &[0, 0, 0]);
    assert_eq!(
        ops(&m, &s),
        vec![op("z", 0, 0.0, 0.0), op("b", 0, 0.0, 1.0), op("c", 0, 1.0, 2.0)]
    );
    // Nothing but zero-time ops: a step of zero.
    let m = model(graph(&[("a", 0, false), ("b", 0, false)], &[(0, 1, 0)]), line(2, 1.0));
    assert_eq!(m.step_time(&[0, 1]).unwrap(), 0.0);
}

#[test]
fn overhead_is_added_to_every_op() {
    let p = package(&[(2.0, 0.5)], &[]);
    let m = model(graph(&[("a", 2, false), ("b", 4, false)], &[(0, 1, 1)]), p);
    let s = sim(&m, &[0, 0]);
    assert_eq!(ops(&m, &s), vec![op("a", 0, 0.0, 1.5), op("b", 0, 1.5, 4.0)]);
}

#[test]
fn replicable_nodes_run_next_to_their_consumers() {
    // w feeds a (c0) and b (c1); r1 -> r2 -> b only, so r1 and r2 run on
    // c1 alone. a's output reaches c1 at 4, when r2's copy ends there.
    let g = graph(
        &[
            ("w", 2, true),
            ("r1", 1, true),
            ("r2", 1, true),
            ("a", 1, false),
            ("b", 1, false),
            ("idle", 5, true),
        ],
        &[(0, 3, 9), (0, 4, 9), (1, 2, 9), (2, 4, 9), (3, 4, 1)],
    );
    let m = model(g, line(2, 1.0));
    let s = sim(&m, &[0, 1]);
    assert_eq!(
        ops(&m, &s),
        vec![
            op("w", 0, 0.0, 2.0),
            op("w", 1, 0.0, 2.0),
            op("a", 0, 2.0, 3.0),
            op("r1", 1, 2.0, 3.0),
            op("r2", 1, 3.0, 4.0),
            op("b", 1, 4.0, 5.0)
        ]
    );
    assert!(s.ops.iter().filter(|o| o.node == 0).all(|o| o.of == OpOf::Replica(0)));
    // Replicable nodes send nothing: only a's output crosses.
    assert_eq!(txs(&m, &s), vec![tx("a", 0, 1, 3.0, 4.0)]);
    assert_eq!(s.step_time_s, 5.0);
}

#[test]
fn errors_name_the_cause() {
    let p = package(&[(1.0, 0.0), (1.0, 0.0)], &[(0, 1, 1.0, 0.0)]);
    let m = model(graph(&[("a", 1, false), ("b", 1, false)], &[(0, 1, 1)]), p);
    let e = m.step_time(&[1, 0]).unwrap_err();
    assert!(e.contains("`a`") && e.contains("`c1`") && e.contains("no route"), "{e}");
    assert!(m.simulate(&[1, 0]).is_err());
    // The model is still usable after a refused partition.
    assert_eq!(m.step_time(&[0, 1]).unwrap(), 3.0);
    assert!(m.step_time(&[0]).unwrap_err().contains("2"));
    assert!(m.step_time(&[0, 2]).unwrap_err().contains("chip 2"));
    let bad = package(&[(1.0, 0.0), (1.0, 0.0)], &[(0, 1, 1.0, -1.0)]);
    let e = StepTimeModel::new(Arc::new(graph(&[("a", 1, false)], &[])), Arc::new(bad)).unwrap_err();
    assert!(e.message.contains("latency"), "{}", e.message);
    let none = Package::new("p", Vec::new(), Vec::new()).unwrap();
    assert!(StepTimeModel::new(Arc::new(graph(&[("a", 1, false)], &[])), Arc::new(none)).is_err());
}

/// No two ops overlap on a chip, no two transfers on a link, every op
/// starts after its inputs are on its chip, the critical path is a chain
/// of waits from 0 to the step time, and the busy times add up.
fn invariants(m: &StepTimeModel, chips: &[u32], s: &Schedule) {
    let g = &m.graph;
    let mut by_chip: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
    for o in &s.ops {
        assert!(o.end_s >= o.start_s);
        by_chip.entry(o.chip).or_default().push((o.start_s, o.end_s));
    }
    let mut by_link: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
    for t in &s.transfers {
        by_link.entry(t.link).or_default().push((t.start_s, t.end_s));
    }
    for spans in by_chip.values_mut().chain(by_link.values_mut()) {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0, "overlap {w:?}");
        }
    }
    // When each node's output is on each chip.
    let mut on: BTreeMap<(usize, u32), f64> = BTreeMap::new();
    for o in &s.ops {
        on.insert((o.node as usize, o.chip), o.end_s);
    }
    // Down each route tree from its root (a zero-time transfer may start
    // at the instant it arrives, so start order alone does not say).
    let mut left: Vec<&TransferRun> = s.transfers.iter().collect();
    while !left.is_empty() {
        let before = left.len();
        left.retain(|t| {
            let l = &m.package.links[t.link as usize];
            let v = g.placed_nodes()[t.node as usize];
            let Some(&at) = on.get(&(v, l.src)) else { return true };
            assert!(at <= t.start_s);
            on.insert((v, l.dst), t.end_s);
            false
        });
        assert!(
            left.len() < before,
            "transfers of data never on their link's chip: {left:?}"
        );
    }
    for o in &s.ops {
        for e in g.edges.iter().filter(|e| e.dst == o.node as usize) {
            let at = on.get(&(e.src, o.chip)).copied();
            assert!(
                at.is_some_and(|x| x <= o.start_s),
                "{} on {}",
                g.nodes[o.node as usize].id,
                o.chip
            );
        }
        if let OpOf::Placed(d) = o.of {
            assert_eq!(chips[d as usize], o.chip);
        }
    }
    assert_eq!(
        s.ops.iter().filter(|o| matches!(o.of, OpOf::Placed(_))).count(),
        chips.len()
    );
    let end = s.ops.iter().map(|o| o.end_s).fold(0.0, f64::max);
    assert_eq!(end, s.step_time_s);
    for w in s.ops.windows(2) {
        assert!((w[0].start_s, w[0].chip) <= (w[1].start_s, w[1].chip));
    }
    for (c, &b) in s.chip_busy_s.iter().enumerate() {
        let sum: f64 = s
            .ops
            .iter()
            .filter(|o| o.chip as usize == c)
            .map(|o| o.end_s - o.start_s)
            .sum();
        assert!((b - sum).abs() <= 1e-9 * (1.0 + b), "{b} {sum}");
    }
    let span = |p: &PathStep| match *p {
        PathStep::Op(i) => (s.ops[i].start_s, s.ops[i].end_s),
        PathStep::Transfer(i) => (s.transfers[i].start_s, s.transfers[i].end_s),
    };
    if let Some(last) = s.last_op {
        assert_eq!(s.ops[last].end_s, s.step_time_s);
        assert_eq!(s.critical_path.last(), Some(&PathStep::Op(last)));
        assert_eq!(span(&s.critical_path[0]).0, 0.0);
        for w in s.critical_path.windows(2) {
            assert_eq!(span(&w[0]).1, span(&w[1]).0, "{:?}", s.critical_path);
        }
    }
}

// ---------------------------------------------------------------------
// The naive simulator: the spec read literally, sharing no code with the
// model but the package's routes (`Package::route`, the next-hop rule).

#[derive(Debug, PartialEq)]
struct Naive {
    step: f64,
    /// (graph node, chip, start, end), sorted.
    ops: Vec<(usize, u32, f64, f64)>,
    /// (placed node, link, start, end), sorted.
    txs: Vec<(u32, usize, f64, f64)>,
}

fn naive(g: &Graph, p: &Package, chips: &[u32]) -> Result<Naive, ()> {
    let n = g.nodes.len();
    let nc = p.num_chips() as u32;
    let chip_of = |v: usize| g.decision_of(v).map(|d| chips[d as usize]);
    let mut inputs: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut outputs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for e in &g.edges {
        if !inputs[e.dst].contains(&e.src) {
            inputs[e.dst].push(e.src);
            outputs[e.src].push(e.dst);
        }
    }
    // Hosts: a placed node's chip; a replicable node runs on every chip
    // hosting one of its consumers or a consumer's copy (to a fixpoint).
    let mut hosts: Vec<Vec<u32>> = (0..n).map(|v| chip_of(v).into_iter().collect()).collect();
    loop {
        let mut changed = false;
        for v in 0..n {
            if chip_of(v).is_some() {
                continue;
            }
            for &w in &outputs[v].clone() {
                for c in hosts[w].clone() {
                    if !hosts[v].contains(&c) {
                        hosts[v].push(c);
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    // Ops: (node, chip); transfers: (placed node, link, bytes).
    let mut ops: Vec<(usize, u32)> = Vec::new();
    for (v, h) in hosts.iter().enumerate() {
        for &c in h {
            ops.push((v, c));
        }
    }
    let mut txs: Vec<(usize, usize, u64)> = Vec::new();
    for v in 0..n {
        let Some(a) = chip_of(v) else { continue };
        let mut size = 0;
        let mut links: Vec<usize> = Vec::new();
        for e in g.edges.iter().filter(|e| e.src == v) {
            let Some(b) = chip_of(e.dst) else { continue };
            if b == a {
                continue;
            }
            size = size.max(e.bytes);
            for l in p.route(a, b).ok_or(())? {
                if !links.contains(&l) {
                    links.push(l);
                }
            }
        }
        for l in links {
            txs.push((v, l, size));
        }
    }
    // State: when each output is on each chip (once applied); what runs.
    let mut avail: BTreeMap<(usize, u32), f64> = BTreeMap::new();
    let mut op_run: Vec<Option<(f64, f64)>> = vec![None; ops.len()];
    let mut op_done = vec![false; ops.len()];
    let mut tx_run: Vec<Option<(f64, f64)>> = vec![None; txs.len()];
    let mut tx_done = vec![false; txs.len()];
    let nlinks = p.links.len();
    let mut t = 0.0f64;
    loop {
        loop {
            // Picks at t, by every idle chip and link.
            for c in 0..nc {
                let busy = (0..ops.len()).any(|i| ops[i].1 == c && op_run[i].is_some() && !op_done[i]);
                if busy {
                    continue;
                }
                let mut best: Option<(f64, usize, usize)> = None;
                for i in 0..ops.len() {
                    let (v, oc) = ops[i];
                    if oc != c || op_run[i].is_some() {
                        continue;
                    }
                    let mut ready = 0.0f64;
                    let mut all = true;
                    for &u in &inputs[v] {
                        match avail.get(&(u, c)) {
                            Some(&x) => ready = ready.max(x),
                            None => all = false,
                        }
                    }
                    if all && best.is_none_or(|b| (ready, v) < (b.0, b.1)) {
                        best = Some((ready, v, i));
                    }
                }
                if let Some((_, v, i)) = best {
                    let d = g.nodes[v].flops as f64 / p.chip_compute(c).unwrap()
                        + p.chip_number(c, "overhead").unwrap_or(0.0);
                    op_run[i] = Some((t, t + d));
                }
            }
            for l in 0..nlinks {
                let busy = (0..txs.len()).any(|i| txs[i].1 == l && tx_run[i].is_some() && !tx_done[i]);
                if busy {
                    continue;
                }
                let src = p.links[l].src;
                let mut best: Option<(f64, usize, usize)> = None;
                for i in 0..txs.len() {
                    let (v, tl, _) = txs[i];
                    if tl != l || tx_run[i].is_some() {
                        continue;
                    }
                    if let Some(&able) = avail.get(&(v, src)) {
                        if best.is_none_or(|b| (able, v) < (b.0, b.1)) {
                            best = Some((able, v, i));
                        }
                    }
                }
                if let Some((_, _, i)) = best {
                    let size = txs[i].2;
                    let d = p.link_latency(l).unwrap_or(0.0) + size as f64 / p.link_bandwidth(l).unwrap();
                    tx_run[i] = Some((t, t + d));
                }
            }
            // What ends at t (zero-time work started just now included) is
            // applied, then the idle ones pick again.
            let mut applied = false;
            for i in 0..ops.len() {
                if let Some((_, e)) = op_run[i] {
                    if !op_done[i] && e == t {
                        op_done[i] = true;
                        avail.insert(ops[i], t);
                        applied = true;
                    }
                }
            }
            for i in 0..txs.len() {
                if let Some((_, e)) = tx_run[i] {
                    if !tx_done[i] && e == t {
                        tx_done[i] = true;
                        avail.insert((txs[i].0, p.links[txs[i].1].dst), t);
                        applied = true;
                    }
                }
            }
            if !applied {
                break;
            }
        }
        let next = (0..ops.len())
            .filter(|&i| !op_done[i])
            .filter_map(|i| op_run[i].map(|r| r.1))
            .chain(
                (0..txs.len())
                    .filter(|&i| !tx_done[i])
                    .filter_map(|i| tx_run[i].map(|r| r.1)),
            )
            .fold(f64::INFINITY, f64::min);
        if next == f64::INFINITY {
            break;
        }
        t = next;
        // Apply what ends at t, then loop to the picks.
        for i in 0..ops.len() {
            if let Some((_, e)) = op_run[i] {
                if !op_done[i] && e == t {
                    op_done[i] = true;
                    avail.insert(ops[i], t);
                }
            }
        }
        for i in 0..txs.len() {
            if let Some((_, e)) = tx_run[i] {
                if !tx_done[i] && e == t {
                    tx_done[i] = true;
                    avail.insert((txs[i].0, p.links[txs[i].1].dst), t);
                }
            }
        }
    }
    assert!(op_done.iter().all(|&d| d));
    let mut out_ops: Vec<_> = ops
        .iter()
        .zip(&op_run)
        .map(|(&(v, c), r)| (v, c, r.unwrap().0, r.unwrap().1))
        .collect();
    out_ops.sort_by_key(|a| (a.0, a.1));
    let mut out_txs: Vec<_> = txs
        .iter()
        .zip(&tx_run)
        .map(|(&(v, l, _), r)| (g.decision_of(v).unwrap(), l, r.unwrap().0, r.unwrap().1))
        .collect();
    out_txs.sort_by_key(|a| (a.0, a.1));
    let step = out_ops.iter().map(|o| o.3).fold(0.0, f64::max);
    Ok(Naive {
        step,
        ops: out_ops,
        txs: out_txs,
    })
}

/// A random small graph: nodes may be replicable when all their inputs
/// are; flops, bytes and rates from small sets so that ties are common.
fn random_graph(rng: &mut impl Rng, max_nodes: usize) -> Graph {
    let n = rng.random_range(1..=max_nodes);
    let mut edges = Vec::new();
    for j in 0..n {
        for i in 0..j {
            if rng.random_bool(0.35) {
                edges.push((i, j, [0u64, 1, 2, 4, 8][rng.random_range(0..5)]));
            }
        }
    }
    let mut repl = vec![false; n];
    for j in 0..n {
        let inputs_replicable = edges.iter().filter(|e| e.1 == j).all(|e| repl[e.0]);
        repl[j] = inputs_replicable && rng.random_bool(0.25);
    }
    let names: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
    let nodes: Vec<(&str, u64, bool)> = (0..n)
        .map(|i| (names[i].as_str(), [0u64, 1, 2, 3, 4][rng.random_range(0..5)], repl[i]))
        .collect();
    // Sometimes a parallel edge.
    if let Some(&(a, b, _)) = edges.first() {
        if rng.random_bool(0.2) {
            edges.push((a, b, 3));
        }
    }
    graph(&nodes, &edges)
}

fn random_package(rng: &mut impl Rng, max_chips: u32) -> Package {
    let c = rng.random_range(1..=max_chips);
    let chips: Vec<(f64, f64)> = (0..c)
        .map(|_| {
            (
                [1.0, 2.0][rng.random_range(0..2)],
                [0.0, 0.0, 0.5][rng.random_range(0..3)],
            )
        })
        .collect();
    let mut links = Vec::new();
    for a in 0..c {
        for b in 0..c {
            if a != b && rng.random_bool(0.55) {
                links.push((
                    a,
                    b,
                    [1.0, 2.0, 4.0][rng.random_range(0..3)],
                    [0.0, 0.0, 1.0][rng.random_range(0..3)],
                ));
            }
        }
    }
    package(&chips, &links)
}

#[test]
fn the_simulator_agrees_with_a_naive_one_on_random_problems() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(33);
    let (mut compared, mut refused) = (0, 0);
    for case in 0..600 {
        let g = random_graph(&mut rng, 8);
        let p = random_package(&mut rng, 4);
        let c = p.num_chips() as u32;
        let m = model(g.clone(), p.clone());
        for a in 0..c {
            for b in 0..c {
                let ours = m.route(a, b);
                assert_eq!(ours, p.route(a, b), "route {a} -> {b}");
            }
        }
        for _ in 0..3 {
            let chips: Vec<u32> = (0..g.num_placed()).map(|_| rng.random_range(0..c)).collect();
            let want = naive(&g, &p, &chips);
            let got = m.simulate(&chips);
            let (Ok(want), Ok(got)) = (want, got.as_ref()) else {
                assert!(
                    got.is_err(),
                    "case {case}: the model refused nothing, the naive one {chips:?}"
                );
                refused += 1;
                continue;
            };
            invariants(&m, &chips, got);
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
            assert!(
                close(got.step_time_s, want.step),
                "case {case} {chips:?}: {} vs {}",
                got.step_time_s,
                want.step
            );
            assert_eq!(m.step_time(&chips).unwrap().to_bits(), got.step_time_s.to_bits());
            let mut ops: Vec<_> = got
                .ops
                .iter()
                .map(|o| (o.node as usize, o.chip, o.start_s, o.end_s))
                .collect();
            ops.sort_by_key(|a| (a.0, a.1));
            assert_eq!(ops, want.ops, "case {case} {chips:?}");
            let mut txs: Vec<_> = got
                .transfers
                .iter()
                .map(|t| (t.node, t.link as usize, t.start_s, t.end_s))
                .collect();
            txs.sort_by_key(|a| (a.0, a.1));
            assert_eq!(txs, want.txs, "case {case} {chips:?}");
            compared += 1;
        }
    }
    // Both outcomes were exercised.
    assert!(
        compared > 1000 && refused > 20,
        "{compared} compared, {refused} refused"
    );
}

/// Every partition onto `c` chips within `allowed` (a list per placed node).
fn partitions(c: u32, allowed: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new()];
    for a in allowed {
        let mut next = Vec::new();
        for p in &out {
            for x in 0..c {
                if a.contains(&x) {
                    let mut q = p.clone();
                    q.push(x);
                    next.push(q);
                }
            }
        }
        out = next;
    }
    out
}

#[test]
fn every_bound_is_below_the_exhaustive_optimum() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut tight = 0;
    for case in 0..150 {
        let g = random_graph(&mut rng, 7);
        let p = random_package(&mut rng, 3);
        let c = p.num_chips() as u32;
        let m = model(g.clone(), p);
        let n = g.num_placed();
        // Half the cases with rules confining nodes to some chips.
        let confined = case % 2 == 1;
        let allowed: Vec<Vec<u32>> = (0..n)
            .map(|_| {
                let mut a: Vec<u32> = (0..c).filter(|_| !confined || rng.random_bool(0.5)).collect();
                if a.is_empty() {
                    a.push(rng.random_range(0..c));
                }
                a
            })
            .collect();
        let best_step = partitions(c, &allowed)
            .iter()
            .filter_map(|ch| m.step_time(ch).ok())
            .fold(f64::INFINITY, f64::min);
        if best_step == f64::INFINITY {
            continue;
        }
        let bounds = step_time_bounds(&m, confined.then_some(&allowed[..]));
        assert!(bounds.iter().any(|b| b.kind == StepBoundKind::CriticalPath));
        assert!(bounds.iter().any(|b| b.kind == StepBoundKind::TotalWork));
        for b in &bounds {
            assert!(
                b.step_time_s <= best_step * (1.0 + 1e-12),
                "case {case}: {b:?} above the optimum {best_step}"
            );
        }
        if best(&bounds).is_some_and(|b| b.step_time_s == best_step) {
            tight += 1;
        }
    }
    // The bounds are not vacuous: they meet the optimum often.
    assert!(tight > 20, "{tight}");
}

#[test]
fn bounds_on_a_hand_computed_case() {
    // A chain a(2) -> b(4) and a lone c(6) on two chips of speeds 1 and 2.
    let g = graph(&[("a", 2, false), ("b", 4, false), ("c", 6, false)], &[(0, 1, 1)]);
    let p = package(&[(1.0, 0.0), (2.0, 0.0)], &[(0, 1, 1.0, 0.0), (1, 0, 1.0, 0.0)]);
    let m = model(g, p);
    let b = step_time_bounds(&m, None);
    let get = |k| b.iter().find(|x| x.kind == k).unwrap().step_time_s;
    // Path: 1 + 2 on the fast chip; c alone is 3.
    assert_eq!(get(StepBoundKind::CriticalPath), 3.0);
    // 12 flops over 3 FLOP/s beats (1 + 2 + 3) / 2.
    assert_eq!(get(StepBoundKind::TotalWork), 4.0);
    // c confined to the slow chip: 6 s there.
    let allowed = vec![vec![0, 1], vec![0, 1], vec![0]];
    let b = step_time_bounds(&m, Some(&allowed));
    let pinned = b.iter().find(|x| x.kind == StepBoundKind::Pinned).unwrap();
    assert_eq!(pinned.step_time_s, 6.0);
    assert!(pinned.because.contains("`c`") && pinned.because.contains("`c0`"));
    // The path through c, now confined to the slow chip, is as long.
    assert_eq!(best(&b).unwrap().step_time_s, 6.0);
}

#[test]
fn the_timeline_has_a_bar_per_op_and_marks_the_critical_path() {
    let g = graph(
        &[
            ("a", 1, false),
            ("b", 4, false),
            ("c", 2, false),
            ("d", 1, false),
            ("w", 1, true),
        ],
        &[(0, 1, 4), (0, 2, 4), (1, 3, 2), (2, 3, 2), (4, 2, 1)],
    );
    let m = model(g, line(3, 2.0));
    let s = m.simulate(&[0, 0, 1, 0]).unwrap();
    let svg = timeline_svg(&s, &m.graph, &m.package);
    // Well-formed: every opened tag closed, in order.
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg.as_str();
    while let Some(i) = rest.find('<') {
        let j = rest[i..].find('>').expect("an unclosed tag") + i;
        let tag = &rest[i + 1..j];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "{svg}");
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap().to_string());
        }
        rest = &rest[j + 1..];
    }
    assert!(stack.is_empty(), "{stack:?}");
    let count = |pat: &str| svg.matches(pat).count();
    assert_eq!(count(r#"<rect class="op"#), s.ops.len());
    assert_eq!(count(r#"<rect class="transfer"#), s.transfers.len());
    assert_eq!(count(" critical\""), s.critical_path.len());
    // A row per chip, and one per link that carries something (two here).
    assert!(svg.contains(">c2<") && svg.contains(">c0 -&gt; c1<") && !svg.contains(">c1 -&gt; c2<"));
    assert!(svg.contains("<title>w (copy) on c1"));
    assert!(svg.contains("step time 7 s"), "{svg}");
}
