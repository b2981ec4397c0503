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
    let text = std::fs::read_to_string(&path).map_err(|e| {
        (
            format!("cannot read `{}`: {e}", path.display()),
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
    for (i, g) in graphs.iter().enumerate() {
        let field = |k: &str| g.get(k).and_then(Value::as_str);
        let s = field("split").unwrap_or("");
        splits.insert(s.to_string());
        if split.is_some_and(|want| want != s) {
            continue;
        }
        let file = field("file").ok_or_else(|| bad(&format!("graph {} has no `file`", i + 1)))?;
        let name = field("name")
            .map(String::from)
            .unwrap_or_else(|| file.trim_end_matches(".gz").trim_end_matches(".json").to_string());
        picked.push(Entry {
            name,
            path: dir.join(file),
            split: s.to_string(),
            nodes: g.get("nodes").and_then(Value::as_u64),
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
