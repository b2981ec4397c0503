//! Reads the graph format in one pass over the text: each node and edge is
//! parsed on its own and turned into its compact form at once, so that no
//! JSON tree of the whole file is ever held (a tree costs more than a
//! kilobyte a node). Errors are the same, in the same order of priority, as
//! a reading of the whole tree gives: the text's syntax first, then the top
//! level, `name`, the first bad node, the first duplicate id, `edges`, and
//! the first bad edge.

use super::ids::IdIndex;
use super::profile::{Profile, ProfileBuilder};
use super::{GraphError, Node};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// What a graph file holds, validated field by field (the DAG is not checked here).
pub(super) struct Parsed {
    pub name: String,
    pub nodes: Vec<Node>,
    pub index: IdIndex,
    pub edges: Vec<(usize, usize, Option<u64>)>,
    pub profile: Profile,
}

/// Parses the graph format from JSON text.
pub(super) fn read(text: &str) -> Result<Parsed, GraphError> {
    let mut r = Reader::default();
    let mut de = serde_json::Deserializer::from_str(text);
    (&mut r)
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| GraphError::new(crate::textfile::json_error(&e)))?;
    r.finish()
}

#[derive(Default)]
struct Reader {
    not_object: bool,
    /// A top-level key given twice: which.
    repeated: Option<String>,
    name: Option<Result<String, GraphError>>,
    /// `None` until a `nodes` array was read.
    nodes: Option<Vec<Node>>,
    nodes_error: Option<GraphError>,
    /// The nodes' measured times, in node order.
    profile: ProfileBuilder,
    /// Built once the nodes are read without error.
    index: Option<IdIndex>,
    edges_seen: bool,
    edges_not_array: bool,
    edges: Vec<(usize, usize, Option<u64>)>,
    /// Edges met before the nodes, resolved once the nodes are known.
    pending: Vec<RawEdge>,
    edges_error: Option<GraphError>,
}

impl Reader {
    fn finish(mut self) -> Result<Parsed, GraphError> {
        if self.not_object {
            return Err(GraphError::new(
                "the top level must be an object with `nodes` and `edges`",
            ));
        }
        if let Some(k) = self.repeated {
            return Err(GraphError::new(format!("the top level has `{k}` twice"))
                .with_help("a graph file gives each of `name`, `nodes` and `edges` once"));
        }
        let name = match self.name {
            None => "graph".to_string(),
            Some(n) => n?,
        };
        let nodes = self
            .nodes
            .take()
            .ok_or_else(|| GraphError::new("missing `nodes` array"))?;
        if let Some(e) = self.nodes_error {
            return Err(e);
        }
        let index = self.index.take().expect("nodes read without error are indexed");
        if self.edges_not_array {
            return Err(GraphError::new("`edges` must be an array"));
        }
        if let Some(e) = self.edges_error {
            return Err(e);
        }
        let mut edges = std::mem::take(&mut self.edges);
        for raw in std::mem::take(&mut self.pending) {
            edges.push(raw.resolve(&nodes, &index)?);
        }
        Ok(Parsed {
            name,
            nodes,
            index,
            edges,
            profile: self.profile.finish(),
        })
    }

    fn seen(&mut self, key: &str, before: bool) {
        if before && self.repeated.is_none() {
            self.repeated = Some(key.to_string());
        }
    }

    fn node(&mut self, i: usize, v: Value) {
        let nodes = self.nodes.get_or_insert_with(Vec::new);
        if self.nodes_error.is_some() {
            return;
        }
        match parse_node(i, v) {
            Ok((n, times)) => {
                nodes.push(n);
                self.profile.push(times);
            }
            Err(e) => self.nodes_error = Some(e),
        }
    }

    /// After the last node: the index, or the first duplicate id.
    fn index_nodes(&mut self) {
        let nodes = self.nodes.get_or_insert_with(Vec::new);
        if self.nodes_error.is_some() {
            return;
        }
        nodes.shrink_to_fit();
        match IdIndex::new(nodes) {
            Ok(index) => self.index = Some(index),
            Err(id) => {
                self.nodes_error =
                    Some(GraphError::new(format!("duplicate node id `{id}`")).with_help("every node needs its own id"))
            }
        }
    }

