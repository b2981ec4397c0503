//! The latency target as clauses. Each target `T` asked gets a selector
//! literal; its clauses are guarded by it. A clause implied by `latency ≤ T`
//! is implied by every lower target too, so a call under `T` assumes the
//! selectors of every target at or above it: what was learned higher up
//! keeps pruning lower down.
//!
//! Eager, per chip `d`: indicator literals for its parts (a node on `d`, a
//! replicable copy on `d`, a node's output crossing a link out of `d`),
//! each implied by its cause and weighing no more than what the model
//! counts for it; a sequential counter of their weights rounded down to
//! units of `q = T_c / K` (built once for targets in `[T_c / 2, T_c]`), and
//! per target a clause that the count stays within `T / q`. Rounding down
//! keeps it sound; it is not exact.
//!
//! Lazy: a model over `T` on chip `d` gets a cut, the parts of `d` shrunk by
//! deletion while their stage alone ([`LatencyModel::stage_of`], never above
//! the full stage of a placement that has them) stays above `T`; a transfer
//! without a route is cut by its two ends.

use super::SLACK;
use crate::sat::encode::{Model, L};
use mcm_core::latency::{ChipParts, LatencyModel};
use mcm_core::problem::Placement;
use std::collections::HashMap;
use std::sync::Arc;
use varisat::{Lit, Solver};

/// The finest resolutions of a counter, finest first: the first that fits
/// [`COUNTER_BUDGET`] is built.
const UNITS: [usize; 5] = [64, 32, 16, 8, 4];

/// At most this many clauses per counter build (over every chip).
const COUNTER_BUDGET: usize = 2_000_000;

/// At most this many clauses define one node's crossing of a link whose
/// routes are not an interval of chips (a mesh); past it the crossing has
/// no indicator (the counter only gets weaker).
const PAIR_LIMIT: usize = 64;

/// A counter built for targets in `[top / 2, top]`.
struct Counter {
    top: f64,
    /// Seconds per unit.
    unit: f64,
    /// Per chip, `out[j - 1]`: the parts on it weigh at least `j` units.
    out: Vec<Vec<Lit>>,
}

/// The chips whose routes cross a link, when they are an interval:
/// `(s, t)` for every route from a chip `<= s` to a chip `>= t`.
type Shape = Option<(u32, u32)>;

pub(crate) struct TargetSat {
    model: Arc<LatencyModel>,
    counters: Vec<Counter>,
    /// The targets asked, each with its selector.
    levels: Vec<(f64, Lit)>,
    /// Indicator of node `u`'s output crossing link `l`, when defined.
    cross: HashMap<(u32, usize), Option<Lit>>,
    /// Indicator of replica `r` copied onto chip `d`.
    copies: HashMap<(u32, u32), Lit>,
    shapes: Vec<Shape>,
    /// Per link, the ordered pairs of chips whose route crosses it.
    pairs: Vec<Vec<(u32, u32)>>,
}

impl TargetSat {
    pub fn new(model: Arc<LatencyModel>) -> TargetSat {
        let c = model.num_chips() as u32;
        let mut pairs = vec![Vec::new(); model.bandwidth.len()];
        for a in 0..c {
            for b in 0..c {
                if let Some(route) = model.route(a, b) {
                    for l in route {
                        pairs[l].push((a, b));
                    }
                }
            }
        }
        let shapes = pairs.iter().map(|p| shape(p, c)).collect();
        TargetSat {
            model,
            counters: Vec::new(),
            levels: Vec::new(),
            cross: HashMap::new(),
            copies: HashMap::new(),
            shapes,
            pairs,
        }
    }

    /// The selectors a call under target `t` assumes (encoding `t` first
    /// when it is new).
    pub fn selectors(&mut self, m: &mut Model, solver: &mut Solver<'static>, t: f64) -> Vec<Lit> {
        if !self.levels.iter().any(|&(x, _)| x == t) {
            self.add_level(m, solver, t);
        }
        self.levels.iter().filter(|&&(x, _)| x >= t).map(|&(_, s)| s).collect()
    }

