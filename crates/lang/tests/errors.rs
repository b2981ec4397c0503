//! Each kind of error, with its rendered diagnostic checked: what it says,
//! where it points, and what it suggests.

use crate::common;

use common::{errors, errors_in, scratch, HEADER};

fn assert_has(out: &str, parts: &[&str]) {
    for p in parts {
        assert!(out.contains(p), "missing {p:?} in:\n{out}");
    }
}

#[test]
fn syntax_error_points_at_the_token() {
    let out = errors("constraint c() {\n    forall u in nodes chip(u) >= 0\n}\n");
    assert_has(&out, &["mcm::syntax", "syntax error", "test.mcm:2:23", "found `chip`"]);
}

#[test]
fn every_item_with_a_syntax_error_is_reported_in_one_run() {
    let out = errors("topology t( {\n}\nlet ok = 1\nconstraint y() { forall u in nodes chip(u) }\nlet z = 3 +\n");
    assert_eq!(out.matches("mcm::syntax").count(), 3, "{out}");
    assert_has(&out, &["test.mcm:1:", "test.mcm:4:", "test.mcm:6:"]);
}

#[test]
fn unknown_names_suggest_the_nearest_known_one() {
    let out = errors(&format!(
        "{HEADER}let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a -> b }}\npartition g onto t {{ require no_skp }}\n"
    ));
    assert_has(
        &out,
        &["unknown constraint `no_skp`", "did you mean `no_skip`?", "test.mcm:5:"],
    );

    let out = errors(&format!(
        "{HEADER}let t = rign(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n"
    ));
    assert_has(&out, &["unknown function or topology `rign`", "did you mean `ring`?"]);

    let out = errors("constraint c() { forall u in nodes: u.parms >= 0 B }\n");
    assert_has(&out, &["unknown node attribute `parms`", "did you mean `params`?"]);

    let out = errors("use std::placement::{no_skp}\n");
    assert_has(
        &out,
        &[
            "`no_skp` is not defined in `stdlib/placement.mcm`",
            "did you mean `no_skip`?",
        ],
    );

    let out = errors("use std::placment::no_skip\n");
    assert_has(
        &out,
        &["unknown standard module `std::placment`", "did you mean `placement`?"],
    );

    let out = errors("constraint c() { forall d in chip: d >= 0 }\n");
    assert_has(&out, &["unknown domain `chip`", "did you mean `chips`?"]);
}

#[test]
fn unit_mismatch_shows_both_operands() {
    let out = errors("constraint c() { forall d in chips: 32 MiB <= 25 GB/s }\n");
    assert_has(
        &out,
        &[
            "mcm::units",
            "cannot compare bytes and a rate",
            "this is bytes",
            "this is a rate",
        ],
    );
    // Both spans are labelled: the underline covers both operands.
    assert!(out.contains("───┬──") || out.matches('┬').count() >= 2, "{out}");

    let out = errors("constraint c() { forall u in nodes: u.flops / 2 TFLOP/s <= 1 GB }\n");
    assert_has(
        &out,
        &["cannot compare a time and bytes", "the left is in s, the right in B"],
    );

    let out = errors(&format!(
        "{HEADER}let t = ring(n = 2, memory = 1, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n"
    ));
    assert_has(
        &out,
        &[
            "expected bytes, found an int",
            "numbers of bytes need a unit, e.g. `1 MiB`",
        ],
    );
}

#[test]
fn dimension_arithmetic_is_checked_and_accepted_where_right() {
    let ok = common::compile(
        "constraint c(limit: time) {\n    forall d in chips: sum(u in nodes where chip(u) == d) u.flops / d.compute <= limit\n}\n\
         constraint e() { forall e in edges: e.bytes / 25 GB/s <= 1 ms }\n",
    );
    assert!(
        ok.ok(),
        "{}",
        mcm_core::diag::render_text(&ok.program.sources, &ok.diags)
    );
    let out = errors("constraint c() { forall u in nodes: u.flops + u.params > 0 }\n");
    assert_has(&out, &["cannot add a flop and bytes"]);
}

