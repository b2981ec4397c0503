//! Static checking: names, types and units, arity, and where each construct
//! may appear. Runs over every item before anything is evaluated, so errors
//! in an unused topology or constraint are still reported, all in one run.
//! Split by topic: items (lets, topologies, constraints, problems, tests)
//! and expressions; built-in functions are typed by their rows in
//! [`crate::builtins`].

mod expr;
mod items;

use crate::ast::*;
use crate::loader::{ItemRef, Program};
use mcm_core::diag::Diag;
use mcm_core::quantity::{Dim, TYPE_NAMES};
use mcm_core::source::Span;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ty {
    Int,
    Num(Dim),
    Bool,
    Str,
    Node,
    Edge,
    Chip,
    Link,
    Graph,
    Package,
    /// The type of an expression that already has an error: checks nothing.
    Err,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Int => f.write_str("int"),
            Ty::Num(d) => write!(f, "{d}"),
            Ty::Bool => f.write_str("bool"),
            Ty::Str => f.write_str("str"),
            Ty::Node => f.write_str("node"),
            Ty::Edge => f.write_str("edge"),
            Ty::Chip => f.write_str("chip"),
            Ty::Link => f.write_str("link"),
            Ty::Graph => f.write_str("graph"),
            Ty::Package => f.write_str("package"),
            Ty::Err => f.write_str("?"),
        }
    }
}

impl Ty {
    /// The dimension of a number, and whether it is an integer.
    pub(crate) fn numeric(self) -> Option<(Dim, bool)> {
        match self {
            Ty::Int | Ty::Chip => Some((Dim::NONE, true)),
            Ty::Num(d) => Some((d, false)),
            _ => None,
        }
    }
}

/// Each parameter's name, declared type and whether it has a default: what
/// a call of a topology or a constraint is checked against.
pub fn param_signature(params: &[Param]) -> Vec<(String, Ty, bool)> {
    params
        .iter()
        .map(|p| {
            (
                p.name.name.clone(),
                param_type(&p.ty.name).unwrap_or(Ty::Err),
                p.default.is_some(),
            )
        })
        .collect()
}

/// A parameter's declared type, from its name.
pub fn param_type(name: &str) -> Option<Ty> {
    match name {
        "int" => Some(Ty::Int),
        "bool" => Some(Ty::Bool),
        "str" => Some(Ty::Str),
        _ => TYPE_NAMES.iter().find(|(n, _)| *n == name).map(|(_, d)| Ty::Num(*d)),
    }
}

fn type_names() -> impl Iterator<Item = &'static str> + Clone {
    ["int", "bool", "str"]
        .into_iter()
        .chain(TYPE_NAMES.iter().map(|(n, _)| *n))
}

pub const NODE_FIELDS: &[(&str, Ty)] = &[
    ("id", Ty::Str),
    ("op", Ty::Str),
    ("flops", Ty::Num(Dim::FLOP)),
    ("params", Ty::Num(Dim::BYTES)),
    ("output_bytes", Ty::Num(Dim::BYTES)),
];
pub const EDGE_FIELDS: &[(&str, Ty)] = &[("src", Ty::Node), ("dst", Ty::Node), ("bytes", Ty::Num(Dim::BYTES))];
/// Node attributes an inline graph may set.
pub const GRAPH_NODE_ATTRS: &[(&str, Ty)] = &[
    ("op", Ty::Str),
    ("flops", Ty::Num(Dim::FLOP)),
    ("params", Ty::Num(Dim::BYTES)),
    ("output_bytes", Ty::Num(Dim::BYTES)),
    ("replicable", Ty::Bool),
];
/// Chip and link attributes whose type is fixed, whatever the topology.
/// A chip's `kind` names the measured op times of a graph that apply to it.
pub const CHIP_ATTRS: &[(&str, Ty)] = &[
    ("memory", Ty::Num(Dim::BYTES)),
    ("compute", Ty::Num(Dim::FLOP_RATE)),
    ("overhead", Ty::Num(Dim::TIME)),
    ("kind", Ty::Str),
];
pub const LINK_ATTRS: &[(&str, Ty)] = &[("bandwidth", Ty::Num(Dim::RATE)), ("latency", Ty::Num(Dim::TIME))];

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ctx {
    /// Lets, problem and test lines: no graph or package in scope.
    Static,
    /// A topology body: loop variables and chip groups.
    Topology,
    /// A constraint body: quantifiers over the graph and package, `chip(u)`.
    Constraint,
}

pub struct TypeChecker<'p> {
    prog: &'p Program,
    module: usize,
    locals: Vec<(String, Ty)>,
    ctx: Ctx,
    let_types: HashMap<ItemRef, Ty>,
    in_progress: HashSet<ItemRef>,
    chip_attrs: HashMap<String, Ty>,
    link_attrs: HashMap<String, Ty>,
    /// The dimension of each side of every comparison, by span, so that a
    /// violation report can print quantities with their units.
    units: HashMap<Span, Dim>,
    pub diags: Vec<Diag>,
}

/// What checking learnt that later stages use.
#[derive(Debug, Default)]
pub struct TypeInfo {
    /// Dimensions of comparison operands, by span.
    pub units: HashMap<Span, Dim>,
    /// The type of each top-level `let` (for an editor's hover).
    pub lets: HashMap<ItemRef, Ty>,
    /// Every chip and link attribute the program's topologies set, custom
    /// ones included, with its type (for an editor's completion).
    pub chip_attrs: BTreeMap<String, Ty>,
    pub link_attrs: BTreeMap<String, Ty>,
}

