//! The search strategies on random small graphs and packages: what they
//! hand out is valid and costed by the analytical model, their curves are
//! best-so-far curves within the budget, a seed fixes the outcome, and the
//! pipeline DP keeps its stages within memory. Then one real graph.

use crate::common;

use common::random::{dag, topo, Topo};
use mcm_core::problem::{Placement, Problem};
use mcm_search::cost::{Analytical, CostModel, Evaluate, Judge, JudgeOptions, Verdict};
use mcm_search::strategy::{self, Budget, Outcome, SampleRecord};
use mcm_solver::check;
use proptest::prelude::*;
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug)]
struct Case {
    topo: Topo,
    memory_kib: u64,
    /// Per node: MFLOP, KiB of weights, KiB of output.
    nodes: Vec<(u64, u64, u64)>,
    edges: Vec<(usize, usize)>,
    /// Which of the four stdlib rules to require.
    rules: [bool; 4],
}

fn case() -> impl Strategy<Value = Case> {
    (topo(), 1usize..9, 4u64..40, any::<[bool; 4]>()).prop_flat_map(|(topo, n, mem, rules)| {
        (
            Just(topo),
            Just(mem),
            proptest::collection::vec((1u64..100, 0u64..12, 0u64..12), n),
            dag(n, 0.4),
            Just(rules),
        )
            .prop_map(move |(topo, memory_kib, nodes, edges, rules)| Case {
                topo,
                memory_kib,
                nodes,
                edges,
                rules,
            })
    })
}

fn program(c: &Case) -> String {
    let pkg = c.topo.package(c.memory_kib);
    let mut g = String::new();
    for (i, (f, p, o)) in c.nodes.iter().enumerate() {
        g += &format!("  n{i} {{ flops = {f} MFLOP, params = {p} KiB, output_bytes = {o} KiB }}\n");
    }
    for (a, b) in &c.edges {
        g += &format!("  n{a} -> n{b}\n");
    }
    let names = ["acyclic_flow", "no_skip", "triangle_dependency", "memory_capacity"];
    let rules: Vec<&str> = names
        .iter()
        .zip(c.rules)
        .filter(|(_, on)| *on)
        .map(|(n, _)| *n)
        .collect();
    let require = if rules.is_empty() {
        String::new()
    } else {
        format!("require {}\n", rules.join(", "))
    };
    format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::{{ring, mesh}}\n\
         let t = {pkg}\nlet g = graph {{\n{g}}}\n\
         partition g onto t {{\n{require}maximize throughput\n}}\n"
    )
}

fn compile(c: &Case) -> Problem {
    let text = program(c);
    let compiled = common::compile(&text);
    assert!(
        compiled.ok(),
        "{text}\n{}",
        mcm_core::diag::render_text(&compiled.program.sources, &compiled.diags)
    );
    compiled.problem(None).expect("one problem").clone()
}

/// The analytical judge, keeping every partition it is asked about.
struct Recorder {
    inner: Analytical,
    seen: Arc<Mutex<Vec<Vec<u32>>>>,
}

impl Evaluate for Recorder {
    fn evaluate(&self, chips: &[u32]) -> Verdict {
        self.seen.lock().unwrap().push(chips.to_vec());
        self.inner.evaluate(chips)
    }
}

fn recording_judge(p: &Problem, jobs: usize) -> (Judge, Arc<Mutex<Vec<Vec<u32>>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let inner = Analytical::new(p).expect("costable");
    let j = Judge::with(
        Box::new(Recorder {
            inner,
            seen: seen.clone(),
        }),
        "recorder".into(),
        jobs,
    );
    (j, seen)
}

fn judge(p: &Problem) -> Judge {
    Judge::new(p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message))
}

fn run(p: &Problem, j: &Judge, name: &str, budget: Budget, seed: u64) -> Option<Outcome> {
    let mut s = strategy::by_name(name, &Default::default())
        .unwrap()
        .expect("a strategy");
    strategy::run(p, j, s.as_mut(), budget, seed, None).ok()
}

/// Records without their times.
fn curve(o: &Outcome) -> Vec<(usize, Option<f64>, Option<f64>)> {
    o.records.iter().map(|r| (r.sample, r.throughput, r.best)).collect()
}

fn is_best_so_far(records: &[SampleRecord]) -> Result<(), String> {
    let mut best: Option<f64> = None;
    for (i, r) in records.iter().enumerate() {
        if r.sample != i + 1 {
            return Err(format!("record {i} is sample {}", r.sample));
        }
        if let Some(t) = r.throughput {
            best = Some(best.map_or(t, |b| b.max(t)));
        }
        if r.best != best {
            return Err(format!("at sample {}: best {:?}, expected {best:?}", r.sample, r.best));
        }
    }
    Ok(())
}

fn placement_ok(p: &Problem, chips: &[u32]) -> Result<(), String> {
    let vs = check(&p.graph, &p.package, &p.constraints, &Placement::new(chips.to_vec()));
    match vs.first() {
        None => Ok(()),
        Some(v) => Err(format!("{chips:?} breaks {}", v.describe())),
    }
}

