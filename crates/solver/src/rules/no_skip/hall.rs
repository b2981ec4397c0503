//! A node fills one chip: the empty chips up to the highest lower bound,
//! all required, need as many distinct unfixed nodes (Hall's condition).
//! Without this a pass on a 256-chip ring fixes nearly every node before
//! it sees 23 empty chips and 2 nodes left that could fill them.
//!
//! Three steps, cheapest first:
//! - on prefixes and suffixes of the required chips, from trailed counts
//!   of the unfixed domains that start or end at each chip: where the
//!   empty chips of one are as many as the nodes that reach it, those
//!   nodes take those chips;
//! - exactly, by a matching of empty chips to nodes (Kuhn's augmenting
//!   paths), kept between calls as an untrailed cache that each call
//!   repairs where it no longer holds: after a decision, usually one scan
//!   for one chip;
//! - the nodes every such matching uses (matched to chips no alternating
//!   path from a free node reaches, Berge) must take an empty chip.
//!
//! Each step that prunes returns at once: the engine runs the late pass
//! again once the changes are propagated, so no step reads counts that
//! its own pruning made stale.

use crate::domain::set_bit;
use crate::propagator::Cx;
use crate::store::Fail;

/// No node, no chip.
const NONE: u32 = u32::MAX;

pub(super) struct Hall {
    w: usize,
    /// Fixed nodes on each chip (trailed).
    holds: Vec<u32>,
    /// Unfixed nodes whose lowest / highest chip is this one (trailed).
    lows: Vec<u32>,
    highs: Vec<u32>,
    /// Per chip its matched node, per node its chip (NONE: none).
    mate: Vec<u32>,
    owner: Vec<u32>,
    visited: Vec<bool>,
}

impl Hall {
    pub fn new(cx: &mut Cx) -> Hall {
        let c = cx.chips();
        let cells = |cx: &mut Cx| (0..c).map(|_| cx.new_cell(0)).collect::<Vec<u32>>();
        let h = Hall {
            w: cx.words(),
            holds: cells(cx),
            lows: cells(cx),
            highs: cells(cx),
            mate: vec![NONE; c],
            owner: vec![NONE; cx.n()],
            visited: Vec::new(),
        };
        h.recount(cx);
        h
    }

    /// The counts, read off the domains.
    pub fn recount(&self, cx: &mut Cx) {
        for c in 0..cx.chips() {
            for cell in [self.holds[c], self.lows[c], self.highs[c]] {
                cx.set_cell(cell, 0);
            }
        }
        for x in 0..cx.n() as u32 {
            self.count(cx.min(x), cx.max(x), cx, 1);
        }
    }

    /// A domain with bounds `lo..=hi` counted in `holds` (fixed) or `lows`
    /// and `highs`, by `by`.
    fn count(&self, lo: u32, hi: u32, cx: &mut Cx, by: i64) {
        let cells = if lo == hi {
            [Some(self.holds[lo as usize]), None]
        } else {
            [Some(self.lows[lo as usize]), Some(self.highs[hi as usize])]
        };
        for cell in cells.into_iter().flatten() {
            cx.set_cell(cell, cx.cell(cell) + by);
        }
    }

    /// `x`'s domain, whose bounds were `old`, changed.
    pub fn on_change(&self, x: u32, old: (u32, u32), cx: &mut Cx) {
        let new = (cx.min(x), cx.max(x));
        if new != old {
            self.count(old.0, old.1, cx, -1);
            self.count(new.0, new.1, cx, 1);
        }
    }

    fn empty(&self, c: usize, cx: &Cx) -> bool {
        cx.cell(self.holds[c]) == 0
    }

    /// All three steps over chips `0..=need`; `Ok(true)` when a domain
    /// shrank (the caller stops and is called again).
    pub fn propagate(&mut self, need: usize, cx: &mut Cx) -> Result<bool, Fail> {
        if let Some(t) = self.tight(cx, 0, (0..=need).map(|t| (t, self.lows[t])))? {
            if self.take(cx, 0..=t, |cx, x| cx.min(x) as usize <= t)? {
                return Ok(true);
            }
        }
        // No domain starts above `need`: each that ends above it reaches it.
        let above: i64 = self.highs[need + 1..].iter().map(|&h| cx.cell(h)).sum();
        if let Some(t) = self.tight(cx, above, (0..=need).rev().map(|t| (t, self.highs[t])))? {
            if self.take(cx, t..=need, |cx, x| cx.max(x) as usize >= t)? {
                return Ok(true);
            }
        }
        self.repair_matching(need, cx)?;
        self.essential(need, cx)
    }

