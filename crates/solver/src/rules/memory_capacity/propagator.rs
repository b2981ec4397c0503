//! The weights fixed on a chip fit its memory, and no node whose weights
//! no longer fit may go there. Loads are trailed cells, added to as nodes
//! are fixed.

use crate::propagator::{Cx, Propagator};
use crate::store::Fail;
use mcm_core::problem::{GroundConstraint, Problem};

pub struct Memory {
    capacity: Vec<f64>,
    params: Vec<f64>,
    /// Nodes with weights, heaviest first.
    heavy: Vec<u32>,
    load: Vec<u32>,
    counted: Vec<u32>,
}

impl Memory {
    /// The propagator, with the chips that cannot hold a node's weights
    /// even when empty removed at the root.
    pub fn build<'p>(cx: &mut Cx, _rule: &'p GroundConstraint) -> Result<Box<dyn Propagator + 'p>, Fail> {
        let m = Memory::new(cx);
        if exceeds(&m.params, &m.capacity) {
            return Err(cx.fail());
        }
        m.too_heavy(cx)?;
        Ok(Box::new(m))
    }

    fn new(cx: &mut Cx) -> Memory {
        let net = cx.net();
        let capacity: Vec<f64> = (0..net.package.num_chips() as u32)
            .map(|c| net.package.memory_or_unlimited(c))
            .collect();
        let params: Vec<f64> = (0..cx.n() as u32)
            .map(|d| net.graph.placed_node(d).params as f64)
            .collect();
        let mut heavy: Vec<u32> = (0..cx.n() as u32).filter(|&d| params[d as usize] > 0.0).collect();
        heavy.sort_by(|a, b| params[*b as usize].total_cmp(&params[*a as usize]));
        let load = (0..capacity.len()).map(|_| cx.new_cell(0)).collect();
        let counted = (0..cx.n()).map(|_| cx.new_cell(0)).collect();
        Memory {
            capacity,
            params,
            heavy,
            load,
            counted,
        }
    }

    /// Removes chips that cannot hold a node's weights even when empty.
    fn too_heavy(&self, cx: &mut Cx) -> Result<(), Fail> {
        for &y in &self.heavy {
            for (c, cap) in self.capacity.iter().enumerate() {
                if self.params[y as usize] > *cap {
                    cx.remove(y, c as u32)?;
                }
            }
        }
        Ok(())
    }

    /// Adds fixed node `x`'s weights to chip `d`: the new load, or failure
    /// when it is over any memory.
    fn add(&self, x: u32, d: u32, cx: &mut Cx) -> Result<f64, Fail> {
        let cell = self.load[d as usize];
        // Loads are sums of integer byte counts: exact in an i64. One past
        // it (8 EiB) is over any memory: refused, never wrapped (a wrapped
        // load let an invalid partition through).
        let Some(load) = cx.cell(cell).checked_add(self.params[x as usize] as i64) else {
            return Err(cx.fail());
        };
        cx.set_cell(cell, load);
        let room = self.capacity[d as usize] - load as f64;
        if room < 0.0 {
            return Err(cx.fail());
        }
        Ok(room)
    }

    /// Removes chip `d` from every open node heavier than the room left there.
    fn crowd_out(&self, d: u32, room: f64, cx: &mut Cx) -> Result<(), Fail> {
        for &y in &self.heavy {
            if self.params[y as usize] <= room {
                break;
            }
            if !cx.is_fixed(y) {
                cx.remove(y, d)?;
            }
        }
        Ok(())
    }
}

/// Whether the weights outweigh every memory together: each node's weights
/// count on one chip, so no partition fits, however each chip is filled
/// (BERT-large's 1.3 GB on eight 128 MiB tiles, no one node too heavy for a
/// tile). Integer byte counts: the sums are exact.
fn exceeds(params: &[f64], capacity: &[f64]) -> bool {
    params.iter().sum::<f64>() > capacity.iter().sum::<f64>()
}

/// [`exceeds`] for a problem's placed nodes and chips: the rule alone admits
/// no partition ([`crate::rules::NativeRule::refuted`]).
pub(super) fn over_total(problem: &Problem) -> bool {
    let (g, p) = (&problem.graph, &problem.package);
    let params: Vec<f64> = (0..g.num_placed() as u32)
        .map(|u| g.placed_node(u).params as f64)
        .collect();
    let capacity: Vec<f64> = (0..p.num_chips() as u32).map(|c| p.memory_or_unlimited(c)).collect();
    exceeds(&params, &capacity)
}

impl Propagator for Memory {
    fn watches(&self, _n: usize) -> Vec<u32> {
        self.heavy.clone()
    }

    fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        let Some(d) = cx.value(x) else { return Ok(()) };
        if cx.cell(self.counted[x as usize]) != 0 {
            return Ok(());
        }
        cx.set_cell(self.counted[x as usize], 1);
        let room = self.add(x, d, cx)?;
        self.crowd_out(d, room, cx)
    }

    /// Loads summed again from the fixed nodes, then every chip's room
    /// applied to the open nodes.
    fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        self.too_heavy(cx)?;
        for &c in &self.load {
            cx.set_cell(c, 0);
        }
        for &x in &self.heavy {
            let fixed = cx.value(x);
            cx.set_cell(self.counted[x as usize], i64::from(fixed.is_some()));
            if let Some(d) = fixed {
                self.add(x, d, cx)?;
            }
        }
        for d in 0..self.capacity.len() as u32 {
            let room = self.capacity[d as usize] - cx.cell(self.load[d as usize]) as f64;
            self.crowd_out(d, room, cx)?;
        }
        Ok(())
    }
}
