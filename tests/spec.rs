//! Every program of the language brief behaves as its comment says.

use crate::common;

use mcmpart::lang::compile_file;
use mcmpart::testing::{self, Status};

fn run_file(rel: &str) -> Vec<testing::TestResult> {
    let c = compile_file(&common::root().join(rel));
    assert!(
        c.ok(),
        "{rel} does not compile:\n{}",
        mcmpart::diag::render_text(&c.program.sources, &c.diags)
    );
    c.tests.iter().map(testing::run).collect()
}

#[test]
fn the_brief_tests_pass_with_the_reasons_the_brief_gives() {
    let rs = run_file("tests/mcm/spec_tests.mcm");
    assert_eq!(rs.len(), 4);
    for r in &rs {
        assert_eq!(r.status, Status::Pass, "{}: {}", r.name, r.message);
    }
    // Each names the constraint and the elements that break it.
    assert!(
        rs[0]
            .violations
            .iter()
            .any(|v| v.starts_with("no_skip") && v.contains("die[1]")),
        "{:?}",
        rs[0]
    );
    let tri = &rs[1].violations;
    assert!(
        tri.iter()
            .any(|v| v.contains("triangle_dependency") && v.contains("0 -> 1 -> 2")),
        "{tri:?}"
    );
    assert!(rs[2].violations.is_empty());
    assert!(rs[3].message.contains("unsatisfiable"), "{}", rs[3].message);
}

#[test]
fn the_brief_topologies_constraints_and_near_work_as_written() {
    let rs = run_file("tests/mcm/spec_programs.mcm");
    assert_eq!(rs.len(), 6);
    for r in &rs {
        assert_eq!(r.status, Status::Pass, "{}: {}", r.name, r.message);
    }
}

#[test]
fn the_brief_problem_compiles_bert_large_onto_36_dies() {
    let c = compile_file(&common::root().join("examples/bert_ring36.mcm"));
    assert!(c.ok(), "{}", mcmpart::diag::render_text(&c.program.sources, &c.diags));
    let p = c.problem(None).expect("one problem");
    assert_eq!(p.name, "bert");
    assert_eq!(p.graph.name, "bert-large");
    assert_eq!(p.package.num_chips(), 36);
    assert_eq!(p.package.links.len(), 35);
    let names: Vec<&str> = p.constraints.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["acyclic_flow", "no_skip", "triangle_dependency", "memory_capacity"]
    );
    // Replicable nodes (the attention mask and its kin) take no decision.
    assert!(p.graph.num_placed() < p.graph.nodes.len());
    assert_eq!(p.constraints[0].instances.len(), p.graph.placed_edges().len());
    assert_eq!(p.constraints[1].instances.len(), 36);
}

#[test]
fn the_stdlib_placement_rules_are_the_brief_text() {
    let brief = std::fs::read_to_string(common::root().join("tests/mcm/spec_programs.mcm")).unwrap();
    let std = std::fs::read_to_string(common::root().join("stdlib/placement.mcm")).unwrap();
    for name in ["acyclic_flow", "no_skip", "triangle_dependency", "memory_capacity"] {
        let pick = |s: &str| -> String {
            let start = s.find(&format!("constraint {name}(")).expect("constraint present");
            let end = start + s[start..].find("\n}").expect("end");
            s[start..end].to_string()
        };
        // `:: native` names the solver's implementation; the rule is the brief's text.
        assert_eq!(
            pick(&brief),
            pick(&std).replacen(" :: native", "", 1),
            "{name} differs from the brief"
        );
    }
}
