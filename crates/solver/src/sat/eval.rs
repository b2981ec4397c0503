//! A three-valued evaluator of the grounded IR on a partial placement.
//!
//! `Partial::holds` answers `Some(b)` only when every completion of the
//! partial placement gives the formula the value `b` under the checker's
//! semantics, and `None` when it cannot tell. On a full assignment of the
//! nodes a formula depends on, it computes exactly what the checker computes.
//! The SAT encoding uses it to build truth tables of small instances and to
//! shrink the explanation of a violated instance into a short clause.
//! It shares no code with the checker but the longest-path routine
//! (`flow.rs`); the checker stays the independent judge.

use crate::flow::ChipFlow;
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{CmpOp, Formula, Term};
use std::cell::OnceCell;

/// What is known of a term's value over every completion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Val {
    /// Exactly this value (possibly NaN) in every completion.
    Known(f64),
    /// A finite, non-NaN value within these bounds in every completion.
    Range(f64, f64),
    /// Nothing is known (the value may even be NaN).
    Top,
}

impl Val {
    fn range(lo: f64, hi: f64) -> Val {
        if lo.is_finite() && hi.is_finite() && lo <= hi {
            if lo == hi {
                Val::Known(lo)
            } else {
                Val::Range(lo, hi)
            }
        } else {
            Val::Top
        }
    }

    /// Bounds of a value that is certainly finite (not NaN, not infinite).
    fn bounds(self) -> Option<(f64, f64)> {
        match self {
            Val::Known(v) if v.is_finite() => Some((v, v)),
            Val::Range(lo, hi) => Some((lo, hi)),
            _ => None,
        }
    }
}

/// The chip-level flow graph of a partial placement: the arcs that exist in
/// every completion (`sure`) and those that exist in some (`maybe`).
pub(crate) struct FlowBounds {
    pub sure: ChipFlow,
    pub maybe: ChipFlow,
}

/// A placement in which some nodes are not decided yet.
pub(crate) struct Partial<'a> {
    pub graph: &'a Graph,
    pub package: &'a Package,
    pub chips: &'a [Option<u32>],
    flows: OnceCell<FlowBounds>,
}

/// A Kleene truth value: `Some(b)` when known.
type Tv = Option<bool>;

