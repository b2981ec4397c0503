//! Reading and writing the graph file format (`*.json`, `*.json.gz`).

use super::{Graph, GraphError, Node};
use crate::textfile::{read_text, ReadError, TextError};
use serde_json::{Map, Value};
use std::path::Path;

/// The most bytes of JSON a graph file may hold, plain or decompressed.
const MAX_GRAPH_TEXT: u64 = crate::textfile::MAX_TEXT;

/// Reads a graph file, gzip-compressed or not (told by its first bytes).
pub fn load_graph_file(path: &Path) -> Result<Graph, GraphError> {
    let shown = path.display().to_string();
    let text = read_text(path, MAX_GRAPH_TEXT).map_err(|e| {
        let help = match e {
            ReadError::Io(_) => "check the path; relative paths are resolved against the .mcm file's folder",
            ReadError::NotAFile => "name a graph file; devices and pipes are not read",
            ReadError::FileTooLarge(_) | ReadError::Text(TextError::TooLarge(_)) => {
                "a graph file of this tool is at most a few megabytes; this one may be damaged, or no graph file"
            }
            ReadError::Text(_) => "a graph file is JSON text, gzipped or not",
        };
        GraphError::new(e.message("graph file", &shown)).with_help(help)
    })?;
    parse_graph_json(&text).map_err(|e| GraphError {
        message: format!("{shown}: {}", e.message),
        help: e.help,
    })
}

/// Parses the graph format from JSON text.
pub fn parse_graph_json(text: &str) -> Result<Graph, GraphError> {
    let v: Value = serde_json::from_str(text).map_err(|e| GraphError::new(crate::textfile::json_error(&e)))?;
    let obj = v
        .as_object()
        .ok_or_else(|| GraphError::new("the top level must be an object with `nodes` and `edges`"))?;
    let name = match obj.get("name") {
        None => "graph".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(GraphError::new("`name` must be a string")),
    };
    let nodes_v = obj
        .get("nodes")
        .and_then(Value::as_array)
        .ok_or_else(|| GraphError::new("missing `nodes` array"))?;
    let mut nodes = Vec::with_capacity(nodes_v.len());
    for (i, nv) in nodes_v.iter().enumerate() {
        nodes.push(parse_node(i, nv)?);
    }
    let mut index = std::collections::HashMap::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        if index.insert(n.id.as_str(), i).is_some() {
            return Err(
                GraphError::new(format!("duplicate node id `{}`", n.id)).with_help("every node needs its own id")
            );
        }
    }
    let edges_v = match obj.get("edges") {
        None => &Vec::new() as &Vec<Value>,
        Some(Value::Array(a)) => a,
        Some(_) => return Err(GraphError::new("`edges` must be an array")),
    };
    let mut edges = Vec::with_capacity(edges_v.len());
    for (i, ev) in edges_v.iter().enumerate() {
        let eo = ev
            .as_object()
            .ok_or_else(|| GraphError::new(format!("edge {i} is not an object")))?;
        let end = |key: &str| -> Result<usize, GraphError> {
            let id = node_id(eo.get(key))
                .ok_or_else(|| GraphError::new(format!("edge {i} has no `{key}` node id (a string or a number)")))?;
            let id = id.as_str();
            index.get(id).copied().ok_or_else(|| {
                let help = crate::diag::unknown_help(id, "node", index.keys().copied());
                GraphError::new(format!("edge {i} `{key}` names unknown node `{id}`")).with_help(help)
            })
        };
        let (s, d) = (end("from")?, end("to")?);
        let bytes = match eo.get("bytes") {
            None | Some(Value::Null) => None,
            Some(b) => Some(non_negative(b).map_err(|which| {
                GraphError::new(format!(
                    "edge {i} ({} -> {}) has `bytes` {b}, {which}",
                    nodes[s].id, nodes[d].id
                ))
            })?),
        };
        edges.push((s, d, bytes));
    }
    Graph::new(name, nodes, edges)
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

fn parse_node(i: usize, v: &Value) -> Result<Node, GraphError> {
    let o = v
        .as_object()
        .ok_or_else(|| GraphError::new(format!("node {i} is not an object")))?;
    let id =
        node_id(o.get("id")).ok_or_else(|| GraphError::new(format!("node {i} has no `id` (a string or a number)")))?;
    let mut node = Node::new(id);
    let mut extra = Map::new();
    for (k, val) in o {
        match k.as_str() {
            "id" => {}
            "op" => {
                node.op = val
                    .as_str()
                    .ok_or_else(|| GraphError::new(format!("node `{}`: `op` must be a string", node.id)))?
                    .to_string()
            }
            "flops" | "params" | "output_bytes" => {
                let x = if val.is_null() {
                    0
                } else {
                    non_negative(val)
                        .map_err(|which| GraphError::new(format!("node `{}`: `{k}` is {val}, {which}", node.id)))?
                };
                match k.as_str() {
                    "flops" => node.flops = x,
                    "params" => node.params = x,
                    _ => node.output_bytes = x,
                }
            }
            "replicable" => {
                node.replicable = val
                    .as_bool()
                    .ok_or_else(|| GraphError::new(format!("node `{}`: `replicable` must be true or false", node.id)))?
            }
            _ => {
                extra.insert(k.clone(), val.clone());
            }
        }
    }
    node.extra = extra;
    Ok(node)
}

