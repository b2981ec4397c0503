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

/// The expression of `let x = TEXT`, as an S-expression, and its source.
fn parse_expr(text: &str) -> Result<(crate::ast::Expr, String), String> {
    let src = format!("let x = {text}\n");
    let mut map = mcm_core::source::SourceMap::new();
    let file = map.add("t.mcm".into(), None, src.clone());
    match crate::parse::parse_module(file, &src) {
        Ok(m) => match m.items.into_iter().next() {
            Some(crate::ast::Item::Let(l)) => Ok((l.value, src)),
            _ => Err("no let".into()),
        },
        Err(d) => Err(d.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; ")),
    }
}

fn sexpr(e: &crate::ast::Expr) -> String {
    use crate::ast::ExprKind::*;
    match &e.kind {
        Var(v) => v.clone(),
        Int(i) => i.to_string(),
        Bool(b) => b.to_string(),
        Field(b, f) => format!("(. {} {})", sexpr(b), f.name),
        Index(b, i) => format!("([] {} {})", sexpr(b), sexpr(i)),
        Unary(op, x) => format!("({op:?} {})", sexpr(x)),
        Binary(op, a, b) => format!("({} {} {})", op.symbol(), sexpr(a), sexpr(b)),
        Quant { body, .. } => format!("(Q {})", sexpr(body)),
        Agg { body, .. } => format!("(Agg {})", body.as_ref().map_or(String::new(), |b| sexpr(b))),
        other => format!("{other:?}"),
    }
}

#[test]
fn operators_bind_by_the_pratt_table() {
    for (text, tree) in [
        ("a or b and c", "(or a (and b c))"),
        ("a <-> b -> c or d", "(<-> a (-> b (or c d)))"),
        ("a -> b -> c", "(-> a (-> b c))"),
        ("a <-> b <-> c", "(<-> (<-> a b) c)"),
        ("a - b - c", "(- (- a b) c)"),
        ("a + b * c % d", "(+ a (% (* b c) d))"),
        ("not a == b and not not c", "(and (Not (== a b)) (Not (Not c)))"),
        ("- -x.f[1] * y", "(* (Neg (Neg ([] (. x f) 1))) y)"),
        ("a - -b", "(- a (Neg b))"),
        ("(a or b) and c", "(and (or a b) c)"),
        ("a -> forall u in nodes: b or c", "(-> a (Q (or b c)))"),
        ("sum(u in nodes) u.params * 2 <= d", "(<= (Agg (* (. u params) 2)) d)"),
    ] {
        let (e, _) = parse_expr(text).unwrap_or_else(|m| panic!("{text}: {m}"));
        assert_eq!(sexpr(&e), tree, "{text}");
    }
}

#[test]
fn the_grammar_admits_what_the_precedences_read() {
    for text in [
        "a < b < c",
        "a == not b",
        "a and forall x in nodes: b",
        "not forall x in nodes: b",
        "- not a",
    ] {
        let err = parse_expr(text).err().unwrap_or_else(|| panic!("{text} parsed"));
        assert!(err.starts_with("syntax error: expected"), "{text}: {err}");
    }
}

/// `->`, `not` and `-` span the text their rule read, parentheses and a
/// trailing comment included; other operators span their operands.
#[test]
fn operator_spans_are_those_of_the_grammar_rules() {
    let span_text = |text: &str, pick: &dyn Fn(&crate::ast::Expr) -> crate::ast::Expr| -> String {
        let (e, src) = parse_expr(text).unwrap();
        let s = pick(&e).span;
        src[s.start as usize..s.end as usize].to_string()
    };
    let me = |e: &crate::ast::Expr| e.clone();
    assert_eq!(span_text("(a) -> (b) // why\n", &me), "(a) -> (b) // why");
    assert_eq!(span_text("(a) + (b)", &me), "a) + (b");
    assert_eq!(span_text("not (a) // c\n", &me), "not (a) // c");
    let inner = |e: &crate::ast::Expr| match &e.kind {
        crate::ast::ExprKind::Unary(_, x) => (**x).clone(),
        _ => panic!("not unary"),
    };
    assert_eq!(span_text("- -a", &inner), "- -a");
    assert_eq!(span_text("-(-a)", &inner), "-a");
}

#[test]
fn else_if_chains_pick_the_first_true_branch() {
    let src = "topology t(n: int) {\n    if n < 2 {\n        chips a[1] { memory = 1 MiB, compute = 1 TFLOP/s }\n    } else if n < 4 {\n        chips b[2] { memory = 1 MiB, compute = 1 TFLOP/s }\n    } else {\n        chips c[3] { memory = 1 MiB, compute = 1 TFLOP/s }\n    }\n}\nlet one = t(n = 1)\nlet two = t(n = 3)\nlet three = t(n = 9)\n";
    let c = compile(src);
    assert!(c.ok(), "{}", render_text(&c.program.sources, &c.diags));
    let sizes: Vec<(&str, usize)> = c.packages.iter().map(|(n, p)| (n.as_str(), p.num_chips())).collect();
    assert_eq!(sizes, [("one", 1), ("two", 2), ("three", 3)]);
    assert_eq!(crate::format::format_source(src).unwrap(), src);
}

#[test]
fn a_negative_chip_count_says_negative() {
    let e = errors(
        "use std::topologies::ring\nlet p = ring(n = -4, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n",
    );
    assert!(e.contains("-4 chips: a chip count is negative"), "{e}");
    assert!(!e.contains("at most"), "{e}");
}

#[test]
fn a_rate_written_without_the_slash_suggests_it() {
    for (written, meant) in [("TFLOPS", "TFLOP/s"), ("GBps", "GB/s"), ("MB/sec", "MB/s")] {
        // miette folds the help line at its width.
        let e = errors(&format!("let x = 1 {written}\n"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            e.contains(&format!("a rate is written with `/s`: `{meant}`")),
            "{written}: {e}"
        );
    }
}

#[test]
fn two_tests_with_one_name_are_an_error() {
    let t = "test \"same\" {\n    let g = graph { a }\n    let t = ring(n = 1, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n    place g onto t { a: 0 }\n    expect valid\n}\n";
    let e = errors(&format!("use std::topologies::ring\n{t}{t}"));
    assert!(e.contains("two tests are named \"same\""), "{e}");
    assert!(e.contains("first test") && e.contains("second test"), "{e}");
}

#[test]
fn node_counts_out_of_range_say_which_way() {
    let big = errors("let g = graph { a { params = 1e30 B } }\n");
    assert!(big.contains("`params` is too large"), "{big}");
    let neg = errors("let g = graph { a { flops = -5 } }\n");
    assert!(neg.contains("`flops` is negative (-5)"), "{neg}");
}

const RING_TOPOLOGY: &str =
    "topology pair() {\n    chips die[2] { memory = 1 MiB, compute = 1 TFLOP/s }\n    link die[0] -> die[1] { ";

#[test]
fn a_misspelt_attribute_is_refused_where_it_is_written() {
    let src = format!("{RING_TOPOLOGY}bandwith = 25 GB/s, latncy = 2 us }}\n}}\nlet p = pair()\n");
    let c = compile(&src);
    let out = errors(&src);
    assert_eq!(c.diags.len(), 2, "{out}");
    for (name, meant) in [("bandwith", "bandwidth"), ("latncy", "latency")] {
        assert!(out.contains(&format!("unknown link attribute `{name}`")), "{out}");
        assert!(out.contains(&format!("did you mean `{meant}`?")), "{out}");
    }
    // Each points at the name as written.
    let at = |name: &str| src.find(name).unwrap() as u32;
    let starts: Vec<u32> = c
        .diags
        .iter()
        .filter_map(|d| d.primary_span())
        .map(|s| s.start)
        .collect();
    assert_eq!(starts, [at("bandwith"), at("latncy")]);
    let chip = errors("topology one() {\n    chips die { memroy = 1 MiB, Compute = 1 TFLOP/s }\n}\nlet p = one()\n");
    assert!(chip.contains("unknown chip attribute `memroy`"), "{chip}");
    assert!(chip.contains("unknown chip attribute `Compute`"), "{chip}");
}

/// `kind` is a known chip attribute: a string (the key of a graph's
/// measured op times), with a did-you-mean for a slip; every standard
/// topology takes it as an optional last parameter, no kind by default.
#[test]
fn kind_is_a_string_chip_attribute_of_every_standard_topology() {
    let typed =
        errors("topology one() {\n    chips die { memory = 1 MiB, compute = 1 TFLOP/s, kind = 3 }\n}\nlet p = one()\n");
    assert!(
        typed.contains("chip attribute `kind` is a str elsewhere, an int here"),
        "{typed}"
    );
    let slip = errors(
        "topology one() {\n    chips die { memory = 1 MiB, compute = 1 TFLOP/s, knd = \"a100\" }\n}\nlet p = one()\n",
    );
    assert!(
        slip.contains("unknown chip attribute `knd`") && slip.contains("did you mean `kind`?"),
        "{slip}"
    );
    assert!(slip.contains("`memory`, `compute`, `overhead` and `kind`"), "{slip}");
    let c = compile(
        "use std::topologies::*\n\
         let r = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s, kind = \"die\")\n\
         let m = mesh(rows = 2, cols = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s, kind = \"tile\")\n\
         let t = torus(rows = 3, cols = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s, kind = \"tile\")\n\
         let b = bidirectional_ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s, kind = \"die\")\n\
         let f = fully_connected(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s, kind = \"chiplet\")\n\
         let g = gpu_cluster(machines = 2, gpus = 2, memory = 80 GiB, compute = 400 TFLOP/s, nvlink = 300 GB/s, network = 25 GB/s, kind = \"a100\")\n\
         let plain = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n",
    );
    assert!(c.ok(), "{}", render_text(&c.program.sources, &c.diags));
    let kinds: Vec<(String, Vec<Option<String>>)> = c
        .packages
        .iter()
        .map(|(name, p)| {
            let k = (0..p.num_chips() as u32)
                .map(|i| p.chip_kind(i).map(str::to_string))
                .collect();
            (name.clone(), k)
        })
        .collect();
    for (name, k) in &kinds {
        let want = match name.as_str() {
            "r" | "b" => Some("die"),
            "m" | "t" => Some("tile"),
            "f" => Some("chiplet"),
            "g" => Some("a100"),
            _ => None,
        };
        assert!(!k.is_empty() && k.iter().all(|x| x.as_deref() == want), "{name}: {k:?}");
    }
    assert_eq!(kinds.len(), 7);
}

#[test]
fn attributes_far_from_the_known_ones_are_the_programs_own() {
    let c = compile(&format!(
        "{RING_TOPOLOGY}bandwidth = 25 GB/s, latency = 2 us, lanes = 8 }}\n}}\n\
         topology tagged() {{\n    chips die[2] {{ memory = 1 MiB, compute = 1 TFLOP/s, kind = \"hbm\", mem = 3 }}\n}}\n\
         let p = pair()\nlet q = tagged()\n"
    ));
    assert!(c.ok(), "{}", render_text(&c.program.sources, &c.diags));
    let (p, q) = (&c.packages[0].1, &c.packages[1].1);
    assert_eq!(p.links[0].attrs.get("lanes"), Some(&mcm_core::quantity::Scalar::Int(8)));
    assert_eq!(
        q.chip_attr(1, "kind"),
        Some(&mcm_core::quantity::Scalar::Str("hbm".into()))
    );
    // Completion after `d.` offers them, with their types.
    let text = "let x = d.";
    let offered: Vec<(String, String)> = crate::ide::completions(Some(&c), text, text.len())
        .into_iter()
        .map(|k| (k.label, k.detail))
        .collect();
    for (label, detail) in [
        ("kind", "chip: str"),
        ("mem", "chip: int"),
        ("lanes", "link: int"),
        ("memory", "chip: bytes"),
    ] {
        assert!(
            offered.iter().any(|(l, d)| l == label && d == detail),
            "{label} ({detail}) not in {offered:?}"
        );
    }
}

#[test]
fn minimize_step_time_is_an_objective_and_prints_as_written() {
    let src = format!("{TOPOLOGY}partition g onto t {{\n    minimize step_time\n}}\n");
    let c = compile(&src);
    assert!(c.ok(), "{}", render_text(&c.program.sources, &c.diags));
    let o = &c.problems[0].objective;
    assert_eq!(o.metric, mcm_core::problem::Metric::StepTime);
    assert_eq!(o.sense, mcm_core::problem::Sense::Minimize);
    assert_eq!(crate::format::format_source(&src).unwrap(), src);
}

#[test]
fn maximize_step_time_goes_the_wrong_way_where_it_is_written() {
    let src = format!("{TOPOLOGY}partition g onto t {{ maximize step_time }}\n");
    let c = compile(&src);
    let out = errors(&src);
    assert!(out.contains("`maximize step_time` goes the wrong way"), "{out}");
    assert!(out.contains("write `minimize step_time`"), "{out}");
    let at = src.find("maximize step_time").unwrap() as u32;
    assert_eq!(c.diags[0].primary_span().map(|s| s.start), Some(at), "{out}");
}

#[test]
fn completion_after_a_sense_offers_the_metrics_that_go_that_way() {
    let labels = |text: &str| -> Vec<String> {
        crate::ide::completions(None, text, text.len())
            .into_iter()
            .map(|k| k.label)
            .collect()
    };
    assert_eq!(labels("partition g onto t { minimize "), ["latency", "step_time"]);
    assert_eq!(labels("partition g onto t { minimize st"), ["step_time"]);
    assert_eq!(labels("partition g onto t { maximize "), ["throughput"]);
}

#[test]
fn a_chips_overhead_is_a_known_time() {
    let c = compile("topology one() {\n    chips die { compute = 1 TFLOP/s, overhead = 5 us }\n}\nlet p = one()\n");
    assert!(c.ok(), "{}", render_text(&c.program.sources, &c.diags));
    let overhead = c.packages[0].1.chip_number(0, "overhead").expect("a number");
    assert!((overhead - 5e-6).abs() < 1e-18, "{overhead}");
    let out = errors("topology one() {\n    chips die { compute = 1 TFLOP/s, overhed = 5 us }\n}\nlet p = one()\n");
    assert!(out.contains("unknown chip attribute `overhed`"), "{out}");
    assert!(out.contains("did you mean `overhead`?"), "{out}");
    assert!(out.contains("`memory`, `compute`, `overhead` and `kind`"), "{out}");
    let wrong = errors("topology one() {\n    chips die { compute = 1 TFLOP/s, overhead = 5 GB }\n}\nlet p = one()\n");
    assert!(wrong.contains("overhead"), "{wrong}");
}
