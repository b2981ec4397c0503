//! The compiler heuristic of the brief and the baseline of every
//! improvement figure: walk the nodes in the graph's topological order and
//! fill a chip up to an even share of the total compute, then move on.

use super::{Search, Strategy};
use mcm_core::problem::Problem;
use mcm_solver::{Infeasible, Order};

pub struct Greedy;

/// The greedy placement, before the solver makes it valid. Shares are in
/// proportion to each chip's compute rate; like any compiler heuristic it
/// also moves on when the next node's weights would not fit the chip's
/// memory, keeping room for two of the graph's largest activations (the
/// dynamic check counts live tensors too).
pub fn greedy_proposal(problem: &Problem) -> Vec<u32> {
    let g = &problem.graph;
    let p = &problem.package;
    let c = p.num_chips().max(1);
    let rate = |i: usize| p.compute_or_unit(i as u32);
    let total_rate: f64 = (0..c).map(rate).sum();
    let total: f64 = g.placed_nodes().iter().map(|&n| g.nodes[n].flops as f64).sum();
    let largest = g
        .nodes
        .iter()
        .filter(|n| !(n.flops == 0 && n.params > 0))
        .map(|n| n.output_bytes as f64)
        .fold(0.0, f64::max);
    let memory = |i: usize| {
        let m = p.memory_or_unlimited(i as u32);
        (m - 2.0 * largest).max(m / 2.0)
    };
    let mut chips = vec![0u32; g.num_placed()];
    let (mut chip, mut filled, mut held) = (0usize, 0.0, 0.0);
    for d in g.pipeline_order() {
        let n = g.placed_nodes()[d as usize];
        let w = g.nodes[n].params as f64;
        if chip + 1 < c && held > 0.0 && held + w > memory(chip) {
            (chip, filled, held) = (chip + 1, 0.0, 0.0);
        }
        chips[d as usize] = chip as u32;
        filled += g.nodes[n].flops as f64;
        held += w;
        if chip + 1 < c && filled >= total * rate(chip) / total_rate {
            (chip, filled, held) = (chip + 1, 0.0, 0.0);
        }
    }
    chips
}

impl Strategy for Greedy {
    fn name(&self) -> &str {
        "greedy"
    }

    /// One sample: the heuristic's placement, made valid by FIX in
    /// topological order (so the result does not depend on the seed unless
    /// the solver must move nodes).
    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        let proposal: Vec<Option<u32>> = greedy_proposal(search.problem).into_iter().map(Some).collect();
        search.order = Order::Topological;
        let chips = search.fix(&proposal, None)?;
        search.submit_one(chips);
        Ok(())
    }
}
