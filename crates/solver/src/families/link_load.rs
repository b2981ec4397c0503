//! The propagator of per-link sums ([`super::link`]). An item counts once
//! both of its nodes are fixed on a pair its table holds, so each instance's
//! load is a trailed cell added to as nodes are fixed (the load the fixed
//! edge endpoints already force). An item heavier than the room left whose
//! one node is fixed takes from the other node every chip on which it would
//! count; when one node of an instance is left open, each of its chips is
//! judged with everything it would add (forward checking, as the generic
//! path does). Both inferences are monotone in the fixed nodes and the
//! loads, so incremental and from-scratch propagation meet at one fixpoint.
//! Integer weights are summed exactly; other weights prune only past a
//! rounding margin, and the checker judges complete placements near it.
//!
//! Items are stored by pair of nodes (an edge), across instances: fixing a
//! node visits its edges, not every link times every edge. Pairs whose
//! items have the same instances and tables share a class, which knows,
//! per pair of chips, which of its items count (on a ring: the links
//! between the two chips), so an edge within one chip costs nothing.

use super::link::{Item, LinkShape, Tables};
use super::resource::{get, judge_near, put, slack};
use crate::propagator::Cx;
use crate::store::Fail;
use mcm_core::problem::GroundConstraint;
use std::collections::HashMap;

const NONE: u32 = u32::MAX;

/// Chip-pair slots all classes may cache which of their items count; past
/// it, a class finds them by reading its tables each time.
pub(crate) const HIT_SLOTS: usize = 1 << 21;

/// The most positions the caches hold in all (64 MiB); once full, what is
/// not cached yet is read from the tables each time.
const HIT_LIST_LIMIT: usize = 1 << 24;

struct Inst {
    /// What may be loaded: the cap plus the rounding margin.
    limit: f64,
    /// The rounding margin in `limit` (0 for exact sums).
    slack: f64,
    base: f64,
    /// Trailed: the weight of the items that count.
    load: u32,
    /// Its items (indices), heaviest first.
    heavy: Vec<u32>,
}

/// The items of one edge (or of one node: `a == b`) over all instances.
struct Pair {
    a: u32,
    b: u32,
    class: u32,
    /// Its items, in its class's order, are `pos_item[lo..hi]`.
    lo: u32,
    hi: u32,
    wmax: f64,
}

/// What pairs share: per item, its instance, its table and whether the
/// table reads `b`'s chip first; and per chip pair (`a * chips + b`), the
/// positions of the items that count, once asked (`(start, len)` into
/// `LinkLoad::hit_list`; start `NONE` until then; no slots: not kept).
struct Class {
    entries: Vec<(u32, u32, bool)>,
    hits: Vec<(u32, u32)>,
}

/// Instances with the same nodes share one trailed count of those not
/// yet counted, to find the last open node.
struct NodeSet {
    nodes: Vec<u32>,
    open: u32,
    insts: Vec<u32>,
}

/// The per-link instances of one constraint.
pub(crate) struct LinkLoad {
    tables: Tables,
    insts: Vec<Inst>,
    items: Vec<Item>,
    /// The instance of each item.
    item_inst: Vec<u32>,
    pairs: Vec<Pair>,
    classes: Vec<Class>,
    /// Per pair position: the item, and its weight.
    pos_item: Vec<u32>,
    pos_w: Vec<f64>,
    hit_list: Vec<u32>,
    /// Per node: its pairs.
    pairs_of_node: Vec<Vec<u32>>,
    sets: Vec<NodeSet>,
    sets_of_node: Vec<Vec<u32>>,
    /// Per node: a trailed cell set once its items are counted.
    counted: Vec<u32>,
    /// Trailed: the least room of any instance (f64 bits), so that a node
    /// whose items are all lighter skips the room of each.
    min_room: u32,
    /// Instances the checker must judge on a complete placement: (index
    /// in the constraint, position here).
    inexact: Vec<(usize, usize)>,
    /// Scratch: a domain mask, per-instance additions and the instances
    /// they touch.
    mask: Vec<u64>,
    add: Vec<f64>,
    touched: Vec<u32>,
}

