//! SAMPLE and FIX, the paper's two ways to ask the solver for a valid
//! partition (Algorithms 1 and 2), over a node order that is random
//! (seeded) by default or topological.

use super::engine::{Infeasible, Solver};
use crate::problem::Placement;
use rand::seq::SliceRandom;
use rand::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum Order {
    Random,
    Topological,
}

/// Per node, a weight for each chip (the policy's distribution); `None`
/// means uniform.
pub type Probs<'a> = Option<&'a [Vec<f32>]>;

/// The order in which nodes are decided.
pub fn node_order(solver: &Solver, order: Order, rng: &mut impl Rng) -> Vec<u32> {
    let g = &solver.problem.graph;
    match order {
        Order::Topological => g.topological_order().iter().filter_map(|&i| g.decision_of(i)).collect(),
        Order::Random => {
            let mut v: Vec<u32> = (0..solver.num_nodes() as u32).collect();
            v.shuffle(rng);
            v
        }
    }
}

/// Draws a chip of `u`'s current domain, weighted by `probs` (uniform when
/// absent or when every allowed chip has weight zero).
pub fn draw(solver: &Solver, u: u32, probs: Probs, rng: &mut impl Rng) -> u32 {
    let dom = solver.dom(u);
    if let Some(p) = probs.and_then(|p| p.get(u as usize)) {
        let total: f64 = dom
            .iter()
            .map(|c| p.get(c as usize).copied().unwrap_or(0.0).max(0.0) as f64)
            .sum();
        if total > 0.0 {
            let mut t = rng.random::<f64>() * total;
            for c in dom.iter() {
                t -= p.get(c as usize).copied().unwrap_or(0.0).max(0.0) as f64;
                if t <= 0.0 {
                    return c;
                }
            }
            return dom.max;
        }
    }
    let k = rng.random_range(0..dom.size);
    let c = dom.iter().nth(k as usize).unwrap_or(dom.min);
    c
}

/// Decides every unfixed node of `order[from..]` by drawing from its
/// domain; resumes where backtracking leaves off.
fn sample_rest(
    solver: &mut Solver,
    order: &[u32],
    probs: Probs,
    rng: &mut impl Rng,
    mut pick: impl FnMut(&Solver, u32, &mut dyn FnMut() -> u32) -> u32,
) -> Result<(), Infeasible> {
    let base = solver.num_decisions();
    let mut at: Vec<usize> = Vec::new();
    let mut pos = 0;
    while pos < order.len() {
        let u = order[pos];
        if solver.is_fixed(u) {
            pos += 1;
            continue;
        }
        let c = {
            let s: &Solver = solver;
            let mut fallback = || draw(s, u, probs, rng);
            pick(s, u, &mut fallback)
        };
        let before = solver.num_decisions();
        at.push(pos);
        let after = solver.set_domain(u, &[c]);
        if let Some(inf) = solver.infeasible() {
            return Err(inf.clone());
        }
        if after > before {
            pos += 1;
        } else if after >= base {
            // Resume at the first node whose decision was undone.
            pos = at[after - base];
            at.truncate(after - base);
        } else {
            // Decisions from before this pass were undone: rescan.
            return sample_rest(solver, order, probs, rng, pick);
        }
    }
    Ok(())
}

/// SAMPLE: each node in order gets a chip drawn from its distribution
/// restricted to its current domain.
pub fn sample(solver: &mut Solver, order: &[u32], probs: Probs, rng: &mut impl Rng) -> Result<Placement, Infeasible> {
    solver.reset();
    sample_rest(solver, order, probs, rng, |_, _, draw| draw())?;
    finish(solver)
}

/// FIX: keep each node's proposed chip while it is still allowed, then
/// assign the rest by drawing from their domains. Returns the placement and
/// how many nodes moved away from the proposal.
pub fn fix(
    solver: &mut Solver,
    order: &[u32],
    proposal: &[Option<u32>],
    probs: Probs,
    rng: &mut impl Rng,
) -> Result<(Placement, usize), Infeasible> {
    solver.reset();
    for &u in order {
        if solver.is_fixed(u) {
            continue;
        }
        if let Some(y) = proposal.get(u as usize).copied().flatten() {
            if solver.dom(u).contains(y) {
                solver.set_domain(u, &[y]);
                if let Some(inf) = solver.infeasible() {
                    return Err(inf.clone());
                }
            }
        }
    }
    sample_rest(solver, order, probs, rng, |_, _, draw| draw())?;
    let p = finish(solver)?;
    let moved = p
        .chips
        .iter()
        .enumerate()
        .filter(|(u, c)| proposal.get(*u).copied().flatten() != Some(**c))
        .count();
    Ok((p, moved))
}

fn finish(solver: &Solver) -> Result<Placement, Infeasible> {
    solver.placement().ok_or_else(|| Infeasible {
        constraints: Vec::new(),
    })
}