const SAMPLES: usize = 8;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn every_strategy_hands_out_valid_partitions_costed_by_the_model(c in case()) {
        let p = compile(&c);
        let model = CostModel::new(&p).unwrap();
        let bound = 1.0 / model.bound_latency();
        let mut feasible = Vec::new();
        for name in strategy::NAMES {
            let (j, seen) = recording_judge(&p, 2);
            let Some(o) = run(&p, &j, name, Budget::Samples(SAMPLES), 1) else {
                feasible.push(false);
                continue;
            };
            // The DP asks the solver nothing when no cut fits the memory, and
            // then ends without a sample instead of reporting the problem
            // infeasible (see `dp_reports_an_infeasible_problem`).
            if *name != "dp" || !o.records.is_empty() {
                feasible.push(true);
            }
            prop_assert_eq!(&o.strategy, name);
            // Every partition it asked about is valid for the checker.
            for chips in seen.lock().unwrap().iter() {
                prop_assert!(placement_ok(&p, chips).is_ok(), "{}: {}\n{}", name, placement_ok(&p, chips).unwrap_err(), program(&c));
            }
            // The curve is a best-so-far curve of the right length.
            prop_assert!(is_best_so_far(&o.records).is_ok(), "{}: {:?}", name, is_best_so_far(&o.records));
            match *name {
                // One proposal each, made valid.
                "greedy" | "hash" | "critical-path" | "m-topo" | "m-etf" | "m-sct" | "metis" | "parmesan" => {
                    prop_assert_eq!(o.records.len(), 1)
                }
                // One cut per chip count in each order it cuts (the
                // graph's, and under the pipeline rules the pipeline's and
                // the late one), each order again with streamed weights
                // where the weights exceed a chip's memory (the judge checks
                // memory with or without its rule), and at most one filler
                // cut per chip.
                "dp" => prop_assert!(o.records.len() <= SAMPLES.min(6 * p.package.num_chips())),
                // They stop once the optimum is proven (lns and auto also
                // after sweeps that find nothing).
                "exact" | "lns" | "auto" => prop_assert!(o.records.len() <= SAMPLES),
                // The others spend the whole budget.
                _ => prop_assert_eq!(o.records.len(), SAMPLES),
            }
            let bad = o.records.iter().filter(|r| r.throughput.is_none()).count();
            prop_assert_eq!(o.invalid_count(), bad);
            // The best is the model's figure for its partition, within the bound.
            if let Some(b) = &o.best {
                prop_assert!(placement_ok(&p, &b.chips).is_ok());
                prop_assert!(model.peak_memory(&b.chips).is_ok());
                let want = 1.0 / model.latency(&b.chips).unwrap();
                prop_assert!((b.throughput - want).abs() <= 1e-12 * want, "{} != {}", b.throughput, want);
                prop_assert!(b.throughput <= bound * (1.0 + 1e-9), "{} above the bound {}", b.throughput, bound);
                prop_assert_eq!(o.records[b.sample - 1].throughput, Some(b.throughput));
                prop_assert_eq!(o.records.last().unwrap().best, Some(b.throughput));
            } else {
                prop_assert!(o.records.iter().all(|r| r.throughput.is_none()));
            }
        }
        // The problem has a valid partition for all strategies or for none.
        prop_assert!(feasible.iter().all(|&f| f == feasible[0]), "{:?}", feasible);
    }

    #[test]
    fn a_seed_fixes_the_outcome(c in case(), seed in 0u64..1000) {
        let p = compile(&c);
        for name in strategy::NAMES {
            // The same seed and the same parallelism: the same outcome, with
            // evaluations one at a time and three at a time. (Annealing's
            // batches are as wide as the judge's jobs, so its outcome depends
            // on `jobs` too; uniform random search does not.)
            for jobs in [1, 3] {
                let (ja, _) = recording_judge(&p, jobs);
                let (jb, _) = recording_judge(&p, jobs);
                let a = run(&p, &ja, name, Budget::Samples(SAMPLES), seed);
                let b = run(&p, &jb, name, Budget::Samples(SAMPLES), seed);
                match (a, b) {
                    (Some(a), Some(b)) => {
                        prop_assert_eq!(curve(&a), curve(&b), "{} jobs {}", name, jobs);
                        prop_assert_eq!(&a.best, &b.best, "{}", name);
                        prop_assert_eq!(&a.invalid, &b.invalid, "{}", name);
                        prop_assert_eq!(a.seed, seed);
                    }
                    (None, None) => {}
                    (a, b) => prop_assert!(false, "{}: {:?} vs {:?}", name, a.is_some(), b.is_some()),
                }
            }
        }
        let (j1, _) = recording_judge(&p, 1);
        let (j3, _) = recording_judge(&p, 3);
        let a = run(&p, &j1, "random", Budget::Samples(SAMPLES), seed);
        let b = run(&p, &j3, "random", Budget::Samples(SAMPLES), seed);
        prop_assert_eq!(a.map(|o| (curve(&o), o.best)), b.map(|o| (curve(&o), o.best)));
    }

    #[test]
    fn greedy_does_not_depend_on_the_seed_when_nothing_moves(c in case()) {
        // Native acyclic_flow + triangle_dependency prune chips that a valid
        // proposal uses, so FIX moves nodes of a valid proposal (see
        // `fix_keeps_a_valid_proposal_under_acyclic_flow_and_triangle_dependency`).
        prop_assume!(!(c.rules[0] && c.rules[2]));
        let p = compile(&c);
        let proposal = strategy::greedy_proposal(&p);
        prop_assert_eq!(proposal.len(), p.graph.num_placed());
        prop_assume!(placement_ok(&p, &proposal).is_ok());
        // One that fails the dynamic check is relieved (see `settle`).
        prop_assume!(CostModel::new(&p).unwrap().peak_memory(&proposal).is_ok());
        let mut outcomes = Vec::new();
        for seed in [0, 1, 77] {
            let (j, seen) = recording_judge(&p, 1);
            let o = run(&p, &j, "greedy", Budget::Samples(SAMPLES), seed).expect("the proposal is valid");
            // Its one partition is the proposal itself.
            prop_assert_eq!(seen.lock().unwrap().clone(), vec![proposal.clone()]);
            outcomes.push((curve(&o), o.best.clone()));
        }
        prop_assert_eq!(&outcomes[0], &outcomes[1]);
        prop_assert_eq!(&outcomes[0], &outcomes[2]);
        if let Some(b) = &outcomes[0].1 {
            prop_assert_eq!(&b.chips, &proposal);
        }
    }

    #[test]
    fn dp_cuts_are_pipelines_within_memory(c in case()) {
        // No rules: the solver keeps every cut as the DP made it.
        let c = Case { rules: [false; 4], ..c };
        let p = compile(&c);
        // When no cut fits, dp asks the solver for any partition instead;
        // without rules that one need not fit memory.
        let fits = !mcm_search::strategy::pipeline_cuts(&p, &p.graph.pipeline_order()).is_empty();
        // Some cut fits whenever putting every node on one chip would (the
        // DP's one-stage cut).
        let memory = c.memory_kib * 1024;
        let total: u64 = c.nodes.iter().map(|n| n.1 * 1024).sum();
        prop_assert!(fits || total > memory, "no cut, though all {} B fit one chip of {} B", total, memory);
        let (j, seen) = recording_judge(&p, 1);
        let o = run(&p, &j, "dp", Budget::Samples(SAMPLES), 0).expect("no rules, always feasible");
        // dp's first half is its run on the stricter twin (the four rules
        // added): the problem's own cuts are the other partitions judged
        // (the judge evaluates a partition once).
        let twin = p.stricter().expect("no rules: a twin");
        let (jt, seen_twin) = recording_judge(twin, 1);
        let _ = run(twin, &jt, "dp", Budget::Samples(SAMPLES.div_ceil(2)), 0);
        let twins = seen_twin.lock().unwrap().clone();
        if !fits {
            prop_assert!(o.records.len() <= twins.len() + 1);
            return Ok(());
        }
        let all = seen.lock().unwrap().clone();
        prop_assert!(!all.is_empty() && all.len() <= twins.len() + p.package.num_chips().min(c.nodes.len()));
        let seen: Vec<Vec<u32>> = all.into_iter().filter(|ch| !twins.contains(ch)).collect();
        let chips_n = p.package.num_chips();
        // A cut that fails the dynamic check is relieved before it is judged
        // (see `settle`); the others are judged as the DP made them.
        let model = CostModel::new(&p).unwrap();
        for chips in seen.iter().filter(|ch| model.peak_memory(ch).is_ok()) {
            let mut weights = vec![0u64; chips_n];
            for (d, &ch) in chips.iter().enumerate() {
                weights[ch as usize] += p.graph.placed_node(d as u32).params;
            }
            prop_assert!(weights.iter().all(|&w| w <= memory), "{:?} over {} B: {:?}", weights, memory, chips);
            // Stages in chip order along a topological order: edges go forward,
            // and the chips used are 0..k.
            for e in p.graph.placed_edges() {
                prop_assert!(chips[e.src as usize] <= chips[e.dst as usize], "{:?}", chips);
            }
            let top = *chips.iter().max().unwrap();
            prop_assert!((0..=top).all(|k| chips.contains(&k)), "{:?}", chips);
        }
        prop_assert!(is_best_so_far(&o.records).is_ok());
        if let (Some(first), Some(b)) = (o.records.first().and_then(|r| r.throughput), &o.best) {
            prop_assert!(b.throughput >= first);
        }
    }
}

