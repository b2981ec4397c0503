//! `mcmpart train --placer gdp|mars`: the checkpoint and log in the run
//! folder, reproducibly; a placer that does not pretrain, and a folder that
//! holds one already, are refused.

use crate::common;

use common::{json, text};
use std::path::Path;

/// A graph folder (train: two chains) and a problem file.
fn setup(name: &str) -> common::Scratch {
    common::chain_data_set(name, &[("a", 5, "train"), ("b", 7, "train")])
}

fn train(dir: &Path, placer: &str, out: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "train",
        "--json",
        "--placer",
        placer,
        "--package",
        "ring.mcm",
        "--graphs",
        "graphs",
        "--out",
        out,
    ];
    args.extend(extra);
    common::mcmpart_in(dir, &args)
}

#[test]
fn gdp_pretraining_writes_its_checkpoint_and_log_reproducibly() {
    let dir = setup("train-gdp");
    for out in ["one", "two"] {
        let o = train(&dir, "gdp", out, &["--samples", "32", "--seed", "4"]);
        let (stdout, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{stdout}\n{err}");
        assert_eq!(json(&o)["ok"], true);
    }
    let bytes = |out: &str| std::fs::read(dir.join(out).join("gdp.safetensors")).unwrap();
    assert_eq!(bytes("one"), bytes("two"), "the same seed, the same weights");
    let log = std::fs::read_to_string(dir.join("one/log.csv")).unwrap();
    assert_eq!(
        log.lines().count(),
        1 + 2,
        "a header and two updates of 16 samples:\n{log}"
    );
    let sidecar = common::json_file(&dir.join("one/gdp.json"));
    assert_eq!(sidecar["placer"], "gdp");
    // The folder holds a checkpoint now: a second run there is refused.
    let o = train(&dir, "gdp", "one", &["--samples", "16"]);
    assert_ne!(o.status.code(), Some(0));
    // Under --json the error is the JSON answer on stdout.
    assert!(text(&o).0.contains("holds a gdp checkpoint"), "{:?}", text(&o));
}

#[test]
fn mars_pretraining_writes_its_encoder() {
    let dir = setup("train-mars");
    let o = train(&dir, "mars", "run", &["--dgi-steps", "20"]);
    let (stdout, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{err}");
    let sidecar = common::json_file(&dir.join("run/mars.json"));
    assert_eq!(sidecar["placer"], "mars");
    let tensors = sidecar["tensors"].as_object().unwrap();
    assert!(tensors.keys().all(|k| k.starts_with("encoder.")), "{tensors:?}");
    let log = std::fs::read_to_string(dir.join("run/log.csv")).unwrap();
    assert_eq!(log.lines().count(), 1 + 20);
}

#[test]
fn a_placer_that_does_not_pretrain_is_refused() {
    let dir = setup("train-placer-unknown");
    let o = train(&dir, "annealing", "run", &[]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert!(text(&o).0.contains("(placeto, gdp, mars)"), "{:?}", text(&o));
    assert!(!dir.join("run").exists());
}
