//! `mcmpart solve` under a time budget runs the `auto` portfolio and reports
//! its proven bound; what it writes passes `verify`.

use crate::common;

#[test]
fn solve_reports_the_portfolio_with_its_proven_bound() {
    let dir = common::scratch("cli-solve-auto");
    let out = dir.join("p.json");
    let o = common::mcmpart(&[
        "solve",
        "examples/quickstart.mcm",
        "--time",
        "3",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = common::text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let v = common::json(&o);
    // The portfolio is the default under a time budget.
    assert_eq!(v["strategy"], "auto");
    let latency = v["latency_s"].as_f64().expect("latency_s");
    let bound = v["proven_bound_latency_s"].as_f64().expect("proven_bound_latency_s");
    assert!(bound > 0.0 && bound <= latency * (1.0 + 1e-9), "{bound} {latency}");
    assert_eq!(
        v["proven_optimal"].as_bool(),
        Some((latency - bound).abs() <= 1e-9 * latency)
    );
    assert!((v["throughput"].as_f64().unwrap() * latency - 1.0).abs() < 1e-9);
    // What it wrote passes verify.
    let verify = common::mcmpart(&[
        "verify",
        "examples/quickstart.mcm",
        "--partition",
        out.to_str().unwrap(),
    ]);
    assert_eq!(verify.status.code(), Some(0), "{:?}", common::text(&verify));
    // Without --time, dp stays the default.
    let o = common::mcmpart(&[
        "solve",
        "examples/quickstart.mcm",
        "--budget",
        "5",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(common::json(&o)["strategy"], "dp");
}