#[test]
fn a_time_budget_stops_in_time() {
    let c = Case {
        topo: Topo::Ring(4),
        memory_kib: 64,
        nodes: (0..8).map(|i| (10 + i, 4, 4)).collect(),
        edges: (0..7).map(|i| (i, i + 1)).chain([(0, 2), (3, 6)]).collect(),
        rules: [true, true, true, true],
    };
    let p = compile(&c);
    for name in strategy::NAMES {
        let limit = 0.25;
        let o = run(&p, &judge(&p), name, Budget::Seconds(limit), 4).expect("feasible");
        assert!(!o.records.is_empty(), "{name}");
        // Generous: the test asserts the search stops, not how fast a loaded
        // machine runs its last sample.
        assert!(o.elapsed_s < limit + 10.0, "{name}: {} s", o.elapsed_s);
        // One sample at a time: only the last one may end past the limit.
        let (last, rest) = o.records.split_last().unwrap();
        assert!(rest.iter().all(|r| r.elapsed_s < limit), "{name}");
        assert!(last.elapsed_s <= o.elapsed_s);
        is_best_so_far(&o.records).unwrap();
        if *name == "random" || *name == "anneal" {
            // They go on until the time is up.
            assert!(o.elapsed_s >= limit, "{name} stopped early at {}", o.elapsed_s);
        }
    }
    // No time at all: no sample.
    let o = run(&p, &judge(&p), "random", Budget::Seconds(0.0), 4).unwrap();
    assert!(o.records.is_empty() && o.best.is_none());
}

/// A judge that takes `pause` over every partition.
struct Slow {
    pause: std::time::Duration,
}

impl Evaluate for Slow {
    fn evaluate(&self, _: &[u32]) -> Verdict {
        std::thread::sleep(self.pause);
        Verdict::Valid { throughput: 1.0 }
    }
}

/// Submits one batch of `n` different partitions, then stops.
struct OneBatch {
    n: usize,
}

impl strategy::Strategy for OneBatch {
    fn name(&self) -> &str {
        "one-batch"
    }

    fn run(&mut self, search: &mut strategy::Search) -> Result<(), mcm_solver::Infeasible> {
        let chips = search.problem.package.num_chips() as u32;
        let nodes = search.problem.graph.num_placed();
        let batch = (0..self.n)
            .map(|i| (0..nodes).map(|d| ((i >> d) as u32) % chips).collect())
            .collect();
        search.submit(batch);
        Ok(())
    }
}

