//! The event loop. Ops are numbered placed nodes first (decision index),
//! then the copies of replicable nodes this partition makes; transfers are
//! numbered by producer, each producer's links in the order its route tree
//! was walked.
//!
//! Every queue orders one packed key, so that the order the spec asks for
//! is one integer comparison: the instant (a non-negative float's bits sort
//! as the float does), then the node's place in the node list, then the op
//! or transfer. Events wait in a binary heap; the chips' and links' queues
//! are sorted deques ([`Queue`]), since work only ever joins them at the
//! present instant, at or after everything already there.

use super::{StepTimeModel, NONE};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Marks a transfer among events and causes.
const TX: u32 = 1 << 31;

type Heap = BinaryHeap<Reverse<u128>>;

/// Keys in increasing order. A key joins at the present instant, so it
/// goes after every earlier instant: at the back, or among the keys of
/// this same instant by node order (a few at most).
#[derive(Clone, Debug, Default)]
struct Queue(VecDeque<u128>);

impl Queue {
    fn push(&mut self, k: u128) {
        if self.0.back().is_none_or(|&b| b < k) {
            self.0.push_back(k);
        } else {
            let at = self.0.partition_point(|&x| x < k);
            self.0.insert(at, k);
        }
    }

    fn pop(&mut self) -> Option<u128> {
        self.0.pop_front()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

fn key(t: f64, order: u32, id: u32) -> u128 {
    (u128::from(t.to_bits()) << 64) | (u128::from(order) << 32) | u128::from(id)
}

fn unkey(k: u128) -> (f64, u32) {
    (f64::from_bits((k >> 64) as u64), k as u32)
}

/// Buffers of one run, kept between runs.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// Per op: graph node, chip, inputs still missing.
    pub op_node: Vec<u32>,
    pub op_chip: Vec<u32>,
    pending: Vec<u32>,
    /// The copies of replica r are ops `copy_start[r]..copy_start[r + 1]`,
    /// by increasing chip (a few each: no table of replicas × chips).
    copy_start: Vec<u32>,
    /// Per placed node, its transfers `tx_start[u]..tx_start[u + 1]`, each
    /// with its link; and the size it sends.
    tx_start: Vec<u32>,
    pub tx_link: Vec<u32>,
    pub tx_node: Vec<u32>,
    pub tx_size: Vec<u64>,
    /// Marks per chip (a route tree, a replica's hosts), by epoch.
    stamp: Vec<u32>,
    epoch: u32,
    chip_q: Vec<Queue>,
    link_q: Vec<Queue>,
    chip_busy: Vec<bool>,
    link_busy: Vec<bool>,
    dirty_chips: Vec<u32>,
    dirty_links: Vec<u32>,
    chip_dirty: Vec<bool>,
    link_dirty: Vec<bool>,
    events: Heap,
    /// Ops and transfers that end at the instant they started (zero-time
    /// ops: the graph's weights and constants), kept off the heap; their
    /// ends are applied, with the others of that instant, before the next
    /// picks.
    ending_now: Vec<u32>,
    /// The instant being applied.
    now: f64,
}

/// What `simulate` keeps of a run, by op and transfer number.
#[derive(Debug, Default)]
pub(super) struct Record {
    pub op_start: Vec<f64>,
    pub op_end: Vec<f64>,
    pub op_ready: Vec<f64>,
    /// The event that made the op ready (an op, or `TX | transfer`), `NONE`
    /// for an op without inputs.
    pub op_cause: Vec<u32>,
    pub tx_start: Vec<f64>,
    pub tx_end: Vec<f64>,
    pub tx_able: Vec<f64>,
    pub tx_cause: Vec<u32>,
    /// Ops and transfers in the order they started.
    pub op_order: Vec<u32>,
    pub tx_order: Vec<u32>,
}

/// A cause as a path step's kind and number.
pub(super) fn cause(c: u32) -> Option<(bool, u32)> {
    (c != NONE).then_some((c & TX != 0, c & !TX))
}

impl StepTimeModel {
    /// Runs the step under `chips`; returns the instant the last op ends.
    pub(super) fn run(&self, chips: &[u32], s: &mut Scratch, rec: Option<&mut Record>) -> Result<f64, String> {
        self.check(chips)?;
        let d = &self.deps;
        let net = &self.net;
        let c = net.chips;
        let np = d.placed_node.len();
        let nl = net.link_src.len();
        s.prepare(c, nl);

        // Ops: placed nodes, then the copies.
        s.op_node.clear();
        s.op_chip.clear();
        s.pending.clear();
        s.op_node.extend_from_slice(&d.placed_node);
        s.op_chip.extend_from_slice(chips);
        s.pending.extend_from_slice(&d.placed_inputs);
        s.copy_start.clear();
        s.copy_start.push(np as u32);
        for r in 0..d.reps.len() {
            s.next_epoch();
            let first = s.op_node.len();
            for &f in &d.feeds[d.feeds_start[r] as usize..d.feeds_start[r + 1] as usize] {
                let ch = chips[f as usize];
                if s.stamp[ch as usize] != s.epoch {
                    s.stamp[ch as usize] = s.epoch;
                    s.op_node.push(d.reps[r]);
                    s.op_chip.push(ch);
                    s.pending.push(d.rep_inputs[r]);
                }
            }
            s.op_chip[first..].sort_unstable();
            s.copy_start.push(s.op_node.len() as u32);
        }
        self.transfers(chips, s).and_then(|()| self.events(chips, s, rec))
    }

