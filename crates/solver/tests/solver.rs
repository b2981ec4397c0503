//! The solver against exhaustive search on tiny instances: it finds a
//! partition exactly when one exists, every partition it returns is valid,
//! SAMPLE with uniform probabilities reaches every valid partition, and the
//! native and generic paths agree.

use crate::common;

use mcm_core::problem::{Placement, Problem};
use mcm_solver::{check, exhaustive, fix, node_order, sample, Options, Order, Solver};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

const RULES: &[&str] = &[
    "acyclic_flow",
    "no_skip",
    "triangle_dependency",
    "memory_capacity",
    "near(1)",
    "my_triangle",
    "balanced",
    "heavy_off0",
    "ratio",
    "fewer_than(2)",
    "up_to(1)",
    "link_edges(1)",
    "link_time(2500 ns)",
];

/// Edge `e` crosses link `l`: `l` lies on a shortest route between its chips.
const ON_ROUTE: &str = "hops(chip(e.src), l.src) + 1 + hops(l.dst, chip(e.dst)) == hops(chip(e.src), chip(e.dst))";

/// A random tiny problem as program text, with a random subset of rules.
fn instance(rng: &mut ChaCha8Rng, max_nodes: usize, max_chips: usize) -> String {
    let n = rng.random_range(1..=max_nodes);
    let topo = if rng.random_bool(0.5) {
        format!("ring(n = {}", rng.random_range(1..=max_chips))
    } else {
        let r = rng.random_range(1..=2);
        format!("mesh(rows = {r}, cols = {}", rng.random_range(1..=max_chips / r))
    };
    let mem = rng.random_range(1..=6);
    let mut g = String::new();
    for i in 0..n {
        g += &format!("  n{i} {{ params = {} KiB }}\n", rng.random_range(0..4));
    }
    for j in 0..n {
        for i in 0..j {
            if rng.random_bool(0.4) {
                g += &format!("  n{i} -> n{j}\n");
            }
        }
    }
    let rules: Vec<&str> = RULES.iter().copied().filter(|_| rng.random_bool(0.5)).collect();
    format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::{{ring, mesh}}\n\
         constraint near(k: int) {{ forall (u, v) in edges: hops(chip(u), chip(v)) <= k }}\n\
         constraint my_triangle() {{ forall (u, v) in edges: chip(u) != chip(v) -> longest_path(chip(u), chip(v)) == 1 }}\n\
         constraint balanced() {{ forall d in chips: count(u in nodes where chip(u) == d) <= 2 }}\n\
         constraint heavy_off0() {{ forall u in nodes where u.params > 0 B: chip(u) != 0 }}\n\
         constraint ratio() {{ forall d in chips: sum(u in nodes where chip(u) == d) u.params / (d.memory + 1 KiB) <= 0.5 }}\n\
         constraint fewer_than(k: int) {{ forall d in chips: count(u in nodes where chip(u) == d) < k }}\n\
         constraint up_to(k: int) {{ forall (u, v) in edges: chip(v) - chip(u) <= k }}\n\
         constraint link_edges(k: int) {{ forall l in links: count(e in edges where {ON_ROUTE}) <= k }}\n\
         constraint link_time(budget: time) {{ forall l in links: sum(e in edges where {ON_ROUTE}) (e.bytes + 1 KiB) / l.bandwidth <= budget }}\n\
         let t = {topo}, memory = {mem} KiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{\n{g}}}\n\
         partition g onto t {{ {} }}\n",
        common::require_line(&rules)
    )
}

fn problem(text: &str) -> Problem {
    let c = common::compile(text);
    assert!(
        c.ok(),
        "{text}\n{}",
        mcm_core::diag::render_text(&c.program.sources, &c.diags)
    );
    c.problem(None).unwrap().clone()
}

fn valid(p: &Problem, pl: &Placement) -> bool {
    check(&p.graph, &p.package, &p.constraints, pl).is_empty()
}

#[test]
fn finds_a_partition_exactly_when_one_exists() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for case in 0..400 {
        let text = instance(&mut rng, 7, 4);
        let p = problem(&text);
        let exists = exhaustive::find(&p.graph, &p.package, &p.constraints)
            .expect("small")
            .is_some();
        for native in [true, false] {
            let found = match Solver::new(&p, Options { native, sat: true }) {
                Err(_) => None,
                Ok(mut s) => {
                    let order = node_order(&s, Order::Random, &mut rng);
                    sample(&mut s, &order, None, &mut rng).ok()
                }
            };
            assert_eq!(found.is_some(), exists, "case {case} native={native}:\n{text}");
            if let Some(pl) = found {
                assert!(valid(&p, &pl), "case {case} native={native}: invalid {pl:?}\n{text}");
            }
        }
    }
}

