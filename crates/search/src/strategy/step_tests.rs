//! Every strategy under `minimize step_time`: it runs (the target-driven
//! ones with the pipeline latency as a proxy), its best partition passes
//! the checker, and its score is one over the simulator's step time.

use super::{by_name, run, Budget, RlOptions, NAMES};
use crate::cost::{Judge, JudgeOptions};
use crate::placers::testing::problem;
use mcm_core::problem::{Placement, Problem};
use mcm_core::step_time::StepTimeModel;

#[test]
fn every_strategy_runs_under_step_time_and_reports_the_simulators_figure() {
    let p = problem("minimize step_time");
    let sim = StepTimeModel::new(p.graph.clone(), p.package.clone()).expect("a model");
    for &name in NAMES {
        let mut s = by_name(name, &RlOptions::default())
            .expect("the shipped policy loads")
            .expect("a known strategy");
        let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
        let o = run(&p, &judge, s.as_mut(), Budget::Samples(24), 1, None).expect("feasible");
        assert_eq!(o.failure, None, "{name}");
        let best = o.best.unwrap_or_else(|| panic!("{name} found no partition"));
        let broken = mcm_solver::check(
            &p.graph,
            &p.package,
            &p.constraints,
            &Placement::new(best.chips.clone()),
        );
        assert!(broken.is_empty(), "{name}: {}", broken[0].describe());
        let step = sim.step_time(&best.chips).expect("a step time");
        assert_eq!(best.throughput, 1.0 / step, "{name}");
        // A step time proves nothing through the pipeline's latency target.
        assert_eq!(o.proven_bound_s, None, "{name}");
    }
}

#[test]
fn the_best_under_step_time_is_the_best_step_of_the_samples() {
    // The records' best is the largest score, i.e. the shortest step: the
    // partition kept is no slower than any valid sample's.
    let p = problem("minimize step_time");
    let sim = StepTimeModel::new(p.graph.clone(), p.package.clone()).expect("a model");
    let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
    let mut s = by_name("random", &RlOptions::default()).unwrap().unwrap();
    let o = run(&p, &judge, s.as_mut(), Budget::Samples(30), 7, None).expect("feasible");
    let best = o.best.expect("a valid sample");
    let shortest = o.records.iter().filter_map(|r| r.throughput).fold(0.0, f64::max);
    assert_eq!(best.throughput, shortest);
    assert!(sim.step_time(&best.chips).unwrap() <= 1.0 / shortest * (1.0 + 1e-12));
}

#[test]
fn exact_under_throughput_still_proves_its_bound() {
    // The proxy is step time's alone: under the pipeline objective the
    // latency target is the objective's, and `exact` proves.
    let p = problem("maximize throughput");
    let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
    let mut s = by_name("exact", &RlOptions::default()).unwrap().unwrap();
    let o = run(&p, &judge, s.as_mut(), Budget::Samples(200), 1, None).expect("feasible");
    assert!(o.proven_bound_s.is_some());
}

#[test]
fn auto_under_step_time_is_no_worse_than_any_heuristic() {
    // auto judges the heuristics' proposals among its first partitions when
    // the objective has no target encoding, so none of them beats it.
    let p = problem("minimize step_time");
    let best_of = |name: &str, samples: usize| {
        let mut s = by_name(name, &RlOptions::default()).unwrap().unwrap();
        let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
        let o = run(&p, &judge, s.as_mut(), Budget::Samples(samples), 3, None).expect("feasible");
        o.best.unwrap_or_else(|| panic!("{name} found no partition")).throughput
    };
    let auto = best_of("auto", 60);
    for kind in super::heuristics::Kind::ALL {
        let h = best_of(kind.name(), 4);
        assert!(auto >= h, "auto {auto} below {} {h}", kind.name());
    }
}

