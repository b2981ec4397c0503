//! How fast a pass climbs the chips under a per-chip user rule (an op
//! count, a compute budget): the nodes with inputs (the chain of
//! operations) are spread evenly over the chips left, each staying on the
//! lowest chip its domain allows until that chip holds its share, then
//! taking the next one.
//!
//! Drawn from their domains (or nearest to a uniformly random proposal), the
//! chain climbs to the highest chip the run bounds allow within its first
//! few nodes: each draw lands halfway up what is left. From there every
//! chip above must be filled to the cap, and where an equality ties each
//! layer norm to its residual add and its weights (groups of four that do
//! not split across chips) almost no pass finds that fill. Spread evenly,
//! each chip keeps room for the weights that follow their consumers, and
//! the rule binds nowhere.

use crate::engine::Solver;

/// The pace of one pass over an order.
pub(crate) struct Pace {
    /// Per position in the order: the nodes with inputs from there on.
    left: Vec<u32>,
    /// Per chip: the nodes with inputs the pass has placed there.
    on: Vec<u32>,
}

impl Pace {
    pub fn new(solver: &Solver, order: &[u32]) -> Pace {
        let mut left = vec![0u32; order.len() + 1];
        for i in (0..order.len()).rev() {
            left[i] = left[i + 1] + u32::from(has_inputs(solver, order[i]));
        }
        let mut pace = Pace {
            left,
            on: vec![0; solver.num_chips()],
        };
        pace.recount(solver);
        pace
    }

    /// The chip for `u`, at `pos` in the order, when it has inputs: the
    /// lowest of its domain while that chip holds fewer than its share of
    /// the nodes with inputs left (those left over the chips from there to
    /// the last), else the next of its domain.
    pub fn chip(&self, solver: &Solver, u: u32, pos: usize) -> Option<u32> {
        if !has_inputs(solver, u) {
            return None;
        }
        let dom = solver.dom(u);
        let chips = (solver.num_chips() as u32).saturating_sub(dom.min);
        let share = self.left[pos].div_ceil(chips.max(1));
        if self.on[dom.min as usize] < share {
            return Some(dom.min);
        }
        let next = dom.iter().nth(1).unwrap_or(dom.min);
        Some(next)
    }

    /// The odds that a node with inputs strays from its pace (is drawn from
    /// its whole domain) in uniform SAMPLE's first pass: about one a pass,
    /// so that every valid partition stays reachable.
    pub fn stray_odds(&self) -> f64 {
        1.0 / self.left[0].max(1) as f64
    }

    /// `u` was decided and its decision stands.
    pub fn placed(&mut self, solver: &Solver, u: u32) {
        if has_inputs(solver, u) && solver.is_fixed(u) {
            self.on[solver.dom(u).min as usize] += 1;
        }
    }

    /// The placed nodes counted again (after backtracking undid some).
    pub fn recount(&mut self, solver: &Solver) {
        self.on.fill(0);
        for v in 0..solver.num_nodes() as u32 {
            if solver.is_fixed(v) && has_inputs(solver, v) {
                self.on[solver.dom(v).min as usize] += 1;
            }
        }
    }
}

fn has_inputs(solver: &Solver, u: u32) -> bool {
    !solver.net.pred[u as usize].is_empty()
}
