//! The front end returns errors, never panics, on arbitrary and mutated
//! input: programs, graph files and partition files (the programs' test
//! blocks are run by the root's tests/fuzz_run.rs).

use crate::common;

use common::mutate::{apply, edit, seeds, TOKENS};
use mcm_core::graph::{parse_graph_json, Graph, Node};
use mcm_solver::{check, node_order, sample, Options, Order, Solver};
use proptest::prelude::*;
use rand::SeedableRng;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,300}") {
        let _ = common::compile(&s);
    }

    #[test]
    fn token_soup_never_panics(toks in proptest::collection::vec(0..TOKENS.len(), 0..60)) {
        let s: Vec<&str> = toks.iter().map(|t| TOKENS[*t]).collect();
        let _ = common::compile(&s.join(" "));
    }

    /// The formatter refuses what does not parse and keeps the meaning of
    /// what does, idempotently; the editor's queries answer at any offset.
    #[test]
    fn mutated_programs_format_and_answer_editors(seed in 0usize..5, edits in proptest::collection::vec(edit(), 1..6)) {
        let text = apply(&seeds()[seed], &edits);
        if let Ok(formatted) = mcm_lang::format::format_source(&text) {
            prop_assert_eq!(meaning(&formatted), meaning(&text));
            prop_assert_eq!(mcm_lang::format::format_source(&formatted).ok(), Some(formatted.clone()));
        }
        let c = common::compile(&text);
        for at in (0..=text.len()).step_by(13) {
            let _ = mcm_lang::ide::hover(&c, at);
            let _ = mcm_lang::ide::definition(&c, at);
            let _ = mcm_lang::ide::completions(Some(&c), &text, at);
        }
        let _ = mcm_lang::ide::symbols(&c);
    }

    #[test]
    fn mutated_graph_json_never_panics(edits in proptest::collection::vec(edit(), 1..6)) {
        let base = r#"{"name": "g", "nodes": [{"id": "a", "op": "x", "flops": 10, "params": 4, "output_bytes": 8},
            {"id": "b", "replicable": true}, {"id": "c", "flops": 3}],
            "edges": [{"from": "a", "to": "c", "bytes": 4}, {"from": "b", "to": "c"}]}"#;
        let _ = parse_graph_json(&apply(base, &edits));
    }

    #[test]
    fn mutated_partitions_never_panic(edits in proptest::collection::vec(edit(), 1..6)) {
        let g = Graph::new("g", vec![Node::new("a"), Node::new("b")], vec![(0, 1, None)]).unwrap();
        let base = r#"{"graph": "g", "chips": 2, "placement": {"a": 0, "b": 1}}"#;
        let _ = mcm_core::problem::parse_partition(&apply(base, &edits), &g, 2);
    }
}

/// A module's syntax tree without its spans.
fn meaning(text: &str) -> String {
    let Ok(m) = mcm_lang::parse::parse_module(0, text) else {
        return "error".into();
    };
    let debug = format!("{:?}", m.items);
    let mut out = String::new();
    let mut rest = debug.as_str();
    while let Some(i) = rest.find("Span {") {
        out.push_str(&rest[..i]);
        let close = rest[i..].find('}').map_or(rest.len(), |c| i + c + 1);
        rest = &rest[close..];
    }
    out + rest
}

/// Values for a package's capacities and rates, without their unit:
/// negative, zero, huge, computed, and ones no number can hold.
const MAGNITUDES: &[&str] = &[
    "1",
    "0",
    "-1",
    "-0",
    "1e300",
    "1e-300",
    "4 - 5",
    "0.5 * 3",
    "1e200 * 1e200",
    "0 / 0",
    "2 - 2",
    "9223372036854775807",
];

/// A package whose chips and links take the `i`th magnitudes, in the
/// stdlib's ring or a topology of the program's own (one attribute given
/// by its value, the others by their unit's default).
fn package_program(own: bool, m: usize, c: usize, b: usize) -> String {
    let (m, c, b) = (MAGNITUDES[m], MAGNITUDES[c], MAGNITUDES[b]);
    let package = if own {
        format!(
            "topology t() {{ chips x[2] {{ memory = ({m}) * 1 MiB, compute = ({c}) * 1 TFLOP/s }}\n\
             link x[0] <-> x[1] {{ bandwidth = ({b}) * 1 GB/s }} }}\nlet p = t()\n"
        )
    } else {
        format!(
            "let p = ring(n = 2, memory = ({m}) * 1 MiB, compute = ({c}) * 1 TFLOP/s, bandwidth = ({b}) * 1 GB/s)\n"
        )
    };
    format!(
        "{}{package}let g = graph {{ w {{ params = 1 KiB, replicable = true }} -> a {{ params = 2 KiB }} -> b }}\n\
         partition g onto p {{ require acyclic_flow, no_skip, triangle_dependency, memory_capacity }}\n",
        common::HEADER
    )
}

