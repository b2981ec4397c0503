//! A comparison as files: `summary.csv` and `summary.md` (the tables),
//! `curves.csv` (every sample) and `figures.json` (all of it, for tools).

use super::summary::{score_words, ProblemRuns, Summary};
use super::{Config, Skipped};
use crate::strategy::Outcome;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// `summary.csv`, in long format: one row per strategy, metric and budget
/// (or level).
pub fn summary_csv(summary: &Summary) -> String {
    let mut s = String::from("strategy,metric,at,value,problems,runs,runs_without_valid\n");
    for c in &summary.cells {
        let _ = writeln!(
            s,
            "{},improvement_over_greedy,{},{},{},{},{}",
            csv_field(&c.strategy),
            c.budget,
            opt(c.improvement),
            c.problems,
            c.runs,
            c.runs_without_valid
        );
        let _ = writeln!(
            s,
            "{},fraction_of_bound,{},{},{},{},",
            csv_field(&c.strategy),
            c.budget,
            opt(c.bound_fraction),
            c.bound_problems,
            c.runs,
        );
    }
    for (name, reach) in summary.names.iter().zip(&summary.reach) {
        for (l, r) in summary.levels.iter().zip(reach) {
            let _ = writeln!(
                s,
                "{},samples_to_reach,{l},{},{},,",
                csv_field(name),
                r.map(|n| n.to_string()).unwrap_or_default(),
                summary.baseline
            );
        }
    }
    s
}

/// The table per problem: each strategy's mean best over greedy at each
/// budget (of the bound when greedy has no valid partition), the
/// invalid samples of its runs and a run's mean time.
fn per_problem(summary: &Summary, m: &mut String, problems: &[ProblemRuns]) {
    let names: Vec<&String> = summary.names.iter().filter(|s| *s != "greedy").collect();
    let budgets: Vec<String> = summary.budgets.iter().map(|b| b.to_string()).collect();
    let _ = writeln!(
        m,
        "\n**Per problem**: best over greedy at {} samples, mean over seeds (`%`: of the bound, where greedy \
         has no valid partition; `none`: no run has a valid one yet), in bold the best at the last budget; in \
         parentheses the invalid samples of all runs; a run's mean time; `gap`: the best cost (latency, or step \
         time) of all runs over the proven bound (1.00: proven optimal).\n",
        budgets.join(" / ")
    );
    let _ = write!(m, "| problem | nodes |");
    for s in &names {
        let _ = write!(m, " {s} |");
    }
    let _ = write!(m, " gap |\n|---|--:|");
    for _ in &names {
        let _ = write!(m, "--:|");
    }
    m.push_str("--:|\n");
    let mut order: Vec<&ProblemRuns> = problems.iter().collect();
    order.sort_by_key(|p| p.nodes);
    let last = summary.budgets.last().copied().unwrap_or(1);
    for p in order {
        let (denom, unit) = match (p.greedy, p.bound) {
            (Some(g), _) => (g, ""),
            (None, Some(b)) => (b / 100.0, "%"),
            (None, None) => (f64::NAN, ""),
        };
        let top = names
            .iter()
            .filter_map(|s| p.mean_at(s, last, denom))
            .fold(f64::NEG_INFINITY, f64::max);
        let _ = write!(m, "| {} | {} |", p.label, p.nodes);
        for s in &names {
            let runs: Vec<&Outcome> = p.of(s).collect();
            if runs.is_empty() || !denom.is_finite() {
                let _ = write!(m, " - |");
                continue;
            }
            let at: Vec<String> = summary
                .budgets
                .iter()
                .map(|&b| match runs.iter().all(|o| o.best_at(b).is_none()) {
                    true => "none".to_string(),
                    false => format!("{:.3}{unit}", p.mean_at(s, b, denom).unwrap_or(0.0)),
                })
                .collect();
            let mut cell = at.join(" / ");
            if p.mean_at(s, last, denom).is_some_and(|v| v >= top - 1e-12 && top > 0.0) {
                cell = format!("**{cell}**");
            }
            let invalid: usize = runs.iter().map(|o| o.invalid_count()).sum();
            if invalid > 0 {
                cell += &format!(" ({invalid})");
            }
            let time = runs.iter().map(|o| o.elapsed_s).sum::<f64>() / runs.len() as f64;
            let _ = write!(m, " {cell}, {time:.0} s |");
        }
        match p.gap() {
            Some(g) => {
                let _ = writeln!(m, " {g:.2}x |");
            }
            None => m.push_str(" - |\n"),
        }
    }
}

