//! `critical-path` (Mayer et al. 2017): the critical path, the path from a
//! source to a sink with the longest time (op times on the fastest chip plus
//! one average hop per edge), goes whole on the fastest chip; every other op
//! goes where it finishes earliest, by list scheduling ([`super::list`]).
//! Mayer et al. ignore memory; here the path stops taking the fastest chip
//! once its weights fill it, so that the proposal starts near validity.

use super::list;
use super::{Allowed, Estimates};

/// The critical path, source to sink.
pub fn critical_path(est: &Estimates, chip: u32) -> Vec<u32> {
    let mut dist = vec![0.0; est.n];
    let mut from: Vec<Option<u32>> = vec![None; est.n];
    for &u in &est.order {
        let i = u as usize;
        let mut best = 0.0;
        for &(p, bytes) in &est.preds[i] {
            let d = dist[p as usize] + est.hop(bytes);
            if from[i].is_none() || d > best {
                best = d;
                from[i] = Some(p);
            }
        }
        dist[i] = best + est.time(u, chip);
    }
    let Some(mut end) =
        (0..est.n as u32).max_by(|&a, &b| dist[a as usize].total_cmp(&dist[b as usize]).then(b.cmp(&a)))
    else {
        return Vec::new();
    };
    let mut path = vec![end];
    while let Some(p) = from[end as usize] {
        path.push(p);
        end = p;
    }
    path.reverse();
    path
}

pub fn proposal(est: &Estimates, allowed: &Allowed) -> Vec<u32> {
    let fast = est.fastest();
    let mut on_path = vec![false; est.n];
    let mut held = 0.0;
    for u in critical_path(est, fast) {
        if !allowed.allows(u, fast as usize) {
            continue;
        }
        let w = est.params[u as usize];
        if held + w > est.memory[fast as usize] {
            break;
        }
        held += w;
        on_path[u as usize] = true;
    }
    list::etf(est, allowed, |_, u| on_path[u as usize].then_some(fast))
}
