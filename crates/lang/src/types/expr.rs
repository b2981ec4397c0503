//! Expressions: names, attributes, operators, quantifiers and aggregates,
//! and calls of topologies and built-in functions.

use super::{
    article, is_zero, param_signature, units_help, Ctx, Ty, TypeChecker, EDGE_FIELDS, GRAPH_NODE_ATTRS, NODE_FIELDS,
};
use crate::ast::*;
use crate::builtins;
use mcm_core::diag::{unknown_help, Diag};
use mcm_core::quantity::Dim;
use mcm_core::source::Span;

impl TypeChecker<'_> {
    pub fn expr(&mut self, e: &Expr) -> Ty {
        match &e.kind {
            ExprKind::Int(_) => Ty::Int,
            ExprKind::Real(_) => Ty::Num(Dim::NONE),
            ExprKind::Quantity(_, d) => Ty::Num(*d),
            ExprKind::Bool(_) => Ty::Bool,
            ExprKind::Str(_) => Ty::Str,
            ExprKind::Var(name) => self.var(name, e.span),
            ExprKind::Field(base, f) => {
                let bt = self.expr(base);
                self.field(bt, f)
            }
            ExprKind::Index(base, _) => self.err(
                Diag::error("mcm::syntax", "indexing is for chip groups in `link` statements")
                    .label(base.span.to(e.span), "cannot index here")
                    .help("refer to chips by id in formulas: `chip(u) == 3`"),
            ),
            ExprKind::Call(f, args) => self.call(f, args, e.span),
            ExprKind::Unary(UnOp::Neg, x) => {
                let t = self.expr(x);
                match t.numeric() {
                    Some(_) if t == Ty::Chip => Ty::Int,
                    Some(_) => t,
                    None if t == Ty::Err => Ty::Err,
                    None => self.err(
                        Diag::error("mcm::type", format!("cannot negate {}", article(t)))
                            .label(x.span, format!("this is {}", article(t))),
                    ),
                }
            }
            ExprKind::Unary(UnOp::Not, x) => {
                let t = self.expr(x);
                self.expect_fits(Ty::Bool, t, x, "the operand of `not`");
                Ty::Bool
            }
            ExprKind::Binary(op, a, b) => {
                let ta = self.expr(a);
                let tb = self.expr(b);
                self.binary(*op, (ta, a), (tb, b))
            }
            ExprKind::Quant {
                binders, filter, body, ..
            } => self.with_locals(|c| {
                c.binders(binders);
                if let Some(f) = filter {
                    let t = c.expr(f);
                    c.expect_fits(Ty::Bool, t, f, "a `where` filter");
                }
                let t = c.expr(body);
                c.expect_fits(Ty::Bool, t, body, "a quantifier body");
                Ty::Bool
            }),
            ExprKind::Agg {
                op,
                binders,
                filter,
                body,
            } => self.with_locals(|c| {
                c.binders(binders);
                if let Some(f) = filter {
                    let t = c.expr(f);
                    c.expect_fits(Ty::Bool, t, f, "a `where` filter");
                }
                match (op, body) {
                    (AggOp::Count, None) => Ty::Int,
                    (AggOp::Count, Some(b)) => c.err(
                        Diag::error("mcm::syntax", "`count(...)` takes no expression after it")
                            .label(b.span, "remove this")
                            .help("count counts the bindings that pass the `where` filter"),
                    ),
                    (_, None) => c.err(
                        Diag::error("mcm::syntax", "this aggregate needs an expression to aggregate")
                            .label(e.span, "nothing after the parentheses")
                            .help("e.g. `sum(u in nodes where chip(u) == d) u.params`"),
                    ),
                    (_, Some(b)) => {
                        let t = c.expr(b);
                        match t.numeric() {
                            Some(_) if t == Ty::Chip => Ty::Int,
                            Some(_) => t,
                            None if t == Ty::Err => Ty::Err,
                            None => c.err(
                                Diag::error("mcm::type", format!("cannot aggregate {}", article(t)))
                                    .label(b.span, format!("this is {}", article(t)))
                                    .help("sum, max and min take numbers or quantities"),
                            ),
                        }
                    }
                }
            }),
            ExprKind::Graph(g) => {
                if self.ctx == Ctx::Constraint {
                    return self.err(
                        Diag::error("mcm::context", "a graph literal inside a constraint")
                            .label(e.span, "not allowed here")
                            .help("constraints range over the problem's graph: `forall u in nodes: ...`"),
                    );
                }
                for chain in &g.chains {
                    for n in chain {
                        for a in &n.attrs {
                            let t = self.expr(&a.value);
                            match GRAPH_NODE_ATTRS.iter().find(|(k, _)| *k == a.name.name) {
                                Some((_, want)) => {
                                    // A bare count is read in base units (FLOP, bytes), as in graph files.
                                    let ok = t == Ty::Int && matches!(want, Ty::Num(_));
                                    if !ok {
                                        self.expect_fits(
                                            *want,
                                            t,
                                            &a.value,
                                            &format!("node attribute `{}`", a.name.name),
                                        );
                                    }
                                }
                                None => {
                                    self.err(
                                        Diag::error("mcm::name", format!("unknown node attribute `{}`", a.name.name))
                                            .label(a.name.span, "not a node attribute")
                                            .help(unknown_help(
                                                &a.name.name,
                                                "node attribute",
                                                GRAPH_NODE_ATTRS.iter().map(|(k, _)| *k),
                                            )),
                                    );
                                }
                            }
                        }
                    }
                }
                Ty::Graph
            }
        }
    }

    fn var(&mut self, name: &str, span: Span) -> Ty {
        if let Some((_, t)) = self.locals.iter().rev().find(|(n, _)| n == name) {
            return *t;
        }
        if let Some(r) = self.prog.lookup(self.module, name) {
            return match self.prog.item(r) {
                Item::Let(_) => self.let_type(r),
                Item::Topology(_) => self.err(
                    Diag::error("mcm::type", format!("`{name}` is a topology"))
                        .label(span, "not a value")
                        .help(format!("call it with its parameters: `{name}(...)`")),
                ),
                _ => self.err(
                    Diag::error("mcm::type", format!("`{name}` is a constraint"))
                        .label(span, "not a value")
                        .help(format!("use it in a problem: `require {name}`")),
                ),
            };
        }
        if ["nodes", "edges", "chips", "links"].contains(&name) {
            return self.err(
                Diag::error("mcm::syntax", format!("`{name}` is a domain, not a value"))
                    .label(span, "use it after `in`")
                    .help(format!("e.g. `forall x in {name}: ...` or `count(x in {name})`")),
            );
        }
        let mut known: Vec<String> = self.locals.iter().map(|(n, _)| n.clone()).collect();
        let m = &self.prog.modules[self.module];
        known.extend(
            m.scope
                .iter()
                .filter(|(_, r)| matches!(self.prog.item(**r), Item::Let(_)))
                .map(|(n, _)| n.clone()),
        );
        self.err(
            Diag::error("mcm::name", format!("unknown name `{name}`"))
                .label(span, "not defined here")
                .help(unknown_help(name, "name", known.iter().map(String::as_str))),
        )
    }

    fn field(&mut self, base: Ty, f: &Ident) -> Ty {
        let (what, fields): (&str, Vec<(String, Ty)>) = match base {
            Ty::Err => return Ty::Err,
            Ty::Node => ("node", NODE_FIELDS.iter().map(|(n, t)| (n.to_string(), *t)).collect()),
            Ty::Edge => ("edge", EDGE_FIELDS.iter().map(|(n, t)| (n.to_string(), *t)).collect()),
            Ty::Chip => {
                let mut v: Vec<(String, Ty)> = vec![("id".into(), Ty::Int), ("name".into(), Ty::Str)];
                v.extend(self.chip_attrs.iter().map(|(n, t)| (n.clone(), *t)));
                ("chip", v)
            }
            Ty::Link => {
                let mut v: Vec<(String, Ty)> = vec![("src".into(), Ty::Chip), ("dst".into(), Ty::Chip)];
                v.extend(self.link_attrs.iter().map(|(n, t)| (n.clone(), *t)));
                ("link", v)
            }
            other => {
                return self.err(
                    Diag::error("mcm::type", format!("{} has no attributes", article(other)))
                        .label(f.span, format!("`.{}` on {}", f.name, article(other))),
                )
            }
        };
        match fields.iter().find(|(n, _)| *n == f.name) {
            Some((_, t)) => *t,
            None => self.err(
                Diag::error("mcm::name", format!("unknown {what} attribute `{}`", f.name))
                    .label(f.span, format!("no such attribute on a {what}"))
                    .help(unknown_help(
                        &f.name,
                        &format!("{what} attribute"),
                        fields.iter().map(|(n, _)| n.as_str()),
                    )),
            ),
        }
    }

    fn binders(&mut self, binders: &[Binder]) {
        for b in binders {
            let tys: Vec<Ty> = match &b.domain {
                Domain::Range(lo, hi) => {
                    for e in [lo, hi] {
                        let t = self.expr(e);
                        self.expect_fits(Ty::Int, t, e, "a range bound");
                    }
                    match &b.pattern {
                        Pattern::One(_) => vec![Ty::Int],
                        Pattern::Pair(..) => {
                            self.pair_error(b, "a range");
                            vec![Ty::Err, Ty::Err]
                        }
                    }
                }
                Domain::Named(d) => {
                    if self.ctx != Ctx::Constraint {
                        self.err(
                            Diag::error("mcm::context", format!("`{}` only exists inside a constraint", d.name))
                                .label(d.span, "no graph or package here")
                                .help("quantify over the graph and the package in a `constraint` body"),
                        );
                    }
                    match (d.name.as_str(), &b.pattern) {
                        ("nodes", Pattern::One(_)) => vec![Ty::Node],
                        ("chips", Pattern::One(_)) => vec![Ty::Chip],
                        ("edges", Pattern::One(_)) => vec![Ty::Edge],
                        ("edges", Pattern::Pair(..)) => vec![Ty::Node, Ty::Node],
                        ("links", Pattern::One(_)) => vec![Ty::Link],
                        ("links", Pattern::Pair(..)) => vec![Ty::Chip, Ty::Chip],
                        ("nodes" | "chips", Pattern::Pair(..)) => {
                            self.pair_error(b, &format!("`{}`", d.name));
                            vec![Ty::Err, Ty::Err]
                        }
                        (other, _) => {
                            self.err(
                                Diag::error("mcm::name", format!("unknown domain `{other}`"))
                                    .label(d.span, "not a domain")
                                    .help(unknown_help(other, "domain", ["nodes", "edges", "chips", "links"])),
                            );
                            vec![Ty::Err; b.pattern.names().len()]
                        }
                    }
                }
            };
            for (n, t) in b.pattern.names().into_iter().zip(tys) {
                self.locals.push((n.name.clone(), t));
            }
        }
    }

    fn pair_error(&mut self, b: &Binder, what: &str) {
        self.err(
            Diag::error("mcm::type", format!("{what} has single elements, not pairs"))
                .label(b.span, "a pair pattern here")
                .help("pairs `(u, v)` are for `edges` and `links`"),
        );
    }

    pub(crate) fn binary(&mut self, op: BinOp, (ta, a): (Ty, &Expr), (tb, b): (Ty, &Expr)) -> Ty {
        if ta == Ty::Err || tb == Ty::Err {
            return if op.is_comparison() || op.is_logic() {
                Ty::Bool
            } else {
                Ty::Err
            };
        }
        if op.is_logic() {
            self.expect_fits(Ty::Bool, ta, a, &format!("an operand of `{}`", op.symbol()));
            self.expect_fits(Ty::Bool, tb, b, &format!("an operand of `{}`", op.symbol()));
            return Ty::Bool;
        }
        let mismatch = |c: &mut Self, verb: &str| {
            c.err(
                Diag::error(
                    "mcm::units",
                    format!("cannot {verb} {} and {}", article(ta), article(tb)),
                )
                .label(a.span, format!("this is {}", article(ta)))
                .label(b.span, format!("this is {}", article(tb)))
                .help(units_help(ta, tb)),
            )
        };
        if op.is_comparison() {
            for (t, e) in [(ta, a), (tb, b)] {
                if let Ty::Num(d) = t {
                    self.units.insert(e.span, d);
                }
            }
            let ok = match (ta.numeric(), tb.numeric()) {
                (Some((da, _)), Some((db, _))) => da == db || is_zero(a) || is_zero(b),
                _ => {
                    matches!(op, BinOp::Eq | BinOp::Ne)
                        && ta == tb
                        && matches!(ta, Ty::Str | Ty::Bool | Ty::Node | Ty::Edge | Ty::Link)
                }
            };
            if !ok && ta == tb && !matches!(op, BinOp::Eq | BinOp::Ne) {
                self.err(
                    Diag::error("mcm::type", format!("{ta} values are only compared with == and !="))
                        .label(a.span.to(b.span), format!("`{}` on {}", op.symbol(), article(ta))),
                );
            } else if !ok {
                mismatch(self, "compare");
            }
            return Ty::Bool;
        }
        let (Some((da, ia)), Some((db, ib))) = (ta.numeric(), tb.numeric()) else {
            let bad = if ta.numeric().is_none() { (ta, a) } else { (tb, b) };
            return self.err(
                Diag::error(
                    "mcm::type",
                    format!("`{}` needs numbers, found {}", op.symbol(), article(bad.0)),
                )
                .label(bad.1.span, format!("this is {}", article(bad.0))),
            );
        };
        let both_int = ia && ib;
        match op {
            BinOp::Add | BinOp::Sub => {
                if da != db && !is_zero(a) && !is_zero(b) {
                    return mismatch(self, if op == BinOp::Add { "add" } else { "subtract" });
                }
                let d = if da.is_none() { db } else { da };
                if both_int {
                    Ty::Int
                } else {
                    Ty::Num(d)
                }
            }
            BinOp::Mul if both_int => Ty::Int,
            BinOp::Mul => Ty::Num(da * db),
            BinOp::Div if both_int => Ty::Int,
            BinOp::Div => Ty::Num(da / db),
            BinOp::Rem if both_int => Ty::Int,
            BinOp::Rem => self.err(
                Diag::error("mcm::type", "`%` takes integers")
                    .label(a.span.to(b.span), format!("{} % {}", article(ta), article(tb))),
            ),
            _ => Ty::Err,
        }
    }

    fn call(&mut self, f: &Ident, args: &[Arg], span: Span) -> Ty {
        let name = f.name.as_str();
        let callee = self
            .prog
            .lookup(self.module, name)
            .filter(|r| !(matches!(self.prog.item(*r), Item::Let(_)) && builtins::lookup(name).is_some()));
        if let Some(r) = callee {
            return match self.prog.item(r) {
                Item::Topology(t) => {
                    if self.ctx == Ctx::Constraint {
                        return self.err(
                            Diag::error("mcm::context", "a package cannot be built inside a constraint")
                                .label(span, "not allowed here"),
                        );
                    }
                    let params = param_signature(&t.params);
                    self.call_args(name, "topology", &params, args, span);
                    Ty::Package
                }
                Item::Constraint(_) => self.err(
                    Diag::error("mcm::type", format!("`{name}` is a constraint, not a function"))
                        .label(f.span, "cannot be called in a formula")
                        .help(format!("require it in a problem: `require {name}`")),
                ),
                _ => self.err(
                    Diag::error("mcm::type", format!("`{name}` is a value, not a function"))
                        .label(f.span, "cannot be called"),
                ),
            };
        }
        let tys: Vec<Ty> = args.iter().map(|a| self.expr(&a.value)).collect();
        let Some(builtin) = builtins::lookup(name) else {
            let mut known: Vec<String> = builtins::BUILTINS.iter().map(|b| b.name.to_string()).collect();
            let m = &self.prog.modules[self.module];
            known.extend(
                m.scope
                    .iter()
                    .filter(|(_, r)| matches!(self.prog.item(**r), Item::Topology(_)))
                    .map(|(n, _)| n.clone()),
            );
            return self.err(
                Diag::error("mcm::name", format!("unknown function or topology `{name}`"))
                    .label(f.span, "not defined or imported")
                    .help(unknown_help(name, "function", known.iter().map(String::as_str))),
            );
        };
        if let Some(a) = args.iter().find(|a| a.name.is_some()) {
            let n = a.name.as_ref().map(|n| n.span).unwrap_or(span);
            return self.err(
                Diag::error("mcm::arity", format!("`{name}` takes positional arguments only"))
                    .label(n, "named argument"),
            );
        }
        if tys.len() != builtin.params.len() {
            return self.err(
                Diag::error(
                    "mcm::arity",
                    format!(
                        "`{name}` takes {} argument(s), {} given",
                        builtin.params.len(),
                        tys.len()
                    ),
                )
                .label(span, "wrong number of arguments")
                .help(format!("the signature is `{}`", builtin.signature())),
            );
        }
        match builtin.context {
            builtins::Context::Anywhere => {}
            builtins::Context::Placement if self.ctx != Ctx::Constraint => {
                return self.err(
                    Diag::error("mcm::context", format!("`{name}` depends on a placement"))
                        .label(span, "only meaningful inside a constraint")
                        .help("use it in a `constraint` body"),
                );
            }
            builtins::Context::Placement => {}
            builtins::Context::OutsideConstraints(message) if self.ctx == Ctx::Constraint => {
                return self.err(Diag::error("mcm::context", message).label(span, "not allowed here"));
            }
            builtins::Context::OutsideConstraints(_) => {}
        }
        builtin.check(self, &tys, args)
    }
}
