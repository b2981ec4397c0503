//! External evaluators end to end: shell scripts that are slow, crash, print
//! garbage, refuse or answer, run through the judge (timeouts, reasons,
//! cache, parallel runs), a search that meets failures on the way, and the
//! problem's `evaluate with` through the command line.

use crate::common;

use common::mcmpart_in as mcmpart;

use mcmpart::cost::{Judge, JudgeOptions, Verdict};
use mcmpart::problem::{Placement, Problem};
use mcmpart::strategy::{self, Budget, Random};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// Writes an executable `#!/bin/sh` script.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// A chain a -> b -> c -> d on a ring of three, with no rules: every
/// partition is valid for the solver, so only the evaluator says no.
fn problem(dir: &Path, evaluate: Option<&str>) -> Problem {
    let ev = evaluate
        .map(|c| format!("    evaluate with \"{c}\"\n"))
        .unwrap_or_default();
    let text = format!(
        "use std::placement::acyclic_flow\nuse std::topologies::ring\n\
         let t = ring(n = 3, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a {{ flops = 1 GFLOP, output_bytes = 1 MB }} -> b {{ flops = 1 GFLOP, output_bytes = 1 MB }} \
         -> c {{ flops = 1 GFLOP, output_bytes = 1 MB }} -> d {{ flops = 1 GFLOP }} }}\n\
         partition g onto t {{\n    maximize throughput\n{ev}}}\n"
    );
    let c = common::compile_in(dir, &text);
    assert!(c.ok(), "{}", mcmpart::diag::render_text(&c.program.sources, &c.diags));
    c.problem(None).unwrap().clone()
}

fn judge(p: &Problem, command: &Path, timeout: f64, jobs: usize) -> Judge {
    let opts = JudgeOptions {
        evaluator: Some(command.display().to_string()),
        timeout: Duration::from_secs_f64(timeout),
        jobs,
        ..JudgeOptions::default()
    };
    Judge::new(p, &opts).unwrap_or_else(|e| panic!("{}", e.message))
}

fn reason(v: Verdict) -> String {
    match v {
        Verdict::Invalid { reason } => reason,
        v => panic!("expected an invalid verdict, got {v:?}"),
    }
}

