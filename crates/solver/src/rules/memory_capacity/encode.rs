//! Units for weights that fit no chip, pairs for two that cannot share
//! one, and per chip a weighted sequential counter of the weights rounded
//! down to 1/64 (or coarser) of the capacity, with one more unit as soon as
//! a remainder is there: eager and implied by the rule. What the rounding
//! lets through is caught by lazy cuts, each a minimal overflowing set of
//! nodes, forbidden on every chip it overflows.

use crate::sat::encode::{Enc, Judged, Model, RuleEncoding};
use crate::sat::{SatOptions, SatStats};
use mcm_core::problem::{CmpOp, Formula, Term};
use varisat::{Lit, Solver};

/// The instances of every `memory_capacity` constraint, and the budgets
/// they share.
pub(crate) struct MemoryEncoding {
    mem: Vec<MemInst>,
    /// Eager pair clauses left.
    pair_budget: usize,
    /// Clauses and variables spent on counters so far (counts apart).
    counter_used: usize,
    count_used: usize,
}

impl MemoryEncoding {
    pub(crate) fn boxed(opts: &SatOptions) -> Box<dyn RuleEncoding> {
        Box::new(MemoryEncoding {
            mem: Vec::new(),
            pair_budget: opts.memory_pairs,
            counter_used: 0,
            count_used: 0,
        })
    }
}

impl RuleEncoding for MemoryEncoding {
    fn encode(&mut self, enc: &mut Enc, ci: usize, _ii: usize, f: &Formula) -> bool {
        let (n, c) = (enc.m.n, enc.m.c);
        let Some(mi) = memory(n, c, ci, f) else {
            return false;
        };
        memory_eager(enc.m, enc.solver, &mi, &mut self.pair_budget);
        let (total, used) = match mi.items.first() {
            Some(&(_, _, w)) if mi.items.iter().all(|it| it.2 == w) => (enc.opts.count_counters, &mut self.count_used),
            _ => (enc.opts.memory_counters, &mut self.counter_used),
        };
        let share = total / c.max(1);
        *used += memory_counter(enc.m, enc.solver, &mi, share.min(total - *used));
        self.mem.push(mi);
        true
    }

    /// A minimal overflowing set of nodes, forbidden on every chip it overflows.
    fn cuts(
        &mut self,
        on: &Judged,
        _stats: &mut SatStats,
        out: &mut Vec<(usize, Vec<Lit>)>,
        _defs: &mut Vec<Vec<Lit>>,
    ) {
        let (m, p, active) = (on.m, on.p, on.active);
        let start = out.len();
        for mi in &self.mem {
            if !active[mi.ci] {
                continue;
            }
            let here: Vec<usize> = (0..mi.items.len())
                .filter(|&i| p.chip(mi.items[i].0) == mi.items[i].1)
                .collect();
            let total: f64 = here.iter().map(|&i| mi.items[i].2).sum();
            if total <= mi.cap {
                continue;
            }
            // A small overflowing set: the heaviest items first.
            let mut by_weight = here.clone();
            by_weight.sort_by(|&a, &b| mi.items[b].2.total_cmp(&mi.items[a].2));
            let mut acc = 0.0;
            let mut take = Vec::new();
            for &i in &by_weight {
                take.push(i);
                acc += mi.items[i].2;
                if acc > mi.cap {
                    break;
                }
            }
            if !overflows(mi, &mut take) {
                take = here;
            }
            let nodes: Vec<u32> = take.iter().map(|&i| mi.items[i].0).collect();
            // The same nodes overflow every chip they do not fit on.
            for other in &self.mem {
                if other.ci != mi.ci {
                    continue;
                }
                let mut pos: Vec<usize> = Vec::with_capacity(nodes.len());
                for &u in &nodes {
                    match other.pos[u as usize] {
                        NONE | MANY => break,
                        i => pos.push(i as usize),
                    }
                }
                if pos.len() == nodes.len() && overflows(other, &mut pos) {
                    let clause = pos.iter().map(|&i| !m.x(other.items[i].0, other.items[i].1)).collect();
                    out.push((other.ci, clause));
                }
            }
        }
        // Cuts found through several overloaded chips can repeat.
        let mut mine = out.split_off(start);
        mine.sort();
        mine.dedup();
        out.extend(mine);
    }
}

/// A memory instance: items `(node, chip, weight)`, of which those with
/// `chip(node) == chip` add up, and must stay within `cap`.
struct MemInst {
    ci: usize,
    items: Vec<(u32, u32, f64)>,
    cap: f64,
    /// Position of each node's item, `NONE` when it has none, `MANY` when several.
    pos: Vec<u32>,
}

const NONE: u32 = u32::MAX;
const MANY: u32 = u32::MAX - 1;

/// `sum(chip(u) == k: w) <= cap` with finite weights >= 0.
fn memory(n: usize, c: usize, ci: usize, f: &Formula) -> Option<MemInst> {
    let Formula::Cmp(CmpOp::Le, Term::Sum(es), Term::Const(cap)) = f else {
        return None;
    };
    if cap.is_nan() {
        return None;
    }
    let mut items = Vec::with_capacity(es.len());
    let mut pos = vec![NONE; n];
    for (cond, t) in es {
        let (Formula::Cmp(CmpOp::Eq, Term::Chip(u), Term::Const(k)), Term::Const(w)) = (cond, t) else {
            return None;
        };
        if !(w.is_finite() && *w >= 0.0) {
            return None;
        }
        if !(*k >= 0.0 && k.fract() == 0.0 && (*k as usize) < c) {
            // Never holds: the item never counts.
            continue;
        }
        let slot = &mut pos[*u as usize];
        *slot = if *slot == NONE { items.len() as u32 } else { MANY };
        items.push((*u, *k as u32, *w));
    }
    Some(MemInst {
        ci,
        items,
        cap: *cap,
        pos,
    })
}

