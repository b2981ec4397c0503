//! `mcmpart compare` end to end on tiny problems: the files it writes, the
//! greedy baseline, the split mode over a graph folder with its own
//! manifest, resuming (the committed runs too), and clean errors; its
//! summary as values, through the library. Also the front-end hook it
//! uses, `compile_*_with_graph`.

use crate::common;

use common::{mcmpart, text};

use mcmpart::cost::JudgeOptions;
use mcmpart::experiment::compare::{self, Config, ProblemRuns, Settings, Summary};
use mcmpart::graph::parse_graph_json;
use mcmpart::lang::compile_str_with_graph;
use mcmpart::strategy::{Best, Outcome, RlOptions, SampleRecord};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Two tiny problems in a scratch folder.
fn tiny_problems(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::write(dir.join("six.json"), common::chain_graph("six", 6, 0)).unwrap();
    std::fs::write(dir.join("eight.json"), common::chain_graph("eight", 8, 0)).unwrap();
    let a = dir.join("six.mcm");
    let b = dir.join("eight.mcm");
    std::fs::write(&a, common::ring_problem("six.json", 3)).unwrap();
    std::fs::write(&b, common::ring_problem("eight.json", 4)).unwrap();
    (a, b)
}

/// A CSV file as a header and rows of fields (no quoted fields here).
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let head = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines.map(|l| l.split(',').map(String::from).collect()).collect();
    (head, rows)
}

/// The rows of `OUT/curves.csv` without the `elapsed_s` column (each run's
/// own clock, the one column that may differ between equal runs).
fn curves_without_times(out: &Path) -> Vec<Vec<String>> {
    let (head, rows) = read_csv(&out.join("curves.csv"));
    let elapsed = head.iter().position(|h| h == "elapsed_s").unwrap();
    rows.into_iter()
        .map(|mut r| {
            r.remove(elapsed);
            r
        })
        .collect()
}

