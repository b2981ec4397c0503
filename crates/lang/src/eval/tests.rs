//! The evaluator: `and`, `or` and `->` decided by their left side, a step
//! budget per unit of work, and heterogeneous packages (`include`, `set`,
//! the standard torus).

use crate::{compile_str, compile_with_step_limit, loader, Compiled};
use mcm_core::diag::render_text;
use mcm_core::quantity::Scalar;
use std::path::Path;

fn compile(text: &str) -> Compiled {
    compile_str("t.mcm", text, Path::new("."))
}

fn ok(text: &str) -> Compiled {
    let c = compile(text);
    assert!(c.ok(), "{}\n{text}", render_text(&c.program.sources, &c.diags));
    c
}

fn errors(c: &Compiled) -> String {
    assert!(!c.ok(), "expected errors, the program compiled");
    render_text(&c.program.sources, &c.diags)
}

const PROBLEM: &str = "use std::topologies::ring\n\
    let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
    let g = graph { a -> b }\n";

/// `1 / 0 == 1` fails when evaluated: each program compiles only if the
/// operator left it alone.
#[test]
fn and_or_and_implies_leave_the_right_side_alone_once_the_left_decides() {
    let right = "1 / 0 == 1";
    for rule in [
        format!("forall u in nodes where false and {right}: chip(u) == 0"),
        format!("exists u in nodes where false and {right}: chip(u) == 0"),
        format!("sum(u in nodes where false and {right}) u.flops == 0 FLOP"),
        format!("count(u in nodes where false and {right}) == 0"),
        format!("forall u in nodes where true or {right}: chip(u) >= 0"),
        format!("forall u in nodes: false -> {right}"),
        format!("forall u in nodes: u.flops > 0 FLOP and {right}"),
        format!("forall u in nodes: u.flops == 0 FLOP or {right}"),
    ] {
        let src = format!("{PROBLEM}constraint r() {{\n    {rule}\n}}\npartition g onto t {{ require r }}\n");
        ok(&src);
    }
    ok(&format!("let x = false and {right}\nlet y = true or {right}\n"));
    // Where the left side does not decide, the right side is evaluated.
    let e = errors(&compile(&format!("let x = true and {right}\n")));
    assert!(e.contains("division by zero"), "{e}");
}

/// `busy` takes about 600 steps, `slow` about 2,000, under a budget of 1,000.
fn steps_program(order: &[&str]) -> String {
    let mut src = format!(
        "{PROBLEM}constraint busy() {{\n    forall i in 0..600: i >= 0\n}}\n\
         constraint slow() {{\n    forall i in 0..2000: i >= 0\n}}\n"
    );
    for (k, rule) in order.iter().enumerate() {
        src += &format!("partition g onto t as p{k} {{ require {rule} }}\n");
    }
    src
}

fn with_budget(src: &str, steps: u64) -> Compiled {
    let (program, diags) = loader::load_str("t.mcm", src, Path::new("."));
    compile_with_step_limit(program, diags, None, steps)
}

#[test]
fn each_problem_has_a_step_budget_of_its_own() {
    // Twice 600 steps: over the budget together, within it each.
    let c = with_budget(&steps_program(&["busy", "busy"]), 1000);
    assert!(c.ok(), "{}", render_text(&c.program.sources, &c.diags));
    assert_eq!(c.problems.len(), 2);
    // A rule over the budget fails its own problem, and only that one.
    let c = with_budget(&steps_program(&["slow", "busy", "busy"]), 1000);
    let e = errors(&c);
    assert_eq!(c.diags.len(), 1, "{e}");
    assert!(e.contains("evaluation took too many steps"), "{e}");
    let names: Vec<&str> = c.problems.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["p1", "p2"]);
}

#[test]
fn each_required_rule_has_a_step_budget_of_its_own() {
    let src = format!(
        "{PROBLEM}constraint busy() {{\n    forall i in 0..600: i >= 0\n}}\n\
         constraint busy2() {{\n    forall i in 0..600: i >= 0\n}}\n\
         partition g onto t {{ require busy, busy2 }}\n"
    );
    let c = with_budget(&src, 1000);
    assert!(c.ok(), "{}", render_text(&c.program.sources, &c.diags));
}