/// The throughput the `digits` evaluator gives: 1 + the sum of the chips.
const DIGITS: &str = r#"input=$(cat)
d=$(printf '%s' "${input#*placement}" | tr -cd '0-9')
s=1
while [ -n "$d" ]; do c=${d%"${d#?}"}; s=$((s + c)); d=${d#?}; done
echo "{\"valid\": true, \"throughput\": $s}"
"#;

#[test]
fn a_good_evaluator_reads_the_partition_and_its_answer_is_the_verdict() {
    let dir = common::scratch("ev-good");
    let p = problem(&dir, None);
    let good = script(&dir, "good.sh", DIGITS);
    let j = judge(&p, &good, 10.0, 1);
    assert_eq!(j.describe, good.display().to_string());
    assert_eq!(j.evaluate(&[0, 1, 2, 0]), Verdict::Valid { throughput: 4.0 });
    assert_eq!(j.evaluate(&[2, 2, 2, 2]), Verdict::Valid { throughput: 9.0 });
    assert_eq!(j.evaluate(&[0, 0, 0, 0]), Verdict::Valid { throughput: 1.0 });

    // What it reads is the partition file format, one line.
    let copy = dir.join("seen.json");
    let tee = script(
        &dir,
        "tee.sh",
        &format!(
            "cat > '{}'\necho '{{\"valid\": true, \"throughput\": 2.5}}'\n",
            copy.display()
        ),
    );
    let j = judge(&p, &tee, 10.0, 1);
    assert_eq!(j.evaluate(&[0, 1, 1, 2]), Verdict::Valid { throughput: 2.5 });
    let seen = std::fs::read_to_string(&copy).unwrap();
    assert_eq!(seen.lines().count(), 1, "{seen}");
    let pl = mcmpart::problem::parse_partition(&seen, &p.graph, p.package.num_chips()).unwrap();
    assert_eq!(pl.chips, vec![0, 1, 1, 2]);
}

#[test]
fn each_failure_is_an_invalid_verdict_that_says_what_happened() {
    let dir = common::scratch("ev-fail");
    let p = problem(&dir, None);
    let cases: Vec<(&str, &str, Vec<&str>)> = vec![
        (
            "crash.sh",
            "cat > /dev/null\necho 'warming up' >&2\necho 'segment 7 overheated' >&2\nexit 3\n",
            vec!["exited with status 3", "segment 7 overheated"],
        ),
        (
            "garbage.sh",
            "echo 'hello, world'\n",
            vec!["unreadable evaluator output", "not JSON", "hello, world"],
        ),
        (
            "silent.sh",
            "cat > /dev/null\n",
            vec!["unreadable evaluator output", "nothing printed"],
        ),
        (
            "nothroughput.sh",
            "echo '{\"valid\": true}'\n",
            vec!["unreadable evaluator output", "`throughput` must be a positive number"],
        ),
        (
            "negative.sh",
            "echo '{\"valid\": true, \"throughput\": -3}'\n",
            vec!["`throughput` must be a positive number"],
        ),
        ("novalid.sh", "echo '{\"ok\": 1}'\n", vec!["no boolean `valid`"]),
        (
            "hot.sh",
            "echo '{\"valid\": false, \"reason\": \"too hot\"}'\n",
            vec!["too hot"],
        ),
        (
            "noreason.sh",
            "echo '{\"valid\": false}'\n",
            vec!["the evaluator gave no reason"],
        ),
    ];
    for (name, body, wants) in cases {
        let s = script(&dir, name, body);
        let r = reason(judge(&p, &s, 10.0, 1).evaluate(&[0, 1, 2, 0]));
        for w in wants {
            assert!(r.contains(w), "{name}: missing {w:?} in {r:?}");
        }
    }
    // An evaluator killed by a signal (the command itself, not a script the
    // shell waits for, which would report the shell's status 137).
    let j = Judge::new(
        &p,
        &JudgeOptions {
            evaluator: Some("kill -9 $$".into()),
            ..JudgeOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{}", e.message));
    let r = reason(j.evaluate(&[0, 1, 2, 0]));
    assert!(r.contains("killed by a signal"), "{r}");
    // The refusal's reason is kept as the evaluator gave it.
    let hot = dir.join("hot.sh");
    assert_eq!(reason(judge(&p, &hot, 10.0, 1).evaluate(&[0, 0, 0, 0])), "too hot");
    // Only the last line counts: chatter before the answer is fine.
    let chatty = script(
        &dir,
        "chatty.sh",
        "echo 'loading model'\necho\necho '{\"valid\": true, \"throughput\": 7}'\necho\n",
    );
    assert_eq!(
        judge(&p, &chatty, 10.0, 1).evaluate(&[0, 0, 0, 0]),
        Verdict::Valid { throughput: 7.0 }
    );
    // A command that does not exist fails like a crash (the shell's 127).
    let missing = dir.join("does-not-exist.sh");
    let r = reason(judge(&p, &missing, 10.0, 1).evaluate(&[0, 0, 0, 0]));
    assert!(r.contains("status 127"), "{r}");
}

#[test]
fn a_slow_evaluator_times_out_soon_after_the_limit() {
    let dir = common::scratch("ev-slow");
    let p = problem(&dir, None);
    let slow = script(
        &dir,
        "slow.sh",
        "sleep 5\necho '{\"valid\": true, \"throughput\": 1}'\n",
    );
    let j = judge(&p, &slow, 0.3, 1);
    let t = Instant::now();
    let r = reason(j.evaluate(&[0, 1, 2, 0]));
    let took = t.elapsed().as_secs_f64();
    assert!(r.contains("timed out after 0.3 s"), "{r}");
    assert!((0.29..4.0).contains(&took), "took {took} s");
    // A slow child of the evaluator is stopped too: its output pipe closes.
    let nested = script(&dir, "nested.sh", "(sleep 5; echo late) &\nsleep 5\n");
    let t = Instant::now();
    let r = reason(judge(&p, &nested, 0.3, 1).evaluate(&[0, 0, 0, 0]));
    assert!(r.contains("timed out"), "{r}");
    assert!(t.elapsed().as_secs_f64() < 4.0, "took {:?}", t.elapsed());
}

/// An evaluator that answers and exits but leaves a process holding its
/// output open is not waited for past the timeout; one that leaves a
/// process with its output elsewhere is answered as usual.
#[test]
fn a_process_left_running_does_not_hold_the_judge() {
    let dir = common::scratch("ev-left");
    let p = problem(&dir, None);
    let leaky = script(
        &dir,
        "leaky.sh",
        "(sleep 4; touch late) &\necho '{\"valid\": true, \"throughput\": 1}'\n",
    );
    let t = Instant::now();
    let r = reason(judge(&p, &leaky, 0.5, 1).evaluate(&[0, 1, 2, 0]));
    assert!(r.contains("left its output open"), "{r}");
    assert!(t.elapsed().as_secs_f64() < 3.5, "took {:?}", t.elapsed());
    // What it left running was stopped with it.
    std::thread::sleep(std::time::Duration::from_secs(5));
    assert!(!dir.join("late").exists(), "the process left running went on");
    let tidy = script(
        &dir,
        "tidy.sh",
        "sleep 6 >/dev/null 2>&1 </dev/null &\necho '{\"valid\": true, \"throughput\": 1}'\n",
    );
    let t = Instant::now();
    let v = judge(&p, &tidy, 0.5, 1).evaluate(&[0, 1, 2, 0]);
    assert!(matches!(v, Verdict::Valid { .. }), "{v:?}");
    assert!(t.elapsed().as_secs_f64() < 4.0, "took {:?}", t.elapsed());
}

#[test]
fn a_slow_evaluator_that_never_reads_a_large_input_still_times_out() {
    // A graph whose partition JSON is far larger than a pipe's buffer: the
    // evaluator does not read its stdin, so writing it blocks until the
    // evaluator is gone; the timeout must not wait for that.
    let dir = common::scratch("ev-slow-big");
    let n = 4000;
    let mut g = String::new();
    for i in 0..n {
        g += &format!("  a_rather_long_node_name_to_fill_the_pipe_{i} {{ flops = 1 MFLOP }}\n");
    }
    let text = format!(
        "use std::topologies::ring\n\
         let t = ring(n = 2, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{\n{g}}}\npartition g onto t\n"
    );
    let c = common::compile_in(&dir, &text);
    assert!(c.ok(), "{}", mcmpart::diag::render_text(&c.program.sources, &c.diags));
    let p = c.problem(None).unwrap().clone();
    let slow = script(&dir, "slow.sh", "sleep 6\n");
    let j = judge(&p, &slow, 0.3, 1);
    let t = Instant::now();
    let r = reason(j.evaluate(&vec![0; n]));
    let took = t.elapsed().as_secs_f64();
    assert!(r.contains("timed out"), "{r}");
    assert!(took < 4.0, "took {took} s");
}

#[test]
fn results_are_cached_by_partition() {
    let dir = common::scratch("ev-cache");
    let p = problem(&dir, None);
    let counter = dir.join("runs.txt");
    let counting = script(
        &dir,
        "count.sh",
        &format!("echo run >> '{}'\n{DIGITS}", counter.display()),
    );
    let runs = || std::fs::read_to_string(&counter).map_or(0, |s| s.lines().count());
    let j = judge(&p, &counting, 10.0, 2);
    assert_eq!(j.evaluate(&[0, 1, 2, 0]), Verdict::Valid { throughput: 4.0 });
    assert_eq!(j.evaluate(&[0, 1, 2, 0]), Verdict::Valid { throughput: 4.0 });
    assert_eq!(runs(), 1);
    let s = j.stats.lock().unwrap().clone();
    assert_eq!((s.evaluations, s.cache_hits), (1, 1));
    // A batch with a repeat and a cached partition runs the new one once.
    let vs = j.evaluate_all(&[vec![1, 1, 1, 1], vec![0, 1, 2, 0], vec![1, 1, 1, 1]]);
    assert_eq!(
        vs,
        vec![
            Verdict::Valid { throughput: 5.0 },
            Verdict::Valid { throughput: 4.0 },
            Verdict::Valid { throughput: 5.0 }
        ]
    );
    assert_eq!(runs(), 2);
    let s = j.stats.lock().unwrap().clone();
    assert_eq!((s.evaluations, s.cache_hits), (2, 3));

    // Failures are cached too: a crash is not retried.
    let crash = script(
        &dir,
        "crash.sh",
        &format!("echo run >> '{}'\necho boom >&2\nexit 3\n", counter.display()),
    );
    let j = judge(&p, &crash, 10.0, 1);
    let a = j.evaluate(&[2, 2, 2, 2]);
    let b = j.evaluate(&[2, 2, 2, 2]);
    assert_eq!(a, b);
    assert_eq!(runs(), 3);
}

#[test]
fn evaluations_run_in_parallel_with_jobs() {
    let dir = common::scratch("ev-jobs");
    let p = problem(&dir, None);
    let slowish = script(&dir, "slowish.sh", &format!("sleep 0.5\n{DIGITS}"));
    let j = judge(&p, &slowish, 10.0, 4);
    assert_eq!(j.jobs(), 4);
    let batch = vec![vec![0, 0, 0, 0], vec![0, 0, 0, 1], vec![0, 0, 1, 1], vec![0, 1, 1, 1]];
    let t = Instant::now();
    let vs = j.evaluate_all(&batch);
    let took = t.elapsed().as_secs_f64();
    let got: Vec<Option<f64>> = vs.iter().map(Verdict::throughput).collect();
    assert_eq!(got, vec![Some(1.0), Some(2.0), Some(3.0), Some(4.0)]);
    assert!(took < 1.6, "4 evaluations of 0.5 s on 4 jobs took {took} s");
}

/// Crashes when `a` is on chip 1, hangs when `b` is on chip 2, otherwise
/// answers 1 + the sum of the chips.
fn flaky(dir: &Path) -> PathBuf {
    script(
        dir,
        "flaky.sh",
        &format!(
            "input=$(cat)\ncase \"$input\" in\n  *'\"a\":1'*) echo 'a on chip 1 is cursed' >&2; exit 3;;\n  *'\"b\":2'*) sleep 5;;\nesac\nprintf '%s' \"$input\" | {{\n{DIGITS}}}\n"
        ),
    )
}

#[test]
fn a_search_goes_on_past_crashes_and_timeouts() {
    let dir = common::scratch("ev-search");
    let p = problem(&dir, None);
    let f = flaky(&dir);
    let j = judge(&p, &f, 0.3, 4);
    let t = Instant::now();
    let o = strategy::run(&p, &j, &mut Random, Budget::Samples(20), 3, None).expect("feasible");
    let took = t.elapsed().as_secs_f64();
    assert_eq!(o.records.len(), 20);
    assert!(took < 10.0, "took {took} s");
    // Every invalid sample is counted under its reason.
    let bad = o.records.iter().filter(|r| r.throughput.is_none()).count();
    assert_eq!(o.invalid_count(), bad);
    assert!(bad > 0, "expected some failures: {:?}", o.records);
    for r in o.invalid.keys() {
        assert!(
            r == "evaluator exited with status 3: a on chip 1 is cursed" || r == "evaluator timed out after 0.3 s",
            "unexpected reason {r:?}"
        );
    }
    assert!(o.invalid.keys().any(|r| r.contains("status 3")), "{:?}", o.invalid);
    assert!(o.invalid.keys().any(|r| r.contains("timed out")), "{:?}", o.invalid);
    // The best was judged valid, by the evaluator, and is valid for the checker.
    let best = o.best.as_ref().expect("some valid sample");
    assert_ne!(best.chips[0], 1);
    assert_ne!(best.chips[1], 2);
    assert_eq!(best.throughput, 1.0 + best.chips.iter().map(|&c| c as f64).sum::<f64>());
    assert_eq!(
        j.evaluate(&best.chips),
        Verdict::Valid {
            throughput: best.throughput
        }
    );
    let vs = mcmpart::solver::check(
        &p.graph,
        &p.package,
        &p.constraints,
        &Placement::new(best.chips.clone()),
    );
    assert!(vs.is_empty());
    // The curve is the best so far.
    let mut prev = None;
    for r in &o.records {
        assert!(r.best >= prev, "{:?}", o.records);
        prev = r.best;
    }
    assert_eq!(o.records.last().unwrap().best, Some(best.throughput));
}

#[test]
fn the_dynamic_check_runs_before_the_evaluator() {
    // Weights 60 MB + activations on a 100 MB chip: all on chip 0 overflows,
    // and the evaluator (which counts its runs) is not asked.
    let dir = common::scratch("ev-dynamic");
    let counter = dir.join("runs.txt");
    let s = script(
        &dir,
        "count.sh",
        &format!("echo run >> '{}'\n{DIGITS}", counter.display()),
    );
    let text = "use std::topologies::ring\n\
         let t = ring(n = 2, memory = 100 MB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph { w { params = 60 MB, output_bytes = 60 MB } -> a { flops = 1 GFLOP, output_bytes = 30 MB } -> b { flops = 1 GFLOP, output_bytes = 30 MB } }\n\
         partition g onto t\n";
    let c = common::compile_in(&dir, text);
    assert!(c.ok(), "{}", mcmpart::diag::render_text(&c.program.sources, &c.diags));
    let p = c.problem(None).unwrap().clone();
    let r = reason(judge(&p, &s, 10.0, 1).evaluate(&[0, 0, 0]));
    assert!(r.contains("chip `die[0]`") && r.contains("at node `b`"), "{r}");
    assert!(!counter.exists(), "the evaluator ran");
    let opts = JudgeOptions {
        evaluator: Some(s.display().to_string()),
        dynamic_check: false,
        ..JudgeOptions::default()
    };
    let j = Judge::new(&p, &opts).unwrap_or_else(|e| panic!("{}", e.message));
    assert_eq!(j.evaluate(&[0, 0, 0]), Verdict::Valid { throughput: 1.0 });
    assert!(counter.exists());
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn the_problems_evaluator_runs_from_the_files_folder_on_the_command_line() {
    let dir = common::scratch("ev-cli");
    let sub = dir.join("models");
    std::fs::create_dir_all(&sub).unwrap();
    flaky(&sub);
    let p = problem(&sub, Some("./flaky.sh"));
    let e = p.evaluator.as_ref().expect("an evaluator");
    assert_eq!((e.command.as_str(), e.dir.as_path()), ("./flaky.sh", sub.as_path()));
    let mcm = sub.join("chain.mcm");
    std::fs::write(
        &mcm,
        "use std::topologies::ring\n\
         let t = ring(n = 3, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph { a { flops = 1 GFLOP, output_bytes = 1 MB } -> b { flops = 1 GFLOP, output_bytes = 1 MB } \
         -> c { flops = 1 GFLOP, output_bytes = 1 MB } -> d { flops = 1 GFLOP } }\n\
         partition g onto t {\n    maximize throughput\n    evaluate with \"./flaky.sh\"\n}\n",
    )
    .unwrap();
    // Run from another folder: `./flaky.sh` is found next to the file.
    let out = dir.join("best.json");
    let o = mcmpart(
        &dir,
        &[
            "solve",
            "models/chain.mcm",
            "--budget",
            "10",
            "--strategy",
            "random",
            "--eval-timeout",
            "0.3",
            "--jobs",
            "2",
            "--seed",
            "5",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["judge"], "./flaky.sh");
    assert_eq!(v["samples"], 10);
    assert_eq!(v["curve"].as_array().map(Vec::len), Some(10));
    let invalid = v["invalid"].as_u64().unwrap();
    let counted: u64 = v["invalid_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(invalid, counted);
    // The written partition is the best, and the evaluator's answer for it.
    let written = std::fs::read_to_string(&out).unwrap();
    let pl = mcmpart::problem::parse_partition(&written, &p.graph, 3).unwrap();
    let sum: u32 = pl.chips.iter().sum();
    assert_eq!(v["throughput"].as_f64(), Some(1.0 + sum as f64));
    let o = mcmpart(
        &dir,
        &["verify", "models/chain.mcm", "--partition", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // `eval` asks the evaluator too, and says what it answered.
    let ok = dir.join("ok.json");
    std::fs::write(&ok, r#"{"placement": {"a": 0, "b": 1, "c": 2, "d": 2}}"#).unwrap();
    let o = mcmpart(&dir, &["eval", "models/chain.mcm", "--partition", ok.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("evaluator `./flaky.sh`: throughput 6.0000 /s"),
        "{}",
        text(&o)
    );
    // From the file's own folder, named without a folder.
    let o = mcmpart(&sub, &["eval", "chain.mcm", "--partition", ok.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("throughput 6.0000 /s"), "{}", text(&o));
    let cursed = dir.join("cursed.json");
    std::fs::write(&cursed, r#"{"placement": {"a": 1, "b": 1, "c": 2, "d": 2}}"#).unwrap();
    let o = mcmpart(
        &dir,
        &["eval", "models/chain.mcm", "--partition", cursed.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("invalid at evaluation: evaluator exited with status 3: a on chip 1 is cursed"),
        "{}",
        text(&o)
    );
    let o = mcmpart(
        &dir,
        &[
            "eval",
            "models/chain.mcm",
            "--partition",
            cursed.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["valid"], false);
    assert_eq!(v["verdict"]["status"], "invalid");
    assert!(v["verdict"]["reason"].as_str().unwrap().contains("cursed"), "{v}");
    // The analytical model still gives its figures.
    assert!(v["cost"]["latency_s"].as_f64().unwrap() > 0.0);
    // `--analytical` leaves the evaluator out.
    let o = mcmpart(
        &dir,
        &[
            "eval",
            "models/chain.mcm",
            "--partition",
            cursed.to_str().unwrap(),
            "--analytical",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("evaluator"), "{}", text(&o));
    // A hanging evaluator under a short timeout.
    let hang = dir.join("hang.json");
    std::fs::write(&hang, r#"{"placement": {"a": 0, "b": 2, "c": 2, "d": 2}}"#).unwrap();
    let t = Instant::now();
    let o = mcmpart(
        &dir,
        &[
            "eval",
            "models/chain.mcm",
            "--partition",
            hang.to_str().unwrap(),
            "--eval-timeout",
            "0.3",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("timed out after 0.3 s"), "{}", text(&o));
    assert!(t.elapsed().as_secs_f64() < 4.0);
}

/// A throughput beyond the analytical model's bound (only an evaluator
/// can report one) is said as such, not as `inf%` of the bound.
#[test]
fn a_throughput_beyond_the_bound_is_reported_plainly() {
    let dir = common::scratch("ev-beyond");
    let huge = script(
        &dir,
        "huge.sh",
        "cat > /dev/null\necho '{\"valid\": true, \"throughput\": 1e308}'\n",
    );
    let q = common::root().join("examples/quickstart.mcm");
    let o = common::mcmpart_in(
        &dir,
        &[
            "solve",
            q.to_str().unwrap(),
            "--strategy",
            "random",
            "--budget",
            "3",
            "--evaluator",
            huge.to_str().unwrap(),
            "--out",
            "best.json",
        ],
    );
    let (out, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(
        out.contains("times the analytical bound") && !out.contains("inf"),
        "{out}"
    );
}
