//! The built-in functions, one row each: the type checker reads a row's
//! parameters, context and typing rule, the interpreter its evaluation.
//! Adding a built-in is adding a row.

use crate::ast::{Arg, BinOp};
use crate::eval::{is_int, rt, term, Interpreter, Value, G, R};
use crate::types::{article, Ty, TypeChecker};
use mcm_core::diag::Diag;
use mcm_core::problem::{Formula, Term};
use mcm_core::source::Span;

/// Where a built-in may be called.
#[derive(Clone, Copy, Debug)]
pub enum Context {
    Anywhere,
    /// It reads the placement or the package: only in a constraint body.
    Placement,
    /// It builds a static value; the message says why not in a constraint.
    OutsideConstraints(&'static str),
}

/// Evaluates a call over its evaluated arguments (`(value, span)` each).
type EvalFn = fn(&mut Interpreter, &[(G, Span)], Span) -> R<G>;

/// One built-in function.
pub struct Builtin {
    pub name: &'static str,
    /// Parameter names, with their type where it is fixed (`None`: any number).
    pub params: &'static [(&'static str, Option<Ty>)],
    /// The result type where it is fixed; otherwise `typing` derives it.
    pub ret: Option<Ty>,
    pub context: Context,
    /// What an argument is called in a type error ("the argument of `chip`").
    pub role: &'static str,
    /// Types a call whose arity and context are right, given its arguments' types.
    pub typing: fn(&mut TypeChecker, &Builtin, &[Ty], &[Arg]) -> Ty,
    /// Evaluates a call, building a term or formula where the result
    /// depends on the placement.
    pub eval: EvalFn,
}

/// The table, in the order unknown-name suggestions list them.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "chip",
        params: &[("u", Some(Ty::Node))],
        ret: Some(Ty::Chip),
        context: Context::Placement,
        role: "the argument of `chip`",
        typing: typed,
        eval: chip,
    },
    Builtin {
        name: "flows",
        params: CHIP_PAIR,
        ret: Some(Ty::Bool),
        context: Context::Placement,
        role: "an argument of `flows`",
        typing: typed,
        eval: flows,
    },
    Builtin {
        name: "longest_path",
        params: CHIP_PAIR,
        ret: Some(Ty::Int),
        context: Context::Placement,
        role: "an argument of `longest_path`",
        typing: typed,
        eval: longest_path,
    },
    Builtin {
        name: "link",
        params: CHIP_PAIR,
        ret: Some(Ty::Bool),
        context: Context::Placement,
        role: "an argument of `link`",
        typing: typed,
        eval: link,
    },
    Builtin {
        name: "hops",
        params: CHIP_PAIR,
        ret: Some(Ty::Int),
        context: Context::Placement,
        role: "an argument of `hops`",
        typing: typed,
        eval: hops,
    },
    Builtin {
        name: "graph",
        params: &[("path", Some(Ty::Str))],
        ret: Some(Ty::Graph),
        context: Context::OutsideConstraints("a graph cannot be loaded inside a constraint"),
        role: "the path of a graph file",
        typing: typed,
        eval: graph,
    },
    Builtin {
        name: "max",
        params: &[("a", None), ("b", None)],
        ret: None,
        context: Context::Anywhere,
        role: "an argument of `max`",
        typing: same_unit,
        eval: |ev, args, span| extreme(ev, args, span, true),
    },
    Builtin {
        name: "min",
        params: &[("a", None), ("b", None)],
        ret: None,
        context: Context::Anywhere,
        role: "an argument of `min`",
        typing: same_unit,
        eval: |ev, args, span| extreme(ev, args, span, false),
    },
    Builtin {
        name: "abs",
        params: &[("x", None)],
        ret: None,
        context: Context::Anywhere,
        role: "the argument of `abs`",
        typing: number,
        eval: abs,
    },
];

const CHIP_PAIR: &[(&str, Option<Ty>)] = &[("a", Some(Ty::Chip)), ("b", Some(Ty::Chip))];

/// The row of a built-in function.
pub fn lookup(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

impl Builtin {
    /// `chip(u: node) -> chip`, `max(a, b)`: the signature arity errors show.
    pub fn signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(n, t)| match t {
                Some(t) => format!("{n}: {t}"),
                None => n.to_string(),
            })
            .collect();
        let ret = self.ret.map(|t| format!(" -> {t}")).unwrap_or_default();
        format!("{}({}){ret}", self.name, params.join(", "))
    }

    pub fn check(&self, c: &mut TypeChecker, tys: &[Ty], args: &[Arg]) -> Ty {
        (self.typing)(c, self, tys, args)
    }

    pub fn eval(&self, ev: &mut Interpreter, args: &[(G, Span)], span: Span) -> R<G> {
        // The checker has counted them; an unchecked caller gets an error, not a panic.
        if args.len() != self.params.len() {
            return Err(rt(
                span,
                format!("`{}` takes {} argument(s)", self.name, self.params.len()),
            ));
        }
        (self.eval)(ev, args, span)
    }
}

// ---------------------------------------------------------------- typing

/// Each argument fits its parameter's declared type; the result is `ret`.
fn typed(c: &mut TypeChecker, b: &Builtin, tys: &[Ty], args: &[Arg]) -> Ty {
    for ((_, want), (t, a)) in b.params.iter().zip(tys.iter().zip(args)) {
        if let Some(want) = want {
            c.expect_fits(*want, *t, &a.value, b.role);
        }
    }
    b.ret.unwrap_or(Ty::Err)
}

