//! The analytical cost model and the dynamic check on hand-computed cases.

use crate::common;

use mcm_core::graph::{Graph, Node};
use mcm_core::problem::Problem;
use mcm_search::cost::{Analytical, CostModel, Evaluate, Verdict};
use std::sync::Arc;

const TOL: f64 = 1e-12;

fn problem(package: &str, graph: &str) -> Problem {
    let text = format!(
        "use std::topologies::{{ring, mesh}}\nlet t = {package}\nlet g = {graph}\npartition g onto t {{\n    maximize throughput\n}}\n"
    );
    let c = common::compile(&text);
    assert!(c.ok(), "{}", mcm_core::diag::render_text(&c.program.sources, &c.diags));
    c.problem(None).unwrap().clone()
}

fn chips(p: &Problem, placement: &[(&str, u32)]) -> Vec<u32> {
    let mut v = vec![u32::MAX; p.graph.num_placed()];
    for (id, c) in placement {
        let n = p.graph.node_index(id).unwrap();
        v[p.graph.decision_of(n).unwrap() as usize] = *c;
    }
    assert!(v.iter().all(|&c| c != u32::MAX), "every node placed");
    v
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= TOL * b.abs().max(1e-9), "{a} != {b}");
}

const RING3: &str = "ring(n = 3, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)";
const MESH2: &str = "mesh(rows = 2, cols = 2, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)";

#[test]
fn a_pipeline_on_a_ring() {
    // 1, 2 and 1 GFLOP at 1 TFLOP/s: 1, 2, 1 ms; 1 MB over 1 GB/s: 1 ms a link.
    let p = problem(
        RING3,
        "graph { a { flops = 1 GFLOP, output_bytes = 1 MB } -> b { flops = 2 GFLOP, output_bytes = 1 MB } -> c { flops = 1 GFLOP } }",
    );
    let m = CostModel::new(&p).unwrap();
    let r = m.report(&chips(&p, &[("a", 0), ("b", 1), ("c", 2)])).unwrap();
    let stage: Vec<f64> = r.chips.iter().map(|c| c.stage_s).collect();
    close(stage[0], 2e-3);
    close(stage[1], 3e-3);
    close(stage[2], 1e-3);
    close(r.chips[1].compute_s, 2e-3);
    close(r.chips[1].link_s, 1e-3);
    close(r.latency_s, 3e-3);
    close(r.throughput, 1.0 / 3e-3);
    assert_eq!(r.bottleneck, 1);
    // 4 GFLOP over 3 TFLOP/s, but `b` alone takes 2 ms, and so does a -> b
    // (3 ms on one chip; split, `a`'s chip also sends 1 ms: (3 + 1) / 2).
    close(m.bounds()[0].latency_s, 4e9 / 3e12);
    close(r.bound_latency_s, 2e-3);
    close(r.bound.latency_s, 2e-3);
    // Everything on one chip: no transfers, 4 ms.
    close(m.latency(&chips(&p, &[("a", 0), ("b", 0), ("c", 0)])).unwrap(), 4e-3);
}

#[test]
fn two_hop_routes_on_a_mesh_take_the_lowest_next_chip() {
    // tile 0 -> tile 3 has two shortest routes, through 1 and through 2:
    // the tie goes to the lower id, 1.
    let p = problem(
        MESH2,
        "graph { a { flops = 1 GFLOP, output_bytes = 2 MB } -> b { flops = 1 GFLOP } }",
    );
    let m = CostModel::new(&p).unwrap();
    let r = m.report(&chips(&p, &[("a", 0), ("b", 3)])).unwrap();
    close(r.chips[0].link_s, 2e-3);
    close(r.chips[1].link_s, 2e-3);
    close(r.chips[2].link_s, 0.0);
    close(r.chips[3].link_s, 0.0);
    close(r.chips[0].stage_s, 3e-3);
    close(r.chips[1].stage_s, 2e-3);
    close(r.latency_s, 3e-3);
    assert_eq!(p.package.route(0, 3).unwrap().len(), 2);
    assert_eq!(p.package.next_hop(0, 3), Some(1));
    assert_eq!(p.package.next_hop(3, 0), Some(1));
}

#[test]
fn a_tensor_sent_to_two_chips_crosses_a_shared_link_once() {
    // a on 0 feeds b on 1 and c on 2; the route to 2 runs through 1, so the
    // link 0 -> 1 carries a's output once, not twice.
    let p = problem(
        RING3,
        "graph { a { flops = 1 GFLOP, output_bytes = 1 MB } -> b { flops = 1 GFLOP }  a -> c { flops = 1 GFLOP } }",
    );
    let m = CostModel::new(&p).unwrap();
    let r = m.report(&chips(&p, &[("a", 0), ("b", 1), ("c", 2)])).unwrap();
    close(r.chips[0].link_s, 1e-3);
    close(r.chips[1].link_s, 1e-3);
    close(r.chips[2].link_s, 0.0);
    close(r.latency_s, 2e-3);
}