impl<'a> Partial<'a> {
    pub fn new(graph: &'a Graph, package: &'a Package, chips: &'a [Option<u32>]) -> Partial<'a> {
        Partial {
            graph,
            package,
            chips,
            flows: OnceCell::new(),
        }
    }

    fn c(&self) -> usize {
        self.package.num_chips()
    }

    pub fn flows(&self) -> &FlowBounds {
        self.flows.get_or_init(|| {
            let c = self.c();
            let mut sure = ChipFlow::new(c);
            let mut maybe = ChipFlow::new(c);
            let mut full = false;
            for e in self.graph.placed_edges() {
                match (self.chips[e.src as usize], self.chips[e.dst as usize]) {
                    (Some(a), Some(b)) => {
                        sure.add(a, b);
                        maybe.add(a, b);
                    }
                    (Some(a), None) => (0..c as u32).for_each(|b| maybe.add(a, b)),
                    (None, Some(b)) => (0..c as u32).for_each(|a| maybe.add(a, b)),
                    (None, None) => full = true,
                }
            }
            if full {
                for a in 0..c as u32 {
                    for b in 0..c as u32 {
                        maybe.add(a, b);
                    }
                }
            }
            FlowBounds { sure, maybe }
        })
    }

    /// A known value as a chip id, as the checker reads one.
    fn as_chip(&self, v: f64) -> Option<u32> {
        (v >= 0.0 && v.fract() == 0.0 && (v as usize) < self.c()).then_some(v as u32)
    }

    /// The chip a term certainly denotes: `Ok(Some(id))`; `Ok(None)` when it
    /// certainly denotes no chip; `Err(())` when it is not known.
    fn chip_of(&self, t: &Term) -> Result<Option<u32>, ()> {
        match self.value(t) {
            Val::Known(v) => Ok(self.as_chip(v)),
            _ => Err(()),
        }
    }

    pub fn holds(&self, f: &Formula) -> Tv {
        match f {
            Formula::Const(b) => Some(*b),
            Formula::Cmp(op, a, b) => cmp(*op, self.value(a), self.value(b)),
            Formula::Not(x) => self.holds(x).map(|b| !b),
            Formula::And(xs) => {
                let mut all = true;
                for x in xs {
                    match self.holds(x) {
                        Some(false) => return Some(false),
                        Some(true) => {}
                        None => all = false,
                    }
                }
                all.then_some(true)
            }
            Formula::Or(xs) => {
                let mut none = true;
                for x in xs {
                    match self.holds(x) {
                        Some(true) => return Some(true),
                        Some(false) => {}
                        None => none = false,
                    }
                }
                none.then_some(false)
            }
            Formula::AnyNode(op, k, ds) => {
                let mut none = true;
                for d in ds.clone() {
                    match cmp(*op, self.value(&Term::Chip(d)), Val::Known(*k)) {
                        Some(true) => return Some(true),
                        Some(false) => {}
                        None => none = false,
                    }
                }
                none.then_some(false)
            }
            Formula::Implies(a, b) => match (self.holds(a), self.holds(b)) {
                (Some(false), _) | (_, Some(true)) => Some(true),
                (Some(true), Some(false)) => Some(false),
                _ => None,
            },
            Formula::Iff(a, b) => match (self.holds(a), self.holds(b)) {
                (Some(x), Some(y)) => Some(x == y),
                _ => None,
            },
            Formula::Flows(a, b) => match (self.chip_of(a), self.chip_of(b)) {
                (Ok(Some(x)), Ok(Some(y))) => {
                    if x == y {
                        Some(false)
                    } else {
                        let fl = self.flows();
                        if fl.sure.has(x, y) {
                            Some(true)
                        } else if !fl.maybe.has(x, y) {
                            Some(false)
                        } else {
                            None
                        }
                    }
                }
                (Ok(None), _) | (_, Ok(None)) => Some(false),
                _ => None,
            },
            Formula::Link(a, b) => match (self.chip_of(a), self.chip_of(b)) {
                (Ok(Some(x)), Ok(Some(y))) => Some(self.package.link(x, y).is_some()),
                (Ok(None), _) | (_, Ok(None)) => Some(false),
                _ => None,
            },
        }
    }

    pub fn value(&self, t: &Term) -> Val {
        match t {
            Term::Const(v) => Val::Known(*v),
            Term::Chip(d) => match self.chips[*d as usize] {
                Some(c) => Val::Known(c as f64),
                None => Val::range(0.0, self.c().saturating_sub(1) as f64),
            },
            Term::ChipAttr(c, name) => match self.chip_of(c) {
                Ok(id) => Val::Known(
                    id.and_then(|id| self.package.chip_attr(id, name))
                        .and_then(|s| s.as_f64())
                        .unwrap_or(f64::NAN),
                ),
                Err(()) => Val::Top,
            },
            Term::Add(a, b) => match (self.value(a), self.value(b)) {
                (Val::Known(x), Val::Known(y)) => Val::Known(x + y),
                (x, y) => match (x.bounds(), y.bounds()) {
                    (Some((a0, a1)), Some((b0, b1))) => Val::range(a0 + b0, a1 + b1),
                    _ => nan_or_top(x, y),
                },
            },
            Term::Sub(a, b) => match (self.value(a), self.value(b)) {
                (Val::Known(x), Val::Known(y)) => Val::Known(x - y),
                (x, y) => match (x.bounds(), y.bounds()) {
                    (Some((a0, a1)), Some((b0, b1))) => Val::range(a0 - b1, a1 - b0),
                    _ => nan_or_top(x, y),
                },
            },
            Term::Mul(a, b) => match (self.value(a), self.value(b)) {
                (Val::Known(x), Val::Known(y)) => Val::Known(x * y),
                (x, y) => match (x.bounds(), y.bounds()) {
                    (Some((a0, a1)), Some((b0, b1))) => {
                        let p = [a0 * b0, a0 * b1, a1 * b0, a1 * b1];
                        let lo = p.iter().copied().fold(f64::INFINITY, f64::min);
                        let hi = p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        Val::range(lo, hi)
                    }
                    _ => nan_or_top(x, y),
                },
            },
            Term::Div(a, b) => match (self.value(a), self.value(b)) {
                (Val::Known(x), Val::Known(y)) => Val::Known(x / y),
                (x, y) => nan_or_top(x, y),
            },
            Term::IntDiv(a, b) => match (self.value(a), self.value(b)) {
                (Val::Known(x), Val::Known(y)) => Val::Known((x / y).floor()),
                (x, y) => nan_or_top(x, y),
            },
            Term::Rem(a, b) => match (self.value(a), self.value(b)) {
                (Val::Known(x), Val::Known(y)) => Val::Known(x - y * (x / y).floor()),
                (x, y) => nan_or_top(x, y),
            },
            Term::Neg(a) => match self.value(a) {
                Val::Known(x) => Val::Known(-x),
                Val::Range(lo, hi) => Val::range(-hi, -lo),
                Val::Top => Val::Top,
            },
            Term::Sum(es) => {
                let parts: Vec<(Tv, Val)> = es.iter().map(|(c, t)| (self.holds(c), self.value(t))).collect();
                if parts.iter().all(|(c, v)| c.is_some() && matches!(v, Val::Known(_))) {
                    return Val::Known(
                        parts
                            .iter()
                            .filter(|(c, _)| *c == Some(true))
                            .map(|(_, v)| match v {
                                Val::Known(x) => *x,
                                _ => unreachable!("all known"),
                            })
                            .sum(),
                    );
                }
                let (mut lo, mut hi) = (0.0f64, 0.0f64);
                for (c, v) in parts {
                    match c {
                        Some(false) => {}
                        Some(true) => match v.bounds() {
                            Some((a, b)) => {
                                lo += a;
                                hi += b;
                            }
                            None => return Val::Top,
                        },
                        None => match v.bounds() {
                            Some((a, b)) => {
                                lo += a.min(0.0);
                                hi += b.max(0.0);
                            }
                            None => return Val::Top,
                        },
                    }
                }
                Val::range(lo, hi)
            }
            Term::Count(cs) => {
                let (mut sure, mut maybe) = (0usize, 0usize);
                for c in cs {
                    match self.holds(c) {
                        Some(true) => {
                            sure += 1;
                            maybe += 1;
                        }
                        Some(false) => {}
                        None => maybe += 1,
                    }
                }
                Val::range(sure as f64, maybe as f64)
            }
            Term::Max(es) | Term::Min(es) => {
                let is_max = matches!(t, Term::Max(_));
                let parts: Vec<(Tv, Val)> = es.iter().map(|(c, t)| (self.holds(c), self.value(t))).collect();
                if parts.iter().all(|(c, v)| c.is_some() && matches!(v, Val::Known(_))) {
                    let vals = parts.iter().filter(|(c, _)| *c == Some(true)).map(|(_, v)| match v {
                        Val::Known(x) => *x,
                        _ => unreachable!("all known"),
                    });
                    let r = if is_max {
                        vals.reduce(f64::max)
                    } else {
                        vals.reduce(f64::min)
                    };
                    return Val::Known(r.unwrap_or(0.0));
                }
                if parts.iter().any(|(c, _)| c.is_none()) {
                    return Val::Top;
                }
                let mut acc: Option<(f64, f64)> = None;
                for (_, v) in parts.iter().filter(|(c, _)| *c == Some(true)) {
                    let Some((a, b)) = v.bounds() else {
                        return Val::Top;
                    };
                    acc = Some(match acc {
                        None => (a, b),
                        Some((x, y)) if is_max => (x.max(a), y.max(b)),
                        Some((x, y)) => (x.min(a), y.min(b)),
                    });
                }
                match acc {
                    None => Val::Known(0.0),
                    Some((a, b)) => Val::range(a, b),
                }
            }
            Term::LongestPath(a, b) => match (self.chip_of(a), self.chip_of(b)) {
                (Ok(Some(x)), Ok(Some(y))) => {
                    let fl = self.flows();
                    let lo = fl.sure.longest(x, y);
                    let hi = fl.maybe.longest(x, y);
                    Val::range(lo as f64, hi as f64)
                }
                (Ok(None), _) | (_, Ok(None)) => Val::Known(f64::NAN),
                _ => Val::Top,
            },
            Term::Hops(a, b) => match (self.chip_of(a), self.chip_of(b)) {
                (Ok(Some(x)), Ok(Some(y))) => Val::Known(self.package.hops(x, y).map_or(self.c() as f64, |h| h as f64)),
                (Ok(None), _) | (_, Ok(None)) => Val::Known(f64::NAN),
                _ => Val::Top,
            },
        }
    }
}

/// The result of an operation whose operands are not both known: NaN when
/// one of them is certainly NaN (every arithmetic operation keeps NaN).
fn nan_or_top(x: Val, y: Val) -> Val {
    match (x, y) {
        (Val::Known(v), _) | (_, Val::Known(v)) if v.is_nan() => Val::Known(f64::NAN),
        _ => Val::Top,
    }
}

fn cmp(op: CmpOp, a: Val, b: Val) -> Tv {
    if let (Val::Known(x), Val::Known(y)) = (a, b) {
        return Some(op.holds(x, y));
    }
    // A comparison with NaN has the same result whatever the other side is.
    if matches!(a, Val::Known(v) if v.is_nan()) || matches!(b, Val::Known(v) if v.is_nan()) {
        return Some(op.holds(f64::NAN, 0.0));
    }
    let ((a0, a1), (b0, b1)) = match (inf_bounds(a), inf_bounds(b)) {
        (Some(x), Some(y)) => (x, y),
        _ => return None,
    };
    let lt = if a1 < b0 {
        Some(true)
    } else if a0 >= b1 {
        Some(false)
    } else {
        None
    };
    let le = if a1 <= b0 {
        Some(true)
    } else if a0 > b1 {
        Some(false)
    } else {
        None
    };
    let eq = if a0 == a1 && b0 == b1 && a0 == b0 {
        Some(true)
    } else if a1 < b0 || b1 < a0 {
        Some(false)
    } else {
        None
    };
    match op {
        CmpOp::Lt => lt,
        CmpOp::Le => le,
        CmpOp::Gt => {
            // a > b  <=>  b < a
            if b1 < a0 {
                Some(true)
            } else if b0 >= a1 {
                Some(false)
            } else {
                None
            }
        }
        CmpOp::Ge => {
            if b1 <= a0 {
                Some(true)
            } else if b0 > a1 {
                Some(false)
            } else {
                None
            }
        }
        CmpOp::Eq => eq,
        CmpOp::Ne => eq.map(|b| !b),
    }
}

/// Bounds of a value that is certainly not NaN (a known infinity included).
fn inf_bounds(v: Val) -> Option<(f64, f64)> {
    match v {
        Val::Known(x) if !x.is_nan() => Some((x, x)),
        Val::Range(lo, hi) => Some((lo, hi)),
        _ => None,
    }
}