/// Checks every item of every module; returns the diagnostics.
pub fn check_program(prog: &Program) -> (Vec<Diag>, TypeInfo) {
    let mut c = TypeChecker {
        prog,
        module: 0,
        locals: Vec::new(),
        ctx: Ctx::Static,
        let_types: HashMap::new(),
        in_progress: HashSet::new(),
        chip_attrs: CHIP_ATTRS.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        link_attrs: LINK_ATTRS.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        units: HashMap::new(),
        diags: Vec::new(),
    };
    // Topologies first: they declare the chip and link attributes that
    // constraints may read.
    for m in 0..prog.modules.len() {
        c.module = m;
        for item in &prog.modules[m].ast.items {
            if let Item::Topology(t) = item {
                c.topology(t);
            }
        }
    }
    for m in 0..prog.modules.len() {
        c.module = m;
        for (i, item) in prog.modules[m].ast.items.iter().enumerate() {
            match item {
                Item::Let(_) => {
                    c.let_type(ItemRef { module: m, index: i });
                }
                Item::Constraint(k) => c.constraint(k),
                // Problems and tests of imported files are never run.
                Item::Partition(p) if m == 0 => c.partition(p, true),
                Item::Test(t) if m == 0 => c.test(t),
                _ => {}
            }
        }
    }
    (
        c.diags,
        TypeInfo {
            units: c.units,
            lets: c.let_types,
            chip_attrs: c.chip_attrs.into_iter().collect(),
            link_attrs: c.link_attrs.into_iter().collect(),
        },
    )
}

impl TypeChecker<'_> {
    pub(crate) fn err(&mut self, d: Diag) -> Ty {
        self.diags.push(d);
        Ty::Err
    }

    fn with_locals<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let n = self.locals.len();
        let r = f(self);
        self.locals.truncate(n);
        r
    }

    pub(crate) fn expect_fits(&mut self, want: Ty, got: Ty, e: &Expr, what: &str) {
        if fits(want, got, e) {
            return;
        }
        let help = match (want, got) {
            (Ty::Num(d), Ty::Int) if !d.is_none() => {
                format!(
                    "numbers of {d} need a unit, e.g. `{} {}`",
                    snippet_int(e),
                    example_unit(d)
                )
            }
            _ => format!("{what} must be {}", article(want)),
        };
        self.err(
            Diag::error(
                "mcm::type",
                format!("expected {}, found {}", article(want), article(got)),
            )
            .label(e.span, format!("this is {}", article(got)))
            .help(help),
        );
    }
}

pub(crate) fn is_zero(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Int(0))
}

/// Whether a value of type `got` may stand where `want` is expected.
pub(crate) fn fits(want: Ty, got: Ty, e: &Expr) -> bool {
    if want == got || want == Ty::Err || got == Ty::Err {
        return true;
    }
    match (want, got) {
        (Ty::Num(d), Ty::Int) => d.is_none() || is_zero(e),
        (Ty::Int, Ty::Chip) | (Ty::Chip, Ty::Int) => true,
        _ => false,
    }
}

pub(crate) fn article(t: Ty) -> String {
    match t {
        Ty::Int => "an int".into(),
        Ty::Err => "an unknown type".into(),
        Ty::Num(d) if d.type_name().is_none() => format!("a {d}"),
        Ty::Num(d) => match d.type_name() {
            Some("bytes") => "bytes".into(),
            Some(n) => format!("a {n}"),
            None => format!("a {d}"),
        },
        other => format!("a {other}"),
    }
}

pub(crate) fn units_help(a: Ty, b: Ty) -> String {
    match (a, b) {
        (Ty::Num(da), Ty::Num(db)) if !da.is_none() && !db.is_none() => format!(
            "both sides must have the same unit: the left is in {}, the right in {}",
            da.base_unit(),
            db.base_unit()
        ),
        (Ty::Num(d), Ty::Int) | (Ty::Int, Ty::Num(d)) if !d.is_none() => {
            format!("give the number a unit, e.g. `{}`", example_unit(d))
        }
        _ => "both sides must have the same type".into(),
    }
}

pub(crate) fn example_unit(d: Dim) -> &'static str {
    match d {
        x if x == Dim::BYTES => "MiB",
        x if x == Dim::RATE => "GB/s",
        x if x == Dim::FLOP => "GFLOP",
        x if x == Dim::FLOP_RATE => "TFLOP/s",
        x if x == Dim::TIME => "ms",
        _ => "<unit>",
    }
}

pub(crate) fn snippet_int(e: &Expr) -> String {
    match e.kind {
        ExprKind::Int(i) => i.to_string(),
        _ => "1".into(),
    }
}

pub(crate) fn signature(callee: &str, params: &[(String, Ty, bool)]) -> String {
    let ps: Vec<String> = params
        .iter()
        .map(|(n, t, d)| {
            if *d {
                format!("{n}: {t} = ..")
            } else {
                format!("{n}: {t}")
            }
        })
        .collect();
    format!("the signature is `{callee}({})`", ps.join(", "))
}

/// `a`, `a and b`, `a, b and c`: a list as a sentence says it.
pub(crate) fn spoken_list(items: impl IntoIterator<Item = String>) -> String {
    let mut items: Vec<String> = items.into_iter().collect();
    match items.pop() {
        None => String::new(),
        Some(last) if items.is_empty() => last,
        Some(last) => format!("{} and {last}", items.join(", ")),
    }
}