#[test]
fn a_tensor_is_sent_at_the_size_of_its_largest_edge_that_leaves_the_chip() {
    let p = problem(RING3, "graph { a -> b  a -> c  a -> d }");
    // The same shape, with edge sizes: a -> b (same chip) 8 MB, a -> c 1 MB,
    // a -> d 3 MB; both c and d sit on chip 1.
    let nodes = ["a", "b", "c", "d"].iter().map(|id| Node::new(*id)).collect();
    let g = Graph::new(
        "sizes",
        nodes,
        vec![
            (0, 1, Some(8_000_000)),
            (0, 2, Some(1_000_000)),
            (0, 3, Some(3_000_000)),
        ],
    )
    .unwrap();
    let mut p = p;
    p.graph = Arc::new(g);
    let m = CostModel::new(&p).unwrap();
    let r = m.report(&[0, 0, 1, 1]).unwrap();
    close(r.chips[0].link_s, 3e-3);
    close(r.latency_s, 3e-3);
}

#[test]
fn an_empty_chip_costs_nothing_and_still_counts_in_the_bound() {
    let p = problem(
        RING3,
        "graph { a { flops = 3 GFLOP, output_bytes = 1 MB } -> b { flops = 3 GFLOP } }",
    );
    let m = CostModel::new(&p).unwrap();
    let r = m.report(&chips(&p, &[("a", 0), ("b", 1)])).unwrap();
    let empty = &r.chips[2];
    assert_eq!(empty.nodes, 0);
    close(empty.stage_s, 0.0);
    assert_eq!(empty.weight_bytes, 0);
    assert_eq!(empty.peak_bytes, 0);
    close(r.latency_s, 4e-3);
    close(m.bounds()[0].latency_s, 6e9 / 3e12);
    // a -> b: 6 ms on one chip, (6 + 1) / 2 ms split.
    close(r.bound_latency_s, 3.5e-3);
}

#[test]
fn replicable_copies_compute_on_every_chip_that_uses_them() {
    let p = problem(
        RING3,
        "graph { a { flops = 1 GFLOP, output_bytes = 1 MB } -> b { flops = 1 GFLOP }  a -> c }",
    );
    // Not replicable, a on 0 sends its megabyte to c on 2.
    let moved = CostModel::new(&p).unwrap().report(&[0, 0, 2]).unwrap();
    assert!(moved.chips.iter().map(|c| c.link_s).sum::<f64>() > 0.0);
    let mut nodes: Vec<Node> = p.graph.nodes.clone();
    nodes[0].replicable = true;
    let g = Graph::new("rep", nodes, vec![(0, 1, None), (0, 2, None)]).unwrap();
    let mut p = p;
    p.graph = Arc::new(g);
    let m = CostModel::new(&p).unwrap();
    // b on 0, c on 2: a is copied to both and moves no data.
    let r = m.report(&[0, 2]).unwrap();
    close(r.chips[0].compute_s, 2e-3);
    close(r.chips[2].compute_s, 1e-3);
    for c in &r.chips {
        close(c.link_s, 0.0);
    }
}

#[test]
fn routes_that_do_not_exist_make_the_partition_invalid() {
    let p = problem(RING3, "graph { a { output_bytes = 1 MB } -> b }");
    let a = Analytical::new(&p).unwrap();
    match a.evaluate(&chips(&p, &[("a", 2), ("b", 0)])) {
        Verdict::Invalid { reason } => assert!(reason.contains("no route"), "{reason}"),
        v => panic!("expected invalid, got {v:?}"),
    }
}

