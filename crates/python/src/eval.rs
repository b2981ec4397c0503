//! What `sample`, `repair`, `verify` and `eval` do, from Python: one valid
//! partition by SAMPLE, a proposal made valid by FIX, the checker's
//! violations, and the cost model's report.

use crate::convert;
use crate::errors::OrRaise;
use crate::partition::Partition;
use crate::problem::Problem;
use mcmpart::cli::eval::{evaluation, model_of};
use mcmpart::cost::{Judge, JudgeOptions};
use mcmpart::error::Error;
use mcmpart::problem::{Metric, Placement};
use mcmpart::solver::{check, fix, node_order, sample, Options, Order, Solver};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The order names of the command line's `--order`.
pub fn order(name: &str) -> PyResult<Order> {
    <Order as clap::ValueEnum>::from_str(name, false).map_err(|_| {
        let known: Vec<String> = <Order as clap::ValueEnum>::value_variants()
            .iter()
            .filter_map(|o| clap::ValueEnum::to_possible_value(o).map(|v| v.get_name().to_string()))
            .collect();
        PyValueError::new_err(format!("unknown order `{name}`; the orders are {}", known.join(", ")))
    })
}

/// `mcmpart sample FILE --seed S --order O`.
pub fn sample_one(py: Python<'_>, problem: &Problem, seed: u64, order_name: &str, sat: bool) -> PyResult<Partition> {
    let order_kind = order(order_name)?;
    let l = &problem.loaded;
    let chips = py
        .detach(|| -> Result<Vec<u32>, Error> {
            let mut s = Solver::new(l.problem(), Options { native: true, sat })
                .map_err(|inf| Error::infeasible(l.problem(), &inf, &l.compiled.program.sources))?;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let ord = node_order(&s, order_kind, &mut rng);
            let pl = sample(&mut s, &ord, None, &mut rng)
                .map_err(|inf| Error::infeasible(l.problem(), &inf, &l.compiled.program.sources))?;
            Ok(pl.chips)
        })
        .or_raise(py)?;
    Ok(Partition::new(l, chips))
}

/// `mcmpart repair FILE --proposal P --seed S --order O`.
pub fn fix_one(
    py: Python<'_>,
    problem: &Problem,
    proposal: &Bound<'_, PyAny>,
    seed: u64,
    order_name: &str,
    sat: bool,
) -> PyResult<Partition> {
    let order_kind = order(order_name)?;
    let l = &problem.loaded;
    let prop = convert::proposal(l, proposal)?;
    let (chips, moved) = py
        .detach(|| -> Result<(Vec<u32>, usize), Error> {
            let mut s = Solver::new(l.problem(), Options { native: true, sat })
                .map_err(|inf| Error::infeasible(l.problem(), &inf, &l.compiled.program.sources))?;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let ord = node_order(&s, order_kind, &mut rng);
            let (pl, moved) = fix(&mut s, &ord, &prop, None, &mut rng)
                .map_err(|inf| Error::infeasible(l.problem(), &inf, &l.compiled.program.sources))?;
            Ok((pl.chips, moved))
        })
        .or_raise(py)?;
    Ok(Partition {
        moved: Some(moved),
        ..Partition::new(l, chips)
    })
}

/// The checker's violations of `partition`, one line each (`verify`).
pub fn verify(problem: &Problem, partition: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let chips = convert::partition(&problem.loaded, partition)?;
    let p = problem.p();
    Ok(check(&p.graph, &p.package, &p.constraints, &Placement::new(chips))
        .iter()
        .map(|v| v.describe())
        .collect())
}

/// A partition judged as `mcmpart eval` judges it.
#[pyclass(module = "mcmpart._native", frozen)]
pub struct Evaluation {
    json: serde_json::Value,
    text: String,
    cost: f64,
    metric: Metric,
    valid: bool,
    violations: Vec<String>,
    gap: f64,
    bound: f64,
}

#[pymethods]
impl Evaluation {
    /// What the model charges in seconds: the pipeline's period (one over
    /// the throughput) or the step time.
    #[getter]
    fn cost(&self) -> f64 {
        self.cost
    }

    /// The objective's own figure: throughput (/s) under `maximize
    /// throughput`, seconds under the time metrics.
    #[getter]
    fn value(&self) -> f64 {
        match self.metric {
            Metric::Throughput => 1.0 / self.cost,
            _ => self.cost,
        }
    }

    /// The metric judged: `throughput`, `latency`, `step_time`.
    #[getter]
    fn objective(&self) -> &'static str {
        self.metric.name()
    }

    /// No rule broken and valid at evaluation.
    #[getter]
    fn valid(&self) -> bool {
        self.valid
    }

    #[getter]
    fn violations(&self) -> Vec<String> {
        self.violations.clone()
    }

    /// The proven bound on the cost, in seconds: no valid partition costs less.
    #[getter]
    fn bound(&self) -> f64 {
        self.bound
    }

    /// The cost over the bound (1 when the bound is met).
    #[getter]
    fn gap(&self) -> f64 {
        self.gap
    }

    /// The report in words, as `mcmpart eval` prints it.
    #[getter]
    fn text(&self) -> String {
        self.text.clone()
    }

    /// The report as `mcmpart eval --json` prints it.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::json(py, &self.json)
    }

    fn __str__(&self) -> String {
        self.text.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "<mcmpart.Evaluation {} {:.6e}, gap {:.4}, {}>",
            self.metric.name(),
            self.value(),
            self.gap,
            if self.valid { "valid" } else { "invalid" }
        )
    }
}

/// `mcmpart eval FILE --partition P`, under the problem's objective or
/// under `objective` (a metric's name) instead.
pub fn evaluate(
    py: Python<'_>,
    problem: &Problem,
    partition: &Bound<'_, PyAny>,
    objective: Option<&str>,
) -> PyResult<Evaluation> {
    let chips = convert::partition(&problem.loaded, partition)?;
    let mut p = problem.p().clone();
    if let Some(name) = objective {
        let metric = Metric::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
            PyValueError::new_err(format!(
                "unknown objective `{name}`; the metrics are {}",
                known.join(", ")
            ))
        })?;
        p.objective.metric = metric;
        p.objective.sense = metric.better();
    }
    let e = py
        .detach(|| -> Result<_, Error> {
            let judge = Judge::new(&p, &JudgeOptions::default())?;
            let model = model_of(&p, &judge)?;
            let e = evaluation(&p, &judge, &model, &Placement::new(chips))?;
            Ok(e)
        })
        .or_raise(py)?;
    Ok(Evaluation {
        cost: e.report.cost,
        gap: e.report.gap(),
        bound: e.report.bound.latency_s,
        text: e.report.text.clone(),
        metric: p.objective.metric,
        valid: e.valid,
        violations: e.violations.iter().map(|v| v.describe()).collect(),
        json: e.json,
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Evaluation>()
}
