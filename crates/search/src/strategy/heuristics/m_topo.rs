//! `m-topo` (Baechi's memory-constrained topological placement): walk the
//! ops in topological order and fill each chip up to its share of the
//! graph's memory, then move on to the next. Baechi gives every device an
//! equal share of the total; here a chip's share is in proportion to its
//! memory (to its compute where the package gives no memory), and never past
//! the memory itself. A node's memory is its weights plus its output (what
//! Baechi counts as an op's permanent and temporary memory); the next chip
//! opens early when the node's weights would not fit. Weights and constants
//! go with their first consumer ([`Estimates::attached`]), as in the list
//! schedulers.

use super::{Allowed, Estimates};

/// Each chip's share of `total` bytes.
pub fn shares(est: &Estimates, total: f64) -> Vec<f64> {
    let limited = est.memory.iter().all(|m| m.is_finite());
    let basis: &[f64] = if limited { &est.memory } else { &est.compute };
    let sum: f64 = basis.iter().sum();
    basis
        .iter()
        .zip(&est.memory)
        .map(|(&b, &m)| (total * b / sum).min(m))
        .collect()
}

pub fn proposal(est: &Estimates, allowed: &Allowed) -> Vec<u32> {
    proposal_with(est, allowed, &node_bytes(est))
}

/// Bytes a node holds: its weights and its output (the most it sends).
fn node_bytes(est: &Estimates) -> Vec<f64> {
    (0..est.n)
        .map(|u| est.params[u] + est.succs[u].iter().map(|&(_, b)| b).fold(0.0, f64::max))
        .collect()
}

fn proposal_with(est: &Estimates, allowed: &Allowed, bytes: &[f64]) -> Vec<u32> {
    let share = shares(est, bytes.iter().sum());
    let c = est.c;
    let mut chips = vec![0u32; est.n];
    let (mut d, mut filled, mut weights) = (0usize, 0.0, 0.0);
    // Weights and constants wait for the op they come right before (the
    // order has each before its first consumer) and go with it, as in the
    // list schedulers: a chip of weights alone would pull every reader of
    // them across the package.
    let mut waiting: Vec<u32> = Vec::new();
    for &u in &est.order {
        if est.attached(u) {
            waiting.push(u);
            continue;
        }
        let group = waiting.iter().copied().chain([u]);
        let (b, w): (f64, f64) = group
            .clone()
            .map(|v| (bytes[v as usize], est.params[v as usize]))
            .fold((0.0, 0.0), |a, x| (a.0 + x.0, a.1 + x.1));
        let over_share = filled + b > share[d];
        let over_memory = weights + w > est.memory[d];
        if d + 1 < c && filled > 0.0 && (over_share || over_memory) {
            (d, filled, weights) = (d + 1, 0.0, 0.0);
        }
        // A chip the op may not take: the next one it may.
        if !allowed.allows(u, d) {
            if let Some(next) = allowed.next_from(u, d + 1) {
                (d, filled, weights) = (next, 0.0, 0.0);
            }
        }
        for v in group {
            chips[v as usize] = d as u32;
        }
        waiting.clear();
        filled += b;
        weights += w;
    }
    // Weights no op reads stay where the walk ended.
    for v in waiting {
        chips[v as usize] = d as u32;
    }
    chips
}
