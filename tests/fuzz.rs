//! The front end returns errors, never panics, on arbitrary and mutated
//! input: programs, graph files and partition files.

use crate::common;

use mcmpart::graph::{parse_graph_json, Graph, Node};
use proptest::prelude::*;

/// Valid programs to mutate: the brief's, the stdlib, the examples.
fn seeds() -> Vec<String> {
    let root = common::root();
    [
        "tests/mcm/spec_tests.mcm",
        "tests/mcm/spec_programs.mcm",
        "stdlib/placement.mcm",
        "stdlib/topologies.mcm",
        "examples/quickstart.mcm",
    ]
    .iter()
    .map(|p| std::fs::read_to_string(root.join(p)).expect("seed file"))
    .collect()
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "->",
    "<->",
    "..",
    ":",
    ",",
    "=",
    "==",
    "<=",
    "forall",
    "exists",
    "where",
    "in",
    "sum(",
    "count(",
    "chip(",
    "nodes",
    "edges",
    "chips",
    "links",
    "1 MiB",
    "25 GB/s",
    "0",
    "-1",
    "99999999999999999999",
    "1e308",
    "\"",
    "///",
    "//",
    "graph {",
    "ring(",
    "test",
    "expect",
    "place",
    "partition",
    "let",
    "use std::",
    "not",
    "and",
    "or",
    "/",
    "%",
    "0..0",
    "chip(u).memory",
    "longest_path(",
];

#[derive(Clone, Debug)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, usize),
    Replace(usize, usize, usize),
    Swap(usize, usize, usize),
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut b: Vec<u8> = text.as_bytes().to_vec();
    for e in edits {
        let len = b.len().max(1);
        match *e {
            Edit::Delete(at, n) => {
                let at = at % len;
                let end = (at + n % 16).min(b.len());
                b.drain(at.min(b.len())..end);
            }
            Edit::Insert(at, t) => {
                let at = (at % len).min(b.len());
                let tok = TOKENS[t % TOKENS.len()].as_bytes();
                b.splice(at..at, tok.iter().copied());
            }
            Edit::Replace(at, n, t) => {
                let at = (at % len).min(b.len());
                let end = (at + n % 8).min(b.len());
                let tok = TOKENS[t % TOKENS.len()].as_bytes();
                b.splice(at..end, tok.iter().copied());
            }
            Edit::Swap(a, c, n) => {
                let n = n % 12;
                let (a, c) = (a % len, c % len);
                if a + n <= b.len() && c + n <= b.len() && (a + n <= c || c + n <= a) {
                    for i in 0..n {
                        b.swap(a + i, c + i);
                    }
                }
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(a, n)| Edit::Delete(a, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, t)| Edit::Insert(a, t)),
        (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(a, n, t)| Edit::Replace(a, n, t)),
        (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(a, c, n)| Edit::Swap(a, c, n)),
    ]
}

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

    #[test]
    fn mutated_programs_never_panic(seed in 0usize..5, edits in proptest::collection::vec(edit(), 1..6)) {
        let text = apply(&seeds()[seed], &edits);
        let c = common::compile(&text);
        // Whatever compiles can also be run.
        if c.ok() {
            for t in &c.tests {
                let _ = mcmpart::testing::run(t);
            }
        }
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
        let _ = mcmpart::problem::parse_partition(&apply(base, &edits), &g, 2);
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("let x = {}1{}\n", "(".repeat(5000), ")".repeat(5000));
    let c = common::compile(&deep);
    assert!(!c.ok());
    let out = mcmpart::diag::render_text(&c.program.sources, &c.diags);
    assert!(out.contains("nested more than"), "{out}");
}
