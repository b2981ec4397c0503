//! The Python package `mcmpart`'s native module, `mcmpart._native`: one
//! file per area, each registering its classes and functions here.

mod compare;
mod convert;
mod env;
mod errors;
mod eval;
mod evaluator;
mod partition;
mod problem;
mod solve;
mod solver;
mod svg;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    problem::register(m)?;
    partition::register(m)?;
    solver::register(m)?;
    eval::register(m)?;
    solve::register(m)?;
    svg::register(m)?;
    env::register(m)?;
    compare::register(m)?;
    Ok(())
}