fn geomean(xs: &[f64]) -> f64 {
    if xs.iter().any(|&x| x <= 0.0) {
        return 0.0;
    }
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn compare_writes_curves_tables_and_figures_consistent_with_each_other() {
    let dir = common::scratch("compare-files");
    let (a, b) = tiny_problems(&dir);
    let out = dir.join("out");
    let o = mcmpart(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--strategies",
        "random,anneal",
        "--budget",
        "30",
        "--repeats",
        "2",
        "--seed",
        "5",
        "--budgets",
        "5,30",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    // One log line per finished run on stderr, though it is no terminal:
    // 2 problems x (greedy + 2 strategies x 2 seeds).
    let log: Vec<&str> = stderr.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(log.len(), 10, "{stderr}");
    for k in 1..=10 {
        assert!(log.iter().any(|l| l.starts_with(&format!("[{k}/10] "))), "{stderr}");
    }
    assert!(
        log.iter()
            .any(|l| l.contains(" anneal seed 6: ") && l.contains("samples in")),
        "{stderr}"
    );
    // The table on stdout is summary.md.
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(stdout.starts_with(&md), "{stdout}");
    assert!(md.contains("| strategy | 5 samples | 30 samples |"), "{md}");
    assert!(md.contains("| greedy (baseline) | 1.000x | 1.000x |"), "{md}");
    assert!(md.contains("| random |") && md.contains("| anneal |"), "{md}");
    assert!(md.contains("| strategy | 1.00x | 1.05x | 1.10x | 1.20x |"), "{md}");

    // curves.csv: the columns, greedy once per problem, every run in full.
    let (head, rows) = read_csv(&out.join("curves.csv"));
    assert_eq!(
        head,
        [
            "problem",
            "strategy",
            "seed",
            "sample",
            "elapsed_s",
            "throughput",
            "best",
            "improvement_over_greedy"
        ]
    );
    let mut runs: BTreeMap<(String, String, u64), Vec<&Vec<String>>> = BTreeMap::new();
    for r in &rows {
        assert_eq!(r.len(), 8, "{r:?}");
        runs.entry((r[0].clone(), r[1].clone(), r[2].parse().unwrap()))
            .or_default()
            .push(r);
    }
    let problems = ["six:g", "eight:g"];
    for p in problems {
        let g = &runs[&(p.to_string(), "greedy".to_string(), 5)];
        assert_eq!(g.len(), 1, "greedy is one sample");
        assert_eq!(g[0][7], "1", "greedy is 1.0x of itself");
        for s in ["random", "anneal"] {
            for seed in [5, 6] {
                let r = &runs[&(p.to_string(), s.to_string(), seed)];
                assert_eq!(r.len(), 30, "{p} {s} {seed}");
                let samples: Vec<usize> = r.iter().map(|x| x[3].parse().unwrap()).collect();
                assert_eq!(samples, (1..=30).collect::<Vec<_>>());
            }
        }
    }
    assert_eq!(runs.len(), 2 * (1 + 2 * 2), "{:?}", runs.keys().collect::<Vec<_>>());

    // summary.csv's format: its columns, a row per strategy, metric and
    // budget (or level); its values are checked against the runs in
    // `the_summary_follows_the_runs` and `summary_values_are_means_over_seeds_and_geometric_means_over_problems`.
    let (head, rows) = read_csv(&out.join("summary.csv"));
    assert_eq!(
        head,
        [
            "strategy",
            "metric",
            "at",
            "value",
            "problems",
            "runs",
            "runs_without_valid"
        ]
    );
    assert!(rows.iter().all(|r| r.len() == 7), "{rows:?}");
    let metric = |m: &str| rows.iter().filter(|r| r[1] == m).count();
    assert_eq!(metric("improvement_over_greedy"), 3 * 2);
    assert_eq!(metric("fraction_of_bound"), 3 * 2);
    assert_eq!(metric("samples_to_reach"), 3 * 4);
    for r in rows.iter().filter(|r| r[1] == "improvement_over_greedy") {
        assert!(r[3].parse::<f64>().is_ok(), "{r:?}");
        assert_eq!(r[5], if r[0] == "greedy" { "2" } else { "4" }, "{r:?}");
    }
    let greedy_reach = rows
        .iter()
        .find(|r| r[0] == "greedy" && r[1] == "samples_to_reach" && r[2] == "1")
        .unwrap();
    assert_eq!(greedy_reach[3], "1", "greedy is at 1.0x from its one sample");

    // figures.json carries summary.csv's numbers.
    let v: serde_json::Value = common::json_file(&out.join("figures.json"));
    assert_eq!(v["ok"], true);
    assert_eq!(v["problems"].as_array().unwrap().len(), 2);
    assert_eq!(v["strategies"], serde_json::json!(["greedy", "random", "anneal"]));
    for p in v["problems"].as_array().unwrap() {
        let g = p["greedy_throughput"].as_f64().unwrap();
        let bound = p["bound_throughput"].as_f64().unwrap();
        assert!(g > 0.0 && g <= bound * (1.0 + 1e-9), "greedy {g}, bound {bound}");
    }
    let csv_value = |strategy: &str, metric: &str, at: &str| -> String {
        let at_f: f64 = at.parse().unwrap();
        let r = rows
            .iter()
            .find(|r| r[0] == strategy && r[1] == metric && r[2].parse::<f64>() == Ok(at_f));
        r.unwrap_or_else(|| panic!("summary.csv has no {strategy} {metric} {at}"))[3].clone()
    };
    let cells = v["summary"].as_array().unwrap();
    assert_eq!(cells.len(), 3 * 2, "{v}");
    for c in cells {
        let (s, at) = (c["strategy"].as_str().unwrap(), c["budget"].to_string());
        for metric in ["improvement_over_greedy", "fraction_of_bound"] {
            let csv: f64 = csv_value(s, metric, &at).parse().unwrap();
            assert!(
                close(c[metric].as_f64().unwrap(), csv),
                "{s} {metric} at {at}: {c} vs {csv}"
            );
        }
    }
    for r in v["samples_to_reach"].as_array().unwrap() {
        let csv = csv_value(
            r["strategy"].as_str().unwrap(),
            "samples_to_reach",
            &r["level"].to_string(),
        );
        assert_eq!(
            r["samples"].as_u64().map(|n| n.to_string()).unwrap_or_default(),
            csv,
            "{r}"
        );
    }

    // The figures: one per problem and the overall one.
    // A label that is no safe name (`six:g`) gets a folder with a hash of it.
    let folder = |prefix: &str| {
        let names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(prefix))
            .collect();
        assert_eq!(names.len(), 1, "{prefix}: {names:?}");
        format!("{}/curves.svg", names[0])
    };
    for svg in ["overall.svg".to_string(), folder("six_g-"), folder("eight_g-")] {
        let svg = svg.as_str();
        let s = std::fs::read_to_string(out.join(svg)).unwrap_or_else(|e| panic!("{svg}: {e}"));
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"), "{svg}");
        assert!(
            s.contains(">\nrandom\n<") || s.contains(">random<"),
            "{svg} has no legend"
        );
    }

    // --json prints the figures.
    let o = mcmpart(&[
        "compare",
        a.to_str().unwrap(),
        "--strategies",
        "random",
        "--budget",
        "4",
        "--repeats",
        "1",
        "--out",
        dir.join("out-json").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(v["ok"], true);
    assert_eq!(v["budgets"], serde_json::json!([4]));
    assert_eq!(v["summary"][0]["strategy"], "greedy");
    assert_eq!(v["summary"][0]["improvement_over_greedy"], 1.0);
}

#[test]
fn compare_applies_a_problem_to_every_graph_of_a_split() {
    let dir = common::scratch("compare-split");
    let graphs = dir.join("graphs");
    std::fs::create_dir_all(&graphs).unwrap();
    std::fs::write(graphs.join("five.json"), common::chain_graph("five", 5, 0)).unwrap();
    std::fs::write(graphs.join("seven.json"), common::chain_graph("seven", 7, 0)).unwrap();
    std::fs::write(graphs.join("train.json"), common::chain_graph("train", 4, 0)).unwrap();
    // 8 MiB of weights on one node: no die of 1 MiB holds them.
    std::fs::write(graphs.join("huge.json"), common::chain_graph("huge", 3, 8 << 20)).unwrap();
    std::fs::write(graphs.join("broken.json"), "{ not json").unwrap();
    let manifest = serde_json::json!({
        "format_version": 1,
        "graphs": [
            {"name": "five", "split": "test", "file": "five.json"},
            {"name": "train-only", "split": "train", "file": "train.json"},
            {"name": "seven", "split": "test", "file": "seven.json"},
            {"name": "huge", "split": "test", "file": "huge.json"},
            {"name": "broken", "split": "test", "file": "broken.json"},
        ]
    });
    std::fs::write(graphs.join("manifest.json"), manifest.to_string()).unwrap();
    // The file's own graph is not the split's.
    std::fs::write(dir.join("own.json"), common::chain_graph("own", 2, 0)).unwrap();
    let file = dir.join("ring.mcm");
    std::fs::write(&file, common::ring_problem("own.json", 3)).unwrap();
    let out = dir.join("out");
    let args = |split: &str| -> Vec<String> {
        [
            "compare",
            file.to_str().unwrap(),
            "--strategies",
            "random",
            "--budget",
            "10",
            "--repeats",
            "2",
            "--graphs",
            graphs.to_str().unwrap(),
            "--split",
            split,
            "--out",
            out.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let run = |split: &str| {
        let a = args(split);
        mcmpart(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // A graph file that does not load is a broken data set: refused
    // before any run, naming the file.
    let o = run("test");
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("cannot load the graph `broken`") && stderr.contains("broken.json"),
        "{stderr}"
    );
    assert!(!out.join("curves.csv").exists());
    let mut manifest = manifest;
    manifest["graphs"].as_array_mut().unwrap().pop();
    std::fs::write(graphs.join("manifest.json"), manifest.to_string()).unwrap();
    let o = run("test");
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    // A graph the package cannot hold is reported and skipped.
    assert!(stderr.contains("warning: skipping `huge`"), "{stderr}");
    assert!(stdout.contains("on 2 problem(s)"), "{stdout}");
    assert!(stdout.contains("Skipped 1 problem(s)"), "{stdout}");
    let (_, rows) = read_csv(&out.join("curves.csv"));
    let problems: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(problems.into_iter().collect::<Vec<_>>(), ["five", "seven"]);
    assert_eq!(rows.len(), 2 * (1 + 2 * 10));
    let v: serde_json::Value = common::json_file(&out.join("figures.json"));
    let nodes: Vec<u64> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["nodes"].as_u64().unwrap())
        .collect();
    assert_eq!(nodes, [6, 8], "the split's graphs, not the file's own");
    assert_eq!(v["skipped"].as_array().unwrap().len(), 1);
    assert!(out.join("five/curves.svg").exists() && out.join("seven/curves.svg").exists());

    // An empty split is an error that names the splits there are.
    let o = run("nope");
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the split `nope`") && stderr.contains("has no graph"),
        "{stderr}"
    );
    assert!(stderr.contains("the splits are test, train"), "{stderr}");
}

#[test]
fn compare_errors_are_clean() {
    let dir = common::scratch("compare-errors");
    let (a, _) = tiny_problems(&dir);
    let out = dir.join("out");
    let base = |extra: &[&str]| {
        let mut v = vec![
            "compare",
            a.to_str().unwrap(),
            "--budget",
            "3",
            "--out",
            out.to_str().unwrap(),
        ];
        v.extend_from_slice(extra);
        mcmpart(&v)
    };
    let o = base(&["--strategies", "random,anneel"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown strategy `anneel`") && err.contains("did you mean `anneal`?"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    let o = base(&["--budgets", "2,5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("--budgets: 5 is not between 1 and --budget (3)"),
        "{:?}",
        text(&o)
    );

    let o = mcmpart(&["compare", "does/not/exist.mcm", "--out", out.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot read `does/not/exist.mcm`"), "{err}");

    let o = base(&["--graphs", dir.join("nowhere").to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("manifest.json"), "{err}");
    assert!(!out.exists(), "nothing is written when the arguments are wrong");
}

#[test]
fn a_problem_compiles_with_another_graph() {
    let dir = common::scratch("compare-with-graph");
    std::fs::write(dir.join("own.json"), common::chain_graph("own", 2, 0)).unwrap();
    let src = common::ring_problem("own.json", 3);
    let other = Arc::new(parse_graph_json(&common::chain_graph("other", 9, 0)).unwrap());
    let c = compile_str_with_graph("test.mcm", &src, &dir, other.clone());
    assert!(c.ok());
    let p = c.problem(None).unwrap();
    assert!(Arc::ptr_eq(&p.graph, &other));
    assert_eq!(p.graph.num_placed(), 10);
    assert_eq!(p.package.num_chips(), 3, "the package stays the file's");
    assert_eq!(p.constraints.len(), 4, "the rules stay the file's");
    let plain = common::compile_in(&dir, &src);
    assert_eq!(plain.problem(None).unwrap().graph.num_placed(), 3);
}

/// Runs go in parallel, each on its own seed and judge: the curves are the
/// same run after run, in the same order (only the timings differ).
#[test]
fn parallel_runs_give_the_same_curves() {
    let dir = common::scratch("compare-parallel");
    let (a, b) = tiny_problems(&dir);
    let curves = |name: &str| {
        let out = dir.join(name);
        let o = mcmpart(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--strategies",
            "random,anneal,dp",
            "--budget",
            "25",
            "--repeats",
            "3",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o).1);
        curves_without_times(&out)
    };
    let first = curves("one");
    // Every strategy and seed of both problems, random's runs in full.
    for strategy in ["greedy", "random", "anneal", "dp"] {
        assert!(first.iter().any(|r| r[1] == strategy), "{strategy}");
    }
    assert_eq!(first.iter().filter(|r| r[1] == "random").count(), 2 * 3 * 25);
    assert_eq!(first, curves("two"));
}

/// A run file's outcome without its wall times.
fn run_without_times(path: &Path) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("elapsed_s");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    strip(&mut v);
    v
}

#[test]
fn jobs_run_alone_from_their_specs_make_the_command_lines_runs() {
    let dir = common::scratch("compare-jobs");
    let (a, b) = tiny_problems(&dir);
    let words = |out: &str| -> Vec<String> {
        let flags = [
            "--strategies",
            "random,anneal",
            "--budget",
            "15",
            "--repeats",
            "2",
            "--seed",
            "4",
        ];
        let mut w = vec![a.display().to_string(), b.display().to_string()];
        w.extend(flags.iter().map(|s| s.to_string()));
        w.extend(["--out".to_string(), dir.join(out).display().to_string()]);
        w
    };
    let cli = dir.join("cli");
    let mut argv = vec!["compare".to_string()];
    argv.extend(words("cli"));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let o = mcmpart(&argv);
    assert!(o.status.success(), "{}", text(&o).1);

    // The command line's words give the command line's comparison; each job
    // made alone from its spec (as a worker makes it) and kept by the
    // plan gives the same run file, and the same summary.
    let config = mcmpart::cli::compare_config(words("jobs")).unwrap_or_else(|e| panic!("{e:?}"));
    let plan = compare::Compare::prepare(&config, &|_| {}).unwrap();
    assert_eq!(plan.jobs().len(), 2 * 2 * 2);
    let mut results = Vec::new();
    for k in 0..plan.jobs().len() {
        assert!(plan.resumed(k, &|_| {}).is_none());
        let spec: compare::JobSpec = serde_json::from_str(&serde_json::to_string(&plan.spec(k)).unwrap()).unwrap();
        let run = compare::run_job(&config, &spec).unwrap();
        plan.check(k, &run).unwrap();
        plan.save(k, &run, &|_| {});
        results.push(Ok(run));
    }
    // A run of another job, or one whose best partition breaks a rule, is
    // not taken for this one.
    let run = results[0].as_ref().unwrap().clone();
    assert!(plan.check(1, &run).unwrap_err().contains("came back for"));
    let mut broken = run.clone();
    if let Some(b) = broken.best.as_mut() {
        b.chips.iter_mut().for_each(|c| *c = 99);
    }
    assert!(plan.check(0, &broken).is_err());
    let report = plan.finish(results, 0, &|_| {}).unwrap();
    assert_eq!(report.runs, 8);
    let jobs = dir.join("jobs");
    let mut files = 0;
    for entry in std::fs::read_dir(cli.join("runs")).unwrap().flatten() {
        for run in std::fs::read_dir(entry.path()).unwrap().flatten() {
            let rel = run.path().strip_prefix(&cli).unwrap().to_path_buf();
            assert_eq!(
                run_without_times(&run.path()),
                run_without_times(&jobs.join(&rel)),
                "{}",
                rel.display()
            );
            files += 1;
        }
    }
    assert_eq!(files, 8);
    assert_eq!(curves_without_times(&cli), curves_without_times(&jobs));
    // A spec whose problem changed under it is refused.
    let config = mcmpart::cli::compare_config(words("again")).unwrap_or_else(|e| panic!("{e:?}"));
    let plan = compare::Compare::prepare(&config, &|_| {}).unwrap();
    let mut spec = plan.spec(0);
    spec.fingerprint = "0".repeat(16);
    assert!(compare::run_job(&config, &spec)
        .unwrap_err()
        .contains("not the problem the job was planned on"));
    // Words the command line refuses are refused, with its text; --help is help.
    match mcmpart::cli::compare_config(["x.mcm", "--out", "o", "--repeats", "0"]) {
        Err(mcmpart::cli::CompareArgsError::Invalid(e)) => assert!(e.message.contains("--repeats"), "{}", e.message),
        other => panic!("{other:?}"),
    }
    match mcmpart::cli::compare_config(["--help"]) {
        Err(mcmpart::cli::CompareArgsError::Help(t)) => assert!(t.contains("--strategies"), "{t}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn resume_takes_the_finished_runs_made_with_the_same_settings() {
    let dir = common::scratch("compare-resume");
    let (a, b) = tiny_problems(&dir);
    let out = dir.join("out");
    let compare = |budget: &str, resume: bool| {
        let mut argv = vec![
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--strategies",
            "random,anneal",
            "--budget",
            budget,
            "--repeats",
            "2",
            "--out",
            out.to_str().unwrap(),
        ];
        if resume {
            argv.push("--resume");
        }
        let o = mcmpart(&argv);
        let (stdout, stderr) = text(&o);
        assert!(o.status.success(), "{stdout}\n{stderr}");
        (stdout, stderr, curves_without_times(&out))
    };
    let (_, _, first) = compare("20", false);
    // Every finished run is on disk, one file per strategy and seed.
    let runs = out.join("runs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&runs)
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2 * 2 * 2, "{files:?}");
    assert!(
        files.iter().all(|f| f.extension().is_some_and(|e| e == "json")),
        "{files:?}"
    );

    // A cut-short file is run again, with a warning; a missing one is run;
    // the rest are taken, and the curves are the same.
    std::fs::write(&files[0], "{\"format\": 1, \"fing").unwrap();
    std::fs::remove_file(&files[5]).unwrap();
    // A whole file whose run cannot be (more samples than the budget).
    let mut run: serde_json::Value = common::json_file(&files[2]);
    let records = run["outcome"]["records"].as_array_mut().unwrap();
    records.push(records[0].clone());
    std::fs::write(&files[2], run.to_string()).unwrap();
    // Figures no run can have: a negative throughput, a chip the package
    // lacks, a best partition better than any of its samples.
    let edit = |f: &PathBuf, change: &dyn Fn(&mut serde_json::Value)| {
        let mut run: serde_json::Value = common::json_file(f);
        change(&mut run["outcome"]);
        std::fs::write(f, run.to_string()).unwrap();
    };
    edit(&files[3], &|o| {
        let r = o["records"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|r| r["throughput"].is_number());
        r.unwrap()["throughput"] = (-5.0).into();
    });
    edit(&files[4], &|o| o["best"]["chips"][0] = 99.into());
    edit(&files[6], &|o| o["best"]["throughput"] = 1e12.into());
    let (stdout, stderr, again) = compare("20", true);
    assert!(stdout.contains("2 of 8 runs taken from"), "{stdout}");
    assert!(
        stderr.contains("again") && stderr.contains("is not a run file"),
        "{stderr}"
    );
    for why in [
        "more than the budget of 20",
        "has a throughput of -5",
        "is not one of",
        "is not its best sample's",
    ] {
        assert!(
            stderr.contains("does not hold a run of") && stderr.contains(why),
            "{why}: {stderr}"
        );
    }
    // Exactly: a run read back must not lose a bit of its figures.
    let differ: Vec<_> = first.iter().zip(&again).filter(|(x, y)| x != y).take(3).collect();
    assert!(first.len() == again.len() && differ.is_empty(), "{differ:?}");

    // Another budget, or an edited problem, is not the same run. The runs
    // it replaces are kept aside, and going back to their budget finds them.
    let (stdout, stderr, _) = compare("21", true);
    assert!(!stdout.contains("runs taken"), "{stdout}");
    assert_eq!(
        stderr.matches("held a run made with other settings").count(),
        8,
        "{stderr}"
    );
    let (stdout, _, back) = compare("20", true);
    assert!(stdout.contains("8 of 8 runs taken from"), "{stdout}");
    assert_eq!(back, again);
    let edited = std::fs::read_to_string(&a).unwrap().replace("10 GB/s", "20 GB/s");
    std::fs::write(&a, edited).unwrap();
    let (stdout, _, _) = compare("21", true);
    assert!(stdout.contains("4 of 8 runs taken from"), "{stdout}");
    // Without --resume every run is made anew.
    let (stdout, _, _) = compare("21", false);
    assert!(!stdout.contains("runs taken"), "{stdout}");
}

/// Run files kept gzipped (as the runs behind the book are committed) are
/// taken as the plain ones; one made with other settings is moved aside
/// gzipped, and going back to those settings finds it.
#[test]
fn resume_takes_gzipped_runs() {
    use std::io::Write;
    let dir = common::scratch("compare-resume-gz");
    let (a, _) = tiny_problems(&dir);
    let out = dir.join("out");
    let compare = |budget: &str| {
        let argv = [
            "compare",
            a.to_str().unwrap(),
            "--strategies",
            "random",
            "--budget",
            budget,
            "--repeats",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--resume",
        ];
        let o = mcmpart(&argv);
        let (stdout, stderr) = text(&o);
        assert!(o.status.success(), "{stdout}\n{stderr}");
        (stdout, stderr, curves_without_times(&out))
    };
    let (_, _, first) = compare("15");
    let runs: Vec<PathBuf> = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    for f in &runs {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&std::fs::read(f).unwrap()).unwrap();
        std::fs::write(format!("{}.gz", f.display()), gz.finish().unwrap()).unwrap();
        std::fs::remove_file(f).unwrap();
    }
    let (stdout, _, again) = compare("15");
    assert!(stdout.contains("2 of 2 runs taken from"), "{stdout}");
    assert_eq!(again, first);
    // Another budget: the gzipped runs go aside, still gzipped.
    let (stdout, stderr, _) = compare("16");
    assert!(!stdout.contains("runs taken"), "{stdout}");
    assert_eq!(
        stderr.matches("held a run made with other settings").count(),
        2,
        "{stderr}"
    );
    assert_eq!(stderr.matches(".json.gz` held a run").count(), 2, "{stderr}");
    assert_eq!(stderr.matches(".json.gz`\n").count(), 2, "kept aside gzipped: {stderr}");
    let (stdout, _, back) = compare("15");
    assert!(stdout.contains("2 of 2 runs taken from"), "{stdout}");
    assert_eq!(back, first);
    // A damaged gzipped file is run again, with a warning naming it.
    for f in &runs {
        std::fs::remove_file(f).unwrap();
        std::fs::write(format!("{}.gz", f.display()), [0x1f, 0x8b, 8, 0, 1, 2]).unwrap();
    }
    let (stdout, stderr, _) = compare("15");
    assert!(!stdout.contains("runs taken"), "{stdout}");
    assert!(stderr.contains("is not gzipped text"), "{stderr}");
}

/// A deep rule (a sum of 20,000 terms) is searched on threads with room
/// for it: compare's run threads overflowed their 2 MiB stacks on it.
#[test]
fn a_deep_rule_does_not_overflow_the_run_threads() {
    let dir = common::scratch("compare-deep");
    let terms = vec!["chip(u)"; 20_000].join(" + ");
    let program = format!(
        "{}let t = ring(n = 3, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         constraint deep() {{ forall u in nodes: {terms} >= 0 }}\n\
         partition graph {{ a -> b -> c }} onto t as g {{ require acyclic_flow, deep }}\n",
        common::HEADER
    );
    std::fs::write(dir.join("deep.mcm"), program).unwrap();
    let o = common::mcmpart_in(
        &dir,
        &[
            "compare",
            "deep.mcm",
            "--strategies",
            "random,anneal",
            "--budget",
            "3",
            "--repeats",
            "1",
            "--out",
            "out",
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(dir.join("out/summary.md").exists());
}

/// Two compares on one folder would both make the runs it lacks and
/// overwrite each other's files: while one holds the folder, another is
/// refused with a message that says so, and runs again once it lets go.
#[test]
fn a_folder_in_use_by_another_compare_is_refused() {
    let dir = common::scratch("compare-lock");
    let (a, _) = tiny_problems(&dir);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let argv = [
        "compare",
        a.to_str().unwrap(),
        "--strategies",
        "random",
        "--budget",
        "5",
        "--out",
        out.to_str().unwrap(),
        "--resume",
    ];
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(out.join(".lock"))
        .unwrap();
    held.try_lock().expect("the test takes the lock first");
    let o = mcmpart(&argv);
    let (stdout, stderr) = text(&o);
    assert!(!o.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("is in use by another compare"), "{stderr}");
    assert!(!out.join("runs").exists(), "the refused compare wrote runs");
    drop(held);
    let o = mcmpart(&argv);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
}

/// A run whose samples had these throughputs (`None`: invalid at evaluation).
fn outcome(strategy: &str, seed: u64, samples: &[Option<f64>]) -> Outcome {
    let mut best: Option<f64> = None;
    let mut records = Vec::new();
    for (i, &t) in samples.iter().enumerate() {
        if let Some(t) = t {
            best = Some(best.map_or(t, |b: f64| b.max(t)));
        }
        records.push(SampleRecord {
            sample: i + 1,
            elapsed_s: i as f64,
            throughput: t,
            best,
        });
    }
    let found = samples.iter().position(|&t| t.is_some() && t == best);
    Outcome {
        strategy: strategy.into(),
        seed,
        best: found.map(|i| Best {
            chips: Vec::new(),
            throughput: best.unwrap(),
            sample: i + 1,
        }),
        records,
        invalid: Default::default(),
        solver: Default::default(),
        elapsed_s: samples.len() as f64,
        failure: None,
        interrupted: false,
        proven_bound_s: None,
    }
}

fn problem_runs(label: &str, greedy: Option<f64>, bound: Option<f64>, runs: Vec<Outcome>) -> ProblemRuns {
    let mut all = vec![outcome("greedy", 0, &[greedy])];
    all.extend(runs);
    ProblemRuns {
        label: label.into(),
        file: PathBuf::from("p.mcm"),
        problem: label.into(),
        graph: label.into(),
        nodes: 3,
        chips: 2,
        judge: "analytical".into(),
        objective: mcmpart::problem::Metric::Throughput,
        greedy,
        bound,
        runs: all,
    }
}

/// The tables as values, on runs made by hand: per problem the mean over
/// seeds of best-so-far over greedy (a run with nothing valid yet counts
/// 0), then the geometric mean over the problems with a greedy baseline;
/// the fraction of the bound over those with a bound; the samples to reach
/// each level on the geometric-mean curve.
#[test]
fn summary_values_are_means_over_seeds_and_geometric_means_over_problems() {
    let s = |seed, xs: &[Option<f64>]| outcome("s", seed, xs);
    let problems = vec![
        problem_runs(
            "a",
            Some(2.0),
            Some(10.0),
            vec![
                s(0, &[None, Some(3.0), Some(4.0)]),
                s(1, &[Some(2.0), Some(1.0), Some(6.0)]),
            ],
        ),
        problem_runs(
            "b",
            Some(4.0),
            Some(8.0),
            vec![s(0, &[Some(4.0), Some(8.0), Some(1.0)]), s(1, &[None, None, None])],
        ),
        // No greedy baseline: only in the fraction of the bound.
        problem_runs("c", None, Some(5.0), vec![s(0, &[Some(5.0); 3]), s(1, &[Some(5.0); 3])]),
    ];
    let names = ["greedy".to_string(), "s".to_string()];
    let sum = Summary::new(&problems, &names, &[1, 3], &[1.0, 1.5], 3);
    assert_eq!(sum.baseline, 2);
    let cell = |st: &str, b| sum.cell(st, b).unwrap();
    // At 1 sample: a (0 + 2/2) / 2, b (4/4 + 0) / 2.
    let c = cell("s", 1);
    assert!(close(c.improvement.unwrap(), 0.5), "{c:?}");
    assert_eq!((c.problems, c.runs, c.runs_without_valid), (2, 4, 2));
    // At 3: a (4/2 + 6/2) / 2 = 2.5, b (8/4 + 0) / 2 = 1.
    let c = cell("s", 3);
    assert!(close(c.improvement.unwrap(), 2.5f64.sqrt()), "{c:?}");
    assert_eq!(c.runs_without_valid, 1);
    // Of the bound at 3: a 0.5, b 0.5, c 1.
    assert!(close(c.bound_fraction.unwrap(), 0.25f64.cbrt()), "{c:?}");
    assert_eq!(c.bound_problems, 3);
    let g = cell("greedy", 3);
    assert_eq!(g.improvement, Some(1.0));
    assert_eq!((g.runs, g.runs_without_valid), (2, 0));
    // Greedy's one sample on a and b; none on c, which counts 0.
    assert_eq!(g.bound_fraction, Some(0.0));
    // The overall curve of s: 0.5, sqrt(1.25 * 1), sqrt(2.5); greedy at 1.
    let curve = &sum.overall[1];
    assert_eq!(curve.len(), 3);
    for (got, want) in curve.iter().zip([0.5, 1.25f64.sqrt(), 2.5f64.sqrt()]) {
        assert!(close(*got, want), "{curve:?}");
    }
    assert_eq!(sum.reach, vec![vec![Some(1), None], vec![Some(2), Some(3)]]);
    // The gap: the bound over the best of every run (greedy's too), as
    // latencies: a 10 / 6, b 8 / 8 (proven optimal), c 5 / 5.
    let gaps: Vec<Option<f64>> = problems.iter().map(|p| p.gap()).collect();
    assert!(
        close(gaps[0].unwrap(), 10.0 / 6.0) && close(gaps[1].unwrap(), 1.0),
        "{gaps:?}"
    );
    let none = problem_runs("d", Some(1.0), None, vec![]);
    assert_eq!(none.gap(), None);
}

/// A small comparison run through the library: each cell of its summary is
/// what the runs it reports say, and `summary.csv` writes those values.
#[test]
fn the_summary_follows_the_runs() {
    let dir = common::scratch("compare-library");
    let (a, b) = tiny_problems(&dir);
    let config = Config {
        files: vec![a, b],
        strategies: compare::strategies(&["random".into(), "anneal".into()]).unwrap(),
        budget: 12,
        repeats: 2,
        seed: 5,
        out: dir.join("out"),
        budgets: vec![4, 12],
        levels: vec![1.0, 1.1],
        graphs: None,
        split: None,
        max_nodes: None,
        problem: None,
        resume: false,
        objective: None,
        judge: JudgeOptions::default(),
        rl: RlOptions::default(),
        settings: Settings::default(),
    };
    config.check().unwrap();
    let lines = std::sync::Mutex::new(Vec::new());
    let report = compare::run(&config, &|l| lines.lock().unwrap().push(l.to_string())).unwrap();
    // Greedy and 2 strategies x 2 seeds on each of 2 problems, each logged.
    assert_eq!(lines.into_inner().unwrap().len(), 2 * 5);
    assert_eq!((report.runs, report.reused), (8, 0));
    assert_eq!(report.problems.len(), 2);
    assert_eq!(report.summary.names, ["greedy", "random", "anneal"]);
    for p in &report.problems {
        assert_eq!(p.runs.len(), 5, "{}", p.label);
        assert!(p.greedy.unwrap() <= p.bound.unwrap() * (1.0 + 1e-9));
    }
    for c in &report.summary.cells {
        let per_problem: Vec<f64> = report
            .problems
            .iter()
            .map(|p| {
                let runs: Vec<&Outcome> = p.runs.iter().filter(|o| o.strategy == c.strategy).collect();
                let at = |o: &&Outcome| o.best_at(c.budget).map_or(0.0, |t| t / p.greedy.unwrap());
                runs.iter().map(at).sum::<f64>() / runs.len() as f64
            })
            .collect();
        let want = geomean(&per_problem);
        assert!(close(c.improvement.unwrap(), want), "{c:?}: want {want}");
        if c.strategy == "greedy" {
            assert_eq!((c.improvement, c.runs), (Some(1.0), 2));
        }
    }
    // summary.csv holds these values, as Rust prints them.
    let csv = std::fs::read_to_string(config.out.join("summary.csv")).unwrap();
    assert_eq!(csv, mcmpart::experiment::compare::render::summary_csv(&report.summary));
    for c in &report.summary.cells {
        let row = format!(
            "{},improvement_over_greedy,{},{},{},{},{}\n",
            c.strategy,
            c.budget,
            c.improvement.unwrap(),
            c.problems,
            c.runs,
            c.runs_without_valid
        );
        assert!(csv.contains(&row), "{row}\n{csv}");
    }
    // summary.md's per-problem table shows each strategy's mean over seeds.
    let md = &report.markdown;
    let header = md.lines().find(|l| l.starts_with("| problem | nodes |")).unwrap();
    let cols: Vec<&str> = header.split('|').map(str::trim).collect();
    // The last column: the best latency of all runs over the proven bound.
    assert!(header.ends_with("| gap |"), "{header}");
    for p in &report.problems {
        let line = md.lines().find(|l| l.starts_with(&format!("| {} |", p.label))).unwrap();
        let gap = p.gap().unwrap();
        assert!(gap >= 1.0 - 1e-9, "{}: {gap}", p.label);
        assert!(line.ends_with(&format!("| {gap:.2}x |")), "{line}");
    }
    for p in &report.problems {
        let line = md.lines().find(|l| l.starts_with(&format!("| {} |", p.label))).unwrap();
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        for s in ["random", "anneal"] {
            let cell = cells[cols.iter().position(|c| *c == s).unwrap()].replace('*', "");
            let shown: Vec<f64> = cell
                .split([',', '('])
                .next()
                .unwrap()
                .split(" / ")
                .map(|x| x.trim().parse().unwrap())
                .collect();
            for (budget, got) in [4usize, 12].into_iter().zip(shown) {
                let want = p.mean_at(s, budget, p.greedy.unwrap()).unwrap();
                assert!(
                    (got - want).abs() < 6e-4,
                    "{} {s} at {budget}: {got} vs {want}\n{md}",
                    p.label
                );
            }
        }
    }
}

/// The runs committed under `results/` still load with `--resume`: their
/// fingerprints are what this build computes for the same problem, budget,
/// judge and policy (one graph of the validation split, every strategy).
#[test]
fn committed_runs_still_load_with_resume() {
    let root = common::root();
    let dir = common::scratch("compare-committed");
    let graphs = dir.join("graphs");
    std::fs::create_dir_all(&graphs).unwrap();
    let name = "mobilenet_v3_small";
    let file = format!("{name}.json.gz");
    std::fs::copy(root.join("data/graphs").join(&file), graphs.join(&file)).unwrap();
    let manifest = serde_json::json!({
        "format_version": 1,
        "graphs": [{"name": name, "split": "validation", "file": file}],
    });
    std::fs::write(graphs.join("manifest.json"), manifest.to_string()).unwrap();
    let out = dir.join("out");
    let runs = out.join("runs").join(name);
    std::fs::create_dir_all(&runs).unwrap();
    let committed = root.join("results/validation-rl/runs").join(name);
    for f in std::fs::read_dir(&committed).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), runs.join(f.file_name())).unwrap();
    }
    // The book's command, on this one graph.
    let o = mcmpart(&[
        "compare",
        "examples/bert_ring36.mcm",
        "--graphs",
        graphs.to_str().unwrap(),
        "--split",
        "validation",
        "--strategies",
        "rl-zero-shot,rl,rl-scratch,anneal",
        "--budget",
        "500",
        "--budgets",
        "20,100,500",
        "--levels",
        "1.0,1.2,1.5,2",
        "--repeats",
        "1",
        "--out",
        out.to_str().unwrap(),
        "--resume",
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("4 of 4 runs taken from"), "{stdout}\n{stderr}");
}