/// A tiny problem under stdlib rules only, on more chips than nodes, alike
/// or not: where the solver answers on fewer chips (`reduce`).
fn wide_instance(rng: &mut ChaCha8Rng) -> String {
    let n = rng.random_range(1..=4);
    let mut g = String::new();
    for i in 0..n {
        g += &format!("  n{i} {{ params = {} KiB }}\n", rng.random_range(0..4));
    }
    for j in 0..n {
        for i in 0..j {
            if rng.random_bool(0.5) {
                g += &format!("  n{i} -> n{j}\n");
            }
        }
    }
    let rules: Vec<&str> = RULES[..4].iter().copied().filter(|_| rng.random_bool(0.6)).collect();
    let chips = rng.random_range(n + 1..=6);
    // Mostly alike chips; sometimes one with more memory (no reduction).
    let package = if rng.random_bool(0.8) {
        format!(
            "let t = ring(n = {chips}, memory = {} KiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)",
            rng.random_range(1..=5)
        )
    } else {
        format!(
            "topology odd(n: int) {{ chips a[n] {{ memory = 2 KiB }} chips b[1] {{ memory = 5 KiB }} }}\n\
             let t = odd(n = {})",
            chips - 1
        )
    };
    format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::ring\n\
         {package}\n\
         let g = graph {{\n{g}}}\n\
         partition g onto t {{ {} }}\n",
        common::require_line(&rules)
    )
}

/// On more chips than nodes the verdict comes from the problem on fewer
/// chips: it must agree with exhaustive search on the whole package, and
/// the rules it names must conflict on their own.
#[test]
fn infeasibility_on_fewer_chips_agrees_with_exhaustive_search() {
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    let (mut infeasible, mut reduced) = (0, 0);
    for case in 0..300 {
        let text = wide_instance(&mut rng);
        let p = problem(&text);
        reduced += usize::from(mcm_solver::reduce::fewer_chips(&p).is_some());
        let exists = exhaustive::find(&p.graph, &p.package, &p.constraints)
            .expect("small")
            .is_some();
        let answer = match Solver::new(&p, Options::default()) {
            Err(inf) => Err(inf),
            Ok(mut s) => {
                let order = node_order(&s, Order::Random, &mut rng);
                sample(&mut s, &order, None, &mut rng)
            }
        };
        match answer {
            Ok(pl) => {
                assert!(exists, "case {case}: found {pl:?} where none exists\n{text}");
                assert!(valid(&p, &pl), "case {case}: invalid {pl:?}\n{text}");
            }
            Err(inf) => {
                assert!(!exists, "case {case}: called infeasible\n{text}");
                let named: Vec<_> = inf.constraints.iter().map(|&k| p.constraints[k].clone()).collect();
                let alone = exhaustive::find(&p.graph, &p.package, &named).expect("small");
                assert!(
                    alone.is_none(),
                    "case {case}: {:?} do not conflict\n{text}",
                    inf.constraints
                );
                infeasible += 1;
            }
        }
    }
    assert!(
        infeasible >= 20 && reduced >= 100,
        "{infeasible} infeasible, {reduced} reduced"
    );
}

/// A placement valid on the first k chips (the witness SAMPLE's last
/// resort searches there on large packages) is valid on the whole package.
#[test]
fn partitions_valid_on_the_first_chips_are_valid_on_all() {
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    let mut checked = 0;
    for case in 0..200 {
        let text = wide_instance(&mut rng);
        let p = problem(&text);
        let k = rng.random_range(1..=p.package.num_chips());
        let Some(small) = mcm_solver::reduce::first_chips(&p, k) else {
            continue;
        };
        assert_eq!(small.package.num_chips(), k);
        exhaustive::for_each_valid(&small.graph, &small.package, &small.constraints, |pl| {
            assert!(valid(&p, pl), "case {case}, k = {k}: {pl:?}\n{text}");
            checked += 1;
            true
        })
        .expect("small");
    }
    assert!(checked >= 100, "only {checked} placements checked");
}

#[test]
fn sample_reaches_every_valid_partition() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut checked = 0;
    for case in 0..90 {
        let text = instance(&mut rng, 4, 3);
        let p = problem(&text);
        let all = all_valid(&p);
        if all.is_empty() {
            continue;
        }
        for native in [true, false] {
            let mut s = Solver::new(&p, Options { native, sat: true }).expect("feasible");
            samples_reach_all(&mut s, &all, &mut rng, &format!("case {case} native={native}:\n{text}"));
        }
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} feasible cases");
}

