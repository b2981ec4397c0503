//! Static checking: names, types and units, arity, and where each construct
//! may appear. Runs over every item before anything is evaluated, so errors
//! in an unused topology or constraint are still reported, all in one run.

use super::ast::*;
use super::loader::{ItemRef, Program};
use mcm_core::diag::{unknown_help, Diag};
use mcm_core::quantity::{Dim, TYPE_NAMES};
use mcm_core::source::Span;
use std::collections::{HashMap, HashSet};
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
    fn numeric(self) -> Option<(Dim, bool)> {
        match self {
            Ty::Int | Ty::Chip => Some((Dim::NONE, true)),
            Ty::Num(d) => Some((d, false)),
            _ => None,
        }
    }
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

/// Built-in functions: name, arity, and whether they depend on a placement.
pub const BUILTINS: &[&str] = &[
    "chip",
    "flows",
    "longest_path",
    "link",
    "hops",
    "graph",
    "max",
    "min",
    "abs",
];

/// Metrics a problem can optimise.
pub const METRICS: &[&str] = &["throughput", "latency"];

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
pub const CHIP_ATTRS: &[(&str, Ty)] = &[("memory", Ty::Num(Dim::BYTES)), ("compute", Ty::Num(Dim::FLOP_RATE))];
pub const LINK_ATTRS: &[(&str, Ty)] = &[("bandwidth", Ty::Num(Dim::RATE)), ("latency", Ty::Num(Dim::TIME))];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// Lets, problem and test lines: no graph or package in scope.
    Static,
    /// A topology body: loop variables and chip groups.
    Topology,
    /// A constraint body: quantifiers over the graph and package, `chip(u)`.
    Constraint,
}

pub struct Checker<'p> {
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
}

