//! A flow between two chips may not coexist with a longer path between
//! them. The chip flow graph is kept from the edges whose two ends are
//! fixed (counted in a map, rebuilt from the edges after a backtrack: O(E),
//! not O(C²)); its longest paths are recomputed when an arc appears, over
//! the chips that arcs touch only, so a sparse flow on thousands of chips
//! costs what it would on a few. Candidates of nodes next to fixed ones are pruned when the arcs
//! they would add close a shortcut or a cycle.
//!
//! Beyond neighbours: each node knows the chips of its fixed ancestors (A)
//! and fixed descendants (D), kept as trailed bitsets. A node v between a
//! node on chip a and one on chip b, where the arc a -> b exists, can only
//! go to a or b: anywhere else the walk a ~> v ~> b is a second, longer path
//! (or a cycle when a == b). This stops random-order search from filling
//! the inside of a residual block with chips that doom it.
//!
//! A change visits few nodes: the ones a spread reaches are judged as it
//! goes, and two lists without the trail ([`NodeList`]: open nodes with both
//! sets, open nodes next to a fixed one) stand for the scans of every node
//! that each new arc used to make (a third of FIX on GPT-2 XL, 256 chips).

use super::shared_tail::SharedTails;
use crate::domain::{bits, set_bit};
use crate::flow::ChipFlow;
use crate::propagator::{Cx, Propagator};
use crate::store::Fail;
use mcm_core::problem::GroundConstraint;
use std::collections::HashMap;

/// Rows computed on demand and kept until the arcs change: W words per
/// chip, each valid while its stamp is the current one (so forgetting them
/// all is one increment, not a pass over the chips).
struct RowCache {
    rows: Vec<u64>,
    stamp: Vec<u32>,
    now: u32,
}

impl RowCache {
    fn new(c: usize, w: usize) -> RowCache {
        RowCache {
            rows: vec![0; c * w],
            stamp: vec![0; c],
            now: 1,
        }
    }

    fn forget(&mut self) {
        self.now = self.now.wrapping_add(1);
        if self.now == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.now = 1;
        }
    }

    /// Row `a`, when computed under the current arcs.
    fn row(&self, a: u32, w: usize) -> Option<&[u64]> {
        (self.stamp[a as usize] == self.now).then(|| &self.rows[a as usize * w..(a as usize + 1) * w])
    }
}

/// Per chip and side, the chips its row of `heads_ok` (or `tails_ok`)
/// lost to the latest arcs, found once per sweep of the front.
struct Verdicts {
    /// Sweep stamp per chip and side (`2 * chip + side`): `lost` is known
    /// when it equals `now`.
    stamp: Vec<u32>,
    /// W words per chip and side.
    lost: Vec<u64>,
    now: u32,
    /// Per chip, bit i: the chip is the tail (head) of fresh arc i (the
    /// 64th bit for any later one); zero outside a sweep.
    fresh_tail: Vec<u64>,
    fresh_head: Vec<u64>,
}

impl Verdicts {
    fn new(c: usize, w: usize) -> Verdicts {
        Verdicts {
            stamp: vec![0; 2 * c],
            lost: vec![0; 2 * c * w],
            now: 1,
            fresh_tail: vec![0; c],
            fresh_head: vec![0; c],
        }
    }

    fn next_sweep(&mut self) {
        self.now = self.now.wrapping_add(1);
        if self.now == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.now = 1;
        }
    }
}

/// Sorts `v` (distinct values), whose longest sorted prefix is most of
/// it: the rest sorted, then the two merged through `scratch`.
pub(super) fn sort_after_sorted_prefix(v: &mut Vec<u32>, scratch: &mut Vec<u32>) {
    let p = 1 + v.windows(2).take_while(|w| w[0] < w[1]).count();
    if p >= v.len() {
        return;
    }
    v[p..].sort_unstable();
    scratch.clear();
    let (a, b) = v.split_at(p);
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] < b[j] {
            scratch.push(a[i]);
            i += 1;
        } else {
            scratch.push(b[j]);
            j += 1;
        }
    }
    scratch.extend_from_slice(&a[i..]);
    scratch.extend_from_slice(&b[j..]);
    std::mem::swap(v, scratch);
}

/// `acc |= other`, word by word.
fn or_into(acc: &mut [u64], other: &[u64]) {
    for (a, o) in acc.iter_mut().zip(other) {
        *a |= o;
    }
}

/// A set of nodes without the trail, for a propagator to visit a few
/// instead of all: every open node with some property is in it (others may
/// be); `stale` after a backtrack, when it must be rebuilt from the store.
struct NodeList {
    nodes: Vec<u32>,
    member: Vec<bool>,
    stale: bool,
}

impl NodeList {
    fn new(n: usize) -> NodeList {
        NodeList {
            nodes: Vec::new(),
            member: vec![false; n],
            stale: true,
        }
    }

    fn add(&mut self, v: u32) {
        if !self.member[v as usize] {
            self.member[v as usize] = true;
            self.nodes.push(v);
        }
    }

    /// The open neighbours of `x`.
    fn add_open_neighbours(&mut self, x: u32, s: &Cx) {
        let net = s.net();
        for &v in net.pred[x as usize].iter().chain(&net.succ[x as usize]) {
            if !s.is_fixed(v) {
                self.add(v);
            }
        }
    }

    /// Fixed nodes leave: only a backtrack reopens them, and it rebuilds.
    fn drop_fixed(&mut self, s: &Cx) {
        let member = &mut self.member;
        self.nodes.retain(|&v| {
            let keep = !s.is_fixed(v);
            member[v as usize] = keep;
            keep
        });
    }

    /// Exactly the open nodes with property `has`.
    fn rebuild(&mut self, s: &Cx, has: impl Fn(u32) -> bool) {
        self.nodes.iter().for_each(|&v| self.member[v as usize] = false);
        self.nodes.clear();
        for v in 0..s.n() as u32 {
            if !s.is_fixed(v) && has(v) {
                self.add(v);
            }
        }
        self.stale = false;
    }
}

