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
//! the solver then repairs by moving many nodes, far from the state. Half
//! the moves relieve a slowest chip instead: it passes nodes to the next
//! chip until it is under a target, which passes on its excess in turn, a
//! chain that ends where there is room (an unused chip, a light stage).
//!
//! Pipelines of repeated layers put several chips at the same slowest stage,
//! where unloading one leaves the throughput as it was; the energy adds a
//! small term for how many stages are near the slowest (from the analytical
//! model's per-chip stage times), so such moves count as progress.
//!
//! By default the state starts sharpened on the greedy placement (or the
//! given start, `--init`), so the search refines the baseline; from uniform distributions (the paper's
//! cold start) it spends most of a small budget on partitions far below
//! greedy (see the book's strategies chapter).

use super::{Search, Strategy};
use crate::cost::CostModel;
use mcm_solver::Infeasible;
use rand::Rng;
use std::collections::HashSet;

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
    /// Weight of the plateau term in the energy (0 turns it off): when
    /// several chips share the slowest stage, a move that unloads one of
    /// them leaves the throughput as it was, so the energy also counts how
    /// close the other stages are to the slowest (by the analytical model).
    pub balance: f64,
    /// Share of moves that relieve a slowest chip (see `Neighbours::relieve`).
    pub relief: f64,
    /// Share of moves that shift a boundary between two used chips by many
    /// nodes at once (see `Neighbours::shift`). Under step time where a
    /// chain is cut matters more than how evenly: the faster cuts can lie
    /// far from the current ones, past placements that are no better, which
    /// slides of one node at a time do not cross.
    pub shift: f64,
    /// Draws per sample before one is judged anyway that repeats a
    /// partition this walk judged or fails the analytical model's memory
    /// check, which the judge would refuse (0: every draw is judged). Near
    /// a sharp state most moves are undone by SAMPLE's repair or overflow
    /// a full chip; judging those spends samples that tell nothing new. A
    /// move whose moved mode was drawn before is drawn again without
    /// running SAMPLE.
    pub fresh: usize,
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
            balance: 0.05,
            relief: 0.5,
            shift: 0.0,
            fresh: 0,
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
        let given = search.start()?;
        let Some(w) = self.warm.or(given.as_ref().and(Anneal::default().warm)) else {
            return self.walk(search, None);
        };
        // Sharpen on the given start, else greedy's partition (within the
        // root domains), as the solver made it valid and the dynamic check
        // passes: sampling around a valid partition meets few dead ends.
        let start = match given {
            Some(start) => start,
            None => {
                let allowed = search.allowed();
                super::settle_full(search, &super::greedy_start(search.problem, &allowed))?
            }
        };
        // Its score, judged outside the budget as the `rl` strategies judge
        // their greedy anchor, is the one to beat: else the first draw is
        // kept whatever it scores, and a draw whose one unlikely chip
        // cascades through the flow rules (on ViT-L/16, 17 times slower
        // than greedy) became the state the whole run refined. A given
        // start is the first sample (a run from it keeps it or does
        // better); greedy's is judged outside the budget.
        let judged = if search.has_start() {
            search.submit_one(start.clone())
        } else {
            Some(search.reference(&start))
        };
        let score = judged.and_then(|v| v.throughput());
        self.walk(search, Some(Warm { start, sharp: w, score }))
    }
}

/// Where a warm run starts: a valid partition, the logit its chips get
/// (plus ln of the chip count), and its judged score, if any.
pub(super) struct Warm {
    pub start: Vec<u32>,
    pub sharp: f32,
    pub score: Option<f64>,
}

impl Anneal {
    /// Refines `start`, a valid partition already judged at `score`, for the
    /// rest of the search's budget (`auto` under an objective its SAT target
    /// cannot encode).
    pub(super) fn refine(&self, search: &mut Search, start: Vec<u32>, score: f64) -> Result<(), Infeasible> {
        let sharp = self.warm.or(Anneal::default().warm).unwrap_or(7.0);
        self.walk(
            search,
            Some(Warm {
                start,
                sharp,
                score: Some(score),
            }),
        )
    }

