//! Keywords are whole words: glued to the next word they are no keyword,
//! and a name that merely starts with one is a name.

use super::parse_module;

fn parses(text: &str) -> bool {
    parse_module(0, text).is_ok()
}

const TOPO: &str = "ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)";

/// Each glued program next to the same program written apart: the apart one
/// parses, so the glued one fails for the glue alone.
#[test]
fn a_keyword_glued_to_the_next_word_is_no_keyword() {
    let problem = |head: &str, body: &str| format!("let g = graph {{ a }}\nlet p = {TOPO}\n{head} {{ {body} }}\n");
    let topology = |stmt: &str| format!("topology t() {{\n    chips die[2] {{ memory = 1 MiB }}\n    {stmt}\n}}\n");
    let test = |stmt: &str| format!("test \"x\" {{\n    let g = graph {{ a }}\n    {stmt}\n}}\n");
    let cases = [
        (format!("let p = {TOPO}\n"), format!("letp = {TOPO}\n")),
        ("use std::topologies\n".into(), "usestd::topologies\n".into()),
        (
            problem("partition g onto p", "maximize throughput"),
            problem("partitiong ontop", "maximizethroughput"),
        ),
        (
            problem("partition g onto p", "maximize throughput"),
            problem("partition g onto p", "maximizethroughput"),
        ),
        (problem("partition g onto p", ""), problem("partitiong onto p", "")),
        (problem("partition g onto p", ""), problem("partition g ontop", "")),
        (
            problem("partition g onto p as q", ""),
            problem("partition g onto p asq", ""),
        ),
        (
            problem("partition g onto p", "require no_skip"),
            problem("partition g onto p", "requireno_skip"),
        ),
        (
            problem("partition g onto p", "evaluate with \"m.sh\""),
            problem("partition g onto p", "evaluatewith \"m.sh\""),
        ),
        ("topology t() { }\n".into(), "topologyt() { }\n".into()),
        ("constraint c() { true }\n".into(), "constraintc() { true }\n".into()),
        (topology("link die[0] -> die[1]"), topology("linkdie[0] -> die[1]")),
        (
            topology("set die[0] { memory = 2 MiB }"),
            topology("setdie[0] { memory = 2 MiB }"),
        ),
        (topology("chips x[1]"), topology("chipsx[1]")),
        (topology("for i in 0..1 { }"), topology("fori in 0..1 { }")),
        (topology("if true { } else { }"), topology("if true { } elsex { }")),
        (topology(&format!("include {TOPO}")), topology("includering(n = 2)")),
        (test("expect valid"), test("expectvalid")),
        (test("expect valid"), test("expect validx")),
        (test("expect violates no_skip"), test("expect violatesno_skip")),
        (test("place g onto p { a: 0 }"), test("placeg onto p { a: 0 }")),
    ];
    for (apart, glued) in &cases {
        assert!(parses(apart), "written apart, this should parse:\n{apart}");
        assert!(!parses(glued), "glued, this should not parse:\n{glued}");
    }
}

#[test]
fn names_that_start_with_a_keyword_are_names() {
    let src = "let letter = 1\nlet testing = letter + 1\nlet partitions = testing\nlet onto_x = 2\n\
               let format = 3\nlet settle = 4\nlet included = 5\nlet iffy = 6\nlet usefulness = 7\n\
               let linked = 8\nlet chipset = 9\nlet expected = 10\nlet placed = 11\nlet required = 12\n";
    let m = parse_module(0, src).unwrap_or_else(|d| panic!("{d:?}"));
    let names: Vec<String> = m
        .items
        .iter()
        .map(|i| match i {
            crate::ast::Item::Let(l) => l.name.name.clone(),
            _ => panic!("not a let"),
        })
        .collect();
    assert_eq!(
        names,
        [
            "letter",
            "testing",
            "partitions",
            "onto_x",
            "format",
            "settle",
            "included",
            "iffy",
            "usefulness",
            "linked",
            "chipset",
            "expected",
            "placed",
            "required"
        ]
    );
}

#[test]
fn a_glued_keyword_is_reported_as_a_syntax_error_at_its_place() {
    let src = format!("use std::topologies::ring\nletp = {TOPO}\n");
    let Err(diags) = parse_module(0, &src) else {
        panic!("glued, this should not parse:\n{src}")
    };
    assert_eq!(diags.len(), 1, "{diags:?}");
    let d = &diags[0];
    assert_eq!(d.code, "mcm::syntax");
    let at = d.primary_span().expect("a span").start as usize;
    assert_eq!(at, src.find("letp").unwrap(), "{d:?}");
    assert!(d.message.contains("expected an item"), "{}", d.message);
}
