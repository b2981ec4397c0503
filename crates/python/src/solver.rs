//! `Solver`: the propagation engine driven by hand, as a policy drives it:
//! `get_domain`, `set_domain`, and backtracking by push/pop or `with`.

use crate::convert;
use crate::errors::to_py;
use crate::partition::Partition;
use crate::problem::{Loaded, Problem};
use mcmpart::error::Error;
use mcmpart::solver::{Options, Solver as Engine};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::Arc;

type EngineOf<'a> = Engine<'a>;

self_cell::self_cell!(
    /// The engine and the problem it borrows, owned together.
    struct Cell {
        owner: Arc<Loaded>,
        #[not_covariant]
        dependent: EngineOf,
    }
);

/// The solver of one problem, driven node by node. Built by
/// `Problem.solver()`; used from the thread that built it.
#[pyclass(module = "mcmpart._native", unsendable)]
pub struct Solver {
    cell: Cell,
    /// The decisions standing at each `push`.
    marks: Vec<usize>,
}

/// A solver for `problem`, or the error `sample` would give when the
/// problem has no valid partition.
pub fn build(py: Python<'_>, problem: &Problem, sat: bool, native: bool) -> PyResult<Solver> {
    let cell = Cell::try_new(problem.loaded.clone(), |l| {
        Engine::new(l.problem(), Options { native, sat })
            .map_err(|inf| Error::infeasible(l.problem(), &inf, &l.compiled.program.sources))
    })
    .map_err(|e| to_py(py, e))?;
    Ok(Solver {
        cell,
        marks: Vec::new(),
    })
}

impl Solver {
    fn loaded(&self) -> &Arc<Loaded> {
        self.cell.borrow_owner()
    }
}

#[pymethods]
impl Solver {
    /// The chips node `node` (index or id) can still take, after propagation.
    fn get_domain(&self, node: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let u = convert::node(self.loaded(), node)?;
        Ok(self.cell.with_dependent(|_, s| s.get_domain(u)))
    }

    /// Restricts `node` to `chips` (one chip or several) as a new decision
    /// and propagates. Returns the number of decisions standing: one more
    /// than before when the decision holds. On a conflict the decision is
    /// undone and its chips are excluded from the node's domain; when that
    /// fails too, the solver backjumps (with SAT: to the latest decision
    /// that causes the conflict) and excludes that decision's choice, so
    /// fewer decisions stand than before. `infeasible` is set when no
    /// decision is left to undo.
    fn set_domain(&mut self, node: &Bound<'_, PyAny>, chips: &Bound<'_, PyAny>) -> PyResult<usize> {
        let l = self.loaded().clone();
        let u = convert::node(&l, node)?;
        let chips: Vec<u32> = match chips.extract::<i64>() {
            Ok(c) => vec![convert::chip(&l, c)?],
            Err(_) => chips
                .extract::<Vec<i64>>()?
                .into_iter()
                .map(|c| convert::chip(&l, c))
                .collect::<PyResult<_>>()?,
        };
        Ok(self.cell.with_dependent_mut(|_, s| s.set_domain(u, &chips)))
    }

    /// Whether `node` has one chip left.
    fn is_fixed(&self, node: &Bound<'_, PyAny>) -> PyResult<bool> {
        let u = convert::node(self.loaded(), node)?;
        Ok(self.cell.with_dependent(|_, s| s.is_fixed(u)))
    }

    /// The partition once every node has one chip left, else `None`.
    fn placement(&self) -> Option<Partition> {
        let chips = self.cell.with_dependent(|_, s| s.placement())?.chips;
        Some(Partition::new(self.loaded(), chips))
    }

    /// Every node's domain, by node index.
    fn domains(&self) -> Vec<Vec<u32>> {
        self.cell
            .with_dependent(|_, s| (0..s.num_nodes() as u32).map(|u| s.get_domain(u)).collect())
    }

    /// The domains as a bool mask [num_nodes, num_chips] (True: the chip
    /// is still allowed), the form action masks take.
    fn masks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<bool>>> {
        let (n, c, v) = self.cell.with_dependent(|_, s| {
            let (n, c) = (s.num_nodes(), s.num_chips());
            let mut v = vec![false; n * c];
            for u in 0..n {
                for chip in s.dom(u as u32).iter() {
                    v[u * c + chip as usize] = true;
                }
            }
            (n, c, v)
        });
        let a = Array2::from_shape_vec((n, c), v).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(a.into_pyarray(py))
    }

    /// The decisions standing.
    #[getter]
    fn num_decisions(&self) -> usize {
        self.cell.with_dependent(|_, s| s.num_decisions())
    }

    /// Set once a conflict undid every decision: the problem has no valid
    /// partition; the names of the rules in conflict.
    #[getter]
    fn infeasible(&self) -> Option<Vec<String>> {
        self.cell.with_dependent(|_, s| {
            s.infeasible().map(|inf| {
                inf.constraints
                    .iter()
                    .map(|&k| s.problem.constraints[k].display_name())
                    .collect()
            })
        })
    }

    /// Decisions, failures, backtracks and SAT calls so far.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = self
            .cell
            .with_dependent(|_, s| serde_json::to_value(&s.stats).unwrap_or_default());
        convert::json(py, &v)
    }

    /// Marks the decisions standing now; `pop` goes back to the mark.
    /// Returns the depth of marks.
    fn push(&mut self) -> usize {
        let n = self.num_decisions();
        self.marks.push(n);
        self.marks.len()
    }

    /// Undoes the decisions made since the matching `push`. A conflict may
    /// have backjumped below the mark already: then nothing is undone, and
    /// what the backjump excluded stays (it follows from the decisions
    /// still standing).
    fn pop(&mut self) -> PyResult<()> {
        let Some(n) = self.marks.pop() else {
            return Err(PyRuntimeError::new_err("pop without a matching push"));
        };
        self.cell.with_dependent_mut(|_, s| s.undo_to(n));
        Ok(())
    }

    /// Undoes every decision (and forgets the marks).
    fn reset(&mut self) {
        self.marks.clear();
        self.cell.with_dependent_mut(|_, s| s.reset());
    }

    /// `with solver:` pushes on entry and pops on exit.
    fn __enter__(mut slf: PyRefMut<'_, Self>) -> PyRefMut<'_, Self> {
        slf.push();
        slf
    }

    fn __exit__(
        &mut self,
        _ty: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.pop()?;
        Ok(false)
    }

    #[getter]
    fn num_nodes(&self) -> usize {
        self.cell.with_dependent(|_, s| s.num_nodes())
    }

    #[getter]
    fn num_chips(&self) -> usize {
        self.cell.with_dependent(|_, s| s.num_chips())
    }

    fn __repr__(&self) -> String {
        format!(
            "<mcmpart.Solver of {:?}: {} decision(s) standing>",
            self.loaded().problem().name,
            self.num_decisions()
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Solver>()
}
