//! Propagators: each removes chips that cannot be part of a valid
//! placement given the current domains. Native ones accelerate the rules of
//! `std::placement`; the generic one serves any formula.

mod generic;
mod memory;
mod noskip;
mod precedence;
mod triangle;

pub use generic::Generic;
pub use memory::Memory;
pub use noskip::NoSkip;
pub use precedence::Precedence;
pub use triangle::Triangle;

use super::store::{Fail, Store};
use mcm_core::graph::Graph;
use mcm_core::package::Package;

/// What every propagator may read: the graph's adjacency over placed nodes.
pub struct Ctx<'a> {
    pub graph: &'a Graph,
    pub package: &'a Package,
    pub succ: Vec<Vec<u32>>,
    pub pred: Vec<Vec<u32>>,
}

impl<'a> Ctx<'a> {
    pub fn new(graph: &'a Graph, package: &'a Package) -> Ctx<'a> {
        let n = graph.num_placed();
        let mut succ = vec![Vec::new(); n];
        let mut pred = vec![Vec::new(); n];
        for e in graph.placed_edges() {
            succ[e.src as usize].push(e.dst);
            pred[e.dst as usize].push(e.src);
        }
        Ctx {
            graph,
            package,
            succ,
            pred,
        }
    }
}

pub trait Propagator {
    /// The variables whose changes wake this propagator.
    fn watches(&self, n: usize) -> Vec<u32>;
    /// `x`'s domain changed.
    fn on_change(&mut self, x: u32, s: &mut Store, ctx: &Ctx) -> Result<(), Fail>;
    /// Runs once the queue is empty, for propagators that reason over all
    /// domains at once.
    fn late(&mut self, _s: &mut Store, _ctx: &Ctx) -> Result<(), Fail> {
        Ok(())
    }
    fn has_late(&self) -> bool {
        false
    }
    /// Runs when every variable is fixed: the exact check of the rule.
    fn complete(&mut self, _s: &Store, _ctx: &Ctx) -> Result<(), Fail> {
        Ok(())
    }
    /// Decisions were undone: drop caches derived from the store.
    fn on_backtrack(&mut self) {}
}
