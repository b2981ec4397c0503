//! The step-time objective (`minimize step_time`, `shared/spec/step-time.md`):
//! one input flows through the whole graph; ops run one at a time per chip in
//! order of readiness, transfers one at a time per link down the route tree
//! of their producer, every tie broken as the spec writes it.
//!
//! - [`StepTimeModel`] holds what does not depend on the partition (routes,
//!   consumer lists, which replicable nodes run); `sim` is the event loop,
//!   `schedule` turns a recorded run into a [`Schedule`] with its critical
//!   path, [`bounds`] are the lower bounds, [`svg`] draws the timeline.

pub mod bounds;
mod schedule;
mod sim;
pub mod svg;
#[cfg(test)]
mod tests;

use crate::graph::Graph;
use crate::latency::LatencyError;
use crate::op_time::OpTimes;
use crate::package::Package;
use std::sync::{Arc, Mutex};

pub use svg::timeline_svg;

/// No link, no op, no replica: an absent index.
const NONE: u32 = u32::MAX;

/// The most op times kept in a table (8 MiB of them); a larger graph and
/// package ask [`OpTimes::time`] at every op.
const MAX_DURATIONS: usize = 1 << 20;

/// The static part of the step-time model of one graph on one package.
#[derive(Debug)]
pub struct StepTimeModel {
    pub graph: Arc<Graph>,
    pub package: Arc<Package>,
    pub times: Arc<OpTimes>,
    net: Net,
    deps: Deps,
    /// Seconds of node v on chip c at `v * C + c` ([`OpTimes::time`]),
    /// when the table is small enough to keep; empty otherwise.
    durations: Vec<f64>,
    /// Scratch buffers of finished runs, reused so that a run allocates
    /// nothing once the pool holds one per thread.
    pool: Mutex<Vec<sim::Scratch>>,
}

/// The links and the route trees.
#[derive(Debug)]
struct Net {
    chips: usize,
    link_src: Vec<u32>,
    link_dst: Vec<u32>,
    /// Bytes/s per link.
    bandwidth: Vec<f64>,
    /// Seconds per transfer per link.
    latency: Vec<f64>,
    /// The link into `c` on the route tree from `a`, at `a * C + c`;
    /// `NONE` when `c == a` or `c` cannot be reached.
    parent: Vec<u32>,
}

/// Who waits for whom, as compressed rows.
#[derive(Debug)]
struct Deps {
    /// Graph node index of each placed node.
    placed_node: Vec<u32>,
    /// Placed consumers of each placed node with the edge's bytes:
    /// `cons[cons_start[u]..cons_start[u + 1]]`.
    cons_start: Vec<u32>,
    cons: Vec<(u32, u64)>,
    /// Inputs each placed node waits for (placed and replicable producers).
    placed_inputs: Vec<u32>,
    /// Replicable nodes that run (some placed node depends on them), as
    /// graph node indices, ascending.
    reps: Vec<u32>,
    /// Index into `reps` per graph node, `NONE` for the others.
    rep_of: Vec<u32>,
    /// Per replica, the placed nodes it feeds through replicable nodes only
    /// (ascending): a copy runs on each of their chips.
    feeds_start: Vec<u32>,
    feeds: Vec<u32>,
    /// Per replica, its replicable inputs (all of them run).
    rep_inputs: Vec<u32>,
    /// Per replica, its placed consumers and its replica consumers.
    rep_cons_start: Vec<u32>,
    rep_cons_placed: Vec<u32>,
    rep_rcons_start: Vec<u32>,
    rep_cons_rep: Vec<u32>,
}

/// Who an op runs for: a placed node (decision index) or a copy of a
/// replicable node (graph node index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "index", rename_all = "snake_case")]
pub enum OpOf {
    Placed(u32),
    Replica(u32),
}

/// One op of the schedule.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct OpRun {
    pub of: OpOf,
    /// The graph node's index in the file's node list.
    pub node: u32,
    pub chip: u32,
    pub start_s: f64,
    pub end_s: f64,
}

/// One transfer of a node's output over one link.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TransferRun {
    /// The producing placed node (decision index).
    pub node: u32,
    pub link: u32,
    pub bytes: u64,
    pub start_s: f64,
    pub end_s: f64,
}

/// A whole simulated step.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Schedule {
    /// The instant the last op ends.
    pub step_time_s: f64,
    /// Every op, in the order they start (ties: chip order).
    pub ops: Vec<OpRun>,
    /// Every transfer, in the order they start (ties: link order).
    pub transfers: Vec<TransferRun>,
    /// Seconds each chip computes.
    pub chip_busy_s: Vec<f64>,
    /// Seconds each link carries data.
    pub link_busy_s: Vec<f64>,
    /// Index into `ops` of the op that ends last (the first such in `ops`).
    pub last_op: Option<usize>,
    /// Index into `transfers` of the transfer that ends last.
    pub last_transfer: Option<usize>,
    /// The critical path, back from `last_op`: indices into `ops` and
    /// `transfers`, first to last, each entry waiting on the one before.
    pub critical_path: Vec<PathStep>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "index", rename_all = "snake_case")]
