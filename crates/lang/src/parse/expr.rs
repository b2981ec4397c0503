//! Expressions: pest reads an expression as a flat sequence of operands and
//! operators, and a Pratt parser gives it its structure from one table of
//! precedences. The same table reads every operator sequence of the grammar:
//! an `expr`, a range bound, an aggregate's body, an operand's prefixes
//! (`unary`) and its accesses (`postfix_expr`).

use super::errors::unit_help;
use super::{string_text, unescape, Builder, Rule, P, R};
use crate::ast::*;
use mcm_core::diag::Diag;
use mcm_core::quantity;
use mcm_core::source::Span;
use pest::pratt_parser::{Assoc, Op, PrattParser};
use std::sync::LazyLock;

/// The operators, loosest first; the grammar admits one comparison per operand.
static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    PrattParser::new()
        .op(Op::infix(Rule::iff_op, Assoc::Left))
        .op(Op::infix(Rule::imp_op, Assoc::Right))
        .op(Op::infix(Rule::kw_or, Assoc::Left))
        .op(Op::infix(Rule::kw_and, Assoc::Left))
        .op(Op::prefix(Rule::not_op))
        .op(Op::infix(Rule::cmp_op, Assoc::Left))
        .op(Op::infix(Rule::add_op, Assoc::Left))
        .op(Op::infix(Rule::mul_op, Assoc::Left))
        .op(Op::prefix(Rule::neg_op))
        .op(Op::postfix(Rule::field) | Op::postfix(Rule::index))
});

/// An expression being built, with the byte range of the text it was read
/// from (its parentheses, prefixes and the comments after it included):
/// `->` and `not` span that text, as the rules of the grammar did.
struct Part {
    expr: Expr,
    start: usize,
    end: usize,
}

