//! `metis`: multilevel k-way partitioning with METIS (through the `metis`
//! crate, which builds METIS's own C source): the placed graph made
//! undirected, vertex weights its op times (on the fastest chip) and, as a
//! second constraint, its weights' bytes; edge weights the bytes sent. Each
//! chip's target share of the time is in proportion to its speed (how fast
//! it runs the whole graph), of the bytes in proportion to its memory. On a
//! package of equal chips the parts are interchangeable, so they are laid
//! out to keep heavy traffic short: the part of the first op on chip 0, then
//! the part with most traffic to those laid out on the free chip nearest to
//! them (bytes times hops). METIS's seed is the run's. A graph of fewer
//! than eight nodes a chip is cut for the fastest chips only, eight nodes a
//! part (METIS meets empty parts below that).
//!
//! When METIS refuses the input (it should not) the proposal falls back on
//! `m-topo`'s, so that the strategy still proposes something.

use super::{m_topo, Allowed, Estimates};
use ::metis::{Graph, Idx, Real};
use mcm_core::problem::Problem;

/// Integer scale of the vertex weights (each constraint's total).
const VERTEX_SCALE: f64 = 1e6;
/// Integer scale of the heaviest edge.
const EDGE_SCALE: f64 = 1e4;

pub fn proposal(problem: &Problem, est: &Estimates, allowed: &Allowed, seed: u64) -> Vec<u32> {
    match parts(est, seed) {
        Some(part) => lay_out(problem, est, &part),
        None => m_topo::proposal(est, allowed),
    }
}

/// METIS's chip of every node: parts are cut to the shares of the chips
/// [`used`] picks.
fn parts(est: &Estimates, seed: u64) -> Option<Vec<u32>> {
    let n = est.n;
    let chips = used(est);
    let c = chips.len();
    if c == 1 {
        return Some(vec![chips[0]; n]);
    }
    let fast = est.fastest();
    // Undirected adjacency with the bytes both ways added up.
    let mut adj: Vec<Vec<(u32, f64)>> = vec![Vec::new(); n];
    for u in 0..n {
        for &(v, b) in &est.succs[u] {
            adj[u].push((v, b));
            adj[v as usize].push((u as u32, b));
        }
    }
    let heaviest = adj.iter().flatten().map(|&(_, b)| b).fold(0.0, f64::max);
    let mut xadj: Vec<Idx> = vec![0];
    let (mut adjncy, mut adjwgt): (Vec<Idx>, Vec<Idx>) = (Vec::new(), Vec::new());
    for list in &mut adj {
        list.sort_by_key(|&(v, _)| v);
        list.dedup_by(|a, b| {
            let same = a.0 == b.0;
            if same {
                b.1 += a.1;
            }
            same
        });
        for &(v, b) in list.iter() {
            adjncy.push(v as Idx);
            let w = if heaviest > 0.0 {
                (b / heaviest * EDGE_SCALE).round()
            } else {
                1.0
            };
            adjwgt.push((w as Idx).max(1));
        }
        xadj.push(adjncy.len() as Idx);
    }
    let time: Vec<f64> = (0..n as u32).map(|u| est.time(u, fast)).collect();
    let total_time: f64 = time.iter().sum();
    let total_params: f64 = est.params.iter().sum();
    let ncon: usize = if total_params > 0.0 { 2 } else { 1 };
    let mut vwgt: Vec<Idx> = Vec::with_capacity(n * ncon);
    for (t, w) in time.iter().zip(&est.params) {
        let t = if total_time > 0.0 {
            t / total_time * VERTEX_SCALE
        } else {
            1.0
        };
        vwgt.push(t.round() as Idx);
        if ncon == 2 {
            vwgt.push((w / total_params * VERTEX_SCALE).round() as Idx);
        }
    }
    // Target shares: time by speed, bytes by memory (by speed without one).
    let speed: Vec<f64> = chips.iter().map(|&d| speed(est, d)).collect();
    let all_shares = m_topo::shares(est, 1.0);
    let memory_share: Vec<f64> = chips.iter().map(|&d| all_shares[d as usize]).collect();
    let speed_sum: f64 = speed.iter().sum();
    let memory_sum: f64 = memory_share.iter().sum();
    let mut tpwgts: Vec<Real> = Vec::with_capacity(c * ncon);
    for d in 0..c {
        tpwgts.push((speed[d] / speed_sum) as Real);
        if ncon == 2 {
            let m = if memory_sum > 0.0 {
                memory_share[d] / memory_sum
            } else {
                1.0 / c as f64
            };
            tpwgts.push(m as Real);
        }
    }
    let mut part: Vec<Idx> = vec![0; n];
    let graph = Graph::new(ncon as Idx, c as Idx, &xadj, &adjncy)
        .ok()?
        .set_vwgt(&vwgt)
        .set_adjwgt(&adjwgt)
        .set_tpwgts(&tpwgts)
        .set_option(::metis::option::Seed((seed & 0x7fff_ffff) as Idx));
    graph.part_kway(&mut part).ok()?;
    part.into_iter()
        .map(|p| usize::try_from(p).ok().and_then(|p| chips.get(p).copied()))
        .collect()
}