/// A batch handed in before the limit is judged only while there is time:
/// a partition whose turn comes after the limit is not a sample (the
/// learned placers hand in their rollouts as one batch).
#[test]
fn a_batch_straddling_the_time_limit_stops_at_it() {
    let c = Case {
        topo: Topo::Ring(4),
        memory_kib: 64,
        nodes: (0..8).map(|i| (10 + i, 4, 4)).collect(),
        edges: (0..7).map(|i| (i, i + 1)).collect(),
        rules: [false; 4],
    };
    let p = compile(&c);
    let pause = std::time::Duration::from_millis(40);
    for jobs in [1, 2] {
        let j = Judge::with(Box::new(Slow { pause }), "slow".into(), jobs);
        let limit = 0.1;
        let o = strategy::run(&p, &j, &mut OneBatch { n: 12 }, Budget::Seconds(limit), 0, None).unwrap();
        // Each chunk of `jobs` starts before the limit and takes the pause:
        // at most ceil(limit / pause) chunks are judged.
        assert!(
            !o.records.is_empty() && o.records.len() <= 3 * jobs,
            "{jobs}: {}",
            o.records.len()
        );
        // Only the last chunk may end past the limit.
        let early = o.records.len().saturating_sub(jobs);
        assert!(
            o.records[..early].iter().all(|r| r.elapsed_s < limit),
            "{jobs}: {:?}",
            o.records
        );
    }
}

/// A graph of `data/graphs` on `ring(RING)` under the four stdlib rules.
fn shipped_graph_problem(graph: &str, ring: &str) -> Problem {
    let text = format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::ring\n\
         let t = ring({ring})\n\
         let g = graph(\"data/graphs/{graph}.json.gz\")\n\
         partition g onto t {{\n    require acyclic_flow, no_skip, triangle_dependency, memory_capacity\n    maximize throughput\n}}\n"
    );
    let compiled = common::compile_ok(&text);
    compiled.problem(None).unwrap().clone()
}

/// A seed is used: the seeded strategies draw other samples under another
/// seed (a strategy ignoring its seed would pass `a_seed_fixes_the_outcome`).
#[test]
fn other_seeds_draw_other_samples() {
    let p = shipped_graph_problem(
        "squeezenet1_1",
        "n = 8, memory = 16 MiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s",
    );
    for name in ["random", "anneal", "rl-zero-shot"] {
        let curves: Vec<_> = (0..3)
            .map(|seed| {
                let (j, seen) = recording_judge(&p, 1);
                run(&p, &j, name, Budget::Samples(12), seed).expect("feasible");
                let partitions = seen.lock().unwrap().clone();
                partitions
            })
            .collect();
        assert!(
            curves[0] != curves[1] || curves[0] != curves[2],
            "{name}: three seeds, one run"
        );
    }
}

