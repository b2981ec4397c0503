//! Nodes fed from one chip: if s and t each have an input fixed on chip a,
//! and s reaches t in the graph, then s is on a, or t is on a, or both are
//! on the same chip. Otherwise the arcs a -> chip(s) and a -> chip(t) exist,
//! and the walk a -> chip(s) ~> chip(t) is a second, longer way from a to
//! chip(t) (or goes round a cycle).
//!
//! This is what dooms a search that places weights first: two weights put
//! on one chip tie their consumers to one chip, however far apart their
//! layers are; with a rule that bounds those consumers differently (an edge
//! span, a budget), the choice fails at once instead of hundreds of
//! decisions later.
//!
//! Per chip a, the nodes with an input fixed on a (`all`), and among them
//! those that can no longer go to a (`free`), are append-only lists with
//! trailed lengths. A free node takes the chips of every node of `all` it
//! is ordered with (reached or reaching), besides a; a node that may still
//! go to a takes those of the free ones. Each change of a member re-reads
//! its chip's lists, so incremental and from-scratch propagation agree.

use crate::propagator::Cx;
use crate::store::Fail;

/// Graphs up to this many nodes get the rule (the reachability matrix takes
/// n² bits: 8 MiB here); larger ones go without it, which stays sound.
const MAX_NODES: usize = 8192;

/// One append-only list of nodes with its trailed length.
struct List {
    items: Vec<u32>,
    len: u32,
}

impl List {
    fn new(cx: &mut Cx) -> List {
        List {
            items: Vec::new(),
            len: cx.new_cell(0),
        }
    }

    fn get<'s>(&'s self, cx: &Cx) -> &'s [u32] {
        &self.items[..cx.cell(self.len) as usize]
    }

    fn push(&mut self, cx: &mut Cx, x: u32) {
        let k = cx.cell(self.len) as usize;
        self.items.truncate(k);
        self.items.push(x);
        cx.set_cell(self.len, k as i64 + 1);
    }
}

pub(super) struct SharedTails {
    /// `reach[u * nw..]`: the nodes u reaches by one or more edges.
    reach: Vec<u64>,
    nw: usize,
    all: Vec<List>,
    free: Vec<List>,
    /// Per node, 1 + the chip whose `free` list holds it (0: none), trailed:
    /// a node is listed there once however often its domain changes.
    freed: Vec<u32>,
    chips: Vec<u32>,
    mask: Vec<u64>,
}

impl SharedTails {
    /// `None` for graphs past [`MAX_NODES`].
    pub fn new(cx: &mut Cx) -> Option<SharedTails> {
        let n = cx.n();
        if n > MAX_NODES || n == 0 {
            return None;
        }
        let nw = n.div_ceil(64);
        let net = cx.net();
        let mut reach = vec![0u64; n * nw];
        // Successors before their predecessors: a reverse topological order.
        for &v in net.graph.topological_order().iter().rev() {
            let Some(u) = net.graph.decision_of(v) else { continue };
            let u = u as usize;
            for &w in &net.succ[u] {
                let w = w as usize;
                reach[u * nw + w / 64] |= 1 << (w % 64);
                for k in 0..nw {
                    let r = reach[w * nw + k];
                    reach[u * nw + k] |= r;
                }
            }
        }
        let c = cx.chips();
        Some(SharedTails {
            reach,
            nw,
            all: (0..c).map(|_| List::new(cx)).collect(),
            free: (0..c).map(|_| List::new(cx)).collect(),
            freed: (0..n).map(|_| cx.new_cell(0)).collect(),
            chips: Vec::new(),
            mask: vec![0; cx.words()],
        })
    }

    fn reaches(&self, u: u32, v: u32) -> bool {
        self.reach[u as usize * self.nw + v as usize / 64] >> (v % 64) & 1 == 1
    }

    fn ordered(&self, u: u32, v: u32) -> bool {
        u != v && (self.reaches(u, v) || self.reaches(v, u))
    }