#[test]
fn wrong_arity_shows_the_signature() {
    let out = errors(&format!(
        "{HEADER}let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s)\n"
    ));
    assert_has(
        &out,
        &[
            "mcm::arity",
            "topology `ring` is missing `bandwidth: rate`",
            "ring(n: int, memory: bytes",
        ],
    );

    let out = errors(&format!(
        "{HEADER}let t = ring(2, 1 MiB, 1 TFLOP/s, 1 GB/s, \"die\", 5)\n"
    ));
    assert_has(&out, &["`ring` takes 5 argument(s), 6 given", "extra argument"]);

    let out = errors(&format!(
        "{HEADER}constraint near(k: int) {{ forall (u, v) in edges: hops(chip(u), chip(v)) <= k }}\n\
         let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\nlet g = graph {{ a -> b }}\n\
         partition g onto t {{ require near }}\n"
    ));
    assert_has(&out, &["constraint `near` is missing `k: int`"]);

    let out = errors("constraint c() { forall u in nodes: chip(u, u) >= 0 }\n");
    assert_has(&out, &["`chip` takes 1 argument(s), 2 given", "chip(u: node) -> chip"]);
}

#[test]
fn cyclic_graphs_name_the_nodes_on_the_cycle() {
    let out = errors(&format!(
        "{HEADER}let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a -> b -> c -> b }}\npartition g onto t\n"
    ));
    assert_has(&out, &["mcm::graph", "cycle through `b`, `c`", "this graph"]);
    assert!(!out.contains("`a`"), "{out}");

    let dir = scratch("cycle");
    std::fs::write(
        dir.join("g.json"),
        r#"{"nodes": [{"id": "x"}, {"id": "y"}], "edges": [{"from": "x", "to": "y"}, {"from": "y", "to": "x"}]}"#,
    )
    .unwrap();
    let out = errors_in(
        &dir,
        &format!("{HEADER}let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\nlet g = graph(\"g.json\")\n"),
    );
    assert_has(&out, &["g.json", "cycle through `x`, `y`"]);
}

#[test]
fn a_missing_graph_file_names_the_file() {
    let dir = scratch("missing");
    let out = errors_in(&dir, &format!("{HEADER}let g = graph(\"nowhere/model.json\")\n"));
    assert_has(&out, &["cannot load graph", "nowhere/model.json", "test.mcm:3:9"]);
}

