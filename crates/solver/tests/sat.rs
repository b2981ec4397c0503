//! The SAT backing of the solver against exhaustive search on many random
//! tiny instances: satisfiability, witnesses judged by the checker, answers
//! under random decisions, cores that really conflict, and agreement of the
//! native and generic encodings.

use crate::common;

use mcm_core::problem::{GroundConstraint, Placement, Problem};
use mcm_solver::exhaustive;
use mcm_solver::sat::{SatAnswer, SatOptions, SatOracle};
use mcm_solver::Checker;

/// A small seeded generator (64-bit LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// User-written rules, in the test file itself: no native key, so the
/// propagator families of their shapes, or the generic path.
const USER_RULES: &str = "\
constraint near(k: int) { forall (u, v) in edges: hops(chip(u), chip(v)) <= k }
constraint at_most(k: int) { forall d in chips: count(u in nodes where chip(u) == d) <= k }
constraint light(limit: bytes) { forall d in chips: sum(u in nodes where chip(u) == d) u.params <= limit }
constraint tri_copy() { forall (u, v) in edges: chip(u) != chip(v) -> longest_path(chip(u), chip(v)) == 1 }
constraint no_round_trip() { forall a in chips, b in chips where a < b: not (flows(a, b) and flows(b, a)) }
constraint first_used() { exists u in nodes: chip(u) == 0 }
constraint low_top(k: int) { max(u in nodes) chip(u) <= k }
constraint same_or_next() { forall (u, v) in edges: chip(v) - chip(u) <= 1 and chip(u) - chip(v) <= 1 }
constraint skip_even() { forall u in nodes: chip(u) % 2 == 0 or chip(u) == 1 }
constraint heavy_off0() { forall u in nodes where u.params > 0 B: chip(u) != 0 }
constraint ratio() { forall d in chips: sum(u in nodes where chip(u) == d) u.params / (d.memory + 1 KiB) <= 0.5 }
constraint fewer_than(k: int) { forall d in chips: count(u in nodes where chip(u) == d) < k }
constraint up_to(k: int) { forall (u, v) in edges: chip(v) - chip(u) <= k }
constraint link_edges(k: int) { forall l in links: count(e in edges where hops(chip(e.src), l.src) + 1 + hops(l.dst, chip(e.dst)) == hops(chip(e.src), chip(e.dst))) <= k }
constraint link_time(budget: time) { forall l in links: sum(e in edges where hops(chip(e.src), l.src) + 1 + hops(l.dst, chip(e.dst)) == hops(chip(e.src), chip(e.dst))) (e.bytes + 1 KiB) / l.bandwidth <= budget }
";

const STD: [&str; 4] = ["acyclic_flow", "no_skip", "triangle_dependency", "memory_capacity"];

/// A random tiny problem as program text: at most 6 placed nodes, at most 4 chips.
fn random_program(rng: &mut Lcg) -> String {
    let pkg = match rng.below(3) {
        0 | 1 => format!(
            "ring(n = {}, memory = {} KiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)",
            1 + rng.below(4),
            rng.below(9)
        ),
        _ => {
            let (r, c) = [(1, 2), (2, 1), (2, 2), (1, 3), (1, 4), (1, 1)][rng.below(6) as usize];
            format!(
                "mesh(rows = {r}, cols = {c}, memory = {} KiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)",
                rng.below(9)
            )
        }
    };
    let n = 1 + rng.below(6) as usize;
    let rep = if n > 1 && rng.chance(20) { 1 } else { 0 };
    let mut g = String::new();
    for i in 0..n + rep {
        let r = if i < rep { ", replicable = true" } else { "" };
        g += &format!("  n{i} {{ params = {} KiB{r} }}\n", rng.below(5));
    }
    let density = 20 + rng.below(50);
    for j in 0..n + rep {
        for i in 0..j {
            if rng.chance(density) {
                g += &format!("  n{i} -> n{j}\n");
            }
        }
    }
    let mut req: Vec<String> = Vec::new();
    for s in STD {
        if rng.chance(55) {
            req.push(s.to_string());
        }
    }
    let user = [
        format!("near({})", rng.below(3)),
        format!("at_most({})", 1 + rng.below(3)),
        format!("light({} KiB)", rng.below(9)),
        "tri_copy".to_string(),
        "no_round_trip".to_string(),
        "first_used".to_string(),
        format!("low_top({})", rng.below(4)),
        "same_or_next".to_string(),
        "skip_even".to_string(),
        "heavy_off0".to_string(),
        "ratio".to_string(),
        format!("fewer_than({})", 1 + rng.below(3)),
        format!("up_to({})", rng.below(3)),
        format!("link_edges({})", rng.below(3)),
        // An edge keeps a link busy for 1.024 us.
        format!("link_time({} ns)", 1000 + rng.below(3000)),
    ];
    for u in user {
        if rng.chance(15) {
            req.push(u);
        }
    }
    if req.is_empty() {
        req.push(STD[rng.below(4) as usize].to_string());
    }
    format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::{{ring, mesh}}\n{USER_RULES}\
         let t = {pkg}\nlet g = graph {{\n{g}}}\n\
         partition g onto t {{ require {} }}\n",
        req.join(", ")
    )
}