    fn edge(&mut self, i: usize, v: Value) {
        if self.edges_error.is_some() || self.nodes_error.is_some() {
            return;
        }
        let raw = RawEdge::new(i, v);
        match (&self.nodes, &self.index) {
            (Some(nodes), Some(index)) => match raw.resolve(nodes, index) {
                Ok(e) => self.edges.push(e),
                Err(e) => self.edges_error = Some(e),
            },
            _ => self.pending.push(raw),
        }
    }
}

/// An edge as the file gives it, before its ends are looked up.
struct RawEdge {
    i: usize,
    /// `None`: the edge is not an object.
    ends: Option<(Option<String>, Option<String>)>,
    bytes: Option<Value>,
}

impl RawEdge {
    fn new(i: usize, v: Value) -> RawEdge {
        let Value::Object(mut o) = v else {
            return RawEdge {
                i,
                ends: None,
                bytes: None,
            };
        };
        RawEdge {
            i,
            ends: Some((node_id(o.get("from")), node_id(o.get("to")))),
            bytes: o.remove("bytes"),
        }
    }

    fn resolve(self, nodes: &[Node], index: &IdIndex) -> Result<(usize, usize, Option<u64>), GraphError> {
        let i = self.i;
        let (from, to) = self
            .ends
            .ok_or_else(|| GraphError::new(format!("edge {i} is not an object")))?;
        let end = |key: &str, id: Option<String>| -> Result<usize, GraphError> {
            let id =
                id.ok_or_else(|| GraphError::new(format!("edge {i} has no `{key}` node id (a string or a number)")))?;
            index.get(nodes, &id).ok_or_else(|| {
                let help = crate::diag::unknown_help(&id, "node", nodes.iter().map(|n| n.id.as_str()));
                GraphError::new(format!("edge {i} `{key}` names unknown node `{id}`")).with_help(help)
            })
        };
        let (s, d) = (end("from", from)?, end("to", to)?);
        let bytes = match self.bytes {
            None | Some(Value::Null) => None,
            Some(b) => Some(non_negative(&b).map_err(|which| {
                GraphError::new(format!(
                    "edge {i} ({} -> {}) has `bytes` {b}, {which}",
                    nodes[s].id, nodes[d].id
                ))
            })?),
        };
        Ok((s, d, bytes))
    }
}

