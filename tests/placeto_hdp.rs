//! The literature's learned placers from the command line: `train --placer
//! placeto` writes a checkpoint, a log and a report, the same for the same
//! seed; an unknown placer is a usage error; `solve --strategy hdp` and
//! `placeto` emit partitions `verify` accepts.

use crate::common;

use common::{json, mcmpart_in, text};

/// A graph folder (train: two chains) and a problem file.
fn setup(name: &str) -> common::Scratch {
    common::chain_data_set(name, &[("a", 5, "train"), ("b", 8, "train")])
}

fn train(dir: &std::path::Path, out: &str) -> serde_json::Value {
    let o = mcmpart_in(
        dir,
        &[
            "train",
            "--json",
            "--placer",
            "placeto",
            "--package",
            "ring.mcm",
            "--graphs",
            "graphs",
            "--samples",
            "40",
            "--seed",
            "3",
            "--out",
            out,
        ],
    );
    let (stdout, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{err}");
    json(&o)
}

#[test]
fn train_placer_placeto_writes_a_checkpoint_reproducibly() {
    let dir = setup("placeto-train");
    let a = train(&dir, "a");
    let b = train(&dir, "b");
    assert_eq!(a["report"]["samples"], 40, "{a}");
    assert_eq!(a["report"]["episodes"], b["report"]["episodes"]);
    assert_eq!(a["report"]["gains"], b["report"]["gains"]);
    for f in ["placeto.safetensors", "placeto.json", "log.csv"] {
        assert!(dir.join("a").join(f).exists(), "{f}");
    }
    let weights = |d: &str| std::fs::read(dir.join(d).join("placeto.safetensors")).unwrap();
    assert_eq!(weights("a"), weights("b"));
}

#[test]
fn an_unknown_placer_is_a_usage_error() {
    let dir = setup("placeto-unknown");
    let o = mcmpart_in(
        &dir,
        &[
            "train",
            "--placer",
            "nope",
            "--package",
            "ring.mcm",
            "--graphs",
            "graphs",
            "--out",
            "x",
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        err.contains("`nope` is not a placer that pretrains") && err.contains("placeto"),
        "{err}"
    );
}

#[test]
fn hdp_and_placeto_partitions_pass_verify() {
    let dir = setup("placers-solve");
    for s in ["hdp", "placeto", "placeto-tune", "placeto-scratch"] {
        let out = format!("{s}.json");
        let o = mcmpart_in(
            &dir,
            &[
                "solve",
                "ring.mcm",
                "--strategy",
                s,
                "--budget",
                "24",
                "--seed",
                "1",
                "--out",
                &out,
            ],
        );
        let (stdout, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{s}: {stdout}\n{err}");
        let v = mcmpart_in(&dir, &["verify", "ring.mcm", "--partition", &out]);
        let (stdout, err) = text(&v);
        assert_eq!(v.status.code(), Some(0), "{s}: {stdout}\n{err}");
    }
}
