//! The book's programs are real: every ```mcm block compiles (```mcm,error
//! blocks must not), and the test blocks it shows pass, except in blocks
//! marked ```mcm,failing that show failures on purpose; the `$ mcmpart`
//! sessions of the tutorials and chapters in `SESSIONS` print what they show.

use crate::common;

use mcmpart::testing::{self, Status};
use std::path::{Path, PathBuf};

pub(crate) fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub(crate) fn blocks(text: &str) -> Vec<(String, usize, String)> {
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
                    mcmpart::diag::render_text(&c.program.sources, &c.diags)
                );
                let results: Vec<_> = c.tests.iter().map(testing::run).collect();
                if tags.contains(&"failing") {
                    // It shows a failure: one at least.
                    assert!(
                        results.iter().any(|r| r.status != Status::Pass),
                        "{at}: marked failing, but no test fails"
                    );
                } else {
                    for r in &results {
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

/// The pages whose console sessions are replayed, in this order, in one
/// folder holding the files the pages define (and `examples/`, `data/`,
/// `tests/`).
const SESSIONS: &[&str] = &[
    "strategies.md",
    "tutorial/architects.md",
    "tutorial/compiler-writers.md",
    "tutorial/test-authors.md",
    "solver.md",
    "cost-model.md",
    "reference/cli.md",
    "workloads.md",
];

/// The file a code block defines: the last bare `NAME.mcm` / `NAME.json` in
/// backquotes of the prose before it.
fn named_in(prose: &str) -> Option<String> {
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| !w.contains('/') && !w.contains(' ') && (w.ends_with(".mcm") || w.ends_with(".json")))
        .last()
        .map(str::to_string)
}

/// Lines without trailing blanks, the block without trailing empty lines,
/// and a run's duration ("in 4.058 ms") as `in T`: it is the machine's.
fn tidy(s: &str) -> String {
    let line = |l: &str| {
        let w: Vec<&str> = l.trim_end().split(' ').collect();
        let mut out = Vec::with_capacity(w.len());
        let mut i = 0;
        while i < w.len() {
            let unit = w.get(i + 2).map(|u| u.trim_end_matches(['(', ',']));
            if w[i] == "in"
                && w.get(i + 1).is_some_and(|x| x.parse::<f64>().is_ok())
                && matches!(unit, Some("ns" | "us" | "ms" | "s" | "min"))
            {
                out.push("in T");
                i += 3;
            } else {
                out.push(w[i]);
                i += 1;
            }
        }
        out.join(" ")
    };
    let lines: Vec<String> = s.lines().map(line).collect();
    lines.join("\n").trim_end().to_string()
}

/// Whether `printed` is what the page shows; a last line `...` elides the
/// rest.
fn shows(shown: &str, printed: &str) -> bool {
    let printed = tidy(printed);
    match shown.rsplit_once('\n') {
        Some((head, last)) if last.trim() == "..." => printed.starts_with(&format!("{head}\n")),
        _ => printed == shown,
    }
}

/// Commands quick enough to replay (no training, comparing or benchmarking).
const REPLAYED: &[&str] = &[
    "check", "test", "verify", "sample", "repair", "eval", "solve", "import", "stats", "show",
];

/// The tutorials' and chapters' `$ mcmpart ...` sessions print what the
/// page shows (the solver's witnesses, counts and reports drift silently
/// otherwise). A command whose files the page does not define fails here,
/// as a reader could not run it either.
#[test]
fn the_books_console_sessions_print_what_they_show() {
    let mut replayed = 0;
    // One folder, as a reader's: the reference runs the tutorials' files.
    let dir = common::scratch("book-sessions");
    for link in ["examples", "data", "tests"] {
        std::os::unix::fs::symlink(common::root().join(link), dir.join(link)).unwrap();
    }
    for page in SESSIONS {
        let path = common::root().join("book/src").join(page);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut prose_from = 0;
        let mut unnamed: Option<String> = None;
        for (info, line, code) in blocks(&text) {
            let lang = info.split(',').next().unwrap_or("");
            let prose = lines[prose_from..line - 1].join("\n");
            prose_from = line + code.lines().count() + 1;
            match lang {
                "mcm" | "json" => match named_in(&prose) {
                    Some(name) => {
                        std::fs::write(dir.join(&name), &code).unwrap();
                        unnamed = None;
                    }
                    None => unnamed = Some(code),
                },
                "console" => {
                    let mut session = code.split("\n$ ").map(|s| s.trim_start_matches("$ "));
                    for step in session.by_ref() {
                        let (cmd, shown) = step.split_once('\n').unwrap_or((step, ""));
                        let words: Vec<&str> = cmd.split_whitespace().collect();
                        if let ["cat", file] = words.as_slice() {
                            let written = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
                            assert_eq!(tidy(&written), tidy(shown), "{page}:{line}: `{file}` as written");
                            replayed += 1;
                            continue;
                        }
                        let sub = words.iter().skip(1).find(|w| !w.starts_with('-'));
                        if words.first() != Some(&"mcmpart")
                            || cmd.contains('|')
                            || !sub.is_some_and(|s| REPLAYED.contains(s))
                        {
                            continue;
                        }
                        // A file named only by the command is the block just before.
                        for w in &words[1..] {
                            if w.ends_with(".mcm") && !dir.join(w).exists() {
                                let code = unnamed.take().unwrap_or_else(|| {
                                    panic!("{page}:{line}: `{cmd}` reads `{w}`, which the page does not define")
                                });
                                std::fs::write(dir.join(w), code).unwrap();
                            }
                        }
                        let o = common::mcmpart_in(&dir, &words[1..]);
                        let (out, err) = common::text(&o);
                        let shown = tidy(shown);
                        assert!(
                            shows(&shown, &(out.clone() + &err)) || shows(&shown, &(err.clone() + &out)),
                            "{page}:{line}: `{cmd}` shows\n{shown}\nbut prints\n{out}{err}"
                        );
                        replayed += 1;
                    }
                }
                _ => {}
            }
        }
    }
    assert!(replayed >= 20, "only {replayed} commands replayed");
}
