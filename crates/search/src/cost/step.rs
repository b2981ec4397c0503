//! The step-time objective (`minimize step_time`): the cost of a placement
//! is the time of one step as [`StepTimeModel`] simulates it
//! (`shared/spec/step-time.md`); its bounds are the spec's lower bounds.
//!
//! Its bounds are the simulator's ([`step_time_bounds`]: critical path,
//! total work, and the ops the rules pin to one chip, read from the
//! solver's root domains), each a theorem over every valid placement.

use super::bounds::{self, Bound, BoundKind};
use super::objective::{Objective, Report};
use super::{CostError, CostModel};
use mcm_core::problem::Problem;
use mcm_core::quantity::{format_quantity, Dim};
use mcm_core::step_time::bounds::{step_time_bounds, StepBound, StepBoundKind};
use mcm_core::step_time::{timeline_svg, PathStep, Schedule, StepTimeModel};
use std::fmt::Write;
use std::sync::Arc;

pub struct StepTime {
    model: StepTimeModel,
    /// The judge's pipeline model, for the memory figures of a report.
    pipeline: Arc<CostModel>,
    bounds: Vec<Bound>,
}

/// The registration's maker.
pub(super) fn make(problem: &Problem, pipeline: &Arc<CostModel>) -> Result<Arc<dyn Objective>, CostError> {
    Ok(Arc::new(StepTime::new(
        pipeline.clone(),
        root_domains(problem).as_deref(),
    )?))
}

/// Root domains read past this many (node, chip) pairs would cost more
/// memory than the bound they sharpen is worth: the rules are left out.
const MAX_DOMAIN_PAIRS: usize = 1 << 22;

/// Per placed node, the chips the rules leave it after the root
/// propagation; `None` when the problem has no valid partition or is too
/// large to list them.
fn root_domains(problem: &Problem) -> Option<Vec<Vec<u32>>> {
    let (n, c) = (problem.graph.num_placed(), problem.package.num_chips());
    if n.saturating_mul(c) > MAX_DOMAIN_PAIRS || problem.constraints.is_empty() {
        return None;
    }
    let s = mcm_solver::Solver::new(problem, mcm_solver::Options::default()).ok()?;
    Some(
        (0..n as u32)
            .map(|u| {
                let d = s.dom(u);
                (0..c as u32).filter(|&x| d.contains(x)).collect()
            })
            .collect(),
    )
}

/// A bound of the simulator as the reports carry it.
fn bound_of(b: &StepBound) -> Bound {
    Bound {
        kind: match b.kind {
            StepBoundKind::CriticalPath => BoundKind::CriticalPath,
            StepBoundKind::TotalWork => BoundKind::TotalWork,
            StepBoundKind::Pinned => BoundKind::Pinned,
        },
        latency_s: b.step_time_s,
        because: b.because.clone(),
    }
}

impl StepTime {
    /// `allowed`: per placed node, the chips the rules allow (see
    /// [`step_time_bounds`]); `None` for any chip.
    pub fn new(pipeline: Arc<CostModel>, allowed: Option<&[Vec<u32>]>) -> Result<StepTime, CostError> {
        let model = StepTimeModel::new(pipeline.graph.clone(), pipeline.package.clone())
            .map_err(|e| CostError::new(e.message, e.help))?;
        let bounds = step_time_bounds(&model, allowed).iter().map(bound_of).collect();
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

    fn picture(&self, chips: &[u32]) -> Option<Result<String, String>> {
        Some(
            self.model
                .simulate(chips)
                .map(|s| timeline_svg(&s, &self.model.graph, &self.model.package)),
        )
    }
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
    for (c, &n) in ops.iter().enumerate() {
        if n == 0 && peak.peak[c] == 0 {
            idle += 1;
            continue;
        }
        let _ = writeln!(
            t,
            "{:<12} {:>6} {:>12} {:>6.1}% {:>12} {:>12} {:>12}",
            chip_name(c as u32),
            n,
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
        let s = StepTime::new(Arc::new(CostModel::new(&p).unwrap()), None).unwrap();
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
        assert!(Objective::bound(&s).because.contains("`a` ~> `c`"));
        // Three independent nodes: the total work binds.
        let p = problem(
            "minimize step_time",
            "a { flops = 3 GFLOP }\n b { flops = 3 GFLOP }\n c { flops = 3 GFLOP }",
        );
        let s = StepTime::new(Arc::new(CostModel::new(&p).unwrap()), None).unwrap();
        assert!((Objective::bound(&s).latency_s - 3e-3).abs() < 1e-15);
    }
}
