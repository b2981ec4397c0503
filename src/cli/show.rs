//! `mcmpart show GRAPH [--partition P.json] --format dot|svg`.

use super::Output;
use crate::graph::dot::{to_dot, to_svg};
use crate::graph::load_graph_file;
use crate::problem::parse_partition;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Dot,
    Svg,
}

pub fn run(out: &Output, graph: &Path, partition: Option<&Path>, format: Format, dest: Option<&Path>) -> i32 {
    let inputs: Vec<std::path::PathBuf> = std::iter::once(graph).chain(partition).map(Path::to_path_buf).collect();
    if dest.is_some_and(|d| super::overwrites_input(out, d, &inputs, "`show` reads")) {
        return 1;
    }
    let g = match load_graph_file(graph) {
        Ok(g) => g,
        Err(e) => {
            out.error(&e.message, e.help.as_deref());
            return 1;
        }
    };
    let chips = match partition {
        None => None,
        Some(p) => match read_any_partition(p, &g) {
            Ok(c) => Some(c),
            Err(m) => {
                out.error(&m, None);
                return 1;
            }
        },
    };
    let text = match format {
        Format::Dot => to_dot(&g, chips.as_deref()),
        Format::Svg => to_svg(&g, chips.as_deref()),
    };
    match dest {
        None => print!("{text}"),
        Some(d) => {
            if let Err(e) = std::fs::write(d, text) {
                out.error(&format!("cannot write `{}`: {e}", d.display()), None);
                return 1;
            }
        }
    }
    0
}

/// Reads a partition for drawing: the chip count comes from the file, or
/// from the largest chip id when the file does not say.
fn read_any_partition(p: &Path, g: &crate::graph::Graph) -> Result<Vec<Option<u32>>, String> {
    let text = std::fs::read_to_string(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
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
