//! The analytical cost model of the solver brief: per chip, compute time
//! plus the time of the links leaving it; latency is the slowest chip.

use super::bounds::{self, Bound, Chips};
use super::memory::{self, EdgeIndex, MemoryOverflow, PeakMemory};
use super::CostError;
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::Problem;
use std::sync::{Arc, OnceLock};

/// No link: the route's end, or no route.
const NO_LINK: u32 = u32::MAX;

/// The model of one problem, with everything that does not depend on the
/// partition computed once: chip speeds, link bandwidths, routes.
pub struct CostModel {
    pub graph: Arc<Graph>,
    pub package: Arc<Package>,
    /// FLOP/s per chip.
    compute: Vec<f64>,
    /// Bytes per chip, `None` where a chip declares no memory.
    memory: Vec<Option<f64>>,
    /// Bytes/s per link.
    bandwidth: Vec<f64>,
    /// Seconds per transfer per link (the link's `latency`, 0 if none).
    latency: Vec<f64>,
    /// The first link of the route from `a` to `b` at `a * C + b`
    /// ([`NO_LINK`] when `a == b` or unreachable). A route's next link
    /// depends only on where it is and where it goes, so C² entries hold
    /// every route (lists of links would take C³).
    next_link: Vec<u32>,
    /// Per decision node, its consumers among decision nodes and the bytes
    /// of each edge (parallel edges merged).
    consumers: Vec<Vec<(u32, u64)>>,
    edges: EdgeIndex,
    /// The rules confine the nodes between an edge's ends to its two chips
    /// (`acyclic_flow` and `triangle_dependency` both required).
    confined: bool,
    /// The structural bounds, made on first use (most models never report).
    bounds: OnceLock<Vec<Bound>>,
}

/// One chip's share of a partition's cost.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ChipCost {
    pub chip: u32,
    pub name: String,
    /// Nodes placed here (replicable copies not counted).
    pub nodes: usize,
    /// Seconds of compute, replicable copies included.
    pub compute_s: f64,
    /// Seconds of the links leaving this chip.
    pub link_s: f64,
    /// compute_s + link_s.
    pub stage_s: f64,
    pub weight_bytes: u64,
    /// Weights plus the largest set of live activations (dynamic check).
    pub peak_bytes: u64,
    /// The chip's memory in whole bytes (a byte count is an integer in
    /// every report); `None` where the chip declares none.
    pub memory_bytes: Option<u64>,
}

/// One link's share of a partition's cost (links that carry nothing are
/// left out of a report).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LinkCost {
    pub link: u32,
    pub src: u32,
    pub dst: u32,
    /// Bytes it carries per inference.
    pub bytes: u64,
    /// Node outputs that cross it (each pays the link's latency).
    pub transfers: u32,
    /// Seconds it is busy per inference: bytes / bandwidth + transfers x latency.
    pub time_s: f64,
    /// time_s over the partition's latency: the share of each pipeline
    /// period the link is busy.
    pub utilisation: f64,
}

/// The whole cost of a partition, with the proven lower bound.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CostReport {
    pub latency_s: f64,
    pub throughput: f64,
    /// No partition valid under the problem's rules has a lower latency
    /// (the largest [structural bound](CostModel::bounds)).
    pub bound_latency_s: f64,
    pub bound_throughput: f64,
    /// The bound that binds, and why it holds.
    pub bound: Bound,
    /// The slowest chip, which sets the latency.
    pub bottleneck: u32,
    pub chips: Vec<ChipCost>,
    /// The links that carry data, in link order.
    pub links: Vec<LinkCost>,
    /// The dynamic check's verdict; `None` when it passes.
    pub memory_overflow: Option<String>,
}

impl CostModel {
    pub fn new(problem: &Problem) -> Result<CostModel, CostError> {
        let (graph, package) = (problem.graph.clone(), problem.package.clone());
        let c = package.num_chips();
        if c == 0 {
            return Err(CostError::new("the package has no chips", "declare at least one chip"));
        }
        let mut compute = Vec::with_capacity(c);
        let mut memory = Vec::with_capacity(c);
        for (i, chip) in package.chips.iter().enumerate() {
            let v = package.chip_compute(i as u32);
            match v {
                Some(x) if x > 0.0 && x.is_finite() => compute.push(x),
                Some(_) => {
                    return Err(CostError::new(
                        format!("chip `{}` has a compute rate that is not positive", chip.name),
                        "the cost model divides flops by `compute`; give every chip a positive rate",
                    ))
                }
                None => {
                    return Err(CostError::new(
                        format!("chip `{}` (chip {i}) has no `compute` attribute", chip.name),
                        "the cost model needs `compute = ... TFLOP/s` on every chip",
                    ))
                }
            }
            memory.push(package.chip_memory(i as u32));
        }
        let mut bandwidth = Vec::with_capacity(package.links.len());
        for (li, l) in package.links.iter().enumerate() {
            let (a, b) = (&package.chips[l.src as usize].name, &package.chips[l.dst as usize].name);
            match package.link_bandwidth(li) {
                Some(x) if x > 0.0 && x.is_finite() => bandwidth.push(x),
                _ => {
                    return Err(CostError::new(
                        format!("the link `{a}` -> `{b}` has no positive `bandwidth`"),
                        "the cost model needs `bandwidth = ... GB/s` on every link",
                    ))
                }
            }
        }
        let latency = (0..package.links.len())
            .map(|l| package.link_latency(l).unwrap_or(0.0))
            .collect();
        let next_link = (0..c * c)
            .map(|i| {
                let (a, b) = ((i / c) as u32, (i % c) as u32);
                package
                    .next_hop(a, b)
                    .and_then(|y| package.link(a, y))
                    .map_or(NO_LINK, |l| l as u32)
            })
            .collect();
        let mut consumers = vec![Vec::new(); graph.num_placed()];
        for e in graph.placed_edges() {
            consumers[e.src as usize].push((e.dst, e.bytes));
        }
        let confined = ["acyclic_flow", "triangle_dependency"]
            .iter()
            .all(|k| problem.constraints.iter().any(|g| g.native.as_deref() == Some(*k)));
        Ok(CostModel {
            edges: EdgeIndex::new(&graph),
            confined,
            bounds: OnceLock::new(),
            graph,
            package,
            compute,
            memory,
            bandwidth,
            latency,
            next_link,
            consumers,
        })
    }

