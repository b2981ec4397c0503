//! The front end's own checks: native annotations, and the expression parser's
//! precedences and spans.

use crate::{compile_str, Compiled};
use mcm_core::diag::render_text;
use std::path::Path;

const TOPOLOGY: &str = "use std::topologies::ring\n\
    let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
    let g = graph { a -> b }\n";

fn compile(text: &str) -> Compiled {
    compile_str("t.mcm", text, Path::new("."))
}

fn errors(text: &str) -> String {
    let c = compile(text);
    assert!(!c.ok(), "expected errors, the program compiled:\n{text}");
    render_text(&c.program.sources, &c.diags)
}

#[test]
fn the_standard_rules_come_out_with_their_native_keys() {
    let c = compile(&format!(
        "use std::placement::*\n{TOPOLOGY}partition g onto t {{\n\
         require acyclic_flow, no_skip, triangle_dependency, memory_capacity\n}}\n"
    ));
    assert!(c.ok(), "{}", render_text(&c.program.sources, &c.diags));
    let keys: Vec<Option<&str>> = c.problems[0].constraints.iter().map(|k| k.native.as_deref()).collect();
    assert_eq!(
        keys,
        [
            Some("acyclic_flow"),
            Some("no_skip"),
            Some("triangle_dependency"),
            Some("memory_capacity")
        ]
    );
}

#[test]
fn a_users_copy_of_a_standard_rule_has_no_native_key() {
    let c = compile(&format!(
        "{TOPOLOGY}constraint acyclic_flow() {{\n    forall (u, v) in edges: chip(u) <= chip(v)\n}}\n\
         partition g onto t {{ require acyclic_flow }}\n"
    ));
    assert!(c.ok(), "{}", render_text(&c.program.sources, &c.diags));
    assert_eq!(c.problems[0].constraints[0].native, None);
}

#[test]
fn native_in_a_users_file_is_refused_with_its_place_and_a_help() {
    let out = errors(&format!(
        "{TOPOLOGY}constraint acyclic_flow() :: native {{\n    forall (u, v) in edges: chip(u) <= chip(v)\n}}\n\
         partition g onto t {{ require acyclic_flow }}\n"
    ));
    for part in [
        "mcm::context",
        "`:: native` is for the standard library only",
        "t.mcm:4:30",
        "not allowed outside `stdlib/`",
        "`acyclic_flow` is solved and checked by its formula",
    ] {
        assert!(out.contains(part), "missing {part:?} in:\n{out}");
    }
}

#[test]
fn an_unknown_annotation_names_the_known_one() {
    let out = errors("constraint c() :: nativ { true }\n");
    for part in ["unknown annotation `nativ`", "did you mean `native`?", "t.mcm:1:19"] {
        assert!(out.contains(part), "missing {part:?} in:\n{out}");
    }
}
