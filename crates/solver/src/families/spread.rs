//! Load bounds over runs of chips, for a resource constraint with one
//! instance per chip: the nodes whose domains lie within chips `0..=hi`
//! (or `lo..`, or a window `lo..=hi` of at most [`WINDOW`] chips) weigh at
//! least their lightest weight each, and together must fit the room of
//! those chips. Fixed loads alone see an overload only once the nodes are
//! placed; the flow rules confine whole subgraphs to a prefix of the chips
//! long before that, and the pipeline rules confine a node's inputs
//! without other consumers (its weights) to its chip and the one feeding
//! it: a chain node that fills a window leaves its weights no room, seen
//! at once in the window rather than after the chain is placed. Failure
//! only (no pruning): a monotone test of the domains, so incremental and
//! from-scratch propagation agree.
//!
//! When a native rule keeps every edge's flow upward, a node on chip c puts
//! its whole descendant cone on chips c and above (and its ancestor cone on
//! c and below), so at the root a node may not sit where its cone cannot
//! fit ([`cone_bounds`]), with the nodes an equality ties to the cone
//! ([`super::equal`]): without it, a draw puts an early node high and
//! fails only once the cone's lower bounds arrive.

use super::equal::{Groups, ALONE};
use crate::domain::bits;
use crate::propagator::{Cx, Net};
use crate::store::Fail;
use mcm_core::graph::Csr;

pub(crate) struct Spread {
    /// Per node: its lightest weight over all chips, in units (0: untracked).
    wmin: Vec<i64>,
    /// Per chip: the room, in units.
    room: Vec<i64>,
    /// The room of chips `..=k` (`below`) and `k..` (`above`).
    below: Vec<i64>,
    above: Vec<i64>,
    /// Per chip: trailed sums of `wmin` of the nodes whose domain ends
    /// (`by_max`) or starts (`by_min`) there; the first of a run of cells,
    /// one a chip, read as one slice.
    by_max: u32,
    by_min: u32,
    /// Per chip `lo` and span `s < WINDOW`: trailed sums of `wmin` of the
    /// nodes whose domain is `lo..=lo + s`, at `lo * WINDOW + s` from the
    /// first cell of the run.
    by_window: u32,
    /// Trailed sum of every `by_window` cell, and the least room of one
    /// chip: while the first is within the second no window can overflow,
    /// and the windows are not checked (a rule that does not bind).
    narrow: u32,
    least_room: i64,
    /// The first chips `first..=last` of the windows whose load grew since
    /// the last check passed (`first > last`: none). Loads only grow as
    /// domains narrow, so a state undone to is one whose windows fit, and
    /// every other window still fits: a check reads only these (a node
    /// fixed on chip d touches the windows starting at d - 7..=d, not all
    /// 36 x 8 of a ring of 36 chips).
    dirty: (usize, usize),
    /// Per tracked node: trailed `(min << 32) | max` it is counted at.
    at: Vec<u32>,
    /// Per node, the chips its cones allow (empty without upward flow).
    bounds: Vec<(u32, u32)>,
}

/// The widest window of chips whose load is bounded (beyond the prefixes
/// and suffixes, which are all bounded): a check costs chips x WINDOW.
const WINDOW: usize = 8;

/// How weights become integers: exact ones as they are; others scaled and
/// rounded down (rooms up), so that the test stays sound.
pub(crate) struct Units {
    pub exact: bool,
    pub scale: f64,
}

impl Units {
    fn weight(&self, w: f64) -> i64 {
        if self.exact {
            w as i64
        } else {
            ((w * self.scale).floor() - 1.0).clamp(0.0, 1e17) as i64
        }
    }

    fn room(&self, r: f64) -> i64 {
        if self.exact {
            r.clamp(-1e17, 1e17) as i64
        } else {
            ((r * self.scale).ceil() + 1.0).clamp(-1e17, 1e17) as i64
        }
    }
}

/// One chip's bound: its room, and each node's weight there.
pub(crate) type ChipBound = (f64, Vec<(u32, f64)>);

