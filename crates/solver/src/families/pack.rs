//! Whole operations packed along the pipeline, for a per-chip sum whose
//! weights differ (a compute budget) under a rule that keeps every edge's
//! flow upward. The run and cone bounds ([`super::spread`]) weigh the
//! nodes that must sit on a run of chips as one divisible sum; operations
//! do not split, and a budget that binds leaves part of every chip unused.
//! A node's descendant cone on chips `c..` is packed like items in bins in
//! an order the edges allow: a draw that puts an early node where the sum
//! still fits, but the whole operations no longer do, fails hundreds of
//! decisions later.
//!
//! **The packing.** Along the chips, a state is the chip of the last item
//! placed and that chip's load. One state is no worse than another when
//! its chip is lower, or the same with less load (the rest can always move
//! on to a fresh chip), and placing an item keeps that order. So the
//! least state over every order the edges allow, each item staying on the
//! current chip when it fits (next fit), bounds every real placement from
//! below. The weighted nodes split into a spine (nodes comparable with
//! every other: ordered among themselves) and the gaps between consecutive
//! spine nodes; the least state is exact over the down-sets of a small gap
//! (a dynamic program over them) and the divisible sum over a large one.
//!
//! For each node: the lowest chip its ancestor cone lets it take, the
//! highest its descendant cone does (packed from the last chip down), and
//! what the cone uses of that chip at least. At the root the chips are
//! bounds; during search, the fixed nodes on a node's highest chip that
//! are not its descendants must leave the room its cone uses there, and
//! likewise on its lowest chip for its ancestors ([`Pack::on_change`]).

use crate::propagator::{Cx, Net};
use crate::store::Fail;

/// A packing state: the chip of the last item and its load there
/// (`chip == chips`: past the last chip, nothing fits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct State {
    chip: u32,
    load: i64,
}

