//! Helpers shared by the integration tests.
#![allow(dead_code)]

use mcmpart::lang::diag::render_text;
use mcmpart::lang::{compile_str, Compiled};
use std::path::{Path, PathBuf};

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
