//! `triangle_dependency`: a flow between two chips may not coexist with a
//! longer path between them. The chip flow graph is kept from the edges
//! whose two ends are fixed (arc counts are trailed); its longest paths are
//! recomputed when an arc appears, which happens at most C^2 times along a
//! branch. Candidates of nodes next to fixed ones are pruned when the arcs
//! they would add close a shortcut or a cycle.
//!
//! Beyond neighbours: each node knows the chips of its fixed ancestors (A)
//! and fixed descendants (D), kept as trailed bitsets. A node v between a
//! node on chip a and one on chip b, where the arc a -> b exists, can only
//! go to a or b: anywhere else the walk a ~> v ~> b is a second, longer path
//! (or a cycle when a == b). This stops random-order search from filling
//! the inside of a residual block with chips that doom it.

use super::{Ctx, Propagator};
use crate::domain::bits;
use crate::store::{Fail, Store};

pub struct Triangle {
    constraint: usize,
    c: usize,
    counted: Vec<u32>,
    /// Trailed number of fixed edges realising arc a -> b, at a * C + b.
    arcs: Vec<u32>,
    /// Longest path lengths over the current arcs (-1: none; C: via a cycle),
    /// valid while `fresh`.
    lp: Vec<i32>,
    arc_list: Vec<(u32, u32)>,
    fresh: bool,
    /// `arc_ok` answers for the current arcs: 0 unknown, 1 ok, 2 not.
    ok_memo: std::cell::RefCell<Vec<u8>>,
    pc: Vec<u32>,
    sc: Vec<u32>,
    pairs: Vec<(u32, u32)>,
    /// Arcs as bitset rows (`rows[a * W..]`: the heads of arcs from a), valid while `fresh`.
    rows: Vec<u64>,
    /// The tails of arcs into b, at `cols[b * W..]`.
    cols: Vec<u64>,
    /// Nodes whose ancestor (forward) or descendant set just gained a chip.
    touched_back: Vec<u32>,
    /// Cached: chips c that may head a new arc a -> c (row a), or tail a new
    /// arc c -> b (row b), under the current arcs; built on demand.
    heads_ok: std::cell::RefCell<Vec<Option<Vec<u64>>>>,
    tails_ok: std::cell::RefCell<Vec<Option<Vec<u64>>>>,
    w: usize,
    /// Trailed bitsets: chips of fixed ancestors / descendants, W cells per node.
    anc: Vec<u32>,
    desc: Vec<u32>,
    stack: Vec<u32>,
    touched: Vec<u32>,
}

impl Triangle {
    pub fn new(constraint: usize, s: &mut Store) -> Triangle {
        let c = s.chips;
        Triangle {
            constraint,
            c,
            counted: (0..s.n).map(|_| s.new_cell(0)).collect(),
            arcs: (0..c * c).map(|_| s.new_cell(0)).collect(),
            lp: vec![-1; c * c],
            arc_list: Vec::new(),
            fresh: false,
            ok_memo: std::cell::RefCell::new(vec![0; c * c]),
            pc: Vec::new(),
            sc: Vec::new(),
            pairs: Vec::new(),
            rows: vec![0; c * s.words_per_domain()],
            cols: vec![0; c * s.words_per_domain()],
            touched_back: Vec::new(),
            heads_ok: std::cell::RefCell::new(vec![None; c]),
            tails_ok: std::cell::RefCell::new(vec![None; c]),
            w: s.words_per_domain(),
            anc: (0..s.n * s.words_per_domain()).map(|_| s.new_cell(0)).collect(),
            desc: (0..s.n * s.words_per_domain()).map(|_| s.new_cell(0)).collect(),
            stack: Vec::new(),
            touched: Vec::new(),
        }
    }

    /// The bitset of `v` in `cells` (ancestor or descendant chips), on the stack.
    fn set_of(&self, s: &Store, cells: &[u32], v: u32) -> ([u64; 16], usize) {
        let mut out = [0u64; 16];
        let w = self.w.min(16);
        for (k, o) in out.iter_mut().enumerate().take(w) {
            *o = s.cell(cells[v as usize * self.w + k]) as u64;
        }
        (out, w)
    }

