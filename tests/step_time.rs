//! `minimize step_time` end to end: `eval` (text, `--json`, `--format
//! svg`) on a step computed by hand, and `solve` writing a partition whose
//! reported step time is what `eval` says of it.

use crate::common;

use common::{json, mcmpart_in, scratch, text};
use std::path::Path;

fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} != {b}");
}

/// A chain on a one-way ring of three dies, each node on its own die: `a`
/// runs 0-1 ms, its 1 MB crosses die[0] -> die[1] 1-2 ms, `b` runs 2-4 ms,
/// its 1 MB crosses die[1] -> die[2] 4-5 ms, `c` runs 5-6 ms.
const CHAIN: &str = "use std::topologies::ring\n\
    let package = ring(n = 3, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
    let chain = graph {\n    a { flops = 1 GFLOP, output_bytes = 1 MB } -> b { flops = 2 GFLOP, output_bytes = 1 MB } -> c { flops = 1 GFLOP }\n}\n\
    partition chain onto package {\n    minimize step_time\n}\n";

fn chain_dir(name: &str) -> common::Scratch {
    let d = scratch(name);
    std::fs::write(d.join("chain.mcm"), CHAIN).unwrap();
    std::fs::write(
        d.join("p.partition.json"),
        r#"{"graph": "chain", "chips": 3, "placement": {"a": 0, "b": 1, "c": 2}}"#,
    )
    .unwrap();
    d
}

const EVAL: &[&str] = &["eval", "chain.mcm", "--partition", "p.partition.json"];

#[test]
fn eval_json_reports_the_step_its_busy_times_and_what_ends_last() {
    let d = chain_dir("step-eval-json");
    let o = mcmpart_in(&d, &[EVAL, &["--json"]].concat());
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let v = json(&o);
    assert_eq!(v["objective"], "step_time");
    assert_eq!(v["model"], "step_time");
    close(v["step_time_s"].as_f64().unwrap(), 6e-3);
    let c = &v["cost"];
    close(c["step_time_s"].as_f64().unwrap(), 6e-3);
    // The critical path, every op at its fastest: 4 GFLOP at 1 TFLOP/s.
    close(c["bound_step_time_s"].as_f64().unwrap(), 4e-3);
    assert_eq!(c["bound"]["kind"], "critical_path");
    close(c["gap"].as_f64().unwrap(), 1.5);
    close(v["gap"].as_f64().unwrap(), 1.5);
    let busy: Vec<f64> = c["chips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["busy_s"].as_f64().unwrap())
        .collect();
    for (b, want) in busy.iter().zip([1e-3, 2e-3, 1e-3]) {
        close(*b, want);
    }
    let links = c["links"].as_array().unwrap();
    assert_eq!(links.len(), 2, "{links:?}");
    for l in links {
        close(l["busy_s"].as_f64().unwrap(), 1e-3);
        assert_eq!(l["transfers"], 1);
    }
    assert_eq!(c["last_op"]["node"], "c");
    assert_eq!(c["last_op"]["chip"], 2);
    close(c["last_op"]["end_s"].as_f64().unwrap(), 6e-3);
    assert_eq!(c["last_transfer"]["node"], "b");
    assert_eq!(c["last_transfer"]["src"], 1);
    assert_eq!(c["last_transfer"]["dst"], 2);
    // a, its transfer, b, its transfer, c.
    assert_eq!(c["critical_path"].as_array().unwrap().len(), 5);
    assert_eq!(v["verdict"]["status"], "valid");
}

#[test]
fn eval_says_the_step_in_words_and_draws_it() {
    let d = chain_dir("step-eval-text");
    let o = mcmpart_in(&d, EVAL);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("step time 6 ms; the last op is `c` on `die[2]`"), "{out}");
    assert!(
        out.contains("bound     4 ms proven (the path `a` ~> `c` (3 ops)"),
        "{out}"
    );
    assert!(out.contains("gap 1.50x"), "{out}");
    assert!(
        out.contains("last transfer: `b`'s output over `die[1]` -> `die[2]`"),
        "{out}"
    );
    let o = mcmpart_in(&d, &[EVAL, &["--format", "svg", "--out", "step.svg"]].concat());
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let svg = std::fs::read_to_string(d.join("step.svg")).unwrap();
    assert!(
        svg.trim_start().starts_with("<svg") || svg.starts_with("<?xml"),
        "{svg}"
    );
    // `--out` draws only.
    let o = mcmpart_in(&d, &[EVAL, &["--out", "x.svg"]].concat());
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
}