    /// The annealing itself, from uniform distributions (`None`) or
    /// sharpened on a warm start.
    fn walk(&self, search: &mut Search, warm: Option<Warm>) -> Result<(), Infeasible> {
        let n = search.problem.graph.num_placed();
        let c = search.problem.package.num_chips();
        let mut state = vec![vec![0.0f32; c]; n];
        // The valid partition the state is centred on (the last one kept):
        // a draw whose SAMPLE passes dead-end is merged into it, instead of
        // the SAT oracle's kept witness, which is one partition whatever
        // was drawn (on Inception v3 and Swin-T every sample had been
        // greedy's partition).
        let mut current: Option<Vec<u32>> = None;
        let nb = Neighbours::new(search.problem);
        let shape = CostModel::new(search.problem).ok().filter(|_| self.balance > 0.0);
        let plateau = |chips: &[u32]| shape.as_ref().map_or(0.0, |m| self.balance * plateau(m, chips));
        let mut energy: Option<f64> = None;
        if let Some(Warm { start, sharp, score }) = warm {
            let sharp = sharp + (c as f32).ln();
            for (u, &g) in start.iter().enumerate() {
                state[u][g as usize] = sharp;
            }
            energy = score
                .filter(|t| *t > 0.0 && t.is_finite())
                .map(|t| -t.ln() + plateau(&start));
            current = Some(start);
        }
        let mut mode: Vec<u32> = state.iter().map(|r| argmax(r) as u32).collect();
        let mut screen = (self.fresh > 0).then(|| Screen::new(search, current.as_deref()));
        while !search.done() {
            let temp = self.t_start * (self.t_end / self.t_start).powf(search.progress());
            let mut cands = Vec::new();
            for _ in 0..search.batch() {
                let mut draws = 0;
                let (logits, chips) = loop {
                    let moving = energy.is_some() || search.samples() > 0;
                    let (logits, moved) = self.propose(search, &state, &mode, &nb, shape.as_ref(), moving);
                    draws += 1;
                    // From a sharp state SAMPLE mostly returns the moved mode
                    // itself: a move to a partition this walk has drawn
                    // before is drawn again before SAMPLE runs, which is
                    // most of the solver's work per draw.
                    let drawn = screen.as_ref().is_some_and(|s| s.drawn(&moved));
                    if drawn && draws <= self.fresh {
                        continue;
                    }
                    let chips = search.sample_or(Some(&softmax(&logits)), current.as_deref())?;
                    let admitted = screen.as_mut().is_none_or(|s| s.admits(&chips));
                    if admitted || draws > self.fresh {
                        break (logits, chips);
                    }
                };
                cands.push((logits, chips));
            }
            let verdicts = search.submit(cands.iter().map(|(_, ch)| ch.clone()).collect());
            let last = cands.last().map(|(l, _)| l.clone());
            let best = cands
                .into_iter()
                .zip(verdicts)
                .filter_map(|((l, ch), v)| {
                    let e = -v?.throughput()?.ln() + plateau(&ch);
                    Some((l, ch, e))
                })
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
                current = Some(chips);
            }
        }
        Ok(())
    }

    /// One move around the state: up to `moves` slides or reliefs of the
    /// mode (`moving`; none before anything is judged on a cold start)
    /// raised in the logits. Returns the moved logits, which SAMPLE then
    /// draws from, and the moved mode.
    fn propose(
        &self,
        search: &mut Search,
        state: &[Vec<f32>],
        mode: &[u32],
        nb: &Neighbours,
        shape: Option<&CostModel>,
        moving: bool,
    ) -> (Vec<Vec<f32>>, Vec<u32>) {
        let c = search.problem.package.num_chips();
        let mut logits = state.to_vec();
        let mut moved = mode.to_vec();
        if moving {
            for _ in 0..search.rng.random_range(1..=self.moves.max(1)) {
                let stages = shape.and_then(|m| m.stage_times(&moved).ok());
                let groups = if self.shift > 0.0 && search.rng.random_bool(self.shift) {
                    nb.shift(&moved, c as u32, &mut search.rng).into_iter().collect()
                } else if let Some(stages) = stages.filter(|_| search.rng.random_bool(self.relief)) {
                    nb.relieve(&moved, stages, &mut search.rng)
                } else {
                    nb.boundary_move(&moved, c as u32, self.tries, &mut search.rng)
                        .into_iter()
                        .collect()
                };
                if groups.is_empty() {
                    break;
                }
                for (group, to) in groups {
                    for u in group {
                        let row = &mut logits[u as usize];
                        row[to as usize] = row[argmax(row)] + self.step;
                        moved[u as usize] = to;
                    }
                }
            }
        }
        (logits, moved)
    }
}

/// The draws [`Anneal::fresh`] turns away: partitions this walk judged,
/// and those the analytical model's dynamic memory check refuses (the
/// judge's first check, so they would be invalid samples).
struct Screen {
    seen: HashSet<Vec<u32>>,
    relief: std::sync::Arc<super::start::Relief>,
}

impl Screen {
    fn new(search: &mut Search, start: Option<&[u32]>) -> Screen {
        Screen {
            seen: start.into_iter().map(<[u32]>::to_vec).collect(),
            relief: search.relief(),
        }
    }

    /// Whether this walk has drawn `chips` (judged or turned away) or
    /// started from it.
    fn drawn(&self, chips: &[u32]) -> bool {
        self.seen.contains(chips)
    }