    /// Adds chip `c` to the ancestor (forward) or descendant (backward) sets
    /// reachable from `x`, stopping where it is already known.
    fn spread(&mut self, x: u32, c: u32, forward: bool, s: &mut Store, ctx: &Ctx) {
        let (word, bit) = ((c / 64) as usize, 1u64 << (c % 64));
        let next = if forward { &ctx.succ } else { &ctx.pred };
        self.stack.clear();
        self.stack.extend(next[x as usize].iter().copied());
        while let Some(v) = self.stack.pop() {
            let cell = if forward {
                self.anc[v as usize * self.w + word]
            } else {
                self.desc[v as usize * self.w + word]
            };
            let cur = s.cell(cell) as u64;
            if cur & bit != 0 {
                continue;
            }
            s.set_cell(cell, (cur | bit) as i64);
            if forward {
                self.touched.push(v);
            } else {
                self.touched_back.push(v);
            }
            self.stack.extend(next[v as usize].iter().copied());
        }
    }

    /// Restricts v to the chips every (ancestor chip a, descendant chip b)
    /// pair joined by an arc (or equal) allows: {a, b}.
    fn between(&self, v: u32, s: &mut Store) -> Result<(), Fail> {
        if s.is_fixed(v) {
            return Ok(());
        }
        let (a_set, w) = self.set_of(s, &self.anc, v);
        if a_set[..w].iter().all(|&x| x == 0) {
            return Ok(());
        }
        let (d_set, _) = self.set_of(s, &self.desc, v);
        if d_set[..w].iter().all(|&x| x == 0) {
            return Ok(());
        }
        let mut allowed = [!0u64; 16];
        let mut any = false;
        for a in bits(&a_set[..w]) {
            // Heads b in D(v) of arcs a -> b, and a itself when a is in D(v).
            let row = &self.rows[a as usize * self.w..a as usize * self.w + w];
            let mut heads = [0u64; 16];
            for k in 0..w {
                heads[k] = row[k] & d_set[k];
            }
            heads[(a / 64) as usize] |= d_set[(a / 64) as usize] & (1 << (a % 64));
            for b in bits(&heads[..w]) {
                let mut pair = [0u64; 16];
                pair[(a / 64) as usize] |= 1 << (a % 64);
                pair[(b / 64) as usize] |= 1 << (b % 64);
                for k in 0..w {
                    allowed[k] &= pair[k];
                }
                any = true;
            }
        }
        if any {
            s.restrict(v, &allowed[..w], self.constraint)?;
        }
        Ok(())
    }

    fn has_arc(&self, s: &Store, a: u32, b: u32) -> bool {
        s.cell(self.arcs[a as usize * self.c + b as usize]) > 0
    }

    /// Recomputes longest paths from the trailed arc counts.
    fn refresh(&mut self, s: &Store) {
        if self.fresh {
            return;
        }
        let c = self.c;
        self.arc_list.clear();
        let mut succ: Vec<Vec<u32>> = vec![Vec::new(); c];
        self.rows.iter_mut().for_each(|r| *r = 0);
        self.cols.iter_mut().for_each(|r| *r = 0);
        self.heads_ok.borrow_mut().iter_mut().for_each(|r| *r = None);
        self.tails_ok.borrow_mut().iter_mut().for_each(|r| *r = None);
        for (a, out) in succ.iter_mut().enumerate() {
            for b in 0..c {
                if s.cell(self.arcs[a * c + b]) > 0 {
                    out.push(b as u32);
                    self.arc_list.push((a as u32, b as u32));
                    self.rows[a * self.w + b / 64] |= 1 << (b % 64);
                    self.cols[b * self.w + a / 64] |= 1 << (a % 64);
                }
            }
        }
        // Reachability by one or more arcs, then longest paths where no cycle lies on the way.
        let mut reach = vec![false; c * c];
        for s0 in 0..c {
            let mut stack: Vec<u32> = succ[s0].clone();
            while let Some(x) = stack.pop() {
                if !reach[s0 * c + x as usize] {
                    reach[s0 * c + x as usize] = true;
                    stack.extend(succ[x as usize].iter().copied());
                }
            }
        }
        let cyclic: Vec<bool> = (0..c).map(|x| reach[x * c + x]).collect();
        for b in 0..c {
            let mut memo: Vec<Option<i32>> = vec![None; c];
            for a in 0..c {
                self.lp[a * c + b] = if a == b {
                    0
                } else if !reach[a * c + b] {
                    -1
                } else if (0..c).any(|x| cyclic[x] && (x == a || reach[a * c + x]) && (x == b || reach[x * c + b])) {
                    c as i32
                } else {
                    dist(&succ, &reach, c, a, b, &mut memo)
                };
            }
        }
        self.fresh = true;
        self.ok_memo.borrow_mut().iter_mut().for_each(|x| *x = 0);
    }

    fn lp(&self, a: u32, b: u32) -> i32 {
        self.lp[a as usize * self.c + b as usize]
    }

