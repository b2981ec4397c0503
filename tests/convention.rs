//! The one command-line convention, over every command clap knows (so a new
//! command or flag is held to it without being listed here): every flag
//! described in `--help` and its default shown there, `-o/--out` wherever a
//! command writes, and `--json` always a JSON object that says `ok`, names
//! the written file `out` and counts bytes in integers.

use crate::common::{self, json, mcmpart, mcmpart_in, text};
use clap::CommandFactory;
use mcmpart::cli::Cli;

/// The commands that only read, and so take no `-o/--out`; every other
/// command writes something.
const READ_ONLY: &[&str] = &["check", "domains", "verify", "test", "lsp", "stats"];

/// `fmt` rewrites the files it is given, in place.
const IN_PLACE: &[&str] = &["fmt"];

/// Every command that runs (no subcommands of its own), as its words.
fn leaf_commands() -> Vec<(Vec<String>, clap::Command)> {
    fn walk(path: Vec<String>, c: &clap::Command, out: &mut Vec<(Vec<String>, clap::Command)>) {
        let subs: Vec<&clap::Command> = c.get_subcommands().filter(|s| s.get_name() != "help").collect();
        if subs.is_empty() && !path.is_empty() {
            out.push((path.clone(), c.clone()));
        }
        for s in subs {
            let mut p = path.clone();
            p.push(s.get_name().to_string());
            walk(p, s, out);
        }
    }
    let mut out = Vec::new();
    let mut root = Cli::command();
    root.build();
    walk(Vec::new(), &root, &mut out);
    out
}

/// The arguments a user gives (not clap's own `--help`/`--version`).
fn user_args(c: &clap::Command) -> Vec<&clap::Arg> {
    c.get_arguments()
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .collect()
}

/// A description says something: a few words, not only a default or the
/// possible values clap appends.
fn described(help: &str) -> bool {
    help.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count()
        >= 2
}

#[test]
fn the_walk_finds_every_command() {
    let names: Vec<String> = leaf_commands().into_iter().map(|(p, _)| p.join(" ")).collect();
    for c in [
        "check",
        "solve",
        "train",
        "show",
        "lsp",
        "bench solver",
        "bench load",
        "bench bounds",
    ] {
        assert!(names.iter().any(|n| n == c), "{c} not in {names:?}");
    }
}

#[test]
fn every_flag_is_described_with_its_default_in_help() {
    for (path, cmd) in leaf_commands() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let o = mcmpart(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        let (help, _) = text(&o);
        let name = path.join(" ");
        assert!(
            cmd.get_about().is_some_and(|a| described(&a.to_string())),
            "`mcmpart {name}` has no description"
        );
        for a in user_args(&cmd) {
            // A positional is listed as `<NAME>`, or `[NAME]` when optional.
            let flag = a
                .get_long()
                .map_or_else(|| a.get_id().as_str().to_uppercase(), |l| format!("--{l}"));
            let about = a
                .get_long_help()
                .or(a.get_help())
                .map(ToString::to_string)
                .unwrap_or_default();
            assert!(described(&about), "`mcmpart {name}`: `{flag}` has no description");
            assert!(help.contains(&flag), "`mcmpart {name} --help` does not list `{flag}`");
            assert!(
                !a.is_hide_default_value_set(),
                "`mcmpart {name}`: `{flag}` hides its default"
            );
            // A switch's implicit `false` is no default to show.
            let defaults = if a.get_action().takes_values() {
                a.get_default_values()
            } else {
                &[]
            };
            for d in defaults {
                let shown = format!("[default: {}]", d.to_string_lossy());
                assert!(
                    help.contains(&shown),
                    "`mcmpart {name} --help` does not show `{flag}`'s {shown}"
                );
            }
        }
    }
}

#[test]
fn every_command_that_writes_takes_dash_o_out() {
    for (path, cmd) in leaf_commands() {
        let name = path.join(" ");
        let out = user_args(&cmd).into_iter().find(|a| a.get_long() == Some("out"));
        if READ_ONLY.contains(&name.as_str()) || IN_PLACE.contains(&name.as_str()) {
            assert!(out.is_none(), "`mcmpart {name}` reads only, yet takes --out");
            continue;
        }
        let out = out.unwrap_or_else(|| panic!("`mcmpart {name}` writes but takes no --out"));
        assert_eq!(out.get_short(), Some('o'), "`mcmpart {name} --out` has no -o");
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        assert!(
            text(&mcmpart(&args)).0.contains("-o, --out <OUT>"),
            "`mcmpart {name} --help`"
        );
    }
}

/// A command line that fails for each command: what clap requires, given
/// files that are not there (an enum takes its first value).
fn failing_args(path: &[String], cmd: &clap::Command) -> Vec<String> {
    let mut args: Vec<String> = path.to_vec();
    args.push("--json".into());
    for a in user_args(cmd).into_iter().filter(|a| a.is_required_set()) {
        let value = a
            .get_possible_values()
            .first()
            .map_or("does-not-exist.mcm".to_string(), |v| v.get_name().to_string());
        if let Some(l) = a.get_long() {
            args.push(format!("--{l}"));
        }
        args.push(value);
    }
    // A command whose input has a default (`bench load`'s folder) is given
    // one that is not there.
    if cmd.get_positionals().all(|p| !p.is_required_set()) && cmd.get_positionals().next().is_some() {
        args.push("does-not-exist".into());
    }
    args
}