/// Two numbers of one unit, as `+` takes them.
fn same_unit(c: &mut TypeChecker, _: &Builtin, tys: &[Ty], args: &[Arg]) -> Ty {
    c.binary(BinOp::Add, (tys[0], &args[0].value), (tys[1], &args[1].value))
}

/// A number of any unit, returned as it is (a chip id as an int).
fn number(c: &mut TypeChecker, b: &Builtin, tys: &[Ty], args: &[Arg]) -> Ty {
    match tys[0].numeric() {
        Some(_) if tys[0] == Ty::Chip => Ty::Int,
        Some(_) => tys[0],
        None if tys[0] == Ty::Err => Ty::Err,
        None => c.err(
            Diag::error("mcm::type", format!("`{}` takes a number", b.name))
                .label(args[0].value.span, format!("this is {}", article(tys[0]))),
        ),
    }
}

// ---------------------------------------------------------------- evaluation

fn chip(_: &mut Interpreter, args: &[(G, Span)], _: Span) -> R<G> {
    match &args[0].0 {
        G::V(Value::Node(d)) => Ok(G::T(Term::Chip(*d), true)),
        _ => Err(rt(args[0].1, "`chip` takes a node")),
    }
}

/// Two chip ids as terms, each with its value where it does not depend on
/// the placement.
type ChipPair = ((Term, Option<u32>), (Term, Option<u32>));

fn chip_pair(ev: &mut Interpreter, args: &[(G, Span)], span: Span) -> R<ChipPair> {
    let a = ev.chip_term(args[0].0.clone(), args[0].1)?;
    let b = ev.chip_term(args[1].0.clone(), args[1].1)?;
    ev.world(span)?;
    Ok((a, b))
}

fn flows(ev: &mut Interpreter, args: &[(G, Span)], span: Span) -> R<G> {
    let ((ta, _), (tb, _)) = chip_pair(ev, args, span)?;
    Ok(G::F(Formula::Flows(ta, tb)))
}

fn longest_path(ev: &mut Interpreter, args: &[(G, Span)], span: Span) -> R<G> {
    Ok(match chip_pair(ev, args, span)? {
        ((_, Some(a)), (_, Some(b))) if a == b => G::V(Value::Int(0)),
        ((ta, _), (tb, _)) => G::T(Term::LongestPath(Box::new(ta), Box::new(tb)), true),
    })
}

fn link(ev: &mut Interpreter, args: &[(G, Span)], span: Span) -> R<G> {
    Ok(match chip_pair(ev, args, span)? {
        ((_, Some(a)), (_, Some(b))) => G::V(Value::Bool(ev.world(span)?.package.link(a, b).is_some())),
        ((ta, _), (tb, _)) => G::F(Formula::Link(ta, tb)),
    })
}

fn hops(ev: &mut Interpreter, args: &[(G, Span)], span: Span) -> R<G> {
    Ok(match chip_pair(ev, args, span)? {
        ((_, Some(a)), (_, Some(b))) => {
            let p = &ev.world(span)?.package;
            G::V(Value::Int(p.hops(a, b).map_or(p.num_chips() as i64, |h| h as i64)))
        }
        ((ta, _), (tb, _)) => G::T(Term::Hops(Box::new(ta), Box::new(tb)), true),
    })
}

fn graph(ev: &mut Interpreter, args: &[(G, Span)], span: Span) -> R<G> {
    match &args[0].0 {
        G::V(Value::Str(p)) => Ok(G::V(Value::Graph(ev.load_graph(p, span)?))),
        _ => Err(rt(args[0].1, "`graph` takes a path")),
    }
}

fn extreme(_: &mut Interpreter, args: &[(G, Span)], span: Span, is_max: bool) -> R<G> {
    Ok(match (args[0].0.clone(), args[1].0.clone()) {
        (G::V(a), G::V(b)) => {
            let (x, y) = (a.num().unwrap_or(0.0), b.num().unwrap_or(0.0));
            let pick_a = if is_max { x >= y } else { x <= y };
            G::V(if pick_a { a } else { b })
        }
        (a, b) => {
            let int = is_int(&a) && is_int(&b);
            let e = vec![
                (Formula::Const(true), term(a, span)?),
                (Formula::Const(true), term(b, span)?),
            ];
            G::T(if is_max { Term::Max(e) } else { Term::Min(e) }, int)
        }
    })
}

fn abs(_: &mut Interpreter, args: &[(G, Span)], span: Span) -> R<G> {
    Ok(match args[0].0.clone() {
        G::V(Value::Int(i)) => G::V(Value::Int(i.checked_abs().ok_or_else(|| rt(span, "integer overflow"))?)),
        G::V(Value::Num(x, d)) => G::V(Value::Num(x.abs(), d)),
        G::V(Value::Chip(c)) => G::V(Value::Int(c as i64)),
        g => {
            let int = is_int(&g);
            let t = term(g, span)?;
            G::T(
                Term::Max(vec![
                    (Formula::Const(true), t.clone()),
                    (Formula::Const(true), Term::Neg(Box::new(t))),
                ]),
                int,
            )
        }
    })
}
