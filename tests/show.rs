//! `mcmpart show FILE.mcm`: the package of a file as a table, JSON or SVG,
//! with warnings for packages that look wrong.

use crate::common::{self, json, mcmpart, mcmpart_in, text};

fn scratch_file(name: &str, text: &str) -> common::Scratch {
    let dir = common::scratch(name);
    std::fs::write(dir.join("p.mcm"), text).unwrap();
    dir
}

#[test]
fn a_3_by_4_mesh_has_12_chips_and_34_links() {
    let dir = scratch_file(
        "show-mesh",
        "use std::topologies::mesh\nlet package = mesh(rows = 3, cols = 4, memory = 64 MiB, compute = 2 TFLOP/s, bandwidth = 25 GB/s)\n",
    );
    let o = mcmpart_in(&dir, &["show", "p.mcm", "--format", "json"]);
    let d = json(&o);
    assert_eq!(d["ok"], true);
    assert_eq!(d["chips"].as_array().unwrap().len(), 12);
    assert_eq!(d["links"].as_array().unwrap().len(), 34);
    assert_eq!(d["chips"][5]["memory"], 64 << 20);
    assert_eq!(d["chips"][5]["compute"], 2e12);
    assert_eq!(d["links"][0]["bandwidth"], 25e9);
    // No problem asks for a pipeline order: the row ends are not flagged.
    assert_eq!(d["warnings"].as_array().unwrap().len(), 0, "{d}");
    // `--json` alone is JSON too.
    assert_eq!(
        json(&mcmpart_in(&dir, &["--json", "show", "p.mcm"]))["chips"][11]["name"],
        "tile[11]"
    );
    let (table, _) = text(&mcmpart_in(&dir, &["show", "p.mcm"]));
    assert!(table.contains("12 chips, 34 links"), "{table}");
    assert!(
        table.contains(
            "    5  tile[5]            64 MiB     2 TFLOP/s  1 (25 GB/s), 4 (25 GB/s), 6 (25 GB/s), 9 (25 GB/s)"
        ),
        "{table}"
    );
    let o = mcmpart_in(&dir, &["show", "p.mcm", "--format", "svg"]);
    let (svg, _) = text(&o);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<rect x=").count(), 12);
    // 17 pairs of opposite links, each one double-headed line.
    assert_eq!(svg.matches("marker-start=").count(), 17);
    assert!(svg.contains("64 MiB") && svg.contains("2 TFLOP/s") && svg.contains("25 GB/s"));
}