/// `summary.md`: the three tables over the problems, then the table per
/// problem, and the problems left out.
pub fn markdown(summary: &Summary, problems: &[ProblemRuns], skipped: &[Skipped], config: &Config) -> String {
    let mut m = String::new();
    let seeds = if config.repeats == 1 {
        format!("seed {}", config.seed)
    } else {
        format!(
            "seeds {}..{}",
            config.seed,
            config.seed.wrapping_add(config.repeats as u64 - 1)
        )
    };
    let _ = writeln!(
        m,
        "Strategies against greedy on {} problem(s), {} run(s) per strategy ({seeds}), up to {} samples per run; \
         greedy runs once per problem (one sample).\n",
        problems.len(),
        config.repeats,
        config.budget
    );
    let head = |m: &mut String, first: &str| {
        let _ = write!(m, "| {first} |");
        for b in &summary.budgets {
            let _ = write!(m, " {b} samples |");
        }
        let _ = write!(m, "\n|---|");
        for _ in &summary.budgets {
            let _ = write!(m, "--:|");
        }
        m.push('\n');
    };
    let _ = writeln!(
        m,
        "**Improvement over greedy**: {} of the best valid partition found within the budget over \
         greedy's, mean over seeds per problem, geometric mean over the {} problem(s) with a valid greedy \
         partition. A run with no valid partition by a budget counts as 0; `(k/n none)` says how many.\n",
        score_words(problems),
        summary.baseline
    );
    head(&mut m, "strategy");
    for s in &summary.names {
        let _ = write!(m, "| {} |", strategy_label(s));
        for &b in &summary.budgets {
            let c = summary.cell(s, b);
            let v = c.and_then(|c| c.improvement).map_or("-".into(), |x| format!("{x:.3}x"));
            let none = match c {
                Some(c) if c.runs_without_valid > 0 => format!(" ({}/{} none)", c.runs_without_valid, c.runs),
                _ => String::new(),
            };
            let _ = write!(m, " {v}{none} |");
        }
        m.push('\n');
    }
    let bound_n = summary.cells.first().map_or(0, |c| c.bound_problems);
    let _ = writeln!(
        m,
        "\n**Fraction of the lower bound** (the proven structural bound, as {}): mean over seeds, \
         geometric mean over the {bound_n} problem(s) with a bound; no valid partition counts as 0.\n",
        score_words(problems)
    );
    head(&mut m, "strategy");
    for s in &summary.names {
        let _ = write!(m, "| {} |", strategy_label(s));
        for &b in &summary.budgets {
            let v = summary
                .cell(s, b)
                .and_then(|c| c.bound_fraction)
                .map_or("-".into(), |x| format!("{:.1}%", 100.0 * x));
            let _ = write!(m, " {v} |");
        }
        m.push('\n');
    }
    let _ = writeln!(
        m,
        "\n**Samples to reach an improvement over greedy**, on the geometric-mean curve above \
         (`-`: not reached within {} samples).\n",
        config.budget
    );
    let _ = write!(m, "| strategy |");
    for l in &summary.levels {
        let _ = write!(m, " {l:.2}x |");
    }
    let _ = write!(m, "\n|---|");
    for _ in &summary.levels {
        let _ = write!(m, "--:|");
    }
    m.push('\n');
    for (s, reach) in summary.names.iter().zip(&summary.reach) {
        let _ = write!(m, "| {} |", strategy_label(s));
        for r in reach {
            let _ = write!(m, " {} |", r.map_or("-".into(), |n| n.to_string()));
        }
        m.push('\n');
    }
    per_problem(summary, &mut m, problems);
    let unbased: Vec<&str> = problems
        .iter()
        .filter(|p| p.greedy.is_none())
        .map(|p| p.label.as_str())
        .collect();
    if !unbased.is_empty() {
        let _ = writeln!(
            m,
            "\nGreedy found no valid partition of {} problem(s), left out of the improvement figures: {}.",
            unbased.len(),
            unbased.join(", ")
        );
    }
    if !skipped.is_empty() {
        let _ = writeln!(
            m,
            "\nSkipped {} problem(s): {}.",
            skipped.len(),
            skipped
                .iter()
                .map(|(l, why)| format!("{l} ({})", why.lines().next().unwrap_or("")))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    m
}

fn strategy_label(s: &str) -> String {
    if s == "greedy" {
        "greedy (baseline)".into()
    } else {
        s.to_string()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `curves.csv`: every sample of every run.
pub fn curves_csv(problems: &[ProblemRuns]) -> String {
    let mut s = String::from("problem,strategy,seed,sample,elapsed_s,throughput,best,improvement_over_greedy\n");
    for p in problems {
        let label = csv_field(&p.label);
        for o in &p.runs {
            for r in &o.records {
                let imp = match (r.best, p.greedy) {
                    (Some(b), Some(g)) => (b / g).to_string(),
                    _ => String::new(),
                };
                let _ = writeln!(
                    s,
                    "{label},{},{},{},{},{},{},{imp}",
                    csv_field(&o.strategy),
                    o.seed,
                    r.sample,
                    r.elapsed_s,
                    opt(r.throughput),
                    opt(r.best)
                );
            }
        }
    }
    s
}

/// `figures.json` (and `compare --json`): every run at every budget, the
/// summary and the overall curve.
pub fn figures_json(
    problems: &[ProblemRuns],
    skipped: &[Skipped],
    summary: &Summary,
    config: &Config,
    budgets: &[usize],
) -> Value {
    let probs: Vec<Value> = problems
        .iter()
        .map(|p| {
            let runs: Vec<Value> = p
                .runs
                .iter()
                .map(|o| {
                    let best = o.best.as_ref().map(|b| b.throughput);
                    let at: Vec<Value> = budgets
                        .iter()
                        .map(|&b| {
                            let t = o.best_at(b);
                            json!({
                                "budget": b, "best": t,
                                "improvement_over_greedy": t.zip(p.greedy).map(|(t, g)| t / g),
                                "fraction_of_bound": t.zip(p.bound).map(|(t, bd)| t / bd),
                            })
                        })
                        .collect();
                    json!({
                        "strategy": o.strategy, "seed": o.seed, "samples": o.records.len(),
                        "elapsed_s": o.elapsed_s, "invalid": o.invalid_count(), "best_throughput": best,
                        "found_at_sample": o.best.as_ref().map(|b| b.sample),
                        "improvement_over_greedy": best.zip(p.greedy).map(|(t, g)| t / g),
                        "fraction_of_bound": best.zip(p.bound).map(|(t, bd)| t / bd),
                        "at_budgets": at,
                    })
                })
                .collect();
            let mut v = json!({
                "label": p.label, "file": p.file.display().to_string(), "problem": p.problem, "graph": p.graph,
                "nodes": p.nodes, "chips": p.chips, "judge": p.judge, "objective": p.objective.name(),
                "greedy_throughput": p.greedy, "bound_throughput": p.bound, "gap": p.gap(), "runs": runs,
            });
            // Under step time the scores are steps per second: the seconds too.
            if p.objective == crate::problem::Metric::StepTime {
                v["greedy_step_time_s"] = json!(p.greedy.map(|g| 1.0 / g));
                v["bound_step_time_s"] = json!(p.proven_bound().map(|b| 1.0 / b));
            }
            v
        })
        .collect();
    let cells: Vec<Value> = summary
        .cells
        .iter()
        .map(|c| {
            json!({
                "strategy": c.strategy, "budget": c.budget, "problems": c.problems, "runs": c.runs,
                "runs_without_valid": c.runs_without_valid, "improvement_over_greedy": c.improvement,
                "bound_problems": c.bound_problems, "fraction_of_bound": c.bound_fraction,
            })
        })
        .collect();
    let reach: Vec<Value> = summary
        .names
        .iter()
        .zip(&summary.reach)
        .flat_map(|(s, r)| {
            summary
                .levels
                .iter()
                .zip(r)
                .map(move |(l, n)| json!({"strategy": s, "level": l, "samples": n}))
        })
        .collect();
    let overall: Vec<Value> = summary
        .overall_lines()
        .into_iter()
        .map(|(s, pts)| {
            let pts: Vec<Value> = pts.into_iter().map(|(n, v)| json!([n as usize, v])).collect();
            json!({"strategy": s, "points": pts})
        })
        .collect();
    let skipped: Vec<Value> = skipped
        .iter()
        .map(|(l, why)| json!({"label": l, "reason": why}))
        .collect();
    json!({
        "ok": true, "out": config.out.display().to_string(), "strategies": summary.names, "budget": config.budget,
        "repeats": config.repeats, "seed": config.seed, "budgets": budgets, "levels": summary.levels,
        "split": config.split, "graphs": config.graphs.as_ref().map(|g| g.display().to_string()),
        "problems": probs, "skipped": skipped, "summary": cells, "samples_to_reach": reach,
        "overall_curve": overall,
    })
}
