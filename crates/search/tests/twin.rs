//! A problem that requires fewer rules is searched no worse for it: `auto`
//! also searches the problem's stricter twin (the standard library's
//! pipeline rules it lacks added) and keeps what it finds there.

use crate::common;
use common::random::{dag, topo, Topo};
use mcm_core::problem::{Placement, Problem};
use mcm_search::cost::{Judge, JudgeOptions};
use mcm_search::strategy::{self, Budget, Outcome};
use mcm_solver::check;
use proptest::prelude::*;

/// ResNet-18 on a 4 x 4 torus of small chips with big corners, under
/// `rules`: the activations of its early layers overflow the small chips,
/// so a partition must keep them on big ones.
fn corners(rules: &str) -> Problem {
    let text = format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::torus\n\
         topology corners(small: bytes, big: bytes) {{\n\
             include torus(rows = 4, cols = 4, memory = small, compute = 2 TFLOP/s, bandwidth = 100 GB/s)\n\
             for r in 0..2 {{ for c in 0..2 {{ set tile[r * 12 + c * 3] {{ memory = big, compute = 8 TFLOP/s }} }} }}\n\
         }}\n\
         let p = corners(small = 4 MiB, big = 16 MiB)\n\
         let g = graph(\"data/graphs/resnet18.json.gz\")\n\
         partition g onto p {{\n    require {rules}\n    maximize throughput\n}}\n"
    );
    common::compile_ok(&text).problem(None).unwrap().clone()
}

/// Strategy `name`'s run on `p` under `budget` with `seed`.
fn run(p: &Problem, name: &str, budget: Budget, seed: u64) -> Option<Outcome> {
    let judge = Judge::new(p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
    let mut s = strategy::by_name(name, &Default::default())
        .unwrap()
        .expect("a strategy");
    strategy::run(p, &judge, s.as_mut(), budget, seed, None).ok()
}

fn solve(p: &Problem, name: &str, budget: Budget) -> Option<Vec<u32>> {
    run(p, name, budget, 1)?.best.map(|b| b.chips)
}

#[test]
fn the_twin_of_a_problem_has_its_rules_and_the_pipelines() {
    let p = corners("memory_capacity");
    let twin = p.stricter().expect("memory_capacity alone has a twin");
    let names: Vec<&str> = twin.constraints.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["memory_capacity", "acyclic_flow", "no_skip", "triangle_dependency"]
    );
    assert!(corners("acyclic_flow, no_skip, triangle_dependency, memory_capacity")
        .stricter()
        .is_none());
}

#[test]
fn auto_finds_through_the_twin_what_the_heuristics_miss() {
    let p = corners("memory_capacity");
    // Greedy's fill and dp's cuts under memory_capacity alone overflow a
    // small chip with activations: nothing valid.
    for name in ["greedy", "dp"] {
        assert!(solve(&p, name, Budget::Samples(40)).is_none(), "{name} found one");
    }
    // The same proposals settled under the pipeline rules keep the early
    // layers together on a big chip.
    let chips = solve(&p, "auto", Budget::Seconds(20.0)).expect("auto finds a valid partition");
    assert!(check(&p.graph, &p.package, &p.constraints, &Placement::new(chips)).is_empty());
}

/// A random small problem: a ring or mesh of
/// up to six chips, a DAG of up to eight nodes (MFLOP, KiB of weights, KiB
/// of output each).
#[derive(Clone, Debug)]
struct Small {
    topo: Topo,
    memory_kib: u64,
    nodes: Vec<(u64, u64, u64)>,
    edges: Vec<(usize, usize)>,
}

fn small() -> impl Strategy<Value = Small> {
    (topo(), 2usize..9, 8u64..40).prop_flat_map(|(topo, n, memory_kib)| {
        (
            proptest::collection::vec((1u64..100, 0u64..12, 0u64..12), n),
            dag(n, 0.4),
        )
            .prop_map(move |(nodes, edges)| Small {
                topo: topo.clone(),
                memory_kib,
                nodes,
                edges,
            })
    })
}

fn small_problem(c: &Small, rules: &str, objective: &str) -> Option<Problem> {
    let mut g = String::new();
    for (i, (f, p, o)) in c.nodes.iter().enumerate() {
        g += &format!("  n{i} {{ flops = {f} MFLOP, params = {p} KiB, output_bytes = {o} KiB }}\n");
    }
    for (a, b) in &c.edges {
        g += &format!("  n{a} -> n{b}\n");
    }
    let text = format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::{{ring, mesh}}\n\
         let t = {}\nlet g = graph {{\n{g}}}\n\
         partition g onto t {{\nrequire {rules}\n{objective}\n}}\n",
        c.topo.package(c.memory_kib)
    );
    let compiled = common::compile(&text);
    assert!(compiled.ok(), "{text}");
    compiled.problem(None).ok().cloned()
}