    /// The selector of target `t`, already encoded.
    fn selector(&self, t: f64) -> Lit {
        self.levels
            .iter()
            .find(|&&(x, _)| x == t)
            .map(|&(_, s)| s)
            .expect("the target is encoded")
    }

    fn add_level(&mut self, m: &mut Model, solver: &mut Solver<'static>, t: f64) {
        let s = m.new_lit(solver);
        self.levels.push((t, s));
        if !t.is_finite() {
            return;
        }
        let at = match self.counters.iter().position(|k| k.top >= t && k.top / 2.0 <= t) {
            Some(i) => i,
            None => {
                let k = self.counter(m, solver, t);
                self.counters.push(k);
                self.counters.len() - 1
            }
        };
        let k = &self.counters[at];
        // Sound: the parts weigh at most t, so their units at most t / unit.
        let most = (t / k.unit * (1.0 + SLACK)).floor();
        let mut clauses = Vec::new();
        for out in &k.out {
            if most < out.len() as f64 {
                clauses.push(vec![!s, !out[most as usize]]);
            }
        }
        for c in clauses {
            m.add(solver, &c);
        }
    }

    /// The weighted parts a chip can have, each with its indicator
    /// (defined here on first use).
    fn parts(&mut self, m: &mut Model, solver: &mut Solver<'static>, d: u32) -> Vec<(Lit, f64)> {
        let model = self.model.clone();
        let mut items = Vec::new();
        for u in 0..model.flops.len() as u32 {
            let t = model.op_time(u, d);
            if t > 0.0 {
                items.push((m.x(u, d), t));
            }
        }
        for (r, (_, feeds)) in model.replicas.iter().enumerate() {
            let t = model.replica_time(r as u32, d);
            if t == 0.0 {
                continue;
            }
            let lit = *self.copies.entry((r as u32, d)).or_insert_with(|| {
                let h = m.new_lit(solver);
                for &w in feeds {
                    m.add(solver, &[h, !m.x(w, d)]);
                }
                h
            });
            items.push((lit, t));
        }
        for l in 0..model.bandwidth.len() {
            if model.package.links[l].src != d {
                continue;
            }
            for u in 0..model.consumers.len() as u32 {
                let Some(least) = model.consumers[u as usize].iter().map(|&(_, b)| b).min() else {
                    continue;
                };
                if let Some(y) = self.crossing(m, solver, u, l) {
                    items.push((y, model.link_time(l, least as f64, 1)));
                }
            }
        }
        items
    }

    /// The indicator of `u`'s output crossing link `l`, implied by each
    /// consumer whose route from `u` would cross it.
    fn crossing(&mut self, m: &mut Model, solver: &mut Solver<'static>, u: u32, l: usize) -> Option<Lit> {
        if let Some(&y) = self.cross.get(&(u, l)) {
            return y;
        }
        let consumers = &self.model.consumers[u as usize];
        let y = match self.shapes[l] {
            Some((s, t)) => {
                let y = m.new_lit(solver);
                for &(v, _) in consumers {
                    // chip(u) <= s and chip(v) >= t -> y
                    m.add_l(
                        solver,
                        None,
                        &[L::Lit(y), m.ge_l(u, s as i64 + 1), neg(m.ge_l(v, t as i64))],
                    );
                }
                Some(y)
            }
            None if self.pairs[l].len() * consumers.len() <= PAIR_LIMIT => {
                let y = m.new_lit(solver);
                for &(v, _) in consumers {
                    for &(a, b) in &self.pairs[l] {
                        m.add(solver, &[y, !m.x(u, a), !m.x(v, b)]);
                    }
                }
                Some(y)
            }
            None => None,
        };
        self.cross.insert((u, l), y);
        y
    }

