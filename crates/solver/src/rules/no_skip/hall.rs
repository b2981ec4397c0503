//! A node fills one chip: the empty chips up to the highest lower bound,
//! all required, need as many distinct unfixed nodes (Hall's condition).
//! Without this a pass on a 256-chip ring fixes nearly every node before
//! it sees 23 empty chips and 2 nodes left that could fill them.
//!
//! Two steps:
//! - a matching of empty chips to nodes (Kuhn's augmenting paths), kept
//!   between calls as an untrailed cache that each call repairs where it
//!   no longer holds: after a decision, usually one scan for one chip;
//!   a chip that cannot be matched is a failure;
//! - the nodes every such matching uses (matched to chips no alternating
//!   path from a free node reaches, Berge) must take an empty chip.
//!
//! (Counting checks on prefixes and suffixes of the chips, tried first,
//! pruned nothing these two did not on GPT-2 XL and cost a sixth of the
//! time.) Pruning returns at once: the engine runs the late pass again
//! once the changes are propagated, so nothing reads a count its own
//! pruning made stale.

use crate::domain::set_bit;
use crate::propagator::Cx;
use crate::store::Fail;

/// No node, no chip.
const NONE: u32 = u32::MAX;

pub(super) struct Hall {
    /// Fixed nodes on each chip (trailed).
    holds: Vec<u32>,
    /// Per node, 1 once `holds` counts it (trailed): a node is counted
    /// once however often its changes are seen.
    counted: Vec<u32>,
    /// The chips `holds` counts a node on, as a bitset without the trail
    /// (`None` after a backtrack or a recount until the next use, which
    /// reads it off `holds`): the walks go over the empty chips only, not
    /// over every chip up to the highest lower bound at every call.
    filled: Option<Vec<u64>>,
    /// Per chip its matched node, per node its chip (NONE: none).
    mate: Vec<u32>,
    owner: Vec<u32>,
    visited: Vec<bool>,
    /// Scratch for [`Hall::essential`]: the empty chips, those not reached
    /// yet, and the walk's stack.
    empty: Vec<u64>,
    open: Vec<u64>,
    stack: Vec<u32>,
    /// Every open node (and some fixed ones, dropped as the walk meets
    /// them), without the trail: the walk looks for free nodes among these
    /// instead of among all, most of which a late pass has fixed. `None`
    /// after a backtrack, which can reopen nodes, until the next walk.
    unfixed: Option<Vec<u32>>,
}

impl Hall {
    pub fn new(cx: &mut Cx) -> Hall {
        let c = cx.chips();
        let mut h = Hall {
            holds: (0..c).map(|_| cx.new_cell(0)).collect(),
            counted: (0..cx.n()).map(|_| cx.new_cell(0)).collect(),
            filled: None,
            mate: vec![NONE; c],
            owner: vec![NONE; cx.n()],
            visited: Vec::new(),
            empty: vec![0; cx.words()],
            open: vec![0; cx.words()],
            stack: Vec::new(),
            unfixed: None,
        };
        h.recount(cx);
        h
    }

    /// Domains grew: the list of open nodes and the filled chips are
    /// rebuilt before they are used.
    pub fn on_backtrack(&mut self) {
        self.unfixed = None;
        self.filled = None;
    }

    /// The counts, read off the domains.
    pub fn recount(&mut self, cx: &mut Cx) {
        for &cell in self.holds.iter().chain(&self.counted) {
            cx.set_cell(cell, 0);
        }
        self.filled = None;
        for x in 0..cx.n() as u32 {
            self.fixed(x, cx);
        }
    }

    /// Counts `x` on its chip when it is fixed and not yet counted.
    pub fn fixed(&mut self, x: u32, cx: &mut Cx) {
        if let Some(c) = cx.value(x) {
            if cx.cell(self.counted[x as usize]) != 0 {
                return;
            }
            cx.set_cell(self.counted[x as usize], 1);
            let cell = self.holds[c as usize];
            cx.set_cell(cell, cx.cell(cell) + 1);
            if let Some(filled) = &mut self.filled {
                set_bit(filled, c);
            }
        }
    }

    /// The empty chips among `0..=need`, as a bitset into `out`.
    fn empties(&mut self, need: usize, cx: &Cx, out: &mut [u64]) {
        let filled = self.filled.get_or_insert_with(|| {
            let mut f = vec![0u64; cx.words()];
            for (c, &cell) in self.holds.iter().enumerate() {
                if cx.cell(cell) != 0 {
                    set_bit(&mut f, c as u32);
                }
            }
            f
        });
        for (k, (o, &f)) in out.iter_mut().zip(filled.iter()).enumerate() {
            let base = k * 64;
            let below = if need >= base + 63 {
                !0
            } else if need < base {
                0
            } else {
                (1u64 << (need - base + 1)) - 1
            };
            *o = !f & below;
        }
    }

