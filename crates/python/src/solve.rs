//! `Problem.solve`: `mcmpart solve` from Python. The search runs on a
//! thread of its own with the GIL released; the caller's thread waits for
//! it and watches for Ctrl-C, which stops the search at its next sample.

use crate::convert;
use crate::errors::OrRaise;
use crate::partition::Partition;
use crate::problem::{Loaded, Problem};
use mcmpart::baseline::baseline;
use mcmpart::cost::bounds::with_proved;
use mcmpart::cost::{Judge, JudgeOptions};
use mcmpart::error::Error;
use mcmpart::problem::{partition_json, Metric, Placement};
use mcmpart::strategy::{self, Budget, RlOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// The strategy `solve` runs when none is named (as the command line's).
fn default_strategy(time: Option<f64>) -> &'static str {
    match time {
        Some(_) => mcmpart::cli::solve::DEFAULT_TIMED_STRATEGY,
        None => mcmpart::cli::solve::DEFAULT_STRATEGY,
    }
}

/// What a search found, with greedy's figure and the proven bound.
#[pyclass(module = "mcmpart._native", frozen)]
pub struct SolveResult {
    partition: Py<Partition>,
    found: Found,
    metric: Metric,
}

/// What the search thread finds: the report, the best partition's chips,
/// its figures.
struct Found {
    json: serde_json::Value,
    chips: Vec<u32>,
    /// The objective's figure as `solve` reports it (throughput, or seconds).
    value: f64,
    cost: f64,
    bound: Option<f64>,
    gap: Option<f64>,
}

#[pymethods]
impl SolveResult {
    /// The best valid partition found.
    #[getter]
    fn partition(&self, py: Python<'_>) -> Py<Partition> {
        self.partition.clone_ref(py)
    }

    /// The objective's figure of the best partition: throughput (/s) under
    /// `maximize throughput`, seconds under the time metrics.
    #[getter]
    fn value(&self) -> f64 {
        self.found.value
    }

    /// Its cost in seconds (the pipeline's period, or the step time).
    #[getter]
    fn cost(&self) -> f64 {
        self.found.cost
    }

    /// The proven lower bound on the cost in seconds (`None` when the
    /// partitions are judged by an external evaluator).
    #[getter]
    fn bound(&self) -> Option<f64> {
        self.found.bound
    }

    /// The cost over the proven bound (1: proven optimal).
    #[getter]
    fn gap(&self) -> Option<f64> {
        self.found.gap
    }

    /// The report as `mcmpart solve --json` prints it (less `out`, and
    /// `curve`, the per-sample records).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::json(py, &self.found.json)
    }

    fn __repr__(&self) -> String {
        format!(
            "<mcmpart.SolveResult {} {}: {} {:.6e}, gap {}>",
            self.found.json["strategy"].as_str().unwrap_or(""),
            self.found.json["problem"],
            self.metric.name(),
            self.value(),
            self.found.gap.map_or("unknown".to_string(), |g| format!("{g:.4}"))
        )
    }
}

/// Runs strategy `name` on the problem as `mcmpart solve` does, then
/// greedy's one partition and the bound.
fn search(
    l: &Loaded,
    name: &str,
    budget: Budget,
    seed: u64,
    evaluator: Option<(Py<PyAny>, usize)>,
) -> Result<Found, Error> {
    let p = l.problem();
    let sources = &l.compiled.program.sources;
    let mut strat = match strategy::by_name(name, &RlOptions::default()) {
        Ok(Some(s)) => s,
        Ok(None) => return Err(unknown(name)),
        Err(e) => return Err(Error::input(format!("strategy `{name}`: {e}"))),
    };
    let judge = match evaluator {
        Some((callable, jobs)) => crate::evaluator::judge(p, callable, jobs),
        None => Judge::new(p, &JudgeOptions::default())?,
    };
    let (o, _) = strategy::run_from(p, &judge, strat.as_mut(), budget, seed, None, None)
        .map_err(|inf| Error::infeasible(p, &inf, sources))?;
    if let Some(why) = &o.failure {
        return Err(Error::search(format!(
            "strategy `{}` failed after {} sample(s): {why}",
            o.strategy,
            o.records.len()
        )));
    }
    let Some(best) = &o.best else {
        // The evaluator's reasons (an external one's refusals, crashes).
        let why = match o.invalid.iter().max_by_key(|(_, n)| **n) {
            Some((reason, n)) => format!("; the most frequent reason ({n} sample(s)): {reason}"),
            None => String::new(),
        };
        return Err(Error::search(format!(
            "no valid partition of `{}` in {} sample(s): strategy `{}` found none valid{why}",
            p.name,
            o.records.len(),
            o.strategy
        )));
    };
    let base = baseline(p, &judge, seed);
    let analytical = judge.describe == "analytical";
    let proven = base
        .bound
        .as_ref()
        .filter(|_| analytical)
        .map(|b| with_proved(b, o.proven_bound_s));
    let metric = p.objective.metric;
    // The step as the simulator computes it (one over the score may differ
    // in the last bit), as `solve` reports it.
    let cost = match metric {
        Metric::StepTime => judge
            .objective()
            .filter(|_| analytical)
            .and_then(|m| m.cost(&best.chips).ok())
            .unwrap_or(1.0 / best.throughput),
        _ => 1.0 / best.throughput,
    };
    let gap = proven.as_ref().map(|b| cost / b.latency_s);
    let pl = Placement::new(best.chips.clone());
    let mut json = serde_json::json!({
        "ok": true, "problem": p.name, "strategy": o.strategy, "seed": o.seed, "judge": judge.describe,
        "objective": metric.name(), "samples": o.records.len(), "elapsed_s": o.elapsed_s,
        "found_at_sample": best.sample, "proven_bound": proven,
        "gap": gap, "proven_optimal": gap.is_some_and(mcmpart::cli::solve::proven_optimal),
        "invalid": o.invalid_count(), "solver": o.solver,
        "partition": partition_json(&pl, &p.graph, p.package.num_chips()),
        "interrupted": o.interrupted,
    });
    let greedy = base.latency();
    let value = match metric {
        Metric::Throughput => best.throughput,
        _ => cost,
    };
    if metric == Metric::StepTime {
        json["step_time_s"] = serde_json::json!(cost);
        json["greedy_step_time_s"] = serde_json::json!(greedy);
        json["bound_step_time_s"] = serde_json::json!(proven.as_ref().map(|b| b.latency_s));
    } else {
        json["throughput"] = serde_json::json!(best.throughput);
        json["latency_s"] = serde_json::json!(cost);
        json["greedy_throughput"] = serde_json::json!(base.throughput());
        json["proven_bound_latency_s"] = serde_json::json!(proven.as_ref().map(|b| b.latency_s));
    }
    Ok(Found {
        json,
        chips: best.chips.clone(),
        value,
        cost,
        bound: proven.map(|b| b.latency_s),
        gap,
    })
}