#[test]
fn graph_files_with_bad_content_name_the_id_or_line() {
    let dir = scratch("badgraph");
    let cases = [
        (
            r#"{"nodes": [{"id": "a"}, {"id": "a"}], "edges": []}"#,
            "duplicate node id `a`",
        ),
        (
            r#"{"nodes": [{"id": "a"}], "edges": [{"from": "a", "to": "b"}]}"#,
            "unknown node `b`",
        ),
        (
            r#"{"nodes": [{"id": "a", "params": -1}], "edges": []}"#,
            "node `a`: `params` is -1, which is not a non-negative integer",
        ),
        (
            r#"{"nodes": [{"id": "a", "flops": 1e30}], "edges": []}"#,
            "`flops` is 1e+30, which is more than a 64-bit count holds",
        ),
        ("{\"nodes\": [\n  {\"id\": \"a\",}\n]}", "line 2"),
        (
            r#"{"nodes": [{"id": "a"}], "edges": [{"from": "a", "to": "a"}]}"#,
            "self-loop on node `a`",
        ),
        (r#"{"edges": []}"#, "missing `nodes`"),
    ];
    for (i, (json, want)) in cases.iter().enumerate() {
        let f = format!("g{i}.json");
        std::fs::write(dir.join(&f), json).unwrap();
        let out = errors_in(&dir, &format!("let g = graph(\"{f}\")\n"));
        assert_has(&out, &[want, &f]);
    }
    // The place is said once, and in the words of a person's editor.
    std::fs::write(dir.join("cut.json"), "{\n").unwrap();
    let out = errors_in(&dir, "let g = graph(\"cut.json\")\n");
    assert_has(&out, &["cut.json: line 2, column 1: EOF while parsing an object"]);
    assert!(!out.contains("at line"), "{out}");
    std::fs::write(dir.join("bad.json.gz"), b"\x1f\x8bnot really gzip").unwrap();
    let out = errors_in(&dir, "let g = graph(\"bad.json.gz\")\n");
    assert_has(&out, &["not valid gzip", "bad.json.gz"]);
}

#[test]
fn a_duplicate_node_in_an_inline_graph_attribute_is_reported() {
    let out = errors("let g = graph { a { flops = 1 } -> b  a { flops = 2 } }\n");
    assert_has(&out, &["`flops` of node `a` is set twice", "first here"]);
}

#[test]
fn several_independent_errors_are_all_reported() {
    let out = errors(&format!(
        "{HEADER}let a = 1 MiB + 2 GB/s\nlet b = rign(n = 1)\nconstraint c() {{ forall d in chips: d.memry >= 0 B }}\n"
    ));
    assert_has(
        &out,
        &[
            "cannot add bytes and a rate",
            "unknown function or topology `rign`",
            "unknown chip attribute `memry`",
        ],
    );
}

#[test]
fn out_of_range_chip_indices_in_a_topology_are_caught() {
    let out = errors(
        "topology bad(n: int) {\n    chips die[n] { memory = 1 MiB }\n    for i in 0..n { link die[i] -> die[i+1] }\n}\nlet p = bad(n = 3)\n",
    );
    assert_has(
        &out,
        &[
            "`die[3]` is out of range: `die` has 3 chips",
            "while building `bad` here",
        ],
    );
}

#[test]
fn test_blocks_with_unknown_nodes_or_chips_are_errors() {
    let out = errors(&format!(
        "{HEADER}test \"t\" {{\n    let g = graph {{ a -> b }}\n    let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         place g onto t {{ a: 0, bb: 5 }}\n    expect valid\n}}\n"
    ));
    assert_has(&out, &["graph `g` has no node `bb`", "did you mean `b`?"]);
    let out = errors(&format!(
        "{HEADER}test \"t\" {{\n    let g = graph {{ a -> b }}\n    let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         place g onto t {{ a: 0, b: 5 }}\n    expect valid\n}}\n"
    ));
    assert_has(&out, &["chip 5 does not exist", "the package has chips 0..2"]);
    let out = errors(&format!("{HEADER}test \"t\" {{\n    let g = graph {{ a -> b }}\n}}\n"));
    assert_has(&out, &["has no `expect` line"]);
}

#[test]
fn context_errors_explain_where_things_belong() {
    let out = errors("let x = count(u in nodes)\n");
    assert_has(&out, &["`nodes` only exists inside a constraint"]);
    let out = errors("let x = chip(1)\n");
    assert_has(&out, &["`chip` depends on a placement"]);
    let out = errors("constraint c() { forall u in nodes: nodes == 1 }\n");
    assert_has(&out, &["`nodes` is a domain, not a value"]);
}

#[test]
fn a_topology_that_builds_itself_is_refused() {
    let out = errors("topology t() { let p = t() }\nlet x = t()\n");
    assert_has(&out, &["topology `t` builds itself"]);
}

#[test]
fn an_attribute_has_one_type_everywhere() {
    let out = errors("topology t() {\n  chips a { sram = 0 }\n  chips b[2] { sram = 8 MiB }\n}\n");
    assert_has(&out, &["chip attribute `sram` is an int elsewhere, bytes here"]);
}

#[test]
fn a_failed_let_is_reported_once() {
    let dir = scratch("once");
    let c = common::compile_in(
        &dir,
        &format!(
            "{HEADER}let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
             let m = graph(\"missing.json\")\npartition m onto t\n"
        ),
    );
    assert_eq!(c.diags.len(), 1, "{:?}", c.diags);
}

#[test]
fn small_mistakes_get_specific_messages() {
    let out = errors(&format!(
        "{HEADER}let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a -> b }}\npartition g onto t {{ maximize latency }}\n"
    ));
    assert_has(
        &out,
        &["`maximize latency` goes the wrong way", "write `minimize latency`"],
    );
    let out = errors("constraint c() { forall u in nodes: u.op < \"b\" }\n");
    assert_has(&out, &["str values are only compared with == and !="]);
    let out = errors("use std\n");
    assert_has(&out, &["`use std` needs a module"]);
    let out = errors("let x: bytes = 3 GB/s\n");
    assert_has(&out, &["expected bytes, found a rate"]);
    let out = errors("constraint c() { forall u in nodes: chip(u).name != \"x\" }\ntopology t() { chips c[1] }\npartition graph { a } onto t() { require c }\n");
    assert_has(&out, &["the name of a placement-dependent chip cannot be compared"]);
}

#[test]
fn lets_with_types_and_defaults_that_use_earlier_parameters_are_accepted() {
    common::compile_ok(
        "let m: bytes = 3 MiB\nlet n: int = 2\n\
         topology pair(n: int = 2, memory: bytes = 1 MiB, half: bytes = memory / 2) {\n  chips c[n] { memory = half }\n}\n\
         let p = pair()\nconstraint slack(f: real = 1.5) { forall d in chips: d.memory * f >= 0 B }\n",
    );
}

/// A misspelled name far longer than any real one gets no suggestion (edit
/// distances grow with the square of the length: a million characters hung).
#[test]
fn a_very_long_unknown_name_is_reported_without_a_suggestion() {
    let long = "a".repeat(100_000);
    let out = errors(&format!("let {long} = 1\nlet y = {long}b\n"));
    assert_has(&out, &["mcm::name", "unknown name `aaaa"]);
    assert!(!out.contains("did you mean"), "{}", &out[..out.len().min(300)]);
}

/// Grounding counts each instance of a `forall` against the step limit, as
/// evaluation does: 14 nested quantifiers over 4 chips (4^14 instances) end
/// with an error at the constraint instead of running for minutes.
#[test]
fn nested_foralls_hit_the_step_limit() {
    let vars: Vec<String> = (0..14).map(|i| format!("x{i}")).collect();
    let body = vars
        .iter()
        .fold("true".to_string(), |acc, v| format!("forall {v} in chips: {acc}"));
    let out = errors(&format!(
        "{HEADER}constraint deep() {{ {body} }}\n\
         let t = ring(n = 4, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a -> b }}\npartition g onto t {{ require deep }}\n"
    ));
    assert_has(
        &out,
        &["evaluation took too many steps", "while grounding `deep` required here"],
    );
}

/// Numbers a float cannot hold, and a package of no chips, are errors at
/// their source instead of `inf` / `0` taken silently.
#[test]
fn infinite_numbers_and_empty_packages_are_refused() {
    for (text, want) in [
        ("let x = 1e999\n", "`1e999` is not a number this tool can hold"),
        ("let b = 1e-400 GB/s\n", "`1e-400` is not a number this tool can hold"),
        ("let c = 1e308 TFLOP/s\n", "`1e308` is not a number this tool can hold"),
        ("let m = 1e200 GB * 1e200\n", "the result is inf"),
    ] {
        assert_has(&errors(&format!("{HEADER}{text}")), &[want, "test.mcm:"]);
    }
    let out = errors(&format!(
        "{HEADER}let t = ring(n = 0, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{ a -> b }}\npartition g onto t {{ require no_skip }}\n"
    ));
    assert_has(&out, &["the package has no chips", "this package has 0 chips"]);
}

/// A word after a number is an unknown unit, with the nearest one named,
/// not a syntax error listing what the grammar expected.
#[test]
fn a_rate_without_its_slash_is_told_how_to_write_it() {
    let out = errors("let x = 8 GFLOPS\n")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(out.contains("unknown unit `GFLOPS`"), "{out}");
    assert!(out.contains("a rate is written with `/s`: `GFLOP/s`"), "{out}");
}

#[test]
fn unknown_units_name_the_nearest_one() {
    for (text, unit, near) in [
        ("let x = 3 Gb/s\n", "Gb/s", "GB/s"),
        ("let x = max(3 GB, 4 XB)\n", "XB", "KB"),
        ("let x = 2 us/s\n", "us/s", "us"),
    ] {
        let out = errors(text);
        assert_has(
            &out,
            &[
                &format!("unknown unit `{unit}`"),
                &format!("did you mean `{near}`?"),
                "PFLOP/s",
            ],
        );
        assert!(!out.contains("syntax error"), "{out}");
    }
    // A missing comma before a named argument is not taken for a unit.
    let out = errors("let x = ring(n = 4 memory = 1 MiB)\n");
    assert_has(&out, &["syntax error"]);
    assert!(!out.contains("unknown unit"), "{out}");
}

/// Integers are exact to 64 bits, and leaving them is an error, not a
/// panic or a rounding (`m / -1` at the least integer panicked; values past
/// 2^53 went through a float).
#[test]
fn integer_arithmetic_is_exact_and_overflow_is_an_error() {
    for expr in ["m / -1", "abs(m)", "-m", "m - 1", "m * 2"] {
        let out = errors(&format!("let m = -9223372036854775807 - 1\nlet x = {expr}\n"));
        assert_has(&out, &["mcm::eval", "integer overflow"]);
    }
    // The least integer over -1 leaves nothing.
    let c = common::compile_ok(
        "let m = -9223372036854775807 - 1\ntopology t() { chips c[m % -1 + 1] }\npartition graph { a } onto t()\n",
    );
    assert_eq!(c.problem(None).unwrap().package.num_chips(), 1);
    // 2^53 + 1 is odd.
    let c = common::compile_ok("topology t() { chips c[9007199254740993 % 2 + 1] }\npartition graph { a } onto t()\n");
    assert_eq!(c.problem(None).unwrap().package.num_chips(), 2);
}

/// Sizes are checked before anything is allocated: a chip count that
/// overflowed the check, more chips than the tables of C² entries hold, a
/// product of ranges, an item whose operators would nest past the stack.
#[test]
fn sizes_are_refused_before_they_are_allocated() {
    let out = errors("topology t() { chips a\n chips b[9223372036854775807] }\nlet p = t()\n");
    assert_has(
        &out,
        &["9223372036854775807 chips: a package has at most 4096 chips, and 1 are declared before"],
    );
    let out = errors("topology t() { chips a[4097] }\nlet p = t()\n");
    assert_has(&out, &["4097 chips"]);
    let out = errors("let x = count(i in 0..100000, j in 0..100000)\n");
    assert_has(&out, &["more than 4000000 bindings"]);
    // Integers compare exactly past 2^53 too.
    let c = common::compile_ok(
        "let same = count(i in 0..1 where 9007199254740993 == 9007199254740992)\n\
         topology t() { chips c[same + 1] }\npartition graph { a } onto t()\n",
    );
    assert_eq!(c.problem(None).unwrap().package.num_chips(), 1);
    for deep in [
        format!("let x = {}true\n", "not ".repeat(70_000)),
        format!("let x = 1{}\n", " + 1".repeat(70_000)),
        format!("let x = true{}\n", " -> true".repeat(35_000)),
        format!("let x = count({}true)\n", "forall i in 0..1: ".repeat(70_000)),
    ] {
        let out = errors(&deep);
        // Named, not drawn: the place is far along one line.
        assert_has(&out, &["a file with more than 60000 operators", "(at test.mcm:1:"]);
    }
    // Lines that start with an item's keyword do not restart the count
    // (`test` continues the expression here), nor does a string cut there.
    let lines = format!("let test = 1\nlet x = 1\n{}", "test + 1 + 1 + 1 + 1\n".repeat(20_000));
    assert_has(&errors(&lines), &["a file with more than 60000 operators"]);
}
