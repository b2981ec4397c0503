//! The step-time objective (`minimize step_time`): the cost of a placement
//! is the time of one step as [`StepTimeModel`] simulates it
//! (`shared/spec/step-time.md`); its bounds are the spec's lower bounds.
//!
//! Bounds, each a theorem over every placement (rules or none):
//! - **critical path**: a path of the graph runs its ops one after another
//!   whatever the placement, each at least its fastest time on any chip
//!   (transfers only add); a node that may never run counts nothing.
//! - **total work**: every op that runs takes at least its fastest time on
//!   some chip and a chip runs one op at a time, so the chips together are
//!   busy at least the sum of those times, at most C x the step; and where
//!   every op's time is at least flops / compute on every chip, chip d
//!   computes at most T x c_d flops within T, so T >= the flops that run
//!   over the total compute (the sharper one on heterogeneous packages).
//!
//! What the rules force (a node confined to slow chips) is not derived.

use super::bounds::{self, Bound, BoundKind};
use super::objective::{Objective, Report};
use super::{CostError, CostModel};
use mcm_core::graph::Graph;
use mcm_core::op_time::OpTimes;
use mcm_core::problem::Problem;
use mcm_core::quantity::{format_quantity, Dim};
use mcm_core::step_time::{PathStep, Schedule, StepTimeModel};
use std::fmt::Write;
use std::sync::Arc;

pub struct StepTime {
    model: StepTimeModel,
    /// The judge's pipeline model, for the memory figures of a report.
    pipeline: Arc<CostModel>,
    bounds: Vec<Bound>,
}

/// The registration's maker.
pub(super) fn make(_: &Problem, pipeline: &Arc<CostModel>) -> Result<Arc<dyn Objective>, CostError> {
    Ok(Arc::new(StepTime::new(pipeline.clone())?))
}

impl StepTime {
    pub fn new(pipeline: Arc<CostModel>) -> Result<StepTime, CostError> {
        let model = StepTimeModel::new(pipeline.graph.clone(), pipeline.package.clone())
            .map_err(|e| CostError::new(e.message, e.help))?;
        let bounds = step_bounds(&model.times, model.package.num_chips());
        Ok(StepTime {
            model,
            pipeline,
            bounds,
        })
    }

    /// The simulator this objective costs with.
    pub fn model(&self) -> &StepTimeModel {
        &self.model
    }

    /// Every structural bound (see the module's comment).
    pub fn bounds(&self) -> &[Bound] {
        &self.bounds
    }
}

impl Objective for StepTime {
    fn name(&self) -> &'static str {
        "step_time"
    }

    fn cost_key(&self) -> &'static str {
        "step_time_s"
    }

    fn cost(&self, chips: &[u32]) -> Result<f64, String> {
        self.model.step_time(chips)
    }

    fn bound(&self) -> Bound {
        bounds::proven(&self.bounds)
            .cloned()
            .expect("the total-work bound is always there")
    }

    fn report(&self, chips: &[u32]) -> Result<Report, String> {
        let s = self.model.simulate(chips)?;
        let bound = Objective::bound(self);
        let (json, text) = describe(&self.model, &self.pipeline, chips, &s, &bound, &self.bounds);
        Ok(Report {
            cost: s.step_time_s,
            bound,
            json,
            text,
        })
    }
}