    /// `x`'s domain changed: x joins the lists of the chips its inputs are
    /// fixed on (as it may have left one's chip, it may join `free`), and
    /// when x is fixed its consumers join its chip's list; then each is
    /// paired with the members of those lists.
    pub fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        let net = cx.net();
        if let Some(a) = cx.value(x) {
            for &t in &net.succ[x as usize] {
                if cx.value(t) != Some(a) {
                    self.all[a as usize].push(cx, t);
                    self.settle(t, a, cx)?;
                }
            }
        }
        // Most nodes have their fixed inputs on one chip (or none): that
        // chip is settled without the list, its sort and its dedup.
        let mut one = None;
        let mut several = false;
        for &p in &net.pred[x as usize] {
            match (cx.value(p), one) {
                (None, _) => {}
                (Some(a), None) => one = Some(a),
                (Some(a), Some(b)) => {
                    if a != b {
                        several = true;
                        break;
                    }
                }
            }
        }
        if !several {
            return match one {
                Some(a) => self.settle(x, a, cx),
                None => Ok(()),
            };
        }
        let mut chips = std::mem::take(&mut self.chips);
        chips.clear();
        chips.extend(net.pred[x as usize].iter().filter_map(|&p| cx.value(p)));
        chips.sort_unstable();
        chips.dedup();
        let r = chips.iter().try_for_each(|&a| self.settle(x, a, cx));
        self.chips = chips;
        r
    }

    /// Marks `x` free of chip a when it is, then narrows x and the members
    /// of a's lists ordered with it. The list is read in place (narrowing
    /// changes domains, never the lists).
    fn settle(&mut self, x: u32, a: u32, cx: &mut Cx) -> Result<(), Fail> {
        let x_free = !cx.holds(x, a);
        if x_free && cx.cell(self.freed[x as usize]) != a as i64 + 1 {
            self.free[a as usize].push(cx, x);
            cx.set_cell(self.freed[x as usize], a as i64 + 1);
        }
        let len = match x_free {
            true => self.all[a as usize].get(cx).len(),
            false => self.free[a as usize].get(cx).len(),
        };
        for i in 0..len {
            let list = if x_free { &self.all } else { &self.free };
            let s = list[a as usize].items[i];
            if self.ordered(x, s) {
                self.pair(x, s, a, cx)?;
            }
        }
        Ok(())
    }

    /// s on a, t on a, or s and t on one chip. Marked for inlining into
    /// `settle`'s loop over a list, as `narrow` is: both run per member.
    #[inline]
    fn pair(&mut self, s: u32, t: u32, a: u32, cx: &mut Cx) -> Result<(), Fail> {
        let (s_free, t_free) = (!cx.holds(s, a), !cx.holds(t, a));
        if t_free {
            self.narrow(s, t, a, !s_free, cx)?;
        }
        if s_free {
            self.narrow(t, s, a, !t_free, cx)?;
        }
        Ok(())
    }

    /// Restricts `x` to the chips of `by`, and to a too when `keep_a`.
    /// Most pairs are met again at every change of a member with nothing
    /// left to narrow: that is asked first, reading the two domains, before
    /// a mask is built and handed to the store.
    #[inline]
    fn narrow(&mut self, x: u32, by: u32, a: u32, keep_a: bool, cx: &mut Cx) -> Result<(), Fail> {
        let (word, bit) = ((a / 64) as usize, if keep_a { 1u64 << (a % 64) } else { 0 });
        if cx.words() == 1 {
            let (d, b) = (cx.word(x, 0), cx.word(by, 0) | bit);
            if d & !b == 0 {
                return Ok(());
            }
            cx.restrict(x, &[b])?;
            return Ok(());
        }
        let within = cx
            .words_of(x)
            .iter()
            .zip(cx.words_of(by))
            .enumerate()
            .all(|(k, (&d, &b))| d & !(b | if k == word { bit } else { 0 }) == 0);
        if within {
            return Ok(());
        }
        self.mask.copy_from_slice(cx.dom(by).words);
        if keep_a {
            self.mask[(a / 64) as usize] |= 1 << (a % 64);
        }
        cx.restrict(x, &self.mask)?;
        Ok(())
    }

    /// The lists rebuilt from the fixed nodes, and every pair narrowed once
    /// (the caller repeats until nothing changes).
    pub fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        for l in self.all.iter().chain(&self.free) {
            cx.set_cell(l.len, 0);
        }
        for &f in &self.freed {
            cx.set_cell(f, 0);
        }
        let net = cx.net();
        for x in 0..cx.n() as u32 {
            let Some(a) = cx.value(x) else { continue };
            for &t in &net.succ[x as usize] {
                if cx.value(t) != Some(a) {
                    self.all[a as usize].push(cx, t);
                    if !cx.dom(t).contains(a) && cx.cell(self.freed[t as usize]) != a as i64 + 1 {
                        self.free[a as usize].push(cx, t);
                        cx.set_cell(self.freed[t as usize], a as i64 + 1);
                    }
                }
            }
        }
        for a in 0..self.all.len() as u32 {
            let members: Vec<u32> = self.all[a as usize].get(cx).to_vec();
            for (i, &s) in members.iter().enumerate() {
                for &t in &members[i + 1..] {
                    if self.ordered(s, t) {
                        self.pair(s, t, a, cx)?;
                    }
                }
            }
        }
        Ok(())
    }
}
