//! Per-chip sums and counts: `sum(chip(u) == k: w) <= cap` (a `count` is a
//! sum of ones), whatever rule wrote it. Loads are trailed cells added to as
//! nodes are fixed, as `memory_capacity`'s are; an open node whose weight no
//! longer fits loses the chip. Integer weights are summed exactly; other
//! weights prune only past a rounding margin, and the checker judges the
//! complete placement.

use super::equal::{Groups, ALONE};
use super::pack::Pack;
use super::spread::{ChipBound, Spread, Units};
use crate::checker::Checker;
use crate::propagator::Cx;
use crate::store::Fail;
use mcm_core::problem::{CmpOp, Formula, GroundConstraint, Term};
use std::collections::HashMap;

/// A recognised instance: items `(node, chip, weight)` of which those with
/// `chip(node) == chip` add to `base`, and the total must stay within `cap`
/// (strictly below it when `strict`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Shape {
    pub items: Vec<(u32, u32, f64)>,
    pub base: f64,
    pub cap: f64,
    pub strict: bool,
    /// Integer weights: sums are exact in any order, and `cap` is already
    /// the largest integer total allowed (`strict` is false).
    pub exact: bool,
}

/// Below this, integer sums of f64 are exact in any order.
const EXACT_LIMIT: f64 = 9.0e15;

/// `agg <= cap` or `agg < cap` (either way round) with a finite constant
/// cap: the aggregate, the cap, and whether the bound is strict.
pub(crate) fn upper_bound(f: &Formula) -> Option<(&Term, f64, bool)> {
    let Formula::Cmp(op, l, r) = f else { return None };
    let (agg, cap, strict) = match (op, l, r) {
        (CmpOp::Le, t, Term::Const(c)) | (CmpOp::Ge, Term::Const(c), t) => (t, *c, false),
        (CmpOp::Lt, t, Term::Const(c)) | (CmpOp::Gt, Term::Const(c), t) => (t, *c, true),
        _ => return None,
    };
    cap.is_finite().then_some((agg, cap, strict))
}

/// The entries of a sum of finite non-negative constants, or of a count
/// (ones), in formula order: `(condition, weight)`.
pub(crate) fn entries(agg: &Term) -> Option<Vec<(&Formula, f64)>> {
    let raw: Vec<(&Formula, f64)> = match agg {
        Term::Sum(es) => es
            .iter()
            .map(|(cond, t)| t.as_const().map(|w| (cond, w)))
            .collect::<Option<_>>()?,
        Term::Count(cs) => cs.iter().map(|c| (c, 1.0)).collect(),
        _ => return None,
    };
    raw.iter().all(|&(_, w)| w.is_finite() && w >= 0.0).then_some(raw)
}

/// The bound as a propagator applies it: `(cap, strict, exact)`. Integer
/// weights (with `base`, the weights that always count) sum exactly in any
/// order, so the cap becomes the largest integer total allowed and the
/// bound is not strict; other weights keep the cap as written.
pub(crate) fn normalise(
    cap: f64,
    strict: bool,
    base: f64,
    weights: impl Iterator<Item = f64> + Clone,
) -> (f64, bool, bool) {
    let integral = |v: f64| v.fract() == 0.0;
    let total: f64 = base + weights.clone().sum::<f64>();
    let exact = integral(base) && weights.into_iter().all(integral) && total < EXACT_LIMIT;
    match (exact, strict) {
        (true, true) => (cap.ceil() - 1.0, false, true),
        (true, false) => (cap.floor(), false, true),
        (false, s) => (cap, s, false),
    }
}

/// The shape of `f`, or `None` when it is not exactly a bounded sum of
/// non-negative weights over `chip(u) == k` conditions.
pub(crate) fn recognise(f: &Formula, chips: usize) -> Option<Shape> {
    let (agg, cap, strict) = upper_bound(f)?;
    let mut items: Vec<(u32, u32, f64)> = Vec::new();
    let mut base = 0.0;
    for (cond, w) in entries(agg)? {
        let (u, k) = match cond {
            Formula::Const(true) => {
                base += w;
                continue;
            }
            Formula::Const(false) => continue,
            Formula::Cmp(CmpOp::Eq, Term::Chip(u), Term::Const(k))
            | Formula::Cmp(CmpOp::Eq, Term::Const(k), Term::Chip(u)) => (*u, *k),
            _ => return None,
        };
        // A chip that does not exist never matches: the item never counts.
        if k >= 0.0 && k.fract() == 0.0 && (k as usize) < chips {
            items.push((u, k as u32, w));
        }
    }
    let (cap, strict, exact) = normalise(cap, strict, base, items.iter().map(|i| i.2));
    Some(Shape {
        items,
        base,
        cap,
        strict,
        exact,
    })
}

