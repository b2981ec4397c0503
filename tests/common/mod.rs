//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod random;

use mcmpart::diag::render_text;
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

/// A program that must compile: its diagnostics are the failure message.
pub fn compile_ok(text: &str) -> Compiled {
    let c = compile(text);
    assert!(c.ok(), "{}", render_text(&c.program.sources, &c.diags));
    c
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

/// A JSON file the binary wrote.
pub fn json_file(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON ({e})", path.display()))
}

/// Standard output parsed as JSON.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", text(o)))
}

/// A chain of `n` compute nodes after an input, with `heavy` bytes of
/// weights on the first (0 for none).
pub fn chain_graph(name: &str, n: usize, heavy: u64) -> String {
    let mut nodes = vec![r#"{"id": "input", "op": "placeholder", "output_bytes": 4096}"#.to_string()];
    let mut edges = Vec::new();
    if heavy > 0 {
        nodes.push(format!(
            r#"{{"id": "w", "op": "get_attr", "params": {heavy}, "output_bytes": {heavy}}}"#
        ));
        edges.push(r#"{"from": "w", "to": "n0"}"#.to_string());
    }
    let mut prev = "input".to_string();
    for i in 0..n {
        let flops = 1_000_000 * (1 + (i * 7) % 5);
        nodes.push(format!(
            r#"{{"id": "n{i}", "op": "linear", "flops": {flops}, "output_bytes": {}}}"#,
            4096 * (1 + i % 3)
        ));
        edges.push(format!(r#"{{"from": "{prev}", "to": "n{i}"}}"#));
        prev = format!("n{i}");
    }
    format!(
        r#"{{"name": "{name}", "nodes": [{}], "edges": [{}]}}"#,
        nodes.join(", "),
        edges.join(", ")
    )
}

/// A problem placing `graph` on a ring of `chips` dies of 1 MiB under the stdlib rules.
pub fn ring_problem(graph: &str, chips: usize) -> String {
    format!(
        "{}let package = ring(n = {chips}, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)\n\
         let g = graph(\"{graph}\")\n\
         partition g onto package {{\n    require acyclic_flow, no_skip, triangle_dependency, memory_capacity\n    maximize throughput\n}}\n",
        HEADER
    )
}

/// A problem block's `require` line for `rules` (empty when none).
pub fn require_line(rules: &[&str]) -> String {
    if rules.is_empty() {
        String::new()
    } else {
        format!("require {}", rules.join(", "))
    }
}