impl LinkLoad {
    /// The propagator of these instances; classes cache which items count
    /// in at most `hit_slots` chip-pair slots in all.
    pub fn new(cx: &mut Cx, shapes: Vec<(usize, LinkShape)>, tables: Tables, hit_slots: usize) -> LinkLoad {
        let n = cx.n();
        let mut insts = Vec::with_capacity(shapes.len());
        let mut items: Vec<Item> = Vec::new();
        let mut item_inst = Vec::new();
        let mut inexact = Vec::new();
        let mut set_ids: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut sets: Vec<NodeSet> = Vec::new();
        for (index, s) in shapes {
            let i = insts.len() as u32;
            let first = items.len() as u32;
            let mut nodes: Vec<u32> = s.items.iter().flat_map(|it| [it.u, it.v]).collect();
            nodes.sort_unstable();
            nodes.dedup();
            let set = *set_ids.entry(nodes).or_insert_with_key(|nodes| {
                sets.push(NodeSet {
                    nodes: nodes.clone(),
                    open: cx.new_cell(nodes.len() as i64),
                    insts: Vec::new(),
                });
                sets.len() as u32 - 1
            });
            sets[set as usize].insts.push(i);
            items.extend_from_slice(&s.items);
            item_inst.resize(items.len(), i);
            let mut heavy: Vec<u32> = (first..items.len() as u32).collect();
            heavy.sort_by(|&a, &b| items[b as usize].w.total_cmp(&items[a as usize].w));
            let slack = if s.exact {
                0.0
            } else {
                inexact.push((index, insts.len()));
                slack(s.cap, s.base + s.items.iter().map(|it| it.w).sum::<f64>())
            };
            insts.push(Inst {
                limit: s.cap + slack,
                slack,
                base: s.base,
                load: cx.new_cell(0),
                heavy,
            });
        }
        let mut sets_of_node = vec![Vec::new(); n];
        for (k, s) in sets.iter().enumerate() {
            for &x in &s.nodes {
                sets_of_node[x as usize].push(k as u32);
            }
        }
        // Items by edge, in item (so instance) order.
        let mut by_pair: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
        for (j, it) in items.iter().enumerate() {
            by_pair
                .entry((it.u.min(it.v), it.u.max(it.v)))
                .or_default()
                .push(j as u32);
        }
        let mut keys: Vec<(u32, u32)> = by_pair.keys().copied().collect();
        keys.sort_unstable();
        let c = tables.chips;
        let mut class_ids: HashMap<Vec<(u32, u32, bool)>, u32> = HashMap::new();
        let mut classes: Vec<Class> = Vec::new();
        let (mut pairs, mut pos_item, mut pos_w) = (Vec::new(), Vec::new(), Vec::new());
        let mut pairs_of_node = vec![Vec::new(); n];
        for (a, b) in keys {
            let js = &by_pair[&(a, b)];
            let entries: Vec<(u32, u32, bool)> = js
                .iter()
                .map(|&j| (item_inst[j as usize], items[j as usize].table, items[j as usize].u != a))
                .collect();
            let class = *class_ids.entry(entries).or_insert_with_key(|entries| {
                let cached = (classes.len() + 1) * c * c <= hit_slots;
                classes.push(Class {
                    entries: entries.clone(),
                    hits: if cached { vec![(NONE, 0); c * c] } else { Vec::new() },
                });
                classes.len() as u32 - 1
            });
            let p = pairs.len() as u32;
            pairs.push(Pair {
                a,
                b,
                class,
                lo: pos_item.len() as u32,
                hi: (pos_item.len() + js.len()) as u32,
                wmax: js.iter().map(|&j| items[j as usize].w).fold(0.0, f64::max),
            });
            pos_item.extend_from_slice(js);
            pos_w.extend(js.iter().map(|&j| items[j as usize].w));
            pairs_of_node[a as usize].push(p);
            if b != a {
                pairs_of_node[b as usize].push(p);
            }
        }
        let counted = (0..n)
            .map(|u| {
                if pairs_of_node[u].is_empty() {
                    NONE
                } else {
                    cx.new_cell(0)
                }
            })
            .collect();
        LinkLoad {
            mask: vec![0; tables.words],
            add: vec![0.0; insts.len()],
            tables,
            insts,
            items,
            item_inst,
            pairs,
            classes,
            pos_item,
            pos_w,
            hit_list: Vec::new(),
            pairs_of_node,
            sets,
            sets_of_node,
            counted,
            min_room: cx.new_cell(f64::INFINITY.to_bits() as i64),
            inexact,
            touched: Vec::new(),
        }
    }

    pub fn watches(&self, out: &mut Vec<u32>) {
        out.extend((0..self.pairs_of_node.len() as u32).filter(|&u| !self.pairs_of_node[u as usize].is_empty()));
    }

    fn is_counted(&self, x: u32, cx: &Cx) -> bool {
        cx.cell(self.counted[x as usize]) != 0
    }

    fn room(&self, i: usize, cx: &Cx) -> f64 {
        let inst = &self.insts[i];
        inst.limit - (inst.base + get(cx, inst.load))
    }