    /// A counter for targets up to `top`, at the finest resolution that fits.
    fn counter(&mut self, m: &mut Model, solver: &mut Solver<'static>, top: f64) -> Counter {
        let chips = self.model.num_chips() as u32;
        let parts: Vec<Vec<(Lit, f64)>> = (0..chips).map(|d| self.parts(m, solver, d)).collect();
        for k in UNITS {
            let unit = top / k as f64;
            let weighed: Vec<Vec<(Lit, usize)>> = parts.iter().map(|p| in_units(p, unit, k + 1)).collect();
            let cost: usize = weighed.iter().map(|w| counter_cost(w, k + 1)).sum();
            if cost <= COUNTER_BUDGET || k == UNITS[UNITS.len() - 1] {
                let out = weighed.into_iter().map(|w| sequential(m, solver, w, k + 1)).collect();
                return Counter { top, unit, out };
            }
        }
        unreachable!("the coarsest resolution is always built")
    }

    /// Cuts for a model whose latency is over `t`, each guarded by `t`'s
    /// selector; empty when it meets `t`.
    pub fn cuts(&self, m: &Model, p: &Placement, t: f64) -> Vec<Vec<Lit>> {
        let model = &self.model;
        let s = self.selector(t);
        let chips = &p.chips;
        // A transfer without a route: no latency at all.
        for u in 0..model.consumers.len() as u32 {
            let a = chips[u as usize];
            for &(v, _) in &model.consumers[u as usize] {
                let b = chips[v as usize];
                if model.package.hops(a, b).is_none() {
                    return vec![vec![!s, !m.x(u, a), !m.x(v, b)]];
                }
            }
        }
        let Ok(stages) = model.stage_times(chips) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (d, &stage) in stages.iter().enumerate() {
            if stage <= t {
                continue;
            }
            let parts = shrink(model, d as u32, model.parts(chips, d as u32), t);
            let mut clause = vec![!s];
            clause.extend(self.explain(m, chips, d as u32, &parts));
            out.push(clause);
            out.extend(self.moved(m, chips, d as u32, &parts, t, s));
        }
        for clause in &mut out {
            clause.sort();
            clause.dedup();
        }
        out.sort();
        out.dedup();
        out
    }

    /// The same parts on every other chip they overload too: the nodes and
    /// copies as they are, the crossings of the one link out of `d` (routes
    /// an interval of chips) moved to the one such link out of the other
    /// chip. On a ring of equal chips, one overloaded chip teaches them all.
    fn moved(&self, m: &Model, chips: &[u32], d: u32, parts: &ChipParts, t: f64, s: Lit) -> Vec<Vec<Lit>> {
        let model = &self.model;
        let feeders: Vec<u32> = parts.replicas.iter().map(|&r| self.feeder(chips, r, d)).collect();
        let mut causes: Vec<(u32, u32)> = Vec::new();
        let crossing = match parts.links.as_slice() {
            [] => None,
            [(l, crossing)] if self.shapes[*l].is_some() => {
                for &(u, size) in crossing {
                    let (v, b) = self.cause(chips, u, *l);
                    if b < size {
                        return Vec::new();
                    }
                    causes.push((u, v));
                }
                Some(crossing.clone())
            }
            _ => return Vec::new(),
        };
        let mut out = Vec::new();
        for d2 in (0..model.num_chips() as u32).filter(|&x| x != d) {
            let mut moved = ChipParts {
                nodes: parts.nodes.clone(),
                replicas: parts.replicas.clone(),
                links: Vec::new(),
            };
            let mut shape = None;
            if let Some(c) = &crossing {
                let mut out_links = (0..model.bandwidth.len())
                    .filter(|&l| model.package.links[l].src == d2 && self.shapes[l].is_some());
                let (Some(l2), None) = (out_links.next(), out_links.next()) else {
                    continue;
                };
                moved.links.push((l2, c.clone()));
                shape = self.shapes[l2];
            }
            if model.stage_of(d2, &moved) <= t {
                continue;
            }
            let mut clause = vec![!s];
            clause.extend(moved.nodes.iter().map(|&u| !m.x(u, d2)));
            clause.extend(feeders.iter().map(|&w| !m.x(w, d2)));
            if let Some((s2, t2)) = shape {
                for &(u, v) in &causes {
                    clause.extend(lit_of(m.ge_l(u, s2 as i64 + 1)));
                    clause.extend(lit_of(neg(m.ge_l(v, t2 as i64))));
                }
            }
            out.push(clause);
        }
        out
    }