    /// Every placed node's transfers: the links of the union of its routes
    /// to the chips of its consumers elsewhere.
    fn transfers(&self, chips: &[u32], s: &mut Scratch) -> Result<(), String> {
        let d = &self.deps;
        let net = &self.net;
        let c = net.chips;
        s.tx_start.clear();
        s.tx_link.clear();
        s.tx_node.clear();
        s.tx_size.clear();
        s.tx_start.push(0);
        for u in 0..d.placed_node.len() {
            let a = chips[u];
            let mut size = 0u64;
            s.next_epoch();
            s.stamp[a as usize] = s.epoch;
            for &(v, b) in &d.cons[d.cons_start[u] as usize..d.cons_start[u + 1] as usize] {
                let to = chips[v as usize];
                if to == a {
                    continue;
                }
                size = size.max(b);
                let mut x = to;
                while s.stamp[x as usize] != s.epoch {
                    let l = net.parent[a as usize * c + x as usize];
                    if l == NONE {
                        return Err(self.no_route(u as u32, a, to));
                    }
                    s.stamp[x as usize] = s.epoch;
                    s.tx_link.push(l);
                    s.tx_node.push(u as u32);
                    x = net.link_src[l as usize];
                }
            }
            let first = *s.tx_start.last().unwrap_or(&0) as usize;
            // By the chip each link leaves, so that the links going on from
            // a chip the output reached are found by a binary search.
            s.tx_link[first..].sort_unstable_by_key(|&l| net.link_src[l as usize]);
            let n = s.tx_link.len() - first;
            s.tx_size.extend(std::iter::repeat_n(size, n));
            s.tx_start.push(s.tx_link.len() as u32);
        }
        Ok(())
    }

