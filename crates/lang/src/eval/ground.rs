//! Grounding: a required constraint becomes one formula over `chip(u)` per
//! binding of its body's outer `forall`s.

use super::native;
use super::value::formula;
use super::{rt, Interpreter, Value, World, R};
use crate::ast::*;
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{Elem, Formula, GroundConstraint, Instance};
use mcm_core::quantity::{Dim, Scalar};
use mcm_core::source::Span;
use std::sync::Arc;

impl Interpreter<'_> {
    /// Grounds `require name(args)` over a graph and a package, with a step
    /// budget of its own.
    pub fn ground(
        &mut self,
        module: usize,
        locals: &[(String, Value)],
        u: &ConstraintUse,
        graph: &Arc<Graph>,
        package: &Arc<Package>,
    ) -> R<GroundConstraint> {
        self.own_steps(|ev| ev.ground_rule(module, locals, u, graph, package))
    }

    fn ground_rule(
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
        // A standard-library rule the front end grounds natively (its
        // instances the same as the interpreter's, without interpreting).
        let native = k.native_key().filter(|_| args.is_empty()).and_then(|key| {
            let o = native::outer(&k.body)?;
            native::ground(key, &o, self.root_unit(o.body), graph, package)
        });
        let mut result = Ok(());
        let instances = match native {
            Some(made) => made,
            None => {
                let mut instances = Vec::new();
                for e in &k.body {
                    if let Err(d) = self.instances(e, &mut Vec::new(), Formula::Const(true), &mut instances) {
                        result = Err(d.label(u.span, format!("while grounding `{}` required here", u.name.name)));
                        break;
                    }
                }
                instances.shrink_to_fit();
                instances.into()
            }
        };
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
            // From the declaration's `:: native` alone, which the checker
            // allows in the standard library only.
            native: k.native_key().map(str::to_string),
        })
    }

    /// Expands the outer `forall`s of a body into one instance per binding.
    fn instances(
        &mut self,
        e: &Expr,
        bindings: &mut Vec<(Arc<str>, Elem)>,
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
            for k in 0..combos.rows {
                // Each instance counts, as evaluation does: nested foralls
                // multiply, and 14 levels over 4 chips ran for minutes.
                self.step(e.span)?;
                let n = self.locals.len();
                let nb = bindings.len();
                self.locals.extend(combos.row(k));
                for (name, v) in combos.names.iter().zip(combos.values(k)) {
                    if let Some(el) = elem_of(v) {
                        // The name shared, not copied: one instance per edge of a large graph.
                        bindings.push((name.clone(), el));
                    }
                }
                let r = (|| {
                    let c = self.filter(filter.as_deref())?;
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
                bindings: bindings.as_slice().into(),
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
    pub(super) fn bind_args(
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
