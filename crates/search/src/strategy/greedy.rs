//! The compiler heuristic of the brief and the baseline of every
//! improvement figure: walk the nodes in the graph's topological order and
//! fill a chip up to an even share of the total compute, then move on.

use super::{settle_full, Allowed, Search, Strategy};
use mcm_core::problem::Problem;
use mcm_solver::{Infeasible, Order};

pub struct Greedy;

/// The greedy placement, before the solver makes it valid. Shares are in
/// proportion to each chip's compute rate; like any compiler heuristic it
/// also moves on when the next node's weights would not fit the chip's
/// memory, keeping room for two of the graph's largest activations (the
/// dynamic check counts live tensors too).
pub fn greedy_proposal(problem: &Problem) -> Vec<u32> {
    let all = Allowed::all(problem.graph.num_placed(), problem.package.num_chips());
    greedy_within(problem, &all)
}

/// [`greedy_proposal`] within the chips each node's root domain allows: a
/// node that may not go on the chip being filled opens the next chip it may
/// take, and the flops left are shared anew over the chips from there on
/// (else the last chip would take what the skipped ones did not). With every
/// chip allowed this is [`greedy_proposal`].
pub fn greedy_within(problem: &Problem, allowed: &Allowed) -> Vec<u32> {
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
    // A chip is filled to `left * its rate / rates`, the flops left shared
    // over the chips left (all of them until a chip is skipped).
    let (mut left, mut rates) = (total, total_rate);
    let mut done = 0.0;
    for d in allowed.pipeline_order(problem) {
        let n = g.placed_nodes()[d as usize];
        let w = g.nodes[n].params as f64;
        if chip + 1 < c && held > 0.0 && held + w > memory(chip) {
            (chip, filled, held) = (chip + 1, 0.0, 0.0);
        }
        if !allowed.allows(d, chip) {
            if let Some(next) = allowed.next_from(d, chip + 1) {
                (chip, filled, held) = (next, 0.0, 0.0);
                (left, rates) = (total - done, (chip..c).map(rate).sum());
            }
        }
        chips[d as usize] = chip as u32;
        filled += g.nodes[n].flops as f64;
        done += g.nodes[n].flops as f64;
        held += w;
        if chip + 1 < c && filled >= left * rate(chip) / rates {
            (chip, filled, held) = (chip + 1, 0.0, 0.0);
        }
    }
    chips
}

/// Greedy's starting proposal: [`greedy_proposal`] when the root domains
/// admit it (so problems the heuristic suits keep their baseline), else
/// [`greedy_within`].
pub fn greedy_start(problem: &Problem, allowed: &Allowed) -> Vec<u32> {
    let plain = greedy_proposal(problem);
    if allowed.admits(&plain) {
        plain
    } else {
        greedy_within(problem, allowed)
    }
}

impl Strategy for Greedy {
    fn name(&self) -> &str {
        "greedy"
    }

    /// One sample: the heuristic's placement within the root domains (or
    /// the given start), made valid by FIX in topological order and relieved
    /// where it runs out of memory (so the result does not depend on the
    /// seed unless the solver must move nodes).
    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        search.order = Order::Topological;
        let chips = match search.start()? {
            Some(start) => start,
            None => {
                let allowed = search.allowed();
                settle_full(search, &greedy_start(search.problem, &allowed))?
            }
        };
        search.submit_one(chips);
        Ok(())
    }
}