    fn reach(&self, a: u32, b: u32) -> bool {
        a == b || self.lp(a, b) >= 1
    }

    /// Whether adding arc a -> b (absent now) keeps every arc the only path.
    fn arc_ok(&self, a: u32, b: u32) -> bool {
        let k = a as usize * self.c + b as usize;
        match self.ok_memo.borrow()[k] {
            1 => return true,
            2 => return false,
            _ => {}
        }
        let ok = self.arc_ok_now(a, b);
        self.ok_memo.borrow_mut()[k] = if ok { 1 } else { 2 };
        ok
    }

    fn arc_ok_now(&self, a: u32, b: u32) -> bool {
        if a == b {
            return true;
        }
        // A cycle, or a longer path a ~> b already there.
        if self.reach(b, a) || self.lp(a, b) >= 2 {
            return false;
        }
        // An existing arc x -> y that a path through a -> b would shortcut.
        !self
            .arc_list
            .iter()
            .any(|&(x, y)| (x, y) != (a, b) && self.reach(x, a) && self.reach(b, y))
    }

    /// Prunes the chips of unfixed node v that would break the rule given its fixed neighbours.
    fn prune(&mut self, v: u32, s: &mut Store, ctx: &Ctx) -> Result<(), Fail> {
        let mut pc = std::mem::take(&mut self.pc);
        let mut sc = std::mem::take(&mut self.sc);
        pc.clear();
        sc.clear();
        pc.extend(ctx.pred[v as usize].iter().filter_map(|&p| s.value(p)));
        sc.extend(ctx.succ[v as usize].iter().filter_map(|&w| s.value(w)));
        let r = self.prune_with(v, &mut pc, &mut sc, s);
        self.pc = pc;
        self.sc = sc;
        r
    }

    fn prune_with(&self, v: u32, pc: &mut Vec<u32>, sc: &mut Vec<u32>, s: &mut Store) -> Result<(), Fail> {
        if pc.is_empty() && sc.is_empty() {
            return Ok(());
        }
        pc.sort_unstable();
        pc.dedup();
        sc.sort_unstable();
        sc.dedup();
        let w = s.words_per_domain().min(16);
        let mut allowed = [0u64; 16];
        allowed[..w].copy_from_slice(&s.dom(v).words[..w]);
        for &a in pc.iter() {
            let row = self.heads(s, a);
            for k in 0..w {
                allowed[k] &= row[k];
            }
        }
        for &b in sc.iter() {
            let row = self.tails(s, b);
            for k in 0..w {
                allowed[k] &= row[k];
            }
        }
        // a -> c -> b is a path of two: only c = a or c = b when the arc
        // a -> b exists (or a == b, a cycle). Another long path a ~> b is no
        // reason: two paths of two or more may coexist when no arc shortcuts them.
        for &a in pc.iter() {
            for &b in sc.iter() {
                if a == b || self.has_arc(s, a, b) {
                    let mut pair = [0u64; 16];
                    pair[(a / 64) as usize] |= 1 << (a % 64);
                    pair[(b / 64) as usize] |= 1 << (b % 64);
                    for k in 0..w {
                        allowed[k] &= pair[k];
                    }
                }
            }
        }
        s.restrict(v, &allowed[..w], self.constraint)?;
        Ok(())
    }

    /// Chips c for which an arc a -> c is fine: c == a, an existing arc, or
    /// a new one that shortcuts nothing.
    fn heads(&self, s: &Store, a: u32) -> Vec<u64> {
        if let Some(r) = &self.heads_ok.borrow()[a as usize] {
            return r.clone();
        }
        let mut r = vec![0u64; self.w];
        for c in 0..self.c as u32 {
            if c == a || self.has_arc(s, a, c) || self.arc_ok(a, c) {
                r[(c / 64) as usize] |= 1 << (c % 64);
            }
        }
        self.heads_ok.borrow_mut()[a as usize] = Some(r.clone());
        r
    }

    /// Chips c for which an arc c -> b is fine.
    fn tails(&self, s: &Store, b: u32) -> Vec<u64> {
        if let Some(r) = &self.tails_ok.borrow()[b as usize] {
            return r.clone();
        }
        let mut r = vec![0u64; self.w];
        for c in 0..self.c as u32 {
            if c == b || self.has_arc(s, c, b) || self.arc_ok(c, b) {
                r[(c / 64) as usize] |= 1 << (c % 64);
            }
        }
        self.tails_ok.borrow_mut()[b as usize] = Some(r.clone());
        r
    }

