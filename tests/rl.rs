//! The learned policy end to end: `mcmpart train` writes checkpoints, logs
//! and a curve, reproducibly; `solve --strategy rl` uses what it wrote and
//! emits partitions `verify` accepts; the no-solver ablation breaks rules
//! that FIX keeps; damaged checkpoints are refused.

use crate::common;

use common::{chain_graph, json, mcmpart_in, text};
use std::path::{Path, PathBuf};

/// A graph folder (train: three chains, validation: one) and a problem file.
fn setup(name: &str) -> (common::Scratch, PathBuf) {
    let dir = common::chain_data_set(
        name,
        &[
            ("a", 5, "train"),
            ("b", 7, "train"),
            ("c", 9, "train"),
            ("v", 6, "validation"),
        ],
    );
    let file = dir.join("ring.mcm");
    (dir, file)
}

const SMALL: &[&str] = &[
    "--package",
    "ring.mcm",
    "--graphs",
    "graphs",
    "--samples",
    "60",
    "--rollouts",
    "10",
    "--epochs",
    "2",
    "--layers",
    "2",
    "--hidden",
    "16",
    "--iterations",
    "2",
    "--checkpoint-every",
    "2",
    "--val-samples",
    "4",
    "--val-updates",
    "1",
];

fn train(dir: &Path, out: &str) -> serde_json::Value {
    train_on(dir, out, None)
}

/// `train` with rayon's pool at `threads` when given.
fn train_on(dir: &Path, out: &str, threads: Option<usize>) -> serde_json::Value {
    let mut args = vec!["train", "--json", "--out", out];
    args.extend(SMALL);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcmpart"));
    cmd.args(&args).current_dir(dir);
    if let Some(t) = threads {
        cmd.env("RAYON_NUM_THREADS", t.to_string());
    }
    let o = cmd.output().expect("run mcmpart");
    let (stdout, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{err}");
    json(&o)
}

fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}