/// A count (flops, bytes): a non-negative integer that fits 64 bits; the
/// error finishes "`x` is V, which ...".
fn non_negative(v: &Value) -> Result<u64, String> {
    let not = || "which is not a non-negative integer".to_string();
    match v {
        Value::Number(n) => match (n.as_u64(), n.as_f64()) {
            (Some(x), _) => Ok(x),
            // 2^64: every whole float below it converts exactly.
            (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f < 18446744073709551616.0 => Ok(f as u64),
            (None, Some(f)) if f >= 18446744073709551616.0 && f.is_finite() => Err(format!(
                "which is more than a 64-bit count holds (at most {})",
                u64::MAX
            )),
            _ => Err(not()),
        },
        _ => Err(not()),
    }
}

/// A node id: a string, or a number written as its text (exporters write
/// either), in a node's `id` and an edge's ends alike.
fn node_id(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A node's `times`: seconds of one execution per chip kind, each a
/// non-negative finite number (`null`: none).
fn parse_times(id: &str, v: Value) -> Result<Vec<(String, f64)>, GraphError> {
    let o =
        match v {
            Value::Null => return Ok(Vec::new()),
            Value::Object(o) => o,
            other => return Err(GraphError::new(format!(
                "node `{id}`: `times` is {other}, which is not an object of seconds per chip kind"
            ))
            .with_help(
                "write e.g. `\"times\": {\"a100\": 1.25e-4}`: the seconds one execution takes on a chip of that `kind`",
            )),
        };
    o.into_iter()
        .map(|(kind, t)| match t.as_f64() {
            Some(x) if x >= 0.0 && x.is_finite() => Ok((kind, x)),
            _ => Err(GraphError::new(format!(
                "node `{id}`: `times.{kind}` is {t}, which is not a non-negative number of seconds"
            ))),
        })
        .collect()
}

/// A node and its measured times.
fn parse_node(i: usize, v: Value) -> Result<(Node, Vec<(String, f64)>), GraphError> {
    let Value::Object(o) = v else {
        return Err(GraphError::new(format!("node {i} is not an object")));
    };
    let id =
        node_id(o.get("id")).ok_or_else(|| GraphError::new(format!("node {i} has no `id` (a string or a number)")))?;
    let mut node = Node::new(id);
    let mut times = Vec::new();
    let mut extra = Map::new();
    for (k, val) in o {
        match k.as_str() {
            "id" => {}
            "op" => {
                node.op = match val {
                    Value::String(s) => s,
                    _ => return Err(GraphError::new(format!("node `{}`: `op` must be a string", node.id))),
                }
            }
            "flops" | "params" | "output_bytes" => {
                let x = if val.is_null() {
                    0
                } else {
                    non_negative(&val)
                        .map_err(|which| GraphError::new(format!("node `{}`: `{k}` is {val}, {which}", node.id)))?
                };
                match k.as_str() {
                    "flops" => node.flops = x,
                    "params" => node.params = x,
                    _ => node.output_bytes = x,
                }
            }
            "times" => times = parse_times(&node.id, val)?,
            "replicable" => {
                node.replicable = val
                    .as_bool()
                    .ok_or_else(|| GraphError::new(format!("node `{}`: `replicable` must be true or false", node.id)))?
            }
            _ => {
                extra.insert(k, val);
            }
        }
    }
    node.extra = extra;
    Ok((node, times))
}

// ------------------------------------------------------------ the pass

impl<'de> DeserializeSeed<'de> for &mut Reader {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(Top(self))
    }
}

/// Any JSON value, and what it was when it is not the one expected: the
/// visitors below accept every type so that a wrong one is a message of
/// this format, not serde's.
macro_rules! other_types {
    ($on_other:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
            Ok(($on_other)(self))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
            Ok(($on_other)(self))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
            Ok(($on_other)(self))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
            Ok(($on_other)(self))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
            Ok(($on_other)(self))
        }
        fn visit_unit<E: de::Error>(self) -> Result<(), E> {
            Ok(($on_other)(self))
        }
    };
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

struct Top<'r>(&'r mut Reader);

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a graph object")
    }

    other_types!(|s: Self| s.0.not_object = true);

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        self.0.not_object = true;
        drain_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let r = self.0;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "name" => {
                    r.seen("name", r.name.is_some());
                    r.name = Some(match map.next_value::<Value>()? {
                        Value::String(s) => Ok(s),
                        _ => Err(GraphError::new("`name` must be a string")),
                    });
                }
                "nodes" => {
                    r.seen("nodes", r.nodes.is_some());
                    map.next_value_seed(Nodes(&mut *r))?;
                }
                "edges" => {
                    r.seen("edges", r.edges_seen);
                    r.edges_seen = true;
                    map.next_value_seed(Edges(&mut *r))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct Nodes<'r>(&'r mut Reader);

impl<'de> DeserializeSeed<'de> for Nodes<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Nodes<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of nodes")
    }

    // Not an array: as if there were no `nodes`.
    other_types!(|_: Self| ());

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        drain_map(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let r = self.0;
        r.nodes = Some(Vec::with_capacity(seq.size_hint().unwrap_or(0)));
        let mut i = 0;
        while let Some(v) = seq.next_element::<Value>()? {
            r.node(i, v);
            i += 1;
        }
        r.index_nodes();
        Ok(())
    }
}

struct Edges<'r>(&'r mut Reader);