    fn events(&self, chips: &[u32], s: &mut Scratch, mut rec: Option<&mut Record>) -> Result<f64, String> {
        let nops = s.op_node.len();
        if let Some(r) = rec.as_deref_mut() {
            r.reset(nops, s.tx_link.len());
        }
        for o in 0..nops {
            if s.pending[o] == 0 {
                s.ready(o as u32, 0.0, NONE, rec.as_deref_mut());
            }
        }
        let mut last = 0.0f64;
        let mut ended = 0usize;
        loop {
            // Idle chips and links pick their next work.
            while let Some(ch) = s.dirty_chips.pop() {
                s.chip_dirty[ch as usize] = false;
                if s.chip_busy[ch as usize] {
                    continue;
                }
                let Some(k) = s.chip_q[ch as usize].pop() else {
                    continue;
                };
                let (_, o) = unkey(k);
                let now = s.now;
                let end = now + self.duration(s.op_node[o as usize], ch);
                s.chip_busy[ch as usize] = true;
                s.schedule_end(end, o);
                if let Some(r) = rec.as_deref_mut() {
                    r.op_start[o as usize] = now;
                    r.op_end[o as usize] = end;
                    r.op_order.push(o);
                }
            }
            while let Some(l) = s.dirty_links.pop() {
                s.link_dirty[l as usize] = false;
                if s.link_busy[l as usize] {
                    continue;
                }
                let Some(k) = s.link_q[l as usize].pop() else {
                    continue;
                };
                let (_, x) = unkey(k);
                let now = s.now;
                let end = now + self.transfer_time(l as usize, s.tx_size[x as usize]);
                s.link_busy[l as usize] = true;
                s.schedule_end(end, TX | x);
                if let Some(r) = rec.as_deref_mut() {
                    r.tx_start[x as usize] = now;
                    r.tx_end[x as usize] = end;
                    r.tx_order.push(x);
                }
            }
            // The next instant (this one again when work just started ends
            // now): apply everything that happens then.
            let now = if !s.ending_now.is_empty() {
                s.now
            } else if let Some(&Reverse(k)) = s.events.peek() {
                unkey(k).0
            } else {
                break;
            };
            s.now = now;
            loop {
                let e = if let Some(e) = s.ending_now.pop() {
                    e
                } else {
                    match s.events.peek() {
                        Some(&Reverse(k)) if unkey(k).0 == now => {
                            s.events.pop();
                            unkey(k).1
                        }
                        _ => break,
                    }
                };
                if e & TX == 0 {
                    ended += 1;
                    last = last.max(now);
                    let ch = s.op_chip[e as usize];
                    s.chip_busy[ch as usize] = false;
                    s.mark_chip(ch);
                    self.op_ended(chips, s, e, rec.as_deref_mut());
                } else {
                    let x = e & !TX;
                    let l = s.tx_link[x as usize];
                    s.link_busy[l as usize] = false;
                    s.mark_link(l);
                    let (u, at) = (s.tx_node[x as usize], self.net.link_dst[l as usize]);
                    self.output_on(chips, s, u, at, e, rec.as_deref_mut());
                }
            }
        }
        if ended != nops {
            // Unreachable for a graph without cycles (Graph::new refuses them).
            return Err(format!("{} ops never became ready", nops - ended));
        }
        Ok(last)
    }

    /// Op `o` ended at `s.now`: its output is on its chip.
    fn op_ended(&self, chips: &[u32], s: &mut Scratch, o: u32, mut rec: Option<&mut Record>) {
        let d = &self.deps;
        let np = d.placed_node.len() as u32;
        if o < np {
            self.output_on(chips, s, o, chips[o as usize], o, rec);
            return;
        }
        let ch = s.op_chip[o as usize];
        let r = d.rep_of[s.op_node[o as usize] as usize] as usize;
        for &v in &d.rep_cons_placed[d.rep_cons_start[r] as usize..d.rep_cons_start[r + 1] as usize] {
            if chips[v as usize] == ch {
                s.input(v, o, rec.as_deref_mut());
            }
        }
        for &w in &d.rep_cons_rep[d.rep_rcons_start[r] as usize..d.rep_rcons_start[r + 1] as usize] {
            let (lo, hi) = (s.copy_start[w as usize] as usize, s.copy_start[w as usize + 1] as usize);
            if let Ok(k) = s.op_chip[lo..hi].binary_search(&ch) {
                s.input((lo + k) as u32, o, rec.as_deref_mut());
            }
        }
    }