#[cfg(test)]
thread_local! {
    /// Open nodes a sweep of `front` left alone, for the tests to see that
    /// sweeps skipped some.
    pub(super) static SKIPPED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
thread_local! {
    /// Set by a test: every change checks the sets and flags against a
    /// recomputation ([`Triangle::audit`]).
    pub(super) static AUDIT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// No index, in `dense`.
const NONE: u32 = u32::MAX;

/// Chip sets on the stack: 64 words hold the 4,096 chips a package may have
/// (`mcm_core::package::MAX_CHIPS`).
const MAX_WORDS: usize = mcm_core::package::MAX_CHIPS / 64;

pub struct Triangle {
    c: usize,
    counted: Vec<u32>,
    /// The trailed cell counting the edges that realise arc a -> b, at
    /// a * C + b (a cell for each pair ever met): an edge counts once both
    /// ends are fixed and one of them has been seen. Being trailed, the
    /// counts are as they were after a backtrack (a rebuild from every
    /// edge after each one was quadratic on large graphs).
    arcs: HashMap<u32, u32>,
    /// The chips that arcs touch, and each one's index among them (or NONE).
    active: Vec<u32>,
    dense: Vec<u32>,
    /// Longest path lengths between active chips, `lp[i * K + j]` (-1:
    /// none; K: via a cycle), valid while `fresh`.
    lp: Vec<i32>,
    /// Row length of `lp`: at least K, with room for chips arcs add later.
    stride: usize,
    /// Whether the arcs, when last recomputed whole, held a cycle.
    cyclic: bool,
    /// Reachability as chip bitsets (W words per chip, by chip id), valid
    /// while `fresh`: `to[y]` the chips with a path to y, `from[x]` the
    /// chips x has a path to, `far_from[x]` / `far_to[y]` the same for
    /// paths of two arcs or more. They make a row of `heads` or `tails` a
    /// few unions of rows, where a test per pair of chips cost O(K²).
    to: Vec<u64>,
    from: Vec<u64>,
    far_from: Vec<u64>,
    far_to: Vec<u64>,
    arc_list: Vec<(u32, u32)>,
    fresh: bool,
    pairs: Vec<(u32, u32)>,
    /// Arcs as bitset rows (`rows[a * W..]`: the heads of arcs from a), valid while `fresh`.
    rows: Vec<u64>,
    /// The tails of arcs into b, at `cols[b * W..]`.
    cols: Vec<u64>,
    /// Open nodes whose ancestor and descendant sets are both non-empty
    /// (the only ones `between` can confine), a superset kept without the
    /// trail: nodes join as `spread` gives them their second set, and leave
    /// once fixed; rebuilt from the cells after a backtrack, which can
    /// reopen a node.
    both: NodeList,
    /// Open nodes next to a fixed one, kept the same way: the neighbours of
    /// each node counted, and of each node `prune` fixes. A node fixed
    /// elsewhere (by `between`, another rule or a decision) adds its
    /// neighbours when its own event comes, so pruning next to it may come
    /// a little later than a scan of every node would: the same fixpoint,
    /// and a failure sometimes blamed on another rule.
    front: NodeList,
    /// Cached: chips c that may head a new arc a -> c (row a), or tail a new
    /// arc c -> b (row b), under the current arcs; built on demand.
    heads_ok: std::cell::RefCell<RowCache>,
    tails_ok: std::cell::RefCell<RowCache>,
    /// Whether every open node next to a fixed one was pruned under the
    /// current arcs and its neighbours' current chips (no backtrack since
    /// the last sweep of `front`). A new arc then re-prunes only the nodes
    /// it can affect ([`Triangle::affected`]); for every other node a prune
    /// would restrict nothing.
    settled: bool,
    /// The rows of `heads_ok` and `tails_ok` before the latest new arcs,
    /// copied when they come (while `settled`), and the verdicts of the
    /// sweep that compares them with the new ones.
    heads_before: RowCache,
    tails_before: RowCache,
    verdicts: Verdicts,
    /// Scratch for sorting `front`.
    merged: Vec<u32>,
    /// The open nodes with a counted input on chip c (`by_chip[2 * c +
    /// 1]`) or a counted consumer on it (`by_chip[2 * c]`): appended as
    /// nodes are counted, without the trail (fixed nodes leave when a sweep
    /// reads the list), rebuilt with `front` after a backtrack. A sweep
    /// after new arcs reads only the lists of chips whose rows lost chips
    /// or that tail a new arc, and the neighbours of `x` and of the nodes
    /// fixed but not yet counted: only those can be [`Triangle::affected`].
    by_chip: Vec<Vec<u32>>,
    /// Bit i: `by_chip[i]` may hold an open node (it is not empty); a
    /// sweep drops a list's fixed nodes before it asks whether the list's
    /// chip lost anything, and clears the bit of a list it empties, so
    /// chips whose neighbours are all fixed cost nothing.
    listed: Vec<u64>,
    /// Scratch: the nodes a sweep visits.
    picked: Vec<u32>,
    w: usize,
    /// Trailed bitsets: chips of fixed ancestors / descendants, W cells per node.
    anc: Vec<u32>,
    desc: Vec<u32>,
    /// Trailed flags, two per node (`2 * v + side`): side 0, v and all its
    /// ancestors are counted; side 1, v and all its descendants. Nothing
    /// reads the sets of a fixed node but a spread looking for open ones,
    /// and past a closed node in its direction there are none: a spread
    /// stops there, and the sets are exact for every node not closed. (In
    /// a topological pass every ancestor of a new node is counted, and its
    /// backward spread, which marked them all, ends at once.)
    closed: Vec<u32>,
    /// The first cells of `anc`, `desc` and `closed`, each made in one run
    /// of `new_cell` calls: a spread, which reads a few cells of every node
    /// it visits, computes their ids instead of loading them.
    anc0: u32,
    desc0: u32,
    closed0: u32,
    /// The first cell of `counted`, made the same way.
    counted0: u32,
    closing: Vec<u32>,
    stack: Vec<u32>,
    /// Scratch lists kept between calls: the arcs a change adds, the nodes
    /// it confines, and `extend`'s chips reaching / reached.
    fresh_arcs: Vec<(u32, u32)>,
    look: Vec<u32>,
    ext_from: Vec<(usize, i32)>,
    ext_to: Vec<(usize, i32)>,
    /// Consumers of nodes on one chip tied to one chip ([`SharedTails`]).
    shared: Option<SharedTails>,
}

/// A node a spread reached: it joins `both` when its set on the other side
/// (the row's width of cells from `other`) is not empty, and `look` when
/// that set meets `row` or holds the spread's chip (`bit` of word `word`).
/// Most nodes a spread reaches have an empty set on the other side (in a
/// topological pass, no open node has a fixed descendant): that is asked
/// first, alone.
#[inline]
fn judge(both: &mut NodeList, look: &mut Vec<u32>, v: u32, row: &[u64], (word, bit): (usize, u64), other: u32, s: &Cx) {
    let w = row.len();
    let set = s.cells(other + v * w as u32, w);
    if set.iter().fold(0, |any, &o| any | o) == 0 {
        return;
    }
    both.add(v);
    let meets = set
        .iter()
        .zip(row)
        .enumerate()
        .any(|(k, (&o, &r))| o as u64 & (r | if k == word { bit } else { 0 }) != 0);
    if meets {
        look.push(v);
    }
}

/// Pushes the open neighbours of `u` that `member` holds. Inlined into
/// the sweep's loop over the queue: most nodes waiting there have none
/// left, and as a call the lookup cost more than the answer.
#[inline(always)]
fn open_members_near(u: u32, member: &[bool], s: &Cx, picked: &mut Vec<u32>) {
    let net = s.net();
    for side in [&net.pred[u as usize], &net.succ[u as usize]] {
        for &v in side {
            if member[v as usize] && !s.is_fixed(v) {
                picked.push(v);
            }
        }
    }
}

/// [`judge`] for sets of one word: `ends` is the row with the spread's
/// chip.
#[inline]
fn judge_one(both: &mut NodeList, look: &mut Vec<u32>, v: u32, ends: u64, other: u32, s: &Cx) {
    let set = s.cell(other + v) as u64;
    if set == 0 {
        return;
    }
    both.add(v);
    if set & ends != 0 {
        look.push(v);
    }
}

impl Triangle {
    pub fn build<'p>(cx: &mut Cx, _rule: &'p GroundConstraint) -> Result<Box<dyn Propagator + 'p>, Fail> {
        Ok(Box::new(Triangle::new(cx)))
    }

    fn new(s: &mut Cx) -> Triangle {
        let c = s.chips();
        let counted: Vec<u32> = (0..s.n()).map(|_| s.new_cell(0)).collect();
        let anc: Vec<u32> = (0..s.n() * s.words()).map(|_| s.new_cell(0)).collect();
        let desc: Vec<u32> = (0..s.n() * s.words()).map(|_| s.new_cell(0)).collect();
        let closed: Vec<u32> = (0..2 * s.n()).map(|_| s.new_cell(0)).collect();
        let first = |cells: &[u32]| {
            debug_assert!(cells.windows(2).all(|p| p[1] == p[0] + 1));
            cells.first().copied().unwrap_or(0)
        };
        let (anc0, desc0, closed0) = (first(&anc), first(&desc), first(&closed));
        let counted0 = first(&counted);
        Triangle {
            c,
            counted,
            arcs: HashMap::new(),
            active: Vec::new(),
            dense: vec![NONE; c],
            lp: Vec::new(),
            stride: 0,
            cyclic: false,
            to: vec![0; c * s.words()],
            from: vec![0; c * s.words()],
            far_from: vec![0; c * s.words()],
            far_to: vec![0; c * s.words()],
            arc_list: Vec::new(),
            fresh: false,
            pairs: Vec::new(),
            rows: vec![0; c * s.words()],
            cols: vec![0; c * s.words()],
            both: NodeList::new(s.n()),
            front: NodeList::new(s.n()),
            heads_ok: std::cell::RefCell::new(RowCache::new(c, s.words())),
            tails_ok: std::cell::RefCell::new(RowCache::new(c, s.words())),
            settled: false,
            heads_before: RowCache::new(c, s.words()),
            tails_before: RowCache::new(c, s.words()),
            verdicts: Verdicts::new(c, s.words()),
            merged: Vec::new(),
            by_chip: vec![Vec::new(); 2 * c],
            listed: vec![0; (2 * c).div_ceil(64)],
            picked: Vec::new(),
            w: s.words(),
            anc,
            desc,
            closed,
            anc0,
            desc0,
            closed0,
            counted0,
            closing: Vec::new(),
            stack: Vec::new(),
            fresh_arcs: Vec::new(),
            look: Vec::new(),
            ext_from: Vec::new(),
            ext_to: Vec::new(),
            shared: SharedTails::new(s),
        }
    }

    /// The bitset of `v` in the cells from `first` (`anc0` or `desc0`:
    /// ancestor or descendant chips), on the stack.
    fn set_of<const N: usize>(&self, s: &Cx, first: u32, v: u32) -> ([u64; N], usize) {
        let mut out = [0u64; N];
        let w = self.w.min(N);
        for (o, &c) in out.iter_mut().zip(s.cells(first + v * self.w as u32, w)) {
            *o = c as u64;
        }
        (out, w)
    }

    /// Adds chip `c` to the ancestor (forward) or descendant (backward) sets
    /// reachable from `x`, stopping where it is already known. An open node
    /// that gains `c` and has a set on the other side joins `both`, and
    /// `look` when that side holds `c` or a chip an arc joins to `c` (the
    /// head of an arc from `c` forward, the tail of one into it backward):
    /// only then can its confinement change.
    fn spread(&mut self, x: u32, c: u32, forward: bool, s: &mut Cx) {
        // Sets of one word (packages up to 64 chips) take their own copy,
        // where the cell ids and the other side's test need no loop over
        // the words: the spreads visit a node per new chip and descendant.
        match self.w {
            1 => self.spread_w::<true>(x, c, forward, s),
            _ => self.spread_w::<false>(x, c, forward, s),
        }
    }

    /// [`Triangle::spread`] over sets of one word (`ONE`) or of `self.w`.
    #[inline(always)]
    fn spread_w<const ONE: bool>(&mut self, x: u32, c: u32, forward: bool, s: &mut Cx) {
        let w = if ONE { 1 } else { self.w };
        let (word, bit) = ((c / 64) as usize, 1u64 << (c % 64));
        let net = s.net();
        let (next, mine, other, arcs) = if forward {
            (&net.succ, self.anc0, self.desc0, &self.rows)
        } else {
            (&net.pred, self.desc0, self.anc0, &self.cols)
        };
        let row = &arcs[c as usize * w..(c as usize + 1) * w];
        // Only nodes that lack c and are not closed go on the stack (one
        // that has c was reached before, and so was everything past it;
        // past a closed one every node is closed), and each gets c as it
        // goes on, so none goes on twice (a node below several reached
        // ones was pushed by each). The nodes visited are those of pushing
        // every neighbour; only their order differs, and nothing below
        // depends on it (`look` is confined node by node, from the sets
        // alone; `both` is a set).
        let side = usize::from(forward) as u32;
        let closed = self.closed0 + side;
        let w32 = w as u32;
        let mine = mine + word as u32;
        let lacks = |v: u32, s: &Cx| s.cell(mine + v * w32) as u64 & bit == 0 && s.cell(closed + 2 * v) == 0;
        // One loop for x and the nodes it reaches, so the set below is
        // written once and inlined.
        self.stack.clear();
        let (mut v, mut reached) = (x, false);
        loop {
            for &u in &next[v as usize] {
                if lacks(u, s) {
                    let cell = mine + u * w32;
                    s.set_cell(cell, (s.cell(cell) as u64 | bit) as i64);
                    self.stack.push(u);
                }
            }
            if reached && !s.is_fixed(v) {
                if ONE {
                    judge_one(&mut self.both, &mut self.look, v, row[0] | bit, other, s);
                } else {
                    judge(&mut self.both, &mut self.look, v, row, (word, bit), other, s);
                }
            }
            match self.stack.pop() {
                Some(u) => (v, reached) = (u, true),
                None => break,
            }
        }
    }

    /// Closes x on side 0 (every ancestor counted) or 1 (every
    /// descendant) when it is counted and its inputs (consumers) are
    /// closed, and then the nodes beyond it that this closes. Asked twice
    /// for every node counted, and most often the answer is no at x (in a
    /// topological pass, side 1 waits for the consumers): the cells are
    /// read at ids computed from the first of each run, as in `spread`.
    fn close(&mut self, x: u32, side: usize, s: &mut Cx) {
        let net = s.net();
        let (back, on) = match side {
            0 => (&net.pred, &net.succ),
            _ => (&net.succ, &net.pred),
        };
        let (counted, closed) = (self.counted0, self.closed0 + side as u32);
        let is_closed = |v: u32, s: &Cx| s.cell(closed + 2 * v) != 0;
        let ready = |v: u32, s: &Cx| {
            s.cell(counted + v) != 0 && !is_closed(v, s) && back[v as usize].iter().all(|&p| is_closed(p, s))
        };
        if !ready(x, s) {
            return;
        }
        // Each node closes as it is found ready, so none is pushed twice.
        let mut stack = std::mem::take(&mut self.closing);
        stack.clear();
        s.set_cell(closed + 2 * x, 1);
        stack.push(x);
        while let Some(v) = stack.pop() {
            for &u in &on[v as usize] {
                if ready(u, s) {
                    s.set_cell(closed + 2 * u, 1);
                    stack.push(u);
                }
            }
        }
        self.closing = stack;
    }

    /// Restricts v to the chips every (ancestor chip a, descendant chip b)
    /// pair joined by an arc (or equal) allows: {a, b}.
    fn between(&self, v: u32, s: &mut Cx) -> Result<(), Fail> {
        // Bitsets on the stack, as wide as the package needs: clearing 64
        // words per call cost BERT-large on 36 chips a quarter of its speed.
        match self.w {
            0..=1 => self.between_n::<1>(v, s),
            2..=4 => self.between_n::<4>(v, s),
            5..=16 => self.between_n::<16>(v, s),
            _ => self.between_n::<MAX_WORDS>(v, s),
        }
    }

    fn between_n<const N: usize>(&self, v: u32, s: &mut Cx) -> Result<(), Fail> {
        if s.is_fixed(v) {
            return Ok(());
        }
        let (a_set, w) = self.set_of::<N>(s, self.anc0, v);
        if a_set[..w].iter().all(|&x| x == 0) {
            return Ok(());
        }
        let (d_set, _) = self.set_of::<N>(s, self.desc0, v);
        if d_set[..w].iter().all(|&x| x == 0) {
            return Ok(());
        }
        let mut allowed = [!0u64; N];
        if self.and_arc_pairs::<N>(&a_set[..w], &d_set[..w], &mut allowed[..w]) {
            s.restrict(v, &allowed[..w])?;
        }
        Ok(())
    }

    /// Narrows `allowed` to {a, b} for every chip a of `tails` and b of
    /// `heads` joined by an arc a -> b, or equal; true when there was one.
    /// The pairs are found from the smaller side (a node late in a pass
    /// has chips of many ancestors and few of descendants); meeting them
    /// in another order leaves the same chips.
    #[inline]
    fn and_arc_pairs<const N: usize>(&self, tails: &[u64], heads: &[u64], allowed: &mut [u64]) -> bool {
        let count = |set: &[u64]| set.iter().map(|x| x.count_ones()).sum::<u32>();
        if count(heads) < count(tails) {
            self.and_pairs_from::<N>(heads, tails, &self.cols, allowed)
        } else {
            self.and_pairs_from::<N>(tails, heads, &self.rows, allowed)
        }
    }

    /// [`Triangle::and_arc_pairs`] from the chips a of `near`, with
    /// `lines` the arcs' rows (the heads of arcs from a, when `near` holds
    /// tails) or columns (the tails of arcs into a, when it holds heads).
    #[inline]
    fn and_pairs_from<const N: usize>(&self, near: &[u64], far: &[u64], lines: &[u64], allowed: &mut [u64]) -> bool {
        let w = allowed.len();
        let mut any = false;
        for a in bits(near) {
            // Ends b of arcs with a, and a itself when `far` holds it.
            let line = &lines[a as usize * self.w..a as usize * self.w + w];
            let mut to = [0u64; N];
            for k in 0..w {
                to[k] = line[k] & far[k];
            }
            to[(a / 64) as usize] |= far[(a / 64) as usize] & (1 << (a % 64));
            for b in bits(&to[..w]) {
                let mut pair = [0u64; N];
                pair[(a / 64) as usize] |= 1 << (a % 64);
                pair[(b / 64) as usize] |= 1 << (b % 64);
                for k in 0..w {
                    allowed[k] &= pair[k];
                }
                any = true;
            }
        }
        any
    }

    /// Counts edge (p, q), both ends fixed, into the arcs; true when its arc is new.
    fn count(&mut self, s: &mut Cx, a: u32, b: u32) -> bool {
        if a == b {
            return false;
        }
        let cell = *self.arcs.entry(a * self.c as u32 + b).or_insert_with(|| s.new_cell(0));
        let k = s.cell(cell) + 1;
        s.set_cell(cell, k);
        k == 1
    }

    /// Recomputes longest paths from the arcs, over the chips they touch.
    fn refresh(&mut self, s: &Cx) {
        if self.fresh {
            return;
        }
        let (c, w) = (self.c as u32, self.w);
        for &(a, b) in &self.arc_list {
            self.rows[a as usize * w..(a as usize + 1) * w]
                .iter_mut()
                .for_each(|r| *r = 0);
            self.cols[b as usize * w..(b as usize + 1) * w]
                .iter_mut()
                .for_each(|r| *r = 0);
        }
        for &x in &self.active {
            for m in [&mut self.to, &mut self.from, &mut self.far_from, &mut self.far_to] {
                m[x as usize * w..(x as usize + 1) * w].iter_mut().for_each(|r| *r = 0);
            }
            self.dense[x as usize] = NONE;
        }
        // Rows of inactive chips depend on the active set too.
        self.heads_ok.borrow_mut().forget();
        self.tails_ok.borrow_mut().forget();
        self.active.clear();
        self.arc_list.clear();
        self.arc_list.extend(
            self.arcs
                .iter()
                .filter(|&(_, &cell)| s.cell(cell) > 0)
                .map(|(&k, _)| (k / c, k % c)),
        );
        self.arc_list.sort_unstable();
        for &(a, b) in &self.arc_list {
            self.rows[a as usize * w + b as usize / 64] |= 1 << (b % 64);
            self.cols[b as usize * w + a as usize / 64] |= 1 << (a % 64);
            for x in [a, b] {
                if self.dense[x as usize] == NONE {
                    self.dense[x as usize] = self.active.len() as u32;
                    self.active.push(x);
                }
            }
        }
        let k = self.active.len();
        let mut flow = ChipFlow::new(k);
        for &(a, b) in &self.arc_list {
            flow.add(self.dense[a as usize], self.dense[b as usize]);
        }
        let mut lp = vec![-1; k * k];
        flow.longest_all(&mut lp);
        self.cyclic = lp.iter().any(|&l| l >= k as i32);
        // Rows as long as the chips arcs may touch later, up to all of them.
        self.stride = (2 * k).max(16).min(self.c.max(k));
        self.lp.clear();
        self.lp.resize(self.stride * self.stride, -1);
        for i in 0..k {
            self.lp[i * self.stride..i * self.stride + k].copy_from_slice(&lp[i * k..(i + 1) * k]);
            for j in 0..k {
                self.mark(self.active[i], self.active[j], lp[i * k + j]);
            }
        }
        self.fresh = true;
    }

    /// Records in the bitsets a path of length `len` from x to y.
    fn mark(&mut self, x: u32, y: u32, len: i32) {
        let w = self.w;
        if len >= 1 {
            self.to[y as usize * w + x as usize / 64] |= 1 << (x % 64);
            self.from[x as usize * w + y as usize / 64] |= 1 << (y % 64);
        }
        if len >= 2 {
            self.far_to[y as usize * w + x as usize / 64] |= 1 << (x % 64);
            self.far_from[x as usize * w + y as usize / 64] |= 1 << (y % 64);
        }
    }

    /// Adds new arcs to a fresh, acyclic table in place: a path that uses a
    /// new arc a -> b uses it once, so lp(x, y) grows to lp(x, a) + 1 +
    /// lp(b, y) for x reaching a and y reached from b: O(|X|·|Y|), where
    /// recomputing every pair costs K² walks. False when the table is not
    /// fresh or an arc closes a cycle: the caller recomputes it whole (the
    /// arcs map already holds every arc).
    fn extend(&mut self, arcs: &[(u32, u32)]) -> bool {
        if !self.fresh || self.cyclic {
            return false;
        }
        let w = self.w;
        for &(a, b) in arcs {
            if self.reach(b, a) {
                return false;
            }
            for x in [a, b] {
                if self.dense[x as usize] == NONE {
                    self.activate(x);
                }
            }
            let st = self.stride;
            let (i, j) = (self.dense[a as usize] as usize, self.dense[b as usize] as usize);
            let k = self.active.len();
            let mut from = std::mem::take(&mut self.ext_from);
            let mut to = std::mem::take(&mut self.ext_to);
            from.clear();
            to.clear();
            from.extend((0..k).filter_map(|x| match x == i {
                true => Some((x, 0)),
                false => (self.lp[x * st + i] >= 1).then(|| (x, self.lp[x * st + i])),
            }));
            to.extend((0..k).filter_map(|y| match y == j {
                true => Some((y, 0)),
                false => (self.lp[j * st + y] >= 1).then(|| (y, self.lp[j * st + y])),
            }));
            for &(x, dx) in &from {
                for &(y, dy) in &to {
                    let cell = &mut self.lp[x * st + y];
                    if *cell < dx + 1 + dy {
                        *cell = dx + 1 + dy;
                        self.mark(self.active[x], self.active[y], dx + 1 + dy);
                    }
                }
            }
            self.ext_from = from;
            self.ext_to = to;
            self.rows[a as usize * w + b as usize / 64] |= 1 << (b % 64);
            self.cols[b as usize * w + a as usize / 64] |= 1 << (a % 64);
            self.arc_list.push((a, b));
        }
        self.heads_ok.borrow_mut().forget();
        self.tails_ok.borrow_mut().forget();
        true
    }

    /// Gives chip `x` the next dense index, widening `lp` when it is full.
    fn activate(&mut self, x: u32) {
        let k = self.active.len();
        if k == self.stride {
            let wider = (2 * k).max(16).min(self.c.max(k + 1));
            let mut lp = vec![-1; wider * wider];
            for i in 0..k {
                lp[i * wider..i * wider + k].copy_from_slice(&self.lp[i * k..(i + 1) * k]);
            }
            self.lp = lp;
            self.stride = wider;
        }
        self.dense[x as usize] = k as u32;
        self.active.push(x);
    }

    /// Longest path from a to b: 0 when a == b, -1 when none, at least 2
    /// when it can go round a cycle.
    fn lp(&self, a: u32, b: u32) -> i32 {
        if a == b {
            return 0;
        }
        let (i, j) = (self.dense[a as usize], self.dense[b as usize]);
        if i == NONE || j == NONE {
            return -1;
        }
        self.lp[i as usize * self.stride + j as usize]
    }

    fn reach(&self, a: u32, b: u32) -> bool {
        a == b || self.lp(a, b) >= 1
    }

    /// Prunes the chips of unfixed node v that would break the rule given its fixed neighbours.
    fn prune(&mut self, v: u32, s: &mut Cx) -> Result<(), Fail> {
        let r = match s.words() {
            0..=1 => self.prune_n::<1>(v, s),
            2..=4 => self.prune_n::<4>(v, s),
            5..=16 => self.prune_n::<16>(v, s),
            _ => self.prune_n::<MAX_WORDS>(v, s),
        };
        if s.is_fixed(v) {
            self.front.add_open_neighbours(v, s);
        }
        r
    }

    /// The chips of v's fixed inputs (pc) and consumers (sc) as bitsets on
    /// the stack: each chip once, in increasing order, without a sort.
    fn prune_n<const N: usize>(&self, v: u32, s: &mut Cx) -> Result<(), Fail> {
        let net = s.net();
        let w = s.words().min(N);
        let (mut pc, mut sc) = ([0u64; N], [0u64; N]);
        let mut any = false;
        for &p in &net.pred[v as usize] {
            if let Some(a) = s.value(p) {
                set_bit(&mut pc, a);
                any = true;
            }
        }
        for &q in &net.succ[v as usize] {
            if let Some(b) = s.value(q) {
                set_bit(&mut sc, b);
                any = true;
            }
        }
        if !any {
            return Ok(());
        }
        let mut allowed = [0u64; N];
        allowed[..w].copy_from_slice(&s.dom(v).words[..w]);
        for a in bits(&pc[..w]) {
            self.and_heads::<N>(a, &mut allowed[..w]);
        }
        for b in bits(&sc[..w]) {
            self.and_tails::<N>(b, &mut allowed[..w]);
        }
        // a -> c -> b is a path of two: only c = a or c = b when the arc
        // a -> b exists (or a == b, a cycle). Another long path a ~> b is no
        // reason: two paths of two or more may coexist when no arc shortcuts them.
        // (`rows` holds the arcs: the table is fresh whenever a node is pruned.)
        self.and_arc_pairs::<N>(&pc[..w], &sc[..w], &mut allowed[..w]);
        s.restrict(v, &allowed[..w])?;
        Ok(())
    }

    /// Prunes every open node next to a fixed one, in node order, after
    /// node `x` was counted (`NONE`: none).
    fn prune_next_to_fixed(&mut self, x: u32, s: &mut Cx) -> Result<(), Fail> {
        let net = s.net();
        let every = !self.settled || self.front.stale;
        if self.front.stale {
            self.front.rebuild(s, |v| {
                net.pred[v as usize].iter().any(|&p| s.is_fixed(p))
                    || net.succ[v as usize].iter().any(|&w| s.is_fixed(w))
            });
            self.reindex(s);
        }
        self.verdicts.next_sweep();
        for (i, &(a, b)) in self.fresh_arcs.iter().enumerate() {
            let bit = 1u64 << i.min(63);
            self.verdicts.fresh_tail[a as usize] |= bit;
            self.verdicts.fresh_head[b as usize] |= bit;
        }
        let r = if every {
            self.sweep_all(s)
        } else {
            self.sweep_indexed(x, s)
        };
        for &(a, b) in &self.fresh_arcs {
            self.verdicts.fresh_tail[a as usize] = 0;
            self.verdicts.fresh_head[b as usize] = 0;
        }
        self.settled = r.is_ok();
        r
    }

    /// Prunes every open node of `front`, in node order.
    fn sweep_all(&mut self, s: &mut Cx) -> Result<(), Fail> {
        self.front.drop_fixed(s);
        let mut front = std::mem::take(&mut self.front.nodes);
        sort_after_sorted_prefix(&mut front, &mut self.merged);
        let r = front.iter().try_for_each(|&v| match s.is_fixed(v) {
            true => Ok(()),
            false => self.prune(v, s),
        });
        // Nodes `prune` fixed joined `front` meanwhile (after the sorted
        // ones, for the next sweep to sort only them).
        let joined = std::mem::replace(&mut self.front.nodes, front);
        self.front.nodes.extend(joined);
        r
    }

    /// Prunes, in node order, the open nodes of `front` the new arcs
    /// affect, found through `by_chip` and the nodes not yet counted.
    fn sweep_indexed(&mut self, x: u32, s: &mut Cx) -> Result<(), Fail> {
        let mut picked = std::mem::take(&mut self.picked);
        picked.clear();
        // Only nodes of `front` are pruned (the rest are dropped below):
        // the neighbours of the nodes not yet counted, met again at every
        // sweep while they wait in the queue, are left out at once.
        let member = &self.front.member;
        if x != NONE {
            open_members_near(x, member, s, &mut picked);
        }
        let counted = self.counted0;
        for &u in s.queued() {
            if s.is_fixed(u) && s.cell(counted + u) == 0 {
                open_members_near(u, member, s, &mut picked);
            }
        }
        for k in 0..self.listed.len() {
            let mut word = self.listed[k];
            while word != 0 {
                let i = k * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                let list = &mut self.by_chip[i];
                list.retain(|&v| !s.is_fixed(v));
                if list.is_empty() {
                    self.listed[k] &= !(1 << (i % 64));
                    continue;
                }
                let (c, input) = ((i / 2) as u32, i % 2 == 1);
                let hot =
                    (input && self.verdicts.fresh_tail[c as usize] != 0) || self.lost(c, input).iter().any(|&l| l != 0);
                if hot {
                    picked.extend_from_slice(&self.by_chip[i]);
                }
            }
        }
        // Only nodes of `front` as it was before this sweep (those that
        // join as `prune` fixes nodes wait for the next).
        let member = &self.front.member;
        picked.retain(|&v| member[v as usize]);
        picked.sort_unstable();
        picked.dedup();
        #[cfg(test)]
        if AUDIT.with(|a| a.get()) {
            let others: Vec<u32> = (0..s.n() as u32)
                .filter(|&v| self.front.member[v as usize] && !s.is_fixed(v))
                .filter(|&v| picked.binary_search(&v).is_err())
                .collect();
            let missed: Vec<u32> = others.into_iter().filter(|&v| self.affected(v, x, s)).collect();
            assert!(missed.is_empty(), "affected nodes the index missed: {missed:?}");
        }
        #[cfg(test)]
        {
            let open = self.front.nodes.iter().filter(|&&v| !s.is_fixed(v)).count();
            SKIPPED.with(|k| k.set(k.get() + open.saturating_sub(picked.len())));
        }
        let r = picked.iter().try_for_each(|&v| match s.is_fixed(v) {
            false if self.affected(v, x, s) => self.prune(v, s),
            _ => Ok(()),
        });
        self.picked = picked;
        r
    }

    /// Adds the open neighbours of counted node `u`, on chip `c`, to `by_chip`.
    fn index(&mut self, u: u32, c: u32, s: &Cx) {
        let net = s.net();
        for (set, side) in [(&net.pred[u as usize], 0), (&net.succ[u as usize], 1)] {
            let i = 2 * c as usize + side;
            let list = &mut self.by_chip[i];
            list.extend(set.iter().copied().filter(|&v| !s.is_fixed(v)));
            if !list.is_empty() {
                self.listed[i / 64] |= 1 << (i % 64);
            }
        }
    }

    /// `by_chip` from the counted nodes.
    fn reindex(&mut self, s: &Cx) {
        self.by_chip.iter_mut().for_each(Vec::clear);
        self.listed.fill(0);
        for u in 0..s.n() as u32 {
            if s.cell(self.counted[u as usize]) != 0 {
                if let Some(c) = s.value(u) {
                    self.index(u, c, s);
                }
            }
        }
    }

    /// Whether the latest new arcs (`fresh_arcs`) can change what `prune`
    /// leaves of open node v, pruned last under the arcs before them (so
    /// that its domain lies within the rows of then): a fixed neighbour not
    /// yet counted or just counted (`x`: v may not have been pruned with
    /// it), a chip of v's domain that the row of a fixed neighbour's chip
    /// lost, or a new arc from an input's chip to a consumer's (which
    /// confines v to its ends).
    fn affected(&mut self, v: u32, x: u32, s: &Cx) -> bool {
        let net = s.net();
        let w = self.w;
        let dom = &s.dom(v).words[..w];
        // Bit i: v has an input on the tail (or a consumer on the head)
        // of fresh arc i; a new arc past the 64th counts as met.
        let (mut tails, mut heads) = (0u64, 0u64);
        for (set, input) in [(&net.pred[v as usize], true), (&net.succ[v as usize], false)] {
            for &u in set {
                let Some(c) = s.value(u) else { continue };
                if u == x || s.cell(self.counted[u as usize]) == 0 {
                    return true;
                }
                if self.lost(c, input).iter().zip(dom).any(|(l, d)| l & d != 0) {
                    return true;
                }
                match input {
                    true => tails |= self.verdicts.fresh_tail[c as usize],
                    false => heads |= self.verdicts.fresh_head[c as usize],
                }
            }
        }
        let met = tails & heads;
        met != 0
            && self
                .fresh_arcs
                .iter()
                .enumerate()
                .any(|(i, &(a, b))| met >> i.min(63) & 1 == 1 && bits(dom).any(|c| c != a && c != b))
    }

    /// The chips chip c's row of `heads_ok` (`tails_ok` when not `heads`)
    /// lost to the latest arcs: the old row minus the new one, or every
    /// chip when the old row was not computed.
    #[inline]
    fn lost(&mut self, c: u32, heads: bool) -> &[u64] {
        let w = self.w;
        let i = 2 * c as usize + heads as usize;
        if self.verdicts.stamp[i] != self.verdicts.now {
            self.find_lost(c, heads);
        }
        &self.verdicts.lost[i * w..(i + 1) * w]
    }

    #[inline(never)]
    fn find_lost(&mut self, c: u32, heads: bool) {
        // The row on the stack, as wide as the package needs: clearing the
        // 64 words of the widest at every call outweighed the row's work.
        match self.w {
            0..=4 => self.find_lost_n::<4>(c, heads),
            5..=16 => self.find_lost_n::<16>(c, heads),
            _ => self.find_lost_n::<MAX_WORDS>(c, heads),
        }
    }

    fn find_lost_n<const N: usize>(&mut self, c: u32, heads: bool) {
        let w = self.w;
        let i = 2 * c as usize + heads as usize;
        let mut now = [0u64; N];
        self.ends_row(c, heads, &mut now[..w]);
        let before = if heads { &self.heads_before } else { &self.tails_before };
        let lost = &mut self.verdicts.lost[i * w..(i + 1) * w];
        match before.row(c, w) {
            Some(old) => {
                for k in 0..w {
                    lost[k] = old[k] & !now[k];
                }
            }
            None => lost.iter_mut().for_each(|l| *l = !0),
        }
        self.verdicts.stamp[i] = self.verdicts.now;
    }

    /// Chip c's row of `heads_ok` (or `tails_ok`) under the current arcs, into `out`.
    fn ends_row(&self, c: u32, heads: bool, out: &mut [u64]) {
        out.iter_mut().for_each(|x| *x = !0);
        match (self.w, heads) {
            (0..=1, true) => self.and_heads::<1>(c, out),
            (0..=1, false) => self.and_tails::<1>(c, out),
            (2..=4, true) => self.and_heads::<4>(c, out),
            (2..=4, false) => self.and_tails::<4>(c, out),
            (5..=16, true) => self.and_heads::<16>(c, out),
            (5..=16, false) => self.and_tails::<16>(c, out),
            (_, true) => self.and_heads::<MAX_WORDS>(c, out),
            (_, false) => self.and_tails::<MAX_WORDS>(c, out),
        }
    }

    /// Intersects `allowed` with the chips c for which an arc a -> c is
    /// fine: c == a, an existing arc, or a new one that shortcuts nothing.
    /// A new arc a -> c shortcuts an arc x -> y when x reaches a and c
    /// reaches y (or is y): ys, the heads of arcs out of a and of the chips
    /// reaching it. And it is itself shortcut when c reaches a (a cycle) or
    /// a path of two arcs or more already goes a ~> c.
    fn and_heads<const N: usize>(&self, a: u32, allowed: &mut [u64]) {
        self.and_ends::<N>(&self.heads_ok, a, [&self.rows, &self.to, &self.far_from], allowed);
    }

    /// The mirror image: the chips c for which an arc c -> b is fine.
    fn and_tails<const N: usize>(&self, b: u32, allowed: &mut [u64]) {
        self.and_ends::<N>(&self.tails_ok, b, [&self.cols, &self.from, &self.far_to], allowed);
    }

    /// [`Triangle::and_heads`] over `arcs` (rows of arc heads), `back` (the
    /// chips reaching each) and `far` (reached by two arcs or more), or
    /// with the three mirrored, [`Triangle::and_tails`]; rows kept in `cache`.
    fn and_ends<const N: usize>(
        &self,
        cache: &std::cell::RefCell<RowCache>,
        a: u32,
        [arcs, back, far]: [&[u64]; 3],
        allowed: &mut [u64],
    ) {
        let mut cache = cache.borrow_mut();
        let w = self.w;
        let at = |x: u32| x as usize * w..(x as usize + 1) * w;
        if cache.stamp[a as usize] != cache.now {
            let mut ys = [0u64; N];
            ys[..w].copy_from_slice(&arcs[at(a)]);
            for x in bits(&back[at(a)]) {
                or_into(&mut ys[..w], &arcs[at(x)]);
            }
            let mut bad = ys;
            or_into(&mut bad[..w], &back[at(a)]);
            or_into(&mut bad[..w], &far[at(a)]);
            for y in bits(&ys[..w]) {
                or_into(&mut bad[..w], &back[at(y)]);
            }
            let row = &mut cache.rows[at(a)];
            for (k, r) in row.iter_mut().enumerate() {
                *r = !bad[k] | arcs[at(a).start + k];
            }
            set_bit(row, a);
            let now = cache.now;
            cache.stamp[a as usize] = now;
        }
        for (x, r) in allowed.iter_mut().zip(&cache.rows[at(a)]) {
            *x &= r;
        }
    }

    fn check_all(&self, s: &Cx) -> Result<(), Fail> {
        if self.arc_list.iter().any(|&(a, b)| self.lp(a, b) != 1) {
            return Err(s.fail());
        }
        Ok(())
    }
}