#[cfg(test)]
thread_local! {
    /// Set by tests that compare against the divisible sum alone.
    pub(super) static OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Gaps of up to this many weighted nodes are packed exactly (2^n
/// down-sets at most); larger ones as a divisible sum.
const GAP_EXACT: usize = 12;

/// Up to this many nodes the cones are kept as bitsets (n^2 / 32 bytes,
/// both directions).
const MAX_NODES: usize = 8192;

/// Bitsets over the weighted nodes, one row per node.
struct Rows {
    words: usize,
    bits: Vec<u64>,
}

impl Rows {
    fn row(&self, u: usize) -> &[u64] {
        &self.bits[u * self.words..(u + 1) * self.words]
    }

    fn has(&self, u: usize, i: u32) -> bool {
        self.bits[u * self.words + i as usize / 64] >> (i % 64) & 1 == 1
    }

    fn count(&self, u: usize) -> u32 {
        self.row(u).iter().map(|w| w.count_ones()).sum()
    }
}

/// Per node, the weighted nodes of its cone along `next` (itself included
/// when weighted), visiting every node after those `next` leads to.
fn cones<'a>(
    n: usize,
    slot: &[u32],
    words: usize,
    visit: impl Iterator<Item = &'a u32>,
    next: &mcm_core::graph::Csr<u32>,
) -> Rows {
    let mut bits = vec![0u64; n * words];
    for &u in visit {
        let u = u as usize;
        for &v in &next[u] {
            for k in 0..words {
                bits[u * words + k] |= bits[v as usize * words + k];
            }
        }
        if slot[u] != u32::MAX {
            bits[u * words + slot[u] as usize / 64] |= 1 << (slot[u] % 64);
        }
    }
    Rows { words, bits }
}

/// Where each node's cone (`cone`: its ancestors, read as the items before
/// it) packs at least, from the first chip of `room` on: the least state
/// after its cone's items. `opp` is the other direction's cones, for the
/// spine. `None` for a node whose cone fits nowhere.
fn least_states(p: &[u32], slot: &[u32], w: &[i64], cone: &Rows, opp: &Rows, room: &[i64]) -> Vec<Option<State>> {
    let n = slot.len();
    let chips = room.len() as u32;
    let total = p.len() as u32;
    // The spine, in order (each has more weighted ancestors than the one before).
    let mut spine: Vec<u32> = p
        .iter()
        .copied()
        .filter(|&x| cone.count(x as usize) + opp.count(x as usize) == total + 1)
        .collect();
    spine.sort_by_key(|&x| cone.count(x as usize));
    let mut on_spine = vec![0u64; cone.words];
    for &x in &spine {
        let i = slot[x as usize];
        on_spine[i as usize / 64] |= 1 << (i % 64);
    }
    let spine_before = |u: usize| -> usize {
        cone.row(u)
            .iter()
            .zip(&on_spine)
            .map(|(a, b)| (a & b).count_ones() as usize)
            .sum()
    };
    let mut gaps: Vec<Vec<u32>> = vec![Vec::new(); spine.len() + 1];
    for &x in p {
        let i = slot[x as usize];
        if on_spine[i as usize / 64] >> (i % 64) & 1 == 0 {
            gaps[spine_before(x as usize)].push(x);
        }
    }
    let place = |s: State, wt: i64| -> State {
        if wt <= 0 || s.chip >= chips {
            return s;
        }
        if s.load.saturating_add(wt) <= room[s.chip as usize] {
            return State {
                chip: s.chip,
                load: s.load + wt,
            };
        }
        match (s.chip + 1..chips).find(|&k| room[k as usize] >= wt) {
            Some(k) => State { chip: k, load: wt },
            None => State { chip: chips, load: 0 },
        }
    };
    // The divisible sum: fill each chip to its room.
    let fill = |s: State, mut wt: i64| -> State {
        let (mut k, mut load) = (s.chip, s.load);
        while k < chips {
            let avail = (room[k as usize] - load).max(0);
            if wt <= avail {
                return State {
                    chip: k,
                    load: load + wt,
                };
            }
            wt -= avail;
            k += 1;
            load = 0;
        }
        State { chip: chips, load: 0 }
    };
    // Per gap: its entry state and, when exact, the least state of each
    // down-set (indexed by a mask over the gap's nodes; `None`: not a
    // down-set).
    struct Gap {
        entry: State,
        local: Vec<u32>,
        best: Option<Vec<Option<State>>>,
    }
    let mut done: Vec<Gap> = Vec::with_capacity(gaps.len());
    let mut entry = State { chip: 0, load: 0 };
    for (j, gap) in gaps.iter().enumerate() {
        let mut local = Vec::new();
        let best = if gap.len() <= GAP_EXACT {
            local = gap.iter().map(|&x| slot[x as usize]).collect();
            let before: Vec<u32> = gap
                .iter()
                .enumerate()
                .map(|(a, &x)| {
                    (0..gap.len())
                        .filter(|&b| b != a && cone.has(x as usize, local[b]))
                        .fold(0u32, |m, b| m | 1 << b)
                })
                .collect();
            let mut best: Vec<Option<State>> = vec![None; 1 << gap.len()];
            best[0] = Some(entry);
            for mask in 0..best.len() {
                let Some(s) = best[mask] else { continue };
                for (a, &x) in gap.iter().enumerate() {
                    if mask >> a & 1 == 0 && before[a] & !(mask as u32) == 0 {
                        let t = place(s, w[x as usize]);
                        let to = &mut best[mask | 1 << a];
                        if to.is_none_or(|o| t < o) {
                            *to = Some(t);
                        }
                    }
                }
            }
            Some(best)
        } else {
            None
        };
        let full = match &best {
            Some(b) => b[b.len() - 1].unwrap_or(State { chip: chips, load: 0 }),
            None => fill(entry, gap.iter().map(|&x| w[x as usize]).sum()),
        };
        done.push(Gap { entry, local, best });
        if let Some(&s) = spine.get(j) {
            entry = place(full, w[s as usize]);
        }
    }
    (0..n)
        .map(|u| {
            let gap = &done[spine_before(u)];
            let s = match &gap.best {
                Some(best) => {
                    let mask = gap
                        .local
                        .iter()
                        .enumerate()
                        .filter(|&(_, &i)| cone.has(u, i))
                        .fold(0usize, |m, (b, _)| m | 1 << b);
                    best[mask].unwrap_or(State { chip: chips, load: 0 })
                }
                None => {
                    let own: i64 = gaps[spine_before(u)]
                        .iter()
                        .filter(|&&x| cone.has(u, slot[x as usize]))
                        .map(|&x| w[x as usize])
                        .sum();
                    fill(gap.entry, own)
                }
            };
            (s.chip < chips).then_some(s)
        })
        .collect()
}

/// One end of a node's packed cone: the chip and what the cone uses of it.
#[derive(Clone, Copy, Debug)]
struct End {
    chip: u32,
    used: i64,
}

/// The packing bounds of one per-chip sum, and per chip the weighted nodes
/// fixed there.
pub(crate) struct Pack {
    /// Per node: its index among the weighted nodes (`u32::MAX`: weight 0).
    slot: Vec<u32>,
    /// Per weighted node (by index): its weight in units.
    w: Vec<i64>,
    room: Vec<i64>,
    /// Per node: the weighted nodes of its descendant and ancestor cones.
    desc: Rows,
    anc: Rows,
    /// Per node: the lowest and highest chips its cones let it take
    /// (`None`: none).
    ends: Vec<Option<(End, End)>>,
    /// Per chip: `(node, use)` of the weighted nodes whose highest
    /// (`by_hi`) or lowest (`by_lo`) chip it is, with what their cone uses
    /// of it, largest first.
    by_hi: Vec<Vec<(u32, i64)>>,
    by_lo: Vec<Vec<(u32, i64)>>,
    /// Per chip, a run of cells: the weighted nodes fixed there, a bitset
    /// over their indices (`words` cells a chip), and their weight.
    fixed: u32,
    load: u32,
    /// Per chip and side (`by_hi`, then `by_lo`), a cell: how many of the
    /// list's first nodes are fixed or no longer hold the chip (domains
    /// only narrow until a backtrack restores the cell), skipped by every
    /// check.
    skip: u32,
}

impl Pack {
    /// The bounds over `room` (per chip, units) for nodes weighing at least
    /// `w` (units) on every chip; `None` when the weights are all alike
    /// (then whole items pack as well as the sum: the run bounds suffice),
    /// the flow is not upward, or the graph is too large for the cones.
    pub fn new(cx: &mut Cx, w: &[i64], room: &[i64]) -> Option<Pack> {
        #[cfg(test)]
        if OFF.with(|o| o.get()) {
            return None;
        }
        let net: &Net = cx.net();
        let n = w.len();
        let c = room.len();
        let mut weighted = w.iter().copied().filter(|&x| x > 0);
        let first = weighted.next()?;
        if !net.upward || n > MAX_NODES || c == 0 || weighted.all(|x| x == first) {
            return None;
        }
        let order: Vec<u32> = net.placed_order();
        let p: Vec<u32> = order.iter().copied().filter(|&u| w[u as usize] > 0).collect();
        let mut slot = vec![u32::MAX; n];
        for (i, &u) in p.iter().enumerate() {
            slot[u as usize] = i as u32;
        }
        let words = p.len().div_ceil(64);
        let anc = cones(n, &slot, words, order.iter(), &net.pred);
        let desc = cones(n, &slot, words, order.iter().rev(), &net.succ);
        let low = least_states(&p, &slot, w, &anc, &desc, room);
        let rev: Vec<i64> = room.iter().rev().copied().collect();
        let high = least_states(&p, &slot, w, &desc, &anc, &rev);
        let last = c as u32 - 1;
        let ends: Vec<Option<(End, End)>> = low
            .iter()
            .zip(&high)
            .map(|(l, h)| {
                let (l, h) = ((*l)?, (*h)?);
                Some((
                    End {
                        chip: l.chip,
                        used: l.load,
                    },
                    End {
                        chip: last - h.chip,
                        used: h.load,
                    },
                ))
            })
            .collect();
        let mut by_hi = vec![Vec::new(); c];
        let mut by_lo = vec![Vec::new(); c];
        for &u in &p {
            if let Some((l, h)) = ends[u as usize] {
                by_lo[l.chip as usize].push((u, l.used));
                by_hi[h.chip as usize].push((u, h.used));
            }
        }
        for list in by_lo.iter_mut().chain(by_hi.iter_mut()) {
            list.sort_by_key(|&(_, used)| std::cmp::Reverse(used));
        }
        let fixed = run_of_cells(cx, c * words, 0);
        let load = run_of_cells(cx, c, 0);
        let skip = run_of_cells(cx, 2 * c, 0);
        Some(Pack {
            slot,
            w: p.iter().map(|&u| w[u as usize]).collect(),
            room: room.to_vec(),
            desc,
            anc,
            ends,
            by_hi,
            by_lo,
            fixed,
            load,
            skip,
        })
    }

    /// Counts `x` on its chip once it is fixed, then closes that chip to
    /// each open node whose cone could use it only with more room than the
    /// other nodes fixed there leave.
    pub fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        let i = self.slot[x as usize];
        if i == u32::MAX {
            return Ok(());
        }
        let Some(d) = cx.value(x) else { return Ok(()) };
        if !self.count(i, d, cx) {
            return Ok(());
        }
        self.crowd(d, cx)
    }

    /// Adds weighted node `i` to chip `d`'s fixed nodes; false when it is
    /// there already.
    fn count(&self, i: u32, d: u32, cx: &mut Cx) -> bool {
        let cell = self.fixed + d * self.desc.words as u32 + i / 64;
        let word = cx.cell(cell);
        if word >> (i % 64) & 1 == 1 {
            return false;
        }
        cx.set_cell(cell, word | 1 << (i % 64));
        let load = self.load + d;
        cx.set_cell(load, cx.cell(load) + self.w[i as usize]);
        true
    }

    /// The ends on chip `d` checked against the nodes fixed there.
    fn crowd(&self, d: u32, cx: &mut Cx) -> Result<(), Fail> {
        let (room, total) = (self.room[d as usize], cx.cell(self.load + d));
        let c = self.room.len() as u32;
        for (side, list, cone) in [
            (0, &self.by_hi[d as usize], &self.desc),
            (c, &self.by_lo[d as usize], &self.anc),
        ] {
            let skip = self.skip + side + d;
            let from = cx.cell(skip) as usize;
            // The first node from `from` on that may still hold the chip.
            let mut first = None;
            let mut end = list.len();
            for (j, &(v, used)) in list.iter().enumerate().skip(from) {
                if used.saturating_add(total) <= room {
                    end = j;
                    break;
                }
                // A fixed node's cone was checked when it was placed; its
                // descendants (ancestors) carry the check on from there.
                if !cx.is_fixed(v) && cx.holds(v, d) {
                    if self.crowded(d, v, cone, room - used, cx) {
                        cx.remove(v, d)?;
                    } else if first.is_none() {
                        first = Some(j);
                    }
                }
            }
            let first = first.unwrap_or(end);
            if first > from {
                cx.set_cell(skip, first as i64);
            }
        }
        Ok(())
    }

    /// Whether the nodes fixed on chip `d` outside `v`'s cone (its own
    /// packing counts those inside) weigh more than `room`. Read by the
    /// bits outside the cone, and stopped once over: the nodes of a chain
    /// fixed before `v` are one or the other, most often all outside.
    fn crowded(&self, d: u32, v: u32, cone: &Rows, room: i64, cx: &Cx) -> bool {
        let words = cone.words;
        let fixed = cx.cells(self.fixed + d * words as u32, words);
        let mut sum = 0i64;
        for (k, (&f, &c)) in fixed.iter().zip(cone.row(v as usize)).enumerate() {
            let mut out = f as u64 & !c;
            while out != 0 {
                sum = sum.saturating_add(self.w[k * 64 + out.trailing_zeros() as usize]);
                if sum > room {
                    return true;
                }
                out &= out - 1;
            }
        }
        false
    }

    /// The root bounds, the fixed nodes counted again, and every chip
    /// checked.
    pub fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        for (u, e) in self.ends.iter().enumerate() {
            let Some((lo, hi)) = e else { return Err(cx.fail()) };
            if lo.chip > hi.chip {
                return Err(cx.fail());
            }
            cx.set_min(u as u32, lo.chip)?;
            cx.set_max(u as u32, hi.chip)?;
        }
        let c = self.room.len() as u32;
        for k in 0..c * self.desc.words as u32 {
            cx.set_cell(self.fixed + k, 0);
        }
        for k in 0..c {
            cx.set_cell(self.load + k, 0);
            cx.set_cell(self.skip + k, 0);
            cx.set_cell(self.skip + c + k, 0);
        }
        for (u, &i) in self.slot.iter().enumerate() {
            if let Some(d) = (i != u32::MAX).then(|| cx.value(u as u32)).flatten() {
                self.count(i, d, cx);
            }
        }
        for k in 0..c {
            self.crowd(k, cx)?;
        }
        Ok(())
    }
}

/// `len` new cells set to `v`, consecutive.
fn run_of_cells(cx: &mut Cx, len: usize, v: i64) -> u32 {
    let first = cx.new_cell(v);
    for _ in 1..len {
        cx.new_cell(v);
    }
    first
}
