//! Pipeline partitioning by dynamic programming, after the thesis seed:
//! cut a topological order of the nodes into contiguous stages, one per
//! chip in id order, minimising the slowest stage's estimated time (its
//! compute plus the bytes it sends on), with each stage's weights within
//! its chip's memory; the solver then makes each cut valid by FIX.
//!
//! The DP yields the best cut for every number of chips used; those are
//! the candidates, evaluated from the best estimate on while the budget
//! lasts. On a package with a chip faster than one before it, the
//! candidates also include cuts that leave each chip before the fast one a
//! single node without inputs or flops ([`filler_cuts`]).
//!
//! Rules beyond the stdlib's shape the cuts through the solver: the order cut
//! puts first the nodes whose root domains start at lower chips (`input_ids`,
//! alone allowed on chip 0, before the embeddings' weights), a stage goes
//! only on a chip that every one of its nodes' root domains allows, a chip
//! some node may not take can be left empty (FIX then fills it if `no_skip`
//! asks), and each cut is settled (FIX, then memory relief) before it is
//! judged. When the root domains admit every plain cut (as without such
//! rules), the cuts are as before.
//!
//! Under `minimize step_time` the stages are no pipeline: the cuts are
//! proposals like any strategy's, each judged by the step time.

use super::{settle_full, Allowed, Search, Strategy};
use mcm_core::problem::Problem;
use mcm_solver::{Infeasible, Order};

pub struct Dp;

/// The best cut of `order` for each number of chips `k` (1..=C) with its
/// estimated latency, best first; cuts that fit no memory are left out.
pub fn pipeline_cuts(problem: &Problem, order: &[u32]) -> Vec<(f64, Vec<u32>)> {
    let all = Allowed::all(problem.graph.num_placed(), problem.package.num_chips());
    cuts_within(problem, order, &all)
}

/// [`pipeline_cuts`] within the chips each node's root domain allows (see
/// the module's comment); identical cuts are listed once.
pub fn cuts_within(problem: &Problem, order: &[u32], allowed: &Allowed) -> Vec<(f64, Vec<u32>)> {
    cuts_from(problem, order, allowed, 0, &[])
}

/// [`cuts_within`] of `order` over chips `first..` only, the nodes of
/// `placed` (not in `order`) on their given chips.
#[allow(clippy::needless_range_loop)] // row k of the table reads row k - 1
fn cuts_from(
    problem: &Problem,
    order: &[u32],
    allowed: &Allowed,
    first: usize,
    placed: &[(u32, u32)],
) -> Vec<(f64, Vec<u32>)> {
    let g = &problem.graph;
    let p = &problem.package;
    let (n, c) = (order.len(), p.num_chips());
    if n == 0 || c <= first {
        return Vec::new();
    }
    let compute: Vec<f64> = (0..c).map(|i| p.compute_or_unit(i as u32)).collect();
    let memory: Vec<f64> = (0..c).map(|i| p.memory_or_unlimited(i as u32)).collect();
    // The link to the next chip, else the slowest link out.
    let bandwidth: Vec<f64> = (0..c)
        .map(|i| match p.link(i as u32, i as u32 + 1) {
            Some(l) => p.bandwidth_or_unit(l),
            None => (0..p.links.len())
                .filter(|&l| p.links[l].src == i as u32)
                .map(|l| p.bandwidth_or_unit(l))
                .fold(f64::INFINITY, f64::min),
        })
        .collect();
    // Positions along `order`; nodes not in it count as before it.
    let mut pos = vec![0usize; g.num_placed()];
    for (i, &d) in order.iter().enumerate() {
        pos[d as usize] = i;
    }
    // Per position: last consumer's position and the largest tensor sent.
    let mut last = vec![0usize; n];
    let mut size = vec![0f64; n];
    let inside: Vec<bool> = {
        let mut v = vec![false; g.num_placed()];
        order.iter().for_each(|&d| v[d as usize] = true);
        v
    };
    for e in g.placed_edges() {
        if !inside[e.src as usize] || !inside[e.dst as usize] {
            continue;
        }
        let (s, t) = (pos[e.src as usize], pos[e.dst as usize]);
        last[s] = last[s].max(t);
        size[s] = size[s].max(e.bytes as f64);
    }
    let mut flops = vec![0f64; n + 1];
    let mut params = vec![0f64; n + 1];
    for (i, &d) in order.iter().enumerate() {
        let node = g.placed_node(d);
        flops[i + 1] = flops[i] + node.flops as f64;
        params[i + 1] = params[i] + node.params as f64;
    }
    // f[k][j]: best max stage time for the first j nodes on chips 0..k.
    let inf = f64::INFINITY;
    let mut f = vec![vec![inf; n + 1]; c + 1];
    let mut arg = vec![vec![0usize; n + 1]; c + 1];
    f[first][0] = 0.0;
    for k in first + 1..=c {
        let chip = k - 1;
        let may_skip = allowed.restricted(chip);
        for j in 0..=n {
            if may_skip && f[k - 1][j] < f[k][j] {
                // Chip `chip` left empty.
                f[k][j] = f[k - 1][j];
                arg[k][j] = j;
            }
            let mut sent = 0.0;
            for i in (0..j).rev() {
                if last[i] >= j {
                    sent += size[i];
                }
                if params[j] - params[i] > memory[chip] || !allowed.allows(order[i], chip) {
                    break;
                }
                if f[k - 1][i] == inf {
                    continue;
                }
                let out = if j < n { sent / bandwidth[chip] } else { 0.0 };
                let stage = (flops[j] - flops[i]) / compute[chip] + out;
                let v = f[k - 1][i].max(stage);
                if v < f[k][j] {
                    f[k][j] = v;
                    arg[k][j] = i;
                }
            }
        }
    }
    let mut cuts: Vec<(f64, Vec<u32>)> = Vec::new();
    for k in first + 1..=c {
        if f[k][n] == inf {
            continue;
        }
        let mut chips = vec![0u32; g.num_placed()];
        for &(u, chip) in placed {
            chips[u as usize] = chip;
        }
        let mut j = n;
        for kk in (first + 1..=k).rev() {
            let i = arg[kk][j];
            for &d in &order[i..j] {
                chips[d as usize] = (kk - 1) as u32;
            }
            j = i;
        }
        if !cuts.iter().any(|(_, c)| *c == chips) {
            cuts.push((f[k][n], chips));
        }
    }
    cuts.sort_by(|a, b| a.0.total_cmp(&b.0));
    cuts
}

