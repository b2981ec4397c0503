//! `mcmpart stats GRAPH`: sizes, totals, depth and the largest nodes.

use super::output::Output;
use crate::error::{Error, Result, Status};
use crate::graph::load_graph_file;
use crate::graph::stats::{stats, NodeFigure};
use crate::quantity::{format_quantity, Dim};
use std::path::Path;

pub fn run(out: &Output, graph: &Path, top: usize) -> Result {
    let g = load_graph_file(graph)?;
    let s = stats(&g, top);
    if out.json {
        let v = serde_json::to_value(&s).map_err(|e| {
            Error::output(format!(
                "cannot write the figures of `{}` as JSON: {e}",
                graph.display()
            ))
        })?;
        out.print_json(&v);
        return Ok(Status::Success);
    }
    let q = |v: u128, d: Dim| format_quantity(v as f64, d);
    println!("graph {}", s.name);
    println!(
        "  nodes {} ({} placed, {} replicable), edges {} ({} between placed nodes)",
        s.nodes, s.placed_nodes, s.replicable, s.edges, s.placed_edges
    );
    println!(
        "  flops {}, weights {}, tensors on edges {}",
        q(s.flops, Dim::FLOP),
        q(s.weight_bytes, Dim::BYTES),
        q(s.edge_bytes, Dim::BYTES)
    );
    println!("  depth {} nodes, {} sources, {} sinks", s.depth, s.sources, s.sinks);
    let ops: Vec<String> = s.ops.iter().take(10).map(|(o, n)| format!("{o} {n}")).collect();
    println!("  ops {}", ops.join(", "));
    if !s.measured.is_empty() {
        let kinds: Vec<String> = s.measured.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!("  measured op times (nodes per kind) {}", kinds.join(", "));
    }
    let list = |title: &str, xs: &[NodeFigure], d: Dim| {
        println!("  largest by {title}:");
        for x in xs {
            println!("    {:<48} {:<16} {}", x.id, x.op, format_quantity(x.value as f64, d));
        }
    };
    list("flops", &s.top_flops, Dim::FLOP);
    list("weights", &s.top_params, Dim::BYTES);
    list("output", &s.top_output, Dim::BYTES);
    Ok(Status::Success)
}
