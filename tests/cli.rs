//! The command line end to end: exit codes, text and JSON output.

use crate::common;

use common::{json, mcmpart, text};

#[test]
fn check_summarises_each_problem() {
    let o = mcmpart(&["check", "examples/bert_ring36.mcm"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("problem `bert`"), "{out}");
    assert!(out.contains("36 chips, 35 links"), "{out}");
    assert!(
        out.contains("acyclic_flow (") && out.contains("memory_capacity (36 instances)"),
        "{out}"
    );

    let o = mcmpart(&["check", "examples/bert_ring36.mcm", "--json"]);
    let v = json(&o);
    assert_eq!(v["ok"], true);
    assert_eq!(v["problems"][0]["chips"], 36);
    assert_eq!(v["problems"][0]["constraints"].as_array().map(Vec::len), Some(4));
}

#[test]
fn check_reports_diagnostics_and_fails() {
    let dir = common::scratch("cli-check");
    let f = dir.join("bad.mcm");
    std::fs::write(&f, "use std::placement::no_skp\nlet x = 1 MiB + 1 GB/s\n").unwrap();
    let o = mcmpart(&["check", f.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err.contains("did you mean `no_skip`?") && err.contains("cannot add bytes and a rate"),
        "{err}"
    );
    assert!(err.contains("2 error(s)"), "{err}");

    let o = mcmpart(&["check", f.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["ok"], false);
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "mcm::import");
    assert_eq!(d["labels"][0]["line"], 1);
    assert_eq!(d["help"], "did you mean `no_skip`?");

    let o = mcmpart(&["check", "does/not/exist.mcm"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("cannot read `does/not/exist.mcm`"));
}

#[test]
fn verify_accepts_valid_and_explains_invalid_partitions() {
    let o = mcmpart(&[
        "verify",
        "examples/quickstart.mcm",
        "--partition",
        "examples/quickstart.partition.json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(text(&o).0.starts_with("valid"));

    let o = mcmpart(&[
        "verify",
        "examples/quickstart.mcm",
        "--partition",
        "examples/quickstart.invalid.partition.json",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    for want in [
        "breaks `acyclic_flow` 1 time(s)",
        "acyclic_flow at u = relu, v = fc2: chip(relu) = 2, chip(fc2) = 1",
        "longest path 0 -> 2 -> 1 has length 2",
        "memory_capacity at d = chip 0 (die[0])",
        "stdlib/placement.mcm",
        "required here",
    ] {
        assert!(
            err.replace("\n        ", " ").contains(want),
            "missing {want:?} in\n{err}"
        );
    }

    let o = mcmpart(&[
        "--json",
        "verify",
        "examples/quickstart.mcm",
        "--partition",
        "examples/quickstart.invalid.partition.json",
    ]);
    let v = json(&o);
    assert_eq!(v["valid"], false);
    assert_eq!(v["violations"].as_array().map(Vec::len), Some(3));
}

#[test]
fn verify_refuses_malformed_partitions_with_the_cause() {
    let dir = common::scratch("cli-verify");
    let cases = [
        (r#"{"placement": {"input": 0}}"#, "have no chip"),
        (r#"{"placement": {"input": 0, "input": 1}}"#, "appears twice"),
        (r#"{"placement": {"inptu": 0}}"#, "did you mean `input`?"),
        (r#"{"placement": {"mask": 0}}"#, "replicable"),
        (r#"{"chips": 5, "placement": {}}"#, "for 5 chips, but the package has 4"),
        (r#"{"graph": "other", "placement": {}}"#, "for graph `other`"),
        (r#"{"placement": {"input": 7}}"#, "chip 7"),
        ("{not json", "line 1"),
    ];
    for (i, (json_text, want)) in cases.iter().enumerate() {
        let p = dir.join(format!("p{i}.json"));
        std::fs::write(&p, json_text).unwrap();
        let o = mcmpart(&["verify", "examples/quickstart.mcm", "--partition", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{json_text}");
        let (_, err) = text(&o);
        assert!(err.contains(want), "missing {want:?} for {json_text}:\n{err}");
    }
}

#[test]
fn verify_picks_a_problem_by_name() {
    let dir = common::scratch("cli-problems");
    let f = dir.join("two.mcm");
    std::fs::write(
        &f,
        "use std::placement::acyclic_flow\nuse std::topologies::ring\n\
         let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph { a -> b }\n\
         partition g onto t as forward { require acyclic_flow }\npartition g onto t as free\n",
    )
    .unwrap();
    let p = dir.join("p.json");
    std::fs::write(&p, r#"{"graph": "g", "chips": 2, "placement": {"a": 1, "b": 0}}"#).unwrap();
    let args = |prob: Option<&str>| {
        let mut v = vec!["verify", f.to_str().unwrap(), "--partition", p.to_str().unwrap()];
        if let Some(n) = prob {
            v.extend(["--problem", n]);
        }
        mcmpart(&v)
    };
    let o = args(None);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("pick one with --problem"), "{:?}", text(&o));
    // `forward` requires acyclic_flow, which b before a breaks; `free` none.
    let o = args(Some("forward"));
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("acyclic_flow"), "{:?}", text(&o));
    let o = args(Some("free"));
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o).0.contains("satisfies no constraints"), "{:?}", text(&o));
    let o = args(Some("fre"));
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("did you mean `free`?"), "{:?}", text(&o));
}

#[test]
fn test_runs_every_block_and_fails_on_a_failure() {
    let o = mcmpart(&["test", "tests/mcm/spec_tests.mcm", "examples/quickstart.mcm"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("PASS tests/mcm/spec_tests.mcm:6: \"skipping a chip is rejected\""),
        "{out}"
    );
    assert!(out.trim_end().ends_with("6 passed, 0 failed"), "{out}");

    let dir = common::scratch("cli-test");
    let f = dir.join("wrong.mcm");
    std::fs::write(
        &f,
        "use std::placement::{acyclic_flow, no_skip}\nuse std::topologies::ring\n\
         test \"wrong expectation\" {\n  let g = graph { a -> b }\n\
         let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         place g onto t { a: 0, b: 2 }\n  expect valid\n}\n\
         test \"unsat that is not\" {\n  let g = graph { a -> b }\n\
         let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         partition g onto t\n  expect unsatisfiable\n}\n",
    )
    .unwrap();
    let o = mcmpart(&["test", f.to_str().unwrap()]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        out.contains("FAIL") && out.contains("expected valid, but it breaks no_skip"),
        "{out}"
    );
    assert!(
        out.contains("expected unsatisfiable, but { a: 0, b: 1 } is valid"),
        "{out}"
    );
    assert!(out.contains("0 passed, 2 failed"), "{out}");
    // A failure points at its `expect` line, not at the `test` header.
    let path = f.display();
    assert!(out.contains(&format!("FAIL {path}:7: \"wrong expectation\"")), "{out}");
    assert!(out.contains(&format!("FAIL {path}:13: \"unsat that is not\"")), "{out}");

    let o = mcmpart(&["test", f.to_str().unwrap(), "--json"]);
    let v = json(&o);
    assert_eq!(v["failed"], 2);
    assert_eq!(v["tests"][0]["result"]["status"], "fail");
    assert_eq!(
        (v["tests"][0]["line"].as_u64(), v["tests"][0]["expect_line"].as_u64()),
        (Some(3), Some(7))
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(mcmpart(&["verify", "examples/quickstart.mcm"]).status.code(), Some(2));
    assert_eq!(mcmpart(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(mcmpart(&["--version"]).status.code(), Some(0));
}

#[test]
fn import_show_and_stats_work_end_to_end() {
    let dir = common::scratch("cli-views");
    let g = dir.join("cnn.json.gz");
    let o = mcmpart(&["import", "tests/data/onnx/tiny_cnn.onnx", "-o", g.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(text(&o).0.contains("10 nodes, 9 edges"), "{:?}", text(&o));

    let o = mcmpart(&[
        "import",
        "tests/data/onnx/truncated.onnx",
        "-o",
        dir.join("t.json").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("truncated.onnx"), "{:?}", text(&o));

    let o = mcmpart(&["stats", g.to_str().unwrap()]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0));
    assert!(out.contains("nodes 10") && out.contains("largest by flops"), "{out}");
    let v = json(&mcmpart(&["stats", g.to_str().unwrap(), "--json"]));
    assert_eq!(v["nodes"], 10);
    assert_eq!(v["flops"], 124928);
    // Every command's JSON says `ok`, those that do not set it too.
    assert_eq!(v["ok"], true, "{v}");
    let b = json(&mcmpart(&[
        "bench",
        "solver",
        "examples/quickstart.mcm",
        "--mode",
        "fix",
        "--samples",
        "3",
        "--json",
    ]));
    assert_eq!(b["ok"], true, "{b}");

    let o = mcmpart(&[
        "show",
        "examples/data/tiny_mlp.json",
        "--partition",
        "examples/quickstart.partition.json",
    ]);
    let (dot, _) = text(&o);
    assert!(dot.starts_with("digraph") && dot.contains("@2"), "{dot}");
    let svg = dir.join("mlp.svg");
    let o = mcmpart(&[
        "show",
        "examples/data/tiny_mlp.json",
        "--partition",
        "examples/quickstart.partition.json",
        "--format",
        "svg",
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.matches("<rect").count() == 8, "{s}");

    let o = mcmpart(&["show", "data/graphs/nope.json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("nope.json"));
}

#[test]
fn bench_load_measures_every_graph() {
    let dir = common::scratch("cli-bench");
    let f = dir.join("load.json");
    let o = mcmpart(&[
        "bench",
        "load",
        "data/graphs",
        "--repeats",
        "1",
        "--out",
        f.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let v: serde_json::Value = common::json_file(&f);
    assert!(v["graphs"].as_u64().unwrap() >= 80);
    assert!(v["largest"]["seconds"].as_f64().unwrap() > 0.0);
}

#[test]
fn sample_writes_a_partition_that_verify_accepts_and_is_reproducible() {
    let dir = common::scratch("cli-sample");
    let a = dir.join("a.json");
    let b = dir.join("b.json");
    for (f, seed) in [(&a, "7"), (&b, "7")] {
        let o = mcmpart(&[
            "sample",
            "examples/bert_ring36.mcm",
            "--seed",
            seed,
            "--out",
            f.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
        assert!(text(&o).0.contains("valid partition of `bert`"), "{:?}", text(&o));
    }
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        "same seed, same partition"
    );
    let o = mcmpart(&["verify", "examples/bert_ring36.mcm", "--partition", a.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let c = dir.join("c.json");
    let o = mcmpart(&[
        "sample",
        "examples/bert_ring36.mcm",
        "--seed",
        "8",
        "--order",
        "topological",
        "--out",
        c.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_ne!(std::fs::read(&a).unwrap(), std::fs::read(&c).unwrap());
}

#[test]
fn repair_makes_an_invalid_proposal_valid_and_counts_the_moves() {
    let dir = common::scratch("cli-repair");
    let q = dir.join("q.json");
    let o = mcmpart(&[
        "repair",
        "examples/quickstart.mcm",
        "--proposal",
        "examples/quickstart.invalid.partition.json",
        "--out",
        q.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("nodes moved"), "{out}");
    assert_eq!(
        mcmpart(&["verify", "examples/quickstart.mcm", "--partition", q.to_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
    // A valid proposal moves nothing; a partial one is completed.
    let o = mcmpart(&[
        "repair",
        "examples/quickstart.mcm",
        "--proposal",
        "examples/quickstart.partition.json",
        "--out",
        q.to_str().unwrap(),
    ]);
    assert!(text(&o).0.contains("repaired: 0 of 7 nodes moved"), "{:?}", text(&o));
    let partial = dir.join("partial.json");
    std::fs::write(&partial, r#"{"placement": {"fc2": 3}}"#).unwrap();
    let completed = dir.join("completed.json");
    let o = mcmpart(&[
        "repair",
        "examples/quickstart.mcm",
        "--proposal",
        partial.to_str().unwrap(),
        "--out",
        completed.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let v: serde_json::Value = common::json_file(&completed);
    assert_eq!(v["placement"].as_object().unwrap().len(), 7, "{v}");
    let o = mcmpart(&[
        "verify",
        "examples/quickstart.mcm",
        "--partition",
        completed.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"placement": {"nope": 3}}"#).unwrap();
    let o = mcmpart(&[
        "repair",
        "examples/quickstart.mcm",
        "--proposal",
        bad.to_str().unwrap(),
        "--out",
        q.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("`nope`"), "{:?}", text(&o));
}

#[test]
fn an_infeasible_problem_names_the_conflicting_rules_and_exits_non_zero() {
    let dir = common::scratch("cli-infeasible");
    let f = dir.join("inf.mcm");
    std::fs::write(
        &f,
        "use std::placement::{acyclic_flow, no_skip, memory_capacity}\nuse std::topologies::ring\n\
         let t = ring(n = 3, memory = 3 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph { a { params = 2 MiB } -> b { params = 2 MiB } -> c { params = 2 MiB } -> d { params = 2 MiB } }\n\
         partition g onto t { require acyclic_flow, no_skip, memory_capacity }\n",
    )
    .unwrap();
    let p = dir.join("p.json");
    let o = mcmpart(&["sample", f.to_str().unwrap(), "--out", p.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err.contains("has no valid partition") && err.contains("memory_capacity"),
        "{err}"
    );
    assert!(
        err.contains("required here") && err.contains("stdlib/placement.mcm"),
        "{err}"
    );
    assert!(!p.exists());
}

#[test]
fn bench_solver_checks_every_partition_and_writes_figures() {
    let dir = common::scratch("cli-bench-solver");
    // Five partitions in `mode` and `order`; the figures `--out` wrote.
    let bench = |mode: &str, order: &str| {
        let f = dir.join(format!("{mode}-{order}.json"));
        let o = mcmpart(&[
            "bench",
            "solver",
            "examples/bert_ring36.mcm",
            "--mode",
            mode,
            "--order",
            order,
            "--samples",
            "5",
            "--out",
            f.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
        common::json_file(&f)
    };
    for mode in ["fix", "sample"] {
        let v = bench(mode, "random");
        assert_eq!(v["invalid"], 0);
        assert_eq!(v["samples"], 5);
        assert!(v["partitions_per_second"].as_f64().unwrap() > 0.0);
    }
    // The means are per partition, as the text report's: in a shuffled
    // order every SAMPLE pass restarts.
    let v = bench("sample", "shuffled");
    let total = v["restarts"].as_f64().unwrap();
    assert!(total > 0.0, "{v}");
    assert_eq!(v["mean_restarts"].as_f64().unwrap(), total / 5.0, "{v}");
}

#[test]
fn bench_eval_times_both_models_on_valid_partitions() {
    let dir = common::scratch("cli-bench-eval");
    let f = dir.join("eval.json");
    let o = mcmpart(&[
        "bench",
        "eval",
        "examples/bert_ring36.mcm",
        "--partitions",
        "3",
        "--seconds",
        "0.05",
        "--out",
        f.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let v = common::json_file(&f);
    assert_eq!(v["partitions"], 3);
    assert_eq!(v["chips"], 36);
    for (model, mean) in [("step_time", "mean_step_time_s"), ("throughput", "mean_latency_s")] {
        let m = &v[model];
        assert!(m["evaluations"].as_u64().unwrap() >= 3, "{v}");
        assert!(m["per_second"].as_f64().unwrap() > 0.0, "{v}");
        assert!(m[mean].as_f64().unwrap() > 0.0, "{v}");
    }
    // One input through the whole graph takes at least a pipeline stage.
    assert!(
        v["step_time"]["mean_step_time_s"].as_f64().unwrap() >= v["throughput"]["mean_latency_s"].as_f64().unwrap()
    );
    // A package the models cannot cost is refused with the reason.
    let bare = dir.join("bare.mcm");
    std::fs::write(
        &bare,
        "topology bare() {\n    chips die[2] { memory = 1 GiB }\n    link die[0] -> die[1] { bandwidth = 1 GB/s }\n}\nlet g = graph { a -> b }\npartition g onto bare() {\n    maximize throughput\n}\n",
    )
    .unwrap();
    let o = mcmpart(&["bench", "eval", bare.to_str().unwrap(), "--seconds", "0.01"]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    assert!(text(&o).1.contains("compute"), "{:?}", text(&o));
}

/// Packages of hundreds of chips: the SAT model leaves out its chip-level
/// arcs (C³ clauses: ring(512) asked for 4 GiB and aborted) and SAMPLE
/// still answers, validly.
#[test]
fn sample_works_on_a_package_of_many_chips() {
    let dir = common::scratch("cli-many-chips");
    let f = dir.join("wide.mcm");
    std::fs::write(
        &f,
        format!(
            "{}let t = ring(n = 512, memory = 3 MiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)\n\
             let g = graph {{ a {{ params = 2 MiB }} -> b -> c {{ params = 2 MiB }} -> d  a -> c }}\n\
             partition g onto t {{ require acyclic_flow, no_skip, triangle_dependency, memory_capacity }}\n",
            common::HEADER
        ),
    )
    .unwrap();
    let p = dir.join("p.json");
    let o = mcmpart(&["sample", f.to_str().unwrap(), "--out", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = mcmpart(&["verify", f.to_str().unwrap(), "--partition", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

/// Byte counts past 64 bits are over any memory, not wrapped to little:
/// the dynamic check refuses them, and the solver finds no partition where
/// the loads only fit when wrapped.
#[test]
fn byte_counts_past_64_bits_do_not_wrap() {
    let dir = common::scratch("cli-wrap");
    let half = 1u64 << 63;
    let graph = format!(
        r#"{{"nodes": [{{"id": "a", "params": {half}}}, {{"id": "b", "params": {half}}}], "edges": [{{"from": "a", "to": "b"}}]}}"#
    );
    std::fs::write(dir.join("g.json"), graph).unwrap();
    std::fs::write(
        dir.join("one.mcm"),
        "use std::topologies::ring\nlet t = ring(n = 1, memory = 3 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         partition graph(\"g.json\") onto t\n",
    )
    .unwrap();
    std::fs::write(dir.join("p.json"), r#"{"placement": {"a": 0, "b": 0}}"#).unwrap();
    let o = common::mcmpart_in(&dir, &["eval", "one.mcm", "--partition", "p.json"]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    assert!(text(&o).0.contains("runs out of memory"), "{:?}", text(&o));
    let third = 1u64 << 62;
    let graph = format!(
        r#"{{"nodes": [{{"id": "a", "params": {third}}}, {{"id": "b", "params": {third}}}, {{"id": "c", "params": {third}}}], "edges": []}}"#
    );
    std::fs::write(dir.join("g3.json"), graph).unwrap();
    std::fs::write(
        dir.join("three.mcm"),
        "use std::placement::memory_capacity\nuse std::topologies::ring\n\
         let t = ring(n = 1, memory = 10000000000000000000 B, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         partition graph(\"g3.json\") onto t { require memory_capacity }\n",
    )
    .unwrap();
    let o = common::mcmpart_in(&dir, &["sample", "three.mcm", "--out", "s.json"]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    assert!(text(&o).1.contains("has no valid partition"), "{:?}", text(&o));
}

/// Output cut short by the reader (`| head`) ends the program quietly with
/// 141, as a shell reports SIGPIPE, not with a panic.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_output_quietly() {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcmpart"))
        .args(["show", "data/graphs/gpt2-xl.json.gz"])
        .current_dir(common::root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(!first.is_empty());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(141), "{:?} {err}", o.status);
}

/// An evaluator that exits without reading its input (larger than a pipe
/// holds) is an invalid sample, not the end of the program: SIGPIPE stays
/// ignored (restoring it killed mcmpart with 141).
#[test]
fn an_evaluator_that_does_not_read_its_input_is_an_invalid_sample() {
    let dir = common::scratch("cli-ev-noread");
    let nodes: Vec<String> = (0..4000)
        .map(|i| format!(r#"{{"id": "a_rather_long_node_name_to_fill_the_pipe_{i}", "flops": 1000}}"#))
        .collect();
    std::fs::write(
        dir.join("g.json"),
        format!(r#"{{"nodes": [{}], "edges": []}}"#, nodes.join(",")),
    )
    .unwrap();
    std::fs::write(
        dir.join("p.mcm"),
        "use std::topologies::ring
let t = ring(n = 2, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)
         partition graph(\"g.json\") onto t {\n evaluate with \"exit 0\"\n}\n",
    )
    .unwrap();
    let o = common::mcmpart_in(&dir, &["solve", "p.mcm", "--strategy", "random", "--budget", "3"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("nothing printed"), "{out}\n{err}");
}

/// `import -o` naming a device, a link or a folder is refused: the new file
/// would be renamed over it (it replaced /dev/full). A link stands in for
/// the device, so that a regression harms nothing.
#[cfg(unix)]
#[test]
fn import_does_not_replace_what_is_not_a_file() {
    let dir = common::scratch("cli-import-link");
    std::fs::write(dir.join("target.json"), "kept").unwrap();
    std::os::unix::fs::symlink(dir.join("target.json"), dir.join("link.json")).unwrap();
    std::fs::create_dir(dir.join("folder.json")).unwrap();
    for dest in ["link.json", "folder.json"] {
        let o = common::mcmpart_in(
            &dir,
            &[
                "import",
                common::root().join("tests/data/onnx/attention.onnx").to_str().unwrap(),
                "-o",
                dest,
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{dest}: {:?}", text(&o));
        assert!(text(&o).1.contains("not a regular file"), "{dest}: {:?}", text(&o));
    }
    assert!(std::fs::symlink_metadata(dir.join("link.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(dir.join("target.json")).unwrap(), "kept");
}

#[test]
fn a_file_without_tests_says_so() {
    let o = crate::common::mcmpart(&["test", "examples/mesh.mcm"]);
    assert!(o.status.success());
    assert!(
        crate::common::text(&o).0.contains("examples/mesh.mcm: no tests"),
        "{:?}",
        crate::common::text(&o)
    );
    let o = crate::common::mcmpart(&["--json", "test", "examples/mesh.mcm"]);
    assert_eq!(crate::common::json(&o)["without_tests"][0], "examples/mesh.mcm");
}
