//! `mcmpart import` as a library call: the graph files it writes (JSON and
//! gzip) load back equal to what was imported, and its failures are clean
//! errors of the right kind that leave no file behind.

use crate::common;
use mcmpart::cli::{import, Output};
use mcmpart::error::{Kind, Status};
use mcmpart::graph::onnx::import_onnx;
use mcmpart::graph::{load_graph_file, Graph};
use std::path::PathBuf;

const FIXTURES: &[&str] = &["tiny_cnn", "mlp", "attention"];

fn fixture(name: &str) -> PathBuf {
    common::root().join("tests/data/onnx").join(name)
}

fn import_fixture(name: &str) -> Graph {
    let path = fixture(&format!("{name}.onnx"));
    import_onnx(&path).unwrap_or_else(|e| panic!("{name}: {} ({:?})", e.message, e.help))
}

fn scratch(name: &str) -> common::Scratch {
    common::scratch(&format!("import-{name}"))
}

fn assert_same_graph(a: &Graph, b: &Graph) {
    assert_eq!(a.name, b.name);
    assert_eq!(a.nodes, b.nodes);
    assert_eq!(a.edges, b.edges);
}

#[test]
fn import_run_writes_json_and_gzip_that_load_back_equal() {
    let dir = scratch("run");
    for json in [false, true] {
        let out = Output { json };
        for name in FIXTURES {
            let g = import_fixture(name);
            for ext in ["json", "json.gz"] {
                let dest = dir.join(format!("{name}-{json}.{ext}"));
                assert_eq!(
                    import::run(&out, &fixture(&format!("{name}.onnx")), &dest).unwrap(),
                    Status::Success
                );
                let raw = std::fs::read(&dest).unwrap();
                assert_eq!(raw.starts_with(&[0x1f, 0x8b]), ext.ends_with("gz"));
                assert_same_graph(&g, &load_graph_file(&dest).unwrap());
            }
        }
    }
    // Only the graph files are left: no temporary files.
    let left = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(left, 2 * 2 * FIXTURES.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn import_run_fails_cleanly() {
    let dir = scratch("run-fail");
    let out = Output { json: false };
    let dest = dir.join("t.json");
    let e = import::run(&out, &fixture("truncated.onnx"), &dest).unwrap_err();
    assert_eq!((e.kind, e.exit_code()), (Kind::Input, 1), "{e}");
    assert!(!dest.exists());
    let dest = dir.join("no/such/folder/t.json");
    let e = import::run(&out, &fixture("mlp.onnx"), &dest).unwrap_err();
    assert_eq!((e.kind, e.exit_code()), (Kind::Output, 1), "{e}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}