fn compile(text: &str) -> Problem {
    let c = common::compile(text);
    assert!(
        c.ok(),
        "{text}\n{}",
        mcm_core::diag::render_text(&c.program.sources, &c.diags)
    );
    c.problem(None).expect("one problem").clone()
}

/// A valid placement within the decisions, by exhaustive search over `constraints`.
fn brute(p: &Problem, constraints: &[GroundConstraint], decisions: &[(u32, Vec<u32>)]) -> Option<Placement> {
    let mut found = None;
    exhaustive::for_each_valid(&p.graph, &p.package, constraints, |pl| {
        if decisions.iter().all(|(d, a)| a.contains(&pl.chip(*d))) {
            found = Some(pl.clone());
            false
        } else {
            true
        }
    })
    .expect("tiny instance");
    found
}

fn random_decisions(rng: &mut Lcg, p: &Problem) -> Vec<(u32, Vec<u32>)> {
    let n = p.graph.num_placed() as u64;
    let c = p.package.num_chips() as u64;
    let k = 1 + rng.below(3);
    (0..k)
        .map(|_| {
            let u = rng.below(n) as u32;
            let mut allowed: Vec<u32> = (0..c as u32).filter(|_| rng.chance(40)).collect();
            if allowed.is_empty() || rng.chance(50) {
                allowed = vec![rng.below(c) as u32];
            }
            (u, allowed)
        })
        .collect()
}

/// Checks one answer against exhaustive search; returns whether it was Sat.
fn judge(p: &Problem, decisions: &[(u32, Vec<u32>)], answer: &SatAnswer, text: &str, what: &str) -> bool {
    let truth = brute(p, &p.constraints, decisions);
    match answer {
        SatAnswer::Sat(pl) => {
            assert!(
                truth.is_some(),
                "{what}: Sat but exhaustive search finds none\n{text}\n{decisions:?}"
            );
            assert!(
                Checker::new(&p.graph, &p.package, pl).all_hold(&p.constraints),
                "{what}: the witness {pl:?} breaks a constraint\n{text}"
            );
            for (d, a) in decisions {
                assert!(
                    a.contains(&pl.chip(*d)),
                    "{what}: the witness ignores decision {d} -> {a:?}"
                );
            }
            true
        }
        SatAnswer::Unsat(core) => {
            assert!(
                truth.is_none(),
                "{what}: Unsat ({core:?}) but {truth:?} is valid\n{text}\n{decisions:?}"
            );
            // The core alone conflicts.
            let sub: Vec<(u32, Vec<u32>)> = core.decisions.iter().map(|&i| decisions[i].clone()).collect();
            let cons: Vec<GroundConstraint> = core.constraints.iter().map(|&i| p.constraints[i].clone()).collect();
            assert!(
                brute(p, &cons, &sub).is_none(),
                "{what}: the core {core:?} does not conflict on its own\n{text}\n{decisions:?}"
            );
            false
        }
    }
}

