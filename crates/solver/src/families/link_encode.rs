//! The SAT side of per-link sums ([`super::link`]). "Item j counts" is
//! never a variable: a table is a union of rectangles of chip intervals,
//! and "chip(u) in lo..=hi" is two order literals, so one rectangle is one
//! clause's worth of literals. Eager: an item that overflows alone has
//! every rectangle of its table forbidden. Lazy: an instance a model
//! overflows gets a cut over a small overflowing set of its counting
//! items, each stated as the largest rectangle of its table around the
//! model's chips (on a ring, "the edge starts at or below the link and
//! ends above it": two literals), so one cut serves every placement that
//! loads the link with the same edges.

use super::link::{recognise, Item, LinkShape, Tables};
use super::resource::slack;
use crate::checker::Checker;
use crate::domain::bits;
use crate::sat::encode::{Enc, Judged, Model};
use mcm_core::problem::Formula;
use varisat::Lit;

struct Inst {
    ci: usize,
    ii: usize,
    shape: LinkShape,
    /// The rounding margin (0 for exact sums).
    slack: f64,
}

impl Inst {
    /// Whether a load surely breaks the bound, whatever the order of the sum.
    fn over(&self, load: f64) -> bool {
        load > self.shape.cap + self.slack
    }
}

#[derive(Default)]
pub(crate) struct LinkEncoding {
    tables: Option<Tables>,
    insts: Vec<Inst>,
}

impl LinkEncoding {
    pub(crate) fn encode(&mut self, enc: &mut Enc, ci: usize, ii: usize, f: &Formula) -> bool {
        let p = enc.problem;
        let tables = self.tables.get_or_insert_with(|| Tables::new(enc.m.c));
        let Some(shape) = recognise(f, (&p.graph, &p.package), tables) else {
            return false;
        };
        let slack = if shape.exact {
            0.0
        } else {
            slack(shape.cap, shape.base + shape.items.iter().map(|it| it.w).sum::<f64>())
        };
        let inst = Inst { ci, ii, shape, slack };
        for it in &inst.shape.items {
            if inst.over(inst.shape.base + it.w) {
                for clause in forbid(enc.m, tables, it) {
                    enc.m.add_guarded(enc.solver, ci, &clause);
                }
            }
        }
        self.insts.push(inst);
        true
    }

    pub(crate) fn cuts(&mut self, on: &Judged, out: &mut Vec<(usize, Vec<Lit>)>) {
        let Some(tables) = &self.tables else { return };
        let (m, p) = (on.m, on.p);
        let checker = Checker::new(&on.problem.graph, &on.problem.package, p);
        for inst in &self.insts {
            if !on.active[inst.ci] {
                continue;
            }
            let s = &inst.shape;
            let on_chips = |it: &Item| tables.counts(it, p.chip(it.u), p.chip(it.v));
            let counting: Vec<&Item> = s.items.iter().filter(|it| on_chips(it)).collect();
            let load = s.base + counting.iter().map(|it| it.w).sum::<f64>();
            // Fractional weights: the checker judges a load near the cap.
            let broken = if s.exact {
                load > s.cap
            } else {
                load > s.cap - inst.slack
                    && !checker.holds(&on.problem.constraints[inst.ci].instances.get(inst.ii).formula)
            };
            if !broken {
                continue;
            }
            let cut = |set: &[&Item]| {
                let clause = set
                    .iter()
                    .flat_map(|it| apart(m, tables, it, p.chip(it.u), p.chip(it.v)))
                    .collect();
                (inst.ci, clause)
            };
            // Disjoint overflowing sets, each a cut: many light items over a
            // link are excluded in one round, not a few at a time.
            let mut rest = counting;
            match overflowing(inst, &rest) {
                None => out.push(cut(&rest)),
                Some(mut set) => loop {
                    out.push(cut(&set));
                    rest.retain(|it| !set.iter().any(|s| std::ptr::eq(*s, *it)));
                    match overflowing(inst, &rest) {
                        Some(next) => set = next,
                        None => break,
                    }
                },
            }
        }
    }
}

