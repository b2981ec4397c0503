//! Evaluation and grounding. One evaluator serves both: over static values
//! it computes (lets, topologies, graph literals, arguments); where a value
//! depends on `chip(u)` it builds the formula instead, so a constraint body
//! grounded over a graph and a package folds to formulas over `chip(u)` only.

use super::ast::*;
use super::loader::{ItemRef, Program};
use mcm_core::diag::{unknown_help, Diag};
use mcm_core::graph::{load_graph_file, Graph, Node};
use mcm_core::package::{Chip, Link, Package};
use mcm_core::problem::{CmpOp, Elem, Formula, GroundConstraint, Instance, Term};
use mcm_core::quantity::{Dim, Scalar};
use mcm_core::source::Span;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

/// The most chips a package may have: far beyond any package of this field,
/// and few enough that the tables of C² entries (fewest hops, the cost
/// model's routes) stay within memory.
const MAX_CHIPS: i64 = 4096;
const MAX_STEPS: u64 = 50_000_000;

/// The most bindings one `forall`, `exists` or aggregate enumerates (and
/// the longest range): each is held at once, a few hundred bytes, so this
/// stays near a gigabyte; a rule over every pair of nodes of a 2,000-node
/// graph fits.
const MAX_BINDINGS: usize = 4_000_000;

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
    fn num(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Num(v, _) => Some(*v),
            Value::Chip(c) => Some(*c as f64),
            _ => None,
        }
    }

    fn is_int(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Chip(_))
    }

    /// An integer's exact value (`num` rounds beyond 2^53).
    fn int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Chip(c) => Some(*c as i64),
            _ => None,
        }
    }

    fn dim(&self) -> Dim {
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

    fn from_scalar(s: &Scalar) -> Value {
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
enum G {
    V(Value),
    /// A placement-dependent number; `true` when it is an integer.
    T(Term, bool),
    F(Formula),
}

type R<T> = Result<T, Diag>;

/// The code of an error that stands for one already reported (a failed
/// `let` used again); the front end drops these.
pub const REPORTED: &str = "mcm::reported";

fn rt(span: Span, msg: impl Into<String>) -> Diag {
    Diag::error("mcm::eval", msg).label(span, "here")
}

/// The graph and package a constraint is grounded over.
#[derive(Clone)]
struct World {
    graph: Arc<Graph>,
    package: Arc<Package>,
}

pub struct Evaluator<'p> {
    prog: &'p Program,
    types: &'p super::types::TypeInfo,
    module: usize,
    locals: Vec<(String, Value)>,
    /// Evaluated lets; `None` for one whose error was already reported.
    lets: HashMap<ItemRef, Option<Value>>,
    graphs: HashMap<PathBuf, Arc<Graph>>,
    world: Option<World>,
    steps: u64,
    /// Topologies being instantiated, to refuse one that builds itself.
    building: Vec<String>,
}

impl<'p> Evaluator<'p> {
    pub fn new(prog: &'p Program, types: &'p super::types::TypeInfo) -> Evaluator<'p> {
        Evaluator {
            prog,
            types,
            module: 0,
            locals: Vec::new(),
            lets: HashMap::new(),
            graphs: HashMap::new(),
            world: None,
            steps: 0,
            building: Vec::new(),
        }
    }

    /// The graph files loaded so far.
    pub fn graph_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self.graphs.keys().cloned().collect();
        files.sort();
        files
    }

    /// Evaluates a static expression in a module, with extra local bindings.
    pub fn value(&mut self, module: usize, locals: &[(String, Value)], e: &Expr) -> R<Value> {
        let saved = (
            self.module,
            std::mem::replace(&mut self.locals, locals.to_vec()),
            self.world.take(),
        );
        self.module = module;
        let r = self.eval(e).and_then(|g| match g {
            G::V(v) => Ok(v),
            _ => Err(rt(e.span, "this value depends on a placement")),
        });
        (self.module, self.locals, self.world) = saved;
        r
    }

    /// The value of a top-level `let`, evaluated once.
    pub fn let_value(&mut self, r: ItemRef) -> R<Value> {
        match self.lets.get(&r) {
            Some(Some(v)) => return Ok(v.clone()),
            Some(None) => return Err(Diag::error(REPORTED, "")),
            None => {}
        }
        let Item::Let(l) = self.prog.item(r) else {
            return Err(Diag::error("mcm::eval", "not a value"));
        };
        match self.value(r.module, &[], &l.value) {
            Ok(v) => {
                let v = name_graph(v, &l.value, &l.name.name);
                self.lets.insert(r, Some(v.clone()));
                Ok(v)
            }
            Err(d) => {
                self.lets.insert(r, None);
                Err(d)
            }
        }
    }

    // ---------------------------------------------------------- grounding

    /// Grounds `require name(args)` over a graph and a package.
    pub fn ground(
        &mut self,
        module: usize,
        locals: &[(String, Value)],
        u: &ConstraintUse,
        graph: &Arc<Graph>,
        package: &Arc<Package>,
    ) -> R<GroundConstraint> {
        let r = self
            .prog
            .lookup(module, &u.name.name)
            .ok_or_else(|| rt(u.name.span, format!("unknown constraint `{}`", u.name.name)))?;
        let Item::Constraint(k) = self.prog.item(r) else {
            return Err(rt(u.name.span, format!("`{}` is not a constraint", u.name.name)));
        };
        let args = self.bind_args(
            module,
            locals,
            r.module,
            &k.params,
            u.args.as_deref().unwrap_or(&[]),
            u.span,
        )?;
        let saved = (
            self.module,
            std::mem::replace(&mut self.locals, args.clone()),
            self.world.take(),
        );
        self.module = r.module;
        self.world = Some(World {
            graph: graph.clone(),
            package: package.clone(),
        });
        let mut instances = Vec::new();
        let mut result = Ok(());
        for e in &k.body {
            if let Err(d) = self.instances(e, &mut Vec::new(), Formula::Const(true), &mut instances) {
                result = Err(d.label(u.span, format!("while grounding `{}` required here", u.name.name)));
                break;
            }
        }
        (self.module, self.locals, self.world) = saved;
        result?;
        Ok(GroundConstraint {
            name: k.name.name.clone(),
            args: args
                .into_iter()
                .map(|(n, v)| (n, v.to_scalar().unwrap_or(Scalar::Int(0))))
                .collect(),
            decl_span: k.span,
            use_span: u.span,
            instances,
            // Only the stdlib's own declarations: a user's copy of the same
            // text goes through the generic path.
            native: self
                .prog
                .is_std_module(r.module, "placement")
                .then(|| k.name.name.clone()),
        })
    }

    /// Expands the outer `forall`s of a body into one instance per binding.
    fn instances(
        &mut self,
        e: &Expr,
        bindings: &mut Vec<(String, Elem)>,
        cond: Formula,
        out: &mut Vec<Instance>,
    ) -> R<()> {
        if let ExprKind::Quant {
            q: Quantifier::Forall,
            binders,
            filter,
            body,
        } = &e.kind
        {
            let combos = self.bindings(binders)?;
            for combo in combos {
                // Each instance counts, as evaluation does: nested foralls
                // multiply, and 14 levels over 4 chips ran for minutes.
                self.step(e.span)?;
                let n = self.locals.len();
                let nb = bindings.len();
                for (name, v) in &combo {
                    self.locals.push((name.clone(), v.clone()));
                    if let Some(el) = elem_of(v) {
                        bindings.push((name.clone(), el));
                    }
                }
                let r = (|| {
                    let c = match filter {
                        Some(f) => {
                            let g = self.eval(f)?;
                            formula(g, f.span)?
                        }
                        None => Formula::Const(true),
                    };
                    if c != Formula::Const(false) {
                        self.instances(body, bindings, Formula::and(vec![cond.clone(), c]), out)?;
                    }
                    Ok(())
                })();
                self.locals.truncate(n);
                bindings.truncate(nb);
                r?;
            }
            return Ok(());
        }
        let g = self.eval(e)?;
        let f = Formula::implies(cond, formula(g, e.span)?);
        if f != Formula::Const(true) {
            out.push(Instance {
                bindings: bindings.clone(),
                formula: f,
                unit: self.root_unit(e),
            });
        }
        Ok(())
    }

    /// The dimension of the comparison a body finally asserts, if any.
    fn root_unit(&self, e: &Expr) -> Option<Dim> {
        match &e.kind {
            ExprKind::Binary(BinOp::Implies, _, rhs) => self.root_unit(rhs),
            ExprKind::Binary(op, a, b) if op.is_comparison() => self
                .types
                .units
                .get(&a.span)
                .or_else(|| self.types.units.get(&b.span))
                .copied(),
            _ => None,
        }
    }

    /// Binds a call's arguments to parameters, defaults included.
    fn bind_args(
        &mut self,
        arg_module: usize,
        locals: &[(String, Value)],
        decl_module: usize,
        params: &[Param],
        args: &[Arg],
        span: Span,
    ) -> R<Vec<(String, Value)>> {
        let mut slots: Vec<Option<Value>> = vec![None; params.len()];
        for (i, a) in args.iter().enumerate() {
            let slot = match &a.name {
                Some(n) => params
                    .iter()
                    .position(|p| p.name.name == n.name)
                    .ok_or_else(|| rt(n.span, format!("no parameter `{}`", n.name)))?,
                None => i,
            };
            if slot >= params.len() {
                return Err(rt(a.value.span, "too many arguments"));
            }
            let v = self.value(arg_module, locals, &a.value)?;
            slots[slot] = Some(coerce(v, &params[slot].ty.name));
        }
        let mut out = Vec::with_capacity(params.len());
        for (p, s) in params.iter().zip(slots) {
            let v = match (s, &p.default) {
                (Some(v), _) => v,
                (None, Some(d)) => {
                    let v = self.value(decl_module, &out, d)?;
                    coerce(v, &p.ty.name)
                }
                (None, None) => return Err(rt(span, format!("missing argument `{}`", p.name.name))),
            };
            out.push((p.name.name.clone(), v));
        }
        Ok(out)
    }

    // ---------------------------------------------------------- expressions

    fn world(&self, span: Span) -> R<&World> {
        self.world
            .as_ref()
            .ok_or_else(|| rt(span, "this needs a graph and a package: use it inside a constraint"))
    }

    fn step(&mut self, span: Span) -> R<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(rt(span, "evaluation took too many steps")
                .help("a topology or formula this large is probably a mistake in its loops"));
        }
        Ok(())
    }

    fn eval(&mut self, e: &Expr) -> R<G> {
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
                let gb = self.eval(b)?;
                binary(*op, ga, gb, e.span)?
            }
            ExprKind::Quant {
                q,
                binders,
                filter,
                body,
            } => {
                let combos = self.bindings(binders)?;
                let mut parts = Vec::new();
                for combo in combos {
                    self.step(e.span)?;
                    let n = self.locals.len();
                    self.locals.extend(combo);
                    let r = (|| {
                        let c = match filter {
                            Some(f) => {
                                let g = self.eval(f)?;
                                formula(g, f.span)?
                            }
                            None => Formula::Const(true),
                        };
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
                from_formula(f)
            }
            ExprKind::Agg {
                op,
                binders,
                filter,
                body,
            } => self.aggregate(*op, binders, filter.as_deref(), body.as_deref(), e.span)?,
            ExprKind::Graph(g) => G::V(Value::Graph(Arc::new(self.graph_literal(g, e.span)?))),
        })
    }

    fn aggregate(
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
                let c = match filter {
                    Some(f) => {
                        let g = self.eval(f)?;
                        formula(g, f.span)?
                    }
                    None => Formula::Const(true),
                };
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
    fn bindings(&mut self, binders: &[Binder]) -> R<Vec<Vec<(String, Value)>>> {
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

    fn int(&mut self, e: &Expr) -> R<i64> {
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
    fn chip_term(&self, g: G, span: Span) -> R<(Term, Option<u32>)> {
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
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            vals.push((self.eval(&a.value)?, a.value.span));
        }
        let arg = |i: usize| vals[i].clone();
        Ok(match name {
            "chip" => match arg(0).0 {
                G::V(Value::Node(d)) => G::T(Term::Chip(d), true),
                _ => return Err(rt(vals[0].1, "`chip` takes a node")),
            },
            "flows" | "longest_path" | "link" | "hops" => {
                let (ta, ca) = self.chip_term(arg(0).0, arg(0).1)?;
                let (tb, cb) = self.chip_term(arg(1).0, arg(1).1)?;
                let w = self.world(span)?;
                match (name, ca, cb) {
                    ("flows", ..) => G::F(Formula::Flows(ta, tb)),
                    ("longest_path", Some(a), Some(b)) if a == b => G::V(Value::Int(0)),
                    ("longest_path", ..) => G::T(Term::LongestPath(Box::new(ta), Box::new(tb)), true),
                    ("link", Some(a), Some(b)) => G::V(Value::Bool(w.package.link(a, b).is_some())),
                    ("link", ..) => G::F(Formula::Link(ta, tb)),
                    (_, Some(a), Some(b)) => G::V(Value::Int(
                        w.package.hops(a, b).map_or(w.package.num_chips() as i64, |h| h as i64),
                    )),
                    _ => G::T(Term::Hops(Box::new(ta), Box::new(tb)), true),
                }
            }
            "graph" => match arg(0).0 {
                G::V(Value::Str(p)) => G::V(Value::Graph(self.load_graph(&p, span)?)),
                _ => return Err(rt(vals[0].1, "`graph` takes a path")),
            },
            "max" | "min" => {
                let is_max = name == "max";
                match (arg(0).0, arg(1).0) {
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
                }
            }
            "abs" => match arg(0).0 {
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
            },
            _ => return Err(rt(f.span, format!("unknown function `{name}`"))),
        })
    }

    fn load_graph(&mut self, path: &str, span: Span) -> R<Arc<Graph>> {
        let base = self.prog.sources.base_dir(span.file);
        let mut full = base.join(path);
        if !full.exists() {
            let gz = PathBuf::from(format!("{}.gz", full.display()));
            if gz.exists() {
                full = gz;
            }
        }
        if let Some(g) = self.graphs.get(&full) {
            return Ok(g.clone());
        }
        let g = load_graph_file(&full).map_err(|e| {
            Diag::error("mcm::graph", format!("cannot load graph: {}", e.message))
                .label(span, format!("loading {}", full.display()))
                .help_opt(e.help)
        })?;
        let g = Arc::new(g);
        self.graphs.insert(full, g.clone());
        Ok(g)
    }

    // ---------------------------------------------------------- topologies

    fn instantiate(&mut self, t: &TopologyDecl, module: usize, args: Vec<(String, Value)>, call: Span) -> R<Package> {
        if self.building.contains(&t.name.name) {
            return Err(
                Diag::error("mcm::eval", format!("topology `{}` builds itself", t.name.name))
                    .label(call, "recursive use")
                    .help("a topology cannot use itself, directly or through another one"),
            );
        }
        self.building.push(t.name.name.clone());
        let r = self.instantiate_body(t, module, args, call);
        self.building.pop();
        r
    }

    fn instantiate_body(
        &mut self,
        t: &TopologyDecl,
        module: usize,
        args: Vec<(String, Value)>,
        call: Span,
    ) -> R<Package> {
        let saved = (
            self.module,
            std::mem::replace(&mut self.locals, args.clone()),
            self.world.take(),
        );
        self.module = module;
        let mut b = Builder::default();
        let r = self.topo_block(&t.body, &mut b);
        (self.module, self.locals, self.world) = saved;
        r.map_err(|d| d.label(call, format!("while building `{}` here", t.name.name)))?;
        let shown: Vec<String> = args
            .iter()
            .filter_map(|(n, v)| v.to_scalar().map(|s| format!("{n} = {s}")))
            .collect();
        let name = format!("{}({})", t.name.name, shown.join(", "));
        Package::new(name, b.chips, b.links).map_err(|m| rt(call, m))
    }

    fn topo_block(&mut self, body: &[TopoStmt], b: &mut Builder) -> R<()> {
        let n = self.locals.len();
        let r = (|| {
            for s in body {
                self.topo_stmt(s, b)?;
            }
            Ok(())
        })();
        self.locals.truncate(n);
        r
    }

    fn attrs(&mut self, attrs: &[Attr]) -> R<BTreeMap<String, Scalar>> {
        let mut m = BTreeMap::new();
        for a in attrs {
            let v = self.eval(&a.value)?;
            let s = match v {
                G::V(v) => v.to_scalar(),
                _ => None,
            }
            .ok_or_else(|| rt(a.value.span, "an attribute must be a number, quantity, bool or string"))?;
            if m.insert(a.name.name.clone(), s).is_some() {
                return Err(rt(a.name.span, format!("attribute `{}` is set twice", a.name.name)));
            }
        }
        Ok(m)
    }

    fn topo_stmt(&mut self, s: &TopoStmt, b: &mut Builder) -> R<()> {
        match s {
            TopoStmt::Chips {
                name,
                count,
                attrs,
                span,
            } => {
                self.step(*span)?;
                if b.groups.contains_key(&name.name) {
                    return Err(rt(name.span, format!("chip group `{}` is declared twice", name.name)));
                }
                let attrs = self.attrs(attrs)?;
                let start = b.chips.len();
                let n = match count {
                    Some(c) => {
                        let n = self.int(c)?;
                        if n < 0 || n > MAX_CHIPS - start as i64 {
                            let before = match start {
                                0 => String::new(),
                                k => format!(", and {k} are declared before"),
                            };
                            return Err(rt(
                                c.span,
                                format!("{n} chips: a package has at most {MAX_CHIPS} chips{before}"),
                            ));
                        }
                        for i in 0..n {
                            b.chips.push(Chip {
                                name: format!("{}[{i}]", name.name),
                                attrs: attrs.clone(),
                            });
                        }
                        Some(n as usize)
                    }
                    None => {
                        if start as i64 >= MAX_CHIPS {
                            return Err(rt(name.span, format!("a package has at most {MAX_CHIPS} chips")));
                        }
                        b.chips.push(Chip {
                            name: name.name.clone(),
                            attrs,
                        });
                        None
                    }
                };
                b.groups.insert(name.name.clone(), (start, n));
            }
            TopoStmt::Link {
                src,
                dst,
                both_ways,
                attrs,
                span,
            } => {
                self.step(*span)?;
                let a = self.chip_ref(src, b)?;
                let c = self.chip_ref(dst, b)?;
                if a == c {
                    return Err(rt(
                        *span,
                        format!("a link from `{}` to itself", b.chips[a as usize].name),
                    ));
                }
                let attrs = self.attrs(attrs)?;
                let mut add = |x: u32, y: u32| -> R<()> {
                    if !b.seen.insert((x, y)) {
                        return Err(rt(
                            *span,
                            format!(
                                "the link `{}` -> `{}` is declared twice",
                                b.chips[x as usize].name, b.chips[y as usize].name
                            ),
                        ));
                    }
                    b.links.push(Link {
                        src: x,
                        dst: y,
                        attrs: attrs.clone(),
                    });
                    Ok(())
                };
                add(a, c)?;
                if *both_ways {
                    add(c, a)?;
                }
            }
            TopoStmt::For { var, from, to, body } => {
                let lo = self.int(from)?;
                let hi = self.int(to)?;
                for i in lo..hi {
                    self.step(var.span)?;
                    self.locals.push((var.name.clone(), Value::Int(i)));
                    let r = self.topo_block(body, b);
                    self.locals.pop();
                    r?;
                }
            }
            TopoStmt::If { cond, then, otherwise } => match self.eval(cond)? {
                G::V(Value::Bool(true)) => self.topo_block(then, b)?,
                G::V(Value::Bool(false)) => self.topo_block(otherwise, b)?,
                _ => return Err(rt(cond.span, "expected a condition")),
            },
            TopoStmt::Let(l) => {
                let v = self.eval(&l.value)?;
                match v {
                    G::V(v) => self.locals.push((l.name.name.clone(), v)),
                    _ => return Err(rt(l.value.span, "expected a value")),
                }
            }
        }
        Ok(())
    }

    fn chip_ref(&mut self, r: &ChipRef, b: &Builder) -> R<u32> {
        let (start, n) = *b
            .groups
            .get(&r.group.name)
            .ok_or_else(|| rt(r.group.span, format!("unknown chip group `{}`", r.group.name)))?;
        match (n, &r.index) {
            (Some(n), Some(i)) => {
                let k = self.int(i)?;
                if k < 0 || k as usize >= n {
                    return Err(Diag::error(
                        "mcm::eval",
                        format!(
                            "`{}[{k}]` is out of range: `{}` has {n} chips",
                            r.group.name, r.group.name
                        ),
                    )
                    .label(r.span, format!("index {k}"))
                    .help(format!("indices of `{}` are 0..{n}", r.group.name)));
                }
                Ok((start + k as usize) as u32)
            }
            (None, None) => Ok(start as u32),
            _ => Err(rt(r.span, "index a group of chips, and only a group")),
        }
    }

    // ---------------------------------------------------------- graphs

    fn graph_literal(&mut self, g: &GraphLit, span: Span) -> R<Graph> {
        let mut nodes: Vec<Node> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut set: Vec<BTreeMap<String, Span>> = Vec::new();
        let mut edges = Vec::new();
        for chain in &g.chains {
            let mut prev: Option<usize> = None;
            for n in chain {
                let i = *index.entry(n.name.clone()).or_insert_with(|| {
                    nodes.push(Node::new(n.name.clone()));
                    set.push(BTreeMap::new());
                    nodes.len() - 1
                });
                for a in &n.attrs {
                    if let Some(first) = set[i].insert(a.name.name.clone(), a.name.span) {
                        return Err(Diag::error(
                            "mcm::eval",
                            format!("`{}` of node `{}` is set twice", a.name.name, n.name),
                        )
                        .label(a.name.span, "again here")
                        .label(first, "first here"));
                    }
                    let v = match self.eval(&a.value)? {
                        G::V(v) => v,
                        _ => return Err(rt(a.value.span, "expected a value")),
                    };
                    let node = &mut nodes[i];
                    let count = |v: &Value| -> R<u64> {
                        match v.num() {
                            Some(x) if (0.0..1.8e19).contains(&x) => Ok(x.round() as u64),
                            _ => Err(rt(
                                a.value.span,
                                format!("`{}` must be a non-negative number", a.name.name),
                            )),
                        }
                    };
                    match (a.name.name.as_str(), &v) {
                        ("op", Value::Str(s)) => node.op = s.clone(),
                        ("replicable", Value::Bool(b)) => node.replicable = *b,
                        ("flops", _) => node.flops = count(&v)?,
                        ("params", _) => node.params = count(&v)?,
                        ("output_bytes", _) => node.output_bytes = count(&v)?,
                        (other, _) => return Err(rt(a.name.span, format!("unknown node attribute `{other}`"))),
                    }
                }
                if let Some(p) = prev {
                    edges.push((p, i, None));
                }
                prev = Some(i);
            }
        }
        Graph::new("graph", nodes, edges).map_err(|e| {
            Diag::error("mcm::graph", format!("invalid graph: {}", e.message))
                .label(span, "this graph")
                .help_opt(e.help)
        })
    }
}

#[derive(Default)]
struct Builder {
    chips: Vec<Chip>,
    links: Vec<Link>,
    groups: HashMap<String, (usize, Option<usize>)>,
    seen: std::collections::HashSet<(u32, u32)>,
}

/// A `let` of a graph literal names the graph after the variable.
pub fn name_graph(v: Value, e: &Expr, name: &str) -> Value {
    match (v, &e.kind) {
        (Value::Graph(g), ExprKind::Graph(_)) => {
            let mut g = (*g).clone();
            g.name = name.to_string();
            Value::Graph(Arc::new(g))
        }
        (v, _) => v,
    }
}

/// Converts an argument to its parameter's declared type (an int where a real is expected).
fn coerce(v: Value, ty: &str) -> Value {
    match (v, ty) {
        (Value::Int(i), "real") => Value::Num(i as f64, Dim::NONE),
        (Value::Int(0), t) if mcm_core::quantity::TYPE_NAMES.iter().any(|(n, _)| *n == t) => {
            let d = mcm_core::quantity::TYPE_NAMES
                .iter()
                .find(|(n, _)| *n == t)
                .map(|(_, d)| *d);
            Value::Num(0.0, d.unwrap_or(Dim::NONE))
        }
        (v, _) => v,
    }
}

fn elem_of(v: &Value) -> Option<Elem> {
    Some(match v {
        Value::Node(d) => Elem::Node(*d),
        Value::Edge(e) => Elem::Edge(*e),
        Value::Chip(c) => Elem::Chip(*c),
        Value::Link(l) => Elem::Link(*l),
        Value::Int(i) => Elem::Int(*i),
        _ => return None,
    })
}

fn is_int(g: &G) -> bool {
    match g {
        G::V(v) => v.is_int(),
        G::T(_, i) => *i,
        G::F(_) => false,
    }
}

fn term(g: G, span: Span) -> R<Term> {
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

fn formula(g: G, span: Span) -> R<Formula> {
    match g {
        G::V(Value::Bool(b)) => Ok(Formula::Const(b)),
        G::F(f) => Ok(f),
        // A boolean chip attribute read through a placement-dependent chip.
        G::T(t, _) => Ok(Formula::Cmp(CmpOp::Ne, t, Term::Const(0.0))),
        _ => Err(rt(span, "expected a truth value")),
    }
}

fn from_formula(f: Formula) -> G {
    match f {
        Formula::Const(b) => G::V(Value::Bool(b)),
        f => G::F(f),
    }
}

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

fn binary(op: BinOp, a: G, b: G, span: Span) -> R<G> {
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
