//! `no_skip`: the chips in use are 0..k. Every chip up to the highest lower
//! bound must be filled by some node; a chip only one node can fill gets
//! that node; a chip no node can fill caps every domain below it.

use super::{Ctx, Propagator};
use crate::solver::store::{range_mask, Fail, Store};

pub struct NoSkip {
    constraint: usize,
    once: Vec<u64>,
    twice: Vec<u64>,
}

impl NoSkip {
    pub fn new(constraint: usize, s: &Store) -> NoSkip {
        let w = s.words_per_domain();
        NoSkip {
            constraint,
            once: vec![0; w],
            twice: vec![0; w],
        }
    }
}

fn bit(words: &[u64], c: u32) -> bool {
    words[(c / 64) as usize] >> (c % 64) & 1 == 1
}

impl Propagator for NoSkip {
    fn watches(&self, _n: usize) -> Vec<u32> {
        Vec::new()
    }

    fn on_change(&mut self, _x: u32, _s: &mut Store, _ctx: &Ctx) -> Result<(), Fail> {
        Ok(())
    }

    fn has_late(&self) -> bool {
        true
    }

    fn late(&mut self, s: &mut Store, _ctx: &Ctx) -> Result<(), Fail> {
        let fail = Err(Fail {
            constraint: self.constraint,
        });
        self.once.iter_mut().for_each(|w| *w = 0);
        self.twice.iter_mut().for_each(|w| *w = 0);
        let mut need = 0u32;
        for x in 0..s.n as u32 {
            let d = s.dom(x);
            for (k, &w) in d.words.iter().enumerate() {
                self.twice[k] |= self.once[k] & w;
                self.once[k] |= w;
            }
            need = need.max(d.min);
        }
        if s.n == 0 {
            return Ok(());
        }
        // The first chip nobody can take: nothing may go at or above it.
        let chips = s.chips as u32;
        if let Some(z) = (0..chips).find(|&c| !bit(&self.once, c)) {
            if z <= need {
                return fail;
            }
            let cap = range_mask(s.words_per_domain(), 0, z - 1);
            for x in 0..s.n as u32 {
                if s.max(x) >= z {
                    s.restrict(x, &cap, self.constraint)?;
                }
            }
        }
        // Chips that must be filled and that one node alone can fill.
        for c in 0..=need.min(chips - 1) {
            if !bit(&self.twice, c) {
                if let Some(x) = (0..s.n as u32).find(|&x| s.dom(x).contains(c)) {
                    s.fix(x, c, self.constraint)?;
                }
            }
        }
        Ok(())
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