    /// The positions (in pair `p`'s class) of the items that count with
    /// `a` and `b` on chips `ca` and `cb`: `hit_list[start..end]`, and
    /// whether they were put there for this call only (the class keeps
    /// none: the caller truncates them).
    fn find_hits(&mut self, p: u32, ca: u32, cb: u32) -> (usize, usize, bool) {
        let pair = &self.pairs[p as usize];
        let single = pair.a == pair.b;
        let class = &mut self.classes[pair.class as usize];
        let slot = ca as usize * self.tables.chips + cb as usize;
        if let Some(&(start, len)) = class.hits.get(slot) {
            if start != NONE {
                return (start as usize, (start + len) as usize, false);
            }
        }
        let start = self.hit_list.len();
        for (k, &(_, t, flipped)) in class.entries.iter().enumerate() {
            let counts = match (single, flipped) {
                (true, _) => self.tables.holds(t, ca, ca),
                (false, false) => self.tables.holds(t, ca, cb),
                (false, true) => self.tables.holds(t, cb, ca),
            };
            if counts {
                self.hit_list.push(k as u32);
            }
        }
        let end = self.hit_list.len();
        match class.hits.get_mut(slot).filter(|_| end <= HIT_LIST_LIMIT) {
            Some(h) => {
                *h = (start as u32, (end - start) as u32);
                (start, end, false)
            }
            None => (start, end, true),
        }
    }

    /// Adds to `self.add` what pair `p`'s counting items weigh, with `a`
    /// and `b` on chips `ca` and `cb`.
    fn gather(&mut self, p: u32, ca: u32, cb: u32) {
        let (start, end, temporary) = self.find_hits(p, ca, cb);
        let pair = &self.pairs[p as usize];
        let class = &self.classes[pair.class as usize];
        for &k in &self.hit_list[start..end] {
            let i = class.entries[k as usize].0 as usize;
            if self.add[i] == 0.0 {
                self.touched.push(i as u32);
            }
            self.add[i] += self.pos_w[pair.lo as usize + k as usize];
        }
        if temporary {
            self.hit_list.truncate(start);
        }
    }