/// Under a per-chip count, uniform SAMPLE's first pass lets weights follow
/// their consumers and paces the other nodes (`pace.rs`) but for about one
/// of each a pass (`modes.rs`, `Weights::Mostly`), drawn from its whole
/// domain: every valid partition stays reachable.
#[test]
fn sample_under_a_per_chip_count_reaches_every_valid_partition() {
    // The cases do not depend on how many draws the sampler takes.
    let mut cases = ChaCha8Rng::seed_from_u64(12);
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let mut checked = 0;
    for case in 0..150 {
        let text =
            instance(&mut cases, 4, 3).replace("partition g onto t { ", "partition g onto t { require balanced\n");
        let p = problem(&text);
        let all = all_valid(&p);
        // Only cases with a weight whose chip is not forced test the strays.
        let edges: Vec<(u32, u32)> = p.graph.placed_edges().iter().map(|e| (e.src, e.dst)).collect();
        let weights = edges.iter().any(|&(u, _)| edges.iter().all(|&(_, v)| v != u));
        if all.len() < 2 || !weights {
            continue;
        }
        let mut s = Solver::new(&p, Options::default()).expect("feasible");
        samples_reach_all(&mut s, &all, &mut rng, &format!("case {case}:\n{text}"));
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} cases with weights");
}

/// Every valid partition of the small problem `p`, by exhaustive search.
fn all_valid(p: &Problem) -> BTreeSet<Vec<u32>> {
    let mut all = BTreeSet::new();
    exhaustive::for_each_valid(&p.graph, &p.package, &p.constraints, |pl| {
        all.insert(pl.chips.clone());
        true
    })
    .expect("small");
    all
}

/// 1,500 uniform samples from `s` are all in `all` (the valid partitions)
/// and reach every one of them.
fn samples_reach_all(s: &mut Solver, all: &BTreeSet<Vec<u32>>, rng: &mut ChaCha8Rng, what: &str) {
    let mut seen = BTreeSet::new();
    for _ in 0..1500 {
        let order = node_order(s, Order::Random, rng);
        let pl = sample(s, &order, None, rng).expect("feasible");
        assert!(all.contains(&pl.chips), "sampled an invalid {pl:?} in {what}");
        seen.insert(pl.chips);
    }
    assert_eq!(&seen, all, "missed some in {what}");
}

#[test]
fn fix_keeps_valid_proposals_and_repairs_invalid_ones() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut checked = 0;
    for case in 0..200 {
        let text = instance(&mut rng, 6, 4);
        let p = problem(&text);
        let Ok(mut s) = Solver::new(&p, Options::default()) else {
            continue;
        };
        let order = node_order(&s, Order::Topological, &mut rng);
        let Ok(valid_pl) = sample(&mut s, &order, None, &mut rng) else {
            continue;
        };
        // A valid proposal comes back unchanged.
        let proposal: Vec<Option<u32>> = valid_pl.chips.iter().map(|c| Some(*c)).collect();
        let (same, moved) = fix(&mut s, &order, &proposal, None, &mut rng).expect("feasible");
        assert_eq!(
            (same.chips.clone(), moved),
            (valid_pl.chips.clone(), 0),
            "case {case}\n{text}"
        );
        // Any proposal, even a partial one, comes back valid.
        let chips = p.package.num_chips() as u32;
        let junk: Vec<Option<u32>> = (0..p.graph.num_placed())
            .map(|_| rng.random_bool(0.8).then(|| rng.random_range(0..chips)))
            .collect();
        let (fixed, _) = fix(&mut s, &order, &junk, None, &mut rng).expect("feasible");
        assert!(valid(&p, &fixed), "case {case}\n{text}");
        checked += 1;
    }
    assert!(checked >= 50, "only {checked} feasible cases");
}

#[test]
fn get_and_set_domain_follow_the_contract() {
    let p = problem(
        "use std::placement::{acyclic_flow, no_skip}\nuse std::topologies::ring\n\
         let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph { a -> b -> c }\npartition g onto t { require acyclic_flow, no_skip }\n",
    );
    let mut s = Solver::new(&p, Options::default()).unwrap();
    assert_eq!(s.get_domain(0), vec![0, 1, 2]);
    // a on chip 2 leaves chips 0 and 1 empty: the decision fails, is undone,
    // and chip 2 is excluded from a's domain.
    assert_eq!(s.set_domain(0, &[2]), 0);
    assert!(!s.get_domain(0).contains(&2));
    assert_eq!(s.stats.failures, 1);
    // A decision that stands adds one and propagates: c on 1 puts a and b on chips <= 1.
    assert_eq!(s.set_domain(2, &[1]), 1);
    assert_eq!(s.get_domain(1), vec![0, 1]);
    assert_eq!(s.set_domain(1, &[1]), 2);
    assert_eq!(s.get_domain(0), vec![0], "no_skip: a fills chip 0");
    assert_eq!(s.placement().map(|p| p.chips), Some(vec![0, 1, 1]));
    // Back to the root: the exclusion learnt there stays.
    s.reset();
    assert_eq!(s.num_decisions(), 0);
    assert_eq!(s.get_domain(0), vec![0, 1]);
}

