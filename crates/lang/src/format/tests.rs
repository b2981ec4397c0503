use super::format_source;
use crate::parse::parse_module;
use std::path::{Path, PathBuf};

/// The syntax tree without its spans: what a file means to the front end.
fn meaning(text: &str) -> String {
    let m = parse_module(0, text).unwrap_or_else(|d| panic!("does not parse: {d:?}"));
    strip_spans(&format!("{:?}", m.items))
}

fn strip_spans(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("Span {") {
        out.push_str(&rest[..i]);
        let close = rest[i..].find('}').expect("a span's debug form closes");
        rest = &rest[i + close + 1..];
    }
    out.push_str(rest);
    out
}

fn comments(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.find("//").map(|i| l[i..].trim_end().to_string()))
        .collect()
}

/// Every `.mcm` file of the repository.
pub(crate) fn repo_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() && name != "target" && !name.to_string_lossy().starts_with('.') {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "mcm") {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for d in ["examples", "stdlib", "tests", "book"] {
        walk(&root.join(d), &mut out);
    }
    out.sort();
    out
}

fn check(text: &str) -> String {
    let once = format_source(text).unwrap_or_else(|d| panic!("cannot format: {d:?}"));
    let twice = format_source(&once).unwrap();
    assert_eq!(once, twice, "not idempotent:\n{once}");
    assert_eq!(meaning(text), meaning(&once), "the meaning changed:\n{once}");
    assert_eq!(comments(text), comments(&once), "comments changed:\n{once}");
    once
}

#[test]
fn every_repository_file_formats_idempotently_to_the_same_tree() {
    let files = repo_files();
    assert!(files.len() >= 15, "found {} files", files.len());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        if parse_module(0, &text).is_err() {
            continue; // deliberately broken test inputs
        }
        let out = std::panic::catch_unwind(|| check(&text));
        assert!(out.is_ok(), "{}", f.display());
    }
}

#[test]
fn canonical_spacing_and_blocks() {
    let src = "use std::topologies::ring\ntopology t(n:int,m:bytes=1 MiB){chips d[n]{memory=m}\nfor i in 0..n-1 { link d[i]->d[i+1]{bandwidth=1GB/s} } }\n";
    assert_eq!(
        check(src),
        "use std::topologies::ring\n\
         topology t(n: int, m: bytes = 1 MiB) {\n    chips d[n] { memory = m }\n    for i in 0..n - 1 {\n        link d[i] -> d[i + 1] { bandwidth = 1 GB/s }\n    }\n}\n"
    );
}

#[test]
fn comments_and_doc_comments_stay_in_place() {
    let src = "// header\n\n\n/// the rule\nconstraint c() :: native { // why\n  forall d in chips: -d.memory <= 0 // trailing\n  // before the end\n}\n// last\n";
    let out = check(src);
    assert_eq!(
        out,
        "// header\n\n/// the rule\nconstraint c() :: native { // why\n    forall d in chips: -d.memory <= 0 // trailing\n    // before the end\n}\n// last\n"
    );
}

#[test]
fn line_breaks_inside_a_statement_are_kept_as_continuations() {
    let src = "let g = graph {\n a -> b\n   b -> c }\ntest \"x\" { place g onto t { a: 0,\n b: 1 }\n expect valid }\n";
    let out = check(src);
    assert_eq!(
        out,
        "let g = graph {\n    a -> b\n    b -> c }\ntest \"x\" {\n    place g onto t { a: 0,\n        b: 1 }\n    expect valid\n}\n"
    );
}

#[test]
fn graph_chains_stand_two_spaces_apart() {
    assert_eq!(
        check("let g = graph {a->b c{flops=10}->b}"),
        "let g = graph { a -> b  c { flops = 10 } -> b }\n"
    );
}

#[test]
fn else_and_use_groups() {
    let src = "use std::placement::{ a ,b }\ntopology t() { if 1 > 0 { chips a } else { chips b } }";
    assert_eq!(
        check(src),
        "use std::placement::{a, b}\ntopology t() {\n    if 1 > 0 {\n        chips a\n    } else {\n        chips b\n    }\n}\n"
    );
}

#[test]
fn syntax_errors_are_reported_not_formatted() {
    assert!(format_source("topology (").is_err());
    assert_eq!(format_source("").unwrap(), "");
}