#[test]
fn agrees_with_exhaustive_search_on_random_tiny_instances() {
    let cases: usize = std::env::var("SAT_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let seed: u64 = std::env::var("SAT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let mut rng = Lcg(seed);
    let (mut sat, mut unsat) = (0, 0);
    let mut cuts = [0u64; 6];
    for _ in 0..cases {
        let text = random_program(&mut rng);
        let p = compile(&text);
        let queries: Vec<Vec<(u32, Vec<u32>)>> = if p.graph.num_placed() == 0 || p.package.num_chips() == 0 {
            vec![vec![]]
        } else {
            std::iter::once(vec![])
                .chain((0..4).map(|_| random_decisions(&mut rng, &p)))
                .collect()
        };
        let mut oracles = [
            ("native", SatOracle::new(&p, true)),
            ("generic", SatOracle::new(&p, false)),
            (
                "lazy generic",
                SatOracle::with_options(
                    &p,
                    &SatOptions {
                        native: false,
                        table_limit: 0,
                        ..SatOptions::default()
                    },
                ),
            ),
            (
                "lazy native",
                SatOracle::with_options(
                    &p,
                    &SatOptions {
                        memory_pairs: 0,
                        memory_counters: 0,
                        count_counters: 0,
                        chip_flows: false,
                        ..SatOptions::default()
                    },
                ),
            ),
            (
                "lazy families",
                SatOracle::with_options(
                    &p,
                    &SatOptions {
                        table_limit: 0,
                        ..SatOptions::default()
                    },
                ),
            ),
            (
                "lazy arcs",
                SatOracle::with_options(
                    &p,
                    &SatOptions {
                        arc_budget: 0,
                        ..SatOptions::default()
                    },
                ),
            ),
        ];
        for q in &queries {
            let mut answers = Vec::new();
            for (what, o) in oracles.iter_mut() {
                let a = o.solve(&p, q);
                answers.push(judge(&p, q, &a, &text, what));
            }
            assert!(answers.windows(2).all(|w| w[0] == w[1]), "{text}\n{q:?}");
            if answers[0] {
                sat += 1;
            } else {
                unsat += 1;
            }
        }
        for (i, (what, o)) in oracles.iter().enumerate() {
            assert_eq!(
                o.stats().fallbacks,
                0,
                "{what}: a cut fell back to a whole model\n{text}"
            );
            cuts[i] += o.stats().cuts;
        }
    }
    println!("sat {sat}, unsat {unsat}, cuts (native, generic, lazy generic, lazy native, lazy families, lazy arcs) {cuts:?}");
    // The generator gives both kinds of answers.
    assert!(sat > 200 && unsat > 200, "sat {sat}, unsat {unsat}");
}

/// A chain of seven nodes with random shortcuts on four chips, under a
/// per-link rule and random stdlib rules: 4^7 chip combinations, past the
/// generic table's 4,096, so the link family's own encoding answers.
fn link_program(rng: &mut Lcg) -> String {
    let pkg = if rng.chance(50) {
        "ring(n = 4"
    } else {
        "mesh(rows = 2, cols = 2"
    };
    let mut g = String::new();
    for i in 0..7 {
        g += &format!("  n{i} {{ params = {} KiB }}\n", rng.below(3));
    }
    for j in 1..7 {
        g += &format!("  n{} -> n{j}\n", j - 1);
        for i in 0..j - 1 {
            if rng.chance(20) {
                g += &format!("  n{i} -> n{j}\n");
            }
        }
    }
    let mut req: Vec<String> = STD.iter().filter(|_| rng.chance(50)).map(|s| s.to_string()).collect();
    req.push(if rng.chance(50) {
        format!("link_edges({})", rng.below(4))
    } else {
        format!("link_time({} ns)", 1000 + rng.below(4000))
    });
    format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::{{ring, mesh}}\n{USER_RULES}\
         let t = {pkg}, memory = 4 KiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{\n{g}}}\n\
         partition g onto t {{ require {} }}\n",
        req.join(", ")
    )
}

