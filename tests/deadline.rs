//! `--time` as a deadline: on a problem whose first valid partition is hard
//! to find (the binding rules of `examples/rules/all_user_rules.mcm`), the
//! searches and the commands stop at the clock and say whether they found a
//! partition, never that there is none. The bounds below are generous (a
//! debug build on a loaded machine); without the deadline these runs take
//! minutes.

use crate::common;

use common::{json, mcmpart_in, scratch, text};
use mcmpart::cost::{Judge, JudgeOptions};
use mcmpart::strategy::{self, Budget};
use std::time::{Duration, Instant};

const HARD: &str = "examples/rules/all_user_rules.mcm";

/// Seconds a deadline may be overshot here: loading BERT-large in a debug
/// build, on a machine the other tests load too.
const SLACK: f64 = 20.0;

/// A search given a deadline already past returns at once, with no
/// partition and no claim that none exists, whatever the strategy.
#[test]
fn a_search_past_its_deadline_returns_promptly_without_a_partition() {
    let c = mcmpart::lang::compile_file(&common::root().join(HARD));
    assert!(c.ok());
    let p = c.problem(None).unwrap();
    let judge = Judge::new(p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
    for name in ["greedy", "random", "anneal", "dp", "exact", "lns", "auto"] {
        let mut s = strategy::by_name(name, &Default::default()).unwrap().unwrap();
        let began = Instant::now();
        let o = strategy::run(p, &judge, s.as_mut(), Budget::Seconds(0.0), 0, None)
            .unwrap_or_else(|inf| panic!("{name}: called infeasible ({inf:?}) when it ran out of time"));
        assert!(
            began.elapsed() < Duration::from_secs_f64(SLACK),
            "{name} took {:?}",
            began.elapsed()
        );
        assert!(o.best.is_none() && o.records.is_empty(), "{name}: {:?}", o.records);
    }
}

/// `solve --time 2 --json` on the hard problem: done within the deadline
/// plus slack, and either a valid partition (exit 0, written and accepted
/// by `verify`) or "none found in time" (exit 3, `timed_out`), never
/// "infeasible" nor "all 0 samples were invalid".
fn solve_in_time(strategy: Option<&str>) {
    let dir = scratch(&format!("deadline-{}", strategy.unwrap_or("default")));
    let file = common::root().join(HARD);
    let file = file.to_str().unwrap();
    let mut args = vec!["--json", "solve", file, "--time", "2", "-o", "best.json"];
    if let Some(s) = strategy {
        args.extend(["--strategy", s]);
    }
    let began = Instant::now();
    let o = mcmpart_in(&dir, &args);
    let took = began.elapsed().as_secs_f64();
    let (out, err) = text(&o);
    assert!(took < 2.0 + SLACK, "{strategy:?} took {took:.1} s\n{out}\n{err}");
    let v = json(&o);
    assert!(v.get("infeasible").is_none(), "{v}");
    assert!(!out.contains("all 0 were invalid"), "{out}");
    match o.status.code() {
        Some(0) => {
            assert_eq!(v["ok"], true, "{v}");
            let checked = mcmpart_in(&dir, &["verify", file, "--partition", "best.json"]);
            assert_eq!(checked.status.code(), Some(0), "{:?}", text(&checked));
        }
        Some(3) => {
            assert_eq!((&v["ok"], &v["timed_out"]), (&false.into(), &true.into()), "{v}");
            assert!(v["error"].as_str().unwrap().contains("found within 2 s"), "{v}");
            assert!(!dir.join("best.json").exists());
        }
        c => panic!("{strategy:?}: exit {c:?}\n{out}\n{err}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn solve_with_the_default_strategy_keeps_its_deadline() {
    solve_in_time(None);
}

#[test]
fn solve_exact_keeps_its_deadline() {
    solve_in_time(Some("exact"));
}

#[test]
fn solve_greedy_keeps_its_deadline() {
    solve_in_time(Some("greedy"));
}

#[test]
fn solve_dp_keeps_its_deadline() {
    solve_in_time(Some("dp"));
}

/// `sample --time` stops too: a partition, or exit 3 saying none was found
/// in time (not that none exists).
#[test]
fn sample_keeps_its_deadline() {
    let dir = scratch("deadline-sample");
    let file = common::root().join(HARD);
    let began = Instant::now();
    let o = mcmpart_in(&dir, &["sample", file.to_str().unwrap(), "--time", "1", "-o", "p.json"]);
    let took = began.elapsed().as_secs_f64();
    let (out, err) = text(&o);
    assert!(took < 1.0 + SLACK, "took {took:.1} s\n{out}\n{err}");
    match o.status.code() {
        Some(0) => assert!(dir.join("p.json").exists()),
        Some(3) => assert!(err.contains("found within 1 s") && err.contains("not a proof"), "{err}"),
        c => panic!("exit {c:?}\n{out}\n{err}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