#[test]
fn the_dynamic_check_names_the_chip_and_the_node() {
    // Weights 60 MB on chip 0; b's input (40 MB) and output (40 MB) are live
    // together while b runs: 140 MB > 128 MiB at b; one chip more is fine.
    let pkg = "ring(n = 2, memory = 128 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)";
    let p = problem(
        pkg,
        "graph { w { params = 60 MB, output_bytes = 60 MB } -> a { flops = 1 GFLOP, output_bytes = 40 MB } -> b { flops = 1 GFLOP, output_bytes = 40 MB } -> c { flops = 1 GFLOP } }",
    );
    let a = Analytical::new(&p).unwrap();
    match a.evaluate(&chips(&p, &[("w", 0), ("a", 0), ("b", 0), ("c", 0)])) {
        Verdict::Invalid { reason } => {
            assert!(reason.contains("chip `die[0]`"), "{reason}");
            assert!(reason.contains("at node `b`"), "{reason}");
        }
        v => panic!("expected invalid, got {v:?}"),
    }
    // c on chip 1 receives b's output: chip 0 still holds a's and b's.
    assert!(a
        .evaluate(&chips(&p, &[("w", 0), ("a", 0), ("b", 1), ("c", 1)]))
        .throughput()
        .is_some());
    let peak = a
        .model
        .peak_memory(&chips(&p, &[("w", 0), ("a", 0), ("b", 1), ("c", 1)]))
        .unwrap();
    // chip 0: 60 MB weights (w's output is its weights) + a's 40 MB.
    assert_eq!(peak.weights[0], 60_000_000);
    assert_eq!(peak.peak[0], 100_000_000);
    // chip 1: b's input (40 MB, received) and output (40 MB) while b runs.
    assert_eq!(peak.peak[1], 80_000_000);
}

#[test]
fn a_package_without_compute_cannot_be_costed() {
    let text = "topology bare() {\n    chips die[2] { memory = 1 GiB }\n    link die[0] -> die[1] { bandwidth = 1 GB/s }\n}\nlet g = graph { a -> b }\npartition g onto bare() {\n    maximize throughput\n}\n";
    let c = common::compile(text);
    assert!(c.ok(), "{}", mcm_core::diag::render_text(&c.program.sources, &c.diags));
    let e = CostModel::new(c.problem(None).unwrap()).err().expect("an error");
    assert!(e.message.contains("no `compute`"), "{}", e.message);
}

/// A partition that takes no time (nothing on it computes or moves) is no
/// sample: its throughput would be infinite and every ratio to it NaN.
#[test]
fn a_partition_that_takes_no_time_is_invalid() {
    let p = problem(RING3, "graph { a -> b }");
    let a = Analytical::new(&p).unwrap();
    match a.evaluate(&chips(&p, &[("a", 0), ("b", 0)])) {
        Verdict::Invalid { reason } => assert!(reason.contains("takes no time"), "{reason}"),
        v => panic!("expected invalid, got {v:?}"),
    }
    let p = problem(RING3, "graph { a { flops = 1 GFLOP } -> b }");
    let a = Analytical::new(&p).unwrap();
    assert!(matches!(
        a.evaluate(&chips(&p, &[("a", 0), ("b", 0)])),
        Verdict::Valid { .. }
    ));
}

#[test]
fn a_link_latency_is_paid_once_per_transfer_and_hop() {
    // a feeds b on 1 and c on 2 (one transfer over both hops), d feeds e on
    // 1: link 0 -> 1 carries two transfers, link 1 -> 2 one; each pays the
    // link's 1 ms besides its bytes (1 MB at 1 GB/s, 1 ms).
    let text = "topology slow(n: int) {\n    chips die[n] { memory = 1 GiB, compute = 1 TFLOP/s }\n    for i in 0..n - 1 {\n        link die[i] -> die[i + 1] { bandwidth = 1 GB/s, latency = 1 ms }\n    }\n}\nlet t = slow(n = 3)\nlet g = graph { a { output_bytes = 1 MB } -> b  a -> c  d { output_bytes = 1 MB } -> e }\npartition g onto t {\n    maximize throughput\n}\n";
    let c = common::compile(text);
    assert!(c.ok(), "{}", mcm_core::diag::render_text(&c.program.sources, &c.diags));
    let p = c.problem(None).unwrap().clone();
    let m = CostModel::new(&p).unwrap();
    let r = m
        .report(&chips(&p, &[("a", 0), ("b", 1), ("c", 2), ("d", 0), ("e", 1)]))
        .unwrap();
    close(r.chips[0].link_s, 2e-3 + 2e-3);
    close(r.chips[1].link_s, 1e-3 + 1e-3);
    close(r.chips[2].link_s, 0.0);
    // The report's links: traffic, transfers, busy time, share of the period.
    let links: Vec<(u32, u32, u64, u32)> = r.links.iter().map(|l| (l.src, l.dst, l.bytes, l.transfers)).collect();
    assert_eq!(links, vec![(0, 1, 2_000_000, 2), (1, 2, 1_000_000, 1)]);
    close(r.links[0].time_s, 4e-3);
    close(r.links[0].utilisation, 4e-3 / r.latency_s);
    // A negative latency is refused where the package is built.
    let bad = common::compile(&text.replace("latency = 1 ms", "latency = -1 ms"));
    assert!(!bad.ok());
    let shown = mcm_core::diag::render_text(&bad.program.sources, &bad.diags);
    assert!(shown.contains("a link's latency cannot be negative"), "{shown}");
}