#[test]
fn link_sums_past_the_generic_table_agree_with_exhaustive_search() {
    let mut rng = Lcg(0x11c);
    let (mut sat, mut unsat, mut cuts) = (0, 0, 0);
    for _ in 0..60 {
        let text = link_program(&mut rng);
        let p = compile(&text);
        let queries: Vec<Vec<(u32, Vec<u32>)>> = std::iter::once(vec![])
            .chain((0..3).map(|_| random_decisions(&mut rng, &p)))
            .collect();
        let mut native = SatOracle::new(&p, true);
        let mut generic = SatOracle::new(&p, false);
        for q in &queries {
            let a = judge(&p, q, &native.solve(&p, q), &text, "native");
            let b = judge(&p, q, &generic.solve(&p, q), &text, "generic");
            assert_eq!(a, b, "{text}\n{q:?}");
            if a {
                sat += 1;
            } else {
                unsat += 1;
            }
        }
        assert_eq!(native.stats().fallbacks, 0, "a cut fell back to a whole model\n{text}");
        cuts += native.stats().cuts;
    }
    println!("sat {sat}, unsat {unsat}, native cuts {cuts}");
    assert!(
        sat > 20 && unsat > 20 && cuts > 0,
        "sat {sat}, unsat {unsat}, cuts {cuts}"
    );
}

#[test]
fn a_node_too_heavy_for_any_chip_names_memory_capacity() {
    let p = compile(&format!(
        "{}let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a {{ params = 2 MiB }} -> b }}\n\
         partition g onto t {{ require acyclic_flow, no_skip, triangle_dependency, memory_capacity }}\n",
        common::HEADER
    ));
    for native in [true, false] {
        let mut o = SatOracle::new(&p, native);
        match o.solve(&p, &[]) {
            SatAnswer::Unsat(core) => {
                let names: Vec<&str> = core
                    .constraints
                    .iter()
                    .map(|&i| p.constraints[i].name.as_str())
                    .collect();
                assert_eq!(names, ["memory_capacity"], "native = {native}");
                assert!(core.decisions.is_empty());
            }
            SatAnswer::Sat(pl) => panic!("Sat {pl:?}"),
        }
    }
}

#[test]
fn a_fractional_budget_is_counted_not_only_cut() {
    // 24 operations of 0.26 ms each under 1 ms a chip on 8 chips: exactly
    // three a chip. Counted in 64ths of the budget (16 units and a
    // remainder each), four on a chip already overflow, so the witness needs
    // no cut; left to lazy cuts of overflowing sets, the SAT solver
    // crowds chips round after round.
    let nodes: String = (0..24).map(|i| format!("  n{i} {{ flops = 260 MFLOP }}\n")).collect();
    let p = compile(&format!(
        "{}constraint budget(t: time) {{ forall d in chips: sum(u in nodes where chip(u) == d) u.flops / d.compute <= t }}\n\
         let t = ring(n = 8, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{\n{nodes}}}\n\
         partition g onto t {{ require budget(1 ms) }}\n",
        common::HEADER
    ));
    let mut o = SatOracle::new(&p, true);
    let SatAnswer::Sat(pl) = o.solve(&p, &[]) else {
        panic!("three a chip fit")
    };
    assert!(mcm_solver::check(&p.graph, &p.package, &p.constraints, &pl).is_empty());
    let st = o.stats();
    // Without the counter: 50 solves and 672 cuts.
    assert!(st.cuts == 0 && st.solves <= 2, "{st:?}");
}

#[test]
fn a_count_is_counted_not_only_cut() {
    // 16 nodes, at most 4 a chip on 4 chips: any 5 on a chip overflow, a
    // cut each when left to lazy cuts; the count's own counter (its budget
    // apart from memory's) leaves none to cut.
    let nodes: String = (0..16).map(|i| format!("  n{i}\n")).collect();
    let p = compile(&format!(
        "{}constraint at_most(k: int) {{ forall d in chips: count(u in nodes where chip(u) == d) <= k }}\n\
         let t = ring(n = 4, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{\n{nodes}}}\n\
         partition g onto t {{ require at_most(4) }}\n",
        common::HEADER
    ));
    let stats = |opts: &SatOptions| {
        let mut o = SatOracle::with_options(&p, opts);
        let SatAnswer::Sat(pl) = o.solve(&p, &[]) else {
            panic!("four a chip fit")
        };
        assert!(mcm_solver::check(&p.graph, &p.package, &p.constraints, &pl).is_empty());
        o.stats()
    };
    let counted = stats(&SatOptions::default());
    assert!(counted.cuts == 0 && counted.solves <= 2, "{counted:?}");
    let cut = stats(&SatOptions {
        count_counters: 0,
        ..SatOptions::default()
    });
    assert!(cut.cuts > 0, "{cut:?}");
}

