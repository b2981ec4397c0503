//! The pictures the command line draws, for Jupyter: the package
//! (`show FILE --format svg`, coloured by a partition's loads) and the
//! step's timeline (`eval --format svg`, `minimize step_time`).

use crate::convert;
use crate::errors::OrRaise;
use crate::problem::Problem;
use mcmpart::error::Error;
use mcmpart::package::{svg, view};
use mcmpart::problem::{Placement, Problem as Grounded};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The package drawn as `show` draws it, coloured by `chips` when given.
pub fn package_svg(p: &Grounded, chips: Option<&[u32]>) -> String {
    let loads = chips.map(|c| view::loads(&p.package, &p.graph, &Placement::new(c.to_vec())));
    svg::to_svg(&p.package, loads.as_deref())
}

/// The step of `chips` as a timeline (the step-time model's picture).
pub fn timeline_svg(py: Python<'_>, problem: &Problem, partition: &Bound<'_, PyAny>) -> PyResult<String> {
    let chips = convert::partition(&problem.loaded, partition)?;
    let model = mcmpart::cost::objective::objective(problem.p())
        .map_err(Error::from)
        .or_raise(py)?;
    match model.picture(&chips) {
        Some(Ok(s)) => Ok(s),
        Some(Err(m)) => Err(PyValueError::new_err(format!("the partition cannot be evaluated: {m}"))),
        None => Err(PyValueError::new_err(format!(
            "the {} model draws no timeline: the timeline is the step of `minimize step_time`",
            model.name()
        ))),
    }
}

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
