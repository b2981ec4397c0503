//! `mcmpart fmt FILE... [--check]`: rewrites files in the one layout of
//! `mcm_lang::format`, or with `--check` lists those that are not in it.

use super::output::Output;
use crate::error::{Error, Result, Status};
use crate::lang::format::format_source;
use crate::source::SourceMap;
use std::path::PathBuf;

pub fn run(out: &Output, files: &[PathBuf], check: bool) -> Result {
    let mut changed = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(f).map_err(|e| Error::input(format!("cannot read `{}`: {e}", f.display())))?;
        let formatted = format_source(&text).map_err(|diags| {
            let mut sources = SourceMap::new();
            sources.add(f.display().to_string(), Some(f.clone()), text.as_str());
            Error::source_diagnostics(&sources, &diags)
        })?;
        if formatted == text {
            continue;
        }
        changed.push(f.display().to_string());
        if !check {
            std::fs::write(f, formatted).map_err(|e| Error::output(format!("cannot write `{}`: {e}", f.display())))?;
        }
    }
    let ok = !check || changed.is_empty();
    if out.json {
        out.print_json(&serde_json::json!({"ok": ok, "check": check, "changed": changed}));
    } else {
        let verb = if check { "not formatted" } else { "formatted" };
        for f in &changed {
            println!("{verb}: {f}");
        }
        if check && !changed.is_empty() {
            println!("run `mcmpart fmt` on these files");
        }
    }
    Ok(Status::of(ok))
}
