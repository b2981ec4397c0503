//! The summary of a comparison as values: each problem's runs, and over
//! the problems the MCM paper's Tables 2 and 3 (improvement over greedy and
//! fraction of the lower bound at each budget, samples to reach a level).

use super::plot::{plot_points, Line};
use crate::problem::Metric;
use crate::strategy::Outcome;
use std::path::PathBuf;

/// One problem's runs: greedy's, then every strategy's.
#[derive(Clone, Debug)]
pub struct ProblemRuns {
    pub label: String,
    pub file: PathBuf,
    pub problem: String,
    pub graph: String,
    pub nodes: usize,
    pub chips: usize,
    pub judge: String,
    /// What the problem asks; its scores are one over that objective's cost
    /// (throughput, or steps per second under `minimize step_time`).
    pub objective: Metric,
    /// Greedy's score, the baseline; `None` when its partition was
    /// invalid at evaluation.
    pub greedy: Option<f64>,
    /// The score of the proven lower bound on the cost (no valid partition
    /// does better).
    pub bound: Option<f64>,
    pub runs: Vec<Outcome>,
}

impl ProblemRuns {
    pub fn of<'a>(&'a self, strategy: &'a str) -> impl Iterator<Item = &'a Outcome> + 'a {
        self.runs.iter().filter(move |o| o.strategy == strategy)
    }

    /// The proven gap: the best cost any run found (greedy's included)
    /// over the proven bound; `None` without a bound or a valid partition.
    pub fn gap(&self) -> Option<f64> {
        let best = self
            .runs
            .iter()
            .filter_map(|o| o.best.as_ref().map(|b| b.throughput))
            .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |x| x.max(t))))?;
        Some(self.proven_bound()? / best)
    }

    /// The bound's throughput, lowered by what a run proved (`exact`).
    pub fn proven_bound(&self) -> Option<f64> {
        let proved = self.runs.iter().filter_map(|o| o.proven_bound_s).fold(0.0, f64::max);
        self.bound.map(|b| if proved > 0.0 { b.min(1.0 / proved) } else { b })
    }

    /// Mean over seeds of `best_at(n) / denom`, a run with no valid sample
    /// by then counting 0.
    pub fn mean_at(&self, strategy: &str, n: usize, denom: f64) -> Option<f64> {
        let (mut sum, mut k) = (0.0, 0usize);
        for o in self.of(strategy) {
            sum += o.best_at(n).map_or(0.0, |b| b / denom);
            k += 1;
        }
        (k > 0).then(|| sum / k as f64)
    }
}

/// The geometric mean; `None` for none, 0 when any is 0 (a run with no
/// valid partition counts as 0 and pulls the mean down to it).
pub fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    if xs.iter().any(|&x| x <= 0.0) {
        return Some(0.0);
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// One cell of the tables: a strategy at a budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub strategy: String,
    pub budget: usize,
    /// Problems counted (those with a greedy baseline, resp. a bound).
    pub problems: usize,
    pub bound_problems: usize,
    pub runs: usize,
    /// Runs (on the problems with a baseline) with no valid sample by then.
    pub runs_without_valid: usize,
    pub improvement: Option<f64>,
    pub bound_fraction: Option<f64>,
}

/// The paper's tables as values: per strategy and budget the improvement
/// over greedy and the fraction of the bound, the overall curve, and the
/// samples each strategy needs to reach each level.
#[derive(Clone, Debug)]
pub struct Summary {
    pub names: Vec<String>,
    pub budgets: Vec<usize>,
    pub levels: Vec<f64>,
    pub cells: Vec<Cell>,
    /// Per strategy, the geometric-mean improvement after n samples, n = 1..=budget.
    pub overall: Vec<Vec<f64>>,
    /// Per strategy and level, the samples needed.
    pub reach: Vec<Vec<Option<usize>>>,
    /// Problems with a greedy baseline.
    pub baseline: usize,
}

impl Summary {
    pub fn new(
        problems: &[ProblemRuns],
        names: &[String],
        budgets: &[usize],
        levels: &[f64],
        budget: usize,
    ) -> Summary {
        let based: Vec<&ProblemRuns> = problems.iter().filter(|p| p.greedy.is_some()).collect();
        let improvement_at = |s: &str, n: usize| -> Option<f64> {
            let xs: Vec<f64> = based
                .iter()
                .filter_map(|p| p.mean_at(s, n, p.greedy.unwrap_or(1.0)))
                .collect();
            geomean(&xs)
        };
        let mut cells = Vec::new();
        for s in names {
            for &b in budgets {
                let fr: Vec<f64> = problems
                    .iter()
                    .filter_map(|p| p.bound.and_then(|bd| p.mean_at(s, b, bd)))
                    .collect();
                cells.push(Cell {
                    strategy: s.clone(),
                    budget: b,
                    problems: based.len(),
                    bound_problems: fr.len(),
                    runs: based.iter().map(|p| p.of(s).count()).sum(),
                    runs_without_valid: based
                        .iter()
                        .flat_map(|p| p.of(s))
                        .filter(|o| o.best_at(b).is_none())
                        .count(),
                    improvement: improvement_at(s, b),
                    bound_fraction: geomean(&fr),
                });
            }
        }
        let overall: Vec<Vec<f64>> = names
            .iter()
            .map(|s| (1..=budget).map(|n| improvement_at(s, n).unwrap_or(0.0)).collect())
            .collect();
        let reach = overall
            .iter()
            .map(|curve| {
                levels
                    .iter()
                    .map(|&l| curve.iter().position(|&x| x >= l * (1.0 - 1e-12)).map(|i| i + 1))
                    .collect()
            })
            .collect();
        Summary {
            names: names.to_vec(),
            budgets: budgets.to_vec(),
            levels: levels.to_vec(),
            cells,
            overall,
            reach,
            baseline: based.len(),
        }
    }

    pub fn cell(&self, s: &str, b: usize) -> Option<&Cell> {
        self.cells.iter().find(|c| c.strategy == s && c.budget == b)
    }

    pub fn overall_lines(&self) -> Vec<Line> {
        let n = self.overall.first().map_or(0, Vec::len);
        self.names
            .iter()
            .zip(&self.overall)
            .map(|(s, c)| {
                (
                    s.clone(),
                    plot_points(n).into_iter().map(|i| (i as f64, c[i - 1])).collect(),
                )
            })
            .collect()
    }
}

/// What the scores of `problems` are, in words: `throughput`, `steps per
/// second (one over the step time)`, or both when the objectives differ.
pub fn score_words(problems: &[ProblemRuns]) -> &'static str {
    let step = |p: &ProblemRuns| p.objective == Metric::StepTime;
    if problems.iter().all(step) && !problems.is_empty() {
        "steps per second (one over the step time)"
    } else if problems.iter().any(step) {
        "score (throughput; one over the step time under `minimize step_time`)"
    } else {
        "throughput"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geomean_counts_zero_and_skips_nothing() {
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[2.0, 0.0]), Some(0.0));
        assert!((geomean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
    }
}