#[cfg(test)]
impl Triangle {
    /// Panics unless, recomputed from the counted nodes: a node is closed
    /// on side 0 (1) exactly when it and all its ancestors (descendants)
    /// are counted, and every node not closed on side 0 (1) has as
    /// descendant (ancestor) chips those of its counted descendants
    /// (ancestors).
    fn audit(&self, s: &Cx) {
        let (net, n, w) = (s.net(), s.n(), self.w);
        let counted = |v: u32| s.cell(self.counted[v as usize]) != 0;
        let beyond = |v: u32, next: &mcm_core::graph::Csr<u32>| {
            let mut seen = vec![false; n];
            let mut stack: Vec<u32> = next[v as usize].to_vec();
            while let Some(u) = stack.pop() {
                if !std::mem::replace(&mut seen[u as usize], true) {
                    stack.extend(next[u as usize].iter().copied());
                }
            }
            (0..n as u32).filter(move |&u| seen[u as usize])
        };
        for (side, back, ahead, sets) in [
            (0, &net.pred, &net.succ, &self.desc),
            (1, &net.succ, &net.pred, &self.anc),
        ] {
            for v in 0..n as u32 {
                let closed = counted(v) && beyond(v, back).all(counted);
                assert_eq!(
                    s.cell(self.closed[2 * v as usize + side]) != 0,
                    closed,
                    "node {v}, side {side}"
                );
                if closed {
                    continue;
                }
                let mut want = vec![0u64; w];
                for u in beyond(v, ahead).filter(|&u| counted(u)) {
                    set_bit(&mut want, s.value(u).expect("a counted node is fixed"));
                }
                let have: Vec<u64> = (0..w).map(|k| s.cell(sets[v as usize * w + k]) as u64).collect();
                assert_eq!(have, want, "the chips beyond node {v} on side {side}");
            }
        }
    }
}