#[test]
fn suspicious_packages_are_warned_about() {
    let dir = scratch_file(
        "show-warn",
        "use std::placement::acyclic_flow\nuse std::topologies::mesh\n\
         topology odd() {\n    chips a[3] { memory = 0 B, compute = 1 TFLOP/s }\n    chips lone { memory = 1 MiB, compute = 1 TFLOP/s }\n    link a[0] -> a[2] { bandwidth = 1 GB/s }\n}\n\
         let weird = odd()\n\
         let grid = mesh(rows = 2, cols = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph { x -> y }\n\
         partition g onto grid { require acyclic_flow }\n",
    );
    let o = mcmpart_in(&dir, &["show", "p.mcm", "--package", "weird", "--format", "json"]);
    let w = json(&o)["warnings"].to_string();
    assert!(w.contains("chip 1 (`a[1]`) has no links"), "{w}");
    assert!(w.contains("chip 3 (`lone`) has no links"), "{w}");
    assert!(w.contains("chip 0 (`a[0]`) has zero memory"), "{w}");
    assert!(!w.contains("consecutive"), "no problem runs on it: {w}");
    // The problem's package, under a rule that wants a pipeline order.
    let (table, _) = text(&mcmpart_in(&dir, &["show", "p.mcm"]));
    assert!(
        table.contains("warning: consecutive chips not linked: 1 -> 2"),
        "{table}"
    );
    // Several packages and no choice: the command says how to choose.
    let o = mcmpart_in(&dir, &["show", "p.mcm", "--package", "wierd"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("did you mean `weird`?"), "{:?}", text(&o));
}

#[test]
fn a_partition_colours_chips_by_load() {
    let o = mcmpart(&[
        "show",
        "examples/quickstart.mcm",
        "--partition",
        "examples/quickstart.partition.json",
        "--format",
        "json",
    ]);
    let d = json(&o);
    let loads: Vec<u64> = d["chips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["load"]["nodes"].as_u64().unwrap())
        .collect();
    assert!(loads.iter().sum::<u64>() > 0, "{d}");
    let o = mcmpart(&[
        "show",
        "examples/quickstart.mcm",
        "--partition",
        "examples/quickstart.partition.json",
        "--format",
        "svg",
    ]);
    let (svg, _) = text(&o);
    assert!(svg.contains("colour: compute time"));
    // The busiest chip is red.
    assert!(svg.contains("fill=\"#ff3f00\""), "{svg}");
    // A graph file is still drawn as a graph; a package not as dot.
    let o = mcmpart(&["show", "examples/quickstart.mcm", "--format", "dot"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_books_pictures_are_what_show_draws() {
    for (args, picture) in [
        (
            vec!["show", "examples/mesh.mcm", "--format", "svg"],
            "book/src/images/mesh.svg",
        ),
        (
            vec![
                "show",
                "examples/quickstart.mcm",
                "--partition",
                "examples/quickstart.partition.json",
                "--format",
                "svg",
            ],
            "book/src/images/quickstart-load.svg",
        ),
    ] {
        let (svg, _) = text(&mcmpart(&args));
        let committed = std::fs::read_to_string(common::root().join(picture)).unwrap();
        assert_eq!(svg, committed, "{picture} is stale: run `mcmpart {}`", args.join(" "));
    }
}

#[test]
fn show_json_is_json_whatever_is_drawn() {
    // A graph: the drawing as a string.
    let o = mcmpart(&["--json", "show", "examples/data/tiny_mlp.json"]);
    let d = json(&o);
    assert_eq!(
        (d["ok"].clone(), d["format"].clone()),
        (true.into(), "dot".into()),
        "{d}"
    );
    assert!(d["drawing"].as_str().unwrap().starts_with("digraph"), "{d}");
    // A picture written to a file: where, and the package's warnings.
    let dir = common::scratch("show-json-out");
    let dest = dir.join("p.svg");
    let o = mcmpart(&[
        "--json",
        "show",
        "examples/mesh.mcm",
        "--format",
        "svg",
        "-o",
        dest.to_str().unwrap(),
    ]);
    let d = json(&o);
    assert_eq!(d["out"], dest.to_str().unwrap(), "{d}");
    assert_eq!(d["warnings"], serde_json::json!([]), "{d}");
    assert!(std::fs::read_to_string(&dest).unwrap().starts_with("<svg"));
}

#[test]
fn custom_attributes_and_latency_are_shown_in_text_and_json() {
    let dir = scratch_file(
        "show-custom",
        "topology pair() {\n    chips die[2] { memory = 128 GB, compute = 1 TFLOP/s, kind = \"hbm\" }\n    \
         set die[1] { kind = \"sram\", banks = 4 }\n    \
         link die[0] -> die[1] { bandwidth = 100 GB/s, latency = 2 us, lanes = 8 }\n}\nlet p = pair()\n",
    );
    let d = json(&mcmpart_in(&dir, &["show", "p.mcm", "--format", "json"]));
    assert_eq!(d["chips"][0]["attrs"], serde_json::json!({"kind": "hbm"}), "{d}");
    assert_eq!(
        d["chips"][1]["attrs"],
        serde_json::json!({"kind": "sram", "banks": 4}),
        "{d}"
    );
    assert_eq!(
        d["links"][0]["attrs"],
        serde_json::json!({"latency": 2e-6, "lanes": 8}),
        "{d}"
    );
    let (table, _) = text(&mcmpart_in(&dir, &["show", "p.mcm"]));
    for line in [
        "other attributes:",
        "  die[0]               kind = \"hbm\"",
        "  die[1]               banks = 4, kind = \"sram\"",
        "  link 0 -> 1          lanes = 8, latency = 2 us",
    ] {
        assert!(table.contains(line), "{line:?} not in\n{table}");
    }
    // Quantities read in the units they were written in.
    assert!(table.contains("   128 GB "), "{table}");
    assert!(table.contains("1 (100 GB/s)"), "{table}");
}
