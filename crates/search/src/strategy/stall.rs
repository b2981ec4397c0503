//! What a learned placer does with the samples its policy no longer turns
//! into better placements. The placers of the literature train a policy
//! and judge what it proposes; once the policy settles (its entropy gone,
//! or every proposal repaired by FIX into a partition judged before) the
//! rest of the budget would be spent judging the same placements again.
//! After each of the policy's rounds, when no sample has beaten the best
//! so far for [`PATIENCE`] samples, as many samples as the round took are
//! spent on moves around the best instead: the anneal strategy's
//! neighbourhood (a slowest chip relieved down the pipeline, nodes slid
//! across a stage boundary, a chip emptied into its neighbour), each made
//! valid by the solver (FIX, then memory relief) and never a partition
//! this walk judged before. Under a pipeline objective the walk first
//! tries the split of a slowest stage that the analytical model prefers
//! ([`split`]): the one move of the walk that adds a stage, where the
//! others only shift or remove boundaries. The best moves to the first that scores at
//! least as well, and the placer's rounds then start from it (as `rl`'s
//! rollouts are drawn around its anchor), so the policy keeps proposing
//! and learning while the rest of the budget still improves the result.

use super::anneal::Neighbours;
use super::{settle_full, Search};
use crate::cost::CostModel;
use mcm_solver::Infeasible;
use rand::Rng;
use split::Splits;
use std::collections::HashSet;

/// Samples without a better one before the walk takes its turns.
pub(crate) const PATIENCE: usize = 32;

/// Moves drawn per walk sample before it gives up (each repaired move that
/// lands on the best or on a partition judged before is drawn again).
const TRIES: usize = 8;

/// Random picks a boundary slide tries before it finds a node that can slide.
const SLIDE_TRIES: usize = 64;

pub(crate) struct Stall {
    nb: Neighbours,
    /// The analytical model's stage times, for relieving a slowest chip.
    model: Option<CostModel>,
    /// The best partition so far and its score: the placer's start (judged
    /// outside the budget when it is greedy's), then the search's best.
    best: (Vec<u32>, f64),
    /// How many samples had been judged when the best last improved.
    since: usize,
    /// The partitions the walk judged.
    seen: HashSet<Vec<u32>>,
    /// Splits of a slowest stage, where the objective is the pipeline's
    /// (its stage times are what the analytical model ranks splits by).
    splits: Option<Splits>,
    /// The best partition the last split was sought for: a split depends
    /// on nothing else, so it is sought once per best.
    split_for: Option<Vec<u32>>,
}

impl Stall {
    /// From the placer's start, a valid partition, and its score (0 when
    /// the judge refused it).
    pub(crate) fn new(search: &Search, start: Vec<u32>, score: f64) -> Stall {
        let nb = Neighbours::new(search.problem);
        Stall {
            splits: (!search.proxy_target()).then(|| Splits::new(search.problem, &nb)),
            nb,
            model: CostModel::new(search.problem).ok(),
            best: (start, score),
            since: search.samples(),
            seen: HashSet::new(),
            split_for: None,
        }
    }

    /// The best partition so far and its score.
    pub(crate) fn best(&self) -> &(Vec<u32>, f64) {
        &self.best
    }

    /// Follows the search's best, which the policy's samples may have moved.
    fn observe(&mut self, search: &Search) {
        if let Some(b) = search.best() {
            if b.throughput > self.best.1 {
                self.best = (b.chips.clone(), b.throughput);
                self.since = b.sample;
            }
        }
    }

    /// Whether no sample has beaten the best for [`PATIENCE`] samples.
    pub(crate) fn stalled(&mut self, search: &Search) -> bool {
        self.observe(search);
        search.samples() >= self.since + PATIENCE
    }

    /// After a round of `k` samples of the policy: when it has stalled, up
    /// to `k` samples of moves around the best.
    pub(crate) fn after_round(&mut self, search: &mut Search, k: usize) -> Result<(), Infeasible> {
        if !self.stalled(search) {
            return Ok(());
        }
        for _ in 0..k.max(1) {
            if search.done() {
                break;
            }
            let Some(chips) = self.neighbour(search)? else {
                break;
            };
            let t = search.submit_one(chips.clone()).and_then(|v| v.throughput());
            if let Some(t) = t.filter(|t| t.is_finite() && *t >= self.best.1) {
                if t > self.best.1 {
                    self.since = search.samples();
                }
                // Ties move it too: a plateau of equal scores is walked across.
                self.best = (chips, t);
            }
        }
        Ok(())
    }

    /// A move around the best, made valid, that the walk has not judged.
    fn neighbour(&mut self, search: &mut Search) -> Result<Option<Vec<u32>>, Infeasible> {
        let chips = search.problem.package.num_chips() as u32;
        if let Some(split) = self.split(chips) {
            let settled = settle_full(search, &split)?;
            if settled != self.best.0 && self.seen.insert(settled.clone()) {
                return Ok(Some(settled));
            }
        }
        for _ in 0..TRIES {
            let mut at = self.best.0.clone();
            match search.rng.random_range(0..3) {
                0 => {
                    let merge = self.nb.merge(&at, chips, &mut search.rng);
                    apply_moves(&mut at, merge);
                }
                1 => {
                    if let Some(stages) = self.model.as_ref().and_then(|m| m.stage_times(&at).ok()) {
                        let groups = self.nb.relieve(&at, stages, &mut search.rng);
                        apply_moves(&mut at, groups);
                    }
                }
                _ => {
                    for _ in 0..search.rng.random_range(1..=3) {
                        let Some(slide) = self.nb.boundary_move(&at, chips, SLIDE_TRIES, &mut search.rng) else {
                            break;
                        };
                        apply_moves(&mut at, Some(slide));
                    }
                }
            }
            if at == self.best.0 {
                continue;
            }
            let settled = settle_full(search, &at)?;
            if settled != self.best.0 && self.seen.insert(settled.clone()) {
                return Ok(Some(settled));
            }
        }
        Ok(None)
    }
}

impl Stall {
    /// The analytical model's best split of a slowest stage of the best
    /// partition ([`Splits::best`]), the first time it is sought for it.
    fn split(&mut self, chips: u32) -> Option<Vec<u32>> {
        if self.split_for.as_ref() == Some(&self.best.0) {
            return None;
        }
        self.split_for = Some(self.best.0.clone());
        self.splits
            .as_ref()?
            .best(&self.nb, self.model.as_ref()?, &self.best.0, chips)
    }
}

/// `at` with each group of nodes moved to its chip.
fn apply_moves(at: &mut [u32], groups: impl IntoIterator<Item = (Vec<u32>, u32)>) {
    for (group, to) in groups {
        for u in group {
            at[u as usize] = to;
        }
    }
}

mod split;
#[cfg(test)]
mod tests;