impl Spread {
    /// `per_chip[k]`: the room of chip k's instance and each node's weight
    /// there, or `None` for a chip no instance bounds.
    pub fn new(cx: &mut Cx, per_chip: &[Option<ChipBound>], units: &Units) -> Option<Spread> {
        let n = cx.n();
        let c = per_chip.len();
        let mut wmin = vec![i64::MAX; n];
        let mut room = vec![0i64; c];
        for (k, inst) in per_chip.iter().enumerate() {
            let Some((r, items)) = inst else {
                // An unbounded chip: every node may go there for free.
                return None;
            };
            room[k] = units.room(*r);
            let mut here = vec![0i64; n];
            for &(u, w) in items {
                here[u as usize] += units.weight(w);
            }
            for u in 0..n {
                wmin[u] = wmin[u].min(here[u]);
            }
        }
        if c == 0 || wmin.iter().all(|&w| w <= 0) {
            return None;
        }
        let by_max = run_of_cells(cx, c);
        let by_min = run_of_cells(cx, c);
        let by_window = run_of_cells(cx, c * WINDOW);
        let narrow = cx.new_cell(0);
        let least_room = room.iter().copied().min().unwrap_or(0);
        let below = room
            .iter()
            .scan(0i64, |acc, &r| {
                *acc = acc.saturating_add(r);
                Some(*acc)
            })
            .collect();
        let mut above: Vec<i64> = room
            .iter()
            .rev()
            .scan(0i64, |acc, &r| {
                *acc = acc.saturating_add(r);
                Some(*acc)
            })
            .collect();
        above.reverse();
        let at = (0..n)
            .map(|u| if wmin[u] > 0 { cx.new_cell(-1) } else { u32::MAX })
            .collect();
        let bounds = if cx.net().upward {
            cone_bounds(cx.net(), &wmin, &room)
        } else {
            Vec::new()
        };
        Some(Spread {
            wmin,
            room,
            below,
            above,
            by_max,
            by_min,
            by_window,
            narrow,
            least_room,
            dirty: CLEAN,
            at,
            bounds,
        })
    }

    /// Per node its lightest weight, and per chip its room, in units.
    pub fn units(&self) -> (&[i64], &[i64]) {
        (&self.wmin, &self.room)
    }

    pub fn tracks(&self, u: u32) -> bool {
        self.at[u as usize] != u32::MAX
    }

    /// Moves `x`'s weight to its current bounds. A cell whose old and new
    /// place are the same is left alone (no trail entry), and the windows
    /// that now hold `x` are marked for the next check.
    pub fn on_change(&mut self, x: u32, cx: &mut Cx) {
        let cell = self.at[x as usize];
        if cell == u32::MAX {
            return;
        }
        let (mn, mx) = (cx.min(x) as usize, cx.max(x) as usize);
        let now = ((mn as i64) << 32) | mx as i64;
        let was = cx.cell(cell);
        if was == now {
            return;
        }
        let w = self.wmin[x as usize];
        let window = window_cell(mn, mx);
        let (old_min, old_max, old_window) = if was >= 0 {
            let (omn, omx) = ((was >> 32) as usize, (was & 0xffff_ffff) as usize);
            (Some(omn), Some(omx), window_cell(omn, omx))
        } else {
            (None, None, None)
        };
        if old_min != Some(mn) {
            if let Some(o) = old_min {
                add(cx, self.by_min + o as u32, -w);
            }
            add(cx, self.by_min + mn as u32, w);
        }
        if old_max != Some(mx) {
            if let Some(o) = old_max {
                add(cx, self.by_max + o as u32, -w);
            }
            add(cx, self.by_max + mx as u32, w);
        }
        if old_window != window {
            if let Some(i) = old_window {
                add(cx, self.by_window + i as u32, -w);
            }
            if let Some(i) = window {
                add(cx, self.by_window + i as u32, w);
            }
            match (old_window.is_some(), window.is_some()) {
                (false, true) => add(cx, self.narrow, w),
                (true, false) => add(cx, self.narrow, -w),
                _ => {}
            }
        }
        if window.is_some() {
            // The windows holding mn..=mx: those starting at mx - 7..=mn.
            let first = (mx + 1).saturating_sub(WINDOW);
            self.dirty = (self.dirty.0.min(first), self.dirty.1.max(mn));
        }
        cx.set_cell(cell, now);
    }