#[test]
fn two_rules_that_only_conflict_together_are_both_named() {
    // Everything on chip 1 leaves chip 0 empty below a used chip.
    let p = compile(&format!(
        "{}constraint on_one() {{ forall u in nodes: chip(u) == 1 }}\n\
         let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a -> b  b -> c }}\n\
         partition g onto t {{ require acyclic_flow, no_skip, memory_capacity, triangle_dependency, on_one }}\n",
        common::HEADER
    ));
    for native in [true, false] {
        let mut o = SatOracle::new(&p, native);
        match o.solve(&p, &[]) {
            SatAnswer::Unsat(core) => {
                let mut names: Vec<&str> = core
                    .constraints
                    .iter()
                    .map(|&i| p.constraints[i].name.as_str())
                    .collect();
                names.sort_unstable();
                assert_eq!(names, ["no_skip", "on_one"], "native = {native}");
            }
            SatAnswer::Sat(pl) => panic!("Sat {pl:?}"),
        }
    }
    // Two weights that cannot share the single chip (the language brief's test).
    let p = compile(&format!(
        "{}let t = ring(n = 1, memory = 3 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a {{ params = 2 MiB }} -> b {{ params = 2 MiB }} }}\n\
         partition g onto t {{ require acyclic_flow, no_skip, triangle_dependency, memory_capacity }}\n",
        common::HEADER
    ));
    let mut o = SatOracle::new(&p, true);
    match o.solve(&p, &[]) {
        SatAnswer::Unsat(core) => {
            let names: Vec<&str> = core
                .constraints
                .iter()
                .map(|&i| p.constraints[i].name.as_str())
                .collect();
            assert_eq!(names, ["memory_capacity"]);
        }
        SatAnswer::Sat(pl) => panic!("Sat {pl:?}"),
    }
}

#[test]
fn a_link_rule_in_a_conflict_is_named() {
    // Two weights that cannot share a chip, joined by an edge that may cross
    // no link, on a one-way ring: each rule alone, or any two, can be met.
    let p = compile(&format!(
        "{}{USER_RULES}let t = ring(n = 3, memory = 3 KiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a {{ params = 2 KiB }} -> b {{ params = 2 KiB }} }}\n\
         partition g onto t {{ require acyclic_flow, memory_capacity, link_edges(0) }}\n",
        common::HEADER
    ));
    let lazy = SatOptions {
        table_limit: 0,
        ..SatOptions::default()
    };
    for (what, mut o) in [
        ("native", SatOracle::new(&p, true)),
        ("generic", SatOracle::new(&p, false)),
        ("link encoding", SatOracle::with_options(&p, &lazy)),
    ] {
        match o.solve(&p, &[]) {
            SatAnswer::Unsat(core) => {
                let mut names: Vec<&str> = core
                    .constraints
                    .iter()
                    .map(|&i| p.constraints[i].name.as_str())
                    .collect();
                names.sort_unstable();
                assert_eq!(names, ["acyclic_flow", "link_edges", "memory_capacity"], "{what}");
            }
            SatAnswer::Sat(pl) => panic!("{what}: Sat {pl:?}"),
        }
    }
}

