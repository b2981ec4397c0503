//! `acyclic_flow`: chip(u) <= chip(v) along every edge, as bounds that
//! travel down (lower bounds) and up (upper bounds) the DAG transitively.

use super::{Ctx, Propagator};
use crate::store::{Fail, Store};

pub struct Precedence {
    pub constraint: usize,
}

impl Propagator for Precedence {
    fn watches(&self, n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }

    fn on_change(&mut self, x: u32, s: &mut Store, ctx: &Ctx) -> Result<(), Fail> {
        let (lo, hi) = (s.min(x), s.max(x));
        for &y in &ctx.succ[x as usize] {
            s.set_min(y, lo, self.constraint)?;
        }
        for &w in &ctx.pred[x as usize] {
            s.set_max(w, hi, self.constraint)?;
        }
        Ok(())
    }
}
