//! Propagation of a latency target: a lower bound on every chip's stage
//! from what is fixed, and chips turned away from nodes that no longer fit.
//!
//! - compute: trailed loads per chip, added to as nodes are fixed (with the
//!   replicable copies a fixed node brings to its chip), as `memory_capacity`
//!   keeps its loads: flops (an integer, so that the order nodes are fixed
//!   in does not change the sum), or seconds where measured op times make
//!   the time of a node depend on the chip's kind (a sum in another order
//!   differs by rounding only, far below `SLACK`);
//! - links: the transfers between fixed nodes on different chips, each at
//!   least the largest of its fixed off-chip edges, over every link of its
//!   routes; recomputed once the queue is empty (`late`);
//! - a node whose compute alone no longer fits a chip's room loses it, and a
//!   chip whose bound is over the target fails.
//!
//! Bounds are compared with `T · (1 + SLACK)`; `complete` judges exactly.

use super::{Target, SLACK};
use crate::propagator::{Cx, Propagator};
use crate::store::Fail;
use mcm_core::latency::LatencyModel;
use std::sync::Arc;

pub struct TargetPropagator {
    target: Target,
    /// What a bound may reach before it prunes.
    limit: f64,
    /// Per chip, the flops fixed there, copies included; with measured
    /// times, the seconds (f64 bits).
    load: Vec<u32>,
    /// The model has measured times: loads are seconds.
    profiled: bool,
    /// Per chip, the transfers forced out of it (f64 bits).
    links: Vec<u32>,
    /// Per node: a cell set once its compute is counted.
    counted: Vec<u32>,
    /// Per replica and chip (`r * C + d`): a cell set once its copy there is counted.
    copy: Vec<u32>,
    /// Per placed node, the replicas it brings to its chip.
    brings: Vec<Vec<u32>>,
    /// Per class of chips, the nodes that take time there, heaviest first:
    /// one class without measured times (flops order every chip alike);
    /// with them, one per measured kind and compute rate.
    heavy: Vec<Vec<u32>>,
    /// Per chip, its class.
    class: Vec<u32>,
}

fn get(cx: &Cx, cell: u32) -> f64 {
    f64::from_bits(cx.cell(cell) as u64)
}

fn put(cx: &mut Cx, cell: u32, v: f64) {
    cx.set_cell(cell, v.to_bits() as i64)
}

impl TargetPropagator {
    /// The propagator, with the root propagation done.
    pub fn build(cx: &mut Cx, target: Target) -> Result<TargetPropagator, Fail> {
        let m: &Arc<LatencyModel> = &target.model;
        let (n, c) = (cx.n(), cx.chips());
        let mut brings = vec![Vec::new(); n];
        for (r, (_, feeds)) in m.replicas.iter().enumerate() {
            for &u in feeds {
                brings[u as usize].push(r as u32);
            }
        }
        let (heavy, class) = heavy_classes(m, n, c);
        let mut p = TargetPropagator {
            limit: target.latency_s * (1.0 + SLACK),
            load: (0..c).map(|_| cx.new_cell(0)).collect(),
            profiled: m.is_profiled(),
            links: (0..c).map(|_| cx.new_cell(0)).collect(),
            counted: (0..n).map(|_| cx.new_cell(0)).collect(),
            copy: (0..m.replicas.len() * c).map(|_| cx.new_cell(0)).collect(),
            brings,
            heavy,
            class,
            target,
        };
        p.propagate_from_scratch(cx)?;
        Ok(p)
    }

    /// Counts fixed node `x`'s compute (and the copies it brings) on chip `d`.
    fn count(&self, x: u32, d: u32, cx: &mut Cx) {
        let m = &self.target.model;
        let mut load = self.plus(cx.cell(self.load[d as usize]), m.flops[x as usize], || m.op_time(x, d));
        for &r in &self.brings[x as usize] {
            let cell = self.copy[r as usize * cx.chips() + d as usize];
            if cx.cell(cell) == 0 {
                cx.set_cell(cell, 1);
                load = self.plus(load, m.replicas[r as usize].0, || m.replica_time(r, d));
            }
        }
        cx.set_cell(self.counted[x as usize], 1);
        cx.set_cell(self.load[d as usize], load);
    }

    /// Fails when chip `d` is over; removes `d` from each open node whose
    /// compute is more than the room left.
    fn crowd_out(&self, d: u32, cx: &mut Cx) -> Result<(), Fail> {
        let m = &self.target.model;
        let (load, links) = (cx.cell(self.load[d as usize]), get(cx, self.links[d as usize]));
        // NaN is over: never reached with finite weights, refused if it is.
        let over = |load: i64| {
            use std::cmp::Ordering::{Equal, Less};
            !matches!(
                (self.seconds(load, d) + links).partial_cmp(&self.limit),
                Some(Less | Equal)
            )
        };
        if over(load) {
            return Err(cx.fail());
        }
        for &y in &self.heavy[self.class[d as usize] as usize] {
            if !over(self.plus(load, m.flops[y as usize], || m.op_time(y, d))) {
                break;
            }
            if !cx.is_fixed(y) {
                cx.remove(y, d)?;
            }
        }
        Ok(())
    }