fn unknown(name: &str) -> Error {
    let known = strategy::NAMES.join(", ");
    let help = mcmpart::diag::suggest(name, strategy::NAMES.iter().copied())
        .map(|s| format!("did you mean `{s}`? The strategies are {known}"))
        .unwrap_or_else(|| format!("the strategies are {known}"));
    Error::usage(format!("unknown strategy `{name}`")).with_help(help)
}

#[allow(clippy::too_many_arguments)]
pub fn solve(
    py: Python<'_>,
    problem: &Problem,
    strategy_name: Option<&str>,
    budget: Option<usize>,
    time: Option<f64>,
    seed: u64,
    evaluator: Option<Py<PyAny>>,
    jobs: usize,
) -> PyResult<SolveResult> {
    if jobs == 0 {
        return Err(PyValueError::new_err("`jobs` must be at least 1"));
    }
    if let Some(e) = &evaluator {
        if !e.bind(py).is_callable() {
            return Err(PyValueError::new_err(
                "`evaluator` must be callable: partition dict -> reply dict (e.g. mcmpart.distributed.EvaluatorPool)",
            ));
        }
    }
    let budget = match (budget, time) {
        (Some(_), Some(_)) => {
            return Err(PyValueError::new_err(
                "give `budget` (samples) or `time` (seconds), not both",
            ))
        }
        (Some(0), None) => return Err(PyValueError::new_err("`budget` must be at least 1 sample")),
        (Some(n), None) => Budget::Samples(n),
        (None, Some(t)) if !(t.is_finite() && t > 0.0) => {
            return Err(PyValueError::new_err(format!(
                "`time` must be a positive number of seconds, not {t}"
            )))
        }
        (None, Some(t)) => Budget::Seconds(t),
        (None, None) => Budget::Samples(1000),
    };
    let name = strategy_name.unwrap_or_else(|| default_strategy(time)).to_string();
    if !strategy::NAMES.contains(&name.as_str()) {
        return Err(unknown(&name)).or_raise(py);
    }
    let loaded = problem.loaded.clone();
    let (tx, rx) = mpsc::channel::<Result<Found, Error>>();
    let worker = {
        let loaded: Arc<Loaded> = loaded.clone();
        std::thread::Builder::new()
            .name("mcmpart-solve".into())
            .stack_size(mcmpart::WORKER_STACK)
            .spawn(move || {
                let _ = tx.send(search(&loaded, &name, budget, seed, evaluator.map(|e| (e, jobs))));
            })
            .map_err(|e| PyValueError::new_err(format!("cannot start the search: {e}")))?
    };
    // Waited on with the GIL released: a receiver shared across threads
    // must be behind a lock.
    let rx = std::sync::Mutex::new(rx);
    let recv = |wait: Option<Duration>| -> Result<Result<Found, Error>, mpsc::RecvTimeoutError> {
        let rx = rx.lock().map_err(|_| mpsc::RecvTimeoutError::Disconnected)?;
        match wait {
            Some(w) => rx.recv_timeout(w),
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        }
    };
    let found = loop {
        match py.detach(|| recv(Some(Duration::from_millis(50)))) {
            Ok(r) => break r,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    // Stop at the next sample, wait for the thread, and
                    // let the next search run.
                    strategy::request_stop();
                    py.detach(|| {
                        let _ = recv(None);
                    });
                    strategy::clear_stop();
                    return Err(interrupt);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let why = match worker.join() {
                    Err(panic) => panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default(),
                    Ok(()) => String::new(),
                };
                return Err(
                    Error::internal(format!("internal error: the search ended without an answer {why}"))
                        .with_help("please report this with the .mcm file"),
                )
                .or_raise(py);
            }
        }
    };
    let found = found.or_raise(py)?;
    Ok(SolveResult {
        partition: Py::new(py, Partition::new(&loaded, found.chips.clone()))?,
        metric: loaded.problem().objective.metric,
        found,
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SolveResult>()?;
    m.add("STRATEGIES", strategy::NAMES.to_vec())
}
