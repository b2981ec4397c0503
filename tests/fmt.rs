//! `mcmpart fmt`: the repository is in its layout, and formatting keeps
//! what programs mean, their test verdicts included.

use crate::book::{blocks, markdown_files};
use crate::common::{self, mcmpart_in, text};
use mcmpart::lang::format::format_source;
use mcmpart::lang::{compile_str, Compiled};
use mcmpart::testing;

/// The `.mcm` files CI checks: all but the brief's programs (as the brief
/// writes them).
fn checked_files() -> Vec<String> {
    let o = std::process::Command::new("git")
        .args(["ls-files", "*.mcm", ":!tests/mcm/spec_programs.mcm"])
        .current_dir(common::root())
        .output()
        .expect("git");
    String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect()
}

#[test]
fn every_mcm_file_of_the_repository_is_formatted() {
    let files = checked_files();
    assert!(files.len() >= 15, "{files:?}");
    let mut args = vec!["fmt", "--check"];
    args.extend(files.iter().map(String::as_str));
    let o = common::mcmpart(&args);
    assert!(o.status.success(), "{:?}", text(&o));
}

/// (name, pass) of every test of a program.
fn verdicts(c: &Compiled) -> Vec<(String, bool)> {
    c.tests
        .iter()
        .map(|t| {
            let r = testing::run(t);
            (r.name, r.status == testing::Status::Pass)
        })
        .collect()
}

#[test]
fn formatting_keeps_every_test_verdict() {
    let root = common::root();
    // The files with tests, and the book's programs, formatted from a
    // deliberately untidy layout so that formatting has work to do.
    let mut programs: Vec<(String, String, std::path::PathBuf)> = Vec::new();
    for f in [
        "examples/quickstart.mcm",
        "tests/mcm/spec_tests.mcm",
        "tests/mcm/spec_programs.mcm",
    ] {
        let p = root.join(f);
        programs.push((
            f.into(),
            std::fs::read_to_string(&p).unwrap(),
            p.parent().unwrap().to_path_buf(),
        ));
    }
    let mut md = Vec::new();
    markdown_files(&root.join("book/src"), &mut md);
    for f in md {
        for (info, line, code) in blocks(&std::fs::read_to_string(&f).unwrap()) {
            if info == "mcm" && code.contains("test \"") {
                programs.push((format!("{}:{line}", f.display()), code, root.join("book/src")));
            }
        }
    }
    let mut tests = 0;
    for (name, src, dir) in &programs {
        let untidy = src.replace("    ", "\t").replace(", ", " ,").replace(" {\n", "\n{\n");
        let before = verdicts(&compile_str("a.mcm", src, dir));
        let formatted = format_source(&untidy).unwrap_or_else(|d| panic!("{name}: {d:?}"));
        let after = verdicts(&compile_str("a.mcm", &formatted, dir));
        assert_eq!(before, after, "{name}");
        assert_eq!(format_source(&formatted).unwrap(), formatted, "{name}: not idempotent");
        tests += before.len();
    }
    assert!(tests >= 15, "only {tests} tests");
}

#[test]
fn fmt_rewrites_checks_and_refuses_bad_syntax() {
    let dir = common::scratch("fmt");
    std::fs::write(dir.join("a.mcm"), "let x=1 // one\nlet y =  x+2\n").unwrap();
    std::fs::write(dir.join("bad.mcm"), "let x = \nlet y = 2\n").unwrap();
    let o = mcmpart_in(&dir, &["fmt", "--check", "a.mcm"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).0.contains("not formatted: a.mcm"));
    let o = mcmpart_in(&dir, &["fmt", "a.mcm"]);
    assert!(o.status.success());
    assert_eq!(
        std::fs::read_to_string(dir.join("a.mcm")).unwrap(),
        "let x = 1 // one\nlet y = x + 2\n"
    );
    let o = mcmpart_in(&dir, &["--json", "fmt", "--check", "a.mcm"]);
    assert_eq!(common::json(&o)["ok"], true);
    let o = mcmpart_in(&dir, &["fmt", "bad.mcm"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("bad.mcm:2:1"), "{:?}", text(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("bad.mcm")).unwrap(),
        "let x = \nlet y = 2\n"
    );
}
