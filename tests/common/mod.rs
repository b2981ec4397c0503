//! Helpers shared by the integration tests.
#![allow(dead_code)]

use mcmpart::lang::diag::render_text;
use mcmpart::lang::{compile_str, Compiled};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch folder for one test.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mcmpart-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
}

pub fn compile(text: &str) -> Compiled {
    compile_str("test.mcm", text, &root())
}

pub fn compile_in(dir: &Path, text: &str) -> Compiled {
    compile_str("test.mcm", text, dir)
}

/// The rendered diagnostics of a program that must not compile.
pub fn errors(text: &str) -> String {
    errors_in(&root(), text)
}

pub fn errors_in(dir: &Path, text: &str) -> String {
    let c = compile_in(dir, text);
    assert!(!c.ok(), "expected errors, the program compiled:\n{text}");
    // Unwrap the message lines miette folds at the terminal width.
    render_text(&c.program.sources, &c.diags).replace("\n  │ ", " ")
}

pub const HEADER: &str =
    "use std::placement::{acyclic_flow, no_skip, triangle_dependency, memory_capacity}\nuse std::topologies::ring\n";

/// Runs the built `mcmpart` binary in `dir`.
pub fn mcmpart_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcmpart"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run mcmpart")
}

/// Runs the built `mcmpart` binary in the repository root.
pub fn mcmpart(args: &[&str]) -> Output {
    mcmpart_in(&root(), args)
}

/// Standard output and standard error as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Standard output parsed as JSON.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", text(o)))
}