/// The critical-path and total-work bounds of one graph on `chips` chips.
fn step_bounds(times: &OpTimes, chips: usize) -> Vec<Bound> {
    let g: &Graph = &times.graph;
    let runs = bounds::running(g);
    let fastest: Vec<f64> = (0..g.nodes.len())
        .map(|u| match runs[u] {
            true => (0..chips as u32)
                .map(|d| times.time(u, d))
                .fold(f64::INFINITY, f64::min),
            false => 0.0,
        })
        .collect();
    // Longest path, each node at its fastest, with the node it came from.
    let mut ins: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    for e in &g.edges {
        ins[e.dst].push(e.src);
    }
    let mut ends = vec![0.0f64; g.nodes.len()];
    let mut from: Vec<Option<usize>> = vec![None; g.nodes.len()];
    for &v in g.topological_order() {
        let best = ins[v].iter().copied().fold(None, |m: Option<usize>, u| match m {
            Some(w) if ends[w] >= ends[u] => m,
            _ => Some(u),
        });
        ends[v] = best.map_or(0.0, |u| ends[u]) + fastest[v];
        from[v] = best;
    }
    let mut out = Vec::new();
    let work: f64 = fastest.iter().sum();
    out.push(Bound {
        kind: BoundKind::TotalWork,
        latency_s: work / chips as f64,
        because: "total work: every op at its fastest, over the number of chips".into(),
    });
    let flops_bound = (0..g.nodes.len())
        .filter(|&u| runs[u])
        .all(|u| (0..chips).all(|d| times.time(u, d as u32) >= g.nodes[u].flops as f64 / times.compute[d]));
    if flops_bound {
        let flops: f64 = (0..g.nodes.len())
            .filter(|&u| runs[u])
            .map(|u| g.nodes[u].flops as f64)
            .sum();
        out.push(Bound {
            kind: BoundKind::TotalWork,
            latency_s: flops / times.compute.iter().sum::<f64>(),
            because: "total work: the flops that run over the total compute".into(),
        });
    }
    if let Some(last) = (0..g.nodes.len()).fold(None, |m: Option<usize>, v| match m {
        Some(w) if ends[w] >= ends[v] => m,
        _ => Some(v),
    }) {
        let mut first = last;
        let mut n = 1;
        while let Some(u) = from[first] {
            first = u;
            n += 1;
        }
        out.push(Bound {
            kind: BoundKind::CriticalPath,
            latency_s: ends[last],
            because: format!(
                "critical path from `{}` to `{}` ({n} ops), each at its fastest",
                g.nodes[first].id, g.nodes[last].id
            ),
        });
    }
    out
}

fn secs(v: f64) -> String {
    format_quantity(v, Dim::TIME)
}

fn bytes(v: f64) -> String {
    format_quantity(v, Dim::BYTES)
}

/// Links shown at most in words: the busiest.
const LINKS_SHOWN: usize = 12;

