//! Helpers of the root package's tests: the shared builders of
//! `mcm-testkit`, and running the built `mcmpart` binary.
#![allow(dead_code)]

pub use mcm_testkit::*;

use std::path::Path;
use std::process::{Command, Output};

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