#[test]
fn strategies_on_a_real_graph() {
    let p = shipped_graph_problem(
        "squeezenet1_1",
        "n = 8, memory = 16 MiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s",
    );
    let model = CostModel::new(&p).unwrap();
    let bound = 1.0 / model.bound_latency();
    for name in strategy::NAMES {
        let (j, seen) = recording_judge(&p, 2);
        let o = run(&p, &j, name, Budget::Samples(12), 2).expect("feasible");
        let seen = seen.lock().unwrap().clone();
        if *name == "rl-nosolver" {
            // The ablation: its draws break rules and never reach the judge.
            assert_eq!(o.records.len(), 12);
            assert!(!o.invalid.is_empty(), "no draw broke a rule");
            assert!(o.invalid.keys().all(|r| r.starts_with("breaks `")), "{:?}", o.invalid);
            let broke: usize = o.invalid.values().sum();
            // Besides greedy's partition, the reward's unit, judged outside the budget.
            assert_eq!(seen.len(), 1 + 12 - broke, "the judge saw a draw that broke a rule");
            for chips in &seen {
                placement_ok(&p, chips).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            continue;
        }
        assert!(!seen.is_empty(), "{name}");
        for chips in &seen {
            placement_ok(&p, chips).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        is_best_so_far(&o.records).unwrap_or_else(|e| panic!("{name}: {e}"));
        let b = o
            .best
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no valid partition: {:?}", o.invalid));
        let want = 1.0 / model.latency(&b.chips).unwrap();
        assert!((b.throughput - want).abs() <= 1e-12 * want, "{name}");
        assert!(b.throughput <= bound * (1.0 + 1e-9), "{name}");
        if let Some(first) = o.records[0].throughput {
            assert!(b.throughput >= first, "{name}");
        }
        // Every sample is counted once, valid or with its reason.
        assert_eq!(
            o.invalid_count() + o.records.iter().filter(|r| r.throughput.is_some()).count(),
            o.records.len(),
            "{name}"
        );
    }
}

/// The shipped policy, deployed with moves, unloads the slow stages greedy
/// leaves on a real graph of the test split (unseen in training).
#[test]
fn rl_moves_improve_on_greedy_on_an_unseen_graph() {
    let p = shipped_graph_problem(
        "lstm_seq2seq_attn",
        "n = 36, memory = 128 MiB, compute = 4 TFLOP/s, bandwidth = 25 GB/s",
    );
    let (j, _) = recording_judge(&p, 1);
    let greedy = run(&p, &j, "greedy", Budget::Samples(1), 0)
        .unwrap()
        .best
        .unwrap()
        .throughput;
    let (j, seen) = recording_judge(&p, 1);
    let o = run(&p, &j, "rl-zero-shot", Budget::Samples(60), 0).unwrap();
    for chips in seen.lock().unwrap().iter() {
        placement_ok(&p, chips).unwrap();
    }
    let best = o.best.unwrap().throughput;
    // Greedy reaches 1.1% of the bound here. Block moves gain 5.1x within 60
    // samples; the same policy drawing every node (`--moves 0`) 2.0x.
    assert!(best > 3.0 * greedy, "{best} vs greedy {greedy}");
}

#[test]
fn dp_reports_an_infeasible_problem() {
    // Four 2 MiB weights on three 3 MiB chips: no valid partition, and no cut
    // of the DP fits either. The other strategies say so; so should the DP.
    let c = Case {
        topo: Topo::Ring(3),
        memory_kib: 3 * 1024,
        nodes: vec![(1, 2048, 1); 4],
        edges: vec![(0, 1), (1, 2), (2, 3)],
        rules: [true, true, false, true],
    };
    let p = compile(&c);
    for name in strategy::NAMES {
        assert!(run(&p, &judge(&p), name, Budget::Samples(4), 0).is_none(), "{name}");
    }
}

#[test]
fn fix_keeps_a_valid_proposal_under_acyclic_flow_and_triangle_dependency() {
    let c = Case {
        topo: Topo::Ring(4),
        memory_kib: 17,
        nodes: vec![(1, 4, 0), (1, 4, 0), (1, 5, 0), (1, 5, 5), (2, 9, 0)],
        edges: vec![(0, 1), (0, 2), (1, 4), (2, 4), (3, 4)],
        rules: [true, false, true, false],
    };
    let p = compile(&c);
    let proposal = vec![0, 2, 1, 3, 3];
    placement_ok(&p, &proposal).unwrap();
    assert_eq!(strategy::greedy_proposal(&p), proposal);
    // FIX in topological order, as greedy runs it, keeps it whatever the
    // seed. (Greedy itself then relieves chip 3, out of memory at run time.)
    let keep: Vec<Option<u32>> = proposal.iter().copied().map(Some).collect();
    for seed in 0..4 {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut solver = mcm_solver::Solver::new(&p, Default::default()).unwrap();
        let order = mcm_solver::node_order(&solver, mcm_solver::Order::Topological, &mut rng);
        let (pl, moved) = mcm_solver::fix(&mut solver, &order, &keep, None, &mut rng).unwrap();
        assert_eq!((pl.chips, moved), (proposal.clone(), 0), "seed {seed}");
    }
    let model = CostModel::new(&p).unwrap();
    assert!(model.peak_memory(&proposal).is_err());
    let (j, seen) = recording_judge(&p, 1);
    let o = run(&p, &j, "greedy", Budget::Samples(1), 0).unwrap();
    let judged = seen.lock().unwrap()[0].clone();
    assert!(
        model.peak_memory(&judged).is_ok() && placement_ok(&p, &judged).is_ok(),
        "{judged:?}"
    );
    assert!(o.best.is_some());
}

#[test]
fn refused_and_unchecked_partitions_are_samples_the_judge_never_sees() {
    let c = Case {
        topo: Topo::Ring(3),
        memory_kib: 64,
        nodes: vec![(1, 4, 0); 3],
        edges: vec![(0, 1), (1, 2)],
        rules: [true, true, true, true],
    };
    let p = compile(&c);
    let (j, seen) = recording_judge(&p, 1);
    let mut s = strategy::Search::new(&p, &j, Budget::Samples(5), 0).unwrap();
    let valid = vec![0, 0, 1];
    placement_ok(&p, &valid).unwrap();
    // A refused partition is an invalid sample with the given reason.
    let v = s.submit_except(vec![valid.clone(), valid.clone()], vec![Some("gave up".into()), None]);
    assert!(matches!(&v[0], Some(Verdict::Invalid { reason }) if reason == "gave up"));
    assert!(v[1].as_ref().and_then(|v| v.throughput()).is_some());
    assert_eq!(seen.lock().unwrap().len(), 1);
    // A partition that breaks a rule is refused, naming the rule; a cycle 0 -> 1 -> 0 breaks acyclic_flow.
    let cyclic = vec![0, 1, 0];
    assert!(placement_ok(&p, &cyclic).is_err());
    let other = vec![0, 1, 1];
    placement_ok(&p, &other).unwrap();
    let v = s.submit_unchecked(vec![cyclic, other]);
    assert!(
        matches!(&v[0], Some(Verdict::Invalid { reason }) if reason.starts_with("breaks `")),
        "{v:?}"
    );
    assert!(v[1].is_some());
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_eq!(s.samples(), 4);
    // Past the budget nothing is recorded.
    let v = s.submit_except(vec![vec![0, 0, 0], vec![0, 0, 0]], vec![None, Some("x".into())]);
    assert_eq!(s.samples(), 5);
    assert!(v[1].is_none());
}

/// Anneal on chains that greedy fills unevenly (the last chips light or
/// empty, several chips sharing the slowest stage): moves that carry load
/// from a slowest chip towards room further along the pipeline beat greedy.
#[test]
fn anneal_leaves_greedys_plateau() {
    let dir = common::scratch("anneal-plateau");
    for (n, chips) in [(12, 4), (20, 6), (30, 8)] {
        std::fs::write(dir.join("chain.json"), common::chain_graph("chain", n, 0)).unwrap();
        let compiled = common::compile_in(&dir, &common::ring_problem("chain.json", chips));
        let p = compiled.problem(None).expect("compiles").clone();
        let j = judge(&p);
        let greedy = run(&p, &j, "greedy", Budget::Samples(1), 0).unwrap().best.unwrap();
        let mut anneal = strategy::Anneal::default();
        let o = strategy::run(&p, &j, &mut anneal, Budget::Samples(300), 0, None).unwrap();
        let best = o.best.expect("anneal finds a valid partition");
        placement_ok(&p, &best.chips).unwrap();
        assert!(
            best.throughput > greedy.throughput * 1.01,
            "{n} nodes on {chips} chips: anneal {} vs greedy {}",
            best.throughput,
            greedy.throughput
        );
    }
}

/// A strategy that fails after two samples: the run says why, and the
/// samples before it (and their best, checked) stand.
#[test]
fn a_failed_strategy_keeps_its_samples_and_says_why() {
    struct Failing(Option<String>);
    impl strategy::Strategy for Failing {
        fn name(&self) -> &str {
            "failing"
        }
        fn run(&mut self, search: &mut strategy::Search) -> Result<(), mcm_solver::Infeasible> {
            let g = strategy::greedy_proposal(search.problem);
            search.submit_one(g.clone());
            search.submit_one(g);
            self.0 = Some("a tensor went missing".into());
            Ok(())
        }
        fn failure(&self) -> Option<String> {
            self.0.clone()
        }
    }
    let c = Case {
        topo: Topo::Ring(3),
        memory_kib: 64,
        nodes: vec![(1, 1, 1); 4],
        edges: vec![(0, 1), (1, 2), (2, 3)],
        rules: [true, true, true, true],
    };
    let p = compile(&c);
    let o = strategy::run(&p, &judge(&p), &mut Failing(None), Budget::Samples(10), 0, None).unwrap();
    assert_eq!(o.failure.as_deref(), Some("a tensor went missing"));
    assert_eq!(o.records.len(), 2);
    placement_ok(&p, &o.best.expect("greedy's partition is valid here").chips).unwrap();
    let ok = strategy::run(&p, &judge(&p), &mut strategy::Greedy, Budget::Samples(1), 0, None).unwrap();
    assert_eq!(ok.failure, None);
}

/// The shipped example's problem (the 36-die ring, the four rules) with a
/// graph of `data/graphs` in BERT-large's place.
fn ring36_problem(graph: &str) -> Problem {
    let text = std::fs::read_to_string(common::root().join("examples/bert_ring36.mcm"))
        .unwrap()
        .replace("graphs/bert-large.json", &format!("../data/graphs/{graph}.json.gz"));
    let compiled = common::compile_in(&common::root().join("examples"), &text);
    compiled.problem(None).expect("compiles").clone()
}

/// Inception v3 on the 36-die ring: anneal's SAMPLE passes dead-end on its
/// draws, and the last resort was the SAT oracle's kept witness, greedy's
/// partition, for every sample (2,000 of 2,000 in the test split's run).
/// Merged into the partition anneal's state is centred on, the draws are
/// partitions of their own.
#[test]
fn anneals_dead_ends_are_draws_of_their_own() {
    let p = ring36_problem("inception_v3");
    let (j, seen) = recording_judge(&p, 1);
    let o = run(&p, &j, "anneal", Budget::Samples(8), 0).expect("feasible");
    // Fewer passes dead-end since triangle_dependency ties the consumers of
    // one chip's weights (6 restarts in 8 samples, some of them retries in a
    // fresh order), but some still do.
    assert!(o.solver.restarts >= 1, "the passes no longer dead-end: {:?}", o.solver);
    // The judge caches by partition: it sees each distinct one once, the
    // start (greedy's, the witness of old) judged outside the budget among them.
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 2, "{} distinct partitions in 8 samples", seen.len());
    for chips in seen.iter() {
        assert!(check(&p.graph, &p.package, &p.constraints, &Placement::new(chips.clone())).is_empty());
    } // The merges' trials give up on a few failures without SAT backjumps
      // (a SAT call each, a second a sample here): six more samples, all
      // merged, ask the oracle nothing more than the first two did.
    let (j2, _) = recording_judge(&p, 1);
    let two = run(&p, &j2, "anneal", Budget::Samples(2), 0).expect("feasible");
    assert_eq!(
        o.solver.sat_calls, two.solver.sat_calls,
        "{:?} {:?}",
        o.solver, two.solver
    );
}

/// ViT-L/16 on the 36-die ring: a draw around greedy's partition whose one
/// unlikely chip cascades through the flow rules lands 17 times below
/// greedy. Anneal's first draw was kept whatever it scored, so under seed 0
/// the whole run refined such a partition (0.065x over greedy after 2,000
/// samples); greedy's start, judged outside the budget, is now the state to
/// beat, and the draws stay near it.
#[test]
fn anneal_keeps_greedys_start_until_a_draw_beats_it() {
    let p = ring36_problem("vit_l_16");
    let j = judge(&p);
    let greedy = run(&p, &j, "greedy", Budget::Samples(1), 0).unwrap().best.unwrap();
    for seed in 0..2 {
        let o = run(&p, &j, "anneal", Budget::Samples(10), seed).expect("feasible");
        let best = o.best.expect("valid draws");
        placement_ok(&p, &best.chips).unwrap();
        assert!(
            best.throughput >= 0.99 * greedy.throughput,
            "seed {seed}: anneal's best {} against greedy's {}",
            best.throughput,
            greedy.throughput
        );
    }
}

/// The baseline `solve` and `compare` measure by: greedy's one valid
/// partition with its throughput and latency, and the proven bound (the
/// model's largest structural bound) above it; an infeasible problem has no
/// greedy run, and still its bound.
#[test]
fn the_baseline_is_greedys_partition_and_the_bound() {
    use mcm_search::baseline::baseline;
    let p = shipped_graph_problem(
        "resnet18",
        "n = 8, memory = 256 MiB, compute = 4 TFLOP/s, bandwidth = 25 GB/s",
    );
    let j = judge(&p);
    let b = baseline(&p, &j, 0);
    let greedy = b.greedy.as_ref().unwrap();
    assert_eq!(greedy.records.len(), 1, "one sample, outside any budget");
    let t = b.throughput().unwrap();
    assert!((b.latency().unwrap() * t - 1.0).abs() < 1e-12);
    let chips = b.partition().unwrap();
    placement_ok(&p, chips).unwrap();
    assert_eq!(j.evaluate(chips), Verdict::Valid { throughput: t });
    let bound = b.bound_throughput().unwrap();
    assert_eq!(bound, 1.0 / CostModel::new(&p).unwrap().bound_latency());
    assert!(t <= bound * (1.0 + 1e-9), "greedy {t} above the bound {bound}");

    let c = Case {
        topo: Topo::Ring(3),
        memory_kib: 3 * 1024,
        nodes: vec![(1, 2048, 1); 4],
        edges: vec![(0, 1), (1, 2), (2, 3)],
        rules: [true, true, false, true],
    };
    let p = compile(&c);
    let b = baseline(&p, &judge(&p), 0);
    assert!(b.greedy.is_err() && b.partition().is_none() && b.throughput().is_none());
    assert!(b.bound_throughput().is_some_and(|x| x > 0.0));
}

/// One of the user rules of issue 23, written as text (the strategies'
/// heuristics know only the stdlib's shape).
#[derive(Clone, Debug)]
enum UserRule {
    /// No node with weights on chip 0.
    NoWeightsOnChip0,
    /// At most `k` nodes per chip.
    Count(usize),
    /// At most this many MFLOP per chip (1 TFLOP/s chips).
    Compute(u64),
}

impl UserRule {
    fn text(&self) -> String {
        match self {
            UserRule::NoWeightsOnChip0 => {
                "constraint user() {\n  forall u in nodes where u.params > 0 B: chip(u) != 0\n}\n".into()
            }
            UserRule::Count(k) => {
                format!("constraint user() {{\n  forall d in chips: count(u in nodes where chip(u) == d) <= {k}\n}}\n")
            }
            // 1 MFLOP takes 1 us at 1 TFLOP/s.
            UserRule::Compute(mflop) => format!(
                "constraint user() {{\n  forall d in chips: sum(u in nodes where chip(u) == d) u.flops / d.compute <= {mflop} us\n}}\n"
            ),
        }
    }
}

fn user_rule() -> impl Strategy<Value = UserRule> {
    prop_oneof![
        Just(UserRule::NoWeightsOnChip0),
        (1usize..5).prop_map(UserRule::Count),
        (100u64..400).prop_map(UserRule::Compute),
    ]
}

/// `c`'s program with `rule` required too.
fn with_rule(c: &Case, rule: &UserRule) -> Problem {
    let text = program(c).replace(
        "partition g onto t {\n",
        &format!("{}partition g onto t {{\nrequire user\n", rule.text()),
    );
    let compiled = common::compile(&text);
    assert!(
        compiled.ok(),
        "{text}\n{}",
        mcm_core::diag::render_text(&compiled.program.sources, &compiled.diags)
    );
    compiled.problem(None).expect("one problem").clone()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10))]

    /// Issue 23: with a rule written as text, whatever a strategy starts
    /// from goes through the solver, so every partition it asks the judge
    /// about passes the checker, and its best passes the dynamic check too.
    #[test]
    fn every_strategy_honours_a_user_rule(c in case(), rule in user_rule()) {
        let p = with_rule(&c, &rule);
        let model = CostModel::new(&p).unwrap();
        for name in strategy::NAMES {
            let (j, seen) = recording_judge(&p, 2);
            let Some(o) = run(&p, &j, name, Budget::Samples(SAMPLES), 3) else { continue };
            for chips in seen.lock().unwrap().iter() {
                prop_assert!(placement_ok(&p, chips).is_ok(), "{}: {}\n{:?}", name, placement_ok(&p, chips).unwrap_err(), rule);
            }
            if let Some(b) = &o.best {
                prop_assert!(placement_ok(&p, &b.chips).is_ok());
                prop_assert!(model.peak_memory(&b.chips).is_ok());
            }
        }
    }

    /// A starting partition: every strategy starts from it, repaired under
    /// every rule; a valid one is kept (greedy returns it, the others find
    /// it or better), and the outcome says how many nodes moved.
    #[test]
    fn every_strategy_starts_from_a_given_partition(c in case(), rule in user_rule(), seed in 0u64..100) {
        let p = with_rule(&c, &rule);
        let chips = p.package.num_chips() as u32;
        let init: Vec<u32> = (0..p.graph.num_placed() as u32).map(|u| (u + seed as u32) % chips).collect();
        let judge = judge(&p);
        let kept = judge.evaluate(&init).throughput();
        // Valid for the rules and at evaluation (the dynamic check, and a
        // route for every transfer: a rule-valid start may send data
        // backwards on a ring when no rule forbids it).
        let valid = placement_ok(&p, &init).is_ok()
            && CostModel::new(&p).unwrap().peak_memory(&init).is_ok()
            && kept.is_some();
        for name in strategy::NAMES {
            let mut s = strategy::by_name(name, &Default::default()).unwrap().expect("a strategy");
            let Ok((o, moved)) = strategy::run_from(&p, &judge, s.as_mut(), Budget::Samples(SAMPLES), seed, None, Some(&init)) else {
                continue;
            };
            let moved = moved.expect("the start was used");
            // The repaired start is the first sample.
            prop_assert!(!o.records.is_empty(), "{}", name);
            if let Some(b) = &o.best {
                prop_assert!(placement_ok(&p, &b.chips).is_ok(), "{}", name);
            }
            if valid {
                prop_assert_eq!(moved, 0, "{}: a valid start moved", name);
                let best = o.best.as_ref().map(|b| b.throughput);
                prop_assert!(best >= kept, "{}: {:?} < {:?}", name, best, kept);
                if *name == "greedy" {
                    prop_assert_eq!(&o.best.as_ref().unwrap().chips, &init);
                }
            } else if placement_ok(&p, &init).is_err() {
                prop_assert!(moved > 0, "{}: an invalid start was kept", name);
            }
        }
    }
}

