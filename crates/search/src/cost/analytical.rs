//! The analytical cost model of the solver brief: per chip, compute time
//! plus the time of the links leaving it; latency is the slowest chip.

use super::bounds::{self, Bound, Chips};
use super::memory::{self, EdgeIndex, MemoryOverflow, PeakMemory};
use super::objective::{Objective, Report};
use super::CostError;
use super::{chain_chips, chain_cuts, stage_cuts};
use mcm_core::graph::Graph;
use mcm_core::latency::LatencyModel;
use mcm_core::package::Package;
use mcm_core::problem::Problem;
use mcm_core::quantity::{format_quantity, Dim};
use std::fmt::Write;
use std::sync::{Arc, OnceLock};

/// The model of one problem, with everything that does not depend on the
/// partition computed once: chip speeds, link bandwidths, routes (the
/// arithmetic itself is [`LatencyModel`]'s, which the solver's latency
/// target shares).
pub struct CostModel {
    pub graph: Arc<Graph>,
    pub package: Arc<Package>,
    core: Arc<LatencyModel>,
    /// Bytes per chip, `None` where a chip declares no memory.
    memory: Vec<Option<f64>>,
    edges: EdgeIndex,
    /// The rules confine the nodes between an edge's ends to its two chips
    /// (`acyclic_flow` and `triangle_dependency` both required).
    confined: bool,
    /// The rules order the chips along every edge (`acyclic_flow`).
    ordered: bool,
    /// The rules hold each chip's weights to its memory (`memory_capacity`).
    bounded: bool,
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
    /// Ops (placed nodes and replicable copies) costed by a measured time
    /// on their chip's kind rather than flops / compute, of `ops`.
    pub profiled_ops: usize,
    pub ops: usize,
}

impl CostModel {
    pub fn new(problem: &Problem) -> Result<CostModel, CostError> {
        let (graph, package) = (problem.graph.clone(), problem.package.clone());
        let core = LatencyModel::new(graph.clone(), package.clone()).map_err(|e| CostError::new(e.message, e.help))?;
        let memory = (0..package.num_chips() as u32)
            .map(|i| package.chip_memory(i))
            .collect();
        let confined = ["acyclic_flow", "triangle_dependency"]
            .iter()
            .all(|k| problem.constraints.iter().any(|g| g.native.as_deref() == Some(*k)));
        let requires = |k: &str| problem.constraints.iter().any(|g| g.native.as_deref() == Some(k));
        let ordered = requires("acyclic_flow");
        let bounded = requires("memory_capacity");
        Ok(CostModel {
            edges: EdgeIndex::new(&graph),
            confined,
            ordered,
            bounded,
            bounds: OnceLock::new(),
            core: Arc::new(core),
            graph,
            package,
            memory,
        })
    }

    /// The shared arithmetic of the model (see [`LatencyModel`]).
    pub fn core(&self) -> &Arc<LatencyModel> {
        &self.core
    }

    /// Seconds per inference: the slowest chip's stage.
    pub fn latency(&self, chips: &[u32]) -> Result<f64, String> {
        self.core.latency(chips)
    }

    /// Every chip's stage time (compute plus outgoing links), in seconds.
    pub fn stage_times(&self, chips: &[u32]) -> Result<Vec<f64>, String> {
        self.core.stage_times(chips)
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
                compute: &self.core.compute,
                pairs: self.chip_pairs(),
                shortest: self.core.is_profiled().then(|| self.core.shortest_op_times()),
            };
            let mut all = bounds::structural(&self.graph, &chips, self.confined);
            all.extend(stage_cuts::bound(&self.graph, &self.core, self.ordered, self.bounded));
            if let Some(chains) = chain_cuts::Chains::of(&self.graph, self.confined) {
                all.extend(chain_cuts::bound(&self.graph, &self.core, &chains, self.bounded));
                all.extend(chain_chips::bound(&self.graph, &self.core, &chains));
            }
            all
        })
    }

    /// (c_a, c_b, bandwidth of the first link a -> b) over the ordered
    /// pairs with a route, deduplicated; `None` past [`bounds::MAX_PAIRS`].
    fn chip_pairs(&self) -> Option<Vec<(f64, f64, f64)>> {
        let m = &self.core;
        let c = m.num_chips();
        let mut seen = std::collections::HashSet::new();
        for (a, b) in (0..c * c).map(|i| ((i / c) as u32, (i % c) as u32)) {
            if let Some(l) = m.first_link(a, b) {
                let key = (m.compute[a as usize], m.compute[b as usize], m.bandwidth[l]);
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
        let (compute, links, traffic) = self.core.stages(chips)?;
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
        let (profiled_ops, ops) = self.core.profiled_ops(chips);
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
            profiled_ops,
            ops,
        })
    }
}

