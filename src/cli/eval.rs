//! `mcmpart eval FILE --partition P.json`: the objective's cost model's
//! figures for a partition (the pipeline's latency and throughput per chip,
//! or the step time with each chip's and link's busy time and what ends
//! last), the proven bound and the gap, the dynamic check, and the external
//! evaluator's verdict when the problem names one. `--format svg` draws the
//! step as a timeline instead (`minimize step_time`).

use super::judge_args::EvalArgs;
use super::output::{refuse_overwriting, Output};
use super::problem::with_problem_under;
use crate::cost::{Judge, Verdict};
use crate::diag::render_text;
use crate::error::{Error, Result, Status};
use crate::problem::read_partition;
use crate::quantity::{format_quantity, Dim};
use crate::solver::check;
use std::path::Path;

pub fn secs(v: f64) -> String {
    format_quantity(v, Dim::TIME)
}

/// What `eval` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The figures in words (or JSON with `--json`).
    Text,
    /// The figures as JSON, as `--json` prints them.
    Json,
    /// The step as a timeline: a row per chip and per link (`minimize step_time`).
    Svg,
}

/// Where `eval` writes.
pub struct Dest<'a> {
    pub format: Option<Format>,
    pub out: Option<&'a Path>,
    /// The objective that replaces the problem's (`--objective`).
    pub objective: Option<crate::problem::Metric>,
}

pub fn run(out: &Output, file: &Path, partition: &Path, problem: Option<&str>, args: &EvalArgs, dest: &Dest) -> Result {
    if dest.format == Some(Format::Json) && !out.json {
        return run(&Output { json: true }, file, partition, problem, args, dest);
    }
    if let Some(d) = dest.out {
        if dest.format != Some(Format::Svg) {
            return Err(Error::usage("`--out` is for `--format svg`").with_help("the figures go to standard output"));
        }
        refuse_overwriting(d, &[file.to_path_buf(), partition.to_path_buf()], "`eval` reads")?;
    }
    with_problem_under(file, problem, None, dest.objective, |p, sources| {
        let placement = read_partition(partition, &p.graph, p.package.num_chips())?;
        let judge = Judge::new(p, &args.options())?;
        let model = model_of(p, &judge)?;
        if dest.format == Some(Format::Svg) {
            let drawing = model
                .picture(&placement.chips)
                .ok_or_else(|| {
                    Error::usage(format!(
                        "the {} model draws no timeline: `--format svg` draws the step of `minimize step_time`",
                        model.name()
                    ))
                    .with_help("write `minimize step_time` in the problem to see its step")
                })?
                .map_err(|m| Error::input(format!("the partition cannot be evaluated: {m}")))?;
            match dest.out {
                Some(d) => {
                    std::fs::write(d, &drawing)
                        .map_err(|e| Error::output(format!("cannot write `{}`: {e}", d.display())))?;
                    if out.json {
                        out.print_json(&serde_json::json!({"out": d.display().to_string(), "format": "svg"}));
                    }
                }
                None if out.json => out.print_json(&serde_json::json!({"format": "svg", "drawing": drawing})),
                None => print!("{drawing}"),
            }
            return Ok(Status::Success);
        }
        let e = evaluation(p, &judge, &model, &placement)?;
        let (report, violations, verdict, valid) = (&e.report, &e.violations, &e.verdict, e.valid);
        let metric = p.objective.metric;
        if out.json {
            out.print_json(&e.json);
        } else {
            if !violations.is_empty() {
                let diags = super::verify::violation_diags(p, violations);
                eprint!("{}", render_text(sources, &diags));
            }
            print!("{}", report.text);
            match verdict {
                Verdict::Valid { throughput } if judge.describe != "analytical" => match model.name() {
                    "pipeline" => println!("evaluator `{}`: throughput {throughput:.4} /s", judge.describe),
                    _ => println!("evaluator `{}`: {} {}", judge.describe, metric, secs(1.0 / throughput)),
                },
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

/// A partition judged as `eval` judges it: the cost model's report, the
/// checker's violations, the judge's verdict, and the `eval --json` object.
pub struct Evaluation {
    pub report: crate::cost::objective::Report,
    pub violations: Vec<crate::solver::Violation>,
    pub verdict: Verdict,
    /// No violation and a valid verdict.
    pub valid: bool,
    pub json: serde_json::Value,
}

/// Evaluates `placement` of `p` under `model` (the objective's cost model)
/// and `judge`, as `eval` reports it; `Err` when the model cannot cost it.
pub fn evaluation(
    p: &crate::problem::Problem,
    judge: &Judge,
    model: &std::sync::Arc<dyn crate::cost::objective::Objective>,
    placement: &crate::problem::Placement,
) -> Result<Evaluation> {
    let report = model
        .report(&placement.chips)
        .map_err(|m| Error::input(format!("the partition cannot be evaluated: {m}")))?;
    let violations = check(&p.graph, &p.package, &p.constraints, placement);
    let verdict = judge.evaluate(&placement.chips);
    let valid = violations.is_empty() && matches!(verdict, Verdict::Valid { .. });
    let vs: Vec<String> = violations.iter().map(|v| v.describe()).collect();
    let mut json = serde_json::json!({
        "ok": true, "problem": p.name, "valid": valid, "violations": vs,
        "judge": judge.describe, "verdict": verdict,
        "objective": p.objective.metric.name(), "model": model.name(),
        "gap": report.gap(), "cost": report.json,
    });
    json[model.cost_key()] = serde_json::json!(report.cost);
    Ok(Evaluation {
        report,
        violations,
        verdict,
        valid,
        json,
    })
}

/// The cost model `eval` reports with: the judge's, else the objective's.
pub fn model_of(
    p: &crate::problem::Problem,
    judge: &Judge,
) -> Result<std::sync::Arc<dyn crate::cost::objective::Objective>> {
    Ok(match judge.objective() {
        Some(m) => m.clone(),
        None => crate::cost::objective::objective(p)?,
    })
}
