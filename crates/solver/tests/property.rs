//! Random placements of random small graphs on random rings and meshes:
//! the checker, evaluating the stdlib's formulas, agrees with a direct Rust
//! implementation of the four rules (and of `near(k)`) on every case.

use crate::common;

use common::random::{dag, topo, Topo};
use mcm_core::problem::Placement;
use mcm_solver::check;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug)]
struct Case {
    topo: Topo,
    memory_kib: u64,
    params_kib: Vec<u64>,
    replicable: usize,
    edges: Vec<(usize, usize)>,
    near: usize,
    placements: Vec<Vec<usize>>,
}

fn case() -> impl Strategy<Value = Case> {
    (topo(), 1usize..8, 0u64..8, 0usize..3, 0usize..4).prop_flat_map(|(topo, n, mem, rep, near)| {
        let c = topo.chips();
        let rep = rep.min(n - 1);
        (
            Just(topo),
            Just(mem),
            proptest::collection::vec(0u64..4, n),
            Just(rep),
            dag(n, 0.35),
            Just(near),
            proptest::collection::vec(proptest::collection::vec(0..c, n - rep), 1..6),
        )
            .prop_map(move |(topo, mem, params, rep, edges, near, placements)| Case {
                topo,
                memory_kib: mem,
                params_kib: params,
                replicable: rep,
                edges,
                near,
                placements,
            })
    })
}

fn program(c: &Case) -> String {
    let pkg = c.topo.package(c.memory_kib);
    let mut g = String::new();
    for (i, p) in c.params_kib.iter().enumerate() {
        let rep = if i < c.replicable { ", replicable = true" } else { "" };
        g += &format!("  n{i} {{ params = {p} KiB{rep} }}\n");
    }
    for (a, b) in &c.edges {
        g += &format!("  n{a} -> n{b}\n");
    }
    format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::{{ring, mesh}}\n\
         constraint near(k: int) {{ forall (u, v) in edges: hops(chip(u), chip(v)) <= k }}\n\
         let t = {pkg}\nlet g = graph {{\n{g}}}\n\
         partition g onto t {{ require acyclic_flow, no_skip, triangle_dependency, memory_capacity, near({}) }}\n",
        c.near
    )
}

/// The longest walk from a to b over `arcs`, or C when it can go round a cycle.
fn longest_walk(arcs: &BTreeSet<(usize, usize)>, c: usize, a: usize, b: usize) -> i64 {
    if a == b {
        return 0;
    }
    // Walks of up to 3C steps: a walk through a cycle on the way from a to b
    // fits in that many, and any walk of C or more steps repeats a chip.
    let mut at: Vec<bool> = (0..c).map(|x| x == a).collect();
    let mut best = -1;
    for k in 1..=3 * c {
        let mut next = vec![false; c];
        for &(x, y) in arcs {
            if at[x] {
                next[y] = true;
            }
        }
        at = next;
        if at[b] {
            best = k as i64;
        }
    }
    if best >= c as i64 {
        c as i64
    } else {
        best
    }
}

/// The rules written directly in Rust: how many instances of each the
/// placement breaks (one per edge or per chip, as the rules' `forall`s
/// ground), for the rules it breaks.
fn direct(c: &Case, chip_of: &[usize]) -> BTreeMap<String, usize> {
    let n_chips = c.topo.chips();
    let placed = |i: usize| i >= c.replicable;
    let chip = |i: usize| chip_of[i - c.replicable];
    // Parallel edges are one edge of the graph.
    let edges: BTreeSet<(usize, usize)> = c
        .edges
        .iter()
        .copied()
        .filter(|(a, b)| placed(*a) && placed(*b))
        .collect();
    let mut broken = BTreeMap::new();
    let mut count = |name: String, n: usize| {
        if n > 0 {
            broken.insert(name, n);
        }
    };
    count(
        "acyclic_flow".into(),
        edges.iter().filter(|&&(u, v)| chip(u) > chip(v)).count(),
    );
    let used: BTreeSet<usize> = chip_of.iter().copied().collect();
    let top = used.iter().max().copied().unwrap_or(0);
    count("no_skip".into(), (0..=top).filter(|d| !used.contains(d)).count());
    let arcs: BTreeSet<(usize, usize)> = edges
        .iter()
        .map(|&(u, v)| (chip(u), chip(v)))
        .filter(|(a, b)| a != b)
        .collect();
    count(
        "triangle_dependency".into(),
        edges
            .iter()
            .filter(|&&(u, v)| chip(u) != chip(v) && longest_walk(&arcs, n_chips, chip(u), chip(v)) != 1)
            .count(),
    );
    let over = (0..n_chips)
        .filter(|&d| {
            let load: u64 = (c.replicable..c.params_kib.len())
                .filter(|&i| chip(i) == d)
                .map(|i| c.params_kib[i])
                .sum();
            load > c.memory_kib
        })
        .count();
    count("memory_capacity".into(), over);
    count(
        format!("near(k = {})", c.near),
        edges
            .iter()
            .filter(|&&(u, v)| c.topo.hops(chip(u), chip(v)) > c.near)
            .count(),
    );
    broken
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn checker_agrees_with_a_direct_implementation(c in case()) {
        let text = program(&c);
        let compiled = common::compile(&text);
        prop_assert!(compiled.ok(), "{}\n{}", text, mcm_core::diag::render_text(&compiled.program.sources, &compiled.diags));
        let p = compiled.problem(None).expect("one problem");
        prop_assert_eq!(p.graph.num_placed(), c.params_kib.len() - c.replicable);
        for chip_of in &c.placements {
            let placement = Placement::new(chip_of.iter().map(|&x| x as u32).collect());
            let mut got: BTreeMap<String, usize> = BTreeMap::new();
            for v in check(&p.graph, &p.package, &p.constraints, &placement) {
                *got.entry(v.name).or_default() += 1;
            }
            let want = direct(&c, chip_of);
            prop_assert_eq!(got, want, "program:\n{}\nplacement {:?}", text, chip_of);
        }
    }
}