    /// Walks chips in the given order counting empty chips and the unfixed
    /// nodes whose bound (`lows` or `highs` cell) is there, from `fillers`
    /// counted before: fails when the empty ones outnumber the nodes, else
    /// the last chip where they are as many.
    fn tight(&self, cx: &Cx, fillers: i64, walk: impl Iterator<Item = (usize, u32)>) -> Result<Option<usize>, Fail> {
        let (mut empty, mut fillers) = (0i64, fillers);
        let mut tight = None;
        for (t, bound) in walk {
            if self.empty(t, cx) {
                empty += 1;
            }
            fillers += cx.cell(bound);
            if empty > fillers {
                return Err(cx.fail());
            }
            if empty > 0 && empty == fillers {
                tight = Some(t);
            }
        }
        Ok(tight)
    }

    /// The unfixed nodes `within` a tight range go to its empty chips.
    fn take(
        &self,
        cx: &mut Cx,
        range: std::ops::RangeInclusive<usize>,
        within: impl Fn(&Cx, u32) -> bool,
    ) -> Result<bool, Fail> {
        let mut mask = vec![0u64; self.w];
        for c in range.filter(|&c| self.empty(c, cx)) {
            set_bit(&mut mask, c as u32);
        }
        let mut shrank = false;
        for x in 0..cx.n() as u32 {
            if !cx.is_fixed(x) && within(cx, x) {
                shrank |= cx.restrict(x, &mask)?;
            }
        }
        Ok(shrank)
    }

    /// Whether empty required chip `c` is matched to `x`.
    fn matched(&self, c: usize, x: u32, need: usize, cx: &Cx) -> bool {
        c <= need && self.empty(c, cx) && self.mate[c] == x && self.owner[x as usize] == c as u32
    }

    /// Keeps the pairs that still hold and matches every other empty chip;
    /// fails when one cannot be.
    fn repair_matching(&mut self, need: usize, cx: &Cx) -> Result<(), Fail> {
        for c in 0..=need {
            if !self.empty(c, cx) {
                continue;
            }
            let x = self.mate[c];
            if x != NONE && self.owner[x as usize] == c as u32 && !cx.is_fixed(x) && cx.dom(x).contains(c as u32) {
                continue;
            }
            self.mate[c] = NONE;
            self.visited.clear();
            self.visited.resize(need + 1, false);
            if !self.augment(c, need, cx) {
                return Err(cx.fail());
            }
        }
        Ok(())
    }

    /// Finds chip `c` a node: a free one, or one whose chip finds another.
    fn augment(&mut self, c: usize, need: usize, cx: &Cx) -> bool {
        self.visited[c] = true;
        let can = |x: u32| !cx.is_fixed(x) && cx.dom(x).contains(c as u32);
        for x in 0..cx.n() as u32 {
            let o = self.owner[x as usize];
            if can(x) && (o == NONE || !self.matched(o as usize, x, need, cx)) {
                self.pair(c, x);
                return true;
            }
        }
        for x in 0..cx.n() as u32 {
            if can(x) {
                let o = self.owner[x as usize] as usize;
                if !self.visited[o] && self.augment(o, need, cx) {
                    self.pair(c, x);
                    return true;
                }
            }
        }
        false
    }

    fn pair(&mut self, c: usize, x: u32) {
        self.mate[c] = x;
        self.owner[x as usize] = c as u32;
    }

    /// Restricts to the empty chips the nodes every matching uses. The
    /// search from free nodes stops once every empty chip is reached, which
    /// in a loose state is at the first free node.
    fn essential(&self, need: usize, cx: &mut Cx) -> Result<bool, Fail> {
        let mut empty = vec![0u64; self.w];
        for c in (0..=need).filter(|&c| self.empty(c, cx)) {
            set_bit(&mut empty, c as u32);
        }
        let mut open = empty.clone();
        let mut stack = Vec::new();
        for y in 0..cx.n() as u32 {
            if open.iter().all(|&w| w == 0) {
                return Ok(false);
            }
            let o = self.owner[y as usize];
            if cx.is_fixed(y) || (o != NONE && self.matched(o as usize, y, need, cx)) {
                continue;
            }
            stack.push(y);
            while let Some(v) = stack.pop() {
                for (k, open) in open.iter_mut().enumerate() {
                    let mut m = cx.dom(v).words[k] & *open;
                    *open &= !m;
                    while m != 0 {
                        let c = k * 64 + m.trailing_zeros() as usize;
                        m &= m - 1;
                        stack.push(self.mate[c]);
                    }
                }
            }
        }
        let mut shrank = false;
        for c in crate::domain::bits_of(&open) {
            shrank |= cx.restrict(self.mate[c as usize], &empty)?;
        }
        Ok(shrank)
    }
}