impl Builder<'_> {
    pub(super) fn expr(&self, p: P) -> R<Expr> {
        match p.as_rule() {
            Rule::expr | Rule::arith_expr | Rule::agg_body | Rule::unary | Rule::postfix_expr => {
                Ok(self.sequence(p)?.expr)
            }
            _ => self.primary(p),
        }
    }

    /// Reads an operator sequence with the Pratt parser.
    fn sequence(&self, p: P) -> R<Part> {
        // Every `-` of a `unary` spans the whole of it, as `- -x` did.
        let whole = self.span(&p);
        let (start, end) = (p.as_span().start(), p.as_span().end());
        let mut pairs = p.clone().into_inner();
        if let (Some(q), None) = (pairs.next(), pairs.next()) {
            // A lone operand: no operator to read, and nests of quantifiers or
            // parentheses take fewer stack frames a level.
            return Ok(Part {
                start,
                end,
                ..self.operand(q)?
            });
        }
        let part = PRATT
            .map_primary(|q| self.operand(q))
            .map_prefix(|op, rhs| {
                let rhs = rhs?;
                let (un, span) = match op.as_rule() {
                    Rule::not_op => (UnOp::Not, self.covering(op.as_span().start(), rhs.end)),
                    _ => (UnOp::Neg, whole),
                };
                Ok(Part {
                    start: op.as_span().start(),
                    end: rhs.end,
                    expr: Expr {
                        kind: ExprKind::Unary(un, Box::new(rhs.expr)),
                        span,
                    },
                })
            })
            .map_infix(|lhs, op, rhs| {
                let (lhs, rhs) = (lhs?, rhs?);
                let op = binary_op(&op);
                let span = match op {
                    BinOp::Implies => self.covering(lhs.start, rhs.end),
                    _ => lhs.expr.span.to(rhs.expr.span),
                };
                Ok(Part {
                    start: lhs.start,
                    end: rhs.end,
                    expr: Expr {
                        kind: ExprKind::Binary(op, Box::new(lhs.expr), Box::new(rhs.expr)),
                        span,
                    },
                })
            })
            .map_postfix(|lhs, op| {
                let lhs = lhs?;
                let span = lhs.expr.span.to(self.span(&op));
                let end = op.as_span().end();
                let kind = match op.as_rule() {
                    Rule::field => ExprKind::Field(
                        Box::new(lhs.expr),
                        self.ident(op.into_inner().next().expect("field name")),
                    ),
                    _ => ExprKind::Index(
                        Box::new(lhs.expr),
                        Box::new(self.expr(op.into_inner().next().expect("index"))?),
                    ),
                };
                Ok(Part {
                    start: lhs.start,
                    end,
                    expr: Expr { kind, span },
                })
            })
            .parse(p.into_inner())?;
        Ok(Part { start, end, ..part })
    }

    fn operand(&self, q: P) -> R<Part> {
        let (start, end) = (q.as_span().start(), q.as_span().end());
        let expr = match q.as_rule() {
            Rule::unary | Rule::postfix_expr | Rule::expr => self.sequence(q)?.expr,
            _ => self.primary(q)?,
        };
        Ok(Part { expr, start, end })
    }

    /// The span from `start` over the text up to `end` and the whitespace and
    /// comments after it, less the trailing whitespace: what a rule ending in
    /// an optional part covered.
    fn covering(&self, start: usize, end: usize) -> Span {
        let text = self.text;
        let mut at = end;
        loop {
            let rest = &text[at..];
            let blank = rest.len() - rest.trim_start_matches([' ', '\t', '\r', '\n']).len();
            at += blank;
            if text[at..].starts_with("//") {
                at += text[at..].find('\n').unwrap_or(text.len() - at);
            } else {
                break;
            }
        }
        let trimmed = text[start..at].trim_end().len();
        Span::new(self.file, start, start + trimmed)
    }

    /// An operand that is no operator sequence: a literal, a name, a call,
    /// a quantified formula, an aggregate or a graph literal.
    pub(super) fn primary(&self, p: P) -> R<Expr> {
        let span = self.span(&p);
        match p.as_rule() {
            Rule::quantified => {
                let mut it = p.into_inner();
                let q = match it.next().expect("quantifier").as_str() {
                    "forall" => Quantifier::Forall,
                    _ => Quantifier::Exists,
                };
                let binders = self.binders(it.next().expect("binders"))?;
                let mut filter = None;
                let mut body = None;
                while let Some(n) = it.next() {
                    if n.as_rule() == Rule::kw_where {
                        filter = Some(Box::new(self.expr(it.next().expect("filter"))?));
                    } else {
                        body = Some(Box::new(self.expr(n)?));
                    }
                }
                Ok(Expr {
                    kind: ExprKind::Quant {
                        q,
                        binders,
                        filter,
                        body: body.expect("quantifier body"),
                    },
                    span,
                })
            }
            Rule::aggregate => {
                let mut it = p.into_inner();
                let op = match it.next().expect("aggregate").as_str() {
                    "sum" => AggOp::Sum,
                    "count" => AggOp::Count,
                    "max" => AggOp::Max,
                    _ => AggOp::Min,
                };
                // (count_op and agg_op both yield the operator's text.)
                let binders = self.binders(it.next().expect("binders"))?;
                let mut filter = None;
                let mut body = None;
                while let Some(n) = it.next() {
                    match n.as_rule() {
                        Rule::kw_where => filter = Some(Box::new(self.expr(it.next().expect("filter"))?)),
                        _ => body = Some(Box::new(self.expr(n)?)),
                    }
                }
                Ok(Expr {
                    kind: ExprKind::Agg {
                        op,
                        binders,
                        filter,
                        body,
                    },
                    span,
                })
            }
            Rule::call => {
                let mut it = p.into_inner();
                let f = self.ident(it.next().expect("callee"));
                let args = it.next().map(|a| self.args(a)).transpose()?.unwrap_or_default();
                Ok(Expr {
                    kind: ExprKind::Call(f, args),
                    span,
                })
            }
            Rule::bool_lit => Ok(Expr {
                kind: ExprKind::Bool(p.as_str() == "true"),
                span,
            }),
            Rule::string => Ok(Expr {
                kind: ExprKind::Str(unescape(string_text(&p))),
                span,
            }),
            Rule::ident => Ok(Expr {
                kind: ExprKind::Var(p.as_str().to_string()),
                span,
            }),
            Rule::quantity => self.quantity(p),
            Rule::graph_lit => {
                let mut chains = Vec::new();
                for c in p.into_inner() {
                    let mut chain = Vec::new();
                    for n in c.into_inner() {
                        let mut it = n.into_inner();
                        let name_pair = it.next().expect("node name");
                        let nspan = self.span(&name_pair);
                        let name = self.node_name(name_pair);
                        let attrs = it.next().map(|a| self.attrs(a)).transpose()?.unwrap_or_default();
                        chain.push(GraphNode {
                            name,
                            span: nspan,
                            attrs,
                        });
                    }
                    chains.push(chain);
                }
                Ok(Expr {
                    kind: ExprKind::Graph(GraphLit { chains }),
                    span,
                })
            }
            r => unreachable!("grammar yields no expression {r:?}"),
        }
    }

    fn binders(&self, p: P) -> R<Vec<Binder>> {
        p.into_inner()
            .map(|b| {
                let span = self.span(&b);
                let mut it = b.into_inner();
                let pat = it.next().expect("pattern");
                let pattern = match pat.as_rule() {
                    Rule::tuple_pattern => {
                        let mut pi = pat.into_inner();
                        Pattern::Pair(
                            self.ident(pi.next().expect("first")),
                            self.ident(pi.next().expect("second")),
                        )
                    }
                    _ => Pattern::One(self.ident(pat)),
                };
                let _in = it.next();
                let dom = it.next().expect("domain").into_inner().next().expect("domain");
                let domain = match dom.as_rule() {
                    Rule::range => {
                        let (a, b) = self.range(dom)?;
                        Domain::Range(Box::new(a), Box::new(b))
                    }
                    _ => Domain::Named(self.ident(dom)),
                };
                Ok(Binder { pattern, domain, span })
            })
            .collect()
    }

    fn quantity(&self, p: P) -> R<Expr> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let num = it.next().expect("number");
        let digits: String = num.as_str().chars().filter(|c| *c != '_').collect();
        let is_int = !digits.contains(['.', 'e', 'E']);
        let bad = || {
            Diag::error(
                "mcm::number",
                format!("`{}` is not a number this tool can hold", num.as_str()),
            )
            .label(span, "out of range")
            .help("integers must fit in 64 bits; other numbers must lie within about 1e-300 and 1e300")
        };
        // A real that overflows to infinity, or underflows to 0 though it
        // has a non-zero digit, would be taken silently as inf or 0.
        let real = |v: f64| {
            let mantissa = digits.split(['e', 'E']).next().unwrap_or("");
            let nonzero = mantissa.chars().any(|c| c.is_ascii_digit() && c != '0');
            (v.is_finite() && (v != 0.0 || !nonzero)).then_some(v).ok_or_else(bad)
        };
        match it.next() {
            None if is_int => Ok(Expr {
                kind: ExprKind::Int(digits.parse().map_err(|_| bad())?),
                span,
            }),
            None => Ok(Expr {
                kind: ExprKind::Real(real(digits.parse().map_err(|_| bad())?)?),
                span,
            }),
            Some(u) => {
                let v: f64 = real(digits.parse().map_err(|_| bad())?)?;
                let (factor, dim) = quantity::unit(u.as_str()).ok_or_else(|| {
                    Diag::error("mcm::unit", format!("unknown unit `{}`", u.as_str()))
                        .label(self.span(&u), "not a unit")
                        .help(unit_help(u.as_str()))
                })?;
                Ok(Expr {
                    kind: ExprKind::Quantity(real(v * factor)?, dim),
                    span,
                })
            }
        }
    }
}

fn binary_op(op: &P) -> BinOp {
    match op.as_str().trim() {
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "*" => BinOp::Mul,
        "/" => BinOp::Div,
        "%" => BinOp::Rem,
        "==" => BinOp::Eq,
        "!=" => BinOp::Ne,
        "<" => BinOp::Lt,
        "<=" => BinOp::Le,
        ">" => BinOp::Gt,
        ">=" => BinOp::Ge,
        "and" => BinOp::And,
        "or" => BinOp::Or,
        "->" => BinOp::Implies,
        "<->" => BinOp::Iff,
        o => unreachable!("grammar yields no operator {o:?}"),
    }
}
