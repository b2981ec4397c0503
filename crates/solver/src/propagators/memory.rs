//! `memory_capacity`: the weights fixed on a chip fit its memory, and no
//! node whose weights no longer fit may go there.

use super::{Ctx, Propagator};
use crate::store::{Fail, Store};

pub struct Memory {
    constraint: usize,
    capacity: Vec<f64>,
    params: Vec<f64>,
    /// Nodes with weights, heaviest first.
    heavy: Vec<u32>,
    load: Vec<u32>,
    counted: Vec<u32>,
}

impl Memory {
    pub fn new(constraint: usize, s: &mut Store, ctx: &Ctx) -> Memory {
        let capacity: Vec<f64> = (0..ctx.package.num_chips() as u32)
            .map(|c| ctx.package.chip_number(c, "memory").unwrap_or(f64::INFINITY))
            .collect();
        let params: Vec<f64> = (0..s.n as u32)
            .map(|d| ctx.graph.placed_node(d).params as f64)
            .collect();
        let mut heavy: Vec<u32> = (0..s.n as u32).filter(|&d| params[d as usize] > 0.0).collect();
        heavy.sort_by(|a, b| params[*b as usize].total_cmp(&params[*a as usize]));
        let load = (0..capacity.len()).map(|_| s.new_cell(0)).collect();
        let counted = (0..s.n).map(|_| s.new_cell(0)).collect();
        Memory {
            constraint,
            capacity,
            params,
            heavy,
            load,
            counted,
        }
    }

    /// Removes chips that cannot hold a node's weights even when empty.
    pub fn initial(&self, s: &mut Store) -> Result<(), Fail> {
        for &y in &self.heavy {
            for (c, cap) in self.capacity.iter().enumerate() {
                if self.params[y as usize] > *cap {
                    s.remove(y, c as u32, self.constraint)?;
                }
            }
        }
        Ok(())
    }
}

impl Propagator for Memory {
    fn watches(&self, _n: usize) -> Vec<u32> {
        self.heavy.clone()
    }

    fn on_change(&mut self, x: u32, s: &mut Store, _ctx: &Ctx) -> Result<(), Fail> {
        let Some(d) = s.value(x) else { return Ok(()) };
        if s.cell(self.counted[x as usize]) != 0 {
            return Ok(());
        }
        s.set_cell(self.counted[x as usize], 1);
        let cell = self.load[d as usize];
        // Loads are sums of integer byte counts: exact in an i64. One past
        // it (8 EiB) is over any memory: refused, never wrapped (a wrapped
        // load let an invalid partition through).
        let Some(load) = s.cell(cell).checked_add(self.params[x as usize] as i64) else {
            return Err(Fail {
                constraint: self.constraint,
            });
        };
        s.set_cell(cell, load);
        let room = self.capacity[d as usize] - load as f64;
        if room < 0.0 {
            return Err(Fail {
                constraint: self.constraint,
            });
        }
        for &y in &self.heavy {
            if self.params[y as usize] <= room {
                break;
            }
            if !s.is_fixed(y) {
                s.remove(y, d, self.constraint)?;
            }
        }
        Ok(())
    }
}