#[test]
fn every_command_fails_in_json_with_ok_false() {
    // In an empty folder, so that no default input (data/graphs) is found either.
    let dir = common::scratch("convention-fail");
    for (path, cmd) in leaf_commands() {
        let args = failing_args(&path, &cmd);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = mcmpart_in(&dir, &a);
        assert_ne!(o.status.code(), Some(0), "{a:?}: {:?}", text(&o));
        let v = json(&o);
        assert_eq!(v["ok"], false, "{a:?}: {v}");
        // Why: one error, a file's diagnostics, or (`test`) each file's.
        assert!(
            v["error"].is_string() || v["diagnostics"].is_array() || v["errors"][0].is_object(),
            "{a:?}: {v}"
        );
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{a:?} wrote something");
    }
    // clap's own refusals too.
    for a in [
        &["--json", "solve"][..],
        &["--json", "solve", "x.mcm", "--budget", "0"],
        &["--json", "nonsense"],
    ] {
        let o = mcmpart(a);
        assert_eq!(o.status.code(), Some(2), "{a:?}");
        let v = json(&o);
        assert_eq!(v["ok"], false, "{a:?}: {v}");
        assert!(v["error"].as_str().is_some_and(|e| !e.contains('\n')), "{a:?}: {v}");
    }
}

/// Every count of bytes in a JSON answer (a key that ends in `bytes`, a
/// chip's `memory`, a load's `params`) is an integer.
fn byte_counts_are_integers(v: &serde_json::Value, at: &str) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let bytes = k.ends_with("bytes") || k == "memory" || k == "params";
                if bytes && !x.is_null() && !x.is_object() {
                    assert!(x.is_u64(), "{at}.{k} = {x} is not a whole number of bytes");
                }
                byte_counts_are_integers(x, &format!("{at}.{k}"));
            }
        }
        serde_json::Value::Array(xs) => {
            for (i, x) in xs.iter().enumerate() {
                byte_counts_are_integers(x, &format!("{at}[{i}]"));
            }
        }
        _ => {}
    }
}

#[test]
fn every_command_succeeds_in_json_with_ok_and_out() {
    let dir = common::scratch("convention-ok");
    let root = common::root();
    let r = |p: &str| root.join(p).display().to_string();
    let o = |p: &str| dir.join(p).display().to_string();
    let (qs, part, bad) = (
        r("examples/quickstart.mcm"),
        r("examples/quickstart.partition.json"),
        r("examples/quickstart.invalid.partition.json"),
    );
    let graphs = dir.join("graphs");
    std::fs::create_dir(&graphs).unwrap();
    std::fs::copy(root.join("examples/data/tiny_mlp.json"), graphs.join("tiny_mlp.json")).unwrap();
    let runs: Vec<(Vec<String>, Option<String>)> = vec![
        (vec!["check".into(), qs.clone()], None),
        (
            vec!["verify".into(), qs.clone(), "--partition".into(), part.clone()],
            None,
        ),
        (
            vec!["eval".into(), qs.clone(), "--partition".into(), part.clone()],
            None,
        ),
        (vec!["test".into(), qs.clone()], None),
        (vec!["fmt".into(), "--check".into(), qs.clone()], None),
        (vec!["stats".into(), r("examples/data/tiny_mlp.json")], None),
        (
            vec!["sample".into(), qs.clone(), "-o".into(), o("s.json")],
            Some(o("s.json")),
        ),
        (
            vec![
                "repair".into(),
                qs.clone(),
                "--proposal".into(),
                bad,
                "-o".into(),
                o("r.json"),
            ],
            Some(o("r.json")),
        ),
        (
            vec![
                "solve".into(),
                qs.clone(),
                "--budget".into(),
                "5".into(),
                "-o".into(),
                o("b.json"),
            ],
            Some(o("b.json")),
        ),
        (
            vec![
                "compare".into(),
                qs.clone(),
                "--strategies".into(),
                "random".into(),
                "--budget".into(),
                "5".into(),
                "--repeats".into(),
                "1".into(),
                "-o".into(),
                o("cmp"),
            ],
            Some(o("cmp")),
        ),
        (
            vec![
                "import".into(),
                r("tests/data/onnx/attention.onnx"),
                "-o".into(),
                o("a.json"),
            ],
            Some(o("a.json")),
        ),
        (vec!["show".into(), qs.clone(), "--partition".into(), part], None),
        (vec!["show".into(), r("examples/data/tiny_mlp.json")], None),
        (
            vec![
                "show".into(),
                qs.clone(),
                "--format".into(),
                "svg".into(),
                "-o".into(),
                o("p.svg"),
            ],
            Some(o("p.svg")),
        ),
        (
            vec![
                "bench".into(),
                "solver".into(),
                qs,
                "--mode".into(),
                "fix".into(),
                "--samples".into(),
                "2".into(),
                "-o".into(),
                o("bs.json"),
            ],
            Some(o("bs.json")),
        ),
        (
            vec![
                "bench".into(),
                "load".into(),
                graphs.display().to_string(),
                "--repeats".into(),
                "1".into(),
                "-o".into(),
                o("bl.json"),
            ],
            Some(o("bl.json")),
        ),
    ];
    for (args, written) in runs {
        let mut a: Vec<&str> = vec!["--json"];
        a.extend(args.iter().map(String::as_str));
        let out = mcmpart_in(&dir, &a);
        assert_eq!(out.status.code(), Some(0), "{a:?}: {:?}", text(&out));
        let v = json(&out);
        assert_eq!(v["ok"], true, "{a:?}: {v}");
        byte_counts_are_integers(&v, &args[0]);
        if let Some(w) = written {
            assert_eq!(v["out"], w.as_str(), "{a:?} names the file it wrote `out`: {v}");
            assert!(std::path::Path::new(&w).exists(), "{a:?} wrote nothing at {w}");
        }
    }
}
