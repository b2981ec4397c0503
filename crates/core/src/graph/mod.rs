//! The computation graph: operations, the tensors between them, and the
//! view the placement language ranges over (replicable nodes taken out).

mod csr;
pub mod dot;
mod ids;
mod load;
pub mod manifest;
pub mod onnx;
mod profile;
mod reader;
pub mod stats;

pub use csr::Csr;
pub use load::{load_graph_file, parse_graph_json, to_json};
pub use profile::{Profile, ProfileBuilder};

use ids::IdIndex;
use std::collections::HashMap;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub id: String,
    pub op: String,
    pub flops: u64,
    pub params: u64,
    pub output_bytes: u64,
    pub replicable: bool,
    /// Fields of the file that this tool does not interpret, kept as read.
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Node {
    pub fn new(id: impl Into<String>) -> Node {
        Node {
            id: id.into(),
            op: String::new(),
            flops: 0,
            params: 0,
            output_bytes: 0,
            replicable: false,
            extra: serde_json::Map::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub src: usize,
    pub dst: usize,
    pub bytes: u64,
}

/// An edge between two placed nodes, by decision index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlacedEdge {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
}

/// A validated DAG. Nodes that are not replicable are the placement
/// decisions, numbered 0.. in file order; `placed_edges` joins them.
#[derive(Clone, Debug)]
pub struct Graph {
    pub name: String,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    index: IdIndex,
    topo: Vec<usize>,
    placed: Vec<usize>,
    decision_of: Vec<Option<u32>>,
    placed_edges: Vec<PlacedEdge>,
    weight_users: Vec<Option<u32>>,
    /// Measured op times per chip kind, by node index.
    profile: Profile,
}

/// Why a graph is not valid, naming the offending ids.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphError {
    pub message: String,
    pub help: Option<String>,
}