/// Issue 23's unary restriction, where dp found nothing: every DP cut put
/// the first layer's weights on chip 0, FIX moved them next door, and that
/// chip ran out of memory at evaluation. The cuts now leave chip 0 to what
/// may go there.
#[test]
fn dp_finds_a_valid_partition_under_a_unary_restriction() {
    let text = "use std::placement::acyclic_flow\nuse std::topologies::ring\n\
                let t = ring(n = 3, memory = 10 KiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
                let g = graph {\n  x { flops = 1 MFLOP, output_bytes = 1 KiB }\n\
                  l1 { flops = 10 MFLOP, params = 8 KiB, output_bytes = 1 KiB }\n\
                  l2 { flops = 10 MFLOP, params = 8 KiB, output_bytes = 1 KiB }\n\
                  out { flops = 5 MFLOP, output_bytes = 1 KiB }\n  x -> l1 -> l2 -> out\n}\n\
                constraint no_weights_on_0() {\n  forall u in nodes where u.params > 0 B: chip(u) != 0\n}\n\
                partition g onto t {\n  require acyclic_flow, no_weights_on_0\n  maximize throughput\n}\n";
    let compiled = common::compile_ok(text);
    let p = compiled.problem(None).unwrap().clone();
    // The stdlib-shaped cuts all put `l1` on chip 0.
    let order = p.graph.pipeline_order();
    assert!(strategy::pipeline_cuts(&p, &order).iter().all(|(_, c)| c[1] == 0));
    let j = judge(&p);
    for name in ["dp", "greedy", "anneal"] {
        let o = run(&p, &j, name, Budget::Samples(4), 0).expect("feasible");
        let b = o
            .best
            .unwrap_or_else(|| panic!("{name} found no valid partition: {:?}", o.invalid));
        assert_eq!(b.chips, vec![0, 1, 2, 2], "{name}");
    }
}

