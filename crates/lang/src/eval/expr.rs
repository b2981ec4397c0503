//! Expressions: literals, names, attributes, operators and calls.

use super::ops::binary;
use super::value::{formula, term, G};
use super::{rt, Interpreter, Value, R};
use crate::ast::*;
use crate::builtins;
use mcm_core::diag::{unknown_help, Diag};
use mcm_core::problem::{Formula, Term};
use mcm_core::quantity::{Dim, Scalar};
use mcm_core::source::Span;
use std::sync::Arc;

impl Interpreter<'_> {
    pub(super) fn eval(&mut self, e: &Expr) -> R<G> {
        Ok(match &e.kind {
            ExprKind::Int(i) => G::V(Value::Int(*i)),
            ExprKind::Real(x) => G::V(Value::Num(*x, Dim::NONE)),
            ExprKind::Quantity(x, d) => G::V(Value::Num(*x, *d)),
            ExprKind::Bool(b) => G::V(Value::Bool(*b)),
            ExprKind::Str(s) => G::V(Value::Str(s.clone())),
            ExprKind::Var(name) => {
                if let Some((_, v)) = self.locals.iter().rev().find(|(n, _)| n == name) {
                    return Ok(G::V(v.clone()));
                }
                match self.prog.lookup(self.module, name) {
                    Some(r) => G::V(self.let_value(r)?),
                    None => return Err(rt(e.span, format!("unknown name `{name}`"))),
                }
            }
            ExprKind::Field(base, f) => {
                let b = self.eval(base)?;
                self.field(b, f, e.span)?
            }
            ExprKind::Index(..) => return Err(rt(e.span, "indexing is for chip groups in `link` statements")),
            ExprKind::Call(f, args) => self.call(f, args, e.span)?,
            ExprKind::Unary(UnOp::Not, x) => {
                let g = self.eval(x)?;
                match formula(g, x.span)? {
                    Formula::Const(b) => G::V(Value::Bool(!b)),
                    f => G::F(Formula::not(f)),
                }
            }
            ExprKind::Unary(UnOp::Neg, x) => match self.eval(x)? {
                G::V(Value::Int(i)) => G::V(Value::Int(
                    i.checked_neg().ok_or_else(|| rt(e.span, "integer overflow"))?,
                )),
                G::V(Value::Chip(c)) => G::V(Value::Int(-(c as i64))),
                G::V(Value::Num(v, d)) => G::V(Value::Num(-v, d)),
                G::T(t, int) => G::T(Term::Neg(Box::new(t)), int),
                _ => return Err(rt(e.span, "cannot negate this")),
            },
            ExprKind::Binary(op, a, b) => {
                let ga = self.eval(a)?;
                if let Some(decided) = short_circuit(*op, &ga) {
                    return Ok(G::V(Value::Bool(decided)));
                }
                let gb = self.eval(b)?;
                binary(*op, ga, gb, e.span)?
            }
            ExprKind::Quant {
                q,
                binders,
                filter,
                body,
            } => self.quantifier(*q, binders, filter.as_deref(), body, e.span)?,
            ExprKind::Agg {
                op,
                binders,
                filter,
                body,
            } => self.aggregate(*op, binders, filter.as_deref(), body.as_deref(), e.span)?,
            ExprKind::Graph(g) => G::V(Value::Graph(Arc::new(self.graph_literal(g, e.span)?))),
        })
    }

    pub(super) fn int(&mut self, e: &Expr) -> R<i64> {
        match self.eval(e)? {
            G::V(Value::Int(i)) => Ok(i),
            G::V(Value::Chip(c)) => Ok(c as i64),
            _ => Err(rt(e.span, "expected an integer")),
        }
    }

    fn field(&mut self, base: G, f: &Ident, span: Span) -> R<G> {
        let name = f.name.as_str();
        let missing = |what: &str, known: Vec<&str>| {
            Diag::error("mcm::eval", format!("{what} has no attribute `{name}`"))
                .label(f.span, "not set")
                .help(unknown_help(name, "attribute", known))
        };
        Ok(match base {
            G::V(Value::Node(d)) => {
                let w = self.world(span)?;
                let n = w.graph.placed_node(d);
                G::V(match name {
                    "id" => Value::Str(n.id.clone()),
                    "op" => Value::Str(n.op.clone()),
                    "flops" => Value::Num(n.flops as f64, Dim::FLOP),
                    "params" => Value::Num(n.params as f64, Dim::BYTES),
                    "output_bytes" => Value::Num(n.output_bytes as f64, Dim::BYTES),
                    _ => return Err(missing("a node", vec!["id", "op", "flops", "params", "output_bytes"])),
                })
            }
            G::V(Value::Edge(i)) => {
                let w = self.world(span)?;
                let e = w.graph.placed_edges()[i as usize];
                G::V(match name {
                    "src" => Value::Node(e.src),
                    "dst" => Value::Node(e.dst),
                    "bytes" => Value::Num(e.bytes as f64, Dim::BYTES),
                    _ => return Err(missing("an edge", vec!["src", "dst", "bytes"])),
                })
            }
            G::V(Value::Chip(c)) => {
                let w = self.world(span)?;
                let chip = &w.package.chips[c as usize];
                G::V(match name {
                    "id" => Value::Int(c as i64),
                    "name" => Value::Str(chip.name.clone()),
                    _ => match chip.attrs.get(name) {
                        Some(s) => Value::from_scalar(s),
                        None => {
                            return Err(missing(
                                &format!("chip `{}`", chip.name),
                                chip.attrs.keys().map(String::as_str).collect(),
                            )
                            .help(format!("declare `{name} = ...` on the chips in the topology")))
                        }
                    },
                })
            }
            G::V(Value::Link(i)) => {
                let w = self.world(span)?;
                let l = &w.package.links[i as usize];
                G::V(match name {
                    "src" => Value::Chip(l.src),
                    "dst" => Value::Chip(l.dst),
                    _ => match l.attrs.get(name) {
                        Some(s) => Value::from_scalar(s),
                        None => return Err(missing("a link", l.attrs.keys().map(String::as_str).collect())),
                    },
                })
            }
            G::T(t, _) => {
                let w = self.world(span)?;
                let p = &w.package;
                if name == "id" {
                    return Ok(G::T(t, true));
                }
                if name == "name" {
                    return Err(rt(f.span, "the name of a placement-dependent chip cannot be compared")
                        .help("compare chip ids instead: `chip(u) == 3`, or quantify: `forall d in chips where d.name == \"x\": ...`"));
                }
                let mut all_int = true;
                for c in &p.chips {
                    match c.attrs.get(name) {
                        Some(Scalar::Int(_)) | Some(Scalar::Bool(_)) => {}
                        Some(Scalar::Num(..)) => all_int = false,
                        Some(Scalar::Str(_)) => {
                            return Err(rt(f.span, "a string attribute of a placement-dependent chip")
                                .help("compare chip ids instead, or quantify over chips: `forall d in chips: ...`"))
                        }
                        None => {
                            return Err(missing(
                                &format!("chip `{}`", c.name),
                                c.attrs.keys().map(String::as_str).collect(),
                            ))
                        }
                    }
                }
                G::T(Term::ChipAttr(Box::new(t), name.to_string()), all_int)
            }
            _ => return Err(rt(span, format!("`.{name}` on a value without attributes"))),
        })
    }

    /// A chip id from a value, checked against the package.
    pub(crate) fn chip_term(&self, g: G, span: Span) -> R<(Term, Option<u32>)> {
        let c = match &g {
            G::V(v) => match v.num() {
                Some(x) => {
                    let w = self.world(span)?;
                    if x < 0.0 || x >= w.package.num_chips() as f64 || x.fract() != 0.0 {
                        return Err(rt(
                            span,
                            format!("{x} is not a chip id: chips are 0..{}", w.package.num_chips()),
                        ));
                    }
                    Some(x as u32)
                }
                None => return Err(rt(span, "expected a chip")),
            },
            _ => None,
        };
        Ok((term(g, span)?, c))
    }

    fn call(&mut self, f: &Ident, args: &[Arg], span: Span) -> R<G> {
        let name = f.name.as_str();
        let callee = self
            .prog
            .lookup(self.module, name)
            .filter(|r| matches!(self.prog.item(*r), Item::Topology(_)));
        if let Some(r) = callee {
            let Item::Topology(t) = self.prog.item(r) else {
                return Err(rt(f.span, format!("`{name}` cannot be called")));
            };
            let locals = self.locals.clone();
            let bound = self.bind_args(self.module, &locals, r.module, &t.params, args, span)?;
            let p = self.instantiate(t, r.module, bound, span)?;
            return Ok(G::V(Value::Package(Arc::new(p))));
        }
        let Some(builtin) = builtins::lookup(name) else {
            return Err(rt(f.span, format!("unknown function `{name}`")));
        };
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            vals.push((self.eval(&a.value)?, a.value.span));
        }
        builtin.eval(self, &vals, span)
    }
}

/// The value of `a op b` when `a` alone decides it (`false and _`, `true or
/// _`, `false -> _`): the right side is then not evaluated, wherever the
/// operator stands (a `where` filter included), so a costly or failing right
/// side costs nothing.
fn short_circuit(op: BinOp, a: &G) -> Option<bool> {
    let G::V(Value::Bool(a)) = a else { return None };
    match (op, *a) {
        (BinOp::And, false) => Some(false),
        (BinOp::Or, true) => Some(true),
        (BinOp::Implies, false) => Some(true),
        _ => None,
    }
}
