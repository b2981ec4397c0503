//! `mcmpart eval FILE --partition P.json`: the cost model's figures for a
//! partition (latency, throughput, the proven bound and the gap, per chip), the dynamic check,
//! and the external evaluator's verdict when the problem names one.

use super::judge_args::EvalArgs;
use super::output::Output;
use super::problem::with_problem;
use crate::cost::{CostModel, Judge, Verdict};
use crate::diag::render_text;
use crate::error::{Error, Result, Status};
use crate::problem::read_partition;
use crate::quantity::{format_quantity, Dim};
use crate::solver::check;
use std::path::Path;

pub fn secs(v: f64) -> String {
    format_quantity(v, Dim::TIME)
}

fn bytes(v: f64) -> String {
    format_quantity(v, Dim::BYTES)
}

pub fn run(out: &Output, file: &Path, partition: &Path, problem: Option<&str>, args: &EvalArgs) -> Result {
    with_problem(file, problem, None, |p, sources| {
        let placement = read_partition(partition, &p.graph, p.package.num_chips())?;
        let model = CostModel::new(p)?;
        let judge = Judge::new(p, &args.options())?;
        let report = model
            .report(&placement.chips)
            .map_err(|m| Error::input(format!("the partition cannot be evaluated: {m}")))?;
        let violations = check(&p.graph, &p.package, &p.constraints, &placement);
        let verdict = judge.evaluate(&placement.chips);
        let valid = violations.is_empty() && matches!(verdict, Verdict::Valid { .. });
        if out.json {
            let vs: Vec<String> = violations.iter().map(|v| v.describe()).collect();
            out.print_json(&serde_json::json!({
                "ok": true, "problem": p.name, "valid": valid, "violations": vs,
                "judge": judge.describe, "verdict": verdict, "cost": report,
            }));
        } else {
            if !violations.is_empty() {
                let diags = super::verify::violation_diags(p, &violations);
                eprint!("{}", render_text(sources, &diags));
            }
            print_report(p, &report);
            match &verdict {
                Verdict::Valid { throughput } if judge.describe != "analytical" => {
                    println!("evaluator `{}`: throughput {throughput:.4} /s", judge.describe)
                }
                Verdict::Valid { .. } => {}
                Verdict::Invalid { reason } => println!("invalid at evaluation: {reason}"),
            }
            if valid {
                println!(
                    "valid: {} ({} nodes on {} chips)",
                    partition.display(),
                    p.graph.num_placed(),
                    p.package.num_chips()
                );
            } else if !violations.is_empty() {
                println!("invalid: the partition breaks {} rule instance(s)", violations.len());
            }
        }
        Ok(Status::of(valid))
    })
}

fn print_report(p: &crate::problem::Problem, r: &crate::cost::CostReport) {
    println!(
        "latency {} (throughput {:.4} /s); bottleneck `{}`",
        secs(r.latency_s),
        r.throughput,
        p.package.chips[r.bottleneck as usize].name
    );
    // Proven of valid partitions only: one that breaks a rule may beat it.
    println!(
        "bound   {} (throughput {:.4} /s), proven ({}): gap {:.2}x",
        secs(r.bound_latency_s),
        r.bound_throughput,
        r.bound.because,
        r.latency_s / r.bound_latency_s
    );
    if !p.graph.profile().is_empty() {
        println!(
            "profiled: {} of {} ops on their chip's kind (the rest cost flops / compute)",
            grouped(r.profiled_ops),
            grouped(r.ops)
        );
    }
    println!(
        "{:<12} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "chip", "nodes", "compute", "links", "stage", "weights", "peak", "memory"
    );
    for c in &r.chips {
        if c.nodes == 0 && c.stage_s == 0.0 && c.peak_bytes == 0 {
            continue;
        }
        println!(
            "{:<12} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
            c.name,
            c.nodes,
            secs(c.compute_s),
            secs(c.link_s),
            secs(c.stage_s),
            bytes(c.weight_bytes as f64),
            bytes(c.peak_bytes as f64),
            c.memory_bytes.map_or("-".to_string(), |m| bytes(m as f64))
        );
    }
    let idle = r
        .chips
        .iter()
        .filter(|c| c.nodes == 0 && c.stage_s == 0.0 && c.peak_bytes == 0)
        .count();
    if idle > 0 {
        println!("({idle} empty chip(s) not shown)");
    }
    print_links(p, r);
}

/// `1034` as `1,034`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Links shown at most: the busiest, since a large package has millions.
const LINKS_SHOWN: usize = 12;

/// The links that carry data, busiest first: traffic, time and the share
/// of the pipeline's period each is busy.
fn print_links(p: &crate::problem::Problem, r: &crate::cost::CostReport) {
    if r.links.is_empty() {
        return;
    }
    let mut busy: Vec<&crate::cost::LinkCost> = r.links.iter().collect();
    busy.sort_by(|a, b| b.time_s.total_cmp(&a.time_s).then(a.link.cmp(&b.link)));
    println!(
        "{:<24} {:>12} {:>9} {:>12} {:>11}",
        "link", "traffic", "transfers", "busy", "utilisation"
    );
    for l in busy.iter().take(LINKS_SHOWN) {
        let name = |c: u32| &p.package.chips[c as usize].name;
        println!(
            "{:<24} {:>12} {:>9} {:>12} {:>10.1}%",
            format!("{} -> {}", name(l.src), name(l.dst)),
            bytes(l.bytes as f64),
            l.transfers,
            secs(l.time_s),
            100.0 * l.utilisation
        );
    }
    if busy.len() > LINKS_SHOWN {
        println!(
            "({} more link(s) carry data; --json lists them all)",
            busy.len() - LINKS_SHOWN
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_are_grouped_by_thousands() {
        let g: Vec<String> = [0, 999, 1000, 1034, 1234567].into_iter().map(super::grouped).collect();
        assert_eq!(g, ["0", "999", "1,000", "1,034", "1,234,567"]);
    }
}
