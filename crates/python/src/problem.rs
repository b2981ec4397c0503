//! `mcmpart.load`, `mcmpart.compile` and the `Problem` they return: the
//! graph, the package and the rules as plain Python values, and the
//! policy's features as NumPy arrays.

use crate::convert::{dicts, json, scalar};
use crate::errors::OrRaise;
use crate::partition::Partition;
use mcmpart::error::Error;
use mcmpart::lang::{compile_file, compile_str, Compiled};
use mcmpart::policy::features::{GraphFeatures, CHIP_FEATURE_NAMES, NODE_FEATURE_NAMES};
use mcmpart::problem::Problem as Grounded;
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A compiled file and which of its problems is meant.
pub struct Loaded {
    pub compiled: Compiled,
    pub index: usize,
}

impl Loaded {
    pub fn problem(&self) -> &Grounded {
        &self.compiled.problems[self.index]
    }

    /// Picks problem `name` (or the only one) of a compiled file; its
    /// diagnostics are the error when it does not compile.
    fn new(compiled: Compiled, name: Option<&str>) -> Result<Loaded, Error> {
        if !compiled.ok() {
            return Err(Error::diagnostics(&compiled));
        }
        let p = compiled.problem(name).map_err(Error::input)?;
        let index = compiled.problems.iter().position(|q| std::ptr::eq(q, p)).unwrap_or(0);
        Ok(Loaded { compiled, index })
    }
}

/// Buckets the operator names are hashed into (the policy's default).
const OP_BUCKETS: usize = 64;

/// A placement problem: a graph, a package, the rules and the objective.
#[pyclass(module = "mcmpart._native", frozen)]
pub struct Problem {
    pub loaded: Arc<Loaded>,
}

impl Problem {
    pub fn p(&self) -> &Grounded {
        self.loaded.problem()
    }
}

#[pyfunction]
#[pyo3(signature = (path, problem = None))]
fn load(py: Python<'_>, path: PathBuf, problem: Option<&str>) -> PyResult<Problem> {
    let compiled = py.detach(|| compile_file(&path));
    let loaded = Loaded::new(compiled, problem).or_raise(py)?;
    Ok(Problem {
        loaded: Arc::new(loaded),
    })
}

#[pyfunction]
#[pyo3(signature = (source, path = None, problem = None))]
fn compile(py: Python<'_>, source: &str, path: Option<PathBuf>, problem: Option<&str>) -> PyResult<Problem> {
    let (name, dir) = match &path {
        Some(p) => (
            p.display().to_string(),
            p.parent().map(Path::to_path_buf).unwrap_or_default(),
        ),
        None => ("<string>".to_string(), std::env::current_dir().unwrap_or_default()),
    };
    let compiled = py.detach(|| compile_str(&name, source, &dir));
    let loaded = Loaded::new(compiled, problem).or_raise(py)?;
    Ok(Problem {
        loaded: Arc::new(loaded),
    })
}

fn features(p: &Grounded) -> PyResult<GraphFeatures> {
    GraphFeatures::new(
        &p.graph,
        &p.package,
        OP_BUCKETS,
        &candle_core::Device::Cpu,
        candle_core::DType::F32,
    )
    .map_err(|e| PyValueError::new_err(e.to_string()))
}

fn matrix<'py>(py: Python<'py>, v: Vec<f32>, cols: usize) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let rows = v.len() / cols.max(1);
    let a = Array2::from_shape_vec((rows, cols), v).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(a.into_pyarray(py))
}

#[pymethods]
impl Problem {
    /// The problem's name (`partition NAME: ...`, else the graph's).
    #[getter]
    fn name(&self) -> String {
        self.p().name.clone()
    }

    /// The objective as the file writes it: `maximize throughput`, `minimize step_time`.
    #[getter]
    fn objective(&self) -> String {
        let o = &self.p().objective;
        format!("{} {}", format!("{:?}", o.sense).to_lowercase(), o.metric.name())
    }

    #[getter]
    fn num_nodes(&self) -> usize {
        self.p().graph.num_placed()
    }

    #[getter]
    fn num_chips(&self) -> usize {
        self.p().package.num_chips()
    }

    /// The graph's name.
    #[getter]
    fn graph_name(&self) -> String {
        self.p().graph.name.clone()
    }