#[cfg(test)]
impl Triangle {
    /// Panics unless the table, when fresh, holds the arcs of the counted
    /// edges and, between every two chips they touch, the longest path a
    /// recomputation from those arcs finds ([`Triangle::extend`] grew it
    /// in place, and `complete` trusts it).
    fn audit_table(&self, s: &Cx) {
        if !self.fresh {
            return;
        }
        let mut arcs: Vec<(u32, u32)> = self
            .arcs
            .iter()
            .filter(|&(_, &cell)| s.cell(cell) > 0)
            .map(|(&k, _)| (k / self.c as u32, k % self.c as u32))
            .collect();
        arcs.sort_unstable();
        let mut listed = self.arc_list.clone();
        listed.sort_unstable();
        assert_eq!(listed, arcs, "the table's arcs");
        let mut flow = ChipFlow::new(self.c);
        arcs.iter().for_each(|&(a, b)| flow.add(a, b));
        let chips: Vec<u32> = arcs.iter().flat_map(|&(a, b)| [a, b]).collect();
        // A cycle has two chips or more (an arc is no loop), and the path
        // between two of them can go round it.
        let cyclic = chips
            .iter()
            .any(|&a| chips.iter().any(|&b| flow.longest(a, b) >= self.c as i64));
        assert_eq!(self.cyclic, cyclic, "the table's cycle flag");
        if self.cyclic {
            return;
        }
        for &a in &chips {
            for &b in &chips {
                assert_eq!(self.lp(a, b) as i64, flow.longest(a, b), "the longest path {a} ~> {b}");
            }
        }
    }
}