#[test]
fn set_gives_one_chip_of_a_group_other_attributes() {
    let c = ok("topology t() {\n    chips tile[4] { memory = 1 MiB, compute = 1 TFLOP/s }\n    \
                for i in 0..4 {\n        if i % 3 == 0 {\n            set tile[i] { memory = 4 MiB, kind = \"big\" }\n        }\n    }\n}\n\
                let p = t()\n");
    let p = &c.packages[0].1;
    let mib = |x: f64| Some(x * 1048576.0);
    let memory: Vec<Option<f64>> = (0..4).map(|i| p.chip_memory(i)).collect();
    assert_eq!(memory, [mib(4.0), mib(1.0), mib(1.0), mib(4.0)]);
    // The group's other attributes stay; the new one is added.
    assert_eq!(p.chip_compute(3), Some(1e12));
    assert_eq!(p.chip_attr(0, "kind"), Some(&Scalar::Str("big".into())));
    assert_eq!(p.chip_attr(1, "kind"), None);
}

#[test]
fn set_is_checked_like_a_link() {
    let head = "topology t() {\n    chips tile[2] { memory = 1 MiB, compute = 1 TFLOP/s }\n    ";
    for (stmt, says) in [
        ("set tiles[0] { memory = 2 MiB }", "unknown chip group `tiles`"),
        ("set tile[2] { memory = 2 MiB }", "`tile[2]` is out of range"),
        ("set tile { memory = 2 MiB }", "`tile` is a group of chips"),
        (
            "set tile[0] { memory = 2 GB/s }",
            "chip attribute `memory` is bytes elsewhere, a rate here",
        ),
        ("set tile[0] { memroy = 2 MiB }", "unknown chip attribute `memroy`"),
    ] {
        let e = errors(&compile(&format!("{head}{stmt}\n}}\nlet p = t()\n")));
        assert!(e.contains(says), "{stmt}: {e}");
    }
}

#[test]
fn include_builds_another_topology_into_this_one() {
    let c = ok("use std::topologies::torus\n\
                topology corners(big: bytes) {\n    \
                include torus(rows = 4, cols = 4, memory = 16 MiB, compute = 1 TFLOP/s, bandwidth = 25 GB/s)\n    \
                for r in 0..2 {\n        for c in 0..2 {\n            \
                set tile[r * 12 + c * 3] { memory = big, compute = 4 TFLOP/s }\n        }\n    }\n}\n\
                let p = corners(big = 64 MiB)\n");
    let p = &c.packages[0].1;
    assert_eq!(p.num_chips(), 16);
    assert_eq!(p.links.len(), 64);
    let big: Vec<u32> = (0..16).filter(|&i| p.chip_compute(i) == Some(4e12)).collect();
    assert_eq!(big, [0, 3, 12, 15]);
    assert_eq!(p.chip_memory(15), Some(64.0 * 1048576.0));
    assert_eq!(p.chip_memory(5), Some(16.0 * 1048576.0));
    assert!(p.name.starts_with("corners("), "{}", p.name);
}

#[test]
fn include_is_refused_for_what_is_no_topology_and_for_itself() {
    let e = errors(&compile(
        "let g = graph { a }\ntopology t() {\n    include graph(\"x.json\")\n}\nlet p = t()\n",
    ));
    assert!(e.contains("`include` takes a topology"), "{e}");
    let e = errors(&compile("topology t() {\n    include t()\n}\nlet p = t()\n"));
    assert!(e.contains("topology `t` builds itself"), "{e}");
    // Two groups of one name: the included one and this one's.
    let e = errors(&compile(
        "use std::topologies::ring\ntopology t() {\n    \
         include ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n    \
         chips die[1] { memory = 1 MiB, compute = 1 TFLOP/s }\n}\nlet p = t()\n",
    ));
    assert!(e.contains("chip group `die` is declared twice"), "{e}");
}

#[test]
fn the_standard_torus_closes_its_rows_and_columns() {
    let torus = |rows: u32, cols: u32| {
        let c = ok(&format!(
            "use std::topologies::torus\n\
             let p = torus(rows = {rows}, cols = {cols}, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n"
        ));
        c.packages[0].1.clone()
    };
    let p = torus(4, 4);
    assert_eq!((p.num_chips(), p.links.len()), (16, 64));
    // Corner to corner: one wrap-around link each way, two hops.
    assert_eq!(p.hops(0, 15), Some(2));
    for (a, b) in [(0, 3), (3, 0), (0, 12), (12, 0)] {
        assert!(p.link(a, b).is_some(), "{a} -> {b}");
    }
    // Every chip has four neighbours, each both ways.
    for i in 0..16 {
        assert_eq!(p.links.iter().filter(|l| l.src == i).count(), 4, "chip {i}");
    }
    // Rows or columns of two or one: the mesh's links, none twice.
    assert_eq!(torus(2, 2).links.len(), 8);
    assert_eq!(torus(1, 5).links.len(), 10);
    assert_eq!(torus(3, 1).links.len(), 6);
    assert_eq!(torus(1, 1).links.len(), 0);
}
