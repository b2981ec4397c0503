//! The graph folder's `manifest.json`: which graph files there are and the
//! split (train, validation, test) each belongs to.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A graph file of the manifest.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub name: String,
    pub path: PathBuf,
    pub split: String,
    pub nodes: Option<u64>,
}

impl Entry {
    /// Whether the graph has at most `max` nodes (`--max-nodes`); a graph
    /// whose manifest entry does not say fits.
    pub fn fits(&self, max: Option<u64>) -> bool {
        max.is_none_or(|m| self.nodes.is_none_or(|n| n <= m))
    }
}

/// Why a manifest could not be used: a message and, where it helps, a hint.
pub type ManifestError = (String, Option<String>);

/// The graphs of `dir/manifest.json`, only those of `split` when given; an
/// empty selection is an error naming the splits there are.
pub fn entries(dir: &Path, split: Option<&str>) -> Result<Vec<Entry>, ManifestError> {
    let path = dir.join("manifest.json");
    let text = crate::textfile::read_text(&path, crate::textfile::MAX_TEXT).map_err(|e| {
        (
            e.message("manifest", &path.display().to_string()),
            Some("--graphs names a folder of graph files with a manifest.json".to_string()),
        )
    })?;
    let bad = |m: &str| (format!("`{}`: {m}", path.display()), None);
    let v: Value = serde_json::from_str(&text).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let graphs = v
        .get("graphs")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("missing the `graphs` array"))?;
    let mut picked = Vec::new();
    let mut splits = BTreeSet::new();
    let mut files = BTreeSet::new();
    for (i, g) in graphs.iter().enumerate() {
        // A field of the wrong type is an error, not a default: a split
        // written as a number read as none, a node count as a string let
        // `--max-nodes` pass the graph.
        let text = |k: &str| -> Result<Option<&str>, ManifestError> {
            match g.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(bad(&format!("graph {}: `{k}` is {other}, not a string", i + 1))),
            }
        };
        let s = text("split")?.unwrap_or("");
        splits.insert(s.to_string());
        let file = text("file")?.ok_or_else(|| bad(&format!("graph {} has no `file`", i + 1)))?;
        // Inside the folder: the manifest describes its own files.
        let inside = !file.is_empty()
            && Path::new(file)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside {
            return Err(bad(&format!(
                "graph {}: `file` `{file}` is not a path inside the folder",
                i + 1
            )));
        }
        if !files.insert(file) {
            return Err(bad(&format!("graph {}: `{file}` is listed twice", i + 1)));
        }
        let nodes = match g.get("nodes") {
            None | Some(Value::Null) => None,
            Some(n) => Some(
                n.as_u64()
                    .ok_or_else(|| bad(&format!("graph {}: `nodes` is {n}, not a count", i + 1)))?,
            ),
        };
        if split.is_some_and(|want| want != s) {
            continue;
        }
        let name = text("name")?
            .map(String::from)
            .unwrap_or_else(|| file.trim_end_matches(".gz").trim_end_matches(".json").to_string());
        picked.push(Entry {
            name,
            path: dir.join(file),
            split: s.to_string(),
            nodes,
        });
    }
    if picked.is_empty() {
        let known: Vec<String> = splits.into_iter().filter(|s| !s.is_empty()).collect();
        let what = match split {
            Some(s) => format!("the split `{s}` of `{}` has no graph", path.display()),
            None => format!("`{}` lists no graph", path.display()),
        };
        let help = (!known.is_empty()).then(|| format!("the splits are {}", known.join(", ")));
        return Err((what, help));
    }
    Ok(picked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(graphs: &str) -> Result<Vec<Entry>, ManifestError> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("mcmpart-manifest-{}-{k}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("manifest.json"), format!("{{\"graphs\": [{graphs}]}}")).unwrap();
        let r = entries(&dir, None);
        let _ = std::fs::remove_dir_all(&dir);
        r
    }

    #[test]
    fn the_shipped_manifest_is_read() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/graphs");
        assert!(entries(&dir, Some("test")).unwrap().len() >= 20);
    }

    #[test]
    fn fields_of_the_wrong_type_and_paths_outside_are_errors() {
        assert_eq!(
            with(r#"{"file": "a.json", "split": "test", "nodes": 3}"#).unwrap()[0].nodes,
            Some(3)
        );
        for (graphs, why) in [
            (r#"{"file": 5}"#, "`file` is 5, not a string"),
            (r#"{"file": "a.json", "split": 1}"#, "`split` is 1, not a string"),
            (r#"{"file": "a.json", "nodes": "7"}"#, "`nodes` is \"7\", not a count"),
            (r#"{"file": "a.json", "nodes": -1}"#, "`nodes` is -1, not a count"),
            (r#"{"file": "../a.json"}"#, "is not a path inside the folder"),
            (r#"{"file": "/etc/a.json"}"#, "is not a path inside the folder"),
            (r#"{"file": ""}"#, "is not a path inside the folder"),
            (r#"{"file": "a.json"}, {"file": "a.json"}"#, "listed twice"),
        ] {
            let e = with(graphs).unwrap_err();
            assert!(e.0.contains(why), "{graphs}: {}", e.0);
        }
    }
}
