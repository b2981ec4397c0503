//! `mcmpart eval` and `mcmpart solve` end to end: figures, exit codes, text
//! and JSON output, budgets, and partitions that `verify` accepts.

use crate::common;

use common::{json, mcmpart, mcmpart_in, text};

fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-9 * b.abs(), "{a} != {b}");
}

const QUICK: &[&str] = &[
    "examples/quickstart.mcm",
    "--partition",
    "examples/quickstart.partition.json",
];

#[test]
fn eval_prints_the_cost_of_a_shipped_partition() {
    let mut args = vec!["eval"];
    args.extend(QUICK);
    let o = mcmpart(&args);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    // fc1 (2 MiFLOP at 1 TFLOP/s) and its 8 KiB output over 10 GB/s on die[0].
    assert!(
        out.contains("latency 2.916 us (throughput 342894.1362 /s); bottleneck `die[0]`"),
        "{out}"
    );
    // The proven bound: die[0]'s stage can be no shorter (fc1 and the
    // cheapest cut after it), so the partition is optimal.
    assert!(
        out.contains(
            "bound   2.916 us (throughput 342894.1362 /s), proven (stage boundaries: each chip's flops plus the cheapest cut its boundary can take): gap 1.00x"
        ),
        "{out}"
    );
    for h in [
        "chip", "nodes", "compute", "links", "stage", "weights", "peak", "memory",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with("chip") && l.contains(h)),
            "{h}: {out}"
        );
    }
    let line = |chip: &str| {
        out.lines()
            .find(|l| l.starts_with(chip))
            .unwrap_or_else(|| panic!("no line for {chip}: {out}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        line("die[0]"),
        "die[0] 3 2.097 us 819.2 ns 2.916 us 2 MiB 2.012 MiB 3 MiB"
    );
    assert!(line("die[1]").starts_with("die[1] 3 2.099 us 409.6 ns"), "{out}");
    assert!(line("die[2]").starts_with("die[2] 1 "), "{out}");
    // The links that carry data, busiest first, with their share of the period.
    assert!(
        out.contains("link                          traffic transfers         busy utilisation"),
        "{out}"
    );
    assert_eq!(line("die[0] ->"), "die[0] -> die[1] 8 KiB 1 819.2 ns 28.1%");
    assert_eq!(line("die[1] ->"), "die[1] -> die[2] 4 KiB 1 409.6 ns 14.0%");
    assert!(
        !out.contains("die[3]") && out.contains("(1 empty chip(s) not shown)"),
        "{out}"
    );
    assert!(
        out.contains("valid: examples/quickstart.partition.json (7 nodes on 4 chips)"),
        "{out}"
    );

    let mut args = vec!["eval", "--json"];
    args.extend(QUICK);
    let o = mcmpart(&args);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    assert_eq!(v["ok"], true);
    assert_eq!(v["valid"], true);
    assert_eq!(v["judge"], "analytical");
    assert_eq!(v["verdict"]["status"], "valid");
    assert_eq!(v["violations"].as_array().map(Vec::len), Some(0));
    let c = &v["cost"];
    let f = |x: &serde_json::Value| x.as_f64().unwrap();
    close(f(&c["latency_s"]), 2.916352e-6);
    close(f(&c["throughput"]), 1.0 / 2.916352e-6);
    close(f(&v["verdict"]["throughput"]), f(&c["throughput"]));
    // The stage boundaries: die[0]'s stage (`fc1` and the cheapest cut after
    // it) can be no shorter, above `fc1` alone (2 Mi FLOP at 1 TFLOP/s).
    close(f(&c["bound_latency_s"]), 2.916352e-6);
    close(f(&c["bound_throughput"]), 1.0 / 2.916352e-6);
    assert!(f(&c["bound_latency_s"]) > 2_097_152.0 / 1e12);
    assert_eq!(c["bound"]["kind"], "stage_cuts");
    assert_eq!(c["bottleneck"], 0);
    assert_eq!(c["memory_overflow"], serde_json::Value::Null);
    let chips = c["chips"].as_array().unwrap();
    assert_eq!(chips.len(), 4);
    let c0 = &chips[0];
    close(f(&c0["compute_s"]), 2_097_152.0 / 1e12);
    close(f(&c0["link_s"]), 8192.0 / 10e9);
    close(f(&c0["stage_s"]), f(&c["latency_s"]));
    assert_eq!(c0["weight_bytes"], 2_097_152);
    // w1's output is its weights: input and fc1's output are the live ones.
    assert_eq!(c0["peak_bytes"], 2_097_152 + 4096 + 8192);
    assert_eq!(c0["memory_bytes"], 3 * 1024 * 1024, "a byte count is an integer");
    assert_eq!(chips[3]["nodes"], 0);
    // The latency is the slowest stage.
    let slowest = chips.iter().map(|c| f(&c["stage_s"])).fold(0.0, f64::max);
    close(f(&c["latency_s"]), slowest);
}

#[test]
fn eval_of_a_statically_invalid_partition_reports_its_violations_and_its_cost() {
    // Both 2 MiB weight matrices on one 3 MiB die: `memory_capacity` breaks,
    // and so does the dynamic check; the figures are still printed.
    let dir = common::scratch("cli-eval-static");
    let all0 = dir.join("all0.json");
    std::fs::write(
        &all0,
        r#"{"placement": {"input": 0, "w1": 0, "fc1": 0, "relu": 0, "w2": 0, "fc2": 0, "out": 0}}"#,
    )
    .unwrap();
    let o = mcmpart(&["eval", "examples/quickstart.mcm", "--partition", all0.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(out.contains("latency") && out.contains("bound"), "{out}");
    assert!(err.contains("memory_capacity"), "{err}");
    assert!(
        out.contains("invalid at evaluation: chip `die[0]` runs out of memory"),
        "{out}"
    );
    assert!(
        out.contains("invalid: the partition breaks 1 rule instance(s)"),
        "{out}"
    );
    let o = mcmpart(&[
        "eval",
        "--json",
        "examples/quickstart.mcm",
        "--partition",
        all0.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["valid"], false);
    assert_eq!(v["violations"].as_array().map(Vec::len), Some(1));
    // All on one chip: no links, the compute of the whole graph.
    close(v["cost"]["latency_s"].as_f64().unwrap(), 4_197_376.0 / 1e12);

    // The shipped invalid partition sends data against the ring's direction,
    // which no route can carry: it cannot be costed at all.
    let o = mcmpart(&[
        "eval",
        "examples/quickstart.mcm",
        "--partition",
        "examples/quickstart.invalid.partition.json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let (_, err) = text(&o);
    assert!(err.contains("cannot be evaluated") && err.contains("no route"), "{err}");
}

#[test]
fn eval_of_a_partition_that_fails_the_dynamic_check_names_chip_and_node() {
    // No static rule: only the dynamic check finds that weights (60 MB) and
    // the live activations of `b` (40 MB in, 40 MB out) exceed 128 MiB.
    let dir = common::scratch("cli-eval-dynamic");
    let f = dir.join("tight.mcm");
    std::fs::write(
        &f,
        "use std::topologies::ring\n\
         let t = ring(n = 2, memory = 128 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph { w { params = 60 MB, output_bytes = 60 MB } -> a { flops = 1 GFLOP, output_bytes = 40 MB } \
         -> b { flops = 1 GFLOP, output_bytes = 40 MB } -> c { flops = 1 GFLOP } }\n\
         partition g onto t\n",
    )
    .unwrap();
    let all0 = dir.join("all0.json");
    std::fs::write(&all0, r#"{"placement": {"w": 0, "a": 0, "b": 0, "c": 0}}"#).unwrap();
    let o = mcmpart(&["eval", f.to_str().unwrap(), "--partition", all0.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        out.contains("invalid at evaluation: chip `die[0]` runs out of memory at node `b`"),
        "{out}"
    );
    // The figures are still printed.
    assert!(out.contains("latency 3 ms"), "{out}");
    let o = mcmpart(&[
        "eval",
        "--json",
        f.to_str().unwrap(),
        "--partition",
        all0.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["valid"], false);
    assert_eq!(v["violations"].as_array().map(Vec::len), Some(0));
    let r = v["verdict"]["reason"].as_str().unwrap();
    assert!(r.contains("`die[0]`") && r.contains("`b`"), "{r}");
    assert_eq!(v["cost"]["memory_overflow"].as_str(), Some(r));
    // `--no-dynamic-check` lets it pass; moving b and c to chip 1 fits.
    let o = mcmpart(&[
        "eval",
        f.to_str().unwrap(),
        "--partition",
        all0.to_str().unwrap(),
        "--no-dynamic-check",
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let split = dir.join("split.json");
    std::fs::write(&split, r#"{"placement": {"w": 0, "a": 0, "b": 1, "c": 1}}"#).unwrap();
    let o = mcmpart(&["eval", f.to_str().unwrap(), "--partition", split.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn solve_names_the_strategies_when_one_is_unknown() {
    let o = mcmpart(&["solve", "examples/quickstart.mcm", "--strategy", "nonsense"]);
    let (_, err) = text(&o);
    assert_ne!(o.status.code(), Some(0));
    assert!(err.contains("unknown strategy `nonsense`"), "{err}");
    assert!(err.contains("greedy, random, anneal, dp"), "{err}");
    let o = mcmpart(&["solve", "examples/quickstart.mcm", "--strategy", "aneal"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o).1.contains("did you mean `anneal`?"), "{:?}", text(&o));
    // Budgets in samples and in seconds do not go together.
    let o = mcmpart(&["solve", "examples/quickstart.mcm", "--budget", "3", "--time", "1"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn solve_writes_the_best_partition_for_verify() {
    let dir = common::scratch("cli-solve");
    for strategy in ["greedy", "random", "anneal", "dp"] {
        let out = dir.join(format!("{strategy}.json"));
        let o = mcmpart(&[
            "solve",
            "examples/quickstart.mcm",
            "--strategy",
            strategy,
            "--budget",
            "10",
            "--seed",
            "3",
            "--out",
            out.to_str().unwrap(),
        ]);
        let (txt, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{strategy}: {txt}\n{err}");
        assert!(txt.starts_with(&format!("{strategy}: best of ")), "{txt}");
        for want in ["throughput  ", "vs greedy   ", "vs bound    ", "invalid     "] {
            assert!(txt.contains(want), "{strategy}: missing {want:?} in {txt}");
        }
        let o = mcmpart(&[
            "verify",
            "examples/quickstart.mcm",
            "--partition",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{strategy}: {:?}", text(&o));
        let o = mcmpart(&["eval", "examples/quickstart.mcm", "--partition", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{strategy}: {:?}", text(&o));
    }
    // Greedy against itself.
    let o = mcmpart(&[
        "solve",
        "examples/quickstart.mcm",
        "--strategy",
        "greedy",
        "--out",
        dir.join("g.json").to_str().unwrap(),
    ]);
    assert!(text(&o).0.contains("vs greedy   1.000x"), "{:?}", text(&o));

    // JSON: the figures, the curve and the partition; the best's throughput
    // is what `eval` says of the written file.
    let out = dir.join("random.json");
    let o = mcmpart(&[
        "solve",
        "examples/quickstart.mcm",
        "--strategy",
        "random",
        "--budget",
        "12",
        "--seed",
        "9",
        "--jobs",
        "2",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let v = json(&o);
    assert_eq!(v["ok"], true);
    assert_eq!(v["strategy"], "random");
    assert_eq!(v["seed"], 9);
    assert_eq!(v["judge"], "analytical");
    assert_eq!(v["samples"], 12);
    let curve = v["curve"].as_array().unwrap();
    assert_eq!(curve.len(), 12);
    let mut prev = 0.0;
    for r in curve {
        let b = r["best"].as_f64().unwrap_or(0.0);
        assert!(b >= prev, "{curve:?}");
        prev = b;
    }
    let t = v["throughput"].as_f64().unwrap();
    close(prev, t);
    let at = v["found_at_sample"].as_u64().unwrap() as usize;
    close(curve[at - 1]["throughput"].as_f64().unwrap(), t);
    assert!(t <= v["bound_throughput"].as_f64().unwrap());
    close(
        v["improvement_over_greedy"].as_f64().unwrap(),
        t / v["greedy_throughput"].as_f64().unwrap(),
    );
    close(
        v["fraction_of_bound"].as_f64().unwrap(),
        t / v["bound_throughput"].as_f64().unwrap(),
    );
    // The proven bound and the gap, as latencies.
    let latency = v["latency_s"].as_f64().unwrap();
    close(latency, 1.0 / t);
    let proven = v["proven_bound_latency_s"].as_f64().unwrap();
    close(proven, 1.0 / v["bound_throughput"].as_f64().unwrap());
    close(v["gap"].as_f64().unwrap(), latency / proven);
    assert_eq!(v["proven_bound"]["latency_s"].as_f64(), Some(proven));
    assert_eq!(v["proven_optimal"], latency <= proven * (1.0 + 1e-9));
    let invalid: u64 = v["invalid_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(v["invalid"].as_u64(), Some(invalid));
    let written: serde_json::Value = common::json_file(&out);
    assert_eq!(written, v["partition"]);
    let e = json(&mcmpart(&[
        "eval",
        "--json",
        "examples/quickstart.mcm",
        "--partition",
        out.to_str().unwrap(),
    ]));
    close(e["cost"]["throughput"].as_f64().unwrap(), t);

    // Same seed, same partition.
    let again = dir.join("again.json");
    let o = mcmpart(&[
        "solve",
        "examples/quickstart.mcm",
        "--strategy",
        "random",
        "--budget",
        "12",
        "--seed",
        "9",
        "--jobs",
        "2",
        "--out",
        again.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
}

#[test]
fn solve_writes_next_to_the_working_folder_by_default() {
    let dir = common::scratch("cli-solve-default");
    let file = common::root().join("examples/quickstart.mcm");
    let o = mcmpart_in(&dir, &["solve", file.to_str().unwrap(), "--budget", "3"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let (txt, _) = text(&o);
    // The default strategy is the DP.
    assert!(txt.starts_with("dp: "), "{txt}");
    assert!(txt.contains("written to quickstart.partition.json"), "{txt}");
    assert!(dir.join("quickstart.partition.json").exists());
}

#[test]
fn solve_with_a_time_budget() {
    let dir = common::scratch("cli-solve-time");
    let out = dir.join("t.json");
    let start = std::time::Instant::now();
    let o = mcmpart(&[
        "solve",
        "examples/quickstart.mcm",
        "--strategy",
        "anneal",
        "--time",
        "0.5",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    let took = start.elapsed().as_secs_f64();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let v = json(&o);
    // The search gets `--time` less what loading took and a tenth kept
    // for the answer (0.05 s here), and spends it.
    let elapsed = v["elapsed_s"].as_f64().unwrap();
    assert!((0.3..2.5).contains(&elapsed), "{elapsed}");
    assert!(took < 10.0, "{took}");
    let n = v["samples"].as_u64().unwrap();
    assert!(n >= 1);
    assert_eq!(v["curve"].as_array().map(Vec::len), Some(n as usize));
    let o = mcmpart(&[
        "verify",
        "examples/quickstart.mcm",
        "--partition",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

/// Numbers a flag cannot mean are refused before anything runs (exit 2, the
/// flag and the value named): a NaN timeout had panicked, a budget of 0
/// read as "no valid partition", 100000 evaluation threads hung.
#[test]
fn impossible_flag_values_are_refused_up_front() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["solve", "examples/quickstart.mcm", "--eval-timeout", "NaN"],
            "--eval-timeout",
        ),
        (
            &["solve", "examples/quickstart.mcm", "--eval-timeout", "0"],
            "--eval-timeout",
        ),
        (&["solve", "examples/quickstart.mcm", "--budget", "0"], "--budget"),
        (&["solve", "examples/quickstart.mcm", "--time", "0"], "--time"),
        (&["solve", "examples/quickstart.mcm", "--time", "NaN"], "--time"),
        (&["solve", "examples/quickstart.mcm", "--jobs", "0"], "--jobs"),
        (&["solve", "examples/quickstart.mcm", "--jobs", "100000"], "--jobs"),
        (
            &["compare", "examples/quickstart.mcm", "--out", "x", "--eval-timeout=-1"],
            "--eval-timeout",
        ),
        (
            &[
                "train",
                "--package",
                "examples/quickstart.mcm",
                "--out",
                "x",
                "--lr",
                "NaN",
            ],
            "--lr",
        ),
        (
            &[
                "train",
                "--package",
                "examples/quickstart.mcm",
                "--out",
                "x",
                "--entropy",
                "inf",
            ],
            "--entropy",
        ),
        (
            &[
                "train",
                "--package",
                "examples/quickstart.mcm",
                "--out",
                "x",
                "--rollouts",
                "0",
            ],
            "--rollouts",
        ),
        (
            &[
                "train",
                "--package",
                "examples/quickstart.mcm",
                "--out",
                "x",
                "--epochs",
                "0",
            ],
            "--epochs",
        ),
        (
            &[
                "solve",
                "examples/quickstart.mcm",
                "--strategy",
                "rl",
                "--moves",
                "1000000000000",
            ],
            "--moves",
        ),
        // 10^19 wrapped the table budgets' loop round to 0: it never ended.
        (
            &[
                "compare",
                "examples/quickstart.mcm",
                "--out",
                "x",
                "--budget",
                "18446744073709551615",
            ],
            "--budget",
        ),
        (
            &[
                "train",
                "--package",
                "examples/quickstart.mcm",
                "--out",
                "x",
                "--moves",
                "1000000000000",
            ],
            "--moves",
        ),
    ];
    for (args, flag) in cases {
        let o = mcmpart(args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}\n{out}\n{err}");
        let value = args.last().unwrap().trim_start_matches(flag).trim_start_matches('=');
        assert!(
            err.contains(flag) && err.contains(&format!("'{value}'")),
            "{args:?}\n{err}"
        );
        assert!(!err.contains("panicked"), "{args:?}\n{err}");
    }
}

/// `--out` naming a file the problem is read from (its .mcm, however
/// spelled, or its graph) is refused, and the file is left as it was.
#[test]
fn out_never_replaces_an_input() {
    let dir = common::scratch("out-over-input");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let root = common::root();
    std::fs::copy(root.join("examples/quickstart.mcm"), dir.join("q.mcm")).unwrap();
    std::fs::copy(root.join("examples/data/tiny_mlp.json"), dir.join("data/tiny_mlp.json")).unwrap();
    let before = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let (mcm, graph) = (before("q.mcm"), before("data/tiny_mlp.json"));
    for (args, input) in [
        (vec!["solve", "q.mcm", "--budget", "3", "--out", "q.mcm"], "q.mcm"),
        (
            vec!["solve", "q.mcm", "--budget", "3", "--out", "./data/../q.mcm"],
            "q.mcm",
        ),
        (
            vec!["solve", "q.mcm", "--budget", "3", "--out", "data/tiny_mlp.json"],
            "tiny_mlp.json",
        ),
        (vec!["sample", "q.mcm", "--out", "q.mcm"], "q.mcm"),
    ] {
        let o = mcmpart_in(&dir, &args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}\n{out}\n{err}");
        assert!(
            err.contains("which the problem is read from") && err.contains(input),
            "{err}"
        );
    }
    assert_eq!(before("q.mcm"), mcm);
    assert_eq!(before("data/tiny_mlp.json"), graph);
    // Any other file is fine.
    let o = mcmpart_in(&dir, &["solve", "q.mcm", "--budget", "3", "--out", "best.json"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

/// Ctrl-C (SIGINT) stops `solve` at its next sample: the best so far is
/// written and checked as usual, and the exit status is 130.
#[cfg(unix)]
#[test]
fn ctrl_c_keeps_the_best_so_far() {
    let dir = common::scratch("ctrl-c");
    let root = common::root();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_mcmpart"))
        .current_dir(&dir)
        .args(["solve", root.join("examples/quickstart.mcm").to_str().unwrap()])
        .args(["--strategy", "anneal", "--time", "600", "--out", "best.json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Time for the search to start (the handler is set before it).
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}\n{err}");
    assert!(
        err.contains("interrupted after") && err.contains("the best so far is written"),
        "{err}"
    );
    assert!(out.contains("written to best.json"), "{out}");
    let v = mcmpart_in(
        &dir,
        &[
            "verify",
            root.join("examples/quickstart.mcm").to_str().unwrap(),
            "--partition",
            "best.json",
        ],
    );
    assert_eq!(v.status.code(), Some(0), "{:?}", text(&v));
}

/// Learned-strategy flags that no named strategy uses, or that its name
/// contradicts, are refused (exit 2) instead of silently ignored.
#[test]
fn contradictory_strategy_flags_are_refused() {
    let q = "examples/quickstart.mcm";
    let cases: &[(&[&str], &str)] = &[
        (
            &["solve", q, "--strategy", "dp", "--policy", "nowhere"],
            "`--policy` sets the learned strategies",
        ),
        (
            &["solve", q, "--strategy", "anneal", "--rl-mode", "no-solver"],
            "`--rl-mode` sets the learned",
        ),
        (
            &["solve", q, "--strategy", "rl-scratch", "--zero-shot"],
            "`--zero-shot` contradicts `rl-scratch`",
        ),
        (
            &["solve", q, "--strategy", "rl-zero-shot", "--epochs", "2"],
            "`--epochs` contradicts `rl-zero-shot`",
        ),
        (
            &["solve", q, "--strategy", "rl", "--zero-shot", "--lr", "0.1"],
            "`--lr` sets fine-tuning",
        ),
        (
            &["solve", q, "--strategy", "rl-nosolver", "--rl-mode", "sample"],
            "contradicts `rl-nosolver`",
        ),
        // The flags are checked before the checkpoint is loaded: its error
        // would hide theirs.
        (
            &[
                "solve",
                q,
                "--strategy",
                "rl-zero-shot",
                "--lr",
                "0.1",
                "--policy",
                "nowhere",
            ],
            "`--lr` contradicts `rl-zero-shot`",
        ),
        (
            &[
                "compare",
                q,
                "--out",
                "x",
                "--strategies",
                "rl-zero-shot",
                "--epochs",
                "2",
                "--policy",
                "nowhere",
            ],
            "`--epochs` contradicts `rl-zero-shot`",
        ),
        // An unknown name is named as such, not read as no learned strategy.
        (
            &["solve", q, "--strategy", "rll", "--policy", "nowhere"],
            "unknown strategy `rll`",
        ),
        (
            &["compare", q, "--out", "x", "--strategies", "random,dpp", "--moves", "2"],
            "unknown strategy `dpp`",
        ),
        (
            &["compare", q, "--out", "x", "--strategies", ""],
            "--strategies names no strategy",
        ),
        (
            &["compare", q, "--out", "x", "--strategies", "random,dp", "--moves", "2"],
            "`--moves` sets the learned",
        ),
    ];
    for (args, why) in cases {
        let o = mcmpart(args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}\n{out}\n{err}");
        assert!(err.contains(why), "{args:?}\n{err}");
    }
    // Flags for the learned strategies are fine beside others in a compare.
    let dir = common::scratch("flags-beside");
    let o = mcmpart_in(
        &dir,
        &[
            "compare",
            common::root().join(q).to_str().unwrap(),
            "--out",
            "out",
            "--strategies",
            "random,rl-scratch",
            "--moves",
            "2",
            "--budget",
            "4",
            "--repeats",
            "1",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

/// `show -o`, `import -o` and `bench load --out` never replace a file they
/// read; `bench solver --samples 0` is refused like `solve --budget 0`.
#[test]
fn other_outputs_never_replace_an_input() {
    let dir = common::scratch("other-outputs");
    let root = common::root();
    std::fs::create_dir_all(dir.join("bl")).unwrap();
    std::fs::copy(root.join("examples/data/tiny_mlp.json"), dir.join("g.json")).unwrap();
    std::fs::copy(root.join("examples/data/tiny_mlp.json"), dir.join("bl/a.json")).unwrap();
    std::fs::copy(root.join("tests/data/onnx/mlp.onnx"), dir.join("m.onnx")).unwrap();
    let files = ["g.json", "bl/a.json", "m.onnx"];
    let before: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(dir.join(f)).unwrap()).collect();
    for args in [
        vec!["show", "g.json", "-o", "g.json"],
        vec!["import", "m.onnx", "-o", "./m.onnx"],
        vec!["bench", "load", "bl", "--repeats", "1", "--out", "bl/a.json"],
    ] {
        let o = mcmpart_in(&dir, &args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}\n{out}\n{err}");
        assert!(err.contains("writing there would replace it"), "{args:?}\n{err}");
    }
    let after: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(dir.join(f)).unwrap()).collect();
    assert!(before == after, "an input changed");
    let q = root.join("examples/quickstart.mcm");
    let o = mcmpart_in(
        &dir,
        &[
            "bench",
            "solver",
            q.to_str().unwrap(),
            "--mode",
            "sample",
            "--samples",
            "0",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert!(text(&o).1.contains("--samples"), "{:?}", text(&o));
}

/// `--init`: every strategy starts from the given partition. A valid one is
/// kept (greedy returns it, the others judge it first and end with it or
/// better); an invalid one is repaired, and `solve` says how many nodes
/// moved. A file for another graph is refused before any search.
#[test]
fn solve_starts_from_a_given_partition() {
    let dir = common::scratch("cli-solve-init");
    let start = 342894.1362; // `eval` of the shipped partition (above)
    for strategy in ["greedy", "random", "anneal", "dp", "rl"] {
        let out = dir.join(format!("{strategy}.json"));
        let run = |init: &str| {
            mcmpart(&[
                "solve",
                "examples/quickstart.mcm",
                "--strategy",
                strategy,
                "--budget",
                "6",
                "--init",
                init,
                "--out",
                out.to_str().unwrap(),
                "--json",
            ])
        };
        let o = run("examples/quickstart.partition.json");
        assert_eq!(o.status.code(), Some(0), "{strategy}: {:?}", text(&o));
        let j = json(&o);
        assert_eq!(j["init_moved"], 0, "{strategy}: {j}");
        let t = j["throughput"].as_f64().unwrap();
        assert!(t >= start - 1e-3, "{strategy}: {t} below the start's {start}");
        if strategy == "greedy" {
            assert!((t - start).abs() < 1e-3, "{t}");
            let given = common::json_file(&common::root().join("examples/quickstart.partition.json"));
            assert_eq!(j["partition"]["placement"], given["placement"], "{j}");
        }
        let o = run("examples/quickstart.invalid.partition.json");
        assert_eq!(o.status.code(), Some(0), "{strategy}: {:?}", text(&o));
        let moved = json(&o)["init_moved"].as_u64().unwrap();
        assert!(moved > 0, "{strategy}: the invalid start was kept");
        let o = mcmpart(&[
            "verify",
            "examples/quickstart.mcm",
            "--partition",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{strategy}: {:?}", text(&o));
    }
    // The text report names the repair.
    let o = mcmpart(&[
        "solve",
        "examples/quickstart.mcm",
        "--strategy",
        "greedy",
        "--init",
        "examples/quickstart.invalid.partition.json",
        "--out",
        dir.join("t.json").to_str().unwrap(),
    ]);
    let (txt, _) = text(&o);
    assert!(
        txt.contains("start       the given partition, ") && txt.contains("node(s) moved by the repair"),
        "{txt}"
    );
    // Another graph's partition, or a node the graph lacks: an input error naming the file.
    for (name, body) in [
        (
            "other.json",
            r#"{"graph": "other", "chips": 4, "placement": {"input": 0}}"#,
        ),
        (
            "unknown.json",
            r#"{"graph": "tiny-mlp", "chips": 4, "placement": {"nope": 0}}"#,
        ),
    ] {
        let f = dir.join(name);
        std::fs::write(&f, body).unwrap();
        let o = mcmpart(&[
            "solve",
            "examples/quickstart.mcm",
            "--init",
            f.to_str().unwrap(),
            "--out",
            dir.join("x.json").to_str().unwrap(),
        ]);
        let (txt, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {txt}\n{err}");
        assert!(err.contains(name), "{name}: {err}");
        assert!(!dir.join("x.json").exists());
    }
}

/// A partition at the proven bound is proven optimal (one node on a ring:
/// its time alone is the bound); one above it is not.
#[test]
fn solve_says_when_its_best_is_proven_optimal() {
    let dir = common::scratch("cli-solve-optimal");
    let one = dir.join("one.mcm");
    std::fs::write(
        &one,
        "use std::topologies::ring\nlet t = ring(n = 2, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph { a { flops = 1 GFLOP } }\npartition g onto t { maximize throughput }\n",
    )
    .unwrap();
    let out = dir.join("p.json");
    let args = [
        "solve",
        one.to_str().unwrap(),
        "--budget",
        "4",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = mcmpart(&args);
    let (txt, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{txt}\n{err}");
    assert!(
        txt.contains("vs bound    1 ms proven (node `a` on the fastest chip): proven optimal"),
        "{txt}"
    );
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let v = json(&mcmpart(&json_args));
    assert_eq!(v["proven_optimal"], true);
    close(v["latency_s"].as_f64().unwrap(), 1e-3);
    close(v["proven_bound_latency_s"].as_f64().unwrap(), 1e-3);
    assert_eq!(v["proven_bound"]["kind"], "largest_node");

    // BERT-large's best at 10 samples (dp's cut) is above its bound: no claim.
    let v = json(&mcmpart(&[
        "solve",
        "examples/bert_ring36.mcm",
        "--budget",
        "10",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["proven_optimal"], false);
    assert!(v["gap"].as_f64().unwrap() > 1.0);
}
