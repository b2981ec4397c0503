//! The step loop of `mcmpart.gym.PlacementEnv`: a solver driven one node
//! at a time in a fixed order, the NumPy buffers of the observation (every
//! node's domain, which nodes are decided) updated in place, only the rows
//! that changed, and the episode's end judged against greedy. Python keeps
//! only the Gymnasium plumbing, so a step costs one call into here.

use crate::convert;
use crate::errors::to_py;
use crate::problem::{Loaded, Problem};
use mcmpart::baseline::baseline;
use mcmpart::cost::{Judge, JudgeOptions, Verdict};
use mcmpart::error::Error;
use mcmpart::problem::{Metric, Objective};
use mcmpart::solver::{node_order, Options, Order, Solver as Engine};
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use rand::SeedableRng;
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

/// What a step did (`EnvCore.step`'s first value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// The node took the chip.
    Placed = 0,
    /// The chip was a dead end that propagation found: the SAT backing
    /// undid the decisions back to the culprit and excluded its chip.
    Backjumped = 1,
    /// The chip was a dead end and the env has no SAT backing: the episode
    /// is over.
    DeadEnd = 2,
    /// The chip is not in the node's domain (not in the action mask).
    Masked = 3,
}

/// The core of a placement environment: see the module's doc. Built by
/// `mcmpart.gym.PlacementEnv`; used from the thread that built it.
#[pyclass(module = "mcmpart._native", unsendable)]
pub struct EnvCore {
    cell: Cell,
    /// The node indices in the order the episode places them.
    order: Vec<u32>,
    /// The env's decisions standing: one per node of `order[..decided]`
    /// (the solver undoes decisions last first, so they stay a prefix).
    decided: usize,
    /// Each node's domain as last written to `domains` (bitset words).
    seen: Vec<u64>,
    words: usize,
    /// [num_nodes, num_chips] int8: 1 where the chip is still allowed.
    domains: Py<PyArray2<i8>>,
    /// [num_nodes] int8: 1 where the env's decision stands.
    placed: Py<PyArray1<i8>>,
    judge: Judge,
    /// Greedy's score (higher is better) under the objective; the rewards'
    /// unit.
    greedy: f64,
    /// What `greedy` is: "greedy", or "bound" when greedy's partition
    /// fails at evaluation.
    unit: &'static str,
    dead_end: bool,
}

impl EnvCore {
    fn loaded(&self) -> &Arc<Loaded> {
        self.cell.borrow_owner()
    }

    /// Writes the rows of the domains whose words changed since the last
    /// write (one scan of the solver's domain words: a step changes few
    /// rows of a large graph), and the decided flags of the nodes whose
    /// decision came or went since `was` decisions stood.
    fn sync(&mut self, py: Python<'_>, was: usize) {
        let (seen, words) = (&mut self.seen, self.words);
        let mut domains = self.domains.bind(py).readwrite();
        let rows = domains.as_slice_mut().expect("a contiguous array");
        self.cell.with_dependent(|_, s| {
            let chips = s.num_chips();
            let now = s.domain_words();
            for (u, (old, new)) in seen.chunks_exact_mut(words).zip(now.chunks_exact(words)).enumerate() {
                // Or-ed differences rather than `==`, which calls memcmp
                // for every row.
                if old.iter().zip(new).fold(0, |d, (a, b)| d | (a ^ b)) == 0 {
                    continue;
                }
                old.copy_from_slice(new);
                let row = &mut rows[u * chips..(u + 1) * chips];
                for (c, x) in row.iter_mut().enumerate() {
                    *x = (new[c / 64] >> (c % 64)) as i8 & 1;
                }
            }
        });
        let mut placed = self.placed.bind(py).readwrite();
        let flags = placed.as_slice_mut().expect("a contiguous array");
        let (lo, hi, on) = if self.decided >= was {
            (was, self.decided, 1)
        } else {
            (self.decided, was, 0)
        };
        for &u in &self.order[lo..hi] {
            flags[u as usize] = on;
        }
    }
}