/// The small problem under `memory_capacity` alone and under the four
/// rules in its twin's order (the problem's rules, then those it lacks),
/// both under throughput or both under step time.
fn with_four_rules(c: &Small, step: bool) -> Option<(Problem, Problem)> {
    let objective = if step {
        "minimize step_time"
    } else {
        "maximize throughput"
    };
    Some((
        small_problem(c, "memory_capacity", objective)?,
        small_problem(
            c,
            "memory_capacity, acyclic_flow, no_skip, triangle_dependency",
            objective,
        )?,
    ))
}

/// `fewer` (the run under fewer rules) spent its first `half` samples as
/// `four` (the four-rule run) did, sample for sample, so it ends no worse
/// than `four` at `half`, and no worse than `four`'s whole run when
/// `whole_within` (that run found its best, or ended, within the half); its
/// best passes the checker under its own rules.
fn replays_the_twin(
    p: &Problem,
    fewer: &Outcome,
    four: &Outcome,
    half: usize,
    whole_within: bool,
    seed: u64,
) -> Result<(), TestCaseError> {
    let score = |o: &Outcome, i: usize| o.records.get(i).map(|r| r.throughput);
    for i in 0..half.min(four.records.len()) {
        prop_assert_eq!(
            score(fewer, i),
            score(four, i),
            "seed {}: sample {} differs",
            seed,
            i + 1
        );
    }
    let best = fewer.best.as_ref().map(|b| b.throughput);
    prop_assert!(
        best >= four.best_at(half),
        "seed {seed}: {best:?} < {:?}",
        four.best_at(half)
    );
    if whole_within {
        let four_best = four.best.as_ref().map(|b| b.throughput);
        prop_assert!(best >= four_best, "seed {seed}: {best:?} < {four_best:?}");
    }
    if let Some(b) = &fewer.best {
        prop_assert!(check(&p.graph, &p.package, &p.constraints, &Placement::new(b.chips.clone())).is_empty());
    }
    Ok(())
}

const SAMPLES: usize = 40;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Under a sample budget `auto` on a problem under `memory_capacity`
    /// alone spends the first half as `auto` on the same problem under the
    /// four rules spends it, sample for sample, so it never ends worse than
    /// the four-rule run at half its budget, nor than its whole run when
    /// that one found its best in the first half or stopped there (proven
    /// optimal). Under both objectives, on three seeds.
    #[test]
    fn under_a_sample_budget_fewer_rules_never_end_worse(c in small(), step in any::<bool>()) {
        let Some((p, strict)) = with_four_rules(&c, step) else {
            return Ok(());
        };
        let half = SAMPLES.div_ceil(2);
        let auto = |p: &Problem, seed| run(p, "auto", Budget::Samples(SAMPLES), seed);
        for seed in 0..3 {
            let (Some(fewer), Some(four)) = (auto(&p, seed), auto(&strict, seed)) else {
                continue;
            };
            let within = four.best.as_ref().is_none_or(|b| b.sample <= half) || four.records.len() <= half;
            replays_the_twin(&p, &fewer, &four, half, within, seed)?;
        }
    }
}

/// Few enough for dp's whole run on the twin (at most one partition a cut,
/// one cut a chip count, and its other orders' cuts) to fit in the half.
const DP_SAMPLES: usize = 60;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// `solve --budget N` (dp, the default there) on a problem under
    /// `memory_capacity` alone spends the first half as dp on the same
    /// problem under the four rules spends it, sample for sample, so it
    /// never ends worse than that run at half its budget, nor than its whole
    /// run when that fits in the half. Under both objectives, on two seeds.
    #[test]
    fn dp_with_fewer_rules_never_ends_worse(c in small(), step in any::<bool>()) {
        let Some((p, strict)) = with_four_rules(&c, step) else {
            return Ok(());
        };
        let half = DP_SAMPLES.div_ceil(2);
        let dp = |p: &Problem, seed| run(p, "dp", Budget::Samples(DP_SAMPLES), seed);
        for seed in 0..2 {
            let (Some(fewer), Some(four)) = (dp(&p, seed), dp(&strict, seed)) else {
                continue;
            };
            replays_the_twin(&p, &fewer, &four, half, four.records.len() <= half, seed)?;
        }
    }
}
