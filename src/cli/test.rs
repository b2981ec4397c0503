//! `mcmpart test FILE...`: runs every test block and reports each.

use super::output::Output;
use crate::error::{self, Error, Result};
use crate::testing::{self, Status};
use std::path::PathBuf;

pub fn run(out: &Output, files: &[PathBuf]) -> Result {
    let (mut passed, mut failed) = (0, 0);
    let mut compile_failed = false;
    let mut all = Vec::new();
    let mut broken_files = Vec::new();
    let mut without_tests = Vec::new();
    for f in files {
        let c = crate::lang::compile_file(f);
        if !c.ok() {
            compile_failed = true;
            if out.json {
                // One JSON document in all: the diagnostics go inside it.
                broken_files.push(serde_json::json!({
                    "file": f.display().to_string(),
                    "diagnostics": crate::diag::to_json(&c.program.sources, &c.diags),
                }));
            } else {
                // Reported here, and the other files still run.
                out.error(&Error::diagnostics(&c));
            }
            continue;
        }
        if c.tests.is_empty() {
            if !out.json {
                println!(
                    "{}: no tests (a test is a `test \"NAME\" {{ ... }}` block)",
                    f.display()
                );
            }
            without_tests.push(f.display().to_string());
        }
        for t in &c.tests {
            let r = testing::run(t);
            let (line, _) = c.program.sources.line_col(t.span);
            let (expect_line, _) = c.program.sources.line_col(t.expect_span);
            if r.status == Status::Pass {
                passed += 1;
            } else {
                failed += 1;
            }
            if !out.json {
                let tag = match r.status {
                    Status::Pass => "PASS",
                    Status::Fail => "FAIL",
                };
                // A failure points at the `expect` that failed, a pass at the test.
                let at = if r.status == Status::Pass { line } else { expect_line };
                println!("{tag} {}:{at}: \"{}\": {}", f.display(), r.name, r.message);
                if r.status != Status::Pass || r.violations.len() <= 3 {
                    for v in r.violations.iter().take(5) {
                        println!("    {v}");
                    }
                }
            }
            all.push(serde_json::json!({
                "file": f.display().to_string(), "line": line, "expect_line": expect_line, "result": r,
            }));
        }
    }
    if out.json {
        out.print_json(&serde_json::json!({
            "ok": !compile_failed && failed == 0, "passed": passed, "failed": failed, "tests": all,
            "errors": broken_files, "without_tests": without_tests,
        }));
    } else {
        println!("{passed} passed, {failed} failed");
    }
    Ok(error::Status::of(!compile_failed && failed == 0))
}