/// JSON values of every type, for fields that expect one.
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "4.0",
    "1.5",
    "1e400",
    "-0",
    "18446744073709551617",
    "\"1\"",
    "null",
    "true",
    "[]",
    "{}",
    "[1]",
    "{\"a\": 0}",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    /// A package with any capacities and rates is refused at the package,
    /// or built with none negative nor infinite; and then the solver's
    /// partitions satisfy the checker (a negative memory made them disagree).
    #[test]
    fn mutated_packages_are_refused_or_consistent(
        own in any::<bool>(), m in 0..MAGNITUDES.len(), c in 0..MAGNITUDES.len(), b in 0..MAGNITUDES.len(),
        seed in any::<u64>(),
    ) {
        let text = package_program(own, m, c, b);
        let compiled = common::compile(&text);
        if !compiled.ok() {
            let out = mcm_core::diag::render_text(&compiled.program.sources, &compiled.diags);
            prop_assert!(out.contains("test.mcm:"), "an error points into the file:\n{out}");
            return Ok(());
        }
        let p = compiled.problem(None).unwrap();
        for chip in 0..p.package.num_chips() as u32 {
            for v in [p.package.chip_memory(chip), p.package.chip_compute(chip)] {
                prop_assert!(v.is_some_and(|v| v >= 0.0 && v.is_finite()), "{v:?} in\n{text}");
            }
        }
        for l in 0..p.package.links.len() {
            let v = p.package.link_bandwidth(l);
            prop_assert!(v.is_some_and(|v| v >= 0.0 && v.is_finite()), "{v:?} in\n{text}");
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        // A statement, so that its temporaries go before `compiled`.
        if let Ok(mut s) = Solver::new(p, Options::default()) {
            let order = node_order(&s, Order::Random, &mut rng);
            if let Ok(pl) = sample(&mut s, &order, None, &mut rng) {
                let broken = check(&p.graph, &p.package, &p.constraints, &pl);
                prop_assert!(broken.is_empty(), "{broken:?} for {pl:?} in\n{text}");
            }
        };
    }

    /// Any JSON value for `chips`, `graph` or a node's chip: read, or
    /// refused with the key named and the place given, never "expected , or }".
    #[test]
    fn partition_fields_of_any_type_are_read_or_named(
        chips in 0..VALUES.len(), graph in 0..VALUES.len(), a in 0..VALUES.len(), b in 0..VALUES.len(),
    ) {
        let g = Graph::new("g", vec![Node::new("a"), Node::new("b")], vec![(0, 1, None)]).unwrap();
        let text = format!(
            r#"{{"graph": {}, "chips": {}, "placement": {{"a": {}, "b": {}}}}}"#,
            VALUES[graph], VALUES[chips], VALUES[a], VALUES[b]
        );
        match mcm_core::problem::parse_partition(&text, &g, 2) {
            Ok(p) => prop_assert!(p.chips.iter().all(|c| *c < 2)),
            Err(e) => {
                let m = &e.message;
                prop_assert!(!m.contains("expected , or }"), "{m} for {text}");
                prop_assert!(
                    ["`chips`", "`graph`", "node `a`", "node `b`", "chips, but", "graph `", "number out of range"]
                        .iter()
                        .any(|k| m.contains(k)),
                    "{m} names no key for {text}"
                );
            }
        }
    }

    /// Any JSON value for a node's fields: read, or refused naming the node
    /// or its place in the file.
    #[test]
    fn graph_fields_of_any_type_are_read_or_named(
        field in 0..5usize, value in 0..VALUES.len(), edge_bytes in 0..VALUES.len(),
    ) {
        let key = ["flops", "params", "output_bytes", "replicable", "op"][field];
        let text = format!(
            r#"{{"nodes": [{{"id": "a", "{key}": {}}}, {{"id": "b"}}], "edges": [{{"from": "a", "to": "b", "bytes": {}}}]}}"#,
            VALUES[value], VALUES[edge_bytes]
        );
        if let Err(e) = parse_graph_json(&text) {
            prop_assert!(
                ["node `a`", "edge 0", "line 1", "no nodes"].iter().any(|k| e.message.contains(k)),
                "{} for {text}", e.message
            );
        }
    }
}

/// Graph files of any bytes, plain or gzipped, through the file reader.
#[test]
fn graph_files_of_mutated_bytes_are_read_or_refused() {
    use std::io::Write;
    let dir = common::scratch("fuzz-graph-files");
    let base = br#"{"nodes": [{"id": "a", "flops": 3}, {"id": "b"}], "edges": [{"from": "a", "to": "b"}]}"#;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    for case in 0..200 {
        let mut bytes = base.to_vec();
        for _ in 0..rand::Rng::random_range(&mut rng, 1..4) {
            let at = rand::Rng::random_range(&mut rng, 0..bytes.len());
            bytes[at] = rand::Rng::random(&mut rng);
        }
        if case % 2 == 1 {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&bytes).unwrap();
            bytes = e.finish().unwrap();
            // Damage the gzip itself too, now and then.
            if case % 4 == 3 {
                let at = rand::Rng::random_range(&mut rng, 0..bytes.len());
                bytes[at] ^= 0x5a;
            }
        }
        let path = dir.join(format!("g{case}.json"));
        std::fs::write(&path, &bytes).unwrap();
        if let Err(e) = mcm_core::graph::load_graph_file(&path) {
            assert!(e.message.contains(&format!("g{case}.json")), "{}", e.message);
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("let x = {}1{}\n", "(".repeat(5000), ")".repeat(5000));
    let c = common::compile(&deep);
    assert!(!c.ok());
    let out = mcm_core::diag::render_text(&c.program.sources, &c.diags);
    assert!(out.contains("nested more than"), "{out}");
}
