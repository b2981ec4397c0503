//! Quantifiers and aggregates, and the bindings they range over.

use super::value::{formula, from_formula, G};
use super::{rt, Interpreter, Value, MAX_BINDINGS, R};
use crate::ast::*;
use mcm_core::problem::{CmpOp, Formula, Term};
use mcm_core::quantity::Dim;
use mcm_core::source::Span;
use std::ops::Range;
use std::sync::Arc;

impl Interpreter<'_> {
    /// A binding's `where` clause as a formula; no clause is `true`.
    pub(super) fn filter(&mut self, filter: Option<&Expr>) -> R<Formula> {
        match filter {
            Some(f) => {
                let g = self.eval(f)?;
                formula(g, f.span)
            }
            None => Ok(Formula::Const(true)),
        }
    }

    /// `forall` and `exists`: a conjunction or disjunction over the bindings,
    /// cut short once a part decides it.
    pub(super) fn quantifier(
        &mut self,
        q: Quantifier,
        binders: &[Binder],
        filter: Option<&Expr>,
        body: &Expr,
        span: Span,
    ) -> R<G> {
        let combos = self.bindings(binders)?;
        let mut parts = Vec::new();
        // `chip(u) op k` for consecutive nodes, kept as a range while every
        // part so far is one (`exists u in nodes: chip(u) >= d`).
        let mut run: Option<(CmpOp, f64, Range<u32>)> = None;
        for k in 0..combos.rows {
            self.step(span)?;
            let n = self.locals.len();
            self.locals.extend(combos.row(k));
            let r = (|| {
                let c = self.filter(filter)?;
                if c == Formula::Const(false) {
                    return Ok(None);
                }
                let g = self.eval(body)?;
                let b = formula(g, body.span)?;
                Ok(Some(match q {
                    Quantifier::Forall => Formula::implies(c, b),
                    Quantifier::Exists => Formula::and(vec![c, b]),
                }))
            })();
            self.locals.truncate(n);
            let Some(part) = r? else { continue };
            // Stop early once the result is decided.
            match (q, &part) {
                (Quantifier::Forall, Formula::Const(false)) => return Ok(G::V(Value::Bool(false))),
                (Quantifier::Exists, Formula::Const(true)) => return Ok(G::V(Value::Bool(true))),
                // Neutral: `and` and `or` would drop it.
                (Quantifier::Forall, Formula::Const(true)) | (Quantifier::Exists, Formula::Const(false)) => continue,
                (Quantifier::Exists, Formula::Cmp(op, Term::Chip(u), Term::Const(x))) if parts.is_empty() => {
                    match &mut run {
                        None => {
                            run = Some((*op, *x, *u..*u + 1));
                            continue;
                        }
                        Some((o, y, r)) if o == op && y.to_bits() == x.to_bits() && r.end == *u => {
                            r.end += 1;
                            continue;
                        }
                        Some(_) => {}
                    }
                }
                _ => {}
            }
            if let Some((op, x, r)) = run.take() {
                parts.extend(r.map(|u| Formula::Cmp(op, Term::Chip(u), Term::Const(x))));
            }
            parts.push(part);
        }
        let f = match (q, run) {
            (_, Some((op, x, r))) if r.len() == 1 => Formula::Cmp(op, Term::Chip(r.start), Term::Const(x)),
            (_, Some((op, x, r))) => Formula::AnyNode(op, x, r),
            (Quantifier::Forall, None) => Formula::and(parts),
            (Quantifier::Exists, None) => Formula::or(parts),
        };
        Ok(from_formula(f))
    }

    pub(super) fn aggregate(
        &mut self,
        op: AggOp,
        binders: &[Binder],
        filter: Option<&Expr>,
        body: Option<&Expr>,
        span: Span,
    ) -> R<G> {
        let combos = self.bindings(binders)?;
        let mut entries: Vec<(Formula, Term)> = Vec::new();
        let mut konst = 0.0;
        let mut all_int = true;
        let mut dim = Dim::NONE;
        let mut static_vals: Vec<f64> = Vec::new();
        for k in 0..combos.rows {
            self.step(span)?;
            let n = self.locals.len();
            self.locals.extend(combos.row(k));
            let r = (|| {
                let c = self.filter(filter)?;
                if c == Formula::Const(false) {
                    return Ok(None);
                }
                let t = match body {
                    Some(b) => self.eval(b)?,
                    None => G::V(Value::Int(1)),
                };
                Ok(Some((c, t)))
            })();
            self.locals.truncate(n);
            let Some((c, t)) = r? else { continue };
            match t {
                G::V(v) => {
                    let x = v.num().ok_or_else(|| rt(span, "aggregates take numbers"))?;
                    all_int &= v.is_int();
                    if !v.dim().is_none() {
                        dim = v.dim();
                    }
                    if c == Formula::Const(true) {
                        konst += x;
                        static_vals.push(x);
                    } else if op == AggOp::Sum && x == 0.0 {
                        // A conditional zero adds nothing.
                    } else {
                        entries.push((c, Term::Const(x)));
                    }
                }
                G::T(t, int) => {
                    all_int &= int;
                    entries.push((c, t));
                }
                G::F(_) => return Err(rt(span, "aggregates take numbers")),
            }
        }
        let make = |x: f64| -> Value {
            if all_int {
                Value::Int(x as i64)
            } else {
                Value::Num(x, dim)
            }
        };
        Ok(match op {
            AggOp::Sum | AggOp::Count => {
                if entries.is_empty() {
                    G::V(make(konst))
                } else {
                    entries.shrink_to_fit();
                    let dynamic = if op == AggOp::Count {
                        Term::Count(entries.into_iter().map(|(c, _)| c).collect())
                    } else {
                        Term::Sum(entries)
                    };
                    let t = if konst != 0.0 {
                        Term::Add(Box::new(dynamic), Box::new(Term::Const(konst)))
                    } else {
                        dynamic
                    };
                    G::T(t, all_int)
                }
            }
            AggOp::Max | AggOp::Min => {
                let pick = |v: &[f64]| -> Option<f64> {
                    v.iter()
                        .copied()
                        .reduce(|a, b| if (op == AggOp::Max) == (b > a) { b } else { a })
                };
                if entries.is_empty() {
                    G::V(make(pick(&static_vals).unwrap_or(0.0)))
                } else {
                    entries.extend(static_vals.into_iter().map(|x| (Formula::Const(true), Term::Const(x))));
                    G::T(
                        if op == AggOp::Max {
                            Term::Max(entries)
                        } else {
                            Term::Min(entries)
                        },
                        all_int,
                    )
                }
            }
        })
    }

    /// Every combination of values for a list of binders, in order.
    pub(super) fn bindings(&mut self, binders: &[Binder]) -> R<Combos> {
        let mut c = Combos {
            names: Vec::new(),
            values: Vec::new(),
            rows: 1,
        };
        for b in binders {
            let width = c.names.len();
            let names: Vec<Arc<str>> = b.pattern.names().iter().map(|n| Arc::from(n.name.as_str())).collect();
            let (mut values, mut rows) = (Vec::new(), 0);
            for r in 0..c.rows {
                let n = self.locals.len();
                self.locals.extend(c.row(r));
                let elems = self.domain(b);
                self.locals.truncate(n);
                let (each, elems) = elems?;
                if each != names.len() {
                    return Err(rt(
                        b.span,
                        format!(
                            "this domain gives {each} value(s) each, the pattern names {}",
                            names.len()
                        ),
                    ));
                }
                for vals in elems.chunks(each.max(1)) {
                    // Checked as they grow: `i in 0..100000, j in 0..100000`
                    // would allocate its product before any step is counted.
                    if rows >= MAX_BINDINGS {
                        return Err(rt(b.span, format!("more than {MAX_BINDINGS} bindings to enumerate"))
                            .help("a rule over every pair or triple of a large domain is probably a mistake"));
                    }
                    values.extend_from_slice(&c.values[r * width..(r + 1) * width]);
                    values.extend_from_slice(vals);
                    rows += 1;
                }
            }
            c.names.extend(names);
            (c.values, c.rows) = (values, rows);
        }
        Ok(c)
    }

    /// The values a binder ranges over, `each` values (1, or 2 for a
    /// pair) per element, one element after the other.
    fn domain(&mut self, b: &Binder) -> R<(usize, Vec<Value>)> {
        let pair = matches!(b.pattern, Pattern::Pair(..));
        Ok(match &b.domain {
            Domain::Range(lo, hi) => {
                let lo = self.int(lo)?;
                let hi = self.int(hi)?;
                if hi.saturating_sub(lo) > MAX_BINDINGS as i64 {
                    return Err(rt(b.span, "this range is too large to enumerate"));
                }
                (1, (lo..hi).map(Value::Int).collect())
            }
            Domain::Named(d) => {
                let w = self.world(d.span)?;
                match d.name.as_str() {
                    "nodes" => (1, (0..w.graph.num_placed() as u32).map(Value::Node).collect()),
                    "edges" if pair => (
                        2,
                        w.graph
                            .placed_edges()
                            .iter()
                            .flat_map(|e| [Value::Node(e.src), Value::Node(e.dst)])
                            .collect(),
                    ),
                    "edges" => (1, (0..w.graph.placed_edges().len() as u32).map(Value::Edge).collect()),
                    "chips" => (1, (0..w.package.num_chips() as u32).map(Value::Chip).collect()),
                    "links" if pair => (
                        2,
                        w.package
                            .links
                            .iter()
                            .flat_map(|l| [Value::Chip(l.src), Value::Chip(l.dst)])
                            .collect(),
                    ),
                    "links" => (1, (0..w.package.links.len() as u32).map(Value::Link).collect()),
                    other => return Err(rt(d.span, format!("unknown domain `{other}`"))),
                }
            }
        })
    }
}

/// The combinations of values of a list of binders: the names once, the
/// values row after row. A quantifier over a million nodes holds a million
/// values this way, not a million lists of named values.
pub(super) struct Combos {
    pub names: Vec<Arc<str>>,
    values: Vec<Value>,
    pub rows: usize,
}

impl Combos {
    /// Row `k` as local variables.
    pub fn row(&self, k: usize) -> impl Iterator<Item = (String, Value)> + '_ {
        let w = self.names.len();
        self.names
            .iter()
            .zip(&self.values[k * w..(k + 1) * w])
            .map(|(n, v)| (n.to_string(), v.clone()))
    }

    /// Row `k`'s values, in the order of [`Combos::names`].
    pub fn values(&self, k: usize) -> &[Value] {
        let w = self.names.len();
        &self.values[k * w..(k + 1) * w]
    }
}
