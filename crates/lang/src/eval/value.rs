//! Values: what static evaluation computes, and `G`, a value or a term or
//! formula over the placement, which grounding builds.

use super::{rt, R};
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{CmpOp, Formula, Term};
use mcm_core::quantity::{Dim, Scalar};
use mcm_core::source::Span;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub enum Value {
    Int(i64),
    Num(f64, Dim),
    Bool(bool),
    Str(String),
    Graph(Arc<Graph>),
    Package(Arc<Package>),
    Node(u32),
    Edge(u32),
    Chip(u32),
    Link(u32),
}

impl Value {
    pub(crate) fn num(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Num(v, _) => Some(*v),
            Value::Chip(c) => Some(*c as f64),
            _ => None,
        }
    }

    pub(crate) fn is_int(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Chip(_))
    }

    /// An integer's exact value (`num` rounds beyond 2^53).
    pub(crate) fn int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Chip(c) => Some(*c as i64),
            _ => None,
        }
    }

    pub(crate) fn dim(&self) -> Dim {
        match self {
            Value::Num(_, d) => *d,
            _ => Dim::NONE,
        }
    }

    pub fn to_scalar(&self) -> Option<Scalar> {
        match self {
            Value::Int(i) => Some(Scalar::Int(*i)),
            Value::Num(v, d) => Some(Scalar::Num(*v, *d)),
            Value::Bool(b) => Some(Scalar::Bool(*b)),
            Value::Str(s) => Some(Scalar::Str(s.clone())),
            Value::Chip(c) => Some(Scalar::Int(*c as i64)),
            _ => None,
        }
    }

    pub(crate) fn from_scalar(s: &Scalar) -> Value {
        match s {
            Scalar::Int(i) => Value::Int(*i),
            Scalar::Num(v, d) => Value::Num(*v, *d),
            Scalar::Bool(b) => Value::Bool(*b),
            Scalar::Str(s) => Value::Str(s.clone()),
        }
    }
}

/// A value, or a number or truth value that depends on the placement.
#[derive(Clone, Debug)]
pub(crate) enum G {
    V(Value),
    /// A placement-dependent number; `true` when it is an integer.
    T(Term, bool),
    F(Formula),
}

pub(crate) fn is_int(g: &G) -> bool {
    match g {
        G::V(v) => v.is_int(),
        G::T(_, i) => *i,
        G::F(_) => false,
    }
}

pub(crate) fn term(g: G, span: Span) -> R<Term> {
    match g {
        G::V(v) => match v.num() {
            Some(x) => Ok(Term::Const(x)),
            None => match v {
                Value::Bool(b) => Ok(Term::Const(b as i64 as f64)),
                _ => Err(rt(span, "expected a number")),
            },
        },
        G::T(t, _) => Ok(t),
        G::F(_) => Err(rt(span, "expected a number, found a formula")),
    }
}

pub(crate) fn formula(g: G, span: Span) -> R<Formula> {
    match g {
        G::V(Value::Bool(b)) => Ok(Formula::Const(b)),
        G::F(f) => Ok(f),
        // A boolean chip attribute read through a placement-dependent chip.
        G::T(t, _) => Ok(Formula::Cmp(CmpOp::Ne, t, Term::Const(0.0))),
        _ => Err(rt(span, "expected a truth value")),
    }
}

pub(crate) fn from_formula(f: Formula) -> G {
    match f {
        Formula::Const(b) => G::V(Value::Bool(b)),
        f => G::F(f),
    }
}
