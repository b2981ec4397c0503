//! Errors met through the command line: rendered on standard error with a
//! non-zero exit, by every command that reads the input (the diagnostics
//! themselves are checked in crates/lang/tests/errors.rs).

use crate::common;

use common::{errors, errors_in, scratch, HEADER};

fn assert_has(out: &str, parts: &[&str]) {
    for p in parts {
        assert!(out.contains(p), "missing {p:?} in:\n{out}");
    }
}

/// Nothing to place is an error of the problem, not an empty partition at
/// infinite throughput (anneal used to panic on it).
#[test]
fn a_problem_with_no_nodes_to_place_is_refused() {
    let dir = scratch("nothing-to-place");
    let replicable = r#"{"nodes": [{"id": "mask", "op": "placeholder", "replicable": true}], "edges": []}"#;
    for (f, json, why) in [
        ("empty.json", r#"{"nodes": [], "edges": []}"#, "this graph is empty"),
        ("masks.json", replicable, "its 1 node(s) are all replicable"),
    ] {
        std::fs::write(dir.join(f), json).unwrap();
        let text = format!(
            "{HEADER}let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
             let g = graph(\"{f}\")\npartition g onto t {{ require no_skip }}\n"
        );
        let out = errors_in(&dir, &text);
        assert_has(&out, &["mcm::graph", "has no nodes to place", why, "test.mcm:5:11"]);
        std::fs::write(dir.join("p.mcm"), &text).unwrap();
        for strategy in ["greedy", "anneal", "rl"] {
            let o = common::mcmpart_in(&dir, &["solve", "p.mcm", "--strategy", strategy, "--budget", "3"]);
            let (_, err) = common::text(&o);
            assert_eq!(o.status.code(), Some(1), "{strategy}: {err}");
            assert_has(&err, &["has no nodes to place"]);
        }
    }
}
/// Source files: a byte-order mark is dropped, bytes that are not UTF-8
/// are placed by line and column, a folder is named as one.
#[test]
fn source_files_that_are_not_plain_utf8_text() {
    let dir = scratch("encodings");
    let quick = std::fs::read(common::root().join("examples/quickstart.mcm")).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::copy(
        common::root().join("examples/data/tiny_mlp.json"),
        dir.join("data/tiny_mlp.json"),
    )
    .unwrap();
    let check = |name: &str| {
        let o = common::mcmpart_in(&dir, &["check", name]);
        let (out, err) = common::text(&o);
        (o.status.code(), format!("{out}{err}"))
    };
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend(&quick);
    std::fs::write(dir.join("bom.mcm"), &bom).unwrap();
    let (code, msg) = check("bom.mcm");
    assert_eq!(code, Some(0), "{msg}");

    std::fs::write(dir.join("latin1.mcm"), b"// ok\n// caf\xE9\n").unwrap();
    let (code, msg) = check("latin1.mcm");
    assert_eq!(code, Some(1), "{msg}");
    assert_has(
        &msg,
        &[
            "is not UTF-8 text: byte 0xE9 at line 2, column 7",
            "save the file as UTF-8",
        ],
    );

    std::fs::create_dir_all(dir.join("sub.mcm")).unwrap();
    let (code, msg) = check("sub.mcm");
    assert_eq!(code, Some(1), "{msg}");
    assert_has(&msg, &["`sub.mcm` is a folder, not a .mcm file"]);
    std::fs::write(dir.join("uses.mcm"), "use \"sub.mcm\"\n").unwrap();
    let (code, msg) = check("uses.mcm");
    assert_eq!(code, Some(1), "{msg}");
    assert_has(&msg, &["`sub.mcm` is a folder, not a .mcm file", "uses.mcm:1:"]);
    // Capped before it is read whole, like graph files.
    std::fs::File::create(dir.join("huge.mcm"))
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let (code, msg) = check("huge.mcm");
    assert_eq!(code, Some(1), "{msg}");
    assert_has(&msg, &["`huge.mcm` holds more than 256 MiB, the most this tool reads"]);
    // A device is no source file (it would be read until the cap).
    let (code, msg) = check("/dev/zero");
    assert_eq!(code, Some(1), "{msg}");
    assert_has(&msg, &["`/dev/zero` is not a regular file"]);
}
/// A negative (or infinite) memory, compute rate or bandwidth is refused
/// where the package is built, at the attribute and the call: a negative
/// memory used to reach `sample` as an internal error (the solver and the
/// checker disagreed on it).
#[test]
fn negative_capacities_and_rates_are_refused_at_the_package() {
    let dir = scratch("negative-rates");
    let problem = |memory: &str, compute: &str, bandwidth: &str| {
        format!(
            "{HEADER}let t = ring(n = 2, memory = {memory}, compute = {compute}, bandwidth = {bandwidth})\n\
             let g = graph {{ a {{ params = 1 KiB }} -> b }}\npartition g onto t {{ require memory_capacity }}\n"
        )
    };
    for (file, memory, compute, bandwidth, want) in [
        (
            "mem.mcm",
            "-1 MiB",
            "1 TFLOP/s",
            "1 GB/s",
            "`memory = -1 MiB`: a chip's memory cannot be negative",
        ),
        (
            "compute.mcm",
            "1 MiB",
            "-2 TFLOP/s",
            "1 GB/s",
            "`compute = -2 TFLOP/s`: a chip's compute rate cannot be negative",
        ),
        (
            "bw.mcm",
            "1 MiB",
            "1 TFLOP/s",
            "-1 GB/s",
            "`bandwidth = -1 GB/s`: a link's bandwidth cannot be negative",
        ),
    ] {
        std::fs::write(dir.join(file), problem(memory, compute, bandwidth)).unwrap();
        for cmd in ["check", "sample"] {
            let mut args = vec![cmd, file];
            if cmd == "sample" {
                args.extend(["--out", "p.json"]);
            }
            let o = common::mcmpart_in(&dir, &args);
            let (_, err) = common::text(&o);
            assert_eq!(o.status.code(), Some(1), "{cmd} {file}: {err}");
            let err = err.replace("\n  │ ", " ");
            assert_has(
                &err,
                &[
                    "mcm::package",
                    want,
                    "give `",
                    "a value of 0 or more",
                    "while building `ring` here",
                    "topologies.mcm",
                    &format!("{file}:3:9"),
                ],
            );
            assert!(!err.contains("internal error"), "{err}");
        }
    }
    // In a topology of one's own, the label is on the value written.
    let out = errors("topology t() { chips c[2] { memory = 1 MiB - 2 MiB } }\npartition graph { a } onto t()\n");
    assert_has(&out, &["`memory = -1 MiB`", "this is -1 MiB", "test.mcm:1:38"]);
    // Zero is kept: zero memory holds no weights, and zero compute is the
    // cost model's to refuse (`sample` needs no rates).
    std::fs::write(dir.join("zero.mcm"), problem("0 B", "0 TFLOP/s", "0 GB/s")).unwrap();
    let o = common::mcmpart_in(&dir, &["check", "zero.mcm"]);
    assert!(o.status.success(), "{:?}", common::text(&o));
    let o = common::mcmpart_in(&dir, &["sample", "zero.mcm", "--out", "p.json"]);
    let (_, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_has(&err, &["no valid partition", "memory_capacity"]);
    assert!(!err.contains("internal error"), "{err}");
    // Other attributes may be negative: they mean what a rule makes of them.
    common::compile_ok("topology t() { chips c[2] { offset = -3 } }\npartition graph { a } onto t()\n");
}
/// Graph and partition files over the size limit are refused before they
/// are read whole: a sparse file of a terabyte at once; a device such as
/// `/dev/zero` is not read at all (it used to be read until memory ran
/// out, and `/dev/stdin` made the language server read its own input).
#[test]
fn files_past_the_size_limit_are_refused_with_the_limit() {
    let dir = scratch("huge-files");
    std::fs::File::create(dir.join("huge.json"))
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let out = errors_in(&dir, "let g = graph(\"huge.json\")\n");
    assert_has(
        &out,
        &[
            "cannot load graph",
            "graph file `",
            "huge.json` holds more than 256 MiB, the most this tool reads",
            "test.mcm:1:9",
        ],
    );
    // (Not `/dev/stdin`: this process's may be a file; the language
    // server's test names it.)
    for dev in ["/dev/zero", "/dev/null"] {
        let out = errors_in(&dir, &format!("let g = graph(\"{dev}\")\n"));
        assert_has(
            &out,
            &[
                &format!("graph file `{dev}` is not a regular file"),
                "test.mcm:1:9",
                "devices and pipes are not read",
            ],
        );
    }
    std::fs::write(dir.join("p.mcm"), format!("{HEADER}let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\npartition graph {{ a -> b }} onto t\n")).unwrap();
    for cmd in ["verify", "eval"] {
        let o = common::mcmpart_in(&dir, &[cmd, "p.mcm", "--partition", "huge.json"]);
        let (_, err) = common::text(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_has(
            &err,
            &["partition file `huge.json` holds more than 256 MiB, the most this tool reads"],
        );
    }
}
/// A partition file's values of the wrong type name the key, what was
/// expected and where (`"chips": 4.0` read "expected , or }").
#[test]
fn partition_fields_of_the_wrong_type_say_what_was_expected() {
    let dir = scratch("typed-partition");
    std::fs::write(dir.join("p.mcm"), format!("{HEADER}let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\npartition graph {{ a -> b }} onto t\n")).unwrap();
    for (json, want) in [
        (
            r#"{"chips": 4.0, "placement": {"a": 0, "b": 1}}"#,
            "p.json: line 1, column 13: `chips` is 4.0, but a chip count is a whole number, written like 4",
        ),
        (
            r#"{"graph": ["g"], "placement": {"a": 0, "b": 1}}"#,
            "expected the graph's name (a string) for `graph`",
        ),
        (
            r#"{"placement": {"a": 0, "b": true}}"#,
            "expected a chip id (a whole number) for node `b`",
        ),
    ] {
        std::fs::write(dir.join("p.json"), json).unwrap();
        let o = common::mcmpart_in(&dir, &["verify", "p.mcm", "--partition", "p.json"]);
        let (_, err) = common::text(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_has(&err, &[want]);
        assert!(!err.contains("expected , or }"), "{err}");
    }
}
/// Replicable weights: `memory_capacity` counts the weights of placed nodes
/// only (its `nodes` leave replicable ones out), the dynamic check counts a
/// replicable node's weights on every chip that holds a copy. The rule is a
/// bound the solver propagates from each decision alone; the dynamic check
/// is the truth of memory, and `eval` and every strategy apply it. This
/// pins the difference the book documents (decisions: "Replicable weights").
#[test]
fn replicable_weights_count_in_the_dynamic_check_not_in_memory_capacity() {
    let dir = scratch("replicable-weights");
    let problem = |memory: &str| {
        format!(
            "{HEADER}let t = ring(n = 2, memory = {memory}, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
             let g = graph {{ w {{ params = 3 MiB, output_bytes = 3 MiB, replicable = true }} -> a -> b  w -> b }}\n\
             partition g onto t {{ require memory_capacity }}\n"
        )
    };
    std::fs::write(dir.join("p.json"), r#"{"placement": {"a": 0, "b": 1}}"#).unwrap();
    // 4 MiB: both chips hold a copy of `w`'s 3 MiB.
    std::fs::write(dir.join("fits.mcm"), problem("4 MiB")).unwrap();
    let o = common::mcmpart_in(&dir, &["--json", "eval", "fits.mcm", "--partition", "p.json"]);
    let v = common::json(&o);
    let weights: Vec<u64> = v["cost"]["chips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["weight_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(weights, vec![3 << 20, 3 << 20], "{v}");
    // 2 MiB: the rule holds (no placed node has weights), the dynamic check
    // refuses the copies.
    std::fs::write(dir.join("tight.mcm"), problem("2 MiB")).unwrap();
    let o = common::mcmpart_in(&dir, &["verify", "tight.mcm", "--partition", "p.json"]);
    assert!(o.status.success(), "{:?}", common::text(&o));
    let o = common::mcmpart_in(&dir, &["eval", "tight.mcm", "--partition", "p.json"]);
    let (out, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert_has(
        &format!("{out}{err}"),
        &["invalid at evaluation: chip `die[0]` runs out of memory at node `w`"],
    );
}
