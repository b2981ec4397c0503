//! The event loop. Ops are numbered placed nodes first (decision index),
//! then the copies of replicable nodes this partition makes; transfers are
//! numbered by producer, each producer's links in the order its route tree
//! was walked.
//!
//! Every queue is a binary heap of one packed key, so that the order the
//! spec asks for is one integer comparison: the instant (a non-negative
//! float's bits sort as the float does), then the node's place in the node
//! list, then the op or transfer.

use super::{StepTimeModel, NONE};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Marks a transfer among events and causes.
const TX: u32 = 1 << 31;

type Heap = BinaryHeap<Reverse<u128>>;

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
    /// The copy of replica r on chip c at `r * C + c`, `NONE` if none.
    copy_of: Vec<u32>,
    /// Per placed node, its transfers `tx_start[u]..tx_start[u + 1]`, each
    /// with its link; and the size it sends.
    tx_start: Vec<u32>,
    pub tx_link: Vec<u32>,
    pub tx_node: Vec<u32>,
    pub tx_size: Vec<u64>,
    /// Route-tree marks per chip, by epoch.
    stamp: Vec<u32>,
    epoch: u32,
    chip_q: Vec<Heap>,
    link_q: Vec<Heap>,
    chip_busy: Vec<bool>,
    link_busy: Vec<bool>,
    dirty_chips: Vec<u32>,
    dirty_links: Vec<u32>,
    chip_dirty: Vec<bool>,
    link_dirty: Vec<bool>,
    events: Heap,
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
    pub(super) fn run(&self, chips: &[u32], s: &mut Scratch, mut rec: Option<&mut Record>) -> Result<f64, String> {
        self.check(chips)?;
        let d = &self.deps;
        let net = &self.net;
        let c = net.chips;
        let np = d.placed_node.len();
        let nl = net.link_src.len();
        s.prepare(c, nl, d.reps.len());

        // Ops: placed nodes, then the copies.
        s.op_node.clear();
        s.op_chip.clear();
        s.pending.clear();
        s.op_node.extend_from_slice(&d.placed_node);
        s.op_chip.extend_from_slice(chips);
        s.pending.extend_from_slice(&d.placed_inputs);
        for r in 0..d.reps.len() {
            for &f in &d.feeds[d.feeds_start[r] as usize..d.feeds_start[r + 1] as usize] {
                let at = r * c + chips[f as usize] as usize;
                if s.copy_of[at] == NONE {
                    s.copy_of[at] = s.op_node.len() as u32;
                    s.op_node.push(d.reps[r]);
                    s.op_chip.push(chips[f as usize]);
                    s.pending.push(d.rep_inputs[r]);
                }
            }
        }
        let result = self
            .transfers(chips, s)
            .and_then(|()| self.events(chips, s, rec.as_deref_mut()));
        // Leave the copy table empty for the next run.
        for o in np..s.op_node.len() {
            let r = d.rep_of[s.op_node[o] as usize] as usize;
            s.copy_of[r * c + s.op_chip[o] as usize] = NONE;
        }
        result
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
            s.epoch = s.epoch.wrapping_add(1);
            if s.epoch == 0 {
                s.stamp.iter_mut().for_each(|x| *x = 0);
                s.epoch = 1;
            }
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
            let n = s.tx_link.len() - *s.tx_start.last().unwrap_or(&0) as usize;
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
                let Some(Reverse(k)) = s.chip_q[ch as usize].pop() else {
                    continue;
                };
                let (_, o) = unkey(k);
                let now = s.now;
                let end = now + self.times.time(s.op_node[o as usize] as usize, ch);
                s.chip_busy[ch as usize] = true;
                s.events.push(Reverse(key(end, 0, o)));
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
                let Some(Reverse(k)) = s.link_q[l as usize].pop() else {
                    continue;
                };
                let (_, x) = unkey(k);
                let now = s.now;
                let end = now + self.transfer_time(l as usize, s.tx_size[x as usize]);
                s.link_busy[l as usize] = true;
                s.events.push(Reverse(key(end, 0, TX | x)));
                if let Some(r) = rec.as_deref_mut() {
                    r.tx_start[x as usize] = now;
                    r.tx_end[x as usize] = end;
                    r.tx_order.push(x);
                }
            }
            // The next instant: apply everything that happens then.
            let Some(&Reverse(k)) = s.events.peek() else { break };
            let now = unkey(k).0;
            s.now = now;
            while let Some(&Reverse(k)) = s.events.peek() {
                let (t, e) = unkey(k);
                if t != now {
                    break;
                }
                s.events.pop();
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
        let c = self.net.chips;
        for &w in &d.rep_cons_rep[d.rep_rcons_start[r] as usize..d.rep_rcons_start[r + 1] as usize] {
            let copy = s.copy_of[w as usize * c + ch as usize];
            if copy != NONE {
                s.input(copy, o, rec.as_deref_mut());
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
        for x in s.tx_start[u as usize]..s.tx_start[u as usize + 1] {
            let l = s.tx_link[x as usize];
            if self.net.link_src[l as usize] == at {
                s.link_q[l as usize].push(Reverse(key(s.now, order, x)));
                s.mark_link(l);
                if let Some(r) = rec.as_deref_mut() {
                    r.tx_able[x as usize] = s.now;
                    r.tx_cause[x as usize] = cause;
                }
            }
        }
    }
}

impl Scratch {
    /// Sizes the buffers for a package of `c` chips and `l` links with `r`
    /// replicas (a no-op after the first run).
    fn prepare(&mut self, c: usize, l: usize, r: usize) {
        if self.chip_q.len() != c || self.link_q.len() != l || self.copy_of.len() != r * c {
            self.chip_q = vec![Heap::new(); c];
            self.link_q = vec![Heap::new(); l];
            self.chip_busy = vec![false; c];
            self.link_busy = vec![false; l];
            self.chip_dirty = vec![false; c];
            self.link_dirty = vec![false; l];
            self.copy_of = vec![NONE; r * c];
            self.stamp = vec![0; c];
            self.epoch = 0;
        }
        // A finished run leaves these empty; cleared all the same, so that
        // no run can see another's leftovers.
        self.chip_q.iter_mut().for_each(Heap::clear);
        self.link_q.iter_mut().for_each(Heap::clear);
        self.chip_busy.iter_mut().for_each(|x| *x = false);
        self.link_busy.iter_mut().for_each(|x| *x = false);
        self.events.clear();
        self.dirty_chips.clear();
        self.dirty_links.clear();
        self.chip_dirty.iter_mut().for_each(|x| *x = false);
        self.link_dirty.iter_mut().for_each(|x| *x = false);
        self.now = 0.0;
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
        self.chip_q[ch as usize].push(Reverse(key(t, self.op_node[o as usize], o)));
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