/// Whether the items at these positions (in instance order) overflow.
fn overflows(mi: &MemInst, positions: &mut [usize]) -> bool {
    positions.sort_unstable();
    let total: f64 = positions.iter().map(|&i| mi.items[i].2).sum();
    // NaN never fits (the checker's `<=` is false on it).
    matches!(total.partial_cmp(&mi.cap), Some(std::cmp::Ordering::Greater) | None)
}

/// The finest resolution of the eager memory counters: weights are counted
/// in units of `cap / K`, rounded down, for the largest K of these that fits
/// the budget.
const COUNTER_UNITS: [u64; 4] = [64, 32, 16, 8];

/// A weighted sequential counter of the weights rounded down to units of
/// `q = cap / K`: each weight is `q * units + r` with `r >= 0`, so `sum w <=
/// cap` implies `sum units <= K`, and `sum units <= K - 1` as soon as some
/// remainder is there (a virtual item of one unit stands for "some item with
/// a remainder is on the chip"). The clauses are therefore sound, and the
/// lazy cuts settle what the rounding lets through. Integer weights and
/// capacity are divided exactly; fractional ones (a compute time, a ratio)
/// are rounded down with a margin, so that every weight counts strictly
/// fewer units than it holds and has a remainder (without a counter, such a
/// budget was left to the cuts alone: on BERT-large with `compute_budget(1
/// ms)`, 1,400 rounds of SAT calls for one witness).
fn memory_counter(m: &mut Model, solver: &mut Solver, mi: &MemInst, budget: usize) -> usize {
    let integral = |v: f64| v.fract() == 0.0 && (0.0..9.0e15).contains(&v);
    if !(mi.cap.is_finite() && mi.cap > 0.0) {
        return 0;
    }
    let exact = integral(mi.cap) && mi.items.iter().all(|it| integral(it.2));
    let fits: Vec<(u32, u32, f64)> = mi.items.iter().filter(|it| it.2 <= mi.cap).copied().collect();
    // (units, remainder) of a weight counted in units of cap / k.
    let units = |w: f64, k: u64| -> (usize, bool) {
        if exact {
            let (w, cap) = (w as u128, mi.cap as u128);
            ((w * k as u128 / cap) as usize, !(w * k as u128).is_multiple_of(cap))
        } else if w <= 0.0 {
            (0, false)
        } else {
            // At most k (w <= cap): far above f64's rounding error.
            let x = w / mi.cap * k as f64;
            ((x - 1e-9).floor().max(0.0) as usize, true)
        }
    };
    // A small integer capacity is counted in its own units: exact.
    let own = (exact && mi.cap >= 1.0 && mi.cap <= COUNTER_UNITS[0] as f64).then_some(mi.cap as u64);
    for k in own.into_iter().chain(COUNTER_UNITS) {
        let mut items: Vec<(Lit, usize)> = Vec::new();
        let mut rest: Vec<Lit> = Vec::new();
        for &(u, d, w) in &fits {
            let (n, r) = units(w, k);
            if n > 0 {
                items.push((m.x(u, d), n));
            }
            if r {
                rest.push(m.x(u, d));
            }
        }
        let k = k as usize;
        let total: usize = items.iter().map(|it| it.1).sum::<usize>() + usize::from(!rest.is_empty());
        if items.is_empty() || total <= k {
            return 0;
        }
        // Lightest first: the running totals stay small for longer.
        items.sort_by_key(|it| it.1);
        let (mut cost, mut run) = (rest.len() + 1, usize::from(!rest.is_empty()));
        for it in &items {
            run = (run + it.1).min(k);
            cost += 3 * run + 1;
        }
        if cost > budget {
            continue;
        }
        if !rest.is_empty() {
            let v = m.new_lit(solver);
            for &x in &rest {
                m.add(solver, &[!x, v]);
            }
            items.insert(0, (v, 1));
        }
        // prev[j - 1]: the items so far weigh at least j units.
        let mut prev: Vec<Lit> = Vec::new();
        for (i, &(x, w)) in items.iter().enumerate() {
            // Overflow: x and at least k + 1 - w units before.
            if prev.len() > k - w {
                let clause = [!x, !prev[k - w]];
                m.add_guarded(solver, mi.ci, &clause);
            }
            if i + 1 == items.len() {
                break;
            }
            prev = m.counter_step(solver, &prev, x, w, k);
        }
        return cost;
    }
    0
}

/// Units for items that overflow alone, pairs for pairs that do.
fn memory_eager(m: &mut Model, solver: &mut Solver, mi: &MemInst, budget: &mut usize) {
    let mut order: Vec<usize> = (0..mi.items.len()).collect();
    order.sort_by(|&a, &b| mi.items[b].2.total_cmp(&mi.items[a].2));
    let lit = |m: &Model, i: usize| m.x(mi.items[i].0, mi.items[i].1);
    for (ai, &a) in order.iter().enumerate() {
        if overflows(mi, &mut [a]) {
            let l = lit(m, a);
            m.add_guarded(solver, mi.ci, &[!l]);
            continue;
        }
        for &b in &order[ai + 1..] {
            if *budget == 0 || !overflows(mi, &mut [a, b]) {
                break;
            }
            *budget -= 1;
            let (la, lb) = (lit(m, a), lit(m, b));
            m.add_guarded(solver, mi.ci, &[!la, !lb]);
        }
    }
}
