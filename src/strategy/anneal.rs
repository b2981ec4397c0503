//! Simulated annealing over distributions, as the paper describes: the
//! state is a per-node distribution over chips (as logits), a move shifts a
//! few nodes' modes to a neighbouring chip (now and then to any chip),
//! SAMPLE draws a valid partition from the moved distributions, and the
//! Metropolis rule on log throughput decides whether the move is kept.
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
    /// Fraction of the nodes a move touches (at least one).
    pub moves: f64,
    /// How far above its old mode a moved node's new chip goes (logits).
    pub step: f32,
    /// Start from the greedy placement with this logit on its chips (about
    /// ln(C) + 7 puts 99.9% of the mass there); `None` starts uniform.
    pub warm: Option<f32>,
    /// Logit added to every node's sampled chip when a move is kept.
    pub pull: f32,
}

impl Default for Anneal {
    fn default() -> Anneal {
        Anneal {
            t_start: 0.05,
            t_end: 0.0005,
            moves: 0.01,
            step: 1.0,
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
        let k = ((n as f64 * self.moves).ceil() as usize).max(1);
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
        let mut energy: Option<f64> = None;
        while !search.done() {
            let temp = self.t_start * (self.t_end / self.t_start).powf(search.progress());
            let mut cands = Vec::new();
            for _ in 0..search.batch() {
                let mut logits = state.clone();
                if energy.is_some() || search.samples() > 0 {
                    for _ in 0..k {
                        let u = search.rng.random_range(0..n);
                        // Half the moves lean towards the best partition so far.
                        let row = &mut logits[u];
                        let mode = (0..c).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap_or(0);
                        let to = match search.rng.random_range(0..10) {
                            0..=3 => mode.saturating_sub(1),
                            4..=7 => (mode + 1).min(c - 1),
                            _ => search.rng.random_range(0..c),
                        };
                        row[to] = row[mode] + self.step;
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
                energy = Some(e);
            }
        }
        Ok(())
    }
}
