//! Per-link sums over edges: `sum(e in edges where crosses(chip(e.src),
//! chip(e.dst))) w <= cap`, whatever the condition says (a route through
//! `hops`, an order on a ring, `link(...)`), as long as each entry's
//! condition reads at most two nodes and its weight is a constant. Each
//! condition becomes a table over chip pairs, computed by the checker once
//! per distinct shape; the propagator ([`super::link_load`]) and the SAT
//! encoding ([`super::link_encode`]) read the tables, never the formula.

use super::binary::{pair_table, shape_key, TABLE_LIMIT};
use super::resource::{entries, normalise, upper_bound};
use crate::checker::Checker;
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{Formula, Node, Term};
use std::collections::HashMap;

/// One entry of the sum: weight `w` counts when the table holds at the
/// chips of `u` and `v` (`u == v`: a condition over one node, read on the
/// diagonal).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Item {
    pub u: u32,
    pub v: u32,
    pub table: u32,
    pub w: f64,
}

/// A recognised instance: the items in formula order, the weights that
/// always count (`base`), and the bound as [`normalise`] states it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LinkShape {
    pub items: Vec<Item>,
    pub base: f64,
    pub cap: f64,
    pub strict: bool,
    pub exact: bool,
}

/// Checker evaluations all tables of one constraint may take; past it the
/// instances that need a new table stay generic (entries whose condition
/// embeds a per-edge constant have a table each).
const EVALUATION_BUDGET: usize = 1 << 22;

/// The pair tables of the items seen so far, one per distinct condition
/// shape (the formula with its nodes renamed), laid out as
/// [`pair_table`] returns them.
pub(crate) struct Tables {
    pub chips: usize,
    pub words: usize,
    /// The tables one after another, `2 * chips * words` words each.
    flat: Vec<u64>,
    /// Per table: whether its condition holds never, always, or depends.
    kinds: Vec<Kind>,
    by_shape: HashMap<String, u32>,
    /// The last condition looked up, its nodes and its table: the entries
    /// of one sum mostly share a shape, and comparing is cheaper than a key.
    last: Option<(Formula, u32, u32, u32)>,
    budget: usize,
}

/// What a table says about its condition.
#[derive(Clone, Copy)]
enum Kind {
    Never,
    Always,
    Depends(u32),
}

impl Tables {
    pub fn new(chips: usize) -> Tables {
        Tables {
            chips,
            words: crate::domain::words_for(chips),
            flat: Vec::new(),
            kinds: Vec::new(),
            by_shape: HashMap::new(),
            last: None,
            budget: EVALUATION_BUDGET,
        }
    }

    /// The chips of `v` for which an item of table `t` counts with `u` on `a`.
    pub fn row(&self, t: u32, a: u32) -> &[u64] {
        let w = self.words;
        let at = (2 * t as usize * self.chips + a as usize) * w;
        &self.flat[at..at + w]
    }

    /// The chips of `u` for which an item of table `t` counts with `v` on `b`.
    pub fn col(&self, t: u32, b: u32) -> &[u64] {
        self.row(t, self.chips as u32 + b)
    }

    pub fn holds(&self, t: u32, a: u32, b: u32) -> bool {
        self.row(t, a)[(b / 64) as usize] >> (b % 64) & 1 == 1
    }

    /// Whether an item counts with its nodes on these chips.
    pub fn counts(&self, it: &Item, a: u32, b: u32) -> bool {
        if it.u == it.v {
            self.holds(it.table, a, a)
        } else {
            self.holds(it.table, a, b)
        }
    }

    /// The table of condition `f` over `u` and `v`, made unless its shape
    /// has one; `None` once the evaluation budget is spent.
    fn of(&mut self, net: (&Graph, &Package), f: &Formula, u: u32, v: u32) -> Option<Kind> {
        let t = match &self.last {
            Some((g, a, b, t)) if same_shape(g, (*a, *b), f, (u, v)) => *t,
            _ => {
                let t = self.lookup(net, f, u, v)?;
                self.last = Some((f.clone(), u, v, t));
                t
            }
        };
        Some(self.kinds[t as usize])
    }