    /// The placed nodes in index order (what partitions and the solver
    /// count): `index`, `id`, `op`, `flops`, `params` and `output_bytes`
    /// (bytes), and the graph file's other attributes.
    #[getter]
    fn nodes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let g = &self.p().graph;
        let mut out = Vec::with_capacity(g.num_placed());
        for d in 0..g.num_placed() as u32 {
            let n = g.placed_node(d);
            let dict = node_dict(py, n)?;
            dict.set_item("index", d)?;
            out.push(dict);
        }
        dicts(py, out)
    }

    /// Every node of the graph in file order, the replicable ones (copied to
    /// the chips that use them, not placed) too: `index` is the placed
    /// index, `None` for those.
    #[getter]
    fn graph_nodes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let g = &self.p().graph;
        let mut out = Vec::with_capacity(g.nodes.len());
        for (k, n) in g.nodes.iter().enumerate() {
            let dict = node_dict(py, n)?;
            dict.set_item("index", g.decision_of(k))?;
            out.push(dict);
        }
        dicts(py, out)
    }

    /// The edges between placed nodes: `src` and `dst` (placed indices),
    /// their ids, and `bytes`.
    #[getter]
    fn edges<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let g = &self.p().graph;
        let mut out = Vec::with_capacity(g.placed_edges().len());
        for e in g.placed_edges() {
            let d = PyDict::new(py);
            d.set_item("src", e.src)?;
            d.set_item("dst", e.dst)?;
            d.set_item("src_id", &g.placed_node(e.src).id)?;
            d.set_item("dst_id", &g.placed_node(e.dst).id)?;
            d.set_item("bytes", e.bytes)?;
            out.push(d);
        }
        dicts(py, out)
    }

    /// The chips: `index`, `name` and their attributes (numbers in base
    /// units: bytes, FLOP/s).
    #[getter]
    fn chips<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let pk = &self.p().package;
        let mut out = Vec::with_capacity(pk.chips.len());
        for (i, c) in pk.chips.iter().enumerate() {
            let d = PyDict::new(py);
            d.set_item("index", i)?;
            d.set_item("name", &c.name)?;
            for (k, v) in &c.attrs {
                d.set_item(k, scalar(py, v)?)?;
            }
            out.push(d);
        }
        dicts(py, out)
    }

    /// The links: `index`, `src` and `dst` chips and their attributes
    /// (bandwidth in bytes/s, latency in s).
    #[getter]
    fn links<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let pk = &self.p().package;
        let mut out = Vec::with_capacity(pk.links.len());
        for (i, l) in pk.links.iter().enumerate() {
            let d = PyDict::new(py);
            d.set_item("index", i)?;
            d.set_item("src", l.src)?;
            d.set_item("dst", l.dst)?;
            for (k, v) in &l.attrs {
                d.set_item(k, scalar(py, v)?)?;
            }
            out.push(d);
        }
        dicts(py, out)
    }

    /// The package's name.
    #[getter]
    fn package_name(&self) -> String {
        self.p().package.name.clone()
    }

    /// The rules the problem requires, as the file names them (`near(1)`).
    #[getter]
    fn rules(&self) -> Vec<String> {
        self.p().constraints.iter().map(|c| c.display_name()).collect()
    }

    /// The index of a node given by id (or index).
    fn node_index(&self, node: &Bound<'_, PyAny>) -> PyResult<u32> {
        crate::convert::node(&self.loaded, node)
    }

    /// The policy network's node features, float32 [num_nodes, 10]; the
    /// columns are `NODE_FEATURE_NAMES`.
    fn node_features<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let (v, _) = features(self.p())?
            .node_table()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        matrix(py, v, NODE_FEATURE_NAMES.len())
    }

    /// Each node's operator hashed into `buckets` (FNV-1a of the name),
    /// int64 [num_nodes]: an embedding index.
    #[pyo3(signature = (buckets = OP_BUCKETS))]
    fn op_buckets<'py>(&self, py: Python<'py>, buckets: usize) -> Bound<'py, PyArray1<i64>> {
        let g = &self.p().graph;
        let v: Vec<i64> = (0..g.num_placed() as u32)
            .map(|d| mcmpart::policy::features::op_bucket(&g.placed_node(d).op, buckets) as i64)
            .collect();
        PyArray1::from_vec(py, v)
    }

    /// The policy network's chip features, float32 [num_chips, 6]; the
    /// columns are `CHIP_FEATURE_NAMES`.
    fn chip_features<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let v = features(self.p())?
            .chip_table()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        matrix(py, v, CHIP_FEATURE_NAMES.len())
    }

    /// The placed edges as int64 [2, num_edges] (sources, then
    /// destinations: PyTorch Geometric's `edge_index`).
    fn edge_index<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let es = self.p().graph.placed_edges();
        let mut v: Vec<i64> = es.iter().map(|e| e.src as i64).collect();
        v.extend(es.iter().map(|e| e.dst as i64));
        let a = Array2::from_shape_vec((2, es.len()), v).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(a.into_pyarray(py))
    }

    /// The bytes each placed edge carries, float64 [num_edges], in
    /// `edge_index` order.
    fn edge_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let v: Vec<f64> = self.p().graph.placed_edges().iter().map(|e| e.bytes as f64).collect();
        PyArray1::from_vec(py, v)
    }

    /// The package as `show --format json` prints it.
    fn package_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pk = &self.p().package;
        json(py, &mcmpart::package::view::to_json(pk, None, &[]))
    }

    /// A solver to drive node by node (`get_domain`, `set_domain`,
    /// push/pop). `sat`: on a conflict, ask the SAT backing for the
    /// decision to backjump to (else undo one decision at a time).
    /// `native`: the native propagators of the standard rules (off: the
    /// generic path, for comparison).
    #[pyo3(signature = (sat = true, native = true))]
    fn solver(&self, py: Python<'_>, sat: bool, native: bool) -> PyResult<crate::solver::Solver> {
        crate::solver::build(py, self, sat, native)
    }

    /// One valid partition by SAMPLE with uniform choices, as `mcmpart
    /// sample FILE --seed SEED --order ORDER` makes it.
    #[pyo3(signature = (seed = 0, order = "random", sat = true))]
    fn sample(&self, py: Python<'_>, seed: u64, order: &str, sat: bool) -> PyResult<Partition> {
        crate::eval::sample_one(py, self, seed, order, sat)
    }

    /// `proposal` (a list with `None` for free nodes, or a dict id -> chip
    /// of some nodes) made valid by FIX, keeping what can stay, as `mcmpart
    /// repair` makes it; `.moved` on the result counts the nodes moved.
    #[pyo3(signature = (proposal, seed = 0, order = "random", sat = true))]
    fn fix(
        &self,
        py: Python<'_>,
        proposal: &Bound<'_, PyAny>,
        seed: u64,
        order: &str,
        sat: bool,
    ) -> PyResult<Partition> {
        crate::eval::fix_one(py, self, proposal, seed, order, sat)
    }

    /// The rule instances `partition` breaks, one line each (the
    /// independent checker); empty when it is valid.
    fn verify(&self, partition: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        crate::eval::verify(self, partition)
    }

    /// The cost model's report of `partition` (as `mcmpart eval`), under
    /// the problem's objective or `objective` (`throughput`, `latency`,
    /// `step_time`).
    #[pyo3(signature = (partition, objective = None))]
    fn evaluate(
        &self,
        py: Python<'_>,
        partition: &Bound<'_, PyAny>,
        objective: Option<&str>,
    ) -> PyResult<crate::eval::Evaluation> {
        crate::eval::evaluate(py, self, partition, objective)
    }

    /// Runs a strategy as `mcmpart solve` does, within `budget` samples or
    /// `time` seconds (default 1000 samples), and returns the best
    /// partition with its value, greedy's and the proven bound. The GIL is
    /// released while it runs; Ctrl-C stops it (KeyboardInterrupt).
    ///
    /// `evaluator`: a callable that judges each partition in place of the
    /// cost model, as an external evaluator command does (it gets the
    /// partition dict a command reads on stdin and returns the dict it
    /// would print; `mcmpart.distributed.EvaluatorPool` is one over Ray
    /// actors); `jobs` evaluations run at once.
    #[pyo3(signature = (strategy = None, budget = None, time = None, seed = 0, evaluator = None, jobs = 1))]
    #[allow(clippy::too_many_arguments)]
    fn solve(
        &self,
        py: Python<'_>,
        strategy: Option<&str>,
        budget: Option<usize>,
        time: Option<f64>,
        seed: u64,
        evaluator: Option<Py<PyAny>>,
        jobs: usize,
    ) -> PyResult<crate::solve::SolveResult> {
        crate::solve::solve(py, self, strategy, budget, time, seed, evaluator, jobs)
    }

    /// The package as an SVG picture, coloured by `partition` when given
    /// (`mcmpart show FILE [--partition P] --format svg`).
    #[pyo3(signature = (partition = None))]
    fn package_svg(&self, partition: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
        let chips = partition
            .map(|p| crate::convert::partition(&self.loaded, p))
            .transpose()?;
        Ok(crate::svg::package_svg(self.p(), chips.as_deref()))
    }

    /// The step of `partition` as a timeline, a row per chip and per link
    /// (`mcmpart eval FILE --partition P --format svg`); only the
    /// step-time model draws one.
    fn timeline_svg(&self, py: Python<'_>, partition: &Bound<'_, PyAny>) -> PyResult<String> {
        crate::svg::timeline_svg(py, self, partition)
    }

    /// The package, for Jupyter.
    fn _repr_svg_(&self) -> String {
        crate::svg::package_svg(self.p(), None)
    }

    fn __repr__(&self) -> String {
        let p = self.p();
        format!(
            "<mcmpart.Problem {:?}: {} nodes of {:?} onto {} chips of {:?}, {} rule(s), {}>",
            p.name,
            p.graph.num_placed(),
            p.graph.name,
            p.package.num_chips(),
            p.package.name,
            p.constraints.len(),
            self.objective()
        )
    }
}

fn node_dict<'py>(py: Python<'py>, n: &mcmpart::graph::Node) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in &n.extra {
        d.set_item(k, json(py, v)?)?;
    }
    d.set_item("id", &n.id)?;
    d.set_item("op", &n.op)?;
    d.set_item("flops", n.flops)?;
    d.set_item("params", n.params)?;
    d.set_item("output_bytes", n.output_bytes)?;
    d.set_item("replicable", n.replicable)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Problem>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add("NODE_FEATURE_NAMES", NODE_FEATURE_NAMES.to_vec())?;
    m.add("CHIP_FEATURE_NAMES", CHIP_FEATURE_NAMES.to_vec())?;
    Ok(())
}