pub enum PathStep {
    Op(usize),
    Transfer(usize),
}

impl StepTimeModel {
    /// Refuses a package the model cannot cost (no chips, a chip without a
    /// positive `compute`, a link without a positive `bandwidth`, a negative
    /// `latency`), as [`crate::latency::LatencyModel::new`] does.
    pub fn new(graph: Arc<Graph>, package: Arc<Package>) -> Result<StepTimeModel, LatencyError> {
        if package.num_chips() == 0 {
            return Err(LatencyError {
                message: "the package has no chips".into(),
                help: "declare at least one chip".into(),
            });
        }
        let times = Arc::new(OpTimes::new(graph.clone(), package.clone())?);
        let net = Net::new(&package)?;
        let deps = Deps::new(&graph);
        let (n, c) = (graph.nodes.len(), package.num_chips());
        let durations = if n.saturating_mul(c) <= MAX_DURATIONS {
            (0..n * c).map(|i| times.time(i / c, (i % c) as u32)).collect()
        } else {
            Vec::new()
        };
        Ok(StepTimeModel {
            graph,
            package,
            times,
            net,
            deps,
            durations,
            pool: Mutex::new(Vec::new()),
        })
    }

    /// The step time alone (the fast path the search asks many times).
    /// `Err` for a partition of the wrong length, an unknown chip, or a
    /// transfer no route can carry (the message names it).
    pub fn step_time(&self, chips: &[u32]) -> Result<f64, String> {
        let mut s = self.scratch();
        let r = self.run(chips, &mut s, None);
        self.give_back(s);
        r
    }

    /// The whole schedule, for reports and the timeline picture.
    pub fn simulate(&self, chips: &[u32]) -> Result<Schedule, String> {
        let mut s = self.scratch();
        let mut rec = sim::Record::default();
        let r = self.run(chips, &mut s, Some(&mut rec));
        let out = r.map(|t| schedule::build(self, &s, &rec, t));
        self.give_back(s);
        out
    }

    /// The links of the route from `a` to `b`, in order (empty when
    /// `a == b`); `None` when `b` cannot be reached.
    pub fn route(&self, a: u32, b: u32) -> Option<Vec<usize>> {
        let c = self.net.chips;
        let mut path = Vec::new();
        let mut x = b;
        while x != a {
            let l = self.net.parent[a as usize * c + x as usize];
            if l == NONE {
                return None;
            }
            path.push(l as usize);
            x = self.net.link_src[l as usize];
        }
        path.reverse();
        Some(path)
    }

    /// Seconds graph node `v` takes on chip `c`.
    fn duration(&self, v: u32, c: u32) -> f64 {
        match self.durations.get(v as usize * self.net.chips + c as usize) {
            Some(&t) => t,
            None => self.times.time(v as usize, c),
        }
    }

    /// Seconds a transfer of `bytes` takes over link `l`.
    pub fn transfer_time(&self, l: usize, bytes: u64) -> f64 {
        self.net.latency[l] + bytes as f64 / self.net.bandwidth[l]
    }

    fn scratch(&self) -> sim::Scratch {
        self.pool.lock().ok().and_then(|mut p| p.pop()).unwrap_or_default()
    }

    fn give_back(&self, s: sim::Scratch) {
        if let Ok(mut p) = self.pool.lock() {
            p.push(s);
        }
    }

    /// A partition of the right length on existing chips.
    fn check(&self, chips: &[u32]) -> Result<(), String> {
        let n = self.deps.placed_node.len();
        if chips.len() != n {
            return Err(format!("a partition of {} nodes for a graph with {n}", chips.len()));
        }
        if let Some(&c) = chips.iter().find(|&&c| c as usize >= self.net.chips) {
            return Err(format!("chip {c} does not exist (the package has {})", self.net.chips));
        }
        Ok(())
    }

    /// Why `u`'s output cannot go from `from` to `to`.
    fn no_route(&self, u: u32, from: u32, to: u32) -> String {
        let p = &self.package;
        format!(
            "node `{}` on chip `{}` sends to chip `{}`, which no route reaches",
            self.graph.placed_node(u).id,
            p.chips[from as usize].name,
            p.chips[to as usize].name
        )
    }
}

