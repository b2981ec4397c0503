//! A Python callable as the external evaluator of a search (hardware in
//! the loop from Python, e.g. `mcmpart.distributed.EvaluatorPool`, a pool
//! of Ray actors): the judge's evaluation threads call it with the GIL,
//! with the partition an external command gets on stdin, and read its
//! answer as they read a command's reply.

use mcmpart::cost::{parse_reply, Evaluate, Judge, Verdict};
use mcmpart::graph::Graph;
use mcmpart::problem::{partition_json, Metric, Placement, Problem};
use pyo3::prelude::*;
use std::sync::Arc;

/// Judges partitions by calling a Python callable.
pub struct PyEvaluate {
    callable: Py<PyAny>,
    graph: Arc<Graph>,
    num_chips: usize,
    metric: Metric,
}

impl PyEvaluate {
    pub fn new(problem: &Problem, callable: Py<PyAny>) -> PyEvaluate {
        PyEvaluate {
            callable,
            graph: problem.graph.clone(),
            num_chips: problem.package.num_chips(),
            metric: problem.objective.metric,
        }
    }

    /// The callable's answer to `chips` as the JSON text of an external
    /// evaluator's reply.
    fn ask(&self, py: Python<'_>, chips: &[u32]) -> PyResult<String> {
        let input = partition_json(&Placement::new(chips.to_vec()), &self.graph, self.num_chips);
        let arg = crate::convert::json(py, &input)?;
        let reply = self.callable.call1(py, (arg,))?;
        py.import("json")?.call_method1("dumps", (reply,))?.extract()
    }
}

impl Evaluate for PyEvaluate {
    fn evaluate(&self, chips: &[u32]) -> Verdict {
        Python::attach(|py| match self.ask(py, chips) {
            Ok(text) => parse_reply(&text, self.metric),
            // An evaluator that raises makes an invalid sample whose reason
            // is kept, as an external command that crashes does.
            Err(e) => Verdict::Invalid {
                reason: format!("the evaluator raised {e}"),
            },
        })
    }
}

/// A judge that asks `callable`, `jobs` evaluations at once (one per board
/// of a pool).
pub fn judge(problem: &Problem, callable: Py<PyAny>, jobs: usize) -> Judge {
    let describe = Python::attach(|py| {
        callable
            .bind(py)
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "a Python evaluator".into())
    });
    Judge::with(Box::new(PyEvaluate::new(problem, callable)), describe, jobs)
}