/// The rounding margin of a sum that is not exact: 1e-9 of the cap plus
/// the total, far above what summing in another order can change.
pub(crate) fn slack(cap: f64, total: f64) -> f64 {
    1e-9 * (cap.abs() + total)
}

struct Inst {
    /// What may be loaded: `cap` plus the rounding margin.
    limit: f64,
    /// The rounding margin in `limit` (0 for exact sums).
    slack: f64,
    base: f64,
    load: u32,
    /// Items, heaviest first (with `mates`, heaviest group first).
    items: Vec<(u32, u32, f64)>,
    /// The items of nodes forced onto one chip together, when some are.
    mates: Option<Mates>,
}

/// Per item of an instance, the items of its node's equality group
/// ([`super::equal`]) at the same chip: placing the node there places them
/// all, so the chip must have room for every one not yet counted.
struct Mates {
    /// Per item: the weight of its group's items at its chip (its own
    /// weight when alone), the order of the items.
    keys: Vec<f64>,
    /// Per item: its group's run in `runs`, or `u32::MAX` when alone.
    run: Vec<u32>,
    /// `(start, end)` in `flat` of each run: `(node, weight)` of a group's
    /// items at one chip.
    runs: Vec<(u32, u32)>,
    flat: Vec<(u32, f64)>,
}

/// An instance's item: `(node, chip, weight)`.
type Item = (u32, u32, f64);
/// A group's items at one chip: `(group, chip)`.
type RunKey = (u32, u32);

impl Mates {
    /// The items of `groups` in `items` (sorted again, heaviest group
    /// first), or `None` when no two items are in one group at one chip.
    fn of(items: &mut Vec<(u32, u32, f64)>, groups: &Groups) -> Option<Mates> {
        if groups.is_empty() {
            return None;
        }
        let mut by_run: HashMap<(u32, u32), Vec<(u32, f64)>> = HashMap::new();
        for &(u, k, w) in items.iter() {
            let g = groups.of(u);
            if g != ALONE {
                by_run.entry((g, k)).or_default().push((u, w));
            }
        }
        by_run.retain(|_, v| v.len() > 1);
        if by_run.is_empty() {
            return None;
        }
        let mut keyed: Vec<(Item, f64, Option<RunKey>)> = items
            .iter()
            .map(|&(u, k, w)| {
                let g = groups.of(u);
                match by_run.get(&(g, k)) {
                    Some(v) if g != ALONE => ((u, k, w), v.iter().map(|m| m.1).sum::<f64>(), Some((g, k))),
                    _ => ((u, k, w), w, None),
                }
            })
            .collect();
        keyed.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut at: HashMap<(u32, u32), u32> = HashMap::new();
        let mut m = Mates {
            keys: Vec::with_capacity(keyed.len()),
            run: Vec::with_capacity(keyed.len()),
            runs: Vec::new(),
            flat: Vec::new(),
        };
        items.clear();
        for (item, key, run) in keyed {
            items.push(item);
            m.keys.push(key);
            m.run.push(match run {
                None => u32::MAX,
                Some(r) => *at.entry(r).or_insert_with(|| {
                    let start = m.flat.len() as u32;
                    m.flat.extend_from_slice(&by_run[&r]);
                    m.runs.push((start, m.flat.len() as u32));
                    m.runs.len() as u32 - 1
                }),
            });
        }
        Some(m)
    }
}

/// The resource instances of one constraint.
pub(crate) struct Resource {
    insts: Vec<Inst>,
    /// Per node: (instance, chip, weight) of its items, by chip (then
    /// instance).
    of_node: Vec<Vec<(u32, u32, f64)>>,
    /// Per node: a cell set once its items are counted.
    counted: Vec<u32>,
    /// Instances the checker must judge on a complete placement: (index
    /// in the constraint, position here).
    inexact: Vec<(usize, usize)>,
    spread: Option<Spread>,
    /// Whole operations packed along the pipeline, for a sum whose weights
    /// differ ([`super::pack`]).
    pack: Option<Pack>,
}

/// Loads are f64 kept bit for bit in trailed i64 cells.
pub(super) fn get(cx: &Cx, cell: u32) -> f64 {
    f64::from_bits(cx.cell(cell) as u64)
}