/// The registration's maker: the judge's own pipeline model.
pub(super) fn make(_: &Problem, pipeline: &Arc<CostModel>) -> Result<Arc<dyn Objective>, CostError> {
    Ok(pipeline.clone())
}

impl Objective for CostModel {
    fn name(&self) -> &'static str {
        "pipeline"
    }

    fn cost_key(&self) -> &'static str {
        "latency_s"
    }

    fn cost(&self, chips: &[u32]) -> Result<f64, String> {
        self.latency(chips)
    }

    fn bound(&self) -> Bound {
        CostModel::bound(self).clone()
    }

    fn report(&self, chips: &[u32]) -> Result<Report, String> {
        let r = CostModel::report(self, chips)?;
        Ok(Report {
            cost: r.latency_s,
            bound: r.bound.clone(),
            json: serde_json::to_value(&r).map_err(|e| e.to_string())?,
            text: text(&self.package, &r, !self.graph.profile().is_empty()),
        })
    }

    fn target(&self) -> Option<Arc<LatencyModel>> {
        Some(self.core.clone())
    }
}

fn secs(v: f64) -> String {
    format_quantity(v, Dim::TIME)
}

fn bytes(v: f64) -> String {
    format_quantity(v, Dim::BYTES)
}

/// Links shown at most: the busiest, since a large package has millions.
const LINKS_SHOWN: usize = 12;

/// The report in words: latency and throughput, the bound and the gap, a
/// row per chip that holds anything, and the busiest links; `profiled`:
/// the graph has measured times, and the count of ops that used one.
fn text(package: &Package, r: &CostReport, profiled: bool) -> String {
    let mut s = String::new();
    let name = |c: u32| &package.chips[c as usize].name;
    let _ = writeln!(
        s,
        "latency {} (throughput {:.4} /s); bottleneck `{}`",
        secs(r.latency_s),
        r.throughput,
        name(r.bottleneck)
    );
    // Proven of valid partitions only: one that breaks a rule may beat it.
    let _ = writeln!(
        s,
        "bound   {} (throughput {:.4} /s), proven ({}): gap {:.2}x",
        secs(r.bound_latency_s),
        r.bound_throughput,
        r.bound.because,
        r.latency_s / r.bound_latency_s
    );
    if profiled {
        let _ = writeln!(s, "{}", super::profiled_line(r.profiled_ops, r.ops));
    }
    let _ = writeln!(
        s,
        "{:<12} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "chip", "nodes", "compute", "links", "stage", "weights", "peak", "memory"
    );
    let empty = |c: &ChipCost| c.nodes == 0 && c.stage_s == 0.0 && c.peak_bytes == 0;
    for c in r.chips.iter().filter(|c| !empty(c)) {
        let _ = writeln!(
            s,
            "{:<12} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
            c.name,
            c.nodes,
            secs(c.compute_s),
            secs(c.link_s),
            secs(c.stage_s),
            bytes(c.weight_bytes as f64),
            bytes(c.peak_bytes as f64),
            c.memory_bytes.map_or("-".to_string(), |m| bytes(m as f64))
        );
    }
    let idle = r.chips.iter().filter(|c| empty(c)).count();
    if idle > 0 {
        let _ = writeln!(s, "({idle} empty chip(s) not shown)");
    }
    if r.links.is_empty() {
        return s;
    }
    // Busiest first: traffic, time and the share of the pipeline's period.
    let mut busy: Vec<&LinkCost> = r.links.iter().collect();
    busy.sort_by(|a, b| b.time_s.total_cmp(&a.time_s).then(a.link.cmp(&b.link)));
    let _ = writeln!(
        s,
        "{:<24} {:>12} {:>9} {:>12} {:>11}",
        "link", "traffic", "transfers", "busy", "utilisation"
    );
    for l in busy.iter().take(LINKS_SHOWN) {
        let _ = writeln!(
            s,
            "{:<24} {:>12} {:>9} {:>12} {:>10.1}%",
            format!("{} -> {}", name(l.src), name(l.dst)),
            bytes(l.bytes as f64),
            l.transfers,
            secs(l.time_s),
            100.0 * l.utilisation
        );
    }
    if busy.len() > LINKS_SHOWN {
        let _ = writeln!(
            s,
            "({} more link(s) carry data; --json lists them all)",
            busy.len() - LINKS_SHOWN
        );
    }
    s
}