#[test]
fn undo_to_a_mark_restores_the_domains_of_that_mark() {
    let p = problem(
        "use std::placement::{acyclic_flow, no_skip}\nuse std::topologies::ring\n\
         let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph { a -> b -> c }\npartition g onto t { require acyclic_flow, no_skip }\n",
    );
    let mut s = Solver::new(&p, Options::default()).unwrap();
    let domains = |s: &Solver| (0..3).map(|u| s.get_domain(u)).collect::<Vec<_>>();
    let at_root = domains(&s);
    assert_eq!(s.set_domain(2, &[1]), 1);
    let (mark, at_mark) = (s.num_decisions(), domains(&s));
    assert_eq!(s.set_domain(1, &[1]), 2);
    assert_ne!(domains(&s), at_mark);
    // Fewer decisions than the mark: nothing to undo.
    s.undo_to(5);
    assert_eq!(s.num_decisions(), 2);
    s.undo_to(mark);
    assert_eq!(s.num_decisions(), mark);
    assert_eq!(domains(&s), at_mark);
    // The solver goes on from there as from any state.
    assert_eq!(s.set_domain(1, &[0]), 2);
    assert_eq!(s.get_domain(0), vec![0]);
    s.undo_to(0);
    assert_eq!(domains(&s), at_root);
}

#[test]
fn domain_words_mirror_every_nodes_domain() {
    // 70 chips: two words a domain, so a row offset or a word order
    // mistake shows.
    let p = problem(
        "use std::placement::{acyclic_flow}\nuse std::topologies::ring\n\
         let t = ring(n = 70, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph { a -> b -> c -> d }\npartition g onto t { require acyclic_flow }\n",
    );
    let mut s = Solver::new(&p, Options::default()).unwrap();
    let rows = |s: &Solver| {
        let w = s.domain_words_per_node();
        assert_eq!(w, 2);
        assert_eq!(s.domain_words().len(), s.num_nodes() * w);
        (0..s.num_nodes())
            .map(|u| mcm_solver::domain::bits_of(&s.domain_words()[u * w..(u + 1) * w]))
            .collect::<Vec<_>>()
    };
    let domains = |s: &Solver| (0..s.num_nodes() as u32).map(|u| s.get_domain(u)).collect::<Vec<_>>();
    assert_eq!(rows(&s), domains(&s));
    // Decisions that narrow the domains across both words, then back to
    // the root.
    assert_eq!(s.set_domain(3, &[66]), 1);
    assert_eq!(rows(&s), domains(&s));
    assert_eq!(s.get_domain(0), (0..=66).collect::<Vec<u32>>());
    assert_eq!(s.set_domain(0, &[63]), 2);
    assert_eq!(rows(&s), domains(&s));
    assert_eq!(s.get_domain(1), (63..=66).collect::<Vec<u32>>());
    s.reset();
    assert_eq!(rows(&s), domains(&s));
}

#[test]
fn packages_wider_than_a_machine_word_work() {
    // 130 chips, domains over three 64-bit words; one node's weights fill a
    // chip, so 130 nodes take every chip exactly once.
    let mut nodes = String::new();
    for i in 0..130 {
        nodes += &format!("  n{i} {{ params = 1 KiB }}\n");
    }
    nodes += "  n0 -> n129\n";
    let p = problem(&format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::ring\n\
         let t = ring(n = 130, memory = 1 KiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{\n{nodes}}}\n\
         partition g onto t {{ require acyclic_flow, no_skip, triangle_dependency, memory_capacity }}\n"
    ));
    let mut s = Solver::new(&p, Options::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for _ in 0..5 {
        let order = node_order(&s, Order::Random, &mut rng);
        let pl = sample(&mut s, &order, None, &mut rng).unwrap();
        assert!(valid(&p, &pl));
        let mut used = pl.chips.clone();
        used.sort_unstable();
        assert_eq!(used, (0..130).collect::<Vec<u32>>());
        assert!(pl.chips[0] < pl.chips[129]);
    }
}