/// The highest throughput of any valid partition, by enumeration.
fn best_by_enumeration(p: &Problem, j: &Judge) -> f64 {
    let mut best = 0.0f64;
    mcm_solver::exhaustive::for_each_valid(&p.graph, &p.package, &p.constraints, |pl| {
        if let Some(t) = j.evaluate(&pl.chips).throughput() {
            best = best.max(t);
        }
        true
    })
    .expect("small enough to enumerate");
    best
}

/// A count a chip that spreads a chain with a weight per operation: the
/// cone bounds let every weight start at chip 0, and the domain-aware order
/// sorted all of them first, so that dp gave chips to weights alone. A
/// weight now sorts with its consumer, and dp reaches the optimum
/// exhaustive search finds.
#[test]
fn dp_keeps_weights_with_their_consumers_under_a_count() {
    let mut nodes = String::from("  x { flops = 1 MFLOP, output_bytes = 1 KiB }\n");
    let mut edges = String::from("  x -> c1\n");
    for i in 1..=4 {
        nodes += &format!("  w{i} {{ params = 1 KiB, output_bytes = 1 KiB }}\n");
        nodes += &format!("  c{i} {{ flops = {} MFLOP, output_bytes = 1 KiB }}\n", 10 + i);
        edges += &format!("  w{i} -> c{i}\n");
        if i < 4 {
            edges += &format!("  c{i} -> c{}\n", i + 1);
        }
    }
    let text = format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::ring\n\
         let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{\n{nodes}{edges}}}\n\
         constraint at_most(k: int) {{ forall d in chips: count(u in nodes where chip(u) == d) <= k }}\n\
         partition g onto t {{\n  require acyclic_flow, no_skip, triangle_dependency, memory_capacity, at_most(4)\n  maximize throughput\n}}\n"
    );
    let compiled = common::compile_ok(&text);
    let p = compiled.problem(None).unwrap().clone();
    let name = |u: u32| p.graph.placed_node(u).id.clone();
    let mut solver = mcm_solver::Solver::new(&p, mcm_solver::Options::default()).unwrap();
    let order: Vec<String> = strategy::Allowed::of(&mut solver)
        .pipeline_order(&p)
        .into_iter()
        .map(name)
        .collect();
    let at = |n: &str| order.iter().position(|o| o == n).unwrap();
    for i in 2..=4 {
        assert!(at(&format!("w{i}")) > at(&format!("c{}", i - 1)), "{order:?}");
    }
    let j = judge(&p);
    let best = best_by_enumeration(&p, &j);
    let o = run(&p, &j, "dp", Budget::Samples(20), 0).expect("feasible");
    let found = o.best.expect("a valid partition").throughput;
    assert!(found >= best * (1.0 - 1e-9), "dp {found} against the optimum {best}");
}

