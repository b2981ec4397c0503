//! Summary figures of a graph: sizes, totals, depth, the heaviest nodes.

use super::Graph;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize)]
pub struct NodeFigure {
    pub id: String,
    pub op: String,
    pub value: u64,
}

/// A total as a JSON number: exact while it fits 64 bits, a float past
/// them (JSON has no 128-bit integers; such totals were written as `null`).
fn total<S: serde::Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
    match u64::try_from(*v) {
        Ok(x) => s.serialize_u64(x),
        Err(_) => s.serialize_f64(*v as f64),
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct GraphStats {
    pub name: String,
    pub nodes: usize,
    pub edges: usize,
    pub placed_nodes: usize,
    pub placed_edges: usize,
    pub replicable: usize,
    #[serde(serialize_with = "total")]
    pub flops: u128,
    #[serde(serialize_with = "total")]
    pub weight_bytes: u128,
    #[serde(serialize_with = "total")]
    pub edge_bytes: u128,
    /// Nodes on the longest path from a source to a sink.
    pub depth: usize,
    pub sources: usize,
    pub sinks: usize,
    /// Operator kinds and how many nodes have each, most frequent first.
    pub ops: Vec<(String, usize)>,
    /// Per chip kind with measured op times (`times`), how many nodes have
    /// one, in the order the kinds first appear.
    pub measured: Vec<(String, usize)>,
    pub top_flops: Vec<NodeFigure>,
    pub top_params: Vec<NodeFigure>,
    pub top_output: Vec<NodeFigure>,
}

fn top(g: &Graph, key: impl Fn(&super::Node) -> u64, n: usize) -> Vec<NodeFigure> {
    let mut idx: Vec<usize> = (0..g.nodes.len()).filter(|&i| key(&g.nodes[i]) > 0).collect();
    idx.sort_by_key(|&i| (std::cmp::Reverse(key(&g.nodes[i])), i));
    idx.into_iter()
        .take(n)
        .map(|i| NodeFigure {
            id: g.nodes[i].id.clone(),
            op: g.nodes[i].op.clone(),
            value: key(&g.nodes[i]),
        })
        .collect()
}

/// Computes the figures, listing the `n` largest nodes of each kind.
pub fn stats(g: &Graph, n: usize) -> GraphStats {
    let mut indeg = vec![0usize; g.nodes.len()];
    let mut outdeg = vec![0usize; g.nodes.len()];
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    for e in &g.edges {
        indeg[e.dst] += 1;
        outdeg[e.src] += 1;
        succ[e.src].push(e.dst);
    }
    let mut level = vec![1usize; g.nodes.len()];
    for &u in g.topological_order() {
        for &v in &succ[u] {
            level[v] = level[v].max(level[u] + 1);
        }
    }
    let mut ops: BTreeMap<&str, usize> = BTreeMap::new();
    for nd in &g.nodes {
        *ops.entry(if nd.op.is_empty() { "?" } else { &nd.op }).or_default() += 1;
    }
    let mut ops: Vec<(String, usize)> = ops.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    ops.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let profile = g.profile();
    let mut measured: Vec<(String, usize)> = profile.kinds().iter().map(|k| (k.clone(), 0)).collect();
    for v in 0..g.nodes.len() {
        for &(k, _) in profile.times(v) {
            measured[k as usize].1 += 1;
        }
    }
    GraphStats {
        name: g.name.clone(),
        nodes: g.nodes.len(),
        edges: g.edges.len(),
        placed_nodes: g.num_placed(),
        placed_edges: g.placed_edges().len(),
        replicable: g.nodes.len() - g.num_placed(),
        flops: g.total_flops(),
        weight_bytes: g.total_params(),
        edge_bytes: g.edges.iter().map(|e| e.bytes as u128).sum(),
        depth: level.iter().copied().max().unwrap_or(0),
        sources: indeg.iter().filter(|d| **d == 0).count(),
        sinks: outdeg.iter().filter(|d| **d == 0).count(),
        ops,
        measured,
        top_flops: top(g, |x| x.flops, n),
        top_params: top(g, |x| x.params, n),
        top_output: top(g, |x| x.output_bytes, n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Node;

    #[test]
    fn depth_totals_and_tops() {
        let mut a = Node::new("a");
        a.flops = 5;
        let mut b = Node::new("b");
        b.flops = 7;
        b.params = 3;
        b.op = "linear".into();
        let c = Node::new("c");
        let g = Graph::new(
            "g",
            vec![a, b, c],
            vec![(0, 1, Some(2)), (1, 2, Some(1)), (0, 2, Some(4))],
        )
        .unwrap();
        let s = stats(&g, 1);
        assert_eq!((s.depth, s.sources, s.sinks), (3, 1, 1));
        assert_eq!((s.flops, s.weight_bytes, s.edge_bytes), (12, 3, 7));
        assert_eq!(s.top_flops[0].id, "b");
        assert_eq!(s.top_flops.len(), 1);
        assert!(s.measured.is_empty());
    }

    #[test]
    fn totals_past_64_bits_are_numbers_in_json() {
        let nodes = (0..3)
            .map(|i| {
                let mut n = Node::new(format!("n{i}"));
                n.flops = u64::MAX;
                n
            })
            .collect();
        let s = stats(&Graph::new("g", nodes, vec![]).unwrap(), 1);
        let v = serde_json::to_value(&s).unwrap();
        assert!(
            (v["flops"].as_f64().unwrap() - 3.0 * u64::MAX as f64).abs() < 1e6,
            "{v}"
        );
        assert_eq!(v["weight_bytes"], 0);
    }

    #[test]
    fn measured_kinds_are_counted() {
        let g = crate::graph::parse_graph_json(
            r#"{"nodes": [{"id": "a", "times": {"cpu": 1}}, {"id": "b", "times": {"cpu": 2, "a100": 0.5}}, {"id": "c"}]}"#,
        )
        .unwrap();
        assert_eq!(stats(&g, 1).measured, [("cpu".to_string(), 2), ("a100".to_string(), 1)]);
    }
}
