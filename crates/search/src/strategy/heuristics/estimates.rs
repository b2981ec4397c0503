//! What the heuristics estimate with: each op's time on each chip (through
//! [`OpTimes`], the one op-time function), each node's weights, each chip's
//! memory, the placed graph's edges both ways, and the time a tensor takes
//! between two chips along the package's route (its links' bandwidths and
//! latencies added up, no contention: the heuristics' own model, as in their
//! papers; the judge scores the result).

use super::Allowed;
use mcm_core::op_time::OpTimes;
use mcm_core::package::Package;
use mcm_core::problem::Problem;
use mcm_core::quantity::Scalar;
use std::sync::Arc;

pub struct Estimates {
    /// Placed nodes.
    pub n: usize,
    /// Chips.
    pub c: usize,
    /// Seconds of node `u` on chip `d`, at `u * c + d`.
    time: Vec<f64>,
    /// Bytes of weights per node.
    pub params: Vec<f64>,
    /// Bytes of memory per chip (infinite where the package gives none).
    pub memory: Vec<f64>,
    /// FLOP/s per chip, unit where the package gives none.
    pub compute: Vec<f64>,
    /// Per node, its producers and the bytes each sends it.
    pub preds: Vec<Vec<(u32, f64)>>,
    /// Per node, its consumers and the bytes it sends each.
    pub succs: Vec<Vec<(u32, f64)>>,
    /// A topological order of the placed nodes: the pipeline order (weights
    /// right before their first consumer), stably sorted by the first chip
    /// each node's root domain allows (see [`Allowed::pipeline_order`]), so
    /// that the heuristics that cut it into contiguous stages can give each
    /// chip what it allows.
    pub order: Vec<u32>,
    /// Seconds per byte from chip `a` to chip `b` along the route, at `a * c + b`.
    per_byte: Vec<f64>,
    /// Seconds of latency from `a` to `b` along the route.
    latency: Vec<f64>,
    /// One hop averaged over the package's links: seconds per byte and latency.
    hop: (f64, f64),
    attached: Vec<bool>,
}

impl Estimates {
    pub fn of(problem: &Problem) -> Estimates {
        let all = Allowed::all(problem.graph.num_placed(), problem.package.num_chips());
        Estimates::within(problem, &all)
    }

    /// [`Estimates::of`], its order within the root domains `allowed`.
    pub fn within(problem: &Problem, allowed: &Allowed) -> Estimates {
        let (g, p) = (&problem.graph, &problem.package);
        let (n, c) = (g.num_placed(), p.num_chips());
        let ops = op_times(problem);
        let mut time = Vec::with_capacity(n * c);
        for &node in g.placed_nodes() {
            time.extend((0..c as u32).map(|d| ops.time(node, d)));
        }
        let mut preds = vec![Vec::new(); n];
        let mut succs = vec![Vec::new(); n];
        for e in g.placed_edges() {
            preds[e.dst as usize].push((e.src, e.bytes as f64));
            succs[e.src as usize].push((e.dst, e.bytes as f64));
        }
        let (per_byte, latency) = routes(p);
        let links = p.links.len().max(1) as f64;
        let hop = (
            (0..p.links.len()).map(|l| 1.0 / p.bandwidth_or_unit(l)).sum::<f64>() / links,
            (0..p.links.len())
                .map(|l| p.link_latency(l).unwrap_or(0.0))
                .sum::<f64>()
                / links,
        );
        Estimates {
            n,
            c,
            time,
            params: (0..n as u32).map(|u| g.placed_node(u).params as f64).collect(),
            memory: (0..c as u32).map(|d| p.memory_or_unlimited(d)).collect(),
            compute: (0..c as u32).map(|d| p.compute_or_unit(d)).collect(),
            order: allowed.pipeline_order(problem),
            attached: (0..n)
                .map(|u| preds[u].is_empty() && !succs[u].is_empty() && g.placed_node(u as u32).flops == 0)
                .collect(),
            preds,
            succs,
            per_byte,
            latency,
            hop,
        }
    }

    /// Seconds node `u` takes on chip `d`.
    pub fn time(&self, u: u32, d: u32) -> f64 {
        self.time[u as usize * self.c + d as usize]
    }

