//! The walk a stalled placer falls back on: from a chain spread over every
//! chip (where no move of a few nodes shortens the step) to the optimum
//! exhaustive search knows, never judging a partition twice; and the four
//! learned placers reaching the optimum on a chain where one stalled short
//! of it.

use super::{Stall, PATIENCE};
use crate::cost::{Judge, JudgeOptions};
use crate::placers::testing::optimum;
use crate::strategy::{by_name, run, run_from, Budget, RlOptions, Search};
use mcm_core::problem::{Placement, Problem};
use std::collections::HashSet;

/// Panics with the first rule `chips` breaks, if any, naming `what`.
fn assert_valid(p: &Problem, chips: &[u32], what: &str) {
    let broken = mcm_solver::check(&p.graph, &p.package, &p.constraints, &Placement::new(chips.to_vec()));
    assert!(broken.is_empty(), "{what}: {}", broken[0].describe());
}

/// Eight nodes in a chain whose tensors cost as much to send between GPUs
/// as a node costs to compute (and far more between the two machines), on
/// two machines of two GPUs under step time: the optimum keeps the chain
/// on one GPU; 4^8 partitions to enumerate.
fn chain() -> Problem {
    let mut g = String::from("let g = graph {\n");
    for i in 0..8 {
        g += &format!("    n{i} {{ flops = 2 GFLOP, output_bytes = 64 MB }}\n");
    }
    for i in 1..8 {
        g += &format!("    n{} -> n{i}\n", i - 1);
    }
    g += "}\n";
    on_two_machines(&g)
}