impl GraphError {
    pub fn new(message: impl Into<String>) -> GraphError {
        GraphError {
            message: message.into(),
            help: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> GraphError {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GraphError {}

/// Lists at most a few ids, for error messages.
pub fn list_ids<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    let all: Vec<&str> = ids.into_iter().collect();
    let shown: Vec<String> = all.iter().take(8).map(|s| format!("`{s}`")).collect();
    if all.len() > 8 {
        format!("{} and {} more", shown.join(", "), all.len() - 8)
    } else {
        shown.join(", ")
    }
}

impl Graph {
    /// Validates and indexes a graph: unique ids, known endpoints, no
    /// self-loops, no cycles, and replicable nodes fed only by replicable ones.
    /// Edges are given by node index; `bytes: None` means the source's output.
    pub fn new(
        name: impl Into<String>,
        nodes: Vec<Node>,
        edges: Vec<(usize, usize, Option<u64>)>,
    ) -> Result<Graph, GraphError> {
        let index = IdIndex::new(&nodes).map_err(|id| {
            GraphError::new(format!("duplicate node id `{id}`")).with_help("every node needs its own id")
        })?;
        Graph::indexed(name.into(), nodes, index, edges)
    }

    /// [`Graph::new`] with the index of ids already built (unique ids).
    fn indexed(
        name: String,
        nodes: Vec<Node>,
        index: IdIndex,
        edges: Vec<(usize, usize, Option<u64>)>,
    ) -> Result<Graph, GraphError> {
        let mut es = Vec::with_capacity(edges.len());
        for (s, d, bytes) in edges {
            if s >= nodes.len() || d >= nodes.len() {
                return Err(GraphError::new("an edge names a node index that does not exist"));
            }
            if s == d {
                return Err(GraphError::new(format!("self-loop on node `{}`", nodes[s].id))
                    .with_help("an operation cannot consume its own output in a DAG"));
            }
            es.push(Edge {
                src: s,
                dst: d,
                bytes: bytes.unwrap_or(nodes[s].output_bytes),
            });
        }
        let topo = topological_order(&nodes, &es)?;
        for e in &es {
            if nodes[e.dst].replicable && !nodes[e.src].replicable {
                return Err(GraphError::new(format!(
                    "replicable node `{}` has an input from `{}`, which is not replicable",
                    nodes[e.dst].id, nodes[e.src].id
                ))
                .with_help("a replicable node's inputs must be replicable too"));
            }
        }
        let mut decision_of = vec![None; nodes.len()];
        let mut placed = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            if !n.replicable {
                decision_of[i] = Some(placed.len() as u32);
                placed.push(i);
            }
        }
        let mut pe: HashMap<(u32, u32), u64> = HashMap::new();
        let mut order = Vec::new();
        for e in &es {
            if let (Some(a), Some(b)) = (decision_of[e.src], decision_of[e.dst]) {
                let slot = pe.entry((a, b)).or_insert_with(|| {
                    order.push((a, b));
                    0
                });
                *slot = (*slot).max(e.bytes);
            }
        }
        let placed_edges = order
            .into_iter()
            .map(|(a, b)| PlacedEdge {
                src: a,
                dst: b,
                bytes: pe[&(a, b)],
            })
            .collect();
        let mut g = Graph {
            name,
            nodes,
            edges: es,
            index,
            topo,
            placed,
            decision_of,
            placed_edges,
            weight_users: Vec::new(),
            profile: Profile::default(),
        };
        g.weight_users = g.find_weight_users();
        Ok(g)
    }

    /// The nodes' measured times (the graph format's `times`).
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The graph with these measured times, built node by node in node
    /// order ([`ProfileBuilder`]); a profile of other nodes is refused.
    pub fn with_profile(mut self, profile: Profile) -> Result<Graph, GraphError> {
        if !profile.fits(self.nodes.len()) {
            return Err(GraphError::new(
                "the measured times are not those of this graph's nodes",
            ));
        }
        self.profile = profile;
        Ok(self)
    }

    pub fn node_index(&self, id: &str) -> Option<usize> {
        self.index.get(&self.nodes, id)
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> + Clone {
        self.nodes.iter().map(|n| n.id.as_str())
    }

    /// All nodes in a topological order.
    pub fn topological_order(&self) -> &[usize] {
        &self.topo
    }

    /// The nodes that take a placement decision, as node indices.
    pub fn placed_nodes(&self) -> &[usize] {
        &self.placed
    }

    pub fn num_placed(&self) -> usize {
        self.placed.len()
    }

    /// The decision index of a node, `None` for replicable nodes.
    pub fn decision_of(&self, node: usize) -> Option<u32> {
        self.decision_of[node]
    }

    /// The node behind decision `d`.
    pub fn placed_node(&self, d: u32) -> &Node {
        &self.nodes[self.placed[d as usize]]
    }

    /// Each placed node's position along [`Graph::pipeline_order`].
    pub fn pipeline_rank(&self) -> Vec<u32> {
        let order = self.pipeline_order();
        let mut rank = vec![0; order.len()];
        for (i, &u) in order.iter().enumerate() {
            rank[u as usize] = i as u32;
        }
        rank
    }

    /// A topological order of the decision nodes in which nodes without inputs
    /// (weights, constants) come right before their first consumer instead of
    /// wherever the graph's order has them, so a stage keeps its weights.
    pub fn pipeline_order(&self) -> Vec<u32> {
        let decided = self.topological_order().iter().filter_map(|&v| self.decision_of(v));
        self.weights_before_consumers(decided)
    }

    /// `order` (placed nodes, decision indices, producers before consumers)
    /// with each node without inputs moved just before its first consumer,
    /// and the nodes it leaves out at the end.
    pub fn weights_before_consumers(&self, order: impl IntoIterator<Item = u32>) -> Vec<u32> {
        let n = self.num_placed();
        let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
        for e in self.placed_edges() {
            preds[e.dst as usize].push(e.src);
        }
        let mut done = vec![false; n];
        let mut out = Vec::with_capacity(n);
        for d in order {
            if preds[d as usize].is_empty() {
                continue;
            }
            for &p in &preds[d as usize] {
                if preds[p as usize].is_empty() && !done[p as usize] {
                    done[p as usize] = true;
                    out.push(p);
                }
            }
            done[d as usize] = true;
            out.push(d);
        }
        out.extend((0..n as u32).filter(|&d| !done[d as usize]));
        out
    }

    /// Per node, the placed nodes (decision indices, ascending) a replicable
    /// node feeds through replicable nodes only: its copies run on their
    /// chips. Empty for a placed node, and for a replicable node that feeds
    /// none (it never runs).
    pub fn replica_feeds(&self) -> Vec<Vec<u32>> {
        let n = self.nodes.len();
        let mut feeds: Vec<Vec<u32>> = vec![Vec::new(); n];
        if self.num_placed() == n {
            return feeds;
        }
        let mut outs: Vec<Vec<usize>> = vec![Vec::new(); n];
        for e in &self.edges {
            outs[e.src].push(e.dst);
        }
        for &v in self.topological_order().iter().rev() {
            if self.decision_of(v).is_some() {
                continue;
            }
            // Consumers come later in topological order, so theirs are known.
            let mut f: Vec<u32> = Vec::new();
            for &w in &outs[v] {
                match self.decision_of(w) {
                    Some(d) => f.push(d),
                    None => f.extend_from_slice(&feeds[w]),
                }
            }
            f.sort_unstable();
            f.dedup();
            feeds[v] = f;
        }
        feeds
    }

    /// Per decision, the one node that uses it when it is a weight only that
    /// node uses (no inputs, no flops, some params, one consumer): placing
    /// it elsewhere only streams its bytes over a link at every inference,
    /// so a placement move takes it along with its user.
    pub fn weight_users(&self) -> &[Option<u32>] {
        &self.weight_users
    }

    fn find_weight_users(&self) -> Vec<Option<u32>> {
        let n = self.num_placed();
        let (mut indeg, mut users) = (vec![0usize; n], vec![Vec::new(); n]);
        for e in self.placed_edges() {
            indeg[e.dst as usize] += 1;
            users[e.src as usize].push(e.dst);
        }
        (0..n)
            .map(|d| {
                let node = self.placed_node(d as u32);
                let weight = indeg[d] == 0 && node.flops == 0 && node.params > 0;
                (weight && users[d].len() == 1).then(|| users[d][0])
            })
            .collect()
    }

    /// Edges between placed nodes, parallel edges merged (largest bytes kept).
    pub fn placed_edges(&self) -> &[PlacedEdge] {
        &self.placed_edges
    }

    pub fn total_flops(&self) -> u128 {
        self.nodes.iter().map(|n| n.flops as u128).sum()
    }

    pub fn total_params(&self) -> u128 {
        self.nodes.iter().map(|n| n.params as u128).sum()
    }
}

fn topological_order(nodes: &[Node], edges: &[Edge]) -> Result<Vec<usize>, GraphError> {
    use petgraph::graph::{DiGraph, NodeIndex};
    let mut g: DiGraph<(), ()> = DiGraph::with_capacity(nodes.len(), edges.len());
    for _ in nodes {
        g.add_node(());
    }
    for e in edges {
        g.add_edge(NodeIndex::new(e.src), NodeIndex::new(e.dst), ());
    }
    match petgraph::algo::toposort(&g, None) {
        Ok(order) => Ok(order.into_iter().map(|n| n.index()).collect()),
        Err(_) => {
            let cyc = petgraph::algo::tarjan_scc(&g)
                .into_iter()
                .find(|c| c.len() > 1)
                .unwrap_or_default();
            let mut ids: Vec<&str> = cyc.iter().map(|n| nodes[n.index()].id.as_str()).collect();
            ids.sort_unstable();
            Err(
                GraphError::new(format!("the graph has a cycle through {}", list_ids(ids)))
                    .with_help("a computation graph must be a DAG; remove one edge of the cycle"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(id: &str) -> Node {
        Node::new(id)
    }

    #[test]
    fn rejects_cycles_naming_the_nodes() {
        let e = Graph::new(
            "g",
            vec![n("a"), n("b"), n("c")],
            vec![(0, 1, None), (1, 2, None), (2, 1, None)],
        )
        .unwrap_err();
        assert!(e.message.contains("cycle"), "{}", e.message);
        assert!(e.message.contains("`b`") && e.message.contains("`c`"), "{}", e.message);
        assert!(!e.message.contains("`a`"), "{}", e.message);
    }

    #[test]
    fn weight_users_are_single_consumers_of_weights() {
        let weight = |id: &str| {
            let mut w = n(id);
            w.params = 64;
            w
        };
        let mut op = n("op");
        op.flops = 10;
        let mut busy = weight("busy");
        busy.flops = 1;
        // w: a weight of `op`; shared: feeds two nodes; busy: computes;
        // input: no params; fed: has an input.
        let nodes = vec![
            weight("w"),
            weight("shared"),
            busy,
            n("input"),
            op,
            n("tail"),
            weight("fed"),
        ];
        let edges = vec![(0, 4), (1, 4), (1, 5), (2, 4), (3, 4), (4, 5), (4, 6), (6, 5)];
        let g = Graph::new("g", nodes, edges.into_iter().map(|(a, b)| (a, b, None)).collect()).unwrap();
        assert_eq!(g.weight_users(), [Some(4), None, None, None, None, None, None]);
    }

    #[test]
    fn rejects_duplicates_and_self_loops() {
        let e = Graph::new("g", vec![n("a"), n("a")], vec![]).unwrap_err();
        assert!(e.message.contains("duplicate node id `a`"));
        let e = Graph::new("g", vec![n("a")], vec![(0, 0, None)]).unwrap_err();
        assert!(e.message.contains("self-loop on node `a`"));
    }

    #[test]
    fn replicable_nodes_take_no_decision() {
        let mut mask = n("mask");
        mask.replicable = true;
        let g = Graph::new("g", vec![n("x"), mask, n("y")], vec![(0, 2, Some(4)), (1, 2, Some(8))]).unwrap();
        assert_eq!(g.num_placed(), 2);
        assert_eq!(g.decision_of(1), None);
        assert_eq!(
            g.placed_edges(),
            &[PlacedEdge {
                src: 0,
                dst: 1,
                bytes: 4
            }]
        );
    }

    #[test]
    fn replicable_inputs_must_be_replicable() {
        let mut mask = n("mask");
        mask.replicable = true;
        let e = Graph::new("g", vec![n("x"), mask], vec![(0, 1, None)]).unwrap_err();
        assert!(e.message.contains("replicable node `mask`"), "{}", e.message);
    }
}