#[pymethods]
impl EnvCore {
    /// `order`: node indices or ids, each placed node once (default: a
    /// topological order); `sat`: the solver's SAT backing; `objective`:
    /// `"throughput"` or `"step_time"` in place of the problem's own.
    #[new]
    #[pyo3(signature = (problem, order = None, sat = true, objective = None))]
    fn new(
        py: Python<'_>,
        problem: &Problem,
        order: Option<Vec<Bound<'_, PyAny>>>,
        sat: bool,
        objective: Option<&str>,
    ) -> PyResult<EnvCore> {
        let loaded = problem.loaded.clone();
        let p = loaded.problem();
        let n = p.graph.num_placed();
        let chips = p.package.num_chips();
        if n == 0 {
            return Err(PyValueError::new_err(format!(
                "problem `{}` places no node: there is nothing to step through",
                p.name
            )));
        }
        let cell = Cell::try_new(loaded.clone(), |l| {
            Engine::new(l.problem(), Options { native: true, sat })
                .map_err(|inf| Error::infeasible(l.problem(), &inf, &l.compiled.program.sources))
        })
        .map_err(|e| to_py(py, e))?;
        let order: Vec<u32> = match order {
            None => cell.with_dependent(|_, s| {
                // A topological order draws nothing from the generator.
                node_order(s, Order::Topological, &mut rand_chacha::ChaCha8Rng::seed_from_u64(0))
            }),
            Some(nodes) => {
                let order = nodes
                    .iter()
                    .map(|x| convert::node(&loaded, x))
                    .collect::<PyResult<Vec<u32>>>()?;
                let mut seen = vec![false; n];
                for &u in &order {
                    if std::mem::replace(&mut seen[u as usize], true) {
                        return Err(PyValueError::new_err(format!(
                            "order: node {u} comes twice; an order names each placed node once"
                        )));
                    }
                }
                if order.len() != n {
                    return Err(PyValueError::new_err(format!(
                        "order: {} node(s) of {n}; an order names each placed node once",
                        order.len()
                    )));
                }
                order
            }
        };
        let mut judged = p.clone();
        if let Some(name) = objective {
            let metric = Metric::from_name(name)
                .filter(|m| *m != Metric::Latency)
                .ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "objective `{name}`: the objectives are \"throughput\" and \"step_time\""
                    ))
                })?;
            judged.objective = Objective {
                sense: metric.better(),
                metric,
            };
        }
        let judge = Judge::new(&judged, &JudgeOptions::default()).map_err(|e| {
            to_py(
                py,
                Error::input(format!("the cost model cannot judge `{}`: {}", p.name, e.message))
                    .with_help_opt(e.help.clone()),
            )
        })?;
        let base = py.detach(|| baseline(&judged, &judge, 0));
        let usable = |v: Option<f64>| v.filter(|x| x.is_finite() && *x > 0.0);
        // Greedy's score; when its partition fails at evaluation (the
        // dynamic memory check), the lower bound's, so that rewards still
        // have a unit (then at most 1).
        let (greedy, unit) = match (usable(base.throughput()), usable(base.bound_throughput())) {
            (Some(g), _) => (g, "greedy"),
            (None, Some(b)) => (b, "bound"),
            (None, None) => {
                return Err(PyRuntimeError::new_err(format!(
                    "neither greedy's partition of `{}` nor the lower bound gives the rewards a unit",
                    p.name
                )))
            }
        };
        let words = cell.with_dependent(|_, s| s.domain_words_per_node());
        let mut core = EnvCore {
            cell,
            order,
            decided: 0,
            // No domain is empty, so the first sync writes every row.
            seen: vec![0; n * words],
            words,
            domains: PyArray2::zeros(py, [n, chips], false).unbind(),
            placed: PyArray1::zeros(py, n, false).unbind(),
            judge,
            greedy,
            unit,
            dead_end: false,
        };
        core.sync(py, 0);
        Ok(core)
    }

    /// Undoes every decision: a new episode.
    fn reset(&mut self, py: Python<'_>) {
        self.cell.with_dependent_mut(|_, s| s.reset());
        let was = std::mem::take(&mut self.decided);
        self.dead_end = false;
        self.sync(py, was);
    }

    /// The index of the node to place now; `None` once the episode is over.
    #[getter]
    fn node(&self) -> Option<u32> {
        if self.done() {
            return None;
        }
        self.order.get(self.decided).copied()
    }

    /// Places the current node on `chip`. Returns what happened (0 placed,
    /// 1 backjumped, 2 dead end, 3 masked) and how many earlier decisions
    /// a backjump undid.
    fn step(&mut self, py: Python<'_>, chip: i64) -> PyResult<(u8, usize)> {
        let Some(u) = self.node() else {
            return Err(PyRuntimeError::new_err(
                "the episode is over: call reset() before stepping again",
            ));
        };
        let num_chips = self.cell.with_dependent(|_, s| s.num_chips());
        if chip < 0 || chip as usize >= num_chips || !self.cell.with_dependent(|_, s| s.dom(u).contains(chip as u32)) {
            return Ok((Outcome::Masked as u8, 0));
        }
        let before = self.decided;
        let standing = self.cell.with_dependent_mut(|_, s| s.set_domain(u, &[chip as u32]));
        let (what, undone) = if standing == before + 1 {
            self.decided = standing;
            (Outcome::Placed, 0)
        } else if self
            .cell
            .with_dependent(|_, s| s.options().sat && s.infeasible().is_none())
        {
            self.decided = standing;
            (Outcome::Backjumped, before - standing)
        } else {
            self.dead_end = true;
            (Outcome::DeadEnd, 0)
        };
        self.sync(py, before);
        Ok((what as u8, undone))
    }

    /// Whether the episode is over: every node placed, or a dead end.
    #[getter]
    fn done(&self) -> bool {
        self.dead_end || self.decided == self.order.len()
    }

    /// The chips of the finished partition by node index; `None` before
    /// every node is placed.
    fn partition(&self) -> Option<Vec<u32>> {
        if self.dead_end {
            return None;
        }
        self.cell.with_dependent(|_, s| s.placement()).map(|p| p.chips)
    }

    /// The finished partition's reward: its score over greedy's (for
    /// `maximize throughput`, its throughput over greedy's; for `minimize
    /// step_time`, greedy's step time over its own), and `None` with the
    /// reason when it fails at evaluation.
    fn reward(&self, py: Python<'_>) -> PyResult<(Option<f64>, Option<String>)> {
        let Some(chips) = self.partition() else {
            return Err(PyRuntimeError::new_err("the episode has no finished partition"));
        };
        let judge = &self.judge;
        Ok(match py.detach(|| judge.evaluate(&chips)) {
            Verdict::Valid { throughput } => (Some(throughput / self.greedy), None),
            Verdict::Invalid { reason } => (None, Some(reason)),
        })
    }

    /// The rewards' unit: greedy's score under the objective (throughput,
    /// or steps per second), or the lower bound's (see `reward_unit`).
    #[getter]
    fn greedy_score(&self) -> f64 {
        self.greedy
    }

    /// "greedy", or "bound" when greedy's partition fails at evaluation and
    /// the rewards are over the lower bound's score.
    #[getter]
    fn reward_unit(&self) -> &'static str {
        self.unit
    }

    /// The node indices in the order they are placed.
    #[getter]
    fn order(&self) -> Vec<u32> {
        self.order.clone()
    }

    /// Every node's domain, [num_nodes, num_chips] int8, updated in place.
    #[getter]
    fn domains<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<i8>> {
        self.domains.bind(py).clone()
    }

    /// 1 for the nodes whose decision stands, [num_nodes] int8, updated in place.
    #[getter]
    fn placed<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i8>> {
        self.placed.bind(py).clone()
    }

    /// The solver's decisions, failures, backtracks and SAT calls so far.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = self
            .cell
            .with_dependent(|_, s| serde_json::to_value(&s.stats).unwrap_or_default());
        convert::json(py, &v)
    }

    #[getter]
    fn num_nodes(&self) -> usize {
        self.order.len()
    }

    #[getter]
    fn num_chips(&self) -> usize {
        self.cell.with_dependent(|_, s| s.num_chips())
    }

    fn __repr__(&self) -> String {
        format!(
            "<mcmpart.EnvCore of {:?}: {} of {} node(s) placed>",
            self.loaded().problem().name,
            self.decided,
            self.order.len()
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EnvCore>()
}
