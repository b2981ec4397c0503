//! Python values from the library's: JSON documents, attribute scalars,
//! and the arguments that name nodes and partitions.

use crate::problem::Loaded;
use mcmpart::quantity::Scalar;
use pyo3::exceptions::{PyIndexError, PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// A JSON document as Python values (through `json.loads`: the reports are
/// the command line's JSON, key for key).
pub fn json<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(v).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

/// An attribute's value: numbers in base units (bytes, FLOP/s, seconds).
pub fn scalar<'py>(py: Python<'py>, s: &Scalar) -> PyResult<Bound<'py, PyAny>> {
    Ok(match s {
        Scalar::Int(i) => i.into_pyobject(py)?.into_any(),
        Scalar::Num(v, _) => v.into_pyobject(py)?.into_any(),
        Scalar::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Scalar::Str(t) => t.into_pyobject(py)?.into_any(),
    })
}

/// A node argument: its index among the placed nodes (what the solver and
/// partitions count) or its id.
pub fn node(l: &Loaded, arg: &Bound<'_, PyAny>) -> PyResult<u32> {
    let g = &l.problem().graph;
    let n = g.num_placed();
    if let Ok(i) = arg.extract::<i64>() {
        if i < 0 || i as usize >= n {
            return Err(PyIndexError::new_err(format!(
                "node index {i} is out of range: the problem places {n} nodes (0..{n})"
            )));
        }
        return Ok(i as u32);
    }
    if let Ok(id) = arg.extract::<String>() {
        let Some(k) = g.node_index(&id) else {
            let help = mcmpart::diag::unknown_help(&id, "node", g.ids());
            return Err(PyKeyError::new_err(format!(
                "no node `{id}` in graph `{}`; {help}",
                g.name
            )));
        };
        return g.decision_of(k).ok_or_else(|| {
            PyValueError::new_err(format!(
                "node `{id}` is replicable: it is copied to the chips that use it, not placed"
            ))
        });
    }
    Err(PyTypeError::new_err(format!(
        "a node is given by its index (int) or its id (str), not {}",
        arg.get_type().name()?
    )))
}

/// A chip number, checked against the package.
pub fn chip(l: &Loaded, c: i64) -> PyResult<u32> {
    let n = l.problem().package.num_chips();
    if c < 0 || c as usize >= n {
        return Err(PyIndexError::new_err(format!(
            "chip {c} is out of range: the package has {n} chips (0..{n})"
        )));
    }
    Ok(c as u32)
}

/// A full partition: a `Partition`, a list of chips by node index, or a
/// dict node id -> chip covering every placed node.
pub fn partition(l: &Loaded, arg: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    let proposal = proposal(l, arg)?;
    let g = &l.problem().graph;
    let missing: Vec<&str> = proposal
        .iter()
        .enumerate()
        .filter(|(_, c)| c.is_none())
        .map(|(d, _)| g.placed_node(d as u32).id.as_str())
        .take(5)
        .collect();
    if !missing.is_empty() {
        return Err(PyValueError::new_err(format!(
            "the partition leaves nodes unplaced: {} (a partition gives every placed node a chip; `fix` completes a partial one)",
            missing.join(", ")
        )));
    }
    Ok(proposal.into_iter().flatten().collect())
}

/// A proposal, which may leave nodes out: as [`partition`], with `None`
/// entries in a list or nodes missing from a dict.
pub fn proposal(l: &Loaded, arg: &Bound<'_, PyAny>) -> PyResult<Vec<Option<u32>>> {
    let n = l.problem().graph.num_placed();
    if let Ok(p) = arg.cast::<crate::partition::Partition>() {
        let p = p.get();
        if p.chips.len() != n {
            return Err(PyValueError::new_err(format!(
                "the partition places {} nodes, but this problem places {n}: it belongs to another problem",
                p.chips.len()
            )));
        }
        return Ok(p.chips.iter().map(|&c| Some(c)).collect());
    }
    if let Ok(d) = arg.cast::<PyDict>() {
        let mut out = vec![None; n];
        for (k, v) in d.iter() {
            let u = node(l, &k)?;
            let c: i64 = v
                .extract()
                .map_err(|_| PyTypeError::new_err(format!("the chip of node {k} must be an int, not {v}")))?;
            out[u as usize] = Some(chip(l, c)?);
        }
        return Ok(out);
    }
    if let Ok(list) = arg.try_iter() {
        let mut out = Vec::with_capacity(n);
        for item in list {
            let item = item?;
            out.push(if item.is_none() {
                None
            } else {
                let c: i64 = item.extract().map_err(|_| {
                    PyTypeError::new_err(format!("a partition list holds chips (int) or None, not {item}"))
                })?;
                Some(chip(l, c)?)
            });
        }
        if out.len() != n {
            return Err(PyValueError::new_err(format!(
                "the partition lists {} chips, but the problem places {n} nodes",
                out.len()
            )));
        }
        return Ok(out);
    }
    Err(PyTypeError::new_err(
        "a partition is a Partition, a list of chips by node index, or a dict node id -> chip",
    ))
}

/// A list of Python dicts.
pub fn dicts<'py>(py: Python<'py>, items: Vec<Bound<'py, PyDict>>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, items)
}