/// `graph` (a `let g = graph { ... }` block) on two machines of two GPUs of
/// 1 GiB under step time and memory_capacity.
fn on_two_machines(graph: &str) -> Problem {
    let text = format!(
        "use std::placement::{{memory_capacity}}\nuse std::topologies::gpu_cluster\n\
         let c = gpu_cluster(machines = 2, gpus = 2, memory = 1 GiB, compute = 10 TFLOP/s, nvlink = 300 GB/s, network = 25 GB/s)\n\
         {graph}partition g onto c {{\n    require memory_capacity\n    minimize step_time\n}}\n"
    );
    let c = mcm_lang::compile_str("t.mcm", &text, std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(c.ok(), "{}", mcm_core::diag::render_text(&c.program.sources, &c.diags));
    c.problem(None).expect("one problem").clone()
}

/// Eight nodes of 300 MB of weights in a chain, three at most on a GPU of
/// 1 GiB; the tensors after the third and sixth are small.
fn tight_chain() -> Problem {
    let mut g = String::from("let g = graph {\n");
    for i in 0..8 {
        let out = if i % 3 == 2 { 8 } else { 64 };
        g += &format!("    n{i} {{ flops = 2 GFLOP, params = 300 MB, output_bytes = {out} MB }}\n");
    }
    for i in 1..8 {
        g += &format!("    n{} -> n{i}\n", i - 1);
    }
    g += "}\n";
    on_two_machines(&g)
}

/// Two nodes a chip, in chain order: a pipeline, four boundaries.
const SPREAD: [u32; 8] = [0, 0, 1, 1, 2, 2, 3, 3];

#[test]
fn the_walk_takes_a_spread_chain_to_the_optimum_and_judges_nothing_twice() {
    let p = chain();
    let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
    let best = optimum(&p);
    let start = judge.evaluate(&SPREAD).throughput().expect("the spread chain is valid");
    assert!(
        start < best * 0.9,
        "the start {start} is not far from the optimum {best}"
    );
    for seed in 0..3 {
        let mut search = Search::new(&p, &judge, Budget::Samples(200), seed).expect("feasible");
        let mut stall = Stall::new(&search, SPREAD.to_vec(), start);
        // A policy that proposes its start again and again: the walk waits
        // out its patience, then takes turns.
        let mut policy = 0;
        while !search.done() {
            for _ in 0..8 {
                search.submit_one(SPREAD.to_vec());
                policy += 1;
            }
            stall.after_round(&mut search, 8).expect("feasible");
        }
        assert!(policy >= PATIENCE, "seed {seed}");
        let found = search.best().expect("a partition");
        assert!(
            found.throughput >= best * (1.0 - 1e-9),
            "seed {seed}: {} short of the optimum {best}",
            found.throughput
        );
        assert!(found.sample > PATIENCE, "seed {seed}: the start was not the optimum");
        assert_valid(&p, &found.chips, &format!("seed {seed}"));
        assert_eq!(stall.best().1, found.throughput, "seed {seed}");
        assert!(
            !stall.seen.contains(SPREAD.as_slice()),
            "seed {seed}: the walk judged its start"
        );
    }
}

#[test]
fn the_walk_waits_for_the_policy_to_stall() {
    let p = chain();
    let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
    let start = judge.evaluate(&SPREAD).throughput().unwrap();
    let mut search = Search::new(&p, &judge, Budget::Samples(100), 1).expect("feasible");
    let mut stall = Stall::new(&search, SPREAD.to_vec(), start);
    for _ in 0..PATIENCE - 1 {
        search.submit_one(SPREAD.to_vec());
    }
    stall.after_round(&mut search, 8).unwrap();
    assert_eq!(
        search.samples(),
        PATIENCE - 1,
        "the walk took a turn before the policy stalled"
    );
    search.submit_one(SPREAD.to_vec());
    stall.after_round(&mut search, 8).unwrap();
    assert_eq!(search.samples(), PATIENCE + 8);
    let judged: HashSet<&Vec<u32>> = stall.seen.iter().collect();
    assert_eq!(judged.len(), 8);
}

/// Each learned placer on the chain that needs three GPUs, seeds 0 to 2:
/// every run ends at the optimum exhaustive search knows, valid, and a
/// seed repeats its run. Without the walk `hdp` (seed 1) found 506.76
/// at sample 9 and judged its 300 samples without reaching the optimum's
/// 513.70; several runs of the others were still short of it at sample 50.
#[test]
fn the_learned_placers_reach_the_optimum_past_a_stall() {
    let p = tight_chain();
    let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
    let best = optimum(&p);
    for name in ["hdp", "placeto", "gdp-scratch", "mars-nopretrain"] {
        let go = |seed| {
            let mut s = by_name(name, &RlOptions::default()).unwrap().unwrap();
            let o = run(&p, &judge, s.as_mut(), Budget::Samples(300), seed, None).unwrap();
            assert_eq!(o.failure, None, "{name}");
            o
        };
        for seed in 0..3 {
            let o = go(seed);
            let found = o.best.as_ref().expect("a partition");
            assert!(
                found.throughput >= best * (1.0 - 1e-9),
                "{name}, seed {seed}: {} at 300 samples, the optimum {best}",
                found.throughput
            );
            assert_valid(&p, &found.chips, name);
        }
        let scores = |o: &crate::strategy::Outcome| o.records.iter().map(|r| r.throughput).collect::<Vec<_>>();
        assert_eq!(scores(&go(1)), scores(&go(1)), "{name}: the same seed, another run");
    }
}

/// `rl` (the shipped policy, fine-tuned) from the chain spread over four
/// GPUs, where no move of a few nodes shortens the step: its rounds stall
/// there, the walk takes its turns, and the rounds go on from what it
/// finds; every seed ends at the optimum, valid. Its rounds alone (without
/// the walk) end seed 0 at 40% of the optimum's steps per second.
#[test]
fn rl_leaves_a_stall_through_the_walk() {
    let p = chain();
    let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
    let best = optimum(&p);
    for seed in 0..3 {
        let mut s = by_name("rl", &RlOptions::default()).unwrap().unwrap();
        let (o, _) = run_from(&p, &judge, s.as_mut(), Budget::Samples(200), seed, None, Some(&SPREAD)).unwrap();
        assert_eq!(o.failure, None, "seed {seed}");
        let found = o.best.as_ref().expect("a partition");
        assert!(
            found.throughput >= best * (1.0 - 1e-9),
            "seed {seed}: {} at 200 samples, the optimum {best}",
            found.throughput
        );
        assert_valid(&p, &found.chips, &format!("seed {seed}"));
    }
}

/// Three blocks in a chain on a ring of six chips, each block `a -> b ->
/// c -> d` with `a`'s small tensor also read by `d` (as a channel split's
/// untouched half is), one block a chip: each chip computes 2.25 ms and
/// sends 1 MB (1 ms), and three chips are free.
fn blocks() -> (Problem, Vec<u32>) {
    let mut g = String::from("let g = graph {\n    x { flops = 1 MFLOP, output_bytes = 1 MB }\n");
    let mut start = vec![0];
    let mut prev = "x".to_string();
    for i in 0..3 {
        g += &format!(
            "    a{i} {{ flops = 1 GFLOP, output_bytes = 256 KB }}\n    b{i} {{ flops = 4 GFLOP, output_bytes = 1 MB }}\n    \
             c{i} {{ flops = 4 GFLOP, output_bytes = 1 MB }}\n    d{i} {{ output_bytes = 1 MB }}\n    \
             {prev} -> a{i}\n    a{i} -> b{i}\n    b{i} -> c{i}\n    c{i} -> d{i}\n    a{i} -> d{i}\n"
        );
        prev = format!("d{i}");
        start.extend([i, i, i, i]);
    }
    g += "}\n";
    let p = crate::strategy::relay::tests::compile(
        &g,
        "ring(n = 6, memory = 1 GiB, compute = 4 TFLOP/s, bandwidth = 1 GB/s)",
    );
    (p, start)
}

/// From the blocks one a chip, where every chip is as slow and no move of
/// a few nodes shortens the slowest stage, the walk's first three samples
/// split the three stages, each into two chips (the pipeline above moved
/// up a chip each time): the slowest stage falls from 3.25 ms to 2.5 ms.
#[test]
fn the_walk_splits_the_slowest_stages_into_free_chips() {
    let (p, start) = blocks();
    let judge = Judge::new(&p, &JudgeOptions::default()).expect("a judge");
    let at = judge.evaluate(&start).throughput().expect("the start is valid");
    for seed in 0..3 {
        let mut search = Search::new(&p, &judge, Budget::Samples(PATIENCE + 8), seed).expect("feasible");
        let mut stall = Stall::new(&search, start.clone(), at);
        for _ in 0..PATIENCE {
            search.submit_one(start.clone());
        }
        stall.after_round(&mut search, 8).expect("feasible");
        let found = search.best().expect("a partition");
        assert!(
            found.throughput >= at * 1.29,
            "seed {seed}: {} from the start's {at} ({:?})",
            found.throughput,
            found.chips
        );
        assert_valid(&p, &found.chips, &format!("seed {seed}"));
    }
}