#[test]
fn the_pipeline_model_draws_no_timeline_and_says_why() {
    let d = chain_dir("step-eval-no-svg");
    let pipeline = CHAIN.replace("minimize step_time", "maximize throughput");
    std::fs::write(d.join("chain.mcm"), pipeline).unwrap();
    let o = mcmpart_in(&d, &[EVAL, &["--format", "svg"]].concat());
    let (_, err) = text(&o);
    assert_ne!(o.status.code(), Some(0));
    assert!(err.contains("the pipeline model draws no timeline"), "{err}");
    assert!(err.contains("minimize step_time"), "{err}");
}

#[test]
fn solve_reports_the_step_time_that_eval_finds_and_verify_accepts() {
    let d = chain_dir("step-solve");
    for strategy in ["auto", "lns", "dp"] {
        let o = mcmpart_in(
            &d,
            &[
                "solve",
                "chain.mcm",
                "--strategy",
                strategy,
                "--budget",
                "20",
                "--seed",
                "2",
                "--out",
                "best.json",
                "--json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{strategy}: {:?}", text(&o));
        let v = json(&o);
        assert_eq!(v["objective"], "step_time");
        assert!(v.get("throughput").is_none(), "{v}");
        let step = v["step_time_s"].as_f64().unwrap();
        // All on one die: 4 ms, no transfer; nothing beats the critical path.
        close(step, 4e-3);
        close(v["bound_step_time_s"].as_f64().unwrap(), 4e-3);
        assert_eq!(v["proven_optimal"], true);
        let e = json(&mcmpart_in(
            &d,
            &["eval", "chain.mcm", "--partition", "best.json", "--json"],
        ));
        assert_eq!(e["step_time_s"].as_f64().unwrap(), step, "{strategy}");
        let ok = mcmpart_in(&d, &["verify", "chain.mcm", "--partition", "best.json"]);
        assert_eq!(ok.status.code(), Some(0), "{strategy}: {:?}", text(&ok));
    }
    let o = mcmpart_in(&d, &["solve", "chain.mcm", "--budget", "5", "--out", "best.json"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("step time   4 ms"), "{out}");
    assert!(out.contains("proven optimal"), "{out}");
    assert!(!out.contains("throughput"), "{out}");
}

#[test]
fn the_shipped_step_time_examples_solve() {
    for (i, file) in ["examples/gpu_cluster_step.mcm", "examples/mesh_step.mcm"]
        .into_iter()
        .enumerate()
    {
        let root = common::root();
        let out = scratch(&format!("step-example-{i}"));
        let dest = out.join("best.json");
        let o = mcmpart_in(
            Path::new(&root),
            &[
                "solve",
                file,
                "--strategy",
                "greedy",
                "--out",
                dest.to_str().unwrap(),
                "--json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{file}: {:?}", text(&o));
        let v = json(&o);
        assert!(v["step_time_s"].as_f64().unwrap() > 0.0, "{file}");
        assert!(v["gap"].as_f64().unwrap() >= 1.0 - 1e-9, "{file}");
    }
}

/// `eval` against `tools/step_time_ref.py`, a second implementation of the
/// spec in Python that shares no code with the simulator, on random graphs
/// (replicable nodes, zero-time ops), packages (one-way and two-way links,
/// link latency, op overhead, unequal chips) and partitions.
#[test]
fn eval_agrees_with_the_python_reference_on_random_problems() {
    let d = scratch("step-reference");
    let tool = common::root().join("tools/step_time_crosscheck.py");
    let o = std::process::Command::new("python3")
        .arg(&tool)
        .arg(env!("CARGO_BIN_EXE_mcmpart"))
        .arg("60")
        .arg(&*d)
        .output()
        .expect("python3 runs the cross-check");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("60 cases, 0 disagreements"), "{out}");
}

/// `--objective` replaces the problem's objective in `eval`, `solve` and
/// `compare`; an unknown name is refused with the names the cost models'
/// registry judges.
#[test]
fn objective_flag_judges_under_the_named_model() {
    let d = chain_dir("step-objective");
    std::fs::write(
        d.join("pipe.mcm"),
        CHAIN.replace("minimize step_time", "maximize throughput"),
    )
    .unwrap();
    let pipe_eval = ["eval", "pipe.mcm", "--partition", "p.partition.json", "--json"];
    let o = mcmpart_in(&d, &[&pipe_eval[..], &["--objective", "step_time"]].concat());
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let v = json(&o);
    assert_eq!(v["objective"], "step_time");
    close(v["step_time_s"].as_f64().unwrap(), 6e-3);
    let o = mcmpart_in(&d, &[EVAL, &["--json", "--objective", "throughput"]].concat());
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let v = json(&o);
    assert_eq!(v["objective"], "throughput");
    assert_eq!(v["model"], "pipeline");
    assert!(v.get("step_time_s").is_none(), "{v}");

    let o = mcmpart_in(
        &d,
        &[
            "solve",
            "pipe.mcm",
            "--budget",
            "3",
            "--objective",
            "step_time",
            "--out",
            "s.json",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_eq!(json(&o)["objective"], "step_time");

    let o = mcmpart_in(
        &d,
        &[
            "compare",
            "pipe.mcm",
            "--strategies",
            "random",
            "--budget",
            "2",
            "--repeats",
            "1",
            "--out",
            "cmp",
            "--objective",
            "step_time",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(
        json(&o).to_string().contains(r#""objective":"step_time""#),
        "{:?}",
        text(&o)
    );

    for cmd in [&pipe_eval[..], &["solve", "pipe.mcm", "--budget", "3"][..]] {
        let o = mcmpart_in(&d, &[cmd, &["--objective", "steptime"]].concat());
        assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
        // On stderr, or in the JSON on stdout with `--json`.
        let (out, err) = text(&o);
        let said = out + &err;
        assert!(said.contains("unknown objective `steptime`"), "{said}");
        assert!(said.contains("throughput, latency, step_time"), "{said}");
    }
}

/// Weights that outweigh every chip's memory together, though each fits a
/// chip alone (BERT-large's 1.3 GB on eight 128 MiB tiles), are refused at
/// once, with the two totals: no search, no SAT question over the pigeonhole.
#[test]
fn weights_over_all_memory_are_refused_at_once_with_the_totals() {
    let d = scratch("step-over-memory");
    let mut g = String::from("let g = graph {\n");
    for i in 0..64 {
        g += &format!("    w{i} {{ params = 3 MiB, output_bytes = 1 MiB }}\n    n{i} {{ flops = 1 GFLOP, output_bytes = 1 MiB }}\n    w{i} -> n{i}\n");
        if i > 0 {
            g += &format!("    n{} -> n{i}\n", i - 1);
        }
    }
    g += "}\n";
    let text_of = format!(
        "use std::placement::{{memory_capacity}}\nuse std::topologies::gpu_cluster\n\
         let c = gpu_cluster(machines = 2, gpus = 4, memory = 20 MiB, compute = 1 TFLOP/s, nvlink = 10 GB/s, network = 1 GB/s)\n\
         {g}partition g onto c {{\n    require memory_capacity\n    minimize step_time\n}}\n"
    );
    std::fs::write(d.join("over.mcm"), text_of).unwrap();
    let o = mcmpart_in(&d, &["solve", "over.mcm", "--budget", "5"]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    let (_, err) = text(&o);
    assert!(err.contains("nothing satisfies `memory_capacity`"), "{err}");
    assert!(
        err.contains("the graph's weights total 192 MiB, more than the 8 chips' memories together (160 MiB)"),
        "{err}"
    );
}