/// Writes a graph in the file format.
pub fn to_json(g: &Graph) -> Value {
    let nodes: Vec<Value> = g
        .nodes
        .iter()
        .map(|n| {
            let mut o = Map::new();
            o.insert("id".into(), n.id.clone().into());
            o.insert("op".into(), n.op.clone().into());
            o.insert("flops".into(), n.flops.into());
            o.insert("params".into(), n.params.into());
            o.insert("output_bytes".into(), n.output_bytes.into());
            if n.replicable {
                o.insert("replicable".into(), true.into());
            }
            for (k, v) in &n.extra {
                o.insert(k.clone(), v.clone());
            }
            Value::Object(o)
        })
        .collect();
    let edges: Vec<Value> = g
        .edges
        .iter()
        .map(|e| serde_json::json!({"from": g.nodes[e.src].id, "to": g.nodes[e.dst].id, "bytes": e.bytes}))
        .collect();
    serde_json::json!({"name": g.name, "nodes": nodes, "edges": edges})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_spec_example() {
        let g = parse_graph_json(
            r#"{"name": "bert-large", "nodes": [
                {"id": "linear_3", "op": "linear", "flops": 268435456, "params": 0, "output_bytes": 524288},
                {"id": "w", "op": "get_attr", "flops": 0, "params": 4194304, "output_bytes": 4194304, "shape": [1024, 1024]}],
               "edges": [{"from": "w", "to": "linear_3"}]}"#,
        )
        .unwrap();
        assert_eq!(g.name, "bert-large");
        assert_eq!(g.edges[0].bytes, 4194304, "missing bytes default to the source output");
        assert!(g.nodes[1].extra.contains_key("shape"), "unknown fields are kept");
    }

    #[test]
    fn compressed_files_are_read_whole_and_bounded() {
        let dir = std::env::temp_dir().join(format!("mcmpart-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Two members (`cat a.gz b.gz`): both are read.
        let text = br#"{"nodes": [{"id": "a"}, {"id": "b"}], "edges": [{"from": "a", "to": "b"}]}"#;
        let (head, tail) = text.split_at(20);
        let two = [crate::textfile::gzip(head), crate::textfile::gzip(tail)].concat();
        std::fs::write(dir.join("two.json.gz"), two).unwrap();
        assert_eq!(load_graph_file(&dir.join("two.json.gz")).unwrap().nodes.len(), 2);
        // A small file that expands past the limit is refused.
        let mut big = b"{\"nodes\": [".to_vec();
        big.resize(MAX_GRAPH_TEXT as usize + 10, b' ');
        std::fs::write(dir.join("bomb.json.gz"), crate::textfile::gzip(&big)).unwrap();
        let e = load_graph_file(&dir.join("bomb.json.gz")).unwrap_err();
        assert!(e.message.contains("expands to more than 256 MiB"), "{}", e.message);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn numeric_ids_name_nodes_in_edges_too() {
        let g = parse_graph_json(r#"{"nodes": [{"id": 1}, {"id": "2"}], "edges": [{"from": 1, "to": 2}]}"#).unwrap();
        assert_eq!((g.edges[0].src, g.edges[0].dst), (0, 1));
        let e = parse_graph_json(r#"{"nodes": [{"id": 1}], "edges": [{"from": 1, "to": true}]}"#).unwrap_err();
        assert!(e.message.contains("edge 0 has no `to` node id"), "{}", e.message);
    }

    #[test]
    fn errors_name_the_cause() {
        let e = parse_graph_json(r#"{"nodes": [{"id": "a", "flops": -3}], "edges": []}"#).unwrap_err();
        assert!(
            e.message.contains("node `a`") && e.message.contains("-3"),
            "{}",
            e.message
        );
        let e = parse_graph_json(r#"{"nodes": [{"id": "a"}], "edges": [{"from": "a", "to": "ab"}]}"#).unwrap_err();
        assert!(e.message.contains("unknown node `ab`"), "{}", e.message);
        let e = parse_graph_json("{\"nodes\": [\n{\"id\": }]}").unwrap_err();
        assert!(e.message.starts_with("line 2"), "{}", e.message);
    }
}
