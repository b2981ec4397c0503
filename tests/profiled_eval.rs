//! `eval` with measured op times: the chips' kind picks them, and the report
//! counts the ops they costed.

use crate::common;

fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} != {b}");
}

/// Measured op times on the chips' kind replace flops / compute, and `eval`
/// says how many ops were measured: `x` (measured 1.5 ms on `die`) and `w`'s
/// copy next to `y` (0.25 ms) are; `y` has a time for another kind only and
/// costs 2 GFLOP / 1 TFLOP/s = 2 ms.
#[test]
fn eval_uses_measured_times_and_counts_the_profiled_ops() {
    let dir = common::scratch("profiled-eval");
    std::fs::write(
        dir.join("g.json"),
        r#"{"name": "g", "nodes": [
            {"id": "x", "flops": 1000000000, "output_bytes": 1000000, "times": {"die": 1.5e-3}},
            {"id": "y", "flops": 2000000000, "times": {"a100": 1e-6}},
            {"id": "w", "flops": 7, "replicable": true, "times": {"die": 2.5e-4}}],
           "edges": [{"from": "x", "to": "y"}, {"from": "w", "to": "y"}]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("p.mcm"),
        "use std::topologies::ring\n\
         let t = ring(n = 2, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s, kind = \"die\")\n\
         let g = graph(\"g.json\")\n\
         partition g onto t {\n    maximize throughput\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("part.json"),
        r#"{"graph": "g", "chips": 2, "placement": {"x": 0, "y": 1}}"#,
    )
    .unwrap();
    let o = common::mcmpart_in(&dir, &["eval", "p.mcm", "--partition", "part.json", "--json"]);
    let v = common::json(&o);
    let cost = &v["cost"];
    assert_eq!(
        (cost["profiled_ops"].as_u64(), cost["ops"].as_u64()),
        (Some(2), Some(3)),
        "{v}"
    );
    // die[0]: x's 1.5 ms plus its 1 MB over 1 GB/s; die[1]: y's 2 ms and w's copy.
    let stages: Vec<f64> = cost["chips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["stage_s"].as_f64().unwrap())
        .collect();
    close(stages[0], 1.5e-3 + 1e-3);
    close(stages[1], 2e-3 + 2.5e-4);
    close(cost["latency_s"].as_f64().unwrap(), 2.5e-3);
    let (out, err) = common::text(&common::mcmpart_in(
        &dir,
        &["eval", "p.mcm", "--partition", "part.json"],
    ));
    assert!(
        out.contains("profiled: 2 of 3 ops on their chip's kind (the rest cost flops / compute)"),
        "{out}{err}"
    );
    // Without a kind the same graph costs flops / compute, and says none was measured.
    let plain = std::fs::read_to_string(dir.join("p.mcm"))
        .unwrap()
        .replace(", kind = \"die\"", "");
    std::fs::write(dir.join("p.mcm"), plain).unwrap();
    let v = common::json(&common::mcmpart_in(
        &dir,
        &["eval", "p.mcm", "--partition", "part.json", "--json"],
    ));
    assert_eq!(v["cost"]["profiled_ops"], 0, "{v}");
    close(v["cost"]["latency_s"].as_f64().unwrap(), 2e-3 + 7e-12);
    let (out, _) = common::text(&common::mcmpart_in(
        &dir,
        &["eval", "p.mcm", "--partition", "part.json"],
    ));
    assert!(out.contains("profiled: 0 of 3 ops"), "{out}");
}