    /// Fails when the nodes confined to some prefix or suffix of the chips
    /// outweigh its room.
    pub fn check(&mut self, cx: &Cx) -> Result<(), Fail> {
        let c = self.room.len();
        let mut load = 0i64;
        for (&l, &room) in cx.cells(self.by_max, c).iter().zip(&self.below) {
            load = load.saturating_add(l);
            if load > room {
                return Err(cx.fail());
            }
        }
        let mut load = 0i64;
        for (&l, &room) in cx.cells(self.by_min, c).iter().zip(&self.above).rev() {
            load = load.saturating_add(l);
            if load > room {
                return Err(cx.fail());
            }
        }
        self.check_windows(cx)?;
        self.dirty = CLEAN;
        Ok(())
    }

    /// Fails when the nodes confined to a window of at most [`WINDOW`]
    /// chips outweigh its room; reads the windows starting at the chips
    /// marked in `dirty`. From the highest chip such a window reaches down,
    /// `inside[s]` is the load confined to `lo..=lo + s`: what was confined
    /// to `lo + 1..=lo + s` plus the nodes whose domain starts at `lo`
    /// (exact for the marked chips; above them it misses the cells past the
    /// start of the sweep, a smaller load that fails only where the whole
    /// one does).
    fn check_windows(&self, cx: &Cx) -> Result<(), Fail> {
        let (first, last) = self.dirty;
        // Every window has at least one chip's room, and holds at most all
        // the nodes narrow enough for a window.
        if first > last || cx.cell(self.narrow) <= self.least_room {
            return Ok(());
        }
        let c = self.room.len();
        let cells = cx.cells(self.by_window, c * WINDOW);
        let top = (last + WINDOW - 1).min(c - 1);
        let mut inside = [0i64; WINDOW];
        for lo in (first..=top).rev() {
            let span = WINDOW.min(c - lo);
            // Shift: the windows of lo + 1 become those of lo, one wider.
            for s in (1..span).rev() {
                inside[s] = inside[s - 1];
            }
            inside[0] = 0;
            let (mut row, mut room) = (0i64, 0i64);
            let row_cells = &cells[lo * WINDOW..lo * WINDOW + span];
            for ((load, &l), &r) in inside.iter_mut().zip(row_cells).zip(&self.room[lo..]) {
                row = row.saturating_add(l);
                room = room.saturating_add(r);
                *load = load.saturating_add(row);
                if *load > room {
                    return Err(cx.fail());
                }
            }
        }
        Ok(())
    }

    /// The cone bounds applied, every node counted again at its bounds,
    /// then the test, of every window.
    pub fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        for (u, &(lo, hi)) in self.bounds.iter().enumerate() {
            if lo > hi {
                return Err(cx.fail());
            }
            cx.set_min(u as u32, lo)?;
            cx.set_max(u as u32, hi)?;
        }
        let c = self.room.len() as u32;
        for k in 0..c {
            cx.set_cell(self.by_max + k, 0);
            cx.set_cell(self.by_min + k, 0);
        }
        for i in 0..c * WINDOW as u32 {
            cx.set_cell(self.by_window + i, 0);
        }
        cx.set_cell(self.narrow, 0);
        for u in 0..self.at.len() as u32 {
            if self.tracks(u) {
                cx.set_cell(self.at[u as usize], -1);
                self.on_change(u, cx);
            }
        }
        self.dirty = (0, self.room.len().saturating_sub(1));
        self.check(cx)
    }
}

/// Up to this many nodes, cones are exact (bitsets, n^2 / 8 bytes while
/// built); beyond it, a cone weighs at least its heaviest path.
const EXACT_CONES: usize = 8192;

