//! Every name in a module's syntax tree, with what kind of name it is: the
//! editor asks about the one under the cursor.

use crate::ast::*;
use mcm_core::source::Span;

#[derive(Clone, Debug, PartialEq)]
pub enum Occ {
    /// A use of a name: a variable, a call, a rule on a `require` line, an
    /// imported name, a quantifier's domain.
    Name(String),
    /// The name of a top-level declaration.
    ItemDecl(usize),
    /// A parameter of the enclosing item, declared here.
    ParamDecl(String),
    /// A loop or quantifier variable, declared here.
    LocalDecl(String),
    /// A chip group declared by `chips NAME`.
    GroupDecl(String),
    /// A chip group named by a link.
    GroupRef(String),
    /// `x.NAME`.
    Field(String),
    /// `{ NAME = ... }` of chips, links or graph nodes.
    AttrKey(String),
    /// A named argument of a call: `ring(n = 4)`.
    ArgName { callee: String, name: String },
    /// A type name: `n: int`, `let x: bytes`.
    TypeName(String),
    /// A number with a unit.
    Quantity(f64, mcm_core::quantity::Dim),
}

#[derive(Clone, Debug)]
pub struct Found {
    pub span: Span,
    pub occ: Occ,
    /// The top-level item it stands in.
    pub item: usize,
}

/// Every occurrence in the module, in no particular order.
pub fn occurrences(m: &Module) -> Vec<Found> {
    let mut f = Finder {
        out: Vec::new(),
        item: 0,
    };
    for (i, it) in m.items.iter().enumerate() {
        f.item = i;
        f.item_(it, i);
    }
    f.out
}

/// The innermost occurrence at byte `at` (its end counts: the cursor just
/// after a name is on it).
pub fn at(m: &Module, at: usize) -> Option<Found> {
    occurrences(m)
        .into_iter()
        .filter(|f| (f.span.start as usize) <= at && at <= f.span.end as usize)
        .min_by_key(|f| f.span.len())
}

struct Finder {
    out: Vec<Found>,
    item: usize,
}

impl Finder {
    fn push(&mut self, span: Span, occ: Occ) {
        self.out.push(Found {
            span,
            occ,
            item: self.item,
        });
    }

    fn item_(&mut self, it: &Item, i: usize) {
        match it {
            Item::Use(u) => match &u.target {
                UseTarget::Path { segments, items } => match items {
                    UseItems::Some(names) => {
                        for n in names {
                            self.push(n.span, Occ::Name(n.name.clone()));
                        }
                    }
                    UseItems::Bare => {
                        if let Some(n) = segments.last() {
                            self.push(n.span, Occ::Name(n.name.clone()));
                        }
                    }
                    UseItems::All => {}
                },
                UseTarget::File { .. } => {}
            },
            Item::Let(l) => {
                self.push(l.name.span, Occ::ItemDecl(i));
                self.let_(l, false);
            }
            Item::Topology(t) => {
                self.push(t.name.span, Occ::ItemDecl(i));
                self.params(&t.params);
                self.topo(&t.body);
            }
            Item::Constraint(c) => {
                self.push(c.name.span, Occ::ItemDecl(i));
                self.params(&c.params);
                for e in &c.body {
                    self.expr(e);
                }
            }
            Item::Partition(p) => self.partition(p),
            Item::Test(t) => {
                for s in &t.body {
                    match s {
                        TestStmt::Let(l) => self.let_(l, true),
                        TestStmt::Place(p) => {
                            self.expr(&p.graph);
                            self.expr(&p.package);
                            for e in &p.entries {
                                self.expr(&e.chip);
                            }
                        }
                        TestStmt::Partition(p) => self.partition(p),
                        TestStmt::Require(us, _) => self.uses(us),
                        TestStmt::Expect(Expectation::Violates(us), _) => self.uses(us),
                        TestStmt::Expect(..) => {}
                    }
                }
            }
        }
    }

    fn let_(&mut self, l: &LetDecl, local: bool) {
        if local {
            self.push(l.name.span, Occ::LocalDecl(l.name.name.clone()));
        }
        if let Some(t) = &l.ty {
            self.push(t.span, Occ::TypeName(t.name.clone()));
        }
        self.expr(&l.value);
    }

