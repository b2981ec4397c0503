//! List scheduling under memory, the engine of `critical-path`, `m-etf` and
//! `m-sct`: ops become ready when their producers are placed; at each step
//! the ready op that can start earliest (ties: the longest path below it,
//! then the lowest id) goes to the chip where it finishes earliest among
//! those with room for its weights (Baechi's memory constraint), or to the
//! chip a heuristic prefers when that one has room. Weights and constants
//! go with their first consumer ([`Estimates::attached`]).

use super::{Allowed, Estimates};

/// The schedule being built.
pub struct State<'e> {
    pub est: &'e Estimates,
    /// Chip per node, once placed.
    pub chip: Vec<Option<u32>>,
    /// When each placed node's op ends.
    pub finish: Vec<f64>,
    /// When each chip is next free.
    pub free: Vec<f64>,
    /// Bytes of weights on each chip.
    pub held: Vec<f64>,
}

impl<'e> State<'e> {
    pub fn new(est: &'e Estimates) -> State<'e> {
        State {
            est,
            chip: vec![None; est.n],
            finish: vec![0.0; est.n],
            free: vec![0.0; est.c],
            held: vec![0.0; est.c],
        }
    }

    /// Bytes of weights placing `u` adds: its own and those of the weights
    /// that come with it.
    pub fn need(&self, u: u32) -> f64 {
        let mut w = self.est.params[u as usize];
        for &(p, _) in &self.est.preds[u as usize] {
            if self.est.attached(p) && self.chip[p as usize].is_none() {
                w += self.est.params[p as usize];
            }
        }
        w
    }

    pub fn fits(&self, u: u32, d: u32) -> bool {
        self.held[d as usize] + self.need(u) <= self.est.memory[d as usize]
    }

    /// When `u` could start on `d`: its inputs there (each producer's end
    /// plus the transfer; weights that come with it are there already) and
    /// the chip free.
    pub fn start(&self, u: u32, d: u32) -> f64 {
        let mut t = self.free[d as usize];
        for &(p, bytes) in &self.est.preds[u as usize] {
            if let Some(pc) = self.chip[p as usize] {
                t = t.max(self.finish[p as usize] + self.est.transfer(bytes, pc, d));
            }
        }
        t
    }

    /// Places `u` on `d` (with the weights that come with it).
    pub fn place(&mut self, u: u32, d: u32) {
        let need = self.need(u);
        let end = self.start(u, d) + self.est.time(u, d);
        let i = u as usize;
        for k in 0..self.est.preds[i].len() {
            let p = self.est.preds[i][k].0;
            if self.est.attached(p) && self.chip[p as usize].is_none() {
                self.chip[p as usize] = Some(d);
            }
        }
        self.chip[i] = Some(d);
        self.finish[i] = end;
        self.free[d as usize] = end;
        self.held[d as usize] += need;
    }

    /// The chips `u` may take: those its root domain allows with room for
    /// it; else the allowed one with the most room left (the solver's
    /// memory relief takes it from there); else every chip.
    pub fn candidates(&self, u: u32, allowed: &Allowed) -> Vec<u32> {
        let c = self.est.c as u32;
        let mut ok: Vec<u32> = (0..c).filter(|&d| allowed.allows(u, d as usize)).collect();
        if ok.is_empty() {
            ok = (0..c).collect();
        }
        let fit: Vec<u32> = ok.iter().copied().filter(|&d| self.fits(u, d)).collect();
        if !fit.is_empty() {
            return fit;
        }
        let room = |d: u32| self.est.memory[d as usize] - self.held[d as usize];
        ok.into_iter()
            .max_by(|&a, &b| room(a).total_cmp(&room(b)).then(b.cmp(&a)))
            .into_iter()
            .collect()
    }

    /// Of `chips`, the one where `u` finishes earliest (ties: the lowest id).
    pub fn earliest_finish(&self, u: u32, chips: &[u32]) -> (u32, f64, f64) {
        chips
            .iter()
            .map(|&d| {
                let s = self.start(u, d);
                (d, s, s + self.est.time(u, d))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)))
            .unwrap_or((0, 0.0, 0.0))
    }

    /// Every node's chip; weights no op reads go where there is most room.
    pub fn chips(mut self) -> Vec<u32> {
        for u in 0..self.est.n {
            if self.chip[u].is_none() {
                let d = (0..self.est.c as u32)
                    .max_by(|&a, &b| {
                        let room = |d: u32| self.est.memory[d as usize] - self.held[d as usize];
                        room(a).total_cmp(&room(b)).then(b.cmp(&a))
                    })
                    .unwrap_or(0);
                self.held[d as usize] += self.est.params[u];
                self.chip[u] = Some(d);
            }
        }
        self.chip.into_iter().map(|c| c.unwrap_or(0)).collect()
    }
}

/// Earliest-task-first list scheduling under memory (`m-etf`), with a chip
/// `prefer` may name for an op (the critical path's chip, the favourite
/// parent's chip): taken when it has room for the op.
pub fn etf(est: &Estimates, allowed: &Allowed, prefer: impl Fn(&State, u32) -> Option<u32>) -> Vec<u32> {
    let level = est.bottom_levels(est.fastest());
    let mut state = State::new(est);
    let mut waiting: Vec<usize> = (0..est.n)
        .map(|u| est.preds[u].iter().filter(|&&(p, _)| !est.attached(p)).count())
        .collect();
    let mut ready: Vec<u32> = (0..est.n as u32)
        .filter(|&u| !est.attached(u) && waiting[u as usize] == 0)
        .collect();
    while !ready.is_empty() {
        // The ready op that can start earliest, and where.
        let mut best: Option<(usize, u32, f64)> = None;
        for (i, &u) in ready.iter().enumerate() {
            let chips = match prefer(&state, u) {
                Some(d) if state.fits(u, d) => vec![d],
                _ => state.candidates(u, allowed),
            };
            let (d, _, _) = state.earliest_finish(u, &chips);
            let s = chips.iter().map(|&d| state.start(u, d)).fold(f64::INFINITY, f64::min);
            let better = match best {
                None => true,
                Some((j, _, bs)) => {
                    let v = ready[j];
                    s < bs
                        || (s == bs
                            && (level[u as usize] > level[v as usize]
                                || (level[u as usize] == level[v as usize] && u < v)))
                }
            };
            if better {
                best = Some((i, d, s));
            }
        }
        let Some((i, d, _)) = best else { break };
        let u = ready.swap_remove(i);
        state.place(u, d);
        for &(s, _) in &est.succs[u as usize] {
            let w = &mut waiting[s as usize];
            *w -= 1;
            if *w == 0 {
                ready.push(s);
            }
        }
    }
    state.chips()
}
