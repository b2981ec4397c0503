//! Lower bounds on the step time of every partition (spec "Lower bounds").
//! Each rests on one fact of the model, stated with it:
//!
//! - **critical path**: along every path of the graph each op starts after
//!   its inputs' ops end, so the step takes at least the path's ops one
//!   after another, each at its shortest time on a chip it may use,
//!   transfers free.
//! - **total work**: every op that runs runs at least once, and the chips
//!   together compute at most C × T seconds in a step of T; so T ≥ the sum
//!   of the shortest times / C. When no op runs faster than its flops over
//!   its chip's compute (no profiled time below that), chip d computes at
//!   most T × compute(d) flops, so T ≥ total flops / total compute, which
//!   is higher on a package of unequal chips; the larger one is kept.
//! - **pinned**: the ops the rules confine to one chip run there one after
//!   another: T ≥ the sum of their times on it.
//!
//! `allowed` carries what the rules force: per placed node, the chips a
//! valid partition may put it on (`None`: any chip). Replicable copies may
//! run on any chip.

use super::StepTimeModel;

/// Which bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepBoundKind {
    CriticalPath,
    TotalWork,
    Pinned,
}

impl StepBoundKind {
    /// Its name in reports, as JSON spells it.
    pub fn name(self) -> &'static str {
        match self {
            StepBoundKind::CriticalPath => "critical_path",
            StepBoundKind::TotalWork => "total_work",
            StepBoundKind::Pinned => "pinned",
        }
    }
}

/// A lower bound on the step time of every valid partition.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StepBound {
    pub kind: StepBoundKind,
    pub step_time_s: f64,
    /// What it rests on, in words.
    pub because: String,
}

/// Every bound of the model; `allowed[d]`, when given, lists the chips
/// placed node `d` may sit on under the rules (an empty list is treated as
/// any chip: an infeasible problem has no step time to bound).
pub fn step_time_bounds(m: &StepTimeModel, allowed: Option<&[Vec<u32>]>) -> Vec<StepBound> {
    let g = &*m.graph;
    let chips = m.net.chips as u32;
    let all: Vec<u32> = (0..chips).collect();
    let on = |v: usize| -> &[u32] {
        match (g.decision_of(v), allowed) {
            (Some(d), Some(a)) if a.get(d as usize).is_some_and(|x| !x.is_empty()) => &a[d as usize],
            _ => &all,
        }
    };
    // The ops that run: placed nodes and the replicable nodes some placed
    // node depends on.
    let runs = |v: usize| g.decision_of(v).is_some() || m.deps.rep_of[v] != super::NONE;
    let shortest: Vec<f64> = (0..g.nodes.len())
        .map(|v| {
            if !runs(v) {
                return 0.0;
            }
            on(v).iter().map(|&c| m.times.time(v, c)).fold(f64::INFINITY, f64::min)
        })
        .collect();

    let mut out = Vec::new();

    // Critical path: longest path by node weights, in topological order.
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    for e in &g.edges {
        preds[e.dst].push(e.src);
    }
    let mut dist = vec![0.0f64; g.nodes.len()];
    let mut from = vec![usize::MAX; g.nodes.len()];
    for &v in g.topological_order() {
        let mut best = 0.0f64;
        for &p in &preds[v] {
            if dist[p] > best || (from[v] == usize::MAX && dist[p] >= best) {
                best = dist[p];
                from[v] = p;
            }
        }
        dist[v] = best + shortest[v];
    }
    if let Some(end) = (0..g.nodes.len()).max_by(|&a, &b| dist[a].total_cmp(&dist[b]).then(b.cmp(&a))) {
        let mut len = 1;
        let mut first = end;
        while from[first] != usize::MAX {
            first = from[first];
            len += 1;
        }
        out.push(StepBound {
            kind: StepBoundKind::CriticalPath,
            step_time_s: dist[end],
            because: format!(
                "the path `{}` ~> `{}` ({len} ops), each at its shortest time, transfers free",
                g.nodes[first].id, g.nodes[end].id
            ),
        });
    }

    // Total work.
    let work: f64 = shortest.iter().sum();
    let mut total = StepBound {
        kind: StepBoundKind::TotalWork,
        step_time_s: work / chips as f64,
        because: format!("the ops' shortest times over {chips} chips"),
    };
    let never_faster = (0..g.nodes.len()).filter(|&v| runs(v)).all(|v| {
        let f = g.nodes[v].flops as f64;
        (0..chips).all(|c| m.times.time(v, c) >= f / m.times.compute[c as usize])
    });
    if never_faster {
        let flops: f64 = (0..g.nodes.len())
            .filter(|&v| runs(v))
            .map(|v| g.nodes[v].flops as f64)
            .sum();
        let compute: f64 = m.times.compute.iter().sum();
        if flops / compute > total.step_time_s {
            total = StepBound {
                kind: StepBoundKind::TotalWork,
                step_time_s: flops / compute,
                because: "total flops / total compute".into(),
            };
        }
    }
    out.push(total);

    // Pinned: per chip, the placed nodes confined to it.
    if let Some(a) = allowed {
        let mut per_chip = vec![(0.0f64, 0usize, usize::MAX); chips as usize];
        for (d, &v) in g.placed_nodes().iter().enumerate() {
            if let Some([c]) = a.get(d).map(Vec::as_slice) {
                if *c < chips {
                    let e = &mut per_chip[*c as usize];
                    e.0 += m.times.time(v, *c);
                    e.1 += 1;
                    e.2 = e.2.min(v);
                }
            }
        }
        if let Some((c, &(t, n, v))) = per_chip
            .iter()
            .enumerate()
            .filter(|(_, e)| e.1 > 0)
            .max_by(|x, y| x.1 .0.total_cmp(&y.1 .0).then(y.0.cmp(&x.0)))
        {
            let what = if n == 1 {
                format!("node `{}`", g.nodes[v].id)
            } else {
                format!("{n} nodes (`{}`, ...)", g.nodes[v].id)
            };
            out.push(StepBound {
                kind: StepBoundKind::Pinned,
                step_time_s: t,
                because: format!("{what} the rules confine to chip `{}`", m.package.chips[c].name),
            });
        }
    }
    // A bound is a sum of op times, and so is the step time of a schedule,
    // each rounded in its own order: a bound met exactly (everything on one
    // chip, say) could come out a rounding error above the step it bounds.
    // Summing n terms errs by at most n units in the last place, relative
    // to the sum; shading every bound down by twice that keeps it below.
    let shade = 1.0 - 2.0 * (g.nodes.len() as f64 + 1.0) * f64::EPSILON;
    for b in &mut out {
        b.step_time_s *= shade;
    }
    out
}

/// The highest of `bounds` (the first such), the one a gap is taken to.
pub fn best(bounds: &[StepBound]) -> Option<&StepBound> {
    bounds.iter().fold(None, |b: Option<&StepBound>, x| match b {
        Some(y) if y.step_time_s >= x.step_time_s => b,
        _ => Some(x),
    })
}