    /// Counts fixed node `x`'s items, then turns away what no longer fits.
    pub fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        let cell = self.counted[x as usize];
        if cell == NONE || cx.cell(cell) != 0 {
            return Ok(());
        }
        let Some(a) = cx.value(x) else { return Ok(()) };
        cx.set_cell(cell, 1);
        for r in 0..self.pairs_of_node[x as usize].len() {
            let p = self.pairs_of_node[x as usize][r];
            let pair = &self.pairs[p as usize];
            let other = if pair.a == x { pair.b } else { pair.a };
            if other == x || self.is_counted(other, cx) {
                let b = cx.value(other).expect("counted nodes are fixed");
                let (ca, cb) = if pair.a == x { (a, b) } else { (b, a) };
                self.gather(p, ca, cb);
            }
        }
        // Loads first (the scratch sums are spent even on a failure), then
        // the edges to open nodes: their items too heavy for their room take
        // the open node's chips on which they would count.
        self.apply(cx)?;
        let min_room = get(cx, self.min_room);
        for r in 0..self.pairs_of_node[x as usize].len() {
            let pair = &self.pairs[self.pairs_of_node[x as usize][r] as usize];
            let other = if pair.a == x { pair.b } else { pair.a };
            if other == x || self.is_counted(other, cx) || pair.wmax <= min_room {
                continue;
            }
            for k in pair.lo..pair.hi {
                let j = self.pos_item[k as usize];
                let i = self.item_inst[j as usize] as usize;
                if self.pos_w[k as usize] > self.room(i, cx) {
                    self.prune(j, cx)?;
                }
            }
        }
        for s in 0..self.sets_of_node[x as usize].len() {
            let k = self.sets_of_node[x as usize][s] as usize;
            let open = cx.cell(self.sets[k].open) - 1;
            cx.set_cell(self.sets[k].open, open);
            if open == 1 {
                self.last_open(k, cx)?;
            }
        }
        Ok(())
    }

    /// Adds the gathered weights to the loads, then checks each instance
    /// that grew.
    fn apply(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        let mut touched = std::mem::take(&mut self.touched);
        for &i in &touched {
            let load = self.insts[i as usize].load;
            put(cx, load, get(cx, load) + self.add[i as usize]);
            self.add[i as usize] = 0.0;
        }
        let r = touched.iter().try_for_each(|&i| self.crowd_out(i as usize, cx));
        touched.clear();
        self.touched = touched;
        r
    }

    /// Fails when instance `i` is over; prunes every item heavier than its
    /// room; lowers the least room.
    fn crowd_out(&mut self, i: usize, cx: &mut Cx) -> Result<(), Fail> {
        let room = self.room(i, cx);
        // NaN room: never reached with finite weights, refused if it is.
        if room.is_nan() || room < 0.0 {
            return Err(cx.fail());
        }
        if room < get(cx, self.min_room) {
            put(cx, self.min_room, room);
        }
        for h in 0..self.insts[i].heavy.len() {
            let j = self.insts[i].heavy[h];
            if self.items[j as usize].w <= room {
                break;
            }
            self.prune(j, cx)?;
        }
        Ok(())
    }

    /// Item `j` cannot count: with one node counted, the other loses the
    /// chips on which it would (a one-node item loses its own).
    fn prune(&mut self, j: u32, cx: &mut Cx) -> Result<(), Fail> {
        let it = self.items[j as usize];
        let (cu, cv) = (self.is_counted(it.u, cx), self.is_counted(it.v, cx));
        let (x, row) = if it.u == it.v {
            if cu {
                return Ok(());
            }
            self.mask.iter_mut().for_each(|m| *m = !0);
            for k in cx.dom(it.u).iter() {
                if self.tables.holds(it.table, k, k) {
                    self.mask[(k / 64) as usize] &= !(1 << (k % 64));
                }
            }
            return cx.restrict(it.u, &self.mask).map(|_| ());
        } else if cu && !cv {
            (it.v, self.tables.row(it.table, cx.value(it.u).expect("counted")))
        } else if cv && !cu {
            (it.u, self.tables.col(it.table, cx.value(it.v).expect("counted")))
        } else {
            return Ok(());
        };
        for (m, r) in self.mask.iter_mut().zip(row) {
            *m = !r;
        }
        cx.restrict(x, &self.mask).map(|_| ())
    }

    /// Node set `k` has one node left to count: each of its chips is judged,
    /// in every instance of the set, with the weight it would add.
    fn last_open(&mut self, k: usize, cx: &mut Cx) -> Result<(), Fail> {
        let Some(&y) = self.sets[k].nodes.iter().find(|&&y| !self.is_counted(y, cx)) else {
            return Ok(());
        };
        let mut keep = vec![0u64; self.mask.len()];
        for chip in cx.dom(y).to_vec() {
            for r in 0..self.pairs_of_node[y as usize].len() {
                let p = self.pairs_of_node[y as usize][r];
                let pair = &self.pairs[p as usize];
                let other = if pair.a == y { pair.b } else { pair.a };
                // An open other node: none of the pair's items is in the set.
                if other != y && !self.is_counted(other, cx) {
                    continue;
                }
                let b = cx.value(other).expect("counted nodes are fixed");
                let (ca, cb) = if pair.a == y { (chip, b) } else { (b, chip) };
                self.gather(p, ca, cb);
            }
            let fits = self.sets[k]
                .insts
                .iter()
                .all(|&i| self.add[i as usize] <= self.room(i as usize, cx));
            if fits {
                keep[(chip / 64) as usize] |= 1 << (chip % 64);
            }
            for &i in &self.touched {
                self.add[i as usize] = 0.0;
            }
            self.touched.clear();
        }
        cx.restrict(y, &keep).map(|_| ())
    }

    /// Loads and open counts taken again from the fixed nodes, then every
    /// instance's room and last open node applied.
    pub fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        for u in 0..self.counted.len() {
            if self.counted[u] != NONE {
                cx.set_cell(self.counted[u], i64::from(cx.is_fixed(u as u32)));
            }
        }
        for p in 0..self.pairs.len() {
            let pair = &self.pairs[p];
            if let (Some(ca), Some(cb)) = (cx.value(pair.a), cx.value(pair.b)) {
                self.gather(p as u32, ca, cb);
            }
        }
        for (i, inst) in self.insts.iter().enumerate() {
            put(cx, inst.load, self.add[i]);
            self.add[i] = 0.0;
        }
        self.touched.clear();
        for s in &self.sets {
            let open = s.nodes.iter().filter(|&&y| !cx.is_fixed(y)).count();
            cx.set_cell(s.open, open as i64);
        }
        put(cx, self.min_room, f64::INFINITY);
        for i in 0..self.insts.len() {
            self.crowd_out(i, cx)?;
        }
        for k in 0..self.sets.len() {
            if cx.cell(self.sets[k].open) == 1 {
                self.last_open(k, cx)?;
            }
        }
        Ok(())
    }

    /// Judges the instances summed with a margin whose load is within the
    /// margin of the capacity.
    pub fn complete(&self, rule: &GroundConstraint, cx: &Cx, chips: &mut [u32]) -> bool {
        let near = self.inexact.iter().map(|&(i, at)| {
            let inst = &self.insts[at];
            (i, inst.base + get(cx, inst.load), inst.limit, inst.slack)
        });
        judge_near(rule, cx, chips, near)
    }
}
