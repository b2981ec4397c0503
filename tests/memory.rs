//! Memory on large graphs: the peak resident memory of `check`, `sample`,
//! `solve` and `solve --strategy greedy` on a generated chain and tree, per
//! node (`mcmpart bench memory` gives the figures at a million nodes).

use crate::common;
use mcmpart::experiment::scale::{measure, write_problem, Shape};
use mcmpart::problem::{CmpOp, Formula, Placement, Term};
use mcmpart::solver::Checker;
use std::process::Command;

/// Large enough that the graph, not the program, makes the peak.
const NODES: usize = 200_000;

/// A graph small enough that its peak is the program's own (libraries,
/// the stdlib, buffers): taken off the large graph's peak, so that what is
/// bounded is what each node adds, as at a million nodes, where the
/// program's own share is a few bytes a node.
const SMALL: usize = 2_000;

/// Peak bytes a node: the kilobyte, for every command (the book's
/// performance chapter has the figures). Before the graph reader, the
/// grounding, the trail and the adjacency lists were made compact they
/// took 2.8, 3.2 and 3.4 KB a node on a chain of a million nodes, and
/// `solve` (auto) 3.8 KB a node at 100,000 nodes.
const MAX_BYTES_PER_NODE: u64 = 1024;

/// Runs `mcmpart ARGS` and gives its peak resident memory, after checking
/// it succeeded (its standard error is the failure message).
fn peak(dir: &std::path::Path, args: &[&str]) -> u64 {
    let err = dir.join("stderr.txt");
    let u = measure(
        Command::new(env!("CARGO_BIN_EXE_mcmpart"))
            .args(args)
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&err).expect("stderr file")),
    )
    .expect("run mcmpart");
    let msg = std::fs::read_to_string(&err).unwrap_or_default();
    assert_eq!(u.code, Some(0), "mcmpart {args:?}: {msg}");
    u.peak_rss
}

#[test]
fn check_sample_and_solve_stay_within_a_kilobyte_a_node() {
    for shape in [Shape::Chain, Shape::Tree] {
        let dir = common::scratch(&format!("memory-{}", shape.name()));
        let small_dir = common::scratch(&format!("memory-{}-small", shape.name()));
        let mcm = write_problem(&dir, shape, NODES, 1).expect("write the problem");
        let mcm = mcm.to_str().expect("a UTF-8 path");
        let small = write_problem(&small_dir, shape, SMALL, 1).expect("write the small problem");
        let small = small.to_str().expect("a UTF-8 path");
        let commands = |f: &str| -> Vec<Vec<String>> {
            [
                vec!["check", f],
                vec!["sample", f, "--out", "sample.json"],
                vec!["solve", f, "--out", "auto.json"],
                vec!["solve", f, "--strategy", "greedy", "--out", "greedy.json"],
            ]
            .iter()
            .map(|a| a.iter().map(|s| s.to_string()).collect())
            .collect()
        };
        for (args, small_args) in commands(mcm).into_iter().zip(commands(small)) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let small_args: Vec<&str> = small_args.iter().map(String::as_str).collect();
            let bytes = peak(&dir, &args);
            let own = peak(&small_dir, &small_args);
            let per_node = bytes.saturating_sub(own) / (NODES - SMALL) as u64;
            assert!(
                per_node <= MAX_BYTES_PER_NODE,
                "{args:?} on a {} of {NODES} nodes: peak {} MiB ({} MiB on {SMALL} nodes), {per_node} bytes a node",
                shape.name(),
                bytes >> 20,
                own >> 20,
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&small_dir);
    }
}

/// The formula with every `AnyNode` written out as the `or` it stands for.
fn expanded(f: &Formula) -> Formula {
    match f {
        Formula::AnyNode(op, k, ds) => Formula::Or(
            ds.clone()
                .map(|u| Formula::Cmp(*op, Term::Chip(u), Term::Const(*k)))
                .collect(),
        ),
        Formula::Implies(a, b) => Formula::Implies(Box::new(expanded(a)), Box::new(expanded(b))),
        other => other.clone(),
    }
}

#[test]
fn an_exists_over_consecutive_nodes_is_a_range_judged_as_its_or() {
    let c = common::compile_ok(&format!(
        "{}let p = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a {{ flops = 1 }} -> b -> c {{ flops = 1 }} }}\n\
         constraint busy_first() {{ exists u in nodes where u.flops > 0: chip(u) == 0 }}\n\
         partition g onto p {{\n    require no_skip, busy_first\n}}\n",
        common::HEADER
    ));
    let p = &c.problems[0];
    // no_skip, chip 1: (exists u: chip(u) >= 1) -> (exists v: chip(v) == 1), over nodes 0..3.
    let first = p.constraints[0].instances.get(1);
    let f = &first.formula;
    let any = |op, k| Box::new(Formula::AnyNode(op, k, 0..3));
    assert_eq!(*f, Formula::Implies(any(CmpOp::Ge, 1.0), any(CmpOp::Eq, 1.0)));
    // Nodes 0 and 2 only: not consecutive, an `or` of two comparisons.
    let second = p.constraints[1].instances.get(0);
    let g = &second.formula;
    let on0 = |u| Formula::Cmp(CmpOp::Eq, Term::Chip(u), Term::Const(0.0));
    assert_eq!(*g, Formula::Or(vec![on0(0), on0(2)]));
    // Judged as the `or` it stands for, on every placement.
    for code in 0..27u32 {
        let chips = Placement::new(vec![code % 3, code / 3 % 3, code / 9]);
        let checker = Checker::new(&p.graph, &p.package, &chips);
        for inst in p.constraints[0].instances.iter() {
            assert_eq!(
                checker.holds(&inst.formula),
                checker.holds(&expanded(&inst.formula)),
                "{:?} on {:?}",
                inst.formula,
                chips.chips
            );
        }
    }
}
