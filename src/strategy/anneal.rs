//! Simulated annealing over distributions, as the paper describes: the
//! state is a per-node distribution over chips (as logits), a move shifts a
//! few nodes' modes to a neighbouring chip, SAMPLE draws a valid partition
//! from the moved distributions, and the Metropolis rule on log throughput
//! decides whether the move is kept.
//!
//! A move slides a node across the boundary of its chip's stage: up one chip
//! when all its consumers are already there or beyond, down one when all its
//! inputs are (weights used by it alone travel with it). Any other move on a
//! pipelined placement closes a cycle or a shortcut in the chip flow, which
//! the solver then repairs by moving many nodes, far from the state.
//!
//! By default the state starts sharpened on the greedy placement, so the
//! search refines the baseline; from uniform distributions (the paper's
//! cold start) it spends most of a small budget on partitions far below
//! greedy (see the book's strategies chapter).

use super::{Search, Strategy};
use crate::solver::Infeasible;
use rand::Rng;

#[derive(Clone, Debug)]
pub struct Anneal {
    /// Starting and final temperature, on log throughput: at temperature T
    /// a move that loses a fraction x of throughput is kept with
    /// probability about exp(-x / T).
    pub t_start: f64,
    pub t_end: f64,
    /// Most boundary slides in one move (each move draws 1..=moves).
    pub moves: usize,
    /// How far above its old mode a moved node's new chip goes (logits).
    pub step: f32,
    /// Random picks tried per move before giving up on finding a boundary node.
    pub tries: usize,
    /// Start from the greedy placement with this logit on its chips (about
    /// ln(C) + 7 puts 99.9% of the mass there); `None` starts uniform.
    pub warm: Option<f32>,
    /// Logit added to every node's sampled chip when a move is kept.
    pub pull: f32,
}

impl Default for Anneal {
    fn default() -> Anneal {
        Anneal {
            t_start: 0.01,
            t_end: 0.0002,
            moves: 3,
            step: 3.0,
            tries: 64,
            warm: Some(7.0),
            pull: 0.3,
        }
    }
}

fn softmax(logits: &[Vec<f32>]) -> Vec<Vec<f32>> {
    logits
        .iter()
        .map(|row| {
            let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f32> = row.iter().map(|x| (x - m).exp()).collect();
            let s: f32 = e.iter().sum();
            e.into_iter().map(|x| x / s).collect()
        })
        .collect()
}

impl Strategy for Anneal {
    fn name(&self) -> &str {
        "anneal"
    }

    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        let n = search.problem.graph.num_placed();
        let c = search.problem.package.num_chips();
        let mut state = vec![vec![0.0f32; c]; n];
        if let Some(w) = self.warm {
            // Sharpen on greedy's partition as the solver made it valid:
            // sampling around a valid partition meets few dead ends.
            let proposal: Vec<Option<u32>> = super::greedy_proposal(search.problem).into_iter().map(Some).collect();
            let start = search.fix(&proposal, None)?;
            let sharp = w + (c as f32).ln();
            for (u, &g) in start.iter().enumerate() {
                state[u][g as usize] = sharp;
            }
        }
        let nb = Neighbours::new(search.problem);
        let mut mode: Vec<u32> = state.iter().map(|r| argmax(r) as u32).collect();
        let mut energy: Option<f64> = None;
        while !search.done() {
            let temp = self.t_start * (self.t_end / self.t_start).powf(search.progress());
            let mut cands = Vec::new();
            for _ in 0..search.batch() {
                let mut logits = state.clone();
                if energy.is_some() || search.samples() > 0 {
                    let mut moved = mode.clone();
                    for _ in 0..search.rng.random_range(1..=self.moves.max(1)) {
                        let Some((group, to)) = nb.boundary_move(&moved, c as u32, self.tries, &mut search.rng) else {
                            break;
                        };
                        for u in group {
                            let row = &mut logits[u as usize];
                            row[to as usize] = row[argmax(row)] + self.step;
                            moved[u as usize] = to;
                        }
                    }
                }
                let chips = search.sample(Some(&softmax(&logits)))?;
                cands.push((logits, chips));
            }
            let verdicts = search.submit(cands.iter().map(|(_, ch)| ch.clone()).collect());
            let last = cands.last().map(|(l, _)| l.clone());
            let best = cands
                .into_iter()
                .zip(verdicts)
                .filter_map(|((l, ch), v)| Some((l, ch, -v?.throughput()?.ln())))
                .min_by(|a, b| a.2.total_cmp(&b.2));
            let Some((logits, chips, e)) = best else {
                if energy.is_none() {
                    // Nothing valid yet: wander instead of resampling the
                    // same distributions.
                    if let Some(l) = last {
                        state = l;
                    }
                }
                continue;
            };
            let keep = match energy {
                None => true,
                Some(cur) => e <= cur || search.rng.random::<f64>() < (-(e - cur) / temp).exp(),
            };
            if keep {
                state = logits;
                for (u, &ch) in chips.iter().enumerate() {
                    state[u][ch as usize] += self.pull;
                }
                mode = state.iter().map(|r| argmax(r) as u32).collect();
                energy = Some(e);
            }
        }
        Ok(())
    }
}

fn argmax(row: &[f32]) -> usize {
    (0..row.len()).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap_or(0)
}

/// Placed-node adjacency, and for each node the weights only it consumes
/// (sources with one consumer), which move with it.
struct Neighbours {
    succ: Vec<Vec<u32>>,
    pred: Vec<Vec<u32>>,
    tied: Vec<Vec<u32>>,
}

impl Neighbours {
    fn new(problem: &crate::problem::Problem) -> Neighbours {
        let n = problem.graph.num_placed();
        let (mut succ, mut pred) = (vec![Vec::new(); n], vec![Vec::new(); n]);
        for e in problem.graph.placed_edges() {
            succ[e.src as usize].push(e.dst);
            pred[e.dst as usize].push(e.src);
        }
        let tied = (0..n)
            .map(|u| {
                pred[u]
                    .iter()
                    .copied()
                    .filter(|&p| pred[p as usize].is_empty() && succ[p as usize].len() == 1)
                    .collect()
            })
            .collect();
        Neighbours { succ, pred, tied }
    }

    /// A node (with its tied weights) and the neighbouring chip it can slide
    /// to without reversing any edge of `at`; `None` after `tries` misses.
    fn boundary_move(&self, at: &[u32], chips: u32, tries: usize, rng: &mut impl Rng) -> Option<(Vec<u32>, u32)> {
        let n = at.len();
        for _ in 0..tries {
            let u = rng.random_range(0..n);
            if self.pred[u].is_empty() && self.succ[u].len() == 1 {
                continue; // a tied weight moves with its consumer
            }
            let m = at[u];
            let up = rng.random_bool(0.5);
            let to = if up { m + 1 } else { m.wrapping_sub(1) };
            if to >= chips {
                continue;
            }
            let tied = &self.tied[u];
            let ok = if up {
                self.succ[u].iter().all(|&s| at[s as usize] >= to)
            } else {
                self.pred[u].iter().all(|&p| tied.contains(&p) || at[p as usize] <= to)
            };
            if ok {
                let mut group = vec![u as u32];
                group.extend(tied);
                return Some((group, to));
            }
        }
        None
    }
}
