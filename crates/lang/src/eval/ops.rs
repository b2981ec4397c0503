//! The operators: logic and comparisons fold to formulas where an operand
//! depends on the placement; arithmetic is exact on integers.

use super::value::{formula, from_formula, is_int, term, Value, G};
use super::{rt, R};
use crate::ast::BinOp;
use mcm_core::problem::{CmpOp, Formula, Term};
use mcm_core::source::Span;

fn cmp_op(op: BinOp) -> CmpOp {
    match op {
        BinOp::Eq => CmpOp::Eq,
        BinOp::Ne => CmpOp::Ne,
        BinOp::Lt => CmpOp::Lt,
        BinOp::Le => CmpOp::Le,
        BinOp::Gt => CmpOp::Gt,
        _ => CmpOp::Ge,
    }
}

pub(super) fn binary(op: BinOp, a: G, b: G, span: Span) -> R<G> {
    if op.is_logic() {
        let fa = formula(a, span)?;
        let fb = formula(b, span)?;
        return Ok(from_formula(match op {
            BinOp::And => Formula::and(vec![fa, fb]),
            BinOp::Or => Formula::or(vec![fa, fb]),
            BinOp::Implies => Formula::implies(fa, fb),
            _ => Formula::iff(fa, fb),
        }));
    }
    if op.is_comparison() {
        return Ok(match (a, b) {
            (G::V(x), G::V(y)) => G::V(Value::Bool(static_cmp(op, &x, &y, span)?)),
            (G::F(x), y) | (y, G::F(x)) => {
                let y = formula(y, span)?;
                match op {
                    BinOp::Eq => from_formula(Formula::iff(x, y)),
                    BinOp::Ne => from_formula(Formula::not(Formula::iff(x, y))),
                    _ => return Err(rt(span, "truth values are only compared with == and !=")),
                }
            }
            (x, y) => G::F(Formula::Cmp(cmp_op(op), term(x, span)?, term(y, span)?)),
        });
    }
    match (a, b) {
        (G::V(x), G::V(y)) => Ok(G::V(static_arith(op, &x, &y, span)?)),
        (x, y) => {
            let int = is_int(&x) && is_int(&y);
            let (tx, ty) = (Box::new(term(x, span)?), Box::new(term(y, span)?));
            if matches!(op, BinOp::Div | BinOp::Rem) && ty.as_const() == Some(0.0) {
                return Err(rt(span, "division by zero"));
            }
            Ok(G::T(
                match op {
                    BinOp::Add => Term::Add(tx, ty),
                    BinOp::Sub => Term::Sub(tx, ty),
                    BinOp::Mul => Term::Mul(tx, ty),
                    BinOp::Div if int => Term::IntDiv(tx, ty),
                    BinOp::Div => Term::Div(tx, ty),
                    _ => Term::Rem(tx, ty),
                },
                int,
            ))
        }
    }
}

/// Integer division rounding down (towards minus infinity), as the checker
/// does for placement-dependent terms; `None` on overflow (the least
/// integer over -1) or a zero divisor.
fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if a % b != 0 && ((a < 0) != (b < 0)) { q - 1 } else { q })
}

/// The remainder of [`floor_div`], with the divisor's sign.
fn floor_rem(a: i64, b: i64) -> Option<i64> {
    // Any integer over -1 leaves 0 (`checked_rem` calls the least one an
    // overflow); |r| < |b| keeps r + b in range.
    let r = if b == -1 { 0 } else { a.checked_rem(b)? };
    Some(if r != 0 && ((r < 0) != (b < 0)) { r + b } else { r })
}

fn static_cmp(op: BinOp, x: &Value, y: &Value, span: Span) -> R<bool> {
    let eq = |r: bool| -> R<bool> {
        match op {
            BinOp::Eq => Ok(r),
            BinOp::Ne => Ok(!r),
            _ => Err(rt(span, "only == and != apply here")),
        }
    };
    match (x, y) {
        (Value::Str(a), Value::Str(b)) => eq(a == b),
        (Value::Bool(a), Value::Bool(b)) => eq(a == b),
        (Value::Node(a), Value::Node(b)) | (Value::Edge(a), Value::Edge(b)) | (Value::Link(a), Value::Link(b)) => {
            eq(a == b)
        }
        // Exactly: past 2^53 two integers can be one float.
        _ if x.is_int() && y.is_int() => Ok(cmp_op(op).holds(x.int().unwrap_or(0), y.int().unwrap_or(0))),
        _ => match (x.num(), y.num()) {
            (Some(a), Some(b)) => Ok(cmp_op(op).holds(a, b)),
            _ => Err(rt(span, "these values cannot be compared")),
        },
    }
}

fn static_arith(op: BinOp, x: &Value, y: &Value, span: Span) -> R<Value> {
    let overflow = || rt(span, "integer overflow");
    if x.is_int() && y.is_int() {
        let (a, b) = (x.int().unwrap_or(0), y.int().unwrap_or(0));
        if matches!(op, BinOp::Div | BinOp::Rem) && b == 0 {
            return Err(rt(span, "division by zero"));
        }
        return Ok(Value::Int(
            match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::Div => floor_div(a, b),
                _ => floor_rem(a, b),
            }
            .ok_or_else(overflow)?,
        ));
    }
    let (a, b) = match (x.num(), y.num()) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(rt(span, "arithmetic needs numbers")),
    };
    let (da, db) = (x.dim(), y.dim());
    let value = match op {
        BinOp::Add => Value::Num(a + b, if da.is_none() { db } else { da }),
        BinOp::Sub => Value::Num(a - b, if da.is_none() { db } else { da }),
        BinOp::Mul => Value::Num(a * b, da * db),
        BinOp::Div => {
            if b == 0.0 {
                return Err(rt(span, "division by zero"));
            }
            Value::Num(a / b, da / db)
        }
        _ => return Err(rt(span, "`%` takes integers")),
    };
    match value.num() {
        Some(v) if !v.is_finite() => Err(rt(span, format!("the result is {v}, not a number this tool can hold"))
            .help("numbers must lie within about 1e-300 and 1e300")),
        _ => Ok(value),
    }
}