    #[inline]
    fn empty(&self, c: usize, cx: &Cx) -> bool {
        cx.cell(self.holds[c]) == 0
    }

    /// Both steps over chips `0..=need`; `Ok(true)` when a domain shrank
    /// (the caller stops and is called again).
    pub fn propagate(&mut self, need: usize, cx: &mut Cx) -> Result<bool, Fail> {
        self.repair_matching(need, cx)?;
        self.essential(need, cx)
    }

    /// Whether empty required chip `c` is matched to `x`. Inlined: the
    /// walk asks it of each node it meets.
    #[inline]
    fn matched(&self, c: usize, x: u32, need: usize, cx: &Cx) -> bool {
        c <= need && self.empty(c, cx) && self.mate[c] == x && self.owner[x as usize] == c as u32
    }

    /// Keeps the pairs that still hold and matches every other empty chip;
    /// fails when one cannot be.
    fn repair_matching(&mut self, need: usize, cx: &Cx) -> Result<(), Fail> {
        let mut empty = std::mem::take(&mut self.empty);
        self.empties(need, cx, &mut empty);
        let r = self.repair_empty(&empty, need, cx);
        self.empty = empty;
        r
    }

    /// [`Hall::repair_matching`] over `empty`, the empty chips up to `need`.
    /// (Membership reads one domain word, `Cx::holds`: every chip here is
    /// below the chip count, so within the domain's words.)
    fn repair_empty(&mut self, empty: &[u64], need: usize, cx: &Cx) -> Result<(), Fail> {
        for c in crate::domain::bits(empty) {
            let c = c as usize;
            let x = self.mate[c];
            if x != NONE && self.owner[x as usize] == c as u32 && !cx.is_fixed(x) && cx.holds(x, c as u32) {
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
        let can = |x: u32| !cx.is_fixed(x) && cx.holds(x, c as u32);
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
    fn essential(&mut self, need: usize, cx: &mut Cx) -> Result<bool, Fail> {
        let (mut empty, mut open, mut stack) = (
            std::mem::take(&mut self.empty),
            std::mem::take(&mut self.open),
            std::mem::take(&mut self.stack),
        );
        let mut unfixed = self
            .unfixed
            .take()
            .unwrap_or_else(|| (0..cx.n() as u32).filter(|&y| !cx.is_fixed(y)).collect());
        self.empties(need, cx, &mut empty);
        open.copy_from_slice(&empty);
        stack.clear();
        let r = self.confine(need, &empty, &mut open, &mut stack, &mut unfixed, cx);
        (self.empty, self.open, self.stack) = (empty, open, stack);
        self.unfixed = Some(unfixed);
        r
    }

    /// The walk of [`Hall::essential`] from the free nodes, then the
    /// restriction of the nodes matched to the chips it did not reach.
    fn confine(
        &self,
        need: usize,
        empty: &[u64],
        open: &mut [u64],
        stack: &mut Vec<u32>,
        unfixed: &mut Vec<u32>,
        cx: &mut Cx,
    ) -> Result<bool, Fail> {
        // The reach of every free node together, so the order they are met
        // in changes nothing. Only a walk empties `open`, so it is checked
        // before the first node and after each walk, not at every node.
        if open.iter().all(|&w| w == 0) {
            return Ok(false);
        }
        let mut i = 0;
        while i < unfixed.len() {
            let y = unfixed[i];
            if cx.is_fixed(y) {
                unfixed.swap_remove(i);
                continue;
            }
            i += 1;
            // A node whose domain misses the chips not reached yet reaches
            // none of them, free or not.
            if cx.words_of(y).iter().zip(open.iter()).all(|(&d, &o)| d & o == 0) {
                continue;
            }
            let o = self.owner[y as usize];
            if o != NONE && self.matched(o as usize, y, need, cx) {
                continue;
            }
            stack.push(y);
            while let Some(v) = stack.pop() {
                for (k, (open, &d)) in open.iter_mut().zip(cx.words_of(v)).enumerate() {
                    let mut m = d & *open;
                    *open &= !m;
                    while m != 0 {
                        let c = k * 64 + m.trailing_zeros() as usize;
                        m &= m - 1;
                        stack.push(self.mate[c]);
                    }
                }
            }
            if open.iter().all(|&w| w == 0) {
                return Ok(false);
            }
        }
        let mut shrank = false;
        for c in crate::domain::bits(open) {
            shrank |= cx.restrict(self.mate[c as usize], empty)?;
        }
        Ok(shrank)
    }
}
