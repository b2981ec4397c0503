//! Items: lets, parameters, topologies, constraints, problems and tests.

use super::{
    article, fits, param_signature, param_type, signature, type_names, Ctx, Ty, TypeChecker, CHIP_ATTRS, LINK_ATTRS,
};
use crate::ast::*;
use crate::loader::{ItemRef, Program};
use mcm_core::diag::{misspelt, unknown_help, Diag};
use mcm_core::problem::Metric;
use mcm_core::source::Span;
use std::collections::HashMap;

impl TypeChecker<'_> {
    pub(super) fn let_type(&mut self, r: ItemRef) -> Ty {
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

    pub(super) fn topology(&mut self, t: &TopologyDecl) {
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
                TopoStmt::Include { call, .. } => {
                    let t = self.expr(call);
                    match (&call.kind, t) {
                        (ExprKind::Call(f, _), Ty::Package) => {
                            included_groups(self.prog, self.module, f, groups, 0);
                        }
                        (_, Ty::Err) => {}
                        (_, t) => {
                            self.err(
                                Diag::error("mcm::type", format!("`include` takes a topology, not a {t}"))
                                    .label(call.span, format!("this is a {t}"))
                                    .help("include a topology's chips and links: `include torus(rows = 4, ...)`"),
                            );
                        }
                    }
                }
                TopoStmt::Set { chip, attrs, .. } => {
                    self.chip_ref(chip, groups, "this `set`");
                    for a in attrs {
                        self.attribute(a, true);
                    }
                }
                TopoStmt::Link { src, dst, attrs, .. } => {
                    for r in [src, dst] {
                        self.chip_ref(r, groups, "this link");
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

    /// Checks a chip reference of a link or `set`: a group declared before,
    /// indexed when it is a group of several chips.
    fn chip_ref(&mut self, r: &ChipRef, groups: &HashMap<String, bool>, user: &str) {
        match groups.get(&r.group.name) {
            None => {
                let known: Vec<String> = groups.keys().cloned().collect();
                self.err(
                    Diag::error("mcm::name", format!("unknown chip group `{}`", r.group.name))
                        .label(r.group.span, format!("not declared before {user}"))
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

    /// Checks a chip or link attribute and records its type for constraints.
    fn attribute(&mut self, a: &Attr, chip: bool) {
        let known = if chip { CHIP_ATTRS } else { LINK_ATTRS };
        if let Some(meant) = misspelt(&a.name.name, known.iter().map(|(n, _)| *n)) {
            let what = if chip { "chip" } else { "link" };
            self.err(
                Diag::error("mcm::name", format!("unknown {what} attribute `{}`", a.name.name))
                    .label(a.name.span, format!("did you mean `{meant}`?"))
                    .help(format!(
                        "the {what} attributes the cost model reads are {}; a name further from them is a custom attribute",
                        crate::types::spoken_list(known.iter().map(|(n, _)| format!("`{n}`")))
                    )),
            );
            self.expr(&a.value);
            return;
        }
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

    pub(super) fn constraint(&mut self, k: &ConstraintDecl) {
        self.annotations(k);
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

    /// `:: native` names a solver's implementation of the rule's text, which
    /// only the standard library vouches for: elsewhere the formula is all
    /// there is, and a copy of a standard rule goes through the generic path.
    fn annotations(&mut self, k: &ConstraintDecl) {
        for a in &k.annotations {
            if !ANNOTATIONS.contains(&a.name.as_str()) {
                self.err(
                    Diag::error("mcm::name", format!("unknown annotation `{}`", a.name))
                        .label(a.span, "not an annotation")
                        .help(unknown_help(&a.name, "annotation", ANNOTATIONS.iter().copied())),
                );
            } else if !self.prog.is_std(self.module) {
                self.err(
                    Diag::error(
                        "mcm::context",
                        format!("`:: {NATIVE}` is for the standard library only"),
                    )
                    .label(a.span, "not allowed outside `stdlib/`")
                    .help(format!(
                        "remove it: `{}` is solved and checked by its formula; only the standard \
                             library's rules have native implementations in the solver",
                        k.name.name
                    )),
                );
            }
        }
    }

    pub(super) fn partition(&mut self, p: &PartitionDecl, top_level: bool) {
        let g = self.expr(&p.graph);
        self.expect_fits(Ty::Graph, g, &p.graph, "the graph to partition");
        let k = self.expr(&p.package);
        self.expect_fits(Ty::Package, k, &p.package, "the package to partition onto");
        for u in &p.requires {
            self.constraint_use(u);
        }
        if let Some(o) = &p.objective {
            let metric = Metric::from_name(&o.metric.name);
            if let Some(m) = metric.filter(|m| m.better() != o.sense) {
                let right = format!(
                    "{} {m}",
                    if m.better() == Sense::Maximize {
                        "maximize"
                    } else {
                        "minimize"
                    }
                );
                self.err(
                    Diag::error(
                        "mcm::type",
                        format!("`{}` goes the wrong way", self.prog.sources.snippet(o.span)),
                    )
                    .label(o.span, "this would look for the worst partition")
                    .help(format!("write `{right}`")),
                );
            }
            if metric.is_none() {
                self.err(
                    Diag::error("mcm::name", format!("unknown objective `{}`", o.metric.name))
                        .label(o.metric.span, "not a metric")
                        .help(unknown_help(&o.metric.name, "metric", Metric::ALL.map(Metric::name))),
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
        let params = param_signature(&k.params);
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

    pub(super) fn test(&mut self, t: &TestDecl) {
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
    pub(super) fn call_args(
        &mut self,
        callee: &str,
        what: &str,
        params: &[(String, Ty, bool)],
        args: &[Arg],
        span: Span,
    ) {
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
}

/// The chip groups that `include f(...)` in `module` declares (name,
/// whether indexed) into `groups`, those of the topologies it includes in
/// turn among them. A topology that includes itself is refused when it is
/// built; here the depth stops it.
fn included_groups(prog: &Program, module: usize, f: &Ident, groups: &mut HashMap<String, bool>, depth: usize) {
    let Some(r) = prog.lookup(module, &f.name) else { return };
    let Item::Topology(t) = prog.item(r) else { return };
    if depth <= 32 {
        body_groups(prog, r.module, &t.body, groups, depth);
    }
}

fn body_groups(prog: &Program, module: usize, body: &[TopoStmt], groups: &mut HashMap<String, bool>, depth: usize) {
    for s in body {
        match s {
            TopoStmt::Chips { name, count, .. } => {
                groups.insert(name.name.clone(), count.is_some());
            }
            TopoStmt::For { body, .. } => body_groups(prog, module, body, groups, depth),
            TopoStmt::If { then, otherwise, .. } => {
                body_groups(prog, module, then, groups, depth);
                body_groups(prog, module, otherwise, groups, depth);
            }
            TopoStmt::Include { call, .. } => {
                if let ExprKind::Call(f, _) = &call.kind {
                    included_groups(prog, module, f, groups, depth + 1);
                }
            }
            TopoStmt::Set { .. } | TopoStmt::Link { .. } | TopoStmt::Let(_) => {}
        }
    }
}