#[test]
fn the_same_seed_gives_the_same_partition() {
    let c = mcm_lang::compile_file(&common::root().join("examples/bert_ring36.mcm"));
    let p = c.problem(None).unwrap();
    let run = |seed: u64| {
        let mut s = Solver::new(p, Options::default()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let order = node_order(&s, Order::Random, &mut rng);
        sample(&mut s, &order, None, &mut rng).unwrap()
    };
    let a = run(1);
    assert_eq!(a, run(1));
    assert_ne!(a, run(2));
    assert!(valid(p, &a));
}

/// FIX moves a node whose proposal is no longer allowed as little as the
/// rules allow: on a chain where one node is proposed two chips too late,
/// the nodes after it stay next to it instead of drifting to the last chip.
#[test]
fn fix_repairs_near_the_proposal() {
    let mut g = String::new();
    for i in 1..40 {
        g += &format!("  n{} -> n{i}\n", i - 1);
    }
    let p = problem(&format!(
        "use std::placement::acyclic_flow\nuse std::topologies::ring\n\
         let t = ring(n = 8, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{\n{g}}}\n\
         partition g onto t {{ require acyclic_flow }}\n"
    ));
    let mut s = Solver::new(&p, Options::default()).unwrap();
    let at = |name: &str| p.graph.decision_of(p.graph.node_index(name).unwrap()).unwrap() as usize;
    let mut proposal = vec![Some(2u32); p.graph.num_placed()];
    proposal[at("n5")] = Some(4);
    let mut beyond = 0;
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let order = node_order(&s, Order::Topological, &mut rng);
        let (fixed, moved) = fix(&mut s, &order, &proposal, None, &mut rng).unwrap();
        assert!(valid(&p, &fixed));
        // n6..n39 must leave chip 2; the nearest they can go is chip 4.
        assert!(moved >= 34, "seed {seed}: {moved} moved");
        beyond += (6..40).filter(|i| fixed.chips[at(&format!("n{i}"))] > 4).count();
    }
    // Uniform redraws would put most of the 680 beyond chip 4.
    assert!(beyond < 60, "{beyond} of 680 repaired nodes went past chip 4");
}