impl Propagator for Triangle {
    fn watches(&self, n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }

    fn on_change(&mut self, x: u32, s: &mut Cx) -> Result<(), Fail> {
        if let Some(t) = &mut self.shared {
            t.on_change(x, s)?;
        }
        let net = s.net();
        let Some(cx) = s.value(x) else { return Ok(()) };
        if s.cell(self.counted[x as usize]) != 0 {
            return Ok(());
        }
        s.set_cell(self.counted[x as usize], 1);
        self.close(x, 0, s);
        self.close(x, 1, s);
        let mut new_arc = false;
        // The arcs of x's edges to fixed nodes, consumers first (two plain
        // loops: a chain of filtered iterators cost twice the pushes).
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        for &w in &net.succ[x as usize] {
            if let Some(b) = s.value(w) {
                pairs.push((cx, b));
            }
        }
        for &p in &net.pred[x as usize] {
            if let Some(a) = s.value(p) {
                pairs.push((a, cx));
            }
        }
        let mut fresh_arcs = std::mem::take(&mut self.fresh_arcs);
        fresh_arcs.clear();
        for &(a, b) in &pairs {
            if self.count(s, a, b) {
                new_arc = true;
                fresh_arcs.push((a, b));
            }
        }
        self.pairs = pairs;
        if new_arc && self.settled {
            // Swapped rather than copied: the new arcs make every row of
            // `heads_ok` and `tails_ok` stale (below, `extend` or `refresh`
            // forgets them), so what they hold after the swap is never read.
            std::mem::swap(&mut self.heads_before, self.heads_ok.get_mut());
            std::mem::swap(&mut self.tails_before, self.tails_ok.get_mut());
        }
        if new_arc && !self.extend(&fresh_arcs) {
            self.fresh = false;
        }
        self.refresh(s);
        self.front.add_open_neighbours(x, s);
        self.index(x, cx, s);
        self.look.clear();
        self.spread(x, cx, true, s);
        self.spread(x, cx, false, s);
        #[cfg(test)]
        if AUDIT.with(|a| a.get()) {
            self.audit(s);
            self.audit_table(s);
        }
        let mut look = std::mem::take(&mut self.look);
        if new_arc {
            // Every node between the ends of a new arc may be affected.
            let has = |cells: &[u32], v: u32, chip: u32| -> bool {
                let cell = cells[v as usize * self.w + (chip / 64) as usize];
                (s.cell(cell) as u64) >> (chip % 64) & 1 == 1
            };
            if self.both.stale {
                let (anc, desc, w) = (&self.anc, &self.desc, self.w);
                let set = |cells: &[u32], v: u32| (0..w).any(|k| s.cell(cells[v as usize * w + k]) != 0);
                self.both.rebuild(s, |v| set(anc, v) && set(desc, v));
            }
            self.both.drop_fixed(s);
            let from = look.len();
            look.extend(self.both.nodes.iter().copied().filter(|&v| {
                fresh_arcs
                    .iter()
                    .any(|&(a, b)| has(&self.anc, v, a) && has(&self.desc, v, b))
            }));
            look[from..].sort_unstable();
        }
        let confined = look.iter().try_for_each(|&v| self.between(v, s));
        self.look = look;
        self.fresh_arcs = fresh_arcs;
        confined?;
        if new_arc {
            self.check_all(s)?;
            // A new arc can rule out chips anywhere next to a fixed node.
            self.prune_next_to_fixed(x, s)?;
        } else {
            self.refresh(s);
            for &v in net.succ[x as usize].iter().chain(&net.pred[x as usize]) {
                if !s.is_fixed(v) {
                    self.prune(v, s)?;
                }
            }
        }
        Ok(())
    }

