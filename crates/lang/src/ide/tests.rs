use super::*;
use std::path::Path;

const SRC: &str = "use std::placement::{acyclic_flow, no_skip}\nuse std::topologies::ring\n\n/// At most k nodes a chip.\nconstraint at_most(k: int) {\n    forall d in chips: count(u in nodes where chip(u) == d) <= k\n}\nlet package = ring(n = 4, memory = 128 MiB, compute = 4 TFLOP/s, bandwidth = 25 GB/s)\nlet g = graph { a -> b }\npartition g onto package {\n    require acyclic_flow, at_most(3)\n}\n";

fn compiled() -> Compiled {
    let c = crate::compile_str("t.mcm", SRC, Path::new("."));
    assert!(c.ok(), "{:?}", c.diags);
    c
}

fn at(s: &str) -> usize {
    SRC.find(s).unwrap_or_else(|| panic!("{s}")) + 1
}

#[test]
fn hover_on_a_topology_call_lists_its_parameters_with_units() {
    let c = compiled();
    let (span, text) = hover(&c, at("ring(n")).unwrap();
    assert_eq!(c.program.sources.snippet(span), "ring");
    assert!(
        text.contains("topology ring(n: int, memory: bytes, compute: flop_rate, bandwidth: rate, kind: str = \"\")"),
        "{text}"
    );
    assert!(
        text.contains("`memory`: bytes (in B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"),
        "{text}"
    );
    assert!(text.contains("`bandwidth`: rate (in B/s"), "{text}");
    assert!(text.contains("unidirectional ring"), "the doc comment: {text}");
}

#[test]
fn hover_on_names_params_attributes_and_quantities() {
    let c = compiled();
    let h = |s: &str| hover(&c, at(s)).unwrap().1;
    assert!(h("at_most(3)").contains("At most k nodes a chip."));
    assert!(h("k\n}").contains("parameter `k`: int of `at_most`"), "{}", h("k\n}"));
    assert!(h("package = ").contains("let package: package"), "{}", h("package = "));
    assert!(h("package = ").contains("4 chips, 3 links"));
    assert!(
        h("memory = 128").contains("parameter `memory`: bytes"),
        "{}",
        h("memory = 128")
    );
    assert!(h("128 MiB").contains("bytes (in B"), "{}", h("128 MiB"));
    assert!(
        h("chip(u) == d").contains("chip(u: node) -> chip"),
        "{}",
        h("chip(u) == d")
    );
    assert!(h("nodes where").contains("the graph's operations"));
    assert!(h("acyclic_flow,").contains("constraint acyclic_flow() :: native"));
}

#[test]
fn definitions_reach_the_standard_library_and_locals() {
    let c = compiled();
    let span = definition(&c, at("ring(n")).unwrap();
    let file = c.program.sources.get(span.file);
    assert_eq!(file.name, "stdlib/topologies.mcm");
    assert_eq!(c.program.sources.snippet(span), "ring");
    // `d` in `chip(u) == d` is the quantifier's `d`.
    let d = definition(&c, SRC.find("== d").unwrap() + 3).unwrap();
    assert_eq!(d.start as usize, SRC.find("d in chips").unwrap());
    let k = definition(&c, SRC.find("<= k").unwrap() + 3).unwrap();
    assert_eq!(k.start as usize, SRC.find("k: int").unwrap());
}

#[test]
fn completions_follow_the_context() {
    let c = compiled();
    let labels = |text: &str| -> Vec<String> {
        completions(Some(&c), text, text.len())
            .into_iter()
            .map(|c| c.label)
            .collect()
    };
    let dot = labels("constraint x() { forall d in chips: d.me");
    assert_eq!(dot, ["memory"]);
    let units = labels("let x = 128 Mi");
    assert!(
        units.contains(&"MiB".to_string()) && !units.contains(&"memory".to_string()),
        "{units:?}"
    );
    let rules = labels("partition g onto p {\n    require ");
    assert!(rules.contains(&"memory_capacity".to_string()) && rules.contains(&"at_most".to_string()));
    assert!(!rules.contains(&"ring".to_string()));
    let any = labels("let p = me");
    assert!(
        any.contains(&"mesh".to_string()) && any.contains(&"memory".to_string()),
        "{any:?}"
    );
}

#[test]
fn the_outline_lists_the_items() {
    let c = compiled();
    let s = symbols(&c);
    let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "use std::placement::{acyclic_flow, no_skip}",
            "use std::topologies::ring",
            "at_most",
            "package",
            "g",
            "partition g onto package"
        ]
    );
}

/// Every question at every byte of a text with characters of several bytes
/// (`é`, `∑`, a zero-width space, a byte-order mark, an emoji) is answered
/// without a panic: a completion after `é` sliced inside it.
#[test]
fn every_offset_of_non_ascii_text_is_answered() {
    let completed = |text: &str, at: usize| completions(None, text, at);
    assert!(completed("// é", 4).iter().any(|c| c.label == "let"));
    assert!(completed("// é", 5).iter().any(|c| c.label == "let"));
    let odd = "// é ∑\u{200B}\u{FEFF}😀\nlet x\u{200B}é = 1 MiB // ∑😀\nlet y = x.é\u{200B}\n";
    let src = format!("{odd}{SRC}");
    let c = crate::compile_str("t.mcm", &src, Path::new("."));
    for at in 0..=src.len() + 2 {
        completions(Some(&c), &src, at);
        hover(&c, at);
        definition(&c, at);
    }
    symbols(&c);
    let c = compiled();
    let text = format!("{SRC}é∑\u{200B}");
    for at in 0..=text.len() {
        completions(Some(&c), &text, at);
    }
}