/// Per node `(lo, hi)`: the chips where its cones fit. On chip c, a node's
/// descendant cone (itself included) lies on chips `c..`, each member
/// weighing at least its lightest weight, so the cone's weight must fit the
/// room of those chips; its ancestor cone likewise fits chips `..=c`.
/// `lo > hi` when no chip fits.
fn cone_bounds(net: &Net, wmin: &[i64], room: &[i64]) -> Vec<(u32, u32)> {
    let n = wmin.len();
    let c = room.len();
    let order: Vec<u32> = net.placed_order();
    let groups = net.groups();
    let down = cone_weights(n, order.iter().rev(), &net.succ, wmin, groups);
    let up = cone_weights(n, order.iter(), &net.pred, wmin, groups);
    // above[k]: the room of chips k.. ; below[k]: of chips ..=k.
    let mut above = vec![0i64; c + 1];
    for k in (0..c).rev() {
        above[k] = above[k + 1].saturating_add(room[k]);
    }
    let mut below = vec![0i64; c];
    let mut acc = 0i64;
    for k in 0..c {
        acc = acc.saturating_add(room[k]);
        below[k] = acc;
    }
    (0..n)
        .map(|u| {
            // Rooms grow towards chip 0 (above) and towards the last chip (below).
            let hi = (0..c).rev().find(|&k| down[u] <= above[k]);
            let lo = (0..c).find(|&k| up[u] <= below[k]);
            match (lo, hi) {
                (Some(lo), Some(hi)) => (lo as u32, hi as u32),
                _ => (1, 0),
            }
        })
        .collect()
}

/// Per node, the weight of its cone along `next` (itself included), visited
/// so that every node comes after the nodes `next` leads to: exact up to
/// [`EXACT_CONES`] nodes, the heaviest path beyond. An exact cone also
/// weighs the mates of its members that it lacks ([`Groups`]): each sits on
/// its mate's chip, on the same side of the node.
fn cone_weights<'a>(
    n: usize,
    visit: impl Iterator<Item = &'a u32> + Clone,
    next: &Csr<u32>,
    w: &[i64],
    groups: &Groups,
) -> Vec<i64> {
    let mut weight = vec![0i64; n];
    if n <= EXACT_CONES {
        let words = n.div_ceil(64);
        let mut cone = vec![0u64; n * words];
        // Per group, the last node whose cone weighed it.
        let mut seen = vec![u32::MAX; groups.len()];
        for &u in visit {
            let u = u as usize;
            cone[u * words + u / 64] |= 1 << (u % 64);
            for &v in &next[u] {
                for k in 0..words {
                    cone[u * words + k] |= cone[v as usize * words + k];
                }
            }
            let row = &cone[u * words..(u + 1) * words];
            weight[u] = bits(row).fold(0i64, |acc, v| acc.saturating_add(w[v as usize]));
            if !groups.is_empty() {
                for v in bits(row) {
                    let g = groups.of(v);
                    if g == ALONE || seen[g as usize] == u as u32 {
                        continue;
                    }
                    seen[g as usize] = u as u32;
                    for &m in groups.members(g) {
                        if row[m as usize / 64] >> (m % 64) & 1 == 0 {
                            weight[u] = weight[u].saturating_add(w[m as usize]);
                        }
                    }
                }
            }
        }
    } else {
        for &u in visit {
            let u = u as usize;
            let heaviest = next[u].iter().map(|&v| weight[v as usize]).max().unwrap_or(0);
            weight[u] = w[u].saturating_add(heaviest);
        }
    }
    weight
}

/// Where a node confined to chips `mn..=mx` is counted in `by_window`, if
/// that is narrow enough to be.
fn window_cell(mn: usize, mx: usize) -> Option<usize> {
    (mx - mn < WINDOW).then_some(mn * WINDOW + mx - mn)
}

/// No window marked for the next check.
const CLEAN: (usize, usize) = (usize::MAX, 0);

/// `len` new cells, consecutive: read back as one slice ([`Cx::cells`]).
fn run_of_cells(cx: &mut Cx, len: usize) -> u32 {
    let first = cx.new_cell(0);
    for k in 1..len {
        let cell = cx.new_cell(0);
        debug_assert_eq!(cell, first + k as u32);
    }
    first
}

#[inline]
fn add(cx: &mut Cx, cell: u32, w: i64) {
    let v = cx.cell(cell);
    cx.set_cell(cell, v + w);
}