    fn check_all(&self) -> Result<(), Fail> {
        if self.arc_list.iter().any(|&(a, b)| self.lp(a, b) != 1) {
            return Err(Fail {
                constraint: self.constraint,
            });
        }
        Ok(())
    }
}

fn dist(succ: &[Vec<u32>], reach: &[bool], c: usize, x: usize, b: usize, memo: &mut [Option<i32>]) -> i32 {
    if x == b {
        return 0;
    }
    if let Some(d) = memo[x] {
        return d;
    }
    let mut best = -1;
    for &y in &succ[x] {
        let y = y as usize;
        if y == b || reach[y * c + b] {
            best = best.max(1 + dist(succ, reach, c, y, b, memo));
        }
    }
    memo[x] = Some(best);
    best
}

impl Propagator for Triangle {
    fn watches(&self, n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }

    fn on_change(&mut self, x: u32, s: &mut Store, ctx: &Ctx) -> Result<(), Fail> {
        let Some(cx) = s.value(x) else { return Ok(()) };
        if s.cell(self.counted[x as usize]) != 0 {
            return Ok(());
        }
        s.set_cell(self.counted[x as usize], 1);
        let mut new_arc = false;
        let c = self.c;
        let ends = ctx.succ[x as usize]
            .iter()
            .filter_map(|&w| s.value(w).map(|b| (cx, b)))
            .chain(ctx.pred[x as usize].iter().filter_map(|&p| s.value(p).map(|a| (a, cx))));
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        pairs.extend(ends);
        let mut fresh_arcs: Vec<(u32, u32)> = Vec::new();
        for &(a, b) in &pairs {
            if a != b {
                let cell = self.arcs[a as usize * c + b as usize];
                let k = s.cell(cell);
                s.set_cell(cell, k + 1);
                if k == 0 {
                    new_arc = true;
                    fresh_arcs.push((a, b));
                }
            }
        }
        self.pairs = pairs;
        if new_arc {
            self.fresh = false;
        }
        self.refresh(s);
        self.touched.clear();
        self.touched_back.clear();
        self.spread(x, cx, true, s, ctx);
        self.spread(x, cx, false, s, ctx);
        let has = |cells: &[u32], v: u32, chip: u32| -> bool {
            let cell = cells[v as usize * self.w + (chip / 64) as usize];
            (s.cell(cell) as u64) >> (chip % 64) & 1 == 1
        };
        // A node whose ancestors gained cx needs a look only if one of its
        // descendant chips is cx or the head of an arc from cx (and the
        // mirror image for descendants).
        let meets = |cells: &[u32], v: u32, row: &[u64], chip: u32| -> bool {
            has(cells, v, chip) || (0..self.w).any(|k| s.cell(cells[v as usize * self.w + k]) as u64 & row[k] != 0)
        };
        let cxu = cx as usize;
        let mut look: Vec<u32> = self
            .touched
            .iter()
            .copied()
            .filter(|&v| meets(&self.desc, v, &self.rows[cxu * self.w..(cxu + 1) * self.w], cx))
            .chain(
                self.touched_back
                    .iter()
                    .copied()
                    .filter(|&v| meets(&self.anc, v, &self.cols[cxu * self.w..(cxu + 1) * self.w], cx)),
            )
            .collect();
        if new_arc {
            // Every node between the ends of a new arc may be affected.
            look.extend((0..s.n as u32).filter(|&v| {
                !s.is_fixed(v)
                    && fresh_arcs
                        .iter()
                        .any(|&(a, b)| has(&self.anc, v, a) && has(&self.desc, v, b))
            }));
        }
        for v in look {
            self.between(v, s)?;
        }
        if new_arc {
            self.check_all()?;
            // A new arc can rule out chips anywhere next to a fixed node.
            for v in 0..s.n as u32 {
                if !s.is_fixed(v)
                    && (ctx.pred[v as usize].iter().any(|&p| s.is_fixed(p))
                        || ctx.succ[v as usize].iter().any(|&w| s.is_fixed(w)))
                {
                    self.prune(v, s, ctx)?;
                }
            }
        } else {
            self.refresh(s);
            let around: Vec<u32> = ctx.succ[x as usize]
                .iter()
                .chain(&ctx.pred[x as usize])
                .copied()
                .collect();
            for v in around {
                if !s.is_fixed(v) {
                    self.prune(v, s, ctx)?;
                }
            }
        }
        Ok(())
    }

    fn complete(&mut self, s: &Store, _ctx: &Ctx) -> Result<(), Fail> {
        self.fresh = false;
        self.refresh(s);
        self.check_all()
    }

    fn on_backtrack(&mut self) {
        self.fresh = false;
    }
}
