//! `no_skip`: the chips in use are 0..k. Every chip up to the highest lower
//! bound must be filled by some node; a chip only one node can fill gets
//! that node; a chip no node can fill caps every domain below it.
//!
//! For each chip it keeps how many domains still contain it (trailed), from
//! the values each change removes, so a wake-up costs O(chips), not O(nodes).

use super::{Ctx, Propagator};
use crate::store::{range_mask, Fail, Store};

pub struct NoSkip {
    constraint: usize,
    w: usize,
    /// Domains containing each chip.
    count: Vec<u32>,
    /// Each variable's domain as last seen, W cells per variable.
    seen: Vec<u32>,
    /// The highest lower bound of any domain.
    need: u32,
    /// Chips already given to the one node that could fill them.
    settled: Vec<u32>,
    dirty: bool,
}

impl NoSkip {
    pub fn new(constraint: usize, s: &mut Store) -> NoSkip {
        let w = s.words_per_domain();
        let count = (0..s.chips as u32)
            .map(|c| {
                let k = (0..s.n as u32).filter(|&x| s.dom(x).contains(c)).count();
                s.new_cell(k as i64)
            })
            .collect();
        let mut seen = Vec::with_capacity(s.n * w);
        for x in 0..s.n as u32 {
            for k in 0..w {
                let word = s.dom(x).words[k];
                seen.push(s.new_cell(word as i64));
            }
        }
        NoSkip {
            constraint,
            w,
            count,
            seen,
            need: s.new_cell(0),
            settled: (0..s.chips).map(|_| s.new_cell(0)).collect(),
            dirty: true,
        }
    }
}

impl Propagator for NoSkip {
    fn watches(&self, n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }

    fn on_change(&mut self, x: u32, s: &mut Store, _ctx: &Ctx) -> Result<(), Fail> {
        for k in 0..self.w {
            let cell = self.seen[x as usize * self.w + k];
            let old = s.cell(cell) as u64;
            let new = s.dom(x).words[k];
            let mut gone = old & !new;
            if gone == 0 {
                continue;
            }
            s.set_cell(cell, new as i64);
            while gone != 0 {
                let c = k * 64 + gone.trailing_zeros() as usize;
                gone &= gone - 1;
                let cc = self.count[c];
                s.set_cell(cc, s.cell(cc) - 1);
            }
        }
        if i64::from(s.min(x)) > s.cell(self.need) {
            s.set_cell(self.need, s.min(x) as i64);
        }
        self.dirty = true;
        Ok(())
    }

    fn has_late(&self) -> bool {
        true
    }

    fn late(&mut self, s: &mut Store, _ctx: &Ctx) -> Result<(), Fail> {
        if !self.dirty || s.n == 0 {
            return Ok(());
        }
        self.dirty = false;
        let need = s.cell(self.need) as usize;
        let chips = s.chips;
        // The first chip nobody can take: nothing may go at or above it.
        if let Some(z) = (0..chips).find(|&c| s.cell(self.count[c]) == 0) {
            if z <= need {
                return Err(Fail {
                    constraint: self.constraint,
                });
            }
            let cap = range_mask(s.words_per_domain(), 0, z as u32 - 1);
            for x in 0..s.n as u32 {
                if s.max(x) as usize >= z {
                    s.restrict(x, &cap, self.constraint)?;
                }
            }
        }
        // Chips that must be filled and that one node alone can fill.
        for c in 0..=need.min(chips - 1) {
            if s.cell(self.count[c]) == 1 && s.cell(self.settled[c]) == 0 {
                s.set_cell(self.settled[c], 1);
                if let Some(x) = (0..s.n as u32).find(|&x| s.dom(x).contains(c as u32)) {
                    s.fix(x, c as u32, self.constraint)?;
                }
            }
        }
        Ok(())
    }

    fn on_backtrack(&mut self) {
        self.dirty = true;
    }

    fn complete(&mut self, s: &Store, _ctx: &Ctx) -> Result<(), Fail> {
        let mut used = vec![false; s.chips];
        for x in 0..s.n as u32 {
            if let Some(c) = s.value(x) {
                used[c as usize] = true;
            }
        }
        match used.iter().rposition(|u| *u) {
            Some(top) if used[..top].iter().any(|u| !u) => Err(Fail {
                constraint: self.constraint,
            }),
            _ => Ok(()),
        }
    }
}
