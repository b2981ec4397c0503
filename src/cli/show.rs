//! `mcmpart show GRAPH [--partition P.json] --format dot|svg`.

use super::output::refuse_overwriting;
use crate::error::{Error, Result, Status};
use crate::graph::dot::{to_dot, to_svg};
use crate::graph::load_graph_file;
use crate::problem::parse_partition;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Dot,
    Svg,
}

pub fn run(graph: &Path, partition: Option<&Path>, format: Format, dest: Option<&Path>) -> Result {
    let inputs: Vec<std::path::PathBuf> = std::iter::once(graph).chain(partition).map(Path::to_path_buf).collect();
    if let Some(d) = dest {
        refuse_overwriting(d, &inputs, "`show` reads")?;
    }
    let g = load_graph_file(graph)?;
    let chips = match partition {
        None => None,
        Some(p) => Some(read_any_partition(p, &g).map_err(Error::input)?),
    };
    let text = match format {
        Format::Dot => to_dot(&g, chips.as_deref()),
        Format::Svg => to_svg(&g, chips.as_deref()),
    };
    match dest {
        None => print!("{text}"),
        Some(d) => {
            std::fs::write(d, text).map_err(|e| Error::output(format!("cannot write `{}`: {e}", d.display())))?
        }
    }
    Ok(Status::Success)
}

/// Reads a partition for drawing: the chip count comes from the file, or
/// from the largest chip id when the file does not say.
fn read_any_partition(p: &Path, g: &crate::graph::Graph) -> std::result::Result<Vec<Option<u32>>, String> {
    let text = crate::textfile::read_text(p, crate::textfile::MAX_TEXT)
        .map_err(|e| e.message("partition file", &p.display().to_string()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: line {}: {e}", p.display(), e.line()))?;
    let chips = match v.get("chips").and_then(serde_json::Value::as_u64) {
        Some(c) => c as usize,
        None => v
            .get("placement")
            .and_then(serde_json::Value::as_object)
            .map(|m| {
                m.values()
                    .filter_map(serde_json::Value::as_u64)
                    .max()
                    .map_or(0, |x| x as usize + 1)
            })
            .unwrap_or(0),
    };
    let placement = parse_partition(&text, g, chips).map_err(|e| format!("{}: {}", p.display(), e.message))?;
    Ok((0..g.nodes.len())
        .map(|i| g.decision_of(i).map(|d| placement.chip(d)))
        .collect())
}
