//! Mutated programs for the fuzz tests: valid programs of the repository
//! to start from, and edits (delete, insert a token, replace, swap) that
//! proptest draws and shrinks.

use proptest::prelude::*;

/// Valid programs to mutate: the brief's, the stdlib, the examples.
pub fn seeds() -> Vec<String> {
    let root = crate::root();
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

pub const TOKENS: &[&str] = &[
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
pub enum Edit {
    Delete(usize, usize),
    Insert(usize, usize),
    Replace(usize, usize, usize),
    Swap(usize, usize, usize),
}

pub fn apply(text: &str, edits: &[Edit]) -> String {
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

pub fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(a, n)| Edit::Delete(a, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, t)| Edit::Insert(a, t)),
        (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(a, n, t)| Edit::Replace(a, n, t)),
        (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(a, c, n)| Edit::Swap(a, c, n)),
    ]
}