    /// The table as it stands: between recomputations `extend` keeps it
    /// equal to one (the tests audit it after every change), and a
    /// recomputation of every longest path here cost a pass on GPT-2 XL as
    /// much as a twelfth of its time.
    fn complete(&mut self, s: &Cx) -> Result<(), Fail> {
        self.refresh(s);
        self.check_all(s)
    }

    /// Arcs, ancestor and descendant chips rebuilt from the fixed nodes;
    /// then the rule checked, and every open node confined and pruned.
    fn propagate_from_scratch(&mut self, s: &mut Cx) -> Result<(), Fail> {
        let n = s.n();
        for &cell in self.arcs.values() {
            s.set_cell(cell, 0);
        }
        for k in 0..n * self.w {
            s.set_cell(self.anc[k], 0);
            s.set_cell(self.desc[k], 0);
        }
        let net = s.net();
        for e in net.graph.placed_edges() {
            if let (Some(a), Some(b)) = (s.value(e.src), s.value(e.dst)) {
                self.count(s, a, b);
            }
        }
        for x in 0..n as u32 {
            s.set_cell(self.counted[x as usize], i64::from(s.is_fixed(x)));
            s.set_cell(self.closed[2 * x as usize], 0);
            s.set_cell(self.closed[2 * x as usize + 1], 0);
        }
        for x in 0..n as u32 {
            self.close(x, 0, s);
            self.close(x, 1, s);
        }
        for x in 0..n as u32 {
            if let Some(cx) = s.value(x) {
                self.spread(x, cx, true, s);
                self.spread(x, cx, false, s);
            }
        }
        self.look.clear();
        self.both.stale = true;
        self.front.stale = true;
        self.settled = false;
        self.fresh = false;
        self.refresh(s);
        self.check_all(s)?;
        for v in 0..n as u32 {
            self.between(v, s)?;
        }
        self.prune_next_to_fixed(NONE, s)?;
        match &mut self.shared {
            Some(t) => t.propagate_from_scratch(s),
            None => Ok(()),
        }
    }

    fn on_backtrack(&mut self) {
        self.fresh = false;
        self.settled = false;
        self.both.stale = true;
        self.front.stale = true;
    }
}