    /// Whether `chips` is worth a sample; it counts as seen from now on.
    fn admits(&mut self, chips: &[u32]) -> bool {
        self.seen.insert(chips.to_vec()) && self.relief.model.as_ref().is_none_or(|m| m.peak_memory(chips).is_ok())
    }
}

/// The power of the stage-time norm that [`plateau`] (and the stall walk's
/// split, ranking its cuts) weighs the stages near the slowest by.
pub(super) const PLATEAU_POWER: i32 = 16;

/// How crowded the top of the stage times is, in [0, ln(chips) / P]:
/// ln(L_P norm / max) grows with the number of chips near the slowest.
pub(super) fn plateau(model: &CostModel, chips: &[u32]) -> f64 {
    const P: i32 = PLATEAU_POWER;
    let Ok(stages) = model.stage_times(chips) else {
        return 0.0;
    };
    let max = stages.iter().copied().fold(0.0, f64::max);
    if max <= 0.0 {
        return 0.0;
    }
    let norm: f64 = stages.iter().map(|s| (s / max).powi(P)).sum();
    norm.ln() / P as f64
}

fn argmax(row: &[f32]) -> usize {
    (0..row.len()).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap_or(0)
}

/// Placed-node adjacency, and for each node the weights only it consumes
/// (sources with one consumer), which move with it.
pub(super) struct Neighbours {
    pub(super) succ: Vec<Vec<u32>>,
    pub(super) pred: Vec<Vec<u32>>,
    tied: Vec<Vec<u32>>,
    /// Each node's position along the graph's pipeline order.
    rank: Vec<u32>,
    pub(super) flops: Vec<f64>,
    /// Each chip's compute rate (1 where the package gives none).
    rate: Vec<f64>,
}

impl Neighbours {
    pub(super) fn new(problem: &mcm_core::problem::Problem) -> Neighbours {
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
        let rank = problem.graph.pipeline_rank();
        let flops = (0..n as u32)
            .map(|u| problem.graph.placed_node(u).flops as f64)
            .collect();
        let p = &problem.package;
        let rate = (0..p.num_chips() as u32)
            .map(|c| p.chip_compute(c).filter(|&r| r > 0.0).unwrap_or(1.0))
            .collect();
        Neighbours {
            succ,
            pred,
            tied,
            rank,
            flops,
            rate,
        }
    }

    /// Whether `u` may join chip `to`, one above or below its own, without
    /// reversing an edge of `at` (its tied weights go along).
    fn can_slide(&self, u: usize, to: u32, at: &[u32]) -> bool {
        if to > at[u] {
            self.succ[u].iter().all(|&s| at[s as usize] >= to)
        } else {
            let tied = &self.tied[u];
            self.pred[u].iter().all(|&p| tied.contains(&p) || at[p as usize] <= to)
        }
    }

    /// Whether `u` is a weight only one node reads (no inputs, one
    /// reader), which moves with that reader.
    pub(super) fn is_tied(&self, u: usize) -> bool {
        self.pred[u].is_empty() && self.succ[u].len() == 1
    }

    /// Unloads a slowest chip along the pipeline: it passes its last nodes
    /// (in pipeline order) to the next chip until its stage is below a target
    /// a little under the slowest, the next chip passes on what it now has too
    /// much, and so on until a chip has room (or the first nodes downwards).
    /// A single slide only overloads the neighbour; this carries the load to
    /// wherever there is room, such as an unused chip at the pipeline's end.
    /// `stages`: each chip's stage time under `at`; compute moves with nodes.
    pub(super) fn relieve(&self, at: &[u32], stages: Vec<f64>, rng: &mut impl Rng) -> Vec<(Vec<u32>, u32)> {
        let chips = stages.len() as u32;
        let max = stages.iter().copied().fold(0.0, f64::max);
        let slowest: Vec<u32> = (0..chips).filter(|&c| stages[c as usize] >= 0.999 * max).collect();
        let Some(&start) = slowest.get(rng.random_range(0..slowest.len().max(1))) else {
            return Vec::new();
        };
        let target = max * (1.0 - rng.random_range(0.0..0.1));
        let up = rng.random_bool(0.5);
        self.carry(at, stages, start, up, target)
    }

