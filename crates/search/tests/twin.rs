//! A problem that requires fewer rules is searched no worse for it: `auto`
//! also searches the problem's stricter twin (the standard library's
//! pipeline rules it lacks added) and keeps what it finds there.

use crate::common;
use mcm_core::problem::{Placement, Problem};
use mcm_search::cost::{Judge, JudgeOptions};
use mcm_search::strategy::{self, Budget};
use mcm_solver::check;

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

fn solve(p: &Problem, name: &str, budget: Budget) -> Option<Vec<u32>> {
    let judge = Judge::new(p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
    let mut s = strategy::by_name(name, &Default::default())
        .unwrap()
        .expect("a strategy");
    let o = strategy::run(p, &judge, s.as_mut(), budget, 1, None).ok()?;
    o.best.map(|b| b.chips)
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