    /// A load with one more op: its flops, or its seconds when measured.
    fn plus(&self, load: i64, flops: f64, seconds: impl FnOnce() -> f64) -> i64 {
        if self.profiled {
            (f64::from_bits(load as u64) + seconds()).to_bits() as i64
        } else {
            load.saturating_add(flops as i64)
        }
    }

    /// The seconds of compute a load on chip `d` stands for.
    fn seconds(&self, load: i64, d: u32) -> f64 {
        if self.profiled {
            f64::from_bits(load as u64)
        } else {
            load as f64 / self.target.model.compute[d as usize]
        }
    }

    /// Per chip, the time of the links leaving it that fixed pairs force.
    fn forced_links(&self, cx: &Cx) -> Result<Vec<f64>, Fail> {
        let m = &self.target.model;
        let mut bytes = vec![0.0; m.bandwidth.len()];
        let mut transfers = vec![0u32; m.bandwidth.len()];
        let mut stamp = vec![u32::MAX; m.bandwidth.len()];
        let mut dests: Vec<u32> = Vec::new();
        for u in 0..cx.n() as u32 {
            let Some(a) = cx.value(u) else { continue };
            dests.clear();
            let mut size = 0u64;
            for &(v, b) in &m.consumers[u as usize] {
                match cx.value(v) {
                    Some(to) if to != a => {
                        size = size.max(b);
                        if !dests.contains(&to) {
                            dests.push(to);
                        }
                    }
                    _ => {}
                }
            }
            for &to in &dests {
                let Some(route) = m.route(a, to) else {
                    // No route: the model cannot cost it, so no latency meets T.
                    return Err(cx.fail());
                };
                for l in route {
                    if stamp[l] != u {
                        stamp[l] = u;
                        bytes[l] += size as f64;
                        transfers[l] += 1;
                    }
                }
            }
        }
        let mut out = vec![0.0; cx.chips()];
        for (l, (b, k)) in bytes.into_iter().zip(transfers).enumerate() {
            out[m.package.links[l].src as usize] += m.link_time(l, b, k);
        }
        Ok(out)
    }
}

/// The heavy lists and each chip's class (see [`TargetPropagator::heavy`]).
fn heavy_classes(m: &LatencyModel, n: usize, c: usize) -> (Vec<Vec<u32>>, Vec<u32>) {
    if !m.is_profiled() {
        let mut heavy: Vec<u32> = (0..n as u32).filter(|&u| m.flops[u as usize] > 0.0).collect();
        heavy.sort_by(|a, b| m.flops[*b as usize].total_cmp(&m.flops[*a as usize]));
        return (vec![heavy], vec![0; c]);
    }
    let mut keys: Vec<(Option<u32>, u64)> = Vec::new();
    let mut class = Vec::with_capacity(c);
    let mut heavy = Vec::new();
    for d in 0..c as u32 {
        let key = (m.measured.column(d), m.compute[d as usize].to_bits());
        let k = keys.iter().position(|&x| x == key).unwrap_or_else(|| {
            keys.push(key);
            let mut h: Vec<u32> = (0..n as u32).filter(|&u| m.op_time(u, d) > 0.0).collect();
            h.sort_by(|a, b| m.op_time(*b, d).total_cmp(&m.op_time(*a, d)));
            heavy.push(h);
            keys.len() - 1
        });
        class.push(k as u32);
    }
    (heavy, class)
}

impl Propagator for TargetPropagator {
    fn watches(&self, n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }

    fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        let Some(d) = cx.value(x) else { return Ok(()) };
        if cx.cell(self.counted[x as usize]) != 0 {
            return Ok(());
        }
        self.count(x, d, cx);
        self.crowd_out(d, cx)
    }

    fn has_late(&self) -> bool {
        true
    }

    /// The forced transfers anew; each chip whose links grew is crowded again.
    fn late(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        let links = self.forced_links(cx)?;
        for (d, t) in links.into_iter().enumerate() {
            if t != get(cx, self.links[d]) {
                put(cx, self.links[d], t);
                self.crowd_out(d as u32, cx)?;
            }
        }
        Ok(())
    }

    /// The exact check: the model's latency of the placement.
    fn complete(&mut self, cx: &Cx) -> Result<(), Fail> {
        let chips: Vec<u32> = (0..cx.n() as u32).map(|x| cx.min(x)).collect();
        if self.target.holds(&chips) {
            Ok(())
        } else {
            Err(cx.fail())
        }
    }

    /// Loads and copies counted again from the fixed nodes, the forced
    /// transfers anew, then every chip's room applied.
    fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        for &cell in self.load.iter().chain(&self.counted).chain(&self.copy) {
            cx.set_cell(cell, 0);
        }
        for x in 0..cx.n() as u32 {
            if let Some(d) = cx.value(x) {
                self.count(x, d, cx);
            }
        }
        let links = self.forced_links(cx)?;
        for (d, t) in links.into_iter().enumerate() {
            put(cx, self.links[d], t);
        }
        for d in 0..cx.chips() as u32 {
            self.crowd_out(d, cx)?;
        }
        Ok(())
    }
}
