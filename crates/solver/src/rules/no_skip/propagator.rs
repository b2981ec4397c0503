//! Every chip up to the highest lower bound must be filled by some node; a
//! chip only one node can fill gets that node; a chip no node can fill caps
//! every domain below it.
//!
//! Beyond that: Hall's condition on the chips still to fill ([`Hall`]).
//!
//! The rule asks only whether a chip is in no domain or in one: each chip
//! keeps two nodes whose domains hold it (watchers, as a SAT solver watches
//! two literals of a clause), so a node losing a chip costs a compare unless
//! it watched it. Watchers need no trail: a backtrack only grows domains, so
//! a watcher still holds its chip; only the chips short of two watchers are
//! looked at again after one. A trailed count per chip cost a trail entry
//! for every chip every node lost.

use super::hall::Hall;
use crate::domain::{bits, set_bit};
use crate::propagator::{Cx, Propagator};
use crate::store::Fail;
use mcm_core::problem::GroundConstraint;

/// No node.
const NONE: u32 = u32::MAX;

pub struct NoSkip {
    w: usize,
    /// Two distinct nodes whose domains hold each chip (or NONE: fewer
    /// nodes do; `one` is NONE only when `two` is).
    one: Vec<u32>,
    two: Vec<u32>,
    /// Where the next look for a watcher of each chip starts: the nodes a
    /// look passed over do not hold the chip until a backtrack, so a pass
    /// passes over each node about once per chip.
    next: Vec<u32>,
    /// Chips short of two watchers, as a bitset (a superset after a
    /// backtrack, until `rewatch`).
    short: Vec<u64>,
    /// Set by a backtrack: short chips may have gained nodes.
    stale: bool,
    /// Per node, the chips it watches (W words, without the trail, like
    /// the watchers): a change reads only the chips the node lost that it
    /// watches, where a node losing most of a wide domain at once (a lower
    /// bound on a 256-chip ring) looked up each lost chip's watchers.
    watching: Vec<u64>,
    /// The highest lower bound of any domain.
    need: u32,
    /// Every domain lies below this chip (trailed): the cap of a chip
    /// nobody can take is applied once, not at every call.
    capped: u32,
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
        let chips = cx.chips();
        let mut short = vec![0; w];
        (0..chips as u32).for_each(|c| set_bit(&mut short, c));
        NoSkip {
            w,
            one: vec![NONE; chips],
            two: vec![NONE; chips],
            next: vec![0; chips],
            short,
            stale: true,
            watching: vec![0; cx.n() * w],
            need: cx.new_cell(0),
            capped: cx.new_cell(chips as i64),
            settled: (0..chips).map(|_| cx.new_cell(0)).collect(),
            dirty: true,
            hall: Hall::new(cx),
        }
    }

    /// A node other than `other` whose domain holds `c`, looked for from
    /// `from` on (round the nodes).
    fn watcher(c: u32, other: u32, from: u32, cx: &Cx) -> u32 {
        let n = cx.n() as u32;
        (from..n)
            .chain(0..from.min(n))
            .find(|&y| y != other && cx.holds(y, c))
            .unwrap_or(NONE)
    }

    /// Sets watcher `slot` (0: `one`, 1: `two`) of chip `c` to `y`, and
    /// the chips the old and new watchers watch.
    fn set_watcher(&mut self, c: u32, slot: usize, y: u32) {
        let k = c as usize;
        let at = if slot == 0 { &mut self.one[k] } else { &mut self.two[k] };
        let old = std::mem::replace(at, y);
        let (word, bit) = ((c / 64) as usize, 1u64 << (c % 64));
        if old != NONE {
            self.watching[old as usize * self.w + word] &= !bit;
        }
        if y != NONE {
            self.watching[y as usize * self.w + word] |= bit;
        }
    }

    /// `x` no longer holds `c`: another node watches it in `x`'s place.
    fn unwatch(&mut self, x: u32, c: u32, cx: &Cx) {
        let k = c as usize;
        let other = if self.one[k] == x {
            self.two[k]
        } else if self.two[k] == x {
            self.one[k]
        } else {
            return;
        };
        let found = match other {
            NONE => NONE,
            _ => Self::watcher(c, other, self.next[k], cx),
        };
        if found != NONE {
            self.next[k] = found + 1;
        }
        // x leaves; `other` stays, first; `found` joins after it.
        let (w0, w1) = if other == NONE { (found, NONE) } else { (other, found) };
        let (word, bit) = ((c / 64) as usize, 1u64 << (c % 64));
        self.watching[x as usize * self.w + word] &= !bit;
        if found != NONE {
            self.watching[found as usize * self.w + word] |= bit;
        }
        (self.one[k], self.two[k]) = (w0, w1);
        if found == NONE {
            set_bit(&mut self.short, c);
        }
    }

    /// Another watcher for each chip `x` watched and lost. Out of line:
    /// most changes lose no watched chip, and the check that asks is
    /// what the change costs then.
    #[inline(never)]
    fn unwatch_lost(&mut self, x: u32, cx: &Cx) {
        for k in 0..self.w {
            let mut gone = self.watching[x as usize * self.w + k] & !cx.word(x, k);
            while gone != 0 {
                let c = k as u32 * 64 + gone.trailing_zeros();
                gone &= gone - 1;
                self.unwatch(x, c, cx);
            }
        }
    }

    /// `x` is fixed on `c`: it watches `c` in place of a node that is not,
    /// since it holds `c` until a backtrack (a pass then seldom looks for a
    /// watcher of a chip that two nodes are fixed on).
    fn settle_watch(&mut self, x: u32, c: u32, cx: &Cx) {
        let k = c as usize;
        let (one, two) = (self.one[k], self.two[k]);
        if one == x || two == x || one == NONE || two == NONE {
            return;
        }
        if !cx.is_fixed(one) {
            self.set_watcher(c, 0, x);
        } else if !cx.is_fixed(two) {
            self.set_watcher(c, 1, x);
        }
    }

    /// Panics unless `watching` holds exactly the chips each node is a
    /// watcher of (the tests run it after every change).
    #[cfg(test)]
    fn audit_watching(&self) {
        let mut want = vec![0u64; self.watching.len()];
        for (c, (&a, &b)) in self.one.iter().zip(&self.two).enumerate() {
            for y in [a, b].into_iter().filter(|&y| y != NONE) {
                want[y as usize * self.w + c / 64] |= 1 << (c % 64);
            }
        }
        assert_eq!(want, self.watching, "the chips each node watches");
    }

    /// Watchers for the short chips, after a backtrack (or at the start).
    fn rewatch(&mut self, cx: &Cx) {
        if !self.stale {
            return;
        }
        self.stale = false;
        for i in 0..self.w {
            let mut word = self.short[i];
            while word != 0 {
                let c = i as u32 * 64 + word.trailing_zeros();
                word &= word - 1;
                let k = c as usize;
                if self.one[k] == NONE {
                    self.set_watcher(c, 0, Self::watcher(c, NONE, 0, cx));
                }
                if self.one[k] != NONE && self.two[k] == NONE {
                    self.set_watcher(c, 1, Self::watcher(c, self.one[k], self.one[k] + 1, cx));
                }
                if self.two[k] != NONE {
                    self.next[k] = self.two[k] + 1;
                    self.short[i] &= !(1 << (c % 64));
                }
            }
        }
    }
}

