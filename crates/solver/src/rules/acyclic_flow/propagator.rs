//! Bounds that travel down the DAG (lower bounds) and up it (upper
//! bounds), transitively through the queue.

use crate::propagator::{Cx, Propagator};
use crate::store::Fail;
use mcm_core::problem::GroundConstraint;

pub struct Precedence;

impl Precedence {
    pub fn build<'p>(_cx: &mut Cx, _rule: &'p GroundConstraint) -> Result<Box<dyn Propagator + 'p>, Fail> {
        Ok(Box::new(Precedence))
    }
}

impl Propagator for Precedence {
    fn watches(&self, n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }

    fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        let (lo, hi) = (cx.min(x), cx.max(x));
        let net = cx.net();
        for &y in &net.succ[x as usize] {
            cx.set_min(y, lo)?;
        }
        for &w in &net.pred[x as usize] {
            cx.set_max(w, hi)?;
        }
        Ok(())
    }

    /// Every edge's bounds once (the state is the domains alone).
    fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        for x in 0..cx.n() as u32 {
            self.on_change(x, cx)?;
        }
        Ok(())
    }
}