impl<'de> DeserializeSeed<'de> for Edges<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Edges<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of edges")
    }

    other_types!(|s: Self| s.0.edges_not_array = true);

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        self.0.edges_not_array = true;
        drain_map(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let r = self.0;
        let mut i = 0;
        while let Some(v) = seq.next_element::<Value>()? {
            r.edge(i, v);
            i += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::graph::parse_graph_json;

    fn error(text: &str) -> String {
        parse_graph_json(text).map(|_| ()).unwrap_err().message
    }

    #[test]
    fn edges_may_come_before_the_nodes() {
        let g = parse_graph_json(
            r#"{"edges": [{"from": "a", "to": "b", "bytes": 8}], "nodes": [{"id": "a"}, {"id": "b"}]}"#,
        )
        .unwrap();
        assert_eq!((g.edges[0].src, g.edges[0].dst, g.edges[0].bytes), (0, 1, 8));
        let e = error(r#"{"edges": [{"from": "a", "to": "c"}], "nodes": [{"id": "a"}]}"#);
        assert!(e.contains("edge 0 `to` names unknown node `c`"), "{e}");
    }

    #[test]
    fn the_syntax_is_judged_before_the_content() {
        // A bad node early and broken text later: the text's error, with its place.
        let e = error("{\"nodes\": [{\"id\": \"a\", \"flops\": -1}],\n\"edges\": [}");
        assert!(e.starts_with("line 2"), "{e}");
        let e = error(r#"{"nodes": [{"id": "a"}], "edges": []} x"#);
        assert!(e.contains("trailing characters"), "{e}");
    }

    #[test]
    fn errors_keep_their_order_of_priority() {
        // The name before the nodes, the nodes before the edges, whatever the key order.
        let e = error(r#"{"edges": 3, "nodes": [{"id": "a", "op": 1}], "name": 7}"#);
        assert_eq!(e, "`name` must be a string");
        let e = error(r#"{"edges": 3, "nodes": [{"id": "a", "op": 1}]}"#);
        assert_eq!(e, "node `a`: `op` must be a string");
        let e = error(r#"{"edges": [{"from": "x", "to": "a"}], "nodes": [{"id": "a"}, {"id": "a"}]}"#);
        assert_eq!(e, "duplicate node id `a`");
        assert_eq!(error(r#"{"nodes": [], "edges": null}"#), "`edges` must be an array");
        assert_eq!(error(r#"{"nodes": {"id": "a"}}"#), "missing `nodes` array");
        assert_eq!(error(r#"{"edges": []}"#), "missing `nodes` array");
        assert_eq!(
            error("[1, 2]"),
            "the top level must be an object with `nodes` and `edges`"
        );
        assert_eq!(error(r#"{"nodes": [3]}"#), "node 0 is not an object");
        assert_eq!(
            error(r#"{"nodes": [{"id": "a"}], "edges": [[]]}"#),
            "edge 0 is not an object"
        );
    }

    #[test]
    fn a_key_given_twice_is_refused() {
        let e = error(r#"{"nodes": [{"id": "a"}], "nodes": [{"id": "b"}]}"#);
        assert_eq!(e, "the top level has `nodes` twice");
    }

    #[test]
    fn measured_times_are_read_per_kind() {
        let g = parse_graph_json(
            r#"{"nodes": [{"id": "a", "times": {"a100": 1.25e-4, "cpu": 3}}, {"id": "b"},
                          {"id": "c", "times": {"cpu": 0}}, {"id": "d", "times": null}]}"#,
        )
        .unwrap();
        let p = g.profile();
        let (a100, cpu) = (p.kind_index("a100").unwrap(), p.kind_index("cpu").unwrap());
        assert_eq!((p.time(0, a100), p.time(0, cpu)), (Some(1.25e-4), Some(3.0)));
        assert_eq!(
            (p.time(1, cpu), p.time(2, cpu), p.time(3, cpu)),
            (None, Some(0.0), None)
        );
        assert!(!g.nodes[0].extra.contains_key("times"), "read, not kept as unknown");
        // Written back as read.
        let again = parse_graph_json(&crate::graph::to_json(&g).to_string()).unwrap();
        assert_eq!(again.profile(), g.profile());
        assert!(parse_graph_json(r#"{"nodes": [{"id": "a"}]}"#)
            .unwrap()
            .profile()
            .is_empty());
    }

    #[test]
    fn bad_times_name_the_node() {
        for (times, want) in [
            (
                r#"{"gpu": -1}"#,
                "node `n7`: `times.gpu` is -1, which is not a non-negative number of seconds",
            ),
            (
                r#"{"gpu": "fast"}"#,
                r#"node `n7`: `times.gpu` is "fast", which is not"#,
            ),
            (r#"{"gpu": [1]}"#, "node `n7`: `times.gpu` is [1]"),
            ("[1e-3]", "node `n7`: `times` is [0.001], which is not an object"),
            ("2", "node `n7`: `times` is 2"),
        ] {
            let e = error(&format!(r#"{{"nodes": [{{"id": "n7", "times": {times}}}]}}"#));
            assert!(e.starts_with(want), "{e}");
        }
        // A time too large for a float is the text's error, with its place.
        let e = error("{\"nodes\": [\n{\"id\": \"n7\", \"times\": {\"gpu\": 1e999}}]}");
        assert!(e.starts_with("line 2"), "{e}");
    }

    #[test]
    fn unknown_fields_are_kept_and_unknown_top_level_keys_skipped() {
        let g = parse_graph_json(r#"{"version": {"x": [1, 2]}, "nodes": [{"id": 5, "shape": [2, 3]}]}"#).unwrap();
        assert_eq!(g.nodes[0].id, "5");
        assert_eq!(g.nodes[0].extra["shape"], serde_json::json!([2, 3]));
    }
}
