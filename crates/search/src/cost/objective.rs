//! The seam between the search and the cost models: what a cost model is
//! ([`Objective`]), and the one table ([`MODELS`]) that says which model
//! judges which metric of the language.
//!
//! Every built-in model charges a placement a **cost**, lower is better:
//! the pipeline model its period (the slowest stage, one over throughput),
//! the step-time model the time of one step. The judge turns a cost into the
//! score the strategies maximise, one over the cost ([`score`]), so every
//! strategy works under every objective unchanged. A metric the user
//! maximises (`throughput`) is the inverse of such a cost.
//!
//! Adding a model (say energy): write its file in this folder with a type
//! that implements [`Objective`] and a `make` function, add its metric to
//! [`Metric`] (its name in the language and which way is better), and add
//! one [`Registration`] line to [`MODELS`].

use super::bounds::Bound;
use super::{analytical, step, CostError, CostModel};
use mcm_core::latency::LatencyModel;
use mcm_core::problem::{Metric, Problem};
use std::sync::Arc;

/// What a cost model says of placements of one problem. Callable from
/// several threads at once (evaluations run in parallel).
pub trait Objective: Send + Sync {
    /// The model's name in reports (`pipeline`, `step_time`).
    fn name(&self) -> &'static str;

    /// The key its cost goes by in JSON reports (`latency_s`, `step_time_s`).
    fn cost_key(&self) -> &'static str;

    /// What the model charges a full placement (one chip per placed node),
    /// in seconds for the time models; lower is better. `Err` says why the
    /// placement cannot be costed.
    fn cost(&self, chips: &[u32]) -> Result<f64, String>;

    /// The proven structural bound: no placement valid under the problem's
    /// rules costs less.
    fn bound(&self) -> Bound;

    /// The whole report of a placement: its cost, the bound, the JSON
    /// `eval --json` prints under `cost`, and the same in words.
    fn report(&self, chips: &[u32]) -> Result<Report, String>;

    /// The placement drawn as a picture (SVG), where the model has one.
    fn picture(&self, chips: &[u32]) -> Option<Result<String, String>> {
        let _ = chips;
        None
    }

    /// The latency model whose "latency ≤ T" the SAT backing encodes, when
    /// the cost is that latency. `None`: the model has no target encoding;
    /// the searches that ask SAT for a target then use the pipeline model's
    /// latency as a proxy to propose partitions and judge them by this cost.
    fn target(&self) -> Option<Arc<LatencyModel>> {
        None
    }
}

/// One evaluated placement.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub cost: f64,
    pub bound: Bound,
    /// The model's own figures, as `eval --json` prints them.
    pub json: serde_json::Value,
    /// The same in words, one line per figure or table row.
    pub text: String,
}

impl Report {
    /// The cost over the proven bound (1 when the bound is met).
    pub fn gap(&self) -> f64 {
        self.cost / self.bound.latency_s
    }
}

/// The score the strategies maximise for a cost: one over it (the
/// pipeline's throughput; under step time, steps per second). `None` for a
/// cost that is not positive and finite, which no search can rank.
pub fn score(cost: f64) -> Option<f64> {
    (cost > 0.0 && cost.is_finite()).then(|| 1.0 / cost)
}

/// How one model is made for a problem. The judge builds the pipeline model
/// for every problem (the dynamic memory check is its), and passes it on.
pub type Make = fn(&Problem, &Arc<CostModel>) -> Result<Arc<dyn Objective>, CostError>;

/// One line of [`MODELS`].
pub struct Registration {
    /// The model's name, as [`Objective::name`] gives it.
    pub name: &'static str,
    /// The metrics of the language it judges.
    pub metrics: &'static [Metric],
    pub make: Make,
}

/// Every cost model, keyed by the metrics it judges; each metric of
/// [`Metric::ALL`] appears exactly once.
pub const MODELS: &[Registration] = &[
    Registration {
        name: "pipeline",
        metrics: &[Metric::Throughput, Metric::Latency],
        make: analytical::make,
    },
    Registration {
        name: "step_time",
        metrics: &[Metric::StepTime],
        make: step::make,
    },
];

/// The registration of the model that judges `metric`.
pub fn registration(metric: Metric) -> &'static Registration {
    MODELS
        .iter()
        .find(|r| r.metrics.contains(&metric))
        .expect("every metric has a registered cost model (see the test)")
}

/// The metric a command line's `--objective` names, as the language spells
/// it; `Err` names the metrics the registered models judge.
pub fn metric_named(name: &str) -> Result<Metric, String> {
    let judged = |m: &Metric| MODELS.iter().any(|r| r.metrics.contains(m));
    Metric::from_name(name).filter(judged).ok_or_else(|| {
        let known: Vec<&str> = MODELS.iter().flat_map(|r| r.metrics.iter().map(|m| m.name())).collect();
        format!("unknown objective `{name}`: the known ones are {}", known.join(", "))
    })
}

/// `problem` under `metric` instead of its own objective (`--objective`),
/// the right way round (`maximize throughput`, `minimize step_time`).
pub fn set_metric(problem: &mut Problem, metric: Metric) {
    problem.objective = mcm_core::problem::Objective {
        sense: metric.better(),
        metric,
    };
}

/// The cost model of a problem's objective, sharing `pipeline` (the judge's
/// memory check) where the objective is the pipeline's.
pub fn objective_with(problem: &Problem, pipeline: &Arc<CostModel>) -> Result<Arc<dyn Objective>, CostError> {
    (registration(problem.objective.metric).make)(problem, pipeline)
}

/// The cost model of a problem's objective.
pub fn objective(problem: &Problem) -> Result<Arc<dyn Objective>, CostError> {
    objective_with(problem, &Arc::new(CostModel::new(problem)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_objective_is_named_as_the_language_spells_it() {
        assert_eq!(metric_named("step_time"), Ok(Metric::StepTime));
        assert_eq!(metric_named("throughput"), Ok(Metric::Throughput));
        let e = metric_named("steptime").unwrap_err();
        // Every metric some model judges is listed, from the registry.
        for m in MODELS.iter().flat_map(|r| r.metrics) {
            assert!(e.contains(m.name()), "{e}");
        }
        assert!(e.starts_with("unknown objective `steptime`"), "{e}");
    }

    #[test]
    fn every_metric_has_exactly_one_model() {
        for m in Metric::ALL {
            let n = MODELS.iter().filter(|r| r.metrics.contains(&m)).count();
            assert_eq!(n, 1, "{m} is judged by {n} models");
        }
        let mut names: Vec<&str> = MODELS.iter().map(|r| r.name).collect();
        names.dedup();
        assert_eq!(names.len(), MODELS.len());
    }

    #[test]
    fn a_score_ranks_lower_costs_higher_and_refuses_what_cannot_rank() {
        assert!(score(1.0).unwrap() > score(2.0).unwrap());
        assert_eq!(score(0.5), Some(2.0));
        for bad in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            assert_eq!(score(bad), None, "{bad}");
        }
    }
}
