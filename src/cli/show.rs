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
    let view = if a.file.extension().is_some_and(|x| x == "mcm") {
        package_view(out, a)?
    } else {
        graph_view(a)?
    };
    if let Some(d) = a.dest {
        std::fs::write(d, &view.drawing).map_err(|e| Error::output(format!("cannot write `{}`: {e}", d.display())))?;
    }
    if !out.json {
        if a.dest.is_none() {
            print!("{}", view.drawing);
        }
        return Ok(Status::Success);
    }
    // `--json` answers in JSON whatever is drawn: the package's JSON view
    // itself, else what was written where, or the drawing as a string.
    let format = format!("{:?}", view.format).to_lowercase();
    let mut v = match (&view.json, a.dest) {
        (_, Some(d)) => serde_json::json!({"out": d.display().to_string(), "format": format}),
        (Some(v), None) => v.clone(),
        (None, None) => serde_json::json!({"format": format, "drawing": view.drawing}),
    };
    if let Some(w) = &view.warnings {
        v["warnings"] = serde_json::json!(w);
    }
    out.print_json(&v);
    Ok(Status::Success)
}

/// What `show` drew: the text in its format (and the JSON view when that
/// is the format), and the warnings about a package (none for a graph).
struct View {
    format: Format,
    drawing: String,
    json: Option<serde_json::Value>,
    warnings: Option<Vec<String>>,
}

fn graph_view(a: &ShowArgs) -> Result<View> {
    if a.package.is_some() || a.problem.is_some() {
        return Err(Error::usage("--package and --problem are for .mcm files"));
    }
    let g = load_graph_file(a.file)?;
    let chips = match a.partition {
        None => None,
        Some(p) => Some(read_any_partition(p, &g).map_err(Error::input)?),
    };
    let format = a.format.unwrap_or(Format::Dot);
    let drawing = match format {
        Format::Dot => to_dot(&g, chips.as_deref()),
        Format::Svg => to_svg(&g, chips.as_deref()),
        f => {
            return Err(
                Error::usage(format!("a graph is drawn as dot or svg, not {f:?}").to_lowercase())
                    .with_help("`--format text|json` show the package of an .mcm file"),
            )
        }
    };
    Ok(View {
        format,
        drawing,
        json: None,
        warnings: None,
    })
}

fn package_view(out: &Output, a: &ShowArgs) -> Result<View> {
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
    let (drawing, json) = match format {
        Format::Text => (view::to_text(&package, loads.as_deref(), &warnings), None),
        Format::Json => {
            let v = view::to_json(&package, loads.as_deref(), &warnings);
            (serde_json::to_string_pretty(&v).unwrap_or_default() + "\n", Some(v))
        }
        Format::Svg => {
            // The picture has no room for them; `--json` carries them.
            if !out.json {
                for w in &warnings {
                    eprintln!("warning: {w}");
                }
            }
            (svg::to_svg(&package, loads.as_deref()), None)
        }
        Format::Dot => {
            return Err(Error::usage("a package is shown as text, json or svg, not dot"));
        }
    };
    Ok(View {
        format,
        drawing,
        json,
        warnings: Some(warnings),
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
