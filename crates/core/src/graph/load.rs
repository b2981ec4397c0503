//! Reading and writing the graph file format (`*.json`, `*.json.gz`).

use super::{Graph, GraphError};
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
    let p = super::reader::read(text)?;
    Graph::indexed(p.name, p.nodes, p.index, p.edges)?.with_profile(p.profile)
}

/// Writes a graph in the file format.
pub fn to_json(g: &Graph) -> Value {
    let nodes: Vec<Value> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
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
            let times = g.profile.times(i);
            if !times.is_empty() {
                let kinds = g.profile.kinds();
                let t: Map<String, Value> = times
                    .iter()
                    .map(|&(k, s)| (kinds[k as usize].clone(), s.into()))
                    .collect();
                o.insert("times".into(), Value::Object(t));
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
