//! `mcmpart.MCMError`: what the command line would print, as an exception.

use mcmpart::error::{Error, Report};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    mcmpart,
    MCMError,
    PyException,
    "An error of mcmpart: its text is what the command line prints (diagnostics rendered with their source lines, no colour); `.diagnostics` holds them as dicts (message, code, help, labels with file, line, column), `.kind` says what went wrong (usage, input, infeasible, search, ...), and `.constraints` names the rules in conflict of an infeasible problem."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MCMError", m.py().get_type::<MCMError>())
}

/// The exception for a command-line error: the same text, and the
/// structured diagnostics beside it.
pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let err = MCMError::new_err(e.text().trim_end().to_string());
    let value = err.value(py);
    let (diagnostics, constraints) = match &e.report {
        Report::Diagnostics { json, .. } => (json.clone(), serde_json::json!([])),
        Report::Infeasible { constraints, .. } => (serde_json::json!([]), serde_json::json!(constraints)),
        Report::Plain => (serde_json::json!([]), serde_json::json!([])),
    };
    let set = || -> PyResult<()> {
        value.setattr("diagnostics", crate::convert::json(py, &diagnostics)?)?;
        value.setattr("constraints", crate::convert::json(py, &constraints)?)?;
        value.setattr("kind", format!("{:?}", e.kind).to_lowercase())?;
        value.setattr("message", e.message.clone())?;
        value.setattr("help", e.help.clone())?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(other) => other,
    }
}

/// `Result<T, mcmpart::error::Error>` into a Python result.
pub trait OrRaise<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for Result<T, Error> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
