//! Quantifiers and aggregates, and the bindings they range over.

use super::value::{formula, from_formula, G};
use super::{rt, Interpreter, Value, MAX_BINDINGS, R};
use crate::ast::*;
use mcm_core::problem::{Formula, Term};
use mcm_core::quantity::Dim;
use mcm_core::source::Span;

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
        for combo in combos {
            self.step(span)?;
            let n = self.locals.len();
            self.locals.extend(combo);
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
                _ => parts.push(part),
            }
        }
        let f = match q {
            Quantifier::Forall => Formula::and(parts),
            Quantifier::Exists => Formula::or(parts),
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
        for combo in combos {
            self.step(span)?;
            let n = self.locals.len();
            self.locals.extend(combo);
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
    pub(super) fn bindings(&mut self, binders: &[Binder]) -> R<Vec<Vec<(String, Value)>>> {
        let mut combos: Vec<Vec<(String, Value)>> = vec![Vec::new()];
        for b in binders {
            let mut next = Vec::new();
            for combo in combos {
                let n = self.locals.len();
                self.locals.extend(combo.iter().cloned());
                let elems = self.domain(b);
                self.locals.truncate(n);
                for vals in elems? {
                    // Checked as they grow: `i in 0..100000, j in 0..100000`
                    // would allocate its product before any step is counted.
                    if next.len() >= MAX_BINDINGS {
                        return Err(rt(b.span, format!("more than {MAX_BINDINGS} bindings to enumerate"))
                            .help("a rule over every pair or triple of a large domain is probably a mistake"));
                    }
                    let mut c = combo.clone();
                    for (name, v) in b.pattern.names().into_iter().zip(vals) {
                        c.push((name.name.clone(), v));
                    }
                    next.push(c);
                }
            }
            combos = next;
        }
        Ok(combos)
    }

    fn domain(&mut self, b: &Binder) -> R<Vec<Vec<Value>>> {
        Ok(match &b.domain {
            Domain::Range(lo, hi) => {
                let lo = self.int(lo)?;
                let hi = self.int(hi)?;
                if hi.saturating_sub(lo) > MAX_BINDINGS as i64 {
                    return Err(rt(b.span, "this range is too large to enumerate"));
                }
                (lo..hi).map(|i| vec![Value::Int(i)]).collect()
            }
            Domain::Named(d) => {
                let w = self.world(d.span)?;
                let pair = matches!(b.pattern, Pattern::Pair(..));
                match d.name.as_str() {
                    "nodes" => (0..w.graph.num_placed() as u32).map(|i| vec![Value::Node(i)]).collect(),
                    "edges" if pair => w
                        .graph
                        .placed_edges()
                        .iter()
                        .map(|e| vec![Value::Node(e.src), Value::Node(e.dst)])
                        .collect(),
                    "edges" => (0..w.graph.placed_edges().len() as u32)
                        .map(|i| vec![Value::Edge(i)])
                        .collect(),
                    "chips" => (0..w.package.num_chips() as u32)
                        .map(|i| vec![Value::Chip(i)])
                        .collect(),
                    "links" if pair => w
                        .package
                        .links
                        .iter()
                        .map(|l| vec![Value::Chip(l.src), Value::Chip(l.dst)])
                        .collect(),
                    "links" => (0..w.package.links.len() as u32)
                        .map(|i| vec![Value::Link(i)])
                        .collect(),
                    other => return Err(rt(d.span, format!("unknown domain `{other}`"))),
                }
            }
        })
    }
}