/// Nodes a part should have at least: METIS's initial bisections meet empty
/// subgraphs (and say so on standard output) when parts outnumber a small
/// graph's nodes, so a small graph is cut into fewer parts.
const NODES_PER_PART: usize = 8;

/// How fast chip `d` runs the whole graph (one over the time).
fn speed(est: &Estimates, d: u32) -> f64 {
    1.0 / (0..est.n as u32)
        .map(|u| est.time(u, d))
        .sum::<f64>()
        .max(f64::MIN_POSITIVE)
}

/// The chips to cut for: every chip, or on a small graph the fastest few
/// (ties: the lowest ids), in id order.
fn used(est: &Estimates) -> Vec<u32> {
    let k = (est.n / NODES_PER_PART).clamp(1, est.c);
    let mut chips: Vec<u32> = (0..est.c as u32).collect();
    chips.sort_by(|&a, &b| speed(est, b).total_cmp(&speed(est, a)).then(a.cmp(&b)));
    chips.truncate(k);
    chips.sort_unstable();
    chips
}

/// Chips for METIS's parts: as they are where chips differ (each part was
/// cut to its chip's share), else laid out by traffic (see the module).
fn lay_out(problem: &Problem, est: &Estimates, part: &[u32]) -> Vec<u32> {
    let p = &problem.package;
    let c = est.c;
    let equal = est.compute.iter().all(|&x| x == est.compute[0]) && est.memory.iter().all(|&m| m == est.memory[0]);
    if !equal || c < 3 {
        return part.to_vec();
    }
    // Parts not cut (a small graph's) are left out of the layout.
    let mut cut = vec![false; c];
    part.iter().for_each(|&q| cut[q as usize] = true);
    let mut traffic = vec![0.0; c * c];
    for u in 0..est.n {
        for &(v, b) in &est.succs[u] {
            let (a, z) = (part[u] as usize, part[v as usize] as usize);
            if a != z {
                traffic[a * c + z] += b;
                traffic[z * c + a] += b;
            }
        }
    }
    let mut chip_of: Vec<Option<u32>> = vec![None; c];
    let mut taken = vec![false; c];
    let first = est.order.first().map_or(0, |&u| part[u as usize] as usize);
    chip_of[first] = Some(0);
    taken[0] = true;
    for _ in 1..c {
        let to_laid = |q: usize| -> f64 {
            (0..c)
                .filter(|&r| chip_of[r].is_some())
                .map(|r| traffic[q * c + r])
                .sum()
        };
        let Some(q) = (0..c)
            .filter(|&q| cut[q] && chip_of[q].is_none())
            .max_by(|&a, &b| to_laid(a).total_cmp(&to_laid(b)).then(b.cmp(&a)))
        else {
            break;
        };
        let cost = |d: usize| -> f64 {
            (0..c)
                .filter_map(|r| chip_of[r].map(|x| (r, x)))
                .map(|(r, x)| traffic[q * c + r] * p.hops(d as u32, x).unwrap_or(c as u32) as f64)
                .sum()
        };
        let d = (0..c)
            .filter(|&d| !taken[d])
            .min_by(|&a, &b| cost(a).total_cmp(&cost(b)).then(a.cmp(&b)))
            .unwrap_or(0);
        chip_of[q] = Some(d as u32);
        taken[d] = true;
    }
    part.iter().map(|&q| chip_of[q as usize].unwrap_or(q)).collect()
}
