//! `parmesan` (Liu's thesis, chapter 5: operator clustering, dynamic
//! programming, iterative refinement), its model-partitioning phase with the
//! stages mapped along a walk of the package:
//!
//! 1. Clustering: the pipeline order's nodes start as units; the adjacent
//!    pair with the least `c_u(a) + c_u(b) - alpha c_m(a, b)` (compute on the
//!    fastest chip, transfer over an average hop) whose weights fit a chip
//!    merges, until `K` units are left (`S << K << |V|`). Merging neighbours
//!    along a topological order keeps every unit convex, the thesis's
//!    convexity constraint, without a reachability test per pair.
//! 2. Dynamic programming over the units in order into contiguous stages, one
//!    per chip along the walk (a chip may stay empty), minimising the largest
//!    stage time: its compute on its chip plus the bytes crossing its border
//!    (the thesis's eq. 5.3, with replicas R = 1), each stage's weights
//!    within its chip's memory.
//! 3. Refinement on the nodes themselves: a node on a stage border moves to
//!    the neighbouring stage when that keeps stages in flow order and within
//!    memory and lowers the largest stage time (ties: the bytes crossing
//!    stages), best move first, at most 100 moves (the thesis's `I`). The
//!    thesis's first gain, the distance to the nearest reconverging op, is
//!    left out: the stage time is what the other two stand for here.
//!
//! The thesis picks `alpha` among 0.01, 1 and 100 with its simulator; here
//! with the same stage-time estimate, the smallest wins.
//!
//! The walk: chip 0, then always the nearest chip not yet visited (the time
//! an average tensor takes there; ties: the lowest id), so that neighbouring
//! stages sit on neighbouring chips on a ring or a mesh.

use super::{m_topo, Allowed, Estimates};

const ALPHAS: [f64; 3] = [0.01, 1.0, 100.0];
/// Refinement moves at most (the thesis's `I`).
const MOVES: usize = 100;

pub fn proposal(est: &Estimates, allowed: &Allowed) -> Vec<u32> {
    let walk = walk(est);
    let mut best: Option<(f64, Vec<u32>)> = None;
    for alpha in ALPHAS {
        let units = cluster(est, alpha, target_units(est));
        let Some(mut stage) = dp(est, &units, &walk) else {
            continue;
        };
        let cost = refine(est, allowed, &walk, &mut stage);
        if best.as_ref().is_none_or(|(b, _)| cost < *b) {
            let chips = stage.iter().map(|&k| walk[k as usize]).collect();
            best = Some((cost, chips));
        }
    }
    match best {
        Some((_, chips)) => chips,
        None => m_topo::proposal(est, allowed),
    }
}

/// `K`: a few units per chip, fewer than the nodes.
fn target_units(est: &Estimates) -> usize {
    (8 * est.c).clamp(32, 512).min(est.n)
}

/// The chips in walk order (see the module).
pub fn walk(est: &Estimates) -> Vec<u32> {
    let edges: usize = est.succs.iter().map(Vec::len).sum();
    let bytes = est.succs.iter().flatten().map(|&(_, b)| b).sum::<f64>() / edges.max(1) as f64;
    let mut seen = vec![false; est.c];
    let mut walk = Vec::with_capacity(est.c);
    let mut at = 0u32;
    for _ in 0..est.c {
        seen[at as usize] = true;
        walk.push(at);
        let next = (0..est.c as u32)
            .filter(|&d| !seen[d as usize])
            .map(|d| (est.transfer(bytes, at, d), d))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        match next {
            Some((_, d)) => at = d,
            None => break,
        }
    }
    walk
}

