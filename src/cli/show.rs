//! `mcmpart show FILE`: draws a graph file (`--format dot|svg`) or the
//! package of an `.mcm` file (`--format text|json|svg`), coloured by a
//! partition when one is given.

use super::output::{compile, refuse_overwriting, Output};
use crate::error::{Error, Result, Status};
use crate::graph::dot::{to_dot, to_svg};
use crate::graph::load_graph_file;
use crate::package::{svg, view};
use crate::problem::{parse_partition, read_partition};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Dot,
    Svg,
    Text,
    Json,
}

/// What to draw and where.
pub struct ShowArgs<'a> {
    pub file: &'a Path,
    pub partition: Option<&'a Path>,
    pub format: Option<Format>,
    pub dest: Option<&'a Path>,
    pub package: Option<&'a str>,
    pub problem: Option<&'a str>,
}

pub fn run(out: &Output, a: &ShowArgs) -> Result {
    let inputs: Vec<std::path::PathBuf> = std::iter::once(a.file)
        .chain(a.partition)
        .map(Path::to_path_buf)
        .collect();
    if let Some(d) = a.dest {
        refuse_overwriting(d, &inputs, "`show` reads")?;
    }
    let text = if a.file.extension().is_some_and(|x| x == "mcm") {
        package_view(out, a)?
    } else {
        graph_view(a)?
    };
    match a.dest {
        None => print!("{text}"),
        Some(d) => {
            std::fs::write(d, text).map_err(|e| Error::output(format!("cannot write `{}`: {e}", d.display())))?
        }
    }
    Ok(Status::Success)
}

fn graph_view(a: &ShowArgs) -> Result<String> {
    if a.package.is_some() || a.problem.is_some() {
        return Err(Error::usage("--package and --problem are for .mcm files"));
    }
    let g = load_graph_file(a.file)?;
    let chips = match a.partition {
        None => None,
        Some(p) => Some(read_any_partition(p, &g).map_err(Error::input)?),
    };
    Ok(match a.format.unwrap_or(Format::Dot) {
        Format::Dot => to_dot(&g, chips.as_deref()),
        Format::Svg => to_svg(&g, chips.as_deref()),
        f => {
            return Err(
                Error::usage(format!("a graph is drawn as dot or svg, not {f:?}").to_lowercase())
                    .with_help("`--format text|json` show the package of an .mcm file"),
            )
        }
    })
}

fn package_view(out: &Output, a: &ShowArgs) -> Result<String> {
    let c = compile(a.file)?;
    let (package, loads) = match a.partition {
        Some(part) => {
            if a.package.is_some() {
                return Err(Error::usage(
                    "--partition colours the package of a problem: use --problem, not --package",
                ));
            }
            let p = c.problem(a.problem).map_err(Error::usage)?;
            let placement = read_partition(part, &p.graph, p.package.num_chips())?;
            (p.package.clone(), Some(view::loads(&p.package, &p.graph, &placement)))
        }
        None if a.problem.is_some() => (c.problem(a.problem).map_err(Error::usage)?.package.clone(), None),
        None => (c.package(a.package).map_err(Error::usage)?, None),
    };
    // Consecutive chips matter when a problem on this package keeps data
    // flowing from lower to higher ids.
    let pipeline = c.problems.iter().any(|p| {
        std::sync::Arc::ptr_eq(&p.package, &package) && p.constraints.iter().any(|k| k.name == "acyclic_flow")
    });
    let warnings = view::warnings(&package, pipeline);
    let format = match a.format {
        Some(f) => f,
        None if out.json => Format::Json,
        None => Format::Text,
    };
    Ok(match format {
        Format::Text => view::to_text(&package, loads.as_deref(), &warnings),
        Format::Json => {
            serde_json::to_string_pretty(&view::to_json(&package, loads.as_deref(), &warnings)).unwrap_or_default()
                + "\n"
        }
        Format::Svg => {
            for w in &warnings {
                eprintln!("warning: {w}");
            }
            svg::to_svg(&package, loads.as_deref())
        }
        Format::Dot => {
            return Err(Error::usage("a package is shown as text, json or svg, not dot"));
        }
    })
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