#[test]
fn a_core_names_the_conflicting_decisions() {
    // a -> b -> c on a 3-chip ring: a on chip 1 and c on chip 0 break acyclic_flow.
    let p = compile(&format!(
        "{}let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a -> b  b -> c  d }}\n\
         partition g onto t {{ require acyclic_flow, no_skip, triangle_dependency, memory_capacity }}\n",
        common::HEADER
    ));
    let mut o = SatOracle::new(&p, true);
    assert!(matches!(o.solve(&p, &[]), SatAnswer::Sat(_)));
    let decisions = vec![(3, vec![0]), (0, vec![1]), (1, vec![0, 1]), (2, vec![0])];
    match o.solve(&p, &decisions) {
        SatAnswer::Unsat(core) => {
            assert!(core.decisions.contains(&1) && core.decisions.contains(&3), "{core:?}");
            assert!(!core.decisions.contains(&0), "{core:?}");
            let names: Vec<&str> = core
                .constraints
                .iter()
                .map(|&i| p.constraints[i].name.as_str())
                .collect();
            assert!(names.contains(&"acyclic_flow"), "{names:?}");
        }
        SatAnswer::Sat(pl) => panic!("Sat {pl:?}"),
    }
    // A decision with no allowed chip is a core on its own.
    match o.solve(&p, &[(0, vec![0]), (1, vec![])]) {
        SatAnswer::Unsat(core) => assert_eq!(core.decisions, [1]),
        SatAnswer::Sat(pl) => panic!("Sat {pl:?}"),
    }
    // Witnesses agree with the decisions they answer.
    match o.solve(&p, &[(1, vec![1]), (3, vec![0, 2])]) {
        SatAnswer::Sat(pl) => assert!(pl.chip(1) == 1 && pl.chip(3) != 1),
        SatAnswer::Unsat(core) => panic!("Unsat {core:?}"),
    }
}

#[test]
fn suggest_takes_a_valid_placement_as_the_witness() {
    let p = compile(&format!(
        "{}let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a -> b  b -> c }}\n\
         partition g onto t {{ require acyclic_flow, no_skip, triangle_dependency, memory_capacity }}\n",
        common::HEADER
    ));
    let mut o = SatOracle::new(&p, true);
    let mine = Placement::new(vec![0, 1, 2]);
    o.suggest(&p, &mine);
    match o.solve(&p, &[(2, vec![2])]) {
        SatAnswer::Sat(pl) => assert_eq!(pl, mine),
        SatAnswer::Unsat(core) => panic!("Unsat {core:?}"),
    }
    // An invalid suggestion changes no answer: the witness is still valid,
    // and not the suggestion.
    let invalid = Placement::new(vec![2, 0, 1]);
    assert!(!Checker::new(&p.graph, &p.package, &invalid).all_hold(&p.constraints));
    o.suggest(&p, &invalid);
    match o.solve(&p, &[(2, vec![1])]) {
        SatAnswer::Sat(pl) => {
            assert!(
                Checker::new(&p.graph, &p.package, &pl).all_hold(&p.constraints),
                "{pl:?}"
            );
            assert_eq!(pl.chip(2), 1);
            assert_ne!(pl, invalid);
        }
        SatAnswer::Unsat(core) => panic!("Unsat {core:?}"),
    }
}