/// Forty nodes in eight layers of a fork and join with weights, on two
/// machines of four GPUs whose memories need at least three of them, under
/// `memory_capacity` only: the held-out acceptance's shape, small.
fn cluster_problem() -> Problem {
    let mut g = String::from("let g = graph {\n    x { output_bytes = 4 MB }\n");
    let mut last = "x".to_string();
    for l in 0..8 {
        for b in 0..3 {
            let f = 1 + (l * 3 + b) % 5;
            g += &format!(
                "    w{l}_{b} {{ params = 40 MB, output_bytes = 40 MB }}\n    \
                 m{l}_{b} {{ flops = {f} GFLOP, output_bytes = {} MB }}\n    \
                 {last} -> m{l}_{b}\n    w{l}_{b} -> m{l}_{b}\n",
                2 + b
            );
        }
        g += &format!("    j{l} {{ flops = 1 GFLOP, output_bytes = 4 MB }}\n");
        for b in 0..3 {
            g += &format!("    m{l}_{b} -> j{l}\n");
        }
        last = format!("j{l}");
    }
    g += "}\n";
    let text = format!(
        "use std::placement::{{memory_capacity}}\nuse std::topologies::gpu_cluster\n\
         let c = gpu_cluster(machines = 2, gpus = 4, memory = 400 MB, compute = 10 TFLOP/s, nvlink = 300 GB/s, network = 25 GB/s)\n\
         {g}partition g onto c {{\n    require memory_capacity\n    minimize step_time\n}}\n"
    );
    let c = mcm_lang::compile_str("t.mcm", &text, std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(c.ok(), "{}", mcm_core::diag::render_text(&c.program.sources, &c.diags));
    c.problem(None).expect("one problem").clone()
}

#[test]
fn auto_under_step_time_is_no_worse_than_greedy_dp_or_any_heuristic_on_a_cluster() {
    // auto settles each of their proposals as their own runs do, seeded
    // alike, so with the same seed none of them ends ahead of it, under a
    // sample budget or a time budget.
    let p = cluster_problem();
    let best_of = |name: &str, budget: Budget| {
        let mut s = by_name(name, &RlOptions::default()).unwrap().unwrap();
        let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
        let o = run(&p, &judge, s.as_mut(), budget, 5, None).expect("feasible");
        o.best.unwrap_or_else(|| panic!("{name} found no partition")).throughput
    };
    let others: Vec<&str> = ["greedy", "dp"]
        .into_iter()
        .chain(super::heuristics::Kind::ALL.map(|k| k.name()))
        .collect();
    for budget in [Budget::Samples(40), Budget::Seconds(10.0)] {
        let auto = best_of("auto", budget);
        for &name in &others {
            let h = best_of(name, Budget::Samples(40));
            assert!(auto >= h, "{budget:?}: auto {auto} below {name} {h}");
        }
    }
}

#[test]
fn auto_judges_the_learned_placers_first_samples_and_ends_no_worse() {
    // gdp's and mars's first sample is their network's likeliest placement
    // made valid around greedy's fill (none when FIX gives up on it); auto
    // judges the same partition among its first ones, seeded alike, and
    // Placeto's likeliest walk besides.
    let mut checked = Vec::new();
    for (objective, seed) in crate::placers::testing::OBJECTIVES
        .into_iter()
        .flat_map(|o| [(o, 5), (o, 6)])
    {
        let p = problem(objective);
        let outcome = |name: &str, samples: usize, seed: u64| {
            let mut s = by_name(name, &RlOptions::default()).unwrap().unwrap();
            let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
            run(&p, &judge, s.as_mut(), Budget::Samples(samples), seed, None).expect("feasible")
        };
        let auto = outcome("auto", 60, seed);
        let best = auto.best.as_ref().expect("auto found a partition").throughput;
        for name in ["gdp", "mars"] {
            let Some(first) = outcome(name, 1, seed).best.map(|b| b.throughput) else {
                continue;
            };
            assert!(
                auto.records.iter().any(|r| r.throughput == Some(first)),
                "{objective}, seed {seed}: auto never judged {name}'s first sample ({first})"
            );
            assert!(
                best >= first,
                "{objective}, seed {seed}: auto {best} below {name}'s first sample {first}"
            );
            checked.push((objective, seed, name));
        }
    }
    assert!(checked.len() >= 4, "few placers' first samples were valid: {checked:?}");
}

#[test]
fn the_learned_placers_placements_are_judged_as_their_first_samples() {
    // `judge_learned` makes GDP's and Mars's likeliest placements valid as
    // their own first samples are made: the scores of one-sample `gdp` and
    // `mars` runs are among the samples it adds, one per placer at most.
    use crate::placers::zero_shot::{spawn, PLACERS};
    let mut checked = 0;
    for objective in crate::placers::testing::OBJECTIVES {
        let p = problem(objective);
        let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
        for seed in [5, 6] {
            let first = |name: &str| {
                let mut s = by_name(name, &RlOptions::default()).unwrap().unwrap();
                let o = run(&p, &judge, s.as_mut(), Budget::Samples(1), seed, None).expect("feasible");
                o.best.map(|b| b.throughput)
            };
            let mut search = super::Search::new(&p, &judge, Budget::Samples(100), seed).expect("feasible");
            let start = super::incumbent::start(&mut search, 0).unwrap().expect("a model");
            let mut best = start.best;
            let before = search.samples();
            let pending = spawn(&p, search.allowed(), seed);
            super::proposals::judge_learned(&mut search, &start.model, &mut best, pending).unwrap();
            let added: Vec<Option<f64>> = search.records[before..].iter().map(|r| r.throughput).collect();
            assert!(
                !added.is_empty() && added.len() <= PLACERS.len(),
                "{objective}: {added:?}"
            );
            for name in ["gdp", "mars"] {
                if let Some(f) = first(name) {
                    assert!(
                        added.contains(&Some(f)),
                        "{objective}, seed {seed}: {name}'s {f} not in {added:?}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 4, "only {checked} first samples were valid");
}

#[test]
fn auto_under_step_time_spends_its_whole_sample_budget_annealing() {
    // After the proposals auto anneals from the best of them, every
    // sample judged by the step time; no SAT question (which costs no
    // sample, and could run for minutes) ends or stalls the run early.
    let p = cluster_problem();
    let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
    let mut s = by_name("auto", &RlOptions::default()).unwrap().unwrap();
    let o = run(&p, &judge, s.as_mut(), Budget::Samples(120), 2, None).expect("feasible");
    assert_eq!(o.records.len(), 120);
    let again = run(&p, &judge, s.as_mut(), Budget::Samples(120), 2, None).expect("feasible");
    assert_eq!(
        again.best.map(|b| b.chips),
        o.best.map(|b| b.chips),
        "a seed gives the same run"
    );
}