/// Uniform SAMPLE under a count that spreads BERT-large's chain (at most 400
/// nodes a chip, where the last chip took 645): deciding the weights after
/// their consumers, its passes meet no dead end, so no partition comes from
/// a fresh order or the SAT witness (drawn first, every pass dead-ended).
#[test]
fn uniform_sample_under_a_binding_count_needs_no_fallback() {
    let text = std::fs::read_to_string(common::root().join("examples/rules/per_chip_count.mcm"))
        .unwrap()
        .replace("at_most(700)", "at_most(400)");
    let compiled = common::compile_in(&common::root().join("examples/rules"), &text);
    let p = compiled.problem(None).expect("compiles").clone();
    let mut s = Solver::new(&p, Options::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for _ in 0..5 {
        let order = node_order(&s, Order::Random, &mut rng);
        let pl = sample(&mut s, &order, None, &mut rng).unwrap();
        assert!(valid(&p, &pl));
        assert!(pl.chips_used() >= 3, "the count spreads the chain");
    }
    assert_eq!((s.stats.restarts, s.stats.sat_calls), (0, 0), "{:?}", s.stats);
}

/// FIX from uniformly random proposals under a per-chip compute budget that
/// binds (examples/rules/tight_compute.mcm, 3x the flops bound): the keep
/// phase gives up after a few refusals and the in-order projection of the
/// proposal completes the partition, so none comes from the SAT witness.
/// Kept one at a time, each proposal led to thousands of failures, five
/// passes and a witness per partition.
#[test]
fn fix_under_a_binding_budget_needs_no_witness() {
    let c = mcm_lang::compile_file(&common::root().join("examples/rules/tight_compute.mcm"));
    let p = c.problem(None).unwrap();
    let mut s = Solver::new(p, Options::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let chips = s.num_chips() as u32;
    for _ in 0..3 {
        let order = node_order(&s, Order::Random, &mut rng);
        let proposal: Vec<Option<u32>> = (0..s.num_nodes()).map(|_| Some(rng.random_range(0..chips))).collect();
        let (pl, _) = fix(&mut s, &order, &proposal, None, &mut rng).unwrap();
        assert!(valid(p, &pl));
    }
    assert_eq!(s.stats.sat_calls, 0, "{:?}", s.stats);
    assert!(s.stats.failures < 300, "{:?}", s.stats);
}

/// A solver told to stop gives SAMPLE and FIX up at once, and says it was
/// stopped (its error proves nothing); one whose stop never fires is not
/// changed by it.
#[test]
fn a_stopped_solver_gives_its_passes_up() {
    let c = mcm_lang::compile_file(&common::root().join("examples/bert_ring36.mcm"));
    let p = c.problem(None).unwrap();
    let run = |stop: bool| {
        let mut s = Solver::new(p, Options::default()).unwrap();
        s.set_stop(Some(std::sync::Arc::new(move || stop)));
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let order = node_order(&s, Order::Random, &mut rng);
        let sampled = sample(&mut s, &order, None, &mut rng);
        let proposal = vec![Some(0); s.num_nodes()];
        let fixed = fix(&mut s, &order, &proposal, None, &mut rng);
        (sampled, fixed.map(|(pl, _)| pl), s.cut_short())
    };
    let (sampled, fixed, cut) = run(true);
    assert!(sampled.is_err() && fixed.is_err() && cut);
    let (sampled, fixed, cut) = run(false);
    assert!(valid(p, &sampled.unwrap()) && valid(p, &fixed.unwrap()));
    assert!(!cut);
}

/// Under a per-chip compute budget at 2.0x the flops bound
/// (`tight_compute_2x.mcm`), uniform SAMPLE and FIX from uniformly random
/// proposals make partitions without the SAT witness: the resource family
/// packs whole operations along the pipeline. With the divisible sum alone,
/// every pass climbs the chips past where the operations fit, and each
/// partition ends in the SAT witness.
#[test]
fn under_a_budget_at_twice_the_flops_bound_no_witness_is_needed() {
    let c = mcm_lang::compile_file(&common::root().join("examples/rules/tight_compute_2x.mcm"));
    let p = c.problem(None).unwrap();
    let mut s = Solver::new(p, Options::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let chips = s.num_chips() as u32;
    for _ in 0..3 {
        let order = node_order(&s, Order::Random, &mut rng);
        assert!(valid(p, &sample(&mut s, &order, None, &mut rng).unwrap()));
        let proposal: Vec<Option<u32>> = (0..s.num_nodes()).map(|_| Some(rng.random_range(0..chips))).collect();
        let (pl, _) = fix(&mut s, &order, &proposal, None, &mut rng).unwrap();
        assert!(valid(p, &pl));
    }
    assert_eq!(s.stats.sat_calls, 0, "{:?}", s.stats);
    assert!(s.stats.failures < 100, "{:?}", s.stats);
}

/// Under a per-chip count at 1.5x the average (`tight_count.mcm`), FIX's
/// projection lets weights follow their consumers, so the chips the chain
/// skipped are filled by the weights `no_skip` forces there instead of by
/// whichever weights are drawn first. Drawn near their own (uniformly random)
/// proposals, the weights took about 206 failures a FIX partition.
#[test]
fn under_a_binding_count_weights_follow_their_consumers() {
    let c = mcm_lang::compile_file(&common::root().join("examples/rules/tight_count.mcm"));
    let p = c.problem(None).unwrap();
    let mut s = Solver::new(p, Options::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let chips = s.num_chips() as u32;
    for _ in 0..4 {
        let order = node_order(&s, Order::Random, &mut rng);
        let proposal: Vec<Option<u32>> = (0..s.num_nodes()).map(|_| Some(rng.random_range(0..chips))).collect();
        let (pl, _) = fix(&mut s, &order, &proposal, None, &mut rng).unwrap();
        assert!(valid(p, &pl));
    }
    assert_eq!(s.stats.sat_calls, 0, "{:?}", s.stats);
    assert!(s.stats.failures < 200, "FIX: {:?}", s.stats);
}

/// FIX from uniformly random proposals under a per-chip count at 1.5x the
/// average (`tight_count.mcm`): the count's first refusal ends the keep
/// phase, and the projection completes the partition. Every such keep
/// phase gave up, after its nine failures at least, before the projection
/// (about 10.4 failures a partition in `bench solver`); about 3.6 now. A
/// valid proposal still comes back whole.
#[test]
fn under_a_binding_count_fix_projects_at_the_counts_first_refusal() {
    let c = mcm_lang::compile_file(&common::root().join("examples/rules/tight_count.mcm"));
    let p = c.problem(None).unwrap();
    let mut s = Solver::new(p, Options::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let chips = s.num_chips() as u32;
    let mut last = None;
    let partitions = 8;
    for _ in 0..partitions {
        let order = node_order(&s, Order::Random, &mut rng);
        let proposal: Vec<Option<u32>> = (0..s.num_nodes()).map(|_| Some(rng.random_range(0..chips))).collect();
        let (pl, _) = fix(&mut s, &order, &proposal, None, &mut rng).unwrap();
        assert!(valid(p, &pl));
        last = Some(pl);
    }
    assert_eq!(s.stats.sat_calls, 0, "{:?}", s.stats);
    assert!(
        s.stats.restarts >= partitions,
        "every keep phase gives up: {:?}",
        s.stats
    );
    assert!(s.stats.failures < 9 * partitions, "FIX: {:?}", s.stats);
    let pl = last.unwrap();
    let order = node_order(&s, Order::Random, &mut rng);
    let proposal: Vec<Option<u32>> = pl.chips.iter().map(|&c| Some(c)).collect();
    let (same, moved) = fix(&mut s, &order, &proposal, None, &mut rng).unwrap();
    assert_eq!((same.chips, moved), (pl.chips, 0));
}

/// Under a per-chip count at 1.5x the average, uniform SAMPLE's first pass
/// lets weights follow their consumers but for about one a pass, and
/// completes where drawing every weight from its domain spent its whole
/// failure budget (about 435 failures a partition, most of them in that
/// first pass; about 5 now).
#[test]
fn under_a_binding_count_samples_let_weights_follow() {
    let c = mcm_lang::compile_file(&common::root().join("examples/rules/tight_count.mcm"));
    let p = c.problem(None).unwrap();
    let mut s = Solver::new(p, Options::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for _ in 0..4 {
        let order = node_order(&s, Order::Random, &mut rng);
        let pl = sample(&mut s, &order, None, &mut rng).unwrap();
        assert!(valid(p, &pl));
    }
    assert_eq!(s.stats.sat_calls, 0, "{:?}", s.stats);
    assert!(s.stats.failures < 200, "SAMPLE: {:?}", s.stats);
}

/// GPT-2 medium on 32 chips under an op count at 1.5x the average, a
/// compute budget at 3x the flops bound, a unary and an edge rule: uniform
/// SAMPLE's first pass paces the chain, and a node that strays from its
/// pace stays near it (`Pace::stray`). Drawn from its whole domain, a stray
/// late in the chain lifted it to the last chips, which had no room left for
/// the chain and its weights, and the pass backtracked over every node after
/// it.
#[test]
fn under_a_binding_count_a_stray_stays_near_its_pace() {
    let text = "use std::placement::{acyclic_flow, no_skip, triangle_dependency, memory_capacity}\n\
        use std::topologies::ring\n\
        let t = ring(n = 32, memory = 256 MiB, compute = 8 TFLOP/s, bandwidth = 25 GB/s)\n\
        let g = graph(\"examples/graphs/gpt2-medium.json.gz\")\n\
        constraint ops_cap(k: int) { forall d in chips: count(u in nodes where chip(u) == d) <= k }\n\
        constraint busy_cap(limit: time) { forall d in chips: sum(u in nodes where chip(u) == d) u.flops / d.compute <= limit }\n\
        constraint norms_off_last() { forall u in nodes where u.op == \"layer_norm\": chip(u) != 31 }\n\
        constraint matmul_feeds_near(k: int) { forall (u, v) in edges where u.op == \"matmul\": chip(v) - chip(u) <= k }\n\
        partition g onto t {\n\
        require acyclic_flow, no_skip, triangle_dependency, memory_capacity\n\
        require ops_cap(60), busy_cap(927 us), norms_off_last, matmul_feeds_near(2)\n\
        }\n";
    let c = mcm_lang::compile_str("gpt2_tight.mcm", text, &common::root());
    let p = c.problem(None).unwrap();
    let mut s = Solver::new(p, Options::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let partitions = 30;
    for _ in 0..partitions {
        let order = node_order(&s, Order::Random, &mut rng);
        let pl = sample(&mut s, &order, None, &mut rng).unwrap();
        assert!(valid(p, &pl));
    }
    assert_eq!(s.stats.sat_calls, 0, "{:?}", s.stats);
    assert!(s.stats.failures < 2 * partitions, "SAMPLE: {:?}", s.stats);
}

/// Under a per-chip count and an equality chosen by operation (a node of
/// kind "norm" on the chip of each of its inputs, as `norm_with_inputs`
/// ties a layer norm to its inputs), uniform SAMPLE reaches every valid
/// partition: the count weighs the groups the equality forces, and prunes
/// none of them.
#[test]
fn sample_under_a_count_and_an_equality_reaches_every_valid_partition() {
    let mut rng = ChaCha8Rng::seed_from_u64(36);
    let mut checked = 0;
    for case in 0..200 {
        let mut text = instance(&mut rng, 5, 3);
        for i in [0, 2] {
            text = text.replace(&format!("  n{i} {{ "), &format!("  n{i} {{ op = \"norm\", "));
        }
        let text = text.replace(
            "partition g onto t { ",
            "constraint glued() { forall (u, v) in edges where v.op == \"norm\": chip(u) == chip(v) }\n\
             partition g onto t { require balanced, glued\n",
        );
        let p = problem(&text);
        let all = all_valid(&p);
        if all.len() < 2 {
            continue;
        }
        let mut s = Solver::new(&p, Options::default()).expect("feasible");
        samples_reach_all(&mut s, &all, &mut rng, &format!("case {case}:\n{text}"));
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} cases with two or more valid partitions");
}

/// ELECTRA-base under an op count at 1.5x the average, a compute budget,
/// a unary and an edge rule and `norm_with_inputs` (tight_all_electra.mcm):
/// FIX and SAMPLE make partitions without the SAT witness. Weighing each
/// node alone, the count refused a norm's group only once its first member
/// was placed, and the cone bounds left the chain room it did not have
/// (the norms' weights tied to it): no partition within 120 s, the passes
/// spent and the witness asked for each; about 85 failures a partition now.
#[test]
fn under_a_count_and_an_equality_fix_and_sample_need_no_witness() {
    let c = mcm_lang::compile_file(&common::root().join("examples/rules/tight_all_electra.mcm"));
    let p = c.problem(None).unwrap();
    let mut s = Solver::new(p, Options::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let chips = s.num_chips() as u32;
    for _ in 0..2 {
        let order = node_order(&s, Order::Random, &mut rng);
        let pl = sample(&mut s, &order, None, &mut rng).unwrap();
        assert!(valid(p, &pl));
        let proposal: Vec<Option<u32>> = (0..s.num_nodes()).map(|_| Some(rng.random_range(0..chips))).collect();
        let (pl, _) = fix(&mut s, &order, &proposal, None, &mut rng).unwrap();
        assert!(valid(p, &pl));
    }
    assert_eq!(s.stats.sat_calls, 0, "{:?}", s.stats);
    // About 85 a partition either way; passes that give up spend 512 each.
    assert!(s.stats.failures < 2000, "{:?}", s.stats);
}

/// Under every rule of `tight_all.mcm` together (an op count at 1.5x the
/// average, a compute budget at 3x the flops bound, a unary rule, an edge
/// rule, and `norm_with_inputs`, which ties each layer norm to its residual
/// add and its two weights), FIX from uniformly random proposals and
/// uniform SAMPLE spread the chain of operations evenly over the chips
/// (`pace.rs`) and complete in their first passes. Drawn from their
/// domains, or nearest to such proposals, the chain's first nodes climb
/// to the highest chips the run bounds allow, every chip above them then has
/// to be filled to the cap, and each partition needs thousands of failures
/// before the SAT witness. The solver is stopped
/// after four passes' worth of decisions a partition, so that a run that
/// meets those dead ends ends in an error soon after its first witness.
#[test]
fn under_tight_rules_together_the_chain_is_paced_and_needs_no_witness() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let c = mcm_lang::compile_file(&common::root().join("examples/rules/tight_all.mcm"));
    let p = c.problem(None).unwrap();
    let mut s = Solver::new(p, Options::default()).unwrap();
    let partitions = 3;
    let checks = std::sync::Arc::new(AtomicUsize::new(0));
    let limit = 4 * s.num_nodes() * 2 * partitions;
    let seen = checks.clone();
    s.set_stop(Some(std::sync::Arc::new(move || {
        seen.fetch_add(1, Ordering::Relaxed) > limit
    })));
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let chips = s.num_chips() as u32;
    for _ in 0..partitions {
        let order = node_order(&s, Order::Random, &mut rng);
        let pl = sample(&mut s, &order, None, &mut rng).expect("SAMPLE completes before the stop");
        assert!(valid(p, &pl));
        let proposal: Vec<Option<u32>> = (0..s.num_nodes()).map(|_| Some(rng.random_range(0..chips))).collect();
        let (pl, _) = fix(&mut s, &order, &proposal, None, &mut rng).expect("FIX completes before the stop");
        assert!(valid(p, &pl));
    }
    assert_eq!(s.stats.sat_calls, 0, "{:?}", s.stats);
    assert!(s.stats.failures < 30 * partitions as u64, "{:?}", s.stats);
    assert!(checks.load(Ordering::Relaxed) < limit / 2, "{:?}", s.stats);
}