/// A package whose fast chip comes after three slow ones, under `no_skip`:
/// contiguous stages put a convolution on a slow die; dp also cuts with a
/// weight alone on each slow die and the whole chain on the fast one, and
/// so reaches the optimum exhaustive search finds.
#[test]
fn dp_uses_a_fast_chip_that_comes_last() {
    let text = "use std::placement::{acyclic_flow, no_skip, triangle_dependency, memory_capacity}\n\
                topology fast_last() {\n\
                  chips die[3] { memory = 1 GiB, compute = 1 TFLOP/s }\n\
                  chips fast[1] { memory = 1 GiB, compute = 16 TFLOP/s }\n\
                  link die[0] -> die[1] { bandwidth = 10 GB/s }\n\
                  link die[1] -> die[2] { bandwidth = 10 GB/s }\n\
                  link die[2] -> fast[0] { bandwidth = 10 GB/s }\n}\n\
                let t = fast_last()\n\
                let g = graph {\n\
                  w1 { params = 1 KiB, output_bytes = 1 KiB }\n\
                  w2 { params = 1 KiB, output_bytes = 1 KiB }\n\
                  w3 { params = 1 KiB, output_bytes = 1 KiB }\n\
                  c1 { flops = 8 GFLOP, output_bytes = 1 MB }\n\
                  c2 { flops = 8 GFLOP, output_bytes = 1 MB }\n\
                  c3 { flops = 8 GFLOP, output_bytes = 1 MB }\n\
                  w1 -> c1 -> c2 -> c3\n  w2 -> c2\n  w3 -> c3\n}\n\
                partition g onto t {\n  require acyclic_flow, no_skip, triangle_dependency, memory_capacity\n  maximize throughput\n}\n";
    let compiled = common::compile_ok(text);
    let p = compiled.problem(None).unwrap().clone();
    let j = judge(&p);
    let best = best_by_enumeration(&p, &j);
    // The stdlib-shaped cuts alone stay far below it.
    let plain = strategy::pipeline_cuts(&p, &p.graph.pipeline_order());
    let plain_best = plain
        .iter()
        .filter_map(|(_, c)| j.evaluate(c).throughput())
        .fold(0.0f64, f64::max);
    assert!(plain_best < 0.5 * best, "plain cuts {plain_best} against {best}");
    let o = run(&p, &j, "dp", Budget::Samples(20), 0).expect("feasible");
    let found = o.best.expect("a valid partition").throughput;
    assert!(found >= best * (1.0 - 1e-9), "dp {found} against the optimum {best}");
}