    /// A placed node on chip `d` that replica `r` feeds (there is one when
    /// its copy is on `d`).
    fn feeder(&self, chips: &[u32], r: u32, d: u32) -> u32 {
        self.model.replicas[r as usize]
            .1
            .iter()
            .copied()
            .find(|&w| chips[w as usize] == d)
            .expect("a copy is on a chip hosting what it feeds")
    }

    /// The consumer that sends `u`'s output over link `l` (the heaviest
    /// such edge), with its bytes.
    fn cause(&self, chips: &[u32], u: u32, l: usize) -> (u32, u64) {
        let model = &self.model;
        let a = chips[u as usize];
        let on_route = |v: u32| {
            let b = chips[v as usize];
            b != a && model.route(a, b).is_some_and(|mut r| r.any(|x| x == l))
        };
        model.consumers[u as usize]
            .iter()
            .filter(|&&(v, _)| on_route(v))
            .max_by_key(|&&(_, b)| b)
            .copied()
            .expect("a crossing has a consumer beyond the link")
    }

    /// The negated causes of a chip's parts under `chips`.
    fn explain(&self, m: &Model, chips: &[u32], d: u32, parts: &ChipParts) -> Vec<Lit> {
        let model = &self.model;
        let mut lits: Vec<Lit> = parts.nodes.iter().map(|&u| !m.x(u, d)).collect();
        for &r in &parts.replicas {
            lits.push(!m.x(self.feeder(chips, r, d), d));
        }
        for (l, crossing) in &parts.links {
            for &(u, size) in crossing {
                let a = chips[u as usize];
                let (v, b) = self.cause(chips, u, *l);
                match self.shapes[*l] {
                    Some((s, t)) if b >= size => {
                        // chip(u) <= s and chip(v) >= t: any such pair crosses l.
                        lits.extend(lit_of(m.ge_l(u, s as i64 + 1)));
                        lits.extend(lit_of(neg(m.ge_l(v, t as i64))));
                    }
                    _ => {
                        lits.push(!m.x(u, a));
                        lits.push(!m.x(v, chips[v as usize]));
                        if b < size {
                            // The edge that sets the size leaves chip a too.
                            let (w, _) = model.consumers[u as usize]
                                .iter()
                                .copied()
                                .find(|&(w, bw)| bw == size && chips[w as usize] != a)
                                .expect("the size is an edge's that leaves the chip");
                            lits.push(m.x(w, a));
                        }
                    }
                }
            }
        }
        lits
    }
}