    /// The table of `f`'s shape, made if there is none.
    fn lookup(&mut self, net: (&Graph, &Package), f: &Formula, u: u32, v: u32) -> Option<u32> {
        let key = shape_key(f, u, v);
        Some(match self.by_shape.get(&key) {
            Some(&t) => t,
            None => {
                let cost = self.chips * self.chips;
                if cost > self.budget {
                    return None;
                }
                self.budget -= cost;
                let t = self.by_shape.len() as u32;
                self.flat.extend(pair_table(net, f, u, v, self.chips, self.words));
                let c = self.chips as u32;
                let mut cells = (0..c).flat_map(|a| (0..c).map(move |b| (a, b)));
                let cell = |(a, b): (u32, u32)| self.holds(t, a, if u == v { a } else { b });
                let kind = if cells.clone().all(cell) {
                    Kind::Always
                } else if !cells.any(cell) {
                    Kind::Never
                } else {
                    Kind::Depends(t)
                };
                self.kinds.push(kind);
                self.by_shape.insert(key, t);
                t
            }
        })
    }
}

/// Whether `g` over nodes `(c, d)` is `f` over nodes `(a, b)` with the
/// nodes renamed: their pre-order walks match node for node, each node
/// compared with its own data and arity (which fixes the tree).
fn same_shape(f: &Formula, (a, b): (u32, u32), g: &Formula, (c, d): (u32, u32)) -> bool {
    fn walk(h: &Formula) -> Vec<Node<'_>> {
        let mut out = Vec::new();
        h.walk(&mut |n| {
            out.push(n);
            true
        });
        out
    }
    let (x, y) = (walk(f), walk(g));
    let rename = |p: u32| {
        if p == a {
            Some(c)
        } else if p == b {
            Some(d)
        } else {
            None
        }
    };
    x.len() == y.len()
        && x.iter().zip(&y).all(|pair| match pair {
            (Node::Term(s), Node::Term(t)) => match (s, t) {
                (Term::Chip(p), Term::Chip(q)) => rename(*p) == Some(*q),
                (Term::Const(p), Term::Const(q)) => p.to_bits() == q.to_bits(),
                (Term::ChipAttr(_, p), Term::ChipAttr(_, q)) => p == q,
                (Term::Sum(p), Term::Sum(q)) | (Term::Max(p), Term::Max(q)) | (Term::Min(p), Term::Min(q)) => {
                    p.len() == q.len()
                }
                (Term::Count(p), Term::Count(q)) => p.len() == q.len(),
                (s, t) => std::mem::discriminant(*s) == std::mem::discriminant(*t),
            },
            (Node::Formula(s), Node::Formula(t)) => match (s, t) {
                (Formula::Const(p), Formula::Const(q)) => p == q,
                (Formula::Cmp(p, ..), Formula::Cmp(q, ..)) => p == q,
                (Formula::And(p), Formula::And(q)) | (Formula::Or(p), Formula::Or(q)) => p.len() == q.len(),
                (s, t) => std::mem::discriminant(*s) == std::mem::discriminant(*t),
            },
            _ => false,
        })
}

/// The shape of `f`, or `None` when it is not exactly a bounded sum of
/// constant non-negative weights whose conditions each read at most two
/// nodes (and no flow relation).
pub(crate) fn recognise(f: &Formula, net: (&Graph, &Package), tables: &mut Tables) -> Option<LinkShape> {
    if tables.chips * tables.chips > TABLE_LIMIT {
        return None;
    }
    let (agg, cap, strict) = upper_bound(f)?;
    let mut items = Vec::new();
    let mut base = 0.0;
    for (cond, w) in entries(agg)? {
        let (vars, global) = cond.dependencies();
        if global {
            return None;
        }
        let kind = match *vars.as_slice() {
            [] => {
                let chips = vec![0; net.0.num_placed()];
                if Checker::over(net.0, net.1, &chips).holds(cond) {
                    Kind::Always
                } else {
                    Kind::Never
                }
            }
            [u] => tables.of(net, cond, u, u)?,
            [u, v] => tables.of(net, cond, u, v)?,
            _ => return None,
        };
        match kind {
            Kind::Never => {}
            Kind::Always => base += w,
            // A zero weight never changes the sum.
            Kind::Depends(_) if w == 0.0 => {}
            Kind::Depends(table) => {
                let (u, v) = (vars[0], *vars.last().expect("one or two nodes"));
                items.push(Item { u, v, table, w });
            }
        }
    }
    let (cap, strict, exact) = normalise(cap, strict, base, items.iter().map(|i| i.w));
    Some(LinkShape {
        items,
        base,
        cap,
        strict,
        exact,
    })
}