/// The cuts dp judges: the plain ones when the root domains admit them all
/// (problems the stdlib shape suits keep their candidates), else those
/// within the root domains (the plain ones if there are none).
pub(super) fn candidates(problem: &Problem, allowed: &Allowed) -> Vec<(f64, Vec<u32>)> {
    let mut cuts = stage_cuts(problem, allowed);
    for cut in filler_cuts(problem, allowed) {
        if !cuts.iter().any(|(_, c)| *c == cut.1) {
            cuts.push(cut);
        }
    }
    cuts.sort_by(|a, b| a.0.total_cmp(&b.0));
    cuts
}

fn stage_cuts(problem: &Problem, allowed: &Allowed) -> Vec<(f64, Vec<u32>)> {
    let plain = pipeline_cuts(problem, &problem.graph.pipeline_order());
    if !plain.is_empty() && plain.iter().all(|(_, c)| allowed.admits(c)) {
        return plain;
    }
    let within = cuts_within(problem, &allowed.pipeline_order(problem), allowed);
    if within.is_empty() {
        plain
    } else {
        within
    }
}

/// Cuts for a package whose faster chip sits after slower ones: `no_skip`
/// asks every chip before it for a node, and contiguous stages put real
/// work there (ResNet-18 on seven 1 TFLOP/s dies before a 16 TFLOP/s one:
/// 502.6 us, where the optimum, 227.7 us, leaves the slow dies one small
/// weight each). So each chip before the fast one gets one node without
/// inputs or flops (the smallest outputs first, where its root domain allows
/// it), and the rest of the order is cut over the chips from the fast one on.
fn filler_cuts(problem: &Problem, allowed: &Allowed) -> Vec<(f64, Vec<u32>)> {
    let (g, p) = (&problem.graph, &problem.package);
    let c = p.num_chips();
    let compute: Vec<f64> = (0..c).map(|i| p.compute_or_unit(i as u32)).collect();
    let mut has_input = vec![false; g.num_placed()];
    let mut out = vec![0u64; g.num_placed()];
    for e in g.placed_edges() {
        has_input[e.dst as usize] = true;
        out[e.src as usize] = out[e.src as usize].max(e.bytes);
    }
    let mut fillers: Vec<u32> = (0..g.num_placed() as u32)
        .filter(|&u| !has_input[u as usize] && g.placed_node(u).flops == 0)
        .collect();
    fillers.sort_by_key(|&u| (out[u as usize], g.placed_node(u).params, u));
    let order = allowed.pipeline_order(problem);
    let mut cuts = Vec::new();
    let mut slowest = f64::INFINITY;
    for fast in 1..c {
        slowest = slowest.min(compute[fast - 1]);
        if compute[fast] <= slowest {
            continue;
        }
        let mut placed: Vec<(u32, u32)> = Vec::with_capacity(fast);
        for chip in 0..fast as u32 {
            let pick = fillers
                .iter()
                .copied()
                .find(|&u| allowed.allows(u, chip as usize) && !placed.iter().any(|&(v, _)| v == u));
            match pick {
                Some(u) => placed.push((u, chip)),
                None => break,
            }
        }
        if placed.len() < fast {
            continue;
        }
        let rest: Vec<u32> = order
            .iter()
            .copied()
            .filter(|u| !placed.iter().any(|&(v, _)| v == *u))
            .collect();
        cuts.extend(cuts_from(problem, &rest, allowed, fast, &placed));
    }
    cuts
}

impl Strategy for Dp {
    fn name(&self) -> &str {
        "dp"
    }

    /// The given start (settled) is the first candidate, then the cuts.
    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        let allowed = search.allowed();
        let cuts = candidates(search.problem, &allowed);
        let order = search.problem.graph.pipeline_order();
        search.order = Order::Topological;
        if let Some(start) = search.start()? {
            search.submit_one(start);
        }
        if cuts.is_empty() {
            // No cut fits: let the solver find a partition (or say that
            // none exists) from no proposal at all.
            let chips = search.fix(&vec![None; order.len()], None)?;
            search.submit_one(chips);
            return Ok(());
        }
        let mut cuts = cuts.into_iter();
        while !search.done() {
            let mut batch = Vec::new();
            for (_, chips) in cuts.by_ref().take(search.batch()) {
                batch.push(settle_full(search, &chips)?);
            }
            if batch.is_empty() {
                break;
            }
            search.submit(batch);
        }
        Ok(())
    }
}