pub(super) fn put(cx: &mut Cx, cell: u32, v: f64) {
    cx.set_cell(cell, v.to_bits() as i64)
}

impl Resource {
    pub fn new(cx: &mut Cx, shapes: Vec<(usize, Shape)>) -> Resource {
        let n = cx.n();
        let mut of_node = vec![Vec::new(); n];
        let mut insts = Vec::with_capacity(shapes.len());
        let mut inexact = Vec::new();
        for (index, s) in shapes {
            let i = insts.len() as u32;
            // Duplicate (node, chip) items count together.
            let mut items = s.items;
            items.sort_by_key(|it| (it.0, it.1));
            items.dedup_by(|b, a| {
                let same = (a.0, a.1) == (b.0, b.1);
                if same {
                    a.2 += b.2;
                }
                same
            });
            for &(u, k, w) in &items {
                of_node[u as usize].push((i, k, w));
            }
            items.sort_by(|a, b| b.2.total_cmp(&a.2));
            // A count over one node has no mates; the groups are found only
            // for sums over several.
            let mates = if items.len() > 1 {
                Mates::of(&mut items, cx.net().groups())
            } else {
                None
            };
            let slack = if s.exact {
                0.0
            } else {
                inexact.push((index, insts.len()));
                slack(s.cap, s.base + items.iter().map(|i| i.2).sum::<f64>())
            };
            let load = cx.new_cell(0);
            insts.push(Inst {
                limit: s.cap + slack,
                slack,
                base: s.base,
                load,
                items,
                mates,
            });
        }
        for items in &mut of_node {
            items.sort_by_key(|it| it.1);
        }
        let counted = (0..n)
            .map(|u| {
                if of_node[u].is_empty() {
                    u32::MAX
                } else {
                    cx.new_cell(0)
                }
            })
            .collect();
        let spread = Resource::spread(cx, &insts, inexact.is_empty());
        let pack = spread.as_ref().and_then(|s| {
            let (w, room) = s.units();
            let (w, room) = (w.to_vec(), room.to_vec());
            Pack::new(cx, &w, &room)
        });
        Resource {
            insts,
            of_node,
            counted,
            inexact,
            spread,
            pack,
        }
    }

    /// Run bounds, when every instance bounds one chip and no chip has two.
    fn spread(cx: &mut Cx, insts: &[Inst], exact: bool) -> Option<Spread> {
        let mut per_chip: Vec<Option<ChipBound>> = vec![None; cx.chips()];
        let mut total: f64 = 0.0;
        for inst in insts {
            let Some(&(_, k, _)) = inst.items.first() else { continue };
            if inst.items.iter().any(|it| it.1 != k) || per_chip[k as usize].is_some() {
                return None;
            }
            total = total.max(inst.items.iter().map(|i| i.2).sum::<f64>());
            let items = inst.items.iter().map(|&(u, _, w)| (u, w)).collect();
            per_chip[k as usize] = Some((inst.limit - inst.base, items));
        }
        let units = Units {
            exact,
            scale: if total > 0.0 { (1u64 << 40) as f64 / total } else { 1.0 },
        };
        Spread::new(cx, &per_chip, &units)
    }

    pub fn has_late(&self) -> bool {
        self.spread.is_some()
    }

    pub fn late(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        match &mut self.spread {
            Some(s) => s.check(cx),
            None => Ok(()),
        }
    }

    pub fn watches(&self, out: &mut Vec<u32>) {
        out.extend((0..self.of_node.len() as u32).filter(|&u| !self.of_node[u as usize].is_empty()));
    }