/// Clusters of the pipeline order: each unit's first position along it.
fn cluster(est: &Estimates, alpha: f64, k: usize) -> Vec<usize> {
    let order = &est.order;
    let mut pos = vec![0usize; est.n];
    for (i, &u) in order.iter().enumerate() {
        pos[u as usize] = i;
    }
    let fast = est.fastest();
    let capacity = est.memory.iter().copied().fold(0.0, f64::max);
    // Units as [start, end) along `order`, with their compute and weights.
    let mut start: Vec<usize> = (0..order.len()).collect();
    let mut end: Vec<usize> = (1..=order.len()).collect();
    let mut time: Vec<f64> = order.iter().map(|&u| est.time(u, fast)).collect();
    let mut params: Vec<f64> = order.iter().map(|&u| est.params[u as usize]).collect();
    // Bytes between unit i and unit i + 1.
    let between = |a: (usize, usize), b: (usize, usize)| -> f64 {
        let mut sum = 0.0;
        for &u in &order[a.0..a.1] {
            for &(v, bytes) in est.succs[u as usize].iter().chain(&est.preds[u as usize]) {
                if (b.0..b.1).contains(&pos[v as usize]) {
                    sum += bytes;
                }
            }
        }
        sum
    };
    let mut link: Vec<f64> = (0..start.len().saturating_sub(1))
        .map(|i| between((start[i], end[i]), (start[i + 1], end[i + 1])))
        .collect();
    while start.len() > k {
        let pick = (0..link.len())
            .filter(|&i| params[i] + params[i + 1] <= capacity)
            .map(|i| (time[i] + time[i + 1] - alpha * est.hop(link[i]), i))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let Some((_, i)) = pick else { break };
        end[i] = end[i + 1];
        time[i] += time[i + 1];
        params[i] += params[i + 1];
        start.remove(i + 1);
        end.remove(i + 1);
        time.remove(i + 1);
        params.remove(i + 1);
        link.remove(i);
        if i > 0 {
            link[i - 1] = between((start[i - 1], end[i - 1]), (start[i], end[i]));
        }
        if i + 1 < start.len() {
            link[i] = between((start[i], end[i]), (start[i + 1], end[i + 1]));
        }
    }
    start
}

/// Stage (index along `walk`) of every node: the best contiguous cut of the
/// units (starting at positions `units`) over the chips in walk order;
/// `None` when no cut fits the memory.
#[allow(clippy::needless_range_loop)] // row k of the table reads row k - 1
fn dp(est: &Estimates, units: &[usize], walk: &[u32]) -> Option<Vec<u32>> {
    let order = &est.order;
    let (m, c) = (units.len(), walk.len());
    if m == 0 {
        return Some(vec![0; est.n]);
    }
    let mut unit_of = vec![0usize; est.n];
    for i in 0..m {
        let end = units.get(i + 1).copied().unwrap_or(order.len());
        for &u in &order[units[i]..end] {
            unit_of[u as usize] = i;
        }
    }
    // Per unit: compute on each chip of the walk, weights, edges to others.
    let mut time = vec![0.0; m * c];
    let mut params = vec![0.0; m];
    let mut edges: Vec<Vec<(usize, f64)>> = vec![Vec::new(); m];
    for u in 0..est.n {
        let i = unit_of[u];
        for (k, &d) in walk.iter().enumerate() {
            time[i * c + k] += est.time(u as u32, d);
        }
        params[i] += est.params[u];
        for &(v, b) in est.succs[u].iter().chain(&est.preds[u]) {
            if unit_of[v as usize] != i {
                edges[i].push((unit_of[v as usize], b));
            }
        }
    }
    // Bytes crossing the border of units [i, j), every i < j.
    let mut cross = vec![0.0; m * (m + 1)];
    for i in 0..m {
        let mut sum = 0.0;
        for j in i..m {
            for &(q, b) in &edges[j] {
                if (i..j).contains(&q) {
                    sum -= b;
                } else {
                    sum += b;
                }
            }
            cross[i * (m + 1) + j + 1] = sum.max(0.0);
        }
    }
    let inf = f64::INFINITY;
    let mut f = vec![vec![inf; m + 1]; c + 1];
    let mut arg = vec![vec![usize::MAX; m + 1]; c + 1];
    f[0][0] = 0.0;
    for k in 1..=c {
        let chip = walk[k - 1] as usize;
        for j in 0..=m {
            // The chip left empty.
            f[k][j] = f[k - 1][j];
            arg[k][j] = j;
            let (mut compute, mut weights) = (0.0, 0.0);
            for i in (0..j).rev() {
                compute += time[i * c + k - 1];
                weights += params[i];
                if weights > est.memory[chip] {
                    break;
                }
                if f[k - 1][i] == inf {
                    continue;
                }
                let crossing = cross[i * (m + 1) + j];
                let stage = compute + if crossing > 0.0 { est.hop(crossing) } else { 0.0 };
                let v = f[k - 1][i].max(stage);
                if v < f[k][j] {
                    f[k][j] = v;
                    arg[k][j] = i;
                }
            }
        }
    }
    if f[c][m] == inf {
        return None;
    }
    let mut unit_stage = vec![0u32; m];
    let mut j = m;
    for k in (1..=c).rev() {
        let i = arg[k][j];
        for s in &mut unit_stage[i..j] {
            *s = (k - 1) as u32;
        }
        j = i;
    }
    Some((0..est.n).map(|u| unit_stage[unit_of[u]]).collect())
}