impl Propagator for NoSkip {
    fn watches(&self, n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }

    fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        if cx.is_fixed(x) {
            self.hall.fixed(x, cx);
        }
        if self.stale {
            self.rewatch(cx);
        }
        // Only a watcher has anything to do for a chip it lost, and a node
        // watches only chips its domain held when it began to.
        let at = x as usize * self.w;
        let watched = &self.watching[at..at + self.w];
        if watched.iter().zip(cx.words_of(x)).any(|(&m, &d)| m & !d != 0) {
            self.unwatch_lost(x, cx);
        }
        if let Some(c) = cx.value(x) {
            self.settle_watch(x, c, cx);
        }
        if i64::from(cx.min(x)) > cx.cell(self.need) {
            cx.set_cell(self.need, cx.min(x) as i64);
        }
        #[cfg(test)]
        self.audit_watching();
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
        self.rewatch(cx);
        let need = cx.cell(self.need) as usize;
        let chips = cx.chips();
        // The first chip nobody can take: nothing may go at or above it.
        if let Some(z) = bits(&self.short).find(|&c| self.one[c as usize] == NONE) {
            let z = z as usize;
            if z <= need {
                return Err(cx.fail());
            }
            if (z as i64) < cx.cell(self.capped) {
                let cap = cx.range(0, z as u32 - 1);
                let mut shrank = false;
                for x in 0..cx.n() as u32 {
                    if cx.max(x) as usize >= z {
                        shrank |= cx.restrict(x, &cap)?;
                    }
                }
                cx.set_cell(self.capped, z as i64);
                // Watchers are stale until the changes are seen: run again then.
                if shrank {
                    return Ok(());
                }
            }
        }
        if self.hall.propagate(need.min(chips - 1), cx)? {
            return Ok(());
        }
        // Chips that must be filled and that one node alone can fill.
        let top = need.min(chips - 1) as u32;
        for c in bits(&self.short).take_while(|&c| c <= top) {
            let (k, x) = (c as usize, self.one[c as usize]);
            if self.two[k] == NONE && x != NONE && cx.cell(self.settled[k]) == 0 {
                cx.set_cell(self.settled[k], 1);
                // A node fixed elsewhere in this loop no longer holds it:
                // its change, once seen, leaves the chip to nobody.
                if cx.dom(x).contains(c) {
                    cx.fix(x, c)?;
                }
            }
        }
        Ok(())
    }

    fn on_backtrack(&mut self) {
        self.dirty = true;
        self.stale = true;
        self.hall.on_backtrack();
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

    /// Watchers, the fixed nodes counted and the highest lower bound read off the
    /// domains; no chip counts as settled (settling again fixes nothing new).
    fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        for c in 0..cx.chips() {
            cx.set_cell(self.settled[c], 0);
        }
        self.one.fill(NONE);
        self.two.fill(NONE);
        self.watching.fill(0);
        self.next.fill(0);
        (0..cx.chips() as u32).for_each(|c| set_bit(&mut self.short, c));
        self.stale = true;
        self.rewatch(cx);
        let mut need = 0;
        for x in 0..cx.n() as u32 {
            need = need.max(cx.min(x));
        }
        cx.set_cell(self.need, need as i64);
        cx.set_cell(self.capped, cx.chips() as i64);
        self.hall.on_backtrack();
        self.hall.recount(cx);
        self.dirty = true;
        self.late(cx)
    }
}
