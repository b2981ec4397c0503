//! The book's programs are real: every ```mcm block compiles (```mcm,error
//! blocks must not), and the test blocks it shows pass, except in blocks
//! marked ```mcm,failing that show failures on purpose.

mod common;

use mcmpart::testing::{self, Status};
use std::path::{Path, PathBuf};

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("book folder").flatten() {
        let p = e.path();
        if p.is_dir() {
            markdown_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

/// (info string, first line, code) of every fenced block.
fn blocks(text: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        match (&mut cur, t.strip_prefix("```")) {
            (None, Some(info)) => cur = Some((info.trim().to_string(), i + 1, String::new())),
            (Some(_), Some(_)) => out.extend(cur.take()),
            (Some((_, _, code)), None) => {
                code.push_str(line);
                code.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

#[test]
fn every_mcm_block_in_the_book_behaves_as_marked() {
    let mut files = Vec::new();
    markdown_files(&common::root().join("book/src"), &mut files);
    files.sort();
    let mut checked = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (info, line, code) in blocks(&text) {
            let tags: Vec<&str> = info.split(',').map(str::trim).collect();
            if tags.first() != Some(&"mcm") || tags.contains(&"fragment") {
                continue;
            }
            let at = format!("{}:{line}", f.display());
            let c = mcmpart::lang::compile_str("book.mcm", &code, &common::root().join("book/src"));
            if tags.contains(&"error") {
                assert!(!c.ok(), "{at}: marked error but compiles");
            } else {
                assert!(
                    c.ok(),
                    "{at}: does not compile:\n{}",
                    mcmpart::lang::diag::render_text(&c.program.sources, &c.diags)
                );
                if !tags.contains(&"failing") {
                    for t in &c.tests {
                        let r = testing::run(t);
                        assert_eq!(r.status, Status::Pass, "{at}: test \"{}\": {}", r.name, r.message);
                    }
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} blocks checked");
}

#[test]
fn the_reference_includes_the_grammar_file() {
    let g = std::fs::read_to_string(common::root().join("book/src/reference/grammar.md")).unwrap();
    assert!(g.contains("{{#include ../../../grammar/mcm.pest}}"));
}