    fn params(&mut self, ps: &[Param]) {
        for p in ps {
            self.push(p.name.span, Occ::ParamDecl(p.name.name.clone()));
            self.push(p.ty.span, Occ::TypeName(p.ty.name.clone()));
            if let Some(d) = &p.default {
                self.expr(d);
            }
        }
    }

    fn partition(&mut self, p: &PartitionDecl) {
        self.expr(&p.graph);
        self.expr(&p.package);
        self.uses(&p.requires);
    }

    fn uses(&mut self, us: &[ConstraintUse]) {
        for u in us {
            self.push(u.name.span, Occ::Name(u.name.name.clone()));
            for a in u.args.iter().flatten() {
                self.arg(&u.name.name, a);
            }
        }
    }

    fn arg(&mut self, callee: &str, a: &Arg) {
        if let Some(n) = &a.name {
            self.push(
                n.span,
                Occ::ArgName {
                    callee: callee.to_string(),
                    name: n.name.clone(),
                },
            );
        }
        self.expr(&a.value);
    }

    fn attrs(&mut self, attrs: &[Attr]) {
        for a in attrs {
            self.push(a.name.span, Occ::AttrKey(a.name.name.clone()));
            self.expr(&a.value);
        }
    }

    fn chip_ref(&mut self, r: &ChipRef) {
        self.push(r.group.span, Occ::GroupRef(r.group.name.clone()));
        if let Some(i) = &r.index {
            self.expr(i);
        }
    }

    fn topo(&mut self, body: &[TopoStmt]) {
        for s in body {
            match s {
                TopoStmt::Chips { name, count, attrs, .. } => {
                    self.push(name.span, Occ::GroupDecl(name.name.clone()));
                    if let Some(c) = count {
                        self.expr(c);
                    }
                    self.attrs(attrs);
                }
                TopoStmt::Include { call, .. } => self.expr(call),
                TopoStmt::Set { chip, attrs, .. } => {
                    self.chip_ref(chip);
                    self.attrs(attrs);
                }
                TopoStmt::Link { src, dst, attrs, .. } => {
                    for r in [src, dst] {
                        self.chip_ref(r);
                    }
                    self.attrs(attrs);
                }
                TopoStmt::For { var, from, to, body } => {
                    self.push(var.span, Occ::LocalDecl(var.name.clone()));
                    self.expr(from);
                    self.expr(to);
                    self.topo(body);
                }
                TopoStmt::If { cond, then, otherwise } => {
                    self.expr(cond);
                    self.topo(then);
                    self.topo(otherwise);
                }
                TopoStmt::Let(l) => self.let_(l, true),
            }
        }
    }

    fn binders(&mut self, bs: &[Binder]) {
        for b in bs {
            for n in b.pattern.names() {
                self.push(n.span, Occ::LocalDecl(n.name.clone()));
            }
            match &b.domain {
                Domain::Range(a, z) => {
                    self.expr(a);
                    self.expr(z);
                }
                Domain::Named(n) => self.push(n.span, Occ::Name(n.name.clone())),
            }
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Var(n) => self.push(e.span, Occ::Name(n.clone())),
            ExprKind::Quantity(v, d) => self.push(e.span, Occ::Quantity(*v, *d)),
            ExprKind::Field(x, f) => {
                self.expr(x);
                self.push(f.span, Occ::Field(f.name.clone()));
            }
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Unary(_, a) => self.expr(a),
            ExprKind::Call(name, args) => {
                self.push(name.span, Occ::Name(name.name.clone()));
                for a in args {
                    self.arg(&name.name, a);
                }
            }
            ExprKind::Quant {
                binders, filter, body, ..
            } => {
                self.binders(binders);
                if let Some(f) = filter {
                    self.expr(f);
                }
                self.expr(body);
            }
            ExprKind::Agg {
                binders, filter, body, ..
            } => {
                self.binders(binders);
                if let Some(f) = filter {
                    self.expr(f);
                }
                if let Some(b) = body {
                    self.expr(b);
                }
            }
            ExprKind::Graph(g) => {
                for n in g.chains.iter().flatten() {
                    self.attrs(&n.attrs);
                }
            }
            ExprKind::Int(_) | ExprKind::Real(_) | ExprKind::Bool(_) | ExprKind::Str(_) => {}
        }
    }
}