/// Checks every item of every module; returns the diagnostics.
pub fn check_program(prog: &Program) -> (Vec<Diag>, TypeInfo) {
    let mut c = Checker {
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
    (c.diags, TypeInfo { units: c.units })
}

impl<'p> Checker<'p> {
    fn err(&mut self, d: Diag) -> Ty {
        self.diags.push(d);
        Ty::Err
    }

    fn with_locals<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let n = self.locals.len();
        let r = f(self);
        self.locals.truncate(n);
        r
    }

    fn let_type(&mut self, r: ItemRef) -> Ty {
        if let Some(t) = self.let_types.get(&r) {
            return *t;
        }
        let Item::Let(l) = self.prog.item(r) else {
            return Ty::Err;
        };
        if !self.in_progress.insert(r) {
            return self.err(
                Diag::error("mcm::cycle", format!("`{}` is defined in terms of itself", l.name.name))
                    .label(l.name.span, "here"),
            );
        }
        let saved = (self.module, std::mem::take(&mut self.locals), self.ctx);
        self.module = r.module;
        self.ctx = Ctx::Static;
        let t = self.let_decl(l);
        (self.module, self.locals, self.ctx) = saved;
        self.in_progress.remove(&r);
        self.let_types.insert(r, t);
        t
    }

    /// The type of a `let`, checked against its annotation when it has one.
    fn let_decl(&mut self, l: &LetDecl) -> Ty {
        let t = self.expr(&l.value);
        let Some(ann) = &l.ty else {
            return t;
        };
        let want = match ann.name.as_str() {
            "graph" => Some(Ty::Graph),
            "package" => Some(Ty::Package),
            other => param_type(other),
        };
        match want {
            Some(w) => {
                self.expect_fits(w, t, &l.value, &format!("`{}`", l.name.name));
                w
            }
            None => self.err(
                Diag::error("mcm::type", format!("unknown type `{}`", ann.name))
                    .label(ann.span, "not a type")
                    .help(unknown_help(
                        &ann.name,
                        "type",
                        type_names().chain(["graph", "package"]),
                    )),
            ),
        }
    }

    fn params(&mut self, params: &[Param]) -> Vec<(String, Ty)> {
        let mut seen: HashMap<&str, Span> = HashMap::new();
        let mut out = Vec::new();
        for p in params {
            if let Some(prev) = seen.insert(&p.name.name, p.name.span) {
                self.err(
                    Diag::error(
                        "mcm::duplicate",
                        format!("parameter `{}` is declared twice", p.name.name),
                    )
                    .label(p.name.span, "again here")
                    .label(prev, "first here"),
                );
            }
            let t = match param_type(&p.ty.name) {
                Some(t) => t,
                None => self.err(
                    Diag::error("mcm::type", format!("unknown type `{}`", p.ty.name))
                        .label(p.ty.span, "not a type")
                        .help(unknown_help(&p.ty.name, "type", type_names())),
                ),
            };
            if let Some(d) = &p.default {
                let saved = self.ctx;
                self.ctx = Ctx::Static;
                // A default may use the parameters before it.
                let earlier = out.clone();
                let dt = self.with_locals(|c| {
                    c.locals.extend(earlier);
                    c.expr(d)
                });
                self.ctx = saved;
                self.expect_fits(t, dt, d, &format!("the default of `{}`", p.name.name));
            }
            out.push((p.name.name.clone(), t));
        }
        out
    }

    fn topology(&mut self, t: &TopologyDecl) {
        self.ctx = Ctx::Topology;
        let params = self.params(&t.params);
        self.with_locals(|c| {
            c.locals.extend(params);
            let mut groups = HashMap::new();
            c.topo_block(&t.body, &mut groups);
        });
        self.ctx = Ctx::Static;
    }

    fn topo_block(&mut self, body: &[TopoStmt], groups: &mut HashMap<String, bool>) {
        for s in body {
            match s {
                TopoStmt::Chips { name, count, attrs, .. } => {
                    if let Some(c) = count {
                        let t = self.expr(c);
                        self.expect_fits(Ty::Int, t, c, "a chip count");
                    }
                    groups.insert(name.name.clone(), count.is_some());
                    for a in attrs {
                        self.attribute(a, true);
                    }
                }
                TopoStmt::Link { src, dst, attrs, .. } => {
                    for r in [src, dst] {
                        match groups.get(&r.group.name) {
                            None => {
                                let known: Vec<String> = groups.keys().cloned().collect();
                                self.err(
                                    Diag::error("mcm::name", format!("unknown chip group `{}`", r.group.name))
                                        .label(r.group.span, "not declared before this link")
                                        .help(unknown_help(
                                            &r.group.name,
                                            "chip group",
                                            known.iter().map(String::as_str),
                                        )),
                                );
                            }
                            Some(indexed) => match (&r.index, indexed) {
                                (Some(i), true) => {
                                    let t = self.expr(i);
                                    self.expect_fits(Ty::Int, t, i, "a chip index");
                                }
                                (None, false) => {}
                                (Some(_), false) => {
                                    self.err(
                                        Diag::error("mcm::type", format!("`{}` is a single chip", r.group.name))
                                            .label(r.span, "has no index")
                                            .help(format!("write `{}` without `[...]`", r.group.name)),
                                    );
                                }
                                (None, true) => {
                                    self.err(
                                        Diag::error("mcm::type", format!("`{}` is a group of chips", r.group.name))
                                            .label(r.span, "needs an index")
                                            .help(format!("write `{}[i]`", r.group.name)),
                                    );
                                }
                            },
                        }
                    }
                    for a in attrs {
                        self.attribute(a, false);
                    }
                }
                TopoStmt::For { var, from, to, body } => {
                    for e in [from, to] {
                        let t = self.expr(e);
                        self.expect_fits(Ty::Int, t, e, "a range bound");
                    }
                    self.with_locals(|c| {
                        c.locals.push((var.name.clone(), Ty::Int));
                        c.topo_block(body, groups);
                    });
                }
                TopoStmt::If { cond, then, otherwise } => {
                    let t = self.expr(cond);
                    self.expect_fits(Ty::Bool, t, cond, "a condition");
                    self.with_locals(|c| c.topo_block(then, groups));
                    self.with_locals(|c| c.topo_block(otherwise, groups));
                }
                TopoStmt::Let(l) => {
                    let t = self.let_decl(l);
                    self.locals.push((l.name.name.clone(), t));
                }
            }
        }
    }

    /// Checks a chip or link attribute and records its type for constraints.
    fn attribute(&mut self, a: &Attr, chip: bool) {
        let t = self.expr(&a.value);
        if t == Ty::Err {
            return;
        }
        if !matches!(t, Ty::Int | Ty::Num(_) | Ty::Bool | Ty::Str) {
            self.err(
                Diag::error("mcm::type", format!("attribute `{}` cannot hold a {t}", a.name.name))
                    .label(a.value.span, format!("this is a {t}"))
                    .help("attributes hold numbers, quantities, booleans or strings"),
            );
            return;
        }
        let what = if chip { "chip" } else { "link" };
        let table = if chip {
            &mut self.chip_attrs
        } else {
            &mut self.link_attrs
        };
        match table.get(&a.name.name).copied() {
            None => {
                table.insert(a.name.name.clone(), t);
            }
            Some(known) => {
                // One attribute name has one type across every topology, so
                // that a constraint reading it is checked once for all.
                if !fits(known, t, &a.value) {
                    self.err(
                        Diag::error(
                            "mcm::type",
                            format!(
                                "{what} attribute `{}` is {} elsewhere, {} here",
                                a.name.name,
                                article(known),
                                article(t)
                            ),
                        )
                        .label(a.value.span, format!("this is {}", article(t)))
                        .help(format!("give `{}` the same type everywhere", a.name.name)),
                    );
                }
            }
        }
    }

    fn constraint(&mut self, k: &ConstraintDecl) {
        let params = self.params(&k.params);
        self.ctx = Ctx::Constraint;
        self.with_locals(|c| {
            c.locals.extend(params);
            for e in &k.body {
                let t = c.expr(e);
                c.expect_fits(Ty::Bool, t, e, "a constraint body");
            }
        });
        self.ctx = Ctx::Static;
    }

    fn partition(&mut self, p: &PartitionDecl, top_level: bool) {
        let g = self.expr(&p.graph);
        self.expect_fits(Ty::Graph, g, &p.graph, "the graph to partition");
        let k = self.expr(&p.package);
        self.expect_fits(Ty::Package, k, &p.package, "the package to partition onto");
        for u in &p.requires {
            self.constraint_use(u);
        }
        if let Some(o) = &p.objective {
            let wrong_way = match (o.sense, o.metric.name.as_str()) {
                (Sense::Minimize, "throughput") => Some("maximize throughput"),
                (Sense::Maximize, "latency") => Some("minimize latency"),
                _ => None,
            };
            if let Some(right) = wrong_way {
                self.err(
                    Diag::error(
                        "mcm::type",
                        format!("`{}` goes the wrong way", self.prog.sources.snippet(o.span)),
                    )
                    .label(o.span, "this would look for the worst partition")
                    .help(format!("write `{right}`")),
                );
            }
            if !METRICS.contains(&o.metric.name.as_str()) {
                self.err(
                    Diag::error("mcm::name", format!("unknown objective `{}`", o.metric.name))
                        .label(o.metric.span, "not a metric")
                        .help(unknown_help(&o.metric.name, "metric", METRICS.iter().copied())),
                );
            }
        }
        if !top_level && (p.objective.is_some() || p.evaluator.is_some()) {
            self.err(
                Diag::error("mcm::test", "a test's `partition` line takes no objective or evaluator")
                    .label(p.span, "inside a test"),
            );
        }
    }

    /// Resolves `name(args)` in a `require` or `expect violates` line.
    pub fn constraint_use(&mut self, u: &ConstraintUse) {
        self.constraint_use_with(u, false)
    }

    /// As `constraint_use`; with `bare`, missing arguments are not an error.
    fn constraint_use_with(&mut self, u: &ConstraintUse, bare: bool) {
        let Some(r) = self.prog.lookup(self.module, &u.name.name) else {
            let known: Vec<String> = self.constraint_names();
            self.err(
                Diag::error("mcm::name", format!("unknown constraint `{}`", u.name.name))
                    .label(u.name.span, "not defined or imported")
                    .help(unknown_help(
                        &u.name.name,
                        "constraint",
                        known.iter().map(String::as_str),
                    )),
            );
            return;
        };
        let Item::Constraint(k) = self.prog.item(r) else {
            self.err(
                Diag::error("mcm::type", format!("`{}` is not a constraint", u.name.name))
                    .label(u.name.span, "expected a constraint"),
            );
            return;
        };
        let params: Vec<(String, Ty, bool)> = k
            .params
            .iter()
            .map(|p| {
                (
                    p.name.name.clone(),
                    param_type(&p.ty.name).unwrap_or(Ty::Err),
                    p.default.is_some(),
                )
            })
            .collect();
        if bare {
            return;
        }
        let args = u.args.clone().unwrap_or_default();
        self.call_args(&u.name.name, "constraint", &params, &args, u.span);
    }

    fn constraint_names(&self) -> Vec<String> {
        let m = &self.prog.modules[self.module];
        let mut v: Vec<String> = m
            .scope
            .iter()
            .filter(|(_, r)| matches!(self.prog.item(**r), Item::Constraint(_)))
            .map(|(n, _)| n.clone())
            .collect();
        v.sort();
        v
    }

    fn test(&mut self, t: &TestDecl) {
        self.with_locals(|c| {
            let mut placed = false;
            let mut partitioned = false;
            let mut expects = Vec::new();
            for s in &t.body {
                match s {
                    TestStmt::Let(l) => {
                        let ty = c.let_decl(l);
                        c.locals.push((l.name.name.clone(), ty));
                    }
                    TestStmt::Place(p) => {
                        placed = true;
                        let g = c.expr(&p.graph);
                        c.expect_fits(Ty::Graph, g, &p.graph, "the graph to place");
                        let k = c.expr(&p.package);
                        c.expect_fits(Ty::Package, k, &p.package, "the package to place onto");
                        for e in &p.entries {
                            let ty = c.expr(&e.chip);
                            c.expect_fits(Ty::Int, ty, &e.chip, "a chip id");
                        }
                    }
                    TestStmt::Partition(p) => {
                        partitioned = true;
                        c.partition(p, false);
                    }
                    TestStmt::Require(us, _) => {
                        for u in us {
                            c.constraint_use(u);
                        }
                    }
                    TestStmt::Expect(x, span) => {
                        if let Expectation::Violates(us) = x {
                            for u in us {
                                // A bare name may stand for a rule required
                                // with arguments; the runner checks which.
                                c.constraint_use_with(u, u.args.is_none());
                            }
                        }
                        expects.push((x, *span));
                    }
                }
            }
            let mut fail = |d: Diag| c.diags.push(d);
            if expects.is_empty() {
                fail(
                    Diag::error("mcm::test", format!("test \"{}\" has no `expect` line", t.name))
                        .label(t.name_span, "this test")
                        .help("end it with `expect valid`, `expect violates X`, `expect satisfiable` or `expect unsatisfiable`"),
                );
            }
            if expects.len() > 1 {
                fail(
                    Diag::error("mcm::test", format!("test \"{}\" has more than one `expect` line", t.name))
                        .label(expects[1].1, "second expect")
                        .help("write one test for each expectation"),
                );
            }
            if placed && partitioned {
                fail(
                    Diag::error("mcm::test", "a test either places a graph or asks whether it can be partitioned")
                        .label(t.name_span, "this test does both")
                        .help("split it into two tests"),
                );
            }
            for (x, span) in expects {
                let needs_place = matches!(x, Expectation::Valid | Expectation::Violates(_));
                if needs_place && !placed {
                    fail(
                        Diag::error("mcm::test", "`expect valid` and `expect violates` need a `place` line")
                            .label(span, "nothing was placed")
                            .help("add `place g onto t { node: chip, ... }`"),
                    );
                }
                if !needs_place && !partitioned {
                    fail(
                        Diag::error("mcm::test", "`expect satisfiable` and `expect unsatisfiable` need a `partition` line")
                            .label(span, "no partition question was asked")
                            .help("add `partition g onto t`"),
                    );
                }
            }
        });
    }

    /// Checks arguments against parameters: names, count, types.
    fn call_args(&mut self, callee: &str, what: &str, params: &[(String, Ty, bool)], args: &[Arg], span: Span) {
        let mut given: Vec<Option<Span>> = vec![None; params.len()];
        let mut seen_named = false;
        for (i, a) in args.iter().enumerate() {
            let at = self.expr(&a.value);
            let slot = match &a.name {
                Some(n) => {
                    seen_named = true;
                    match params.iter().position(|p| p.0 == n.name) {
                        Some(s) => s,
                        None => {
                            self.err(
                                Diag::error("mcm::arity", format!("`{callee}` has no parameter `{}`", n.name))
                                    .label(n.span, "unknown parameter")
                                    .help(unknown_help(&n.name, "parameter", params.iter().map(|p| p.0.as_str()))),
                            );
                            continue;
                        }
                    }
                }
                None if seen_named => {
                    self.err(
                        Diag::error("mcm::arity", "a positional argument after a named one")
                            .label(a.value.span, "name this argument")
                            .help("write positional arguments first"),
                    );
                    continue;
                }
                None if i >= params.len() => {
                    self.err(
                        Diag::error(
                            "mcm::arity",
                            format!("`{callee}` takes {} argument(s), {} given", params.len(), args.len()),
                        )
                        .label(a.value.span, "extra argument")
                        .help(signature(callee, params)),
                    );
                    continue;
                }
                None => i,
            };
            if let Some(prev) = given[slot] {
                self.err(
                    Diag::error("mcm::arity", format!("`{}` is given twice", params[slot].0))
                        .label(a.value.span, "again here")
                        .label(prev, "first here"),
                );
                continue;
            }
            given[slot] = Some(a.value.span);
            let (pname, pty, _) = &params[slot];
            self.expect_fits(*pty, at, &a.value, &format!("parameter `{pname}` of `{callee}`"));
        }
        let missing: Vec<String> = params
            .iter()
            .zip(&given)
            .filter(|(p, g)| g.is_none() && !p.2)
            .map(|(p, _)| format!("`{}: {}`", p.0, p.1))
            .collect();
        if !missing.is_empty() {
            self.err(
                Diag::error(
                    "mcm::arity",
                    format!("{what} `{callee}` is missing {}", missing.join(", ")),
                )
                .label(span, format!("takes {} argument(s)", params.len()))
                .help(signature(callee, params)),
            );
        }
    }

    fn expect_fits(&mut self, want: Ty, got: Ty, e: &Expr, what: &str) {
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

    // ------------------------------------------------------------ expressions

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

    fn call(&mut self, f: &Ident, args: &[Arg], span: Span) -> Ty {
        let name = f.name.as_str();
        let callee = self
            .prog
            .lookup(self.module, name)
            .filter(|r| !(matches!(self.prog.item(*r), Item::Let(_)) && BUILTINS.contains(&name)));
        if let Some(r) = callee {
            return match self.prog.item(r) {
                Item::Topology(t) => {
                    if self.ctx == Ctx::Constraint {
                        return self.err(
                            Diag::error("mcm::context", "a package cannot be built inside a constraint")
                                .label(span, "not allowed here"),
                        );
                    }
                    let params: Vec<(String, Ty, bool)> = t
                        .params
                        .iter()
                        .map(|p| {
                            (
                                p.name.name.clone(),
                                param_type(&p.ty.name).unwrap_or(Ty::Err),
                                p.default.is_some(),
                            )
                        })
                        .collect();
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
        if !BUILTINS.contains(&name) {
            let mut known: Vec<String> = BUILTINS.iter().map(|s| s.to_string()).collect();
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
        }
        if let Some(a) = args.iter().find(|a| a.name.is_some()) {
            let n = a.name.as_ref().map(|n| n.span).unwrap_or(span);
            return self.err(
                Diag::error("mcm::arity", format!("`{name}` takes positional arguments only"))
                    .label(n, "named argument"),
            );
        }
        let arity = |c: &mut Self, n: usize, sig: &str| -> bool {
            if tys.len() != n {
                c.err(
                    Diag::error(
                        "mcm::arity",
                        format!("`{name}` takes {n} argument(s), {} given", tys.len()),
                    )
                    .label(span, "wrong number of arguments")
                    .help(format!("the signature is `{sig}`")),
                );
                false
            } else {
                true
            }
        };
        let in_constraint = |c: &mut Self| -> bool {
            if c.ctx != Ctx::Constraint {
                c.err(
                    Diag::error("mcm::context", format!("`{name}` depends on a placement"))
                        .label(span, "only meaningful inside a constraint")
                        .help("use it in a `constraint` body"),
                );
                false
            } else {
                true
            }
        };
        match name {
            "chip" => {
                if !arity(self, 1, "chip(u: node) -> chip") || !in_constraint(self) {
                    return Ty::Err;
                }
                self.expect_fits(Ty::Node, tys[0], &args[0].value, "the argument of `chip`");
                Ty::Chip
            }
            "flows" | "longest_path" | "link" | "hops" => {
                let ret = match name {
                    "flows" | "link" => Ty::Bool,
                    _ => Ty::Int,
                };
                if !arity(self, 2, &format!("{name}(a: chip, b: chip) -> {ret}")) || !in_constraint(self) {
                    return Ty::Err;
                }
                for (t, a) in tys.iter().zip(args) {
                    self.expect_fits(Ty::Chip, *t, &a.value, &format!("an argument of `{name}`"));
                }
                ret
            }
            "graph" => {
                if !arity(self, 1, "graph(path: str) -> graph") {
                    return Ty::Err;
                }
                if self.ctx == Ctx::Constraint {
                    return self.err(
                        Diag::error("mcm::context", "a graph cannot be loaded inside a constraint")
                            .label(span, "not allowed here"),
                    );
                }
                self.expect_fits(Ty::Str, tys[0], &args[0].value, "the path of a graph file");
                Ty::Graph
            }
            "max" | "min" => {
                if !arity(self, 2, &format!("{name}(a, b)")) {
                    return Ty::Err;
                }
                self.binary(BinOp::Add, (tys[0], &args[0].value), (tys[1], &args[1].value))
            }
            "abs" => {
                if !arity(self, 1, "abs(x)") {
                    return Ty::Err;
                }
                match tys[0].numeric() {
                    Some(_) if tys[0] == Ty::Chip => Ty::Int,
                    Some(_) => tys[0],
                    None if tys[0] == Ty::Err => Ty::Err,
                    None => self.err(
                        Diag::error("mcm::type", "`abs` takes a number")
                            .label(args[0].value.span, format!("this is {}", article(tys[0]))),
                    ),
                }
            }
            _ => Ty::Err,
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

    fn binary(&mut self, op: BinOp, (ta, a): (Ty, &Expr), (tb, b): (Ty, &Expr)) -> Ty {
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
}

fn is_zero(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Int(0))
}

/// Whether a value of type `got` may stand where `want` is expected.
fn fits(want: Ty, got: Ty, e: &Expr) -> bool {
    if want == got || want == Ty::Err || got == Ty::Err {
        return true;
    }
    match (want, got) {
        (Ty::Num(d), Ty::Int) => d.is_none() || is_zero(e),
        (Ty::Int, Ty::Chip) | (Ty::Chip, Ty::Int) => true,
        _ => false,
    }
}

fn article(t: Ty) -> String {
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

fn units_help(a: Ty, b: Ty) -> String {
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

fn example_unit(d: Dim) -> &'static str {
    match d {
        x if x == Dim::BYTES => "MiB",
        x if x == Dim::RATE => "GB/s",
        x if x == Dim::FLOP => "GFLOP",
        x if x == Dim::FLOP_RATE => "TFLOP/s",
        x if x == Dim::TIME => "ms",
        _ => "<unit>",
    }
}

fn snippet_int(e: &Expr) -> String {
    match e.kind {
        ExprKind::Int(i) => i.to_string(),
        _ => "1".into(),
    }
}

fn signature(callee: &str, params: &[(String, Ty, bool)]) -> String {
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