#[test]
fn train_writes_checkpoints_logs_and_a_curve_that_rl_then_uses() {
    let (dir, _) = setup("rl-train");
    let v = train(&dir, "run");
    assert_eq!(v["updates"], 6, "{v}");
    assert_eq!(v["samples"], 60, "{v}");
    let run = dir.join("run");
    for f in [
        "ckpt-00002.safetensors",
        "ckpt-00002.json",
        "ckpt-00006.json",
        "best.safetensors",
        "best.json",
        "train.json",
    ] {
        assert!(run.join(f).is_file(), "missing {f}");
    }
    let log = csv_rows(&run.join("log.csv"));
    assert_eq!(log.len(), 6);
    let graphs: std::collections::BTreeSet<&str> = log.iter().map(|r| r[2].as_str()).collect();
    assert_eq!(
        graphs.into_iter().collect::<Vec<_>>(),
        ["a", "b", "c"],
        "each training graph is visited"
    );
    assert!(
        log.iter().all(|r| r[3].parse::<f64>().unwrap() > 0.0),
        "FIX rollouts are valid: {log:?}"
    );
    let val = csv_rows(&run.join("validation.csv"));
    assert_eq!(val.len(), 3, "checkpoints at updates 2, 4, 6");
    let best = &v["best"];
    let best_tuned = best["fine_tuned"].as_f64().unwrap();
    assert!(val.iter().all(|r| r[4].parse::<f64>().unwrap() <= best_tuned + 1e-6));
    let svg = std::fs::read_to_string(run.join("curve.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("validation, fine-tuned"));

    // The best checkpoint drives `solve`, fine-tuned and zero-shot.
    for extra in [&[][..], &["--zero-shot"][..]] {
        let mut args = vec![
            "solve",
            "ring.mcm",
            "--strategy",
            "rl",
            "--policy",
            "run/best",
            "--budget",
            "25",
            "--out",
            "p.json",
            "--json",
        ];
        args.extend(extra);
        let o = mcmpart_in(&dir, &args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
        let s = json(&o);
        assert_eq!(s["samples"], 25);
        assert_eq!(s["invalid"], 0, "{s}");
        let o = mcmpart_in(&dir, &["verify", "ring.mcm", "--partition", "p.json"]);
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    }
}

#[test]
fn training_is_reproducible_with_a_seed() {
    // On one thread and on three: rollouts go to threads as rayon splits
    // them, and none may carry solver state into another.
    let (dir, _) = setup("rl-seed");
    train_on(&dir, "one", Some(1));
    train_on(&dir, "two", Some(3));
    let strip = |rows: Vec<Vec<String>>| -> Vec<Vec<String>> {
        rows.into_iter()
            .map(|mut r| {
                r.pop(); // elapsed seconds
                r
            })
            .collect()
    };
    assert_eq!(
        strip(csv_rows(&dir.join("one/log.csv"))),
        strip(csv_rows(&dir.join("two/log.csv")))
    );
    assert_eq!(
        std::fs::read(dir.join("one/best.safetensors")).unwrap(),
        std::fs::read(dir.join("two/best.safetensors")).unwrap()
    );
}

#[test]
fn without_the_solver_rules_break_and_with_it_they_hold() {
    let (dir, _) = setup("rl-nosolver");
    // A chain of eight nodes over four dies, 600 KiB of weights on the
    // first: a uniform draw almost never keeps the flow acyclic.
    std::fs::write(dir.join("own.json"), chain_graph("own", 8, 600 << 10)).unwrap();
    let run = |strategy: &str| {
        let o = mcmpart_in(
            &dir,
            &[
                "solve",
                "ring.mcm",
                "--strategy",
                strategy,
                "--from-scratch",
                "--budget",
                "40",
                "--seed",
                "3",
                "--out",
                "p.json",
                "--json",
            ],
        );
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    let (code, out, err) = run("rl-nosolver");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}\n{err}"));
    // Every rollout is a draw, and the draws break the rules (the judge never
    // sees them): no valid partition in 40 samples, said with the rule
    // broken most often, and a non-zero exit.
    assert_eq!(code, Some(1), "{v}");
    assert!(v["error"].as_str().unwrap().contains("no valid partition"), "{v}");
    assert!(v["help"].as_str().unwrap().contains("breaks `acyclic_flow`"), "{v}");
    assert!(v["error"].as_str().unwrap().contains("all 40 were invalid"), "{v}");

    let (code, out, err) = run("rl-scratch");
    assert_eq!(code, Some(0), "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["invalid_reasons"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r["reason"].as_str().unwrap().starts_with("breaks")),
        "{v}"
    );
    assert!(
        v["curve"][0]["throughput"].is_number(),
        "the first sample is valid: {v}"
    );
}

#[test]
fn damaged_or_missing_checkpoints_are_refused() {
    let (dir, _) = setup("rl-corrupt");
    let solve = |policy: &str| {
        let o = mcmpart_in(
            &dir,
            &[
                "solve",
                "ring.mcm",
                "--strategy",
                "rl",
                "--policy",
                policy,
                "--budget",
                "5",
            ],
        );
        let (out, err) = text(&o);
        (o.status.code(), format!("{out}{err}"))
    };
    // A checkpoint is an input: exit 1, as for any file that does not load.
    let (code, msg) = solve("nowhere/model");
    assert_eq!(code, Some(1), "{msg}");
    assert!(msg.contains("nowhere/model") && msg.contains("cannot access"), "{msg}");
    let o = mcmpart_in(
        &dir,
        &[
            "compare",
            "ring.mcm",
            "--out",
            "c",
            "--strategies",
            "random,rl",
            "--policy",
            "nowhere/model",
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{out}
{err}"
    );
    assert!(err.contains("nowhere/model") && !dir.join("c").exists(), "{err}");

    train(&dir, "run");
    // A second run into the same folder is refused, and the first is kept.
    let kept = std::fs::read(dir.join("run/best.safetensors")).unwrap();
    let mut args = vec!["train", "--out", "run", "--seed", "1"];
    args.extend(SMALL);
    let o = mcmpart_in(&dir, &args);
    let (stdout, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{err}");
    assert!(err.contains("holds an earlier training run (train.json)"), "{err}");
    assert_eq!(std::fs::read(dir.join("run/best.safetensors")).unwrap(), kept);
    std::fs::write(dir.join("afile"), "x").unwrap();
    args[2] = "afile";
    let o = mcmpart_in(&dir, &args);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).1.contains("--out `afile` is a file, not a folder"),
        "{:?}",
        text(&o)
    );
    std::fs::copy(dir.join("run/best.json"), dir.join("run/bad.json")).unwrap();
    let mut weights = std::fs::read(dir.join("run/best.safetensors")).unwrap();
    let mid = weights.len() / 2;
    weights[mid] ^= 0xff;
    std::fs::write(dir.join("run/bad.safetensors"), weights).unwrap();
    let (code, msg) = solve("run/bad");
    assert_eq!(code, Some(1), "{msg}");
    assert!(msg.contains("bad.safetensors") && msg.contains("damaged"), "{msg}");
    // Naming the weights file works as well as naming the stem.
    let (code, msg) = solve("run/best.safetensors");
    assert_eq!(code, Some(0), "{msg}");
}

/// A data set of one training graph `name` (file `name.json`) in `folder`.
fn one_graph_set(folder: &Path, name: &str, graph: &str) {
    std::fs::create_dir_all(folder).unwrap();
    std::fs::write(folder.join(format!("{name}.json")), graph).unwrap();
    let manifest = serde_json::json!({
        "format_version": 1,
        "graphs": [{"name": name, "split": "train", "file": format!("{name}.json"), "nodes": 1}],
    });
    std::fs::write(folder.join("manifest.json"), manifest.to_string()).unwrap();
}

/// `train --package FILE` trains on the data set's graphs, not on FILE's
/// graph: it says which, after `--max-nodes`, and which validate.
#[test]
fn train_says_which_graphs_it_trains_on() {
    let (dir, _) = setup("rl-train-says");
    let mut args = vec!["train", "--out", "run", "--max-nodes", "8"];
    args.extend(SMALL);
    let o = mcmpart_in(&dir, &args);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(
        err.contains(
            "training on 2 graphs of the `train` split of graphs with at most 8 nodes, \
             each under the package and rules of ring.mcm: a, b\n"
        ),
        "{err}"
    );
    assert!(
        err.contains("validating on 1 graph of the `validation` split: v\n"),
        "{err}"
    );
    assert!(
        !err.contains("own"),
        "the package file's own graph is not trained on: {err}"
    );
}

#[test]
fn train_errors_are_clean() {
    let (dir, _) = setup("rl-train-errors");
    let o = mcmpart_in(
        &dir,
        &[
            "train",
            "--package",
            "ring.mcm",
            "--graphs",
            "graphs",
            "--split",
            "nope",
            "--out",
            "x",
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        err.contains("the split `nope`") && err.contains("train, validation"),
        "{err}"
    );
    // A graph the package cannot take is skipped, saying why.
    one_graph_set(
        &dir.join("masks"),
        "m",
        r#"{"nodes": [{"id": "mask", "op": "placeholder", "replicable": true}], "edges": []}"#,
    );
    let o = mcmpart_in(
        &dir,
        &["train", "--package", "ring.mcm", "--graphs", "masks", "--out", "x"],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        err.contains("skipping `m`") && err.contains("has no nodes to place") && err.contains("no usable graph"),
        "{err}"
    );
    // A graph file that does not load stops training before it starts.
    one_graph_set(&dir.join("broken"), "b", "{ not json");
    let o = mcmpart_in(
        &dir,
        &["train", "--package", "ring.mcm", "--graphs", "broken", "--out", "y"],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        err.contains("cannot load the graph `b`") && err.contains("b.json"),
        "{err}"
    );
    assert!(!dir.join("y/log.csv").exists());
    let o = mcmpart_in(
        &dir,
        &["train", "--package", "missing.mcm", "--graphs", "graphs", "--out", "x"],
    );
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o).1.contains("missing.mcm"), "{:?}", text(&o));
}

#[test]
fn imitation_warm_up_learns_the_baseline_and_is_scored_as_update_zero() {
    let (dir, _) = setup("rl-imitate");
    let mut args = vec![
        "train",
        "--json",
        "--out",
        "run",
        "--imitate",
        "400",
        "--imitate-lr",
        "1e-2",
    ];
    args.extend(SMALL);
    let o = mcmpart_in(&dir, &args);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    let steps = csv_rows(&dir.join("run/imitate.csv"));
    assert_eq!(steps.len(), 400);
    let mean = |rows: &[Vec<String>], col: usize| {
        rows.iter().map(|r| r[col].parse::<f64>().unwrap()).sum::<f64>() / rows.len() as f64
    };
    let (first, last) = (&steps[..30], &steps[370..]);
    assert!(
        mean(last, 2) < 0.5 * mean(first, 2),
        "imitation loss {} -> {}",
        mean(first, 2),
        mean(last, 2)
    );
    assert!(
        mean(last, 3) > mean(first, 3),
        "imitation accuracy {} -> {}",
        mean(first, 3),
        mean(last, 3)
    );
    assert!(dir.join("run/ckpt-00000.safetensors").is_file());
    let val = csv_rows(&dir.join("run/validation.csv"));
    assert_eq!(val[0][0], "0", "{val:?}");
    assert_eq!(val.len(), 4);
}

/// Training through the library: the events it reports are the updates it
/// returns and logs, and the runs it refuses are refused by kind (nothing
/// to do is a usage error, a folder holding a run an input one).
#[test]
fn train_runs_as_a_library_and_reports_its_updates() {
    use mcmpart::error::Kind;
    use mcmpart::experiment::train::{self, Config, Event};
    use mcmpart::pretrain::TrainConfig;
    let (dir, problem) = setup("rl-library");
    let mut cfg = TrainConfig {
        samples: 30,
        checkpoint_every: 3,
        val_samples: 2,
        val_updates: 1,
        ..TrainConfig::default()
    };
    cfg.ppo.rollouts = 10;
    cfg.ppo.epochs = 1;
    cfg.policy.layers = 1;
    cfg.policy.hidden = 8;
    cfg.policy.iterations = 1;
    let config = Config {
        graphs: dir.join("graphs"),
        split: "train".into(),
        val_split: "validation".into(),
        packages: vec![problem],
        out: dir.join("run"),
        max_nodes: None,
        train: cfg,
        command: "test".into(),
    };
    let (mut updates, mut started) = (Vec::new(), None);
    let report = train::run(&config, &mut |e| match e {
        Event::Updated(log, _) => updates.push((log.update, log.samples, log.task.clone())),
        Event::Starting { train, validation } => started = Some((train.len(), validation.len())),
        _ => {}
    })
    .unwrap();
    assert_eq!(started, Some((3, 1)));
    let returned: Vec<_> = report
        .updates
        .iter()
        .map(|u| (u.update, u.samples, u.task.clone()))
        .collect();
    assert_eq!(updates, returned);
    assert_eq!(updates.len(), 3);
    let logged: Vec<_> = csv_rows(&config.out.join("log.csv"))
        .into_iter()
        .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap(), r[2].clone()))
        .collect();
    assert_eq!(logged, returned);
    assert!(config.out.join("train.json").is_file() && config.out.join("curve.svg").is_file());

    let again = train::run(&config, &mut |_| {}).unwrap_err();
    assert_eq!(again.kind, Kind::Input, "{again}");
    assert!(again.message.contains("holds an earlier training run"), "{again}");
    let mut idle = config.clone();
    idle.out = dir.join("idle");
    idle.train.samples = 0;
    let e = train::run(&idle, &mut |_| {}).unwrap_err();
    assert_eq!((e.kind, e.exit_code()), (Kind::Usage, 2), "{e}");
    assert!(!idle.out.exists(), "nothing is written");
}