    /// The chain of [`Neighbours::relieve`] from chip `start` in one
    /// direction (`up`: to higher chips): each chip above `target` passes
    /// its last nodes on to the next until it is under it. The slides, in
    /// order, as (node with its tied weights, chip).
    pub(super) fn carry(
        &self,
        at: &[u32],
        mut stages: Vec<f64>,
        start: u32,
        up: bool,
        target: f64,
    ) -> Vec<(Vec<u32>, u32)> {
        let chips = stages.len() as u32;
        let mut at = at.to_vec();
        let mut out = Vec::new();
        let mut from = start;
        while from < chips && stages[from as usize] > target {
            let to = if up { from + 1 } else { from.wrapping_sub(1) };
            if to >= chips {
                break;
            }
            let pick = (0..at.len())
                .filter(|&u| at[u] == from && !self.is_tied(u) && self.can_slide(u, to, &at))
                .max_by_key(|&u| if up { self.rank[u] } else { u32::MAX - self.rank[u] });
            let Some(u) = pick else { break };
            let mut group = vec![u as u32];
            group.extend(&self.tied[u]);
            for &v in &group {
                at[v as usize] = to;
                stages[from as usize] -= self.flops[v as usize] / self.rate[from as usize];
                stages[to as usize] += self.flops[v as usize] / self.rate[to as usize];
            }
            out.push((group, to));
            if stages[from as usize] <= target {
                from = to;
            }
        }
        out
    }

    /// A node (with its tied weights) and the neighbouring chip it can slide
    /// to without reversing any edge of `at`; `None` after `tries` misses.
    pub(super) fn boundary_move(
        &self,
        at: &[u32],
        chips: u32,
        tries: usize,
        rng: &mut impl Rng,
    ) -> Option<(Vec<u32>, u32)> {
        let n = at.len();
        for _ in 0..tries {
            let u = rng.random_range(0..n);
            if self.is_tied(u) {
                continue; // a tied weight moves with its consumer
            }
            let m = at[u];
            let to = if rng.random_bool(0.5) { m + 1 } else { m.wrapping_sub(1) };
            if to < chips && self.can_slide(u, to, at) {
                let mut group = vec![u as u32];
                group.extend(&self.tied[u]);
                return Some((group, to));
            }
        }
        None
    }

    /// Moves the last nodes (in pipeline order) of a used chip drawn at
    /// random to the next used chip above it, or its first nodes to the
    /// next used one below: a boundary between two stages shifted by a
    /// number of nodes drawn log-uniformly up to the whole chip (with their
    /// tied weights). `None` with fewer than two chips in use.
    pub(super) fn shift(&self, at: &[u32], chips: u32, rng: &mut impl Rng) -> Option<(Vec<u32>, u32)> {
        let (from, to) = beside_used(at, chips, rng)?;
        let up = to > from;
        let mut nodes: Vec<u32> = (0..at.len() as u32)
            .filter(|&u| at[u as usize] == from && !self.is_tied(u as usize))
            .collect();
        if nodes.is_empty() {
            return None; // only weights, which move with their consumers
        }
        // The nodes nearest the boundary first.
        nodes.sort_by_key(|&u| {
            if up {
                u32::MAX - self.rank[u as usize]
            } else {
                self.rank[u as usize]
            }
        });
        let k = ((nodes.len() as f64).ln() * rng.random::<f64>()).exp() as usize;
        let mut group = Vec::new();
        for &u in nodes.iter().take(k.max(1)) {
            group.push(u);
            group.extend(&self.tied[u as usize]);
        }
        Some((group, to))
    }

    /// Empties a used chip (drawn at random) into the used chip next to it
    /// in chip order, above or below: every transfer between the two goes.
    /// On a chain spread over a pipeline of chips, moving a few nodes only
    /// shifts a boundary and each boundary still sends its tensor; under
    /// step time the faster placements have fewer boundaries, which only a
    /// whole chip's worth of moves reaches. `None` with fewer than two
    /// chips in use.
    pub(super) fn merge(&self, at: &[u32], chips: u32, rng: &mut impl Rng) -> Option<(Vec<u32>, u32)> {
        let (from, to) = beside_used(at, chips, rng)?;
        let group = (0..at.len() as u32).filter(|&u| at[u as usize] == from).collect();
        Some((group, to))
    }
}

/// A used chip of `at` drawn at random and the used chip next to it in
/// chip order, above or below (at the ends, the only one); `None` with
/// fewer than two chips in use.
fn beside_used(at: &[u32], chips: u32, rng: &mut impl Rng) -> Option<(u32, u32)> {
    let used = used_chips(at, chips);
    if used.len() < 2 {
        return None;
    }
    let i = rng.random_range(0..used.len());
    let up = match i {
        0 => true,
        i if i + 1 == used.len() => false,
        _ => rng.random_bool(0.5),
    };
    Some((used[i], if up { used[i + 1] } else { used[i - 1] }))
}

/// The chips `at` places a node on, in chip order.
fn used_chips(at: &[u32], chips: u32) -> Vec<u32> {
    let mut used = vec![false; chips as usize];
    for &c in at {
        if let Some(u) = used.get_mut(c as usize) {
            *u = true;
        }
    }
    (0..chips).filter(|&c| used[c as usize]).collect()
}
