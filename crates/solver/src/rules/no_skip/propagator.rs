//! Every chip up to the highest lower bound must be filled by some node; a
//! chip only one node can fill gets that node; a chip no node can fill caps
//! every domain below it.
//!
//! Beyond that: Hall's condition on the chips still to fill ([`Hall`]).
//!
//! For each chip it keeps how many domains still contain it (trailed), from
//! the values each change removes, so a wake-up costs O(chips), not O(nodes).

use super::hall::Hall;
use crate::propagator::{Cx, Propagator};
use crate::store::Fail;
use mcm_core::problem::GroundConstraint;

pub struct NoSkip {
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
    hall: Hall,
}

impl NoSkip {
    pub fn build<'p>(cx: &mut Cx, _rule: &'p GroundConstraint) -> Result<Box<dyn Propagator + 'p>, Fail> {
        Ok(Box::new(NoSkip::new(cx)))
    }

    fn new(cx: &mut Cx) -> NoSkip {
        let w = cx.words();
        let count = (0..cx.chips() as u32)
            .map(|c| {
                let k = (0..cx.n() as u32).filter(|&x| cx.dom(x).contains(c)).count();
                cx.new_cell(k as i64)
            })
            .collect();
        let mut seen = Vec::with_capacity(cx.n() * w);
        for x in 0..cx.n() as u32 {
            for k in 0..w {
                let word = cx.dom(x).words[k];
                seen.push(cx.new_cell(word as i64));
            }
        }
        NoSkip {
            w,
            count,
            seen,
            need: cx.new_cell(0),
            settled: (0..cx.chips()).map(|_| cx.new_cell(0)).collect(),
            dirty: true,
            hall: Hall::new(cx),
        }
    }
}

impl Propagator for NoSkip {
    fn watches(&self, n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }

    fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        let seen = &self.seen[x as usize * self.w..(x as usize + 1) * self.w];
        let was_fixed = seen.iter().map(|&c| (cx.cell(c) as u64).count_ones()).sum::<u32>() == 1;
        if !was_fixed {
            self.hall.fixed(x, cx);
        }
        for k in 0..self.w {
            let cell = self.seen[x as usize * self.w + k];
            let old = cx.cell(cell) as u64;
            let new = cx.dom(x).words[k];
            let mut gone = old & !new;
            if gone == 0 {
                continue;
            }
            cx.set_cell(cell, new as i64);
            while gone != 0 {
                let c = k * 64 + gone.trailing_zeros() as usize;
                gone &= gone - 1;
                let cc = self.count[c];
                cx.set_cell(cc, cx.cell(cc) - 1);
            }
        }
        if i64::from(cx.min(x)) > cx.cell(self.need) {
            cx.set_cell(self.need, cx.min(x) as i64);
        }
        self.dirty = true;
        Ok(())
    }

    fn has_late(&self) -> bool {
        true
    }

    fn late(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        if !self.dirty || cx.n() == 0 {
            return Ok(());
        }
        self.dirty = false;
        let need = cx.cell(self.need) as usize;
        let chips = cx.chips();
        // The first chip nobody can take: nothing may go at or above it.
        if let Some(z) = (0..chips).find(|&c| cx.cell(self.count[c]) == 0) {
            if z <= need {
                return Err(cx.fail());
            }
            let cap = cx.range(0, z as u32 - 1);
            let mut shrank = false;
            for x in 0..cx.n() as u32 {
                if cx.max(x) as usize >= z {
                    shrank |= cx.restrict(x, &cap)?;
                }
            }
            // Counts are stale until the changes are seen: run again then.
            if shrank {
                return Ok(());
            }
        }
        if self.hall.propagate(need.min(chips - 1), cx)? {
            return Ok(());
        }
        // Chips that must be filled and that one node alone can fill.
        for c in 0..=need.min(chips - 1) {
            if cx.cell(self.count[c]) == 1 && cx.cell(self.settled[c]) == 0 {
                cx.set_cell(self.settled[c], 1);
                if let Some(x) = (0..cx.n() as u32).find(|&x| cx.dom(x).contains(c as u32)) {
                    cx.fix(x, c as u32)?;
                }
            }
        }
        Ok(())
    }

    fn on_backtrack(&mut self) {
        self.dirty = true;
    }

    fn complete(&mut self, cx: &Cx) -> Result<(), Fail> {
        let mut used = vec![false; cx.chips()];
        for x in 0..cx.n() as u32 {
            if let Some(c) = cx.value(x) {
                used[c as usize] = true;
            }
        }
        match used.iter().rposition(|u| *u) {
            Some(top) if used[..top].iter().any(|u| !u) => Err(cx.fail()),
            _ => Ok(()),
        }
    }

    /// Counts, last-seen domains and the highest lower bound read off the
    /// domains; no chip counts as settled (settling again fixes nothing new).
    fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        for c in 0..cx.chips() {
            let k = (0..cx.n() as u32).filter(|&x| cx.dom(x).contains(c as u32)).count();
            cx.set_cell(self.count[c], k as i64);
            cx.set_cell(self.settled[c], 0);
        }
        let mut need = 0;
        for x in 0..cx.n() as u32 {
            for k in 0..self.w {
                cx.set_cell(self.seen[x as usize * self.w + k], cx.dom(x).words[k] as i64);
            }
            need = need.max(cx.min(x));
        }
        cx.set_cell(self.need, need as i64);
        self.hall.recount(cx);
        self.dirty = true;
        self.late(cx)
    }
}