    /// Counts fixed node `x`'s items, then turns away what no longer fits.
    pub fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        if let Some(s) = &mut self.spread {
            s.on_change(x, cx);
        }
        if let Some(p) = &mut self.pack {
            p.on_change(x, cx)?;
        }
        let cell = self.counted[x as usize];
        if cell == u32::MAX || cx.cell(cell) != 0 {
            return Ok(());
        }
        let Some(d) = cx.value(x) else { return Ok(()) };
        cx.set_cell(cell, 1);
        // Sorted by chip: a count over every chip gives a node one item a
        // chip, of which only those on `d` count.
        let items = &self.of_node[x as usize];
        let from = items.partition_point(|it| it.1 < d);
        for &(i, k, w) in &items[from..] {
            if k != d {
                break;
            }
            let inst = &self.insts[i as usize];
            let load = get(cx, inst.load) + w;
            put(cx, inst.load, load);
            self.crowd_out(inst, load, cx)?;
        }
        Ok(())
    }

    /// Fails when `load` is over; removes each open item heavier than the room left.
    fn crowd_out(&self, inst: &Inst, load: f64, cx: &mut Cx) -> Result<(), Fail> {
        let room = inst.limit - (inst.base + load);
        // NaN room: never reached with finite weights, refused if it is.
        if room.is_nan() || room < 0.0 {
            return Err(cx.fail());
        }
        let Some(m) = &inst.mates else {
            for &(y, k, w) in &inst.items {
                if w <= room {
                    break;
                }
                if !cx.is_fixed(y) {
                    cx.remove(y, k)?;
                }
            }
            return Ok(());
        };
        for (j, &(y, k, w)) in inst.items.iter().enumerate() {
            if m.keys[j] <= room {
                break;
            }
            if !cx.is_fixed(y) && (w > room || self.open_weight(m, j, cx) > room) {
                cx.remove(y, k)?;
            }
        }
        Ok(())
    }

    /// What placing item `j`'s node at its chip adds at least: its group's
    /// items there not yet counted (one counted elsewhere is left out too,
    /// which only weakens the test: the node cannot go there anyway).
    fn open_weight(&self, m: &Mates, j: usize, cx: &Cx) -> f64 {
        let Some(&(start, end)) = m.runs.get(m.run[j] as usize) else {
            return m.keys[j];
        };
        m.flat[start as usize..end as usize]
            .iter()
            .filter(|&&(z, _)| cx.cell(self.counted[z as usize]) == 0)
            .map(|&(_, w)| w)
            .sum()
    }

    /// Loads summed again from the fixed nodes, then every instance's room applied.
    pub fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        let mut loads = vec![0.0; self.insts.len()];
        for (u, items) in self.of_node.iter().enumerate() {
            let cell = self.counted[u];
            if cell == u32::MAX {
                continue;
            }
            let fixed = cx.value(u as u32);
            cx.set_cell(cell, i64::from(fixed.is_some()));
            if let Some(d) = fixed {
                for &(i, k, w) in items {
                    if k == d {
                        loads[i as usize] += w;
                    }
                }
            }
        }
        for (inst, &load) in self.insts.iter().zip(&loads) {
            put(cx, inst.load, load);
            self.crowd_out(inst, load, cx)?;
        }
        if let Some(s) = &mut self.spread {
            s.propagate_from_scratch(cx)?;
        }
        match &mut self.pack {
            Some(p) => p.propagate_from_scratch(cx),
            None => Ok(()),
        }
    }

    /// Judges the instances summed with a margin whose load is within the
    /// margin of the capacity (below it, rounding cannot matter).
    pub fn complete(&self, rule: &GroundConstraint, cx: &Cx, chips: &mut [u32]) -> bool {
        let near = self.inexact.iter().map(|&(i, at)| {
            let inst = &self.insts[at];
            (i, inst.base + get(cx, inst.load), inst.limit, inst.slack)
        });
        judge_near(rule, cx, chips, near)
    }

    pub fn is_exact(&self) -> bool {
        self.inexact.is_empty()
    }
}

/// [`judge`] on the instances summed with a margin, given as (instance,
/// load, limit, slack), whose load is within twice the slack of the limit:
/// below it, rounding cannot matter.
pub(super) fn judge_near(
    rule: &GroundConstraint,
    cx: &Cx,
    chips: &mut [u32],
    inexact: impl Iterator<Item = (usize, f64, f64, f64)>,
) -> bool {
    let near: Vec<usize> = inexact
        .filter(|&(_, load, limit, slack)| load > limit - 2.0 * slack)
        .map(|(i, ..)| i)
        .collect();
    judge(rule, cx, chips, &near)
}

/// Whether the checker accepts these instances of `rule` (by index) on the
/// complete placement in `cx`; `chips` is scratch, one per node.
pub(super) fn judge(rule: &GroundConstraint, cx: &Cx, chips: &mut [u32], which: &[usize]) -> bool {
    if which.is_empty() {
        return true;
    }
    for (v, c) in chips.iter_mut().enumerate() {
        *c = cx.value(v as u32).unwrap_or(0);
    }
    let net = cx.net();
    let checker = Checker::over(net.graph, net.package, chips);
    which.iter().all(|&i| checker.holds(&rule.instances.get(i).formula))
}
