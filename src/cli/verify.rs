//! `mcmpart verify FILE --partition P.json`: the checker's verdict.

use super::output::{compile, Output};
use crate::diag::{render_text, Diag};
use crate::error::{Error, Result, Status};
use crate::problem::read_partition;
use crate::solver::{check, Violation};
use std::path::Path;

/// How many violated instances of one constraint are listed.
const SHOWN: usize = 5;

pub fn run(out: &Output, file: &Path, partition: &Path, problem: Option<&str>) -> Result {
    let c = compile(file)?;
    let p = c.problem(problem).map_err(Error::input)?;
    let placement = read_partition(partition, &p.graph, p.package.num_chips())?;
    let vs = check(&p.graph, &p.package, &p.constraints, &placement);
    if out.json {
        let list: Vec<serde_json::Value> = vs
            .iter()
            .map(|v| serde_json::json!({"constraint": v.name, "bindings": v.bindings, "details": v.details}))
            .collect();
        out.print_json(&serde_json::json!({
            "ok": true, "problem": p.name, "valid": vs.is_empty(), "violations": list,
        }));
    } else if vs.is_empty() {
        let names: Vec<String> = p.constraints.iter().map(|c| c.display_name()).collect();
        println!(
            "valid: {} satisfies {} ({} nodes on {} chips)",
            partition.display(),
            if names.is_empty() {
                "no constraints".to_string()
            } else {
                names.join(", ")
            },
            p.graph.num_placed(),
            p.package.num_chips()
        );
    } else {
        let diags = violation_diags(p, &vs);
        eprint!("{}", render_text(&c.program.sources, &diags));
        eprintln!("invalid: {} violation(s) of {} constraint(s)", vs.len(), diags.len());
    }
    Ok(Status::of(vs.is_empty()))
}

/// One diagnostic per violated constraint, pointing at its declaration and
/// at the line that requires it, listing the first few broken instances.
pub fn violation_diags(p: &crate::problem::Problem, vs: &[Violation]) -> Vec<Diag> {
    let mut out = Vec::new();
    for (ci, c) in p.constraints.iter().enumerate() {
        let mine: Vec<&Violation> = vs.iter().filter(|v| v.constraint == ci).collect();
        if mine.is_empty() {
            continue;
        }
        let mut lines: Vec<String> = mine.iter().take(SHOWN).map(|v| v.describe()).collect();
        if mine.len() > SHOWN {
            lines.push(format!("... and {} more", mine.len() - SHOWN));
        }
        out.push(
            Diag::error(
                "mcm::violation",
                format!("the partition breaks `{}` {} time(s)", c.display_name(), mine.len()),
            )
            .label(c.use_span, "required here")
            .label(c.decl_span, "declared here")
            .help(lines.join("\n")),
        );
    }
    out
}