    /// Seconds `bytes` take from chip `a` to chip `b` (none on one chip;
    /// infinite where `b` cannot be reached).
    pub fn transfer(&self, bytes: f64, a: u32, b: u32) -> f64 {
        if a == b {
            return 0.0;
        }
        let i = a as usize * self.c + b as usize;
        bytes * self.per_byte[i] + self.latency[i]
    }

    /// Seconds `bytes` take over one average link: the estimate of a
    /// transfer before the chips are known.
    pub fn hop(&self, bytes: f64) -> f64 {
        bytes * self.hop.0 + self.hop.1
    }

    /// The chip that runs the whole graph fastest (ties: the lowest id).
    pub fn fastest(&self) -> u32 {
        let total = |d: u32| (0..self.n as u32).map(|u| self.time(u, d)).sum::<f64>();
        (0..self.c as u32)
            .map(|d| (total(d), d))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map_or(0, |(_, d)| d)
    }

    /// Per node, the longest path from it to a sink: its time on `chip` plus
    /// one average hop per edge (the bottom level list schedulers rank by).
    pub fn bottom_levels(&self, chip: u32) -> Vec<f64> {
        let mut level = vec![0.0; self.n];
        for &u in self.order.iter().rev() {
            let below = self.succs[u as usize]
                .iter()
                .map(|&(s, b)| self.hop(b) + level[s as usize])
                .fold(0.0, f64::max);
            level[u as usize] = self.time(u, chip) + below;
        }
        level
    }

    /// Whether `u` is a source without flops (a weight or a constant) that
    /// feeds some op: the list schedulers place it with its first consumer
    /// (TensorFlow's colocation of a variable with its reader, which Baechi
    /// keeps), instead of scheduling it as an op of its own anywhere.
    pub fn attached(&self, u: u32) -> bool {
        self.attached[u as usize]
    }
}

/// The op times of a problem. A package without `compute` (or with a bad
/// `overhead`) has unit rates and no overhead for the heuristics, the
/// defaults the solver and the other strategies take.
fn op_times(problem: &Problem) -> OpTimes {
    if let Ok(t) = OpTimes::new(problem.graph.clone(), problem.package.clone()) {
        return t;
    }
    let mut p: Package = (*problem.package).clone();
    for (i, chip) in p.chips.iter_mut().enumerate() {
        let ok = problem
            .package
            .chip_compute(i as u32)
            .is_some_and(|x| x > 0.0 && x.is_finite());
        if !ok {
            chip.attrs.insert("compute".into(), Scalar::Int(1));
        }
        chip.attrs.remove("overhead");
    }
    match OpTimes::new(problem.graph.clone(), Arc::new(p)) {
        Ok(t) => t,
        Err(_) => {
            let mut p: Package = (*problem.package).clone();
            for chip in &mut p.chips {
                chip.attrs.clear();
                chip.attrs.insert("compute".into(), Scalar::Int(1));
            }
            OpTimes::new(problem.graph.clone(), Arc::new(p)).expect("unit compute on every chip")
        }
    }
}

/// Seconds per byte and latency along the route between every two chips:
/// the route from `a` to `b` is its first hop then the route from there, so
/// pairs are filled in order of hops.
fn routes(p: &Package) -> (Vec<f64>, Vec<f64>) {
    let c = p.num_chips();
    let mut per_byte = vec![f64::INFINITY; c * c];
    let mut latency = vec![0.0; c * c];
    let mut pairs: Vec<(u32, u32, u32)> = Vec::new();
    for a in 0..c as u32 {
        for b in 0..c as u32 {
            match p.hops(a, b) {
                Some(0) => per_byte[a as usize * c + b as usize] = 0.0,
                Some(h) => pairs.push((h, a, b)),
                None => {}
            }
        }
    }
    pairs.sort_unstable();
    for (_, a, b) in pairs {
        let Some(y) = p.next_hop(a, b) else { continue };
        let Some(l) = p.link(a, y) else { continue };
        let rest = y as usize * c + b as usize;
        let i = a as usize * c + b as usize;
        per_byte[i] = 1.0 / p.bandwidth_or_unit(l) + per_byte[rest];
        latency[i] = p.link_latency(l).unwrap_or(0.0) + latency[rest];
    }
    (per_byte, latency)
}