/// A minimal set of the counting items that surely overflows: the heaviest
/// first, then each dropped that is not needed. `None` when the whole set
/// breaks the bound only within the rounding margin (then all of it is the
/// cause: adding non-negative weights never lowers a sum in floating point).
fn overflowing<'a>(inst: &Inst, counting: &[&'a Item]) -> Option<Vec<&'a Item>> {
    let mut by_weight = counting.to_vec();
    by_weight.sort_by(|a, b| b.w.total_cmp(&a.w));
    let mut load = inst.shape.base;
    let mut take = Vec::new();
    for it in by_weight {
        take.push(it);
        load += it.w;
        if inst.over(load) {
            break;
        }
    }
    if !inst.over(load) {
        return None;
    }
    // Lightest first: each one not needed goes.
    for k in (0..take.len()).rev() {
        if inst.over(load - take[k].w) {
            load -= take[k].w;
            take.remove(k);
        }
    }
    Some(take)
}

/// Literals true exactly when `chip(u)` is outside `lo..=hi`.
fn outside(m: &Model, u: u32, lo: u32, hi: u32) -> impl Iterator<Item = Lit> {
    let below = (lo > 0).then(|| !m.ge(u, lo));
    let above = ((hi as usize + 1) < m.c).then(|| m.ge(u, hi + 1));
    below.into_iter().chain(above)
}

/// The largest run of chips around `at` for which `ok` holds.
fn run(at: u32, c: u32, ok: impl Fn(u32) -> bool) -> (u32, u32) {
    let (mut lo, mut hi) = (at, at);
    while lo > 0 && ok(lo - 1) {
        lo -= 1;
    }
    while hi + 1 < c && ok(hi + 1) {
        hi += 1;
    }
    (lo, hi)
}

/// "Item `it` does not count the way it does with its nodes on chips `a`
/// and `b`": its nodes are outside a rectangle of its table around them.
fn apart(m: &Model, tables: &Tables, it: &Item, a: u32, b: u32) -> Vec<Lit> {
    let c = tables.chips as u32;
    let t = it.table;
    if it.u == it.v {
        let (lo, hi) = run(a, c, |k| tables.holds(t, k, k));
        return outside(m, it.u, lo, hi).collect();
    }
    let (blo, bhi) = run(b, c, |y| tables.holds(t, a, y));
    let (alo, ahi) = run(a, c, |x| (blo..=bhi).all(|y| tables.holds(t, x, y)));
    outside(m, it.u, alo, ahi).chain(outside(m, it.v, blo, bhi)).collect()
}

/// Clauses that forbid every pair of chips on which item `it` counts: rows
/// with the same chips grouped into runs, times each run of those chips.
fn forbid(m: &Model, tables: &Tables, it: &Item) -> Vec<Vec<Lit>> {
    let c = tables.chips as u32;
    let t = it.table;
    let mut out = Vec::new();
    if it.u == it.v {
        let mut k = 0;
        while k < c {
            if tables.holds(t, k, k) {
                let (lo, hi) = run(k, c, |x| tables.holds(t, x, x));
                out.push(outside(m, it.u, lo, hi).collect());
                k = hi + 1;
            } else {
                k += 1;
            }
        }
        return out;
    }
    let mut x = 0;
    while x < c {
        let row = tables.row(t, x);
        let mut y = x;
        while y + 1 < c && tables.row(t, y + 1) == row {
            y += 1;
        }
        let chips: Vec<u32> = bits(row).collect();
        let mut i = 0;
        while i < chips.len() {
            let mut j = i;
            while j + 1 < chips.len() && chips[j + 1] == chips[j] + 1 {
                j += 1;
            }
            out.push(
                outside(m, it.u, x, y)
                    .chain(outside(m, it.v, chips[i], chips[j]))
                    .collect(),
            );
            i = j + 1;
        }
        x = y + 1;
    }
    out
}
