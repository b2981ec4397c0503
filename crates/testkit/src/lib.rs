//! Builders shared by the tests of every crate of the workspace: compiling
//! programs, the stdlib header, graphs and problems made to measure, random
//! topologies and DAGs for the property tests, and scratch folders. What
//! runs the `mcmpart` binary stays with the root package's tests.

pub mod mutate;
pub mod random;

use mcm_core::diag::render_text;
use mcm_lang::{compile_str, Compiled};
use std::path::{Path, PathBuf};

/// The workspace root, where `examples/`, `data/` and `tests/` are: paths in
/// the tests are relative to it whichever crate's tests run.
pub fn root() -> PathBuf {
    let kit = Path::new(env!("CARGO_MANIFEST_DIR"));
    kit.parent()
        .and_then(Path::parent)
        .expect("crates/testkit is two levels below the root")
        .to_path_buf()
}

/// A fresh scratch folder for one test.
pub fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("mcmpart-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch folder");
    Scratch(d)
}

/// A test's scratch folder, removed with its contents when dropped, so that
/// test runs do not fill the temp folder. A test that panics keeps its
/// folder, for the files that show what went wrong.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A program compiled as if it were a file in the workspace root.
pub fn compile(text: &str) -> Compiled {
    compile_str("test.mcm", text, &root())
}

/// A program compiled as if it were a file in `dir`.
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

/// The rendered diagnostics of a program in `dir` that must not compile.
pub fn errors_in(dir: &Path, text: &str) -> String {
    let c = compile_in(dir, text);
    assert!(!c.ok(), "expected errors, the program compiled:\n{text}");
    // Unwrap the message lines miette folds at the terminal width.
    render_text(&c.program.sources, &c.diags).replace("\n  │ ", " ")
}

/// The stdlib's four placement rules and its ring.
pub const HEADER: &str =
    "use std::placement::{acyclic_flow, no_skip, triangle_dependency, memory_capacity}\nuse std::topologies::ring\n";

/// A scratch folder `name` for the training commands' tests: a data set of
/// chains under `graphs/` (each `(name, compute nodes, split)`, with its
/// manifest) and `ring.mcm`, a 4-chip ring problem on a chain of its own
/// (`own.json`, 8 compute nodes).
pub fn chain_data_set(name: &str, chains: &[(&str, usize, &str)]) -> Scratch {
    let dir = scratch(name);
    let graphs = dir.join("graphs");
    std::fs::create_dir_all(&graphs).unwrap();
    let entries: Vec<String> = chains
        .iter()
        .map(|&(g, n, split)| {
            std::fs::write(graphs.join(format!("{g}.json")), chain_graph(g, n, 0)).unwrap();
            format!(
                r#"{{"name": "{g}", "split": "{split}", "file": "{g}.json", "nodes": {}}}"#,
                n + 1
            )
        })
        .collect();
    let manifest = format!(r#"{{"format_version": 1, "graphs": [{}]}}"#, entries.join(", "));
    std::fs::write(graphs.join("manifest.json"), manifest).unwrap();
    std::fs::write(dir.join("own.json"), chain_graph("own", 8, 0)).unwrap();
    std::fs::write(dir.join("ring.mcm"), ring_problem("own.json", 4)).unwrap();
    dir
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_the_workspace_root_whichever_crate_asks() {
        let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("a Cargo.toml at the root");
        assert!(manifest.contains("[workspace]"), "{}", root().display());
        assert!(root().join("examples/quickstart.mcm").is_file());
    }

    #[test]
    fn the_builders_make_programs_that_compile() {
        let dir = scratch("kit-ring");
        std::fs::write(dir.join("g.json"), chain_graph("g", 4, 1024)).unwrap();
        let c = compile_in(&dir, &ring_problem("g.json", 3));
        assert!(c.ok(), "{}", render_text(&c.program.sources, &c.diags));
        assert_eq!(c.problem(None).unwrap().graph.nodes.len(), 6);
        assert!(errors("let x = ").contains("test.mcm"));
        let path = dir.to_path_buf();
        drop(dir);
        assert!(!path.exists(), "a dropped scratch folder is removed");
    }
}