    /// Placed node `u`'s output is on chip `at` (made so by `cause`): its
    /// consumers there have it, and it may go on over the links of its tree
    /// that leave `at`.
    fn output_on(&self, chips: &[u32], s: &mut Scratch, u: u32, at: u32, cause: u32, mut rec: Option<&mut Record>) {
        let d = &self.deps;
        for &(v, _) in &d.cons[d.cons_start[u as usize] as usize..d.cons_start[u as usize + 1] as usize] {
            if chips[v as usize] == at {
                s.input(v, cause, rec.as_deref_mut());
            }
        }
        let order = d.placed_node[u as usize];
        let (lo, hi) = (s.tx_start[u as usize] as usize, s.tx_start[u as usize + 1] as usize);
        let src = &self.net.link_src;
        let from = lo + s.tx_link[lo..hi].partition_point(|&l| src[l as usize] < at);
        for x in from..hi {
            let l = s.tx_link[x];
            if src[l as usize] != at {
                break;
            }
            s.link_q[l as usize].push(key(s.now, order, x as u32));
            s.mark_link(l);
            if let Some(r) = rec.as_deref_mut() {
                r.tx_able[x] = s.now;
                r.tx_cause[x] = cause;
            }
        }
    }
}

impl Scratch {
    /// Sizes the buffers for a package of `c` chips and `l` links (a no-op
    /// after the first run).
    fn prepare(&mut self, c: usize, l: usize) {
        if self.chip_q.len() != c || self.link_q.len() != l {
            self.chip_q = vec![Queue::default(); c];
            self.link_q = vec![Queue::default(); l];
            self.chip_busy = vec![false; c];
            self.link_busy = vec![false; l];
            self.chip_dirty = vec![false; c];
            self.link_dirty = vec![false; l];
            self.stamp = vec![0; c];
            self.epoch = 0;
        }
        // A finished run leaves these empty; cleared all the same, so that
        // no run can see another's leftovers.
        self.chip_q.iter_mut().for_each(Queue::clear);
        self.link_q.iter_mut().for_each(Queue::clear);
        self.chip_busy.iter_mut().for_each(|x| *x = false);
        self.link_busy.iter_mut().for_each(|x| *x = false);
        self.events.clear();
        self.ending_now.clear();
        self.dirty_chips.clear();
        self.dirty_links.clear();
        self.chip_dirty.iter_mut().for_each(|x| *x = false);
        self.link_dirty.iter_mut().for_each(|x| *x = false);
        self.now = 0.0;
    }

    /// Work started at `self.now` (op or `TX | transfer`) ends at `end`.
    fn schedule_end(&mut self, end: f64, e: u32) {
        if end == self.now {
            self.ending_now.push(e);
        } else {
            self.events.push(Reverse(key(end, 0, e)));
        }
    }

    /// A fresh mark for `stamp`.
    fn next_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|x| *x = 0);
            self.epoch = 1;
        }
    }

    fn mark_chip(&mut self, ch: u32) {
        if !self.chip_dirty[ch as usize] {
            self.chip_dirty[ch as usize] = true;
            self.dirty_chips.push(ch);
        }
    }

    fn mark_link(&mut self, l: u32) {
        if !self.link_dirty[l as usize] {
            self.link_dirty[l as usize] = true;
            self.dirty_links.push(l);
        }
    }

    /// One input of op `o` is there (brought by `cause`).
    fn input(&mut self, o: u32, cause: u32, rec: Option<&mut Record>) {
        self.pending[o as usize] -= 1;
        if self.pending[o as usize] == 0 {
            self.ready(o, self.now, cause, rec);
        }
    }

    fn ready(&mut self, o: u32, t: f64, cause: u32, rec: Option<&mut Record>) {
        let ch = self.op_chip[o as usize];
        self.chip_q[ch as usize].push(key(t, self.op_node[o as usize], o));
        self.mark_chip(ch);
        if let Some(r) = rec {
            r.op_ready[o as usize] = t;
            r.op_cause[o as usize] = cause;
        }
    }
}

impl Record {
    fn reset(&mut self, ops: usize, txs: usize) {
        for v in [&mut self.op_start, &mut self.op_end, &mut self.op_ready] {
            v.clear();
            v.resize(ops, 0.0);
        }
        for v in [&mut self.tx_start, &mut self.tx_end, &mut self.tx_able] {
            v.clear();
            v.resize(txs, 0.0);
        }
        self.op_cause.clear();
        self.op_cause.resize(ops, NONE);
        self.tx_cause.clear();
        self.tx_cause.resize(txs, NONE);
        self.op_order.clear();
        self.tx_order.clear();
    }
}
