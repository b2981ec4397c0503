//! `compare` as jobs for drivers written in Python (`python -m
//! mcmpart.distributed compare`): the same options and checks as the
//! command line's `compare`, the jobs it has not yet kept in its journal,
//! one job run alone from its spec (in a worker), and the journal and the
//! summaries written as the command line writes them.

use crate::errors::{to_py, OrRaise};
use mcmpart::cli::{compare_config, CompareArgsError};
use mcmpart::error::{Error, Result as McmResult};
use mcmpart::experiment::compare::{self, Compare, Config, JobSpec};
use mcmpart::strategy::Outcome;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// Progress lines and warnings, on stderr as the command line gives them.
fn log(line: &str) {
    eprintln!("{line}");
}

/// The comparison `mcmpart compare WORDS` runs; `Ok(None)` with the help
/// text printed when `--help` was asked for.
fn config(words: Vec<String>) -> McmResult<Result<Config, String>> {
    match compare_config(words) {
        Ok(c) => Ok(Ok(c)),
        Err(CompareArgsError::Help(text)) => Ok(Err(text)),
        Err(CompareArgsError::Invalid(e)) => Err(e),
    }
}

/// The help of `python -m mcmpart.distributed compare` (the command
/// line's `compare`'s), when `words` ask for it; raises `MCMError` for
/// words the command line refuses.
#[pyfunction]
fn compare_help(py: Python<'_>, words: Vec<String>) -> PyResult<Option<String>> {
    Ok(config(words).or_raise(py)?.err())
}

/// A comparison prepared from the command line's words: its problems
/// compiled, greedy run on each, its jobs listed. Holds the output
/// folder's lock (as a running `mcmpart compare` does) until `finish`.
#[pyclass(module = "mcmpart._native", unsendable)]
pub struct ComparePlan {
    compare: Option<Compare>,
    results: Vec<Option<Result<Outcome, String>>>,
    reused: usize,
}

impl ComparePlan {
    fn compare(&self) -> PyResult<&Compare> {
        self.compare
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("the comparison is finished"))
    }

    fn index(&self, k: usize) -> PyResult<usize> {
        let n = self.results.len();
        if k >= n {
            return Err(PyIndexError::new_err(format!(
                "job {k} is out of range: there are {n} jobs"
            )));
        }
        Ok(k)
    }
}

#[pymethods]
impl ComparePlan {
    /// `words`: what follows `mcmpart compare` on its command line.
    #[new]
    fn new(py: Python<'_>, words: Vec<String>) -> PyResult<ComparePlan> {
        let config = match config(words).or_raise(py)? {
            Ok(c) => c,
            Err(_) => return Err(PyValueError::new_err("--help asks for no comparison")),
        };
        let compare = py.detach(|| Compare::prepare(&config, &log)).or_raise(py)?;
        let n = compare.jobs().len();
        Ok(ComparePlan {
            compare: Some(compare),
            results: (0..n).map(|_| None).collect(),
            reused: 0,
        })
    }

    /// The jobs not yet finished, largest graphs first. With `--resume`,
    /// the runs the journal holds for a job are taken here (said on
    /// stderr as the command line says them) and the job is not listed.
    fn missing(&mut self, py: Python<'_>) -> PyResult<Vec<usize>> {
        let c = self
            .compare
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("the comparison is finished"))?;
        let mut missing = Vec::new();
        for k in c.schedule() {
            if self.results[k].is_some() {
                continue;
            }
            match py.detach(|| c.resumed(k, &log)) {
                Some(o) => {
                    let r = Ok(o);
                    c.report(k, &r, &log);
                    self.results[k] = Some(r);
                    self.reused += 1;
                }
                None => missing.push(k),
            }
        }
        Ok(missing)
    }

    /// Job `k`: (problem label, strategy, seed).
    fn job(&self, k: usize) -> PyResult<(String, String, u64)> {
        let c = self.compare()?;
        let k = self.index(k)?;
        let j = &c.jobs()[k];
        Ok((c.label(k).to_string(), j.strategy.clone(), j.seed))
    }

    #[getter]
    fn num_jobs(&self) -> usize {
        self.results.len()
    }

    /// What a worker needs to run job `k` (`run_job`), as JSON.
    fn spec(&self, k: usize) -> PyResult<String> {
        let c = self.compare()?;
        let k = self.index(k)?;
        serde_json::to_string(&c.spec(k)).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// Takes job `k`'s run made by a worker (its JSON, from `run_job`):
    /// checks that it is a sound run of the job, keeps it in the journal
    /// (a temporary file renamed into place) and says it on stderr.
    /// Raises ValueError for a run that is not the job's.
    fn accept(&mut self, py: Python<'_>, k: usize, outcome: &str) -> PyResult<()> {
        let k = self.index(k)?;
        let o: Outcome =
            serde_json::from_str(outcome).map_err(|e| PyValueError::new_err(format!("job {k}: not a run: {e}")))?;
        let c = self.compare()?;
        py.detach(|| c.check(k, &o)).map_err(PyValueError::new_err)?;
        py.detach(|| c.save(k, &o, &log));
        let r = Ok(o);
        c.report(k, &r, &log);
        self.results[k] = Some(r);
        Ok(())
    }

    /// Job `k` failed for good (`why`): its problem is left out of the
    /// summaries, as the command line leaves out a problem whose run fails.
    fn fail(&mut self, k: usize, why: String) -> PyResult<()> {
        let k = self.index(k)?;
        let r = Err(why);
        self.compare()?.report(k, &r, &log);
        self.results[k] = Some(r);
        Ok(())
    }

    /// Writes the tables, curves and figures as `mcmpart compare` does, lets
    /// go of the output folder, and gives what `mcmpart compare` prints on
    /// stdout. A job never accepted nor failed counts as not finished.
    fn finish(&mut self, py: Python<'_>) -> PyResult<String> {
        let Some(c) = self.compare.take() else {
            return Err(PyRuntimeError::new_err("the comparison is finished"));
        };
        let out = c.config().out.clone();
        let results: Vec<Result<Outcome, String>> = self
            .results
            .drain(..)
            .map(|r| r.unwrap_or_else(|| Err("the run did not finish".into())))
            .collect();
        let reused = self.reused;
        let report = py.detach(|| c.finish(results, reused, &log)).or_raise(py)?;
        Ok(mcmpart::cli::compare_report_text(&report, &out))
    }
}

/// Runs one job in a worker: `words` are the comparison's (as for
/// `ComparePlan`), `spec` a job's spec from `ComparePlan.spec`. Returns the
/// run as JSON; raises `MCMError` when it fails (the problem does not
/// compile here, or is not the one planned, or the strategy fails).
#[pyfunction]
fn run_job(py: Python<'_>, words: Vec<String>, spec: &str) -> PyResult<String> {
    let config = match config(words).or_raise(py)? {
        Ok(c) => c,
        Err(_) => return Err(PyValueError::new_err("--help asks for no comparison")),
    };
    let spec: JobSpec =
        serde_json::from_str(spec).map_err(|e| PyValueError::new_err(format!("not a job spec: {e}")))?;
    let o = py.detach(|| compare::run_job(&config, &spec)).map_err(|why| {
        to_py(
            py,
            Error::search(format!("{} seed {}: {why}", spec.strategy, spec.seed)),
        )
    })?;
    serde_json::to_string(&o).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ComparePlan>()?;
    m.add_function(wrap_pyfunction!(compare_help, m)?)?;
    m.add_function(wrap_pyfunction!(run_job, m)?)?;
    Ok(())
}