    /// The links from `a` to `b` in order, `None` when `b` is unreachable.
    fn route(&self, a: u32, b: u32) -> Option<impl Iterator<Item = usize> + '_> {
        self.package.hops(a, b)?;
        let c = self.compute.len();
        let mut at = a;
        Some(std::iter::from_fn(move || {
            let l = self.next_link[at as usize * c + b as usize];
            (l != NO_LINK).then(|| {
                at = self.package.links[l as usize].dst;
                l as usize
            })
        }))
    }

    /// Seconds of compute per chip, replicable copies on every chip that
    /// hosts one of their consumers.
    fn compute_times(&self, chips: &[u32]) -> Vec<f64> {
        let mut t = vec![0.0; self.compute.len()];
        let g = &self.graph;
        for (d, &c) in chips.iter().enumerate() {
            t[c as usize] += g.placed_node(d as u32).flops as f64 / self.compute[c as usize];
        }
        for (n, hosts) in memory::replica_hosts(g, &self.edges, chips) {
            for c in hosts {
                t[c as usize] += g.nodes[n].flops as f64 / self.compute[c as usize];
            }
        }
        t
    }

    /// Bytes and transfers carried per link: each node's output goes once
    /// to each other chip hosting a consumer, along its route; a link shared
    /// by several destinations carries it once.
    fn link_traffic(&self, chips: &[u32]) -> Result<(Vec<f64>, Vec<u32>), String> {
        let mut bytes = vec![0.0; self.bandwidth.len()];
        let mut transfers = vec![0u32; self.bandwidth.len()];
        let mut stamp = vec![u32::MAX; self.bandwidth.len()];
        let mut dests: Vec<u32> = Vec::new();
        for (u, outs) in self.consumers.iter().enumerate() {
            let from = chips[u];
            dests.clear();
            let mut size = 0u64;
            for &(v, b) in outs {
                let to = chips[v as usize];
                if to != from {
                    size = size.max(b);
                    if !dests.contains(&to) {
                        dests.push(to);
                    }
                }
            }
            for &to in &dests {
                let Some(route) = self.route(from, to) else {
                    let p = &self.package;
                    return Err(format!(
                        "node `{}` on chip `{}` sends to chip `{}`, which no route reaches",
                        self.graph.placed_node(u as u32).id,
                        p.chips[from as usize].name,
                        p.chips[to as usize].name
                    ));
                };
                for l in route {
                    if stamp[l] != u as u32 {
                        stamp[l] = u as u32;
                        bytes[l] += size as f64;
                        transfers[l] += 1;
                    }
                }
            }
        }
        Ok((bytes, transfers))
    }

    /// Stage time per chip: compute plus the links leaving it, each
    /// transfer paying the link's latency once per hop.
    fn stages(&self, chips: &[u32]) -> Result<(Vec<f64>, Vec<f64>), String> {
        let (compute, links, _) = self.stages_and_traffic(chips)?;
        Ok((compute, links))
    }

    /// [`CostModel::stages`] with every link's traffic and busy time.
    #[allow(clippy::type_complexity)]
    fn stages_and_traffic(&self, chips: &[u32]) -> Result<(Vec<f64>, Vec<f64>, Vec<(f64, u32, f64)>), String> {
        self.check_len(chips)?;
        let compute = self.compute_times(chips);
        let mut links = vec![0.0; compute.len()];
        let (bytes, transfers) = self.link_traffic(chips)?;
        let mut traffic = Vec::with_capacity(bytes.len());
        for (l, (b, k)) in bytes.into_iter().zip(transfers).enumerate() {
            let t = b / self.bandwidth[l] + k as f64 * self.latency[l];
            links[self.package.links[l].src as usize] += t;
            traffic.push((b, k, t));
        }
        Ok((compute, links, traffic))
    }

    fn check_len(&self, chips: &[u32]) -> Result<(), String> {
        if chips.len() != self.graph.num_placed() {
            return Err(format!(
                "a partition of {} nodes for a graph with {}",
                chips.len(),
                self.graph.num_placed()
            ));
        }
        if let Some(&c) = chips.iter().find(|&&c| c as usize >= self.compute.len()) {
            return Err(format!(
                "chip {c} does not exist (the package has {})",
                self.compute.len()
            ));
        }
        Ok(())
    }

    /// Seconds per inference: the slowest chip's stage.
    pub fn latency(&self, chips: &[u32]) -> Result<f64, String> {
        Ok(self.stage_times(chips)?.into_iter().fold(0.0, f64::max))
    }

    /// Every chip's stage time (compute plus outgoing links), in seconds.
    pub fn stage_times(&self, chips: &[u32]) -> Result<Vec<f64>, String> {
        let (compute, links) = self.stages(chips)?;
        Ok(compute.iter().zip(&links).map(|(a, b)| a + b).collect())
    }

    /// The proven lower bound on latency: no partition valid under the
    /// problem's rules is faster.
    pub fn bound_latency(&self) -> f64 {
        self.bound().latency_s
    }

    /// The structural bound that binds (the largest of [`CostModel::bounds`]).
    pub fn bound(&self) -> &Bound {
        bounds::proven(self.bounds()).expect("the total-compute bound is always there")
    }

    /// Every structural lower bound on latency, each a theorem (see
    /// [`bounds`](super::bounds)): total compute, the largest node, and the
    /// edge whose span the rules confine to two chips.
    pub fn bounds(&self) -> &[Bound] {
        self.bounds.get_or_init(|| {
            let chips = Chips {
                compute: &self.compute,
                pairs: self.chip_pairs(),
            };
            bounds::structural(&self.graph, &chips, self.confined)
        })
    }

    /// (c_a, c_b, bandwidth of the first link a -> b) over the ordered
    /// pairs with a route, deduplicated; `None` past [`bounds::MAX_PAIRS`].
    fn chip_pairs(&self) -> Option<Vec<(f64, f64, f64)>> {
        let c = self.compute.len();
        let mut seen = std::collections::HashSet::new();
        for (i, &l) in self.next_link.iter().enumerate() {
            if l != NO_LINK {
                let (a, b) = (i / c, i % c);
                let key = (self.compute[a], self.compute[b], self.bandwidth[l as usize]);
                seen.insert((key.0.to_bits(), key.1.to_bits(), key.2.to_bits()));
                if seen.len() > bounds::MAX_PAIRS {
                    return None;
                }
            }
        }
        Some(
            seen.into_iter()
                .map(|(a, b, w)| (f64::from_bits(a), f64::from_bits(b), f64::from_bits(w)))
                .collect(),
        )
    }

    /// The dynamic check: weights plus live activations per chip.
    pub fn peak_memory(&self, chips: &[u32]) -> Result<PeakMemory, MemoryOverflow> {
        memory::peak_memory(&self.graph, &self.edges, &self.package, &self.memory, chips)
    }

    /// Latency, throughput, the bound, and every chip's share.
    pub fn report(&self, chips: &[u32]) -> Result<CostReport, String> {
        let (compute, links, traffic) = self.stages_and_traffic(chips)?;
        let (peak, overflow) = match self.peak_memory(chips) {
            Ok(p) => (p, None),
            Err(o) => (o.usage.clone(), Some(o.to_string())),
        };
        let mut counts = vec![0usize; compute.len()];
        for &c in chips {
            counts[c as usize] += 1;
        }
        let per_chip: Vec<ChipCost> = (0..compute.len())
            .map(|c| ChipCost {
                chip: c as u32,
                name: self.package.chips[c].name.clone(),
                nodes: counts[c],
                compute_s: compute[c],
                link_s: links[c],
                stage_s: compute[c] + links[c],
                weight_bytes: peak.weights[c],
                peak_bytes: peak.peak[c],
                memory_bytes: self.memory[c].map(|m| m as u64),
            })
            .collect();
        let (bottleneck, latency) =
            per_chip
                .iter()
                .map(|c| (c.chip, c.stage_s))
                .fold((0, 0.0), |best, x| if x.1 > best.1 { x } else { best });
        let link_costs = traffic
            .into_iter()
            .enumerate()
            .filter(|(_, (_, k, _))| *k > 0)
            .map(|(l, (b, k, t))| LinkCost {
                link: l as u32,
                src: self.package.links[l].src,
                dst: self.package.links[l].dst,
                bytes: b as u64,
                transfers: k,
                time_s: t,
                utilisation: t / latency,
            })
            .collect();
        let bound = self.bound().clone();
        Ok(CostReport {
            latency_s: latency,
            throughput: 1.0 / latency,
            bound_latency_s: bound.latency_s,
            bound_throughput: 1.0 / bound.latency_s,
            bound,
            bottleneck,
            chips: per_chip,
            links: link_costs,
            memory_overflow: overflow,
        })
    }
}