/// The report of one simulated step: JSON and words.
fn describe(
    model: &StepTimeModel,
    pipeline: &CostModel,
    chips: &[u32],
    s: &Schedule,
    bound: &Bound,
    all: &[Bound],
) -> (serde_json::Value, String) {
    let (g, p) = (&model.graph, &model.package);
    let chip_name = |c: u32| p.chips[c as usize].name.as_str();
    let node_id = |i: u32| g.nodes[i as usize].id.as_str();
    let placed_id = |d: u32| g.nodes[g.placed_nodes()[d as usize]].id.as_str();
    let (peak, overflow) = match pipeline.peak_memory(chips) {
        Ok(m) => (m, None),
        Err(o) => (o.usage.clone(), Some(o.to_string())),
    };
    let mut ops = vec![0usize; p.num_chips()];
    for o in &s.ops {
        ops[o.chip as usize] += 1;
    }
    let per_chip: Vec<serde_json::Value> = (0..p.num_chips())
        .map(|c| {
            serde_json::json!({
                "chip": c, "name": chip_name(c as u32), "ops": ops[c], "busy_s": s.chip_busy_s[c],
                "weight_bytes": peak.weights[c], "peak_bytes": peak.peak[c],
                "memory_bytes": p.chip_memory(c as u32).map(|m| m as u64),
            })
        })
        .collect();
    let mut carried = vec![(0usize, 0u64); p.links.len()];
    for t in &s.transfers {
        carried[t.link as usize].0 += 1;
        carried[t.link as usize].1 += t.bytes;
    }
    let busy_links: Vec<usize> = (0..p.links.len()).filter(|&l| carried[l].0 > 0).collect();
    let per_link: Vec<serde_json::Value> = busy_links
        .iter()
        .map(|&l| {
            serde_json::json!({
                "link": l, "src": p.links[l].src, "dst": p.links[l].dst,
                "transfers": carried[l].0, "bytes": carried[l].1, "busy_s": s.link_busy_s[l],
            })
        })
        .collect();
    let op_json = |i: usize| {
        let o = &s.ops[i];
        serde_json::json!({
            "node": node_id(o.node), "node_index": o.node, "chip": o.chip, "chip_name": chip_name(o.chip),
            "replica": matches!(o.of, mcm_core::step_time::OpOf::Replica(_)),
            "start_s": o.start_s, "end_s": o.end_s,
        })
    };
    let transfer_json = |i: usize| {
        let t = &s.transfers[i];
        let l = &p.links[t.link as usize];
        serde_json::json!({
            "node": placed_id(t.node), "link": t.link, "src": l.src, "dst": l.dst,
            "src_name": chip_name(l.src), "dst_name": chip_name(l.dst),
            "bytes": t.bytes, "start_s": t.start_s, "end_s": t.end_s,
        })
    };
    let path: Vec<serde_json::Value> = s
        .critical_path
        .iter()
        .map(|step| match *step {
            PathStep::Op(i) => serde_json::json!({"op": op_json(i)}),
            PathStep::Transfer(i) => serde_json::json!({"transfer": transfer_json(i)}),
        })
        .collect();
    let gap = s.step_time_s / bound.latency_s;
    let json = serde_json::json!({
        "step_time_s": s.step_time_s,
        "bound_step_time_s": bound.latency_s, "bound": bound, "bounds": all, "gap": gap,
        "ops": s.ops.len(), "transfers": s.transfers.len(),
        "chips": per_chip, "links": per_link,
        "last_op": s.last_op.map(op_json), "last_transfer": s.last_transfer.map(transfer_json),
        "critical_path": path, "memory_overflow": overflow,
    });

    let mut t = String::new();
    let _ = write!(t, "step time {}", secs(s.step_time_s));
    if let Some(i) = s.last_op {
        let o = &s.ops[i];
        let _ = write!(t, "; the last op is `{}` on `{}`", node_id(o.node), chip_name(o.chip));
    }
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "bound     {} proven ({}): gap {gap:.2}x",
        secs(bound.latency_s),
        bound.because
    );
    if let Some(i) = s.last_transfer {
        let x = &s.transfers[i];
        let l = &p.links[x.link as usize];
        let _ = writeln!(
            t,
            "last transfer: `{}`'s output over `{}` -> `{}`, {} to {}",
            placed_id(x.node),
            chip_name(l.src),
            chip_name(l.dst),
            secs(x.start_s),
            secs(x.end_s)
        );
    }
    let _ = writeln!(
        t,
        "critical path: {} op(s) and {} transfer(s)",
        s.critical_path.iter().filter(|x| matches!(x, PathStep::Op(_))).count(),
        s.critical_path
            .iter()
            .filter(|x| matches!(x, PathStep::Transfer(_)))
            .count()
    );
    let _ = writeln!(
        t,
        "{:<12} {:>6} {:>12} {:>7} {:>12} {:>12} {:>12}",
        "chip", "ops", "busy", "busy %", "weights", "peak", "memory"
    );
    let mut idle = 0;
    for c in 0..p.num_chips() {
        if ops[c] == 0 && peak.peak[c] == 0 {
            idle += 1;
            continue;
        }
        let _ = writeln!(
            t,
            "{:<12} {:>6} {:>12} {:>6.1}% {:>12} {:>12} {:>12}",
            chip_name(c as u32),
            ops[c],
            secs(s.chip_busy_s[c]),
            100.0 * s.chip_busy_s[c] / s.step_time_s,
            bytes(peak.weights[c] as f64),
            bytes(peak.peak[c] as f64),
            p.chip_memory(c as u32).map_or("-".to_string(), bytes)
        );
    }
    if idle > 0 {
        let _ = writeln!(t, "({idle} empty chip(s) not shown)");
    }
    if !busy_links.is_empty() {
        let mut order = busy_links.clone();
        order.sort_by(|&a, &b| s.link_busy_s[b].total_cmp(&s.link_busy_s[a]).then(a.cmp(&b)));
        let _ = writeln!(t, "{:<24} {:>9} {:>12} {:>12}", "link", "transfers", "traffic", "busy");
        for &l in order.iter().take(LINKS_SHOWN) {
            let k = &p.links[l];
            let _ = writeln!(
                t,
                "{:<24} {:>9} {:>12} {:>12}",
                format!("{} -> {}", chip_name(k.src), chip_name(k.dst)),
                carried[l].0,
                bytes(carried[l].1 as f64),
                secs(s.link_busy_s[l])
            );
        }
        if order.len() > LINKS_SHOWN {
            let _ = writeln!(
                t,
                "({} more link(s) carry data; --json lists them all)",
                order.len() - LINKS_SHOWN
            );
        }
    }
    (json, t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::objective::{objective, registration};
    use mcm_core::problem::Metric;

    fn problem(objective: &str, graph: &str) -> Problem {
        let text = format!(
            "use std::topologies::ring\n\
             let t = ring(n = 3, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)\n\
             let g = graph {{ {graph} }}\n\
             partition g onto t {{ {objective} }}\n"
        );
        let c = mcm_lang::compile_str("t.mcm", &text, std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(c.ok(), "{}", mcm_core::diag::render_text(&c.program.sources, &c.diags));
        c.problem(None).expect("one problem").clone()
    }

    const CHAIN: &str = "a { flops = 1 GFLOP }\n b { flops = 3 GFLOP }\n c { flops = 2 GFLOP }\n a -> b\n b -> c";

    #[test]
    fn each_objective_gets_the_model_its_metric_is_registered_to() {
        for (line, metric) in [
            ("maximize throughput", Metric::Throughput),
            ("minimize latency", Metric::Latency),
            ("minimize step_time", Metric::StepTime),
        ] {
            let p = problem(line, CHAIN);
            assert_eq!(p.objective.metric, metric);
            let o = objective(&p).expect("a model");
            assert_eq!(o.name(), registration(metric).name, "{line}");
        }
        let pipeline = objective(&problem("maximize throughput", CHAIN)).unwrap();
        assert!(pipeline.target().is_some());
        let step = objective(&problem("minimize step_time", CHAIN)).unwrap();
        assert!(step.target().is_none(), "step time has no SAT target encoding");
        assert_eq!(step.cost_key(), "step_time_s");
    }

    #[test]
    fn the_step_bounds_are_the_critical_path_and_the_total_work() {
        let p = problem("minimize step_time", CHAIN);
        let s = StepTime::new(Arc::new(CostModel::new(&p).unwrap())).unwrap();
        let by = |k: BoundKind| {
            s.bounds()
                .iter()
                .filter(|b| b.kind == k)
                .map(|b| b.latency_s)
                .fold(0.0, f64::max)
        };
        // A chain runs one op after another: 6 GFLOP at 1 TFLOP/s.
        assert!((by(BoundKind::CriticalPath) - 6e-3).abs() < 1e-15);
        assert!((by(BoundKind::TotalWork) - 2e-3).abs() < 1e-15);
        assert_eq!(Objective::bound(&s).kind, BoundKind::CriticalPath);
        assert!(Objective::bound(&s).because.contains("from `a` to `c`"));
        // Three independent nodes: the total work binds.
        let p = problem(
            "minimize step_time",
            "a { flops = 3 GFLOP }\n b { flops = 3 GFLOP }\n c { flops = 3 GFLOP }",
        );
        let s = StepTime::new(Arc::new(CostModel::new(&p).unwrap())).unwrap();
        assert!((Objective::bound(&s).latency_s - 3e-3).abs() < 1e-15);
    }
}
