//! Drawing a graph: Graphviz DOT text, and SVG with a layered layout.

use super::Graph;
use std::fmt::Write;

/// Fill colours for chips, cycled when a package has more chips.
const PALETTE: &[&str] = &[
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd",
    "#ccebc5", "#ffed6f",
];

pub fn chip_color(chip: u32) -> &'static str {
    PALETTE[chip as usize % PALETTE.len()]
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// DOT text for a graph; `chips[node]` colours each placed node by its chip.
pub fn to_dot(g: &Graph, chips: Option<&[Option<u32>]>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "digraph {} {{", quote(&g.name));
    let _ = writeln!(s, "  node [shape=box, style=filled, fillcolor=\"#ffffff\"];");
    for (i, n) in g.nodes.iter().enumerate() {
        let chip = chips.and_then(|c| c.get(i).copied().flatten());
        let label = match chip {
            Some(c) => format!("{}\\n{} @{c}", n.id, n.op),
            None => format!("{}\\n{}", n.id, n.op),
        };
        let mut attrs = format!("label=\"{}\"", label.replace('"', "\\\""));
        if let Some(c) = chip {
            let _ = write!(attrs, ", fillcolor=\"{}\"", chip_color(c));
        }
        if n.replicable {
            attrs.push_str(", style=\"filled,dashed\"");
        }
        let _ = writeln!(s, "  n{i} [{attrs}];");
    }
    for e in &g.edges {
        let _ = writeln!(s, "  n{} -> n{};", e.src, e.dst);
    }
    s.push_str("}\n");
    s
}

/// Renders a graph to SVG with a layered layout: a node's row is its depth
/// (longest path from a source), and within a row nodes are ordered by the
/// mean position of their predecessors to keep edges short. The layout
/// crates we tried took minutes on BERT-large; this takes milliseconds.
pub fn to_svg(g: &Graph, chips: Option<&[Option<u32>]>) -> String {
    const W: f64 = 150.0;
    const H: f64 = 34.0;
    const GAP_X: f64 = 20.0;
    const GAP_Y: f64 = 40.0;
    let n = g.nodes.len();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for e in &g.edges {
        preds[e.dst].push(e.src);
    }
    let mut depth = vec![0usize; n];
    for &u in g.topological_order() {
        for &p in &preds[u] {
            depth[u] = depth[u].max(depth[p] + 1);
        }
    }
    let rows = depth.iter().copied().max().map_or(0, |d| d + 1);
    let mut layer: Vec<Vec<usize>> = vec![Vec::new(); rows];
    let mut pos = vec![0.0f64; n];
    for &u in g.topological_order() {
        layer[depth[u]].push(u);
    }
    for row in &mut layer {
        let key = |u: usize| -> f64 {
            if preds[u].is_empty() {
                f64::MAX
            } else {
                preds[u].iter().map(|&p| pos[p]).sum::<f64>() / preds[u].len() as f64
            }
        };
        let mut keyed: Vec<(f64, usize)> = row.iter().map(|&u| (key(u), u)).collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        *row = keyed.into_iter().map(|(_, u)| u).collect();
        for (i, &u) in row.iter().enumerate() {
            pos[u] = i as f64;
        }
    }
    let widest = layer.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let width = widest as f64 * (W + GAP_X) + GAP_X;
    let height = rows as f64 * (H + GAP_Y) + GAP_Y;
    let xy = |u: usize| -> (f64, f64) {
        let row = &layer[depth[u]];
        let offset = (widest - row.len()) as f64 * (W + GAP_X) / 2.0;
        (
            GAP_X + offset + pos[u] * (W + GAP_X),
            GAP_Y + depth[u] as f64 * (H + GAP_Y),
        )
    };
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" font-family=\"sans-serif\" font-size=\"10\">"
    );
    let _ = writeln!(s, "<title>{}</title>", esc(&g.name));
    s.push_str("<defs><marker id=\"a\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0L10,5L0,10z\" fill=\"#555\"/></marker></defs>\n");
    for e in &g.edges {
        let (x1, y1) = xy(e.src);
        let (x2, y2) = xy(e.dst);
        let _ = writeln!(
            s,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#555\" stroke-width=\"0.7\" marker-end=\"url(#a)\"/>",
            x1 + W / 2.0,
            y1 + H,
            x2 + W / 2.0,
            y2
        );
    }
    for (u, node) in g.nodes.iter().enumerate() {
        let (x, y) = xy(u);
        let chip = chips.and_then(|c| c.get(u).copied().flatten());
        let fill = chip.map_or("#ffffff", chip_color);
        let dash = if node.replicable {
            " stroke-dasharray=\"3,2\""
        } else {
            ""
        };
        let label = match chip {
            Some(c) => format!("{} @{c}", node.op),
            None => node.op.clone(),
        };
        let _ = writeln!(
            s,
            "<g><title>{}</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{W}\" height=\"{H}\" rx=\"4\" fill=\"{fill}\" stroke=\"#333\"{dash}/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#444\">{}</text></g>",
            esc(&node.id),
            x + W / 2.0,
            y + 14.0,
            esc(&truncate(&node.id, 26)),
            x + W / 2.0,
            y + 27.0,
            esc(&label)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n - 1).collect();
        format!("{t}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Node;

    #[test]
    fn colours_placed_nodes_and_renders() {
        let g = Graph::new("g", vec![Node::new("a"), Node::new("b")], vec![(0, 1, None)]).unwrap();
        let dot = to_dot(&g, Some(&[Some(0), Some(1)]));
        assert!(dot.contains(chip_color(0)) && dot.contains(chip_color(1)), "{dot}");
        assert!(dot.contains("n0 -> n1"));
        let svg = to_svg(&g, Some(&[Some(0), Some(1)]));
        assert!(svg.contains("<svg") && svg.contains(chip_color(1)), "{svg}");
        assert_eq!(svg.matches("<rect").count(), 2);
        assert_eq!(svg.matches("<line").count(), 1);
    }
}