impl Net {
    fn new(p: &Package) -> Result<Net, LatencyError> {
        let c = p.num_chips();
        let mut bandwidth = Vec::with_capacity(p.links.len());
        let mut latency = Vec::with_capacity(p.links.len());
        for (li, l) in p.links.iter().enumerate() {
            let (a, b) = (&p.chips[l.src as usize].name, &p.chips[l.dst as usize].name);
            match p.link_bandwidth(li) {
                Some(x) if x > 0.0 && x.is_finite() => bandwidth.push(x),
                _ => {
                    return Err(LatencyError {
                        message: format!("the link `{a}` -> `{b}` has no positive `bandwidth`"),
                        help: "the cost model needs `bandwidth = ... GB/s` on every link".into(),
                    })
                }
            }
            match p.link_latency(li) {
                None => latency.push(0.0),
                Some(x) if x >= 0.0 && x.is_finite() => latency.push(x),
                Some(_) => {
                    return Err(LatencyError {
                        message: format!("the link `{a}` -> `{b}` has a negative or infinite `latency`"),
                        help: "`latency` is the time a transfer waits per hop, e.g. `latency = 2 us`".into(),
                    })
                }
            }
        }
        // Out-links of every chip by increasing head: the breadth-first tree
        // that takes them in this order gives each chip its route with the
        // fewest links and, among those, the lexicographically smallest.
        let mut out: Vec<Vec<(u32, u32)>> = vec![Vec::new(); c];
        for (li, l) in p.links.iter().enumerate() {
            out[l.src as usize].push((l.dst, li as u32));
        }
        for o in &mut out {
            o.sort_unstable();
        }
        let mut parent = vec![NONE; c * c];
        let mut seen = vec![false; c];
        let mut queue = Vec::with_capacity(c);
        for a in 0..c {
            seen.iter_mut().for_each(|s| *s = false);
            queue.clear();
            queue.push(a as u32);
            seen[a] = true;
            let mut head = 0;
            while head < queue.len() {
                let x = queue[head] as usize;
                head += 1;
                for &(y, l) in &out[x] {
                    if !seen[y as usize] {
                        seen[y as usize] = true;
                        parent[a * c + y as usize] = l;
                        queue.push(y);
                    }
                }
            }
        }
        Ok(Net {
            chips: c,
            link_src: p.links.iter().map(|l| l.src).collect(),
            link_dst: p.links.iter().map(|l| l.dst).collect(),
            bandwidth,
            latency,
            parent,
        })
    }
}

/// Rows from per-row lists.
fn rows<T: Copy>(lists: &[Vec<T>]) -> (Vec<u32>, Vec<T>) {
    let mut start = Vec::with_capacity(lists.len() + 1);
    let mut flat = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    start.push(0);
    for l in lists {
        flat.extend_from_slice(l);
        start.push(flat.len() as u32);
    }
    (start, flat)
}

impl Deps {
    fn new(g: &Graph) -> Deps {
        let n = g.nodes.len();
        let np = g.num_placed();
        let mut cons: Vec<Vec<(u32, u64)>> = vec![Vec::new(); np];
        let mut placed_inputs = vec![0u32; np];
        // Placed edges are merged already (largest bytes kept).
        for e in g.placed_edges() {
            cons[e.src as usize].push((e.dst, e.bytes));
            placed_inputs[e.dst as usize] += 1;
        }
        // Distinct successors of every node (parallel edges count once).
        let mut outs: Vec<Vec<usize>> = vec![Vec::new(); n];
        for e in &g.edges {
            outs[e.src].push(e.dst);
        }
        for o in &mut outs {
            o.sort_unstable();
            o.dedup();
        }
        let mut feeds = g.replica_feeds();
        let reps: Vec<u32> = (0..n)
            .filter(|&v| g.decision_of(v).is_none() && !feeds[v].is_empty())
            .map(|v| v as u32)
            .collect();
        let mut rep_of = vec![NONE; n];
        for (r, &v) in reps.iter().enumerate() {
            rep_of[v as usize] = r as u32;
        }
        let mut rep_inputs = vec![0u32; reps.len()];
        let mut rep_cons_placed: Vec<Vec<u32>> = vec![Vec::new(); reps.len()];
        let mut rep_cons_rep: Vec<Vec<u32>> = vec![Vec::new(); reps.len()];
        for (r, &v) in reps.iter().enumerate() {
            for &w in &outs[v as usize] {
                if let Some(d) = g.decision_of(w) {
                    rep_cons_placed[r].push(d);
                    placed_inputs[d as usize] += 1;
                } else if rep_of[w] != NONE {
                    rep_cons_rep[r].push(rep_of[w]);
                    rep_inputs[rep_of[w] as usize] += 1;
                }
            }
        }
        let (cons_start, cons) = rows(&cons);
        let rep_feeds: Vec<Vec<u32>> = reps.iter().map(|&v| std::mem::take(&mut feeds[v as usize])).collect();
        let (feeds_start, feeds) = rows(&rep_feeds);
        let (rep_cons_start, rep_cons_placed) = rows(&rep_cons_placed);
        let (rep_rcons_start, rep_cons_rep) = rows(&rep_cons_rep);
        Deps {
            placed_node: g.placed_nodes().iter().map(|&v| v as u32).collect(),
            cons_start,
            cons,
            placed_inputs,
            reps,
            rep_of,
            feeds_start,
            feeds,
            rep_inputs,
            rep_cons_start,
            rep_cons_placed,
            rep_rcons_start,
            rep_cons_rep,
        }
    }
}