/// Timings on BERT-large over a 36-chip ring (run with `--ignored --nocapture`).
#[test]
#[ignore]
fn bert_timings() {
    use std::time::Instant;
    let path = common::root().join("examples/bert_ring36.mcm");
    let t = Instant::now();
    let c = mcm_lang::compile_file(&path);
    let p = c.problem(Some("bert")).expect("bert");
    println!("compile {:?}", t.elapsed());
    for (what, opts) in [
        (
            "without chip-level arcs",
            SatOptions {
                chip_flows: false,
                ..SatOptions::default()
            },
        ),
        (
            "without memory counters",
            SatOptions {
                memory_counters: 0,
                ..SatOptions::default()
            },
        ),
    ] {
        let s = SatOracle::with_options(p, &opts).stats();
        println!("encoding {what}: {} vars, {} clauses", s.vars, s.clauses);
    }
    let t = Instant::now();
    let mut o = SatOracle::new(p, true);
    println!("encode {:?} {:?}", t.elapsed(), o.stats());
    let t = Instant::now();
    let w = match o.solve(p, &[]) {
        SatAnswer::Sat(w) => w,
        SatAnswer::Unsat(core) => panic!("unsat {core:?}"),
    };
    println!("first solve {:?} {:?}", t.elapsed(), o.stats());
    println!("chips used {}", w.chips.iter().max().unwrap() + 1);
    let mut cold = SatOracle::with_options(
        p,
        &SatOptions {
            greedy_start: false,
            ..SatOptions::default()
        },
    );
    let t = Instant::now();
    let r = cold.solve(p, &[]);
    println!(
        "first solve without the greedy start: {:?}, sat={} {:?}",
        t.elapsed(),
        matches!(r, SatAnswer::Sat(_)),
        cold.stats()
    );
    let mut rng = Lcg(7);
    let n = p.graph.num_placed() as u64;
    let c = p.package.num_chips() as u64;
    for round in 0..5 {
        let mut dec: Vec<(u32, Vec<u32>)> = (0..50)
            .map(|_| {
                let u = rng.below(n) as u32;
                (u, vec![w.chip(u)])
            })
            .collect();
        let t = Instant::now();
        let r = o.solve(p, &dec);
        println!(
            "50 witness decisions: {:?} sat={}",
            t.elapsed(),
            matches!(r, SatAnswer::Sat(_))
        );
        for _ in 0..3 {
            let u = rng.below(n) as u32;
            let k = (w.chip(u) + 1 + rng.below(c - 1) as u32) % c as u32;
            dec.push((u, vec![k]));
        }
        let before = o.stats();
        let t = Instant::now();
        let r = o.solve(p, &dec);
        let s = o.stats();
        let what = match r {
            SatAnswer::Sat(_) => "sat".to_string(),
            SatAnswer::Unsat(core) => format!("unsat, core {core:?}"),
        };
        println!(
            "round {round}: +3 moved: {what} in {:?} (solves {}, cuts {})",
            t.elapsed(),
            s.solves - before.solves,
            s.cuts - before.cuts
        );
    }
    // Feasible moves: 50 witness decisions and one node moved by one chip.
    let mut times = Vec::new();
    let mut sats = 0;
    for _ in 0..20 {
        let mut dec: Vec<(u32, Vec<u32>)> = (0..50)
            .map(|_| {
                let u = rng.below(n) as u32;
                (u, vec![w.chip(u)])
            })
            .collect();
        let u = rng.below(n) as u32;
        let k = if w.chip(u) == 0 || rng.chance(50) {
            w.chip(u) + 1
        } else {
            w.chip(u) - 1
        };
        dec.push((u, vec![k.min(c as u32 - 1)]));
        let t = Instant::now();
        let r = o.solve(p, &dec);
        if matches!(r, SatAnswer::Sat(_)) {
            sats += 1;
        }
        times.push(t.elapsed());
        if std::env::var_os("SAT_VERBOSE").is_some() {
            let what = match r {
                SatAnswer::Sat(_) => "sat".to_string(),
                SatAnswer::Unsat(core) => format!("unsat {core:?}"),
            };
            println!("  moved {u} to {k}: {what} in {:?}", t.elapsed());
        }
    }
    times.sort();
    println!(
        "one node moved by one chip, 20 calls: {sats} sat, median {:?}, max {:?}",
        times[times.len() / 2],
        times[times.len() - 1]
    );
    // Engine-like: decisions accumulate in a random node order, each a chip
    // near the first witness's; a call every 25 decisions, a failing decision dropped.
    let mut order: Vec<u32> = (0..n as u32).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut dec: Vec<(u32, Vec<u32>)> = Vec::new();
    let mut times = Vec::new();
    let (mut sats, mut unsats) = (0, 0);
    let t_all = Instant::now();
    for (i, &u) in order.iter().enumerate() {
        let base = w.chip(u) as i64 + rng.below(3) as i64 - 1;
        dec.push((u, vec![base.clamp(0, c as i64 - 1) as u32]));
        if i % 25 == 24 {
            let t = Instant::now();
            match o.solve(p, &dec) {
                SatAnswer::Sat(_) => sats += 1,
                SatAnswer::Unsat(core) => {
                    unsats += 1;
                    let last = *core.decisions.last().expect("a decision in the core");
                    dec.truncate(last);
                }
            }
            times.push(t.elapsed());
        }
        if t_all.elapsed().as_secs() > 60 {
            println!("stopping after 60 s");
            break;
        }
    }
    times.sort();
    println!(
        "engine-like: {} calls ({sats} sat, {unsats} unsat), median {:?}, max {:?}, total {:?}",
        times.len(),
        times[times.len() / 2],
        times[times.len() - 1],
        t_all.elapsed()
    );
    println!("{:?}", o.stats());
}
