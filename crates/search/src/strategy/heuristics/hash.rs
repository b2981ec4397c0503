//! `hash` (Mayer et al. 2017, the baseline of their study): each node goes
//! to the chip its hashed id falls on, chips taking shares of the hash range
//! in proportion to their capacity (compute). Nothing else is looked at:
//! neither edges nor memory (the solver's FIX and memory relief make the
//! result valid). The hash is FNV-1a of the seed and the node's id, stable
//! across runs, platforms and releases, so a seed fixes the placement and
//! each node's chip does not depend on the rest of the graph.

use super::Estimates;
use mcm_core::problem::Problem;
use std::hash::Hasher;

pub fn proposal(problem: &Problem, est: &Estimates, seed: u64) -> Vec<u32> {
    let total: f64 = est.compute.iter().sum();
    // Upper ends of each chip's share of [0, 1).
    let mut ends = Vec::with_capacity(est.c);
    let mut acc = 0.0;
    for &r in &est.compute {
        acc += r / total;
        ends.push(acc);
    }
    (0..est.n as u32)
        .map(|u| {
            let x = unit(seed, &problem.graph.placed_node(u).id);
            ends.iter().position(|&e| x < e).unwrap_or(est.c - 1) as u32
        })
        .collect()
}

/// The hash of `(seed, id)` as a number in [0, 1).
fn unit(seed: u64, id: &str) -> f64 {
    let mut h = fnv::FnvHasher::default();
    h.write(&seed.to_le_bytes());
    h.write(id.as_bytes());
    // MurmurHash3's finaliser spreads FNV's last bytes over the high bits,
    // whose top 53 make the number (exactly representable).
    let mut x = h.finish();
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    (x >> 11) as f64 / (1u64 << 53) as f64
}