/// Drops parts, lightest first, while the rest alone stays over `t`.
fn shrink(model: &LatencyModel, d: u32, mut parts: ChipParts, t: f64) -> ChipParts {
    // (weight, kind, index) of every part; kind 0 node, 1 replica, 2 crossing.
    let mut all: Vec<(f64, u8, usize, usize)> = Vec::new();
    for (i, &u) in parts.nodes.iter().enumerate() {
        all.push((model.op_time(u, d), 0, i, 0));
    }
    for (i, &r) in parts.replicas.iter().enumerate() {
        all.push((model.replica_time(r, d), 1, i, 0));
    }
    for (k, (l, crossing)) in parts.links.iter().enumerate() {
        for (i, &(_, b)) in crossing.iter().enumerate() {
            all.push((model.link_time(*l, b as f64, 1), 2, k, i));
        }
    }
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Dropped parts are marked, then removed at once (indices stay valid).
    let mut gone_nodes = vec![false; parts.nodes.len()];
    let mut gone_reps = vec![false; parts.replicas.len()];
    let mut gone_cross: Vec<Vec<bool>> = parts.links.iter().map(|(_, c)| vec![false; c.len()]).collect();
    let keep = |gn: &[bool], gr: &[bool], gc: &[Vec<bool>], parts: &ChipParts| ChipParts {
        nodes: parts
            .nodes
            .iter()
            .zip(gn)
            .filter(|(_, g)| !**g)
            .map(|(u, _)| *u)
            .collect(),
        replicas: parts
            .replicas
            .iter()
            .zip(gr)
            .filter(|(_, g)| !**g)
            .map(|(r, _)| *r)
            .collect(),
        links: parts
            .links
            .iter()
            .zip(gc)
            .map(|((l, c), g)| (*l, c.iter().zip(g).filter(|(_, g)| !**g).map(|(x, _)| *x).collect()))
            .collect(),
    };
    for &(_, kind, i, j) in &all {
        match kind {
            0 => gone_nodes[i] = true,
            1 => gone_reps[i] = true,
            _ => gone_cross[i][j] = true,
        }
        if model.stage_of(d, &keep(&gone_nodes, &gone_reps, &gone_cross, &parts)) <= t {
            match kind {
                0 => gone_nodes[i] = false,
                1 => gone_reps[i] = false,
                _ => gone_cross[i][j] = false,
            }
        }
    }
    parts = keep(&gone_nodes, &gone_reps, &gone_cross, &parts);
    parts.links.retain(|(_, c)| !c.is_empty());
    parts
}

/// Weights in whole units, rounded down (with a margin for the rounding of
/// the division), capped at `cap`; parts of no unit are left out.
fn in_units(parts: &[(Lit, f64)], unit: f64, cap: usize) -> Vec<(Lit, usize)> {
    let mut out: Vec<(Lit, usize)> = parts
        .iter()
        .map(|&(l, w)| (l, (w / unit * (1.0 - SLACK)).floor().min(cap as f64) as usize))
        .filter(|&(_, k)| k > 0)
        .collect();
    // Lightest first: the running totals stay small for longer.
    out.sort_by_key(|&(_, k)| k);
    out
}

fn counter_cost(items: &[(Lit, usize)], cap: usize) -> usize {
    let mut run = 0;
    let mut cost = 0;
    for &(_, w) in items {
        run = (run + w).min(cap);
        cost += 2 * run;
    }
    cost
}

/// A sequential counter: `out[j - 1]` is implied by the items weighing at
/// least `j` units in all (`j <= cap`; only that direction, which is what
/// an upper bound on the count needs).
fn sequential(m: &mut Model, solver: &mut Solver<'static>, items: Vec<(Lit, usize)>, cap: usize) -> Vec<Lit> {
    let mut prev: Vec<Lit> = Vec::new();
    for (x, w) in items {
        prev = m.counter_step(solver, &prev, x, w, cap);
    }
    prev
}

/// `(s, t)` when the pairs are every `a <= s` with every `b >= t`.
fn shape(pairs: &[(u32, u32)], c: u32) -> Shape {
    if pairs.is_empty() {
        return None;
    }
    let s = pairs.iter().map(|p| p.0).max()?;
    let t = pairs.iter().map(|p| p.1).min()?;
    let full = (s as usize + 1) * (c - t) as usize;
    let inside = pairs.iter().all(|&(a, b)| a <= s && b >= t);
    (inside && pairs.len() == full).then_some((s, t))
}

fn neg(l: L) -> L {
    match l {
        L::True => L::False,
        L::False => L::True,
        L::Lit(l) => L::Lit(!l),
    }
}

/// The literal of a clause term; a constant false adds nothing (a constant
/// true cannot occur: the cause it negates always holds for the model).
fn lit_of(l: L) -> Option<Lit> {
    match l {
        L::Lit(l) => Some(l),
        _ => None,
    }
}