/// Each stage's time (compute on its chip plus its crossing bytes over an
/// average hop), and the bytes crossing stages in all.
fn stage_times(est: &Estimates, walk: &[u32], stage: &[u32]) -> (Vec<f64>, Vec<f64>, f64) {
    let c = walk.len();
    let (mut compute, mut crossing) = (vec![0.0; c], vec![0.0; c]);
    let mut total = 0.0;
    for u in 0..est.n {
        let k = stage[u] as usize;
        compute[k] += est.time(u as u32, walk[k]);
        for &(v, b) in &est.succs[u] {
            let q = stage[v as usize] as usize;
            if q != k {
                crossing[k] += b;
                crossing[q] += b;
                total += b;
            }
        }
    }
    (compute, crossing, total)
}

fn cost_of(est: &Estimates, compute: &[f64], crossing: &[f64]) -> f64 {
    compute
        .iter()
        .zip(crossing)
        .map(|(&t, &b)| t + if b > 0.0 { est.hop(b) } else { 0.0 })
        .fold(0.0, f64::max)
}

/// Iterative refinement (see the module); returns the estimated cost.
fn refine(est: &Estimates, allowed: &Allowed, walk: &[u32], stage: &mut [u32]) -> f64 {
    let c = walk.len();
    let (mut compute, mut crossing, mut total) = stage_times(est, walk, stage);
    let mut weights = vec![0.0; c];
    for u in 0..est.n {
        weights[stage[u] as usize] += est.params[u];
    }
    let mut cost = cost_of(est, &compute, &crossing);
    for _ in 0..MOVES {
        let mut best: Option<(f64, f64, u32, u32)> = None;
        for u in 0..est.n as u32 {
            let k = stage[u as usize];
            let (succs, preds) = (&est.succs[u as usize], &est.preds[u as usize]);
            let border = succs.iter().chain(preds).any(|&(v, _)| stage[v as usize] != k);
            if !border {
                continue;
            }
            let forward = (k as usize + 1 < c && succs.iter().all(|&(v, _)| stage[v as usize] > k)).then_some(k + 1);
            let back = (k > 0 && preds.iter().all(|&(v, _)| stage[v as usize] < k)).then(|| k - 1);
            for t in forward.into_iter().chain(back) {
                let (ki, ti) = (k as usize, t as usize);
                if weights[ti] + est.params[u as usize] > est.memory[walk[ti] as usize]
                    || !allowed.allows(u, walk[ti] as usize)
                {
                    continue;
                }
                let (mut cm, mut cr, mut tot) = (compute.clone(), crossing.clone(), total);
                cm[ki] -= est.time(u, walk[ki]);
                cm[ti] += est.time(u, walk[ti]);
                for &(v, b) in succs.iter().chain(preds) {
                    let q = stage[v as usize] as usize;
                    if q != ki {
                        cr[ki] -= b;
                        cr[q] -= b;
                        tot -= b;
                    }
                    if q != ti {
                        cr[ti] += b;
                        cr[q] += b;
                        tot += b;
                    }
                }
                let new = cost_of(est, &cm, &cr);
                let better = new < cost || (new == cost && tot < total);
                let best_so_far = best.is_none_or(|(bc, bt, _, _)| new < bc || (new == bc && tot < bt));
                if better && best_so_far {
                    best = Some((new, tot, u, t));
                }
            }
        }
        let Some((_, _, u, t)) = best else { break };
        let k = stage[u as usize];
        weights[k as usize] -= est.params[u as usize];
        weights[t as usize] += est.params[u as usize];
        stage[u as usize] = t;
        (compute, crossing, total) = stage_times(est, walk, stage);
        cost = cost_of(est, &compute, &crossing);
    }
    cost
}
