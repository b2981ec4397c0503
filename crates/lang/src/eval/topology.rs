//! Topologies: a call instantiates the body into a package.

use super::value::G;
use super::{rt, Interpreter, Value, MAX_CHIPS, R};
use crate::ast::*;
use mcm_core::diag::Diag;
use mcm_core::package::{Chip, Link, Package, MAX_LINKS};
use mcm_core::quantity::Scalar;
use mcm_core::source::Span;
use std::collections::{BTreeMap, HashMap, HashSet};

#[derive(Default)]
/// The chips and links a topology body has declared so far.
struct Builder {
    chips: Vec<Chip>,
    links: Vec<Link>,
    groups: HashMap<String, (usize, Option<usize>)>,
    seen: HashSet<(u32, u32)>,
}

impl Interpreter<'_> {
    pub(super) fn instantiate(
        &mut self,
        t: &TopologyDecl,
        module: usize,
        args: Vec<(String, Value)>,
        call: Span,
    ) -> R<Package> {
        let mut b = Builder::default();
        self.build_into(t, module, args.clone(), call, &mut b)?;
        // An empty string is left out: the standard topologies' `kind = ""`
        // (no kind) says nothing about the package.
        let shown: Vec<String> = args
            .iter()
            .filter_map(|(n, v)| v.to_scalar().map(|s| (n, s)))
            .filter(|(_, s)| !matches!(s, Scalar::Str(x) if x.is_empty()))
            .map(|(n, s)| format!("{n} = {s}"))
            .collect();
        let name = format!("{}({})", t.name.name, shown.join(", "));
        Package::new(name, b.chips, b.links).map_err(|m| rt(call, m))
    }

    /// Runs a topology's body with its arguments, adding its chips, groups
    /// and links to `b`: a call's own package, or the one that includes it.
    fn build_into(
        &mut self,
        t: &TopologyDecl,
        module: usize,
        args: Vec<(String, Value)>,
        call: Span,
        b: &mut Builder,
    ) -> R<()> {
        if self.building.contains(&t.name.name) {
            return Err(
                Diag::error("mcm::eval", format!("topology `{}` builds itself", t.name.name))
                    .label(call, "recursive use")
                    .help("a topology cannot use itself, directly or through another one"),
            );
        }
        self.building.push(t.name.name.clone());
        let saved = (
            self.module,
            std::mem::replace(&mut self.locals, args),
            self.world.take(),
        );
        self.module = module;
        let r = self.topo_block(&t.body, b);
        (self.module, self.locals, self.world) = saved;
        self.building.pop();
        r.map_err(|d| d.label(call, format!("while building `{}` here", t.name.name)))
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

    /// The attributes of a chip group (`on_link` false) or a link.
    fn attrs(&mut self, attrs: &[Attr], on_link: bool) -> R<BTreeMap<String, Scalar>> {
        let mut m = BTreeMap::new();
        for a in attrs {
            let v = self.eval(&a.value)?;
            let s = match v {
                G::V(v) => v.to_scalar(),
                _ => None,
            }
            .ok_or_else(|| rt(a.value.span, "an attribute must be a number, quantity, bool or string"))?;
            check_rate(a, &s, on_link)?;
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
                let attrs = self.attrs(attrs, false)?;
                let start = b.chips.len();
                let n = match count {
                    Some(c) => {
                        let n = self.int(c)?;
                        if n < 0 {
                            return Err(rt(c.span, format!("{n} chips: a chip count is negative"))
                                .help("a group has zero or more chips: `chips die[n]` with `n >= 0`"));
                        }
                        if n > MAX_CHIPS - start as i64 {
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
            TopoStmt::Include { call, span } => {
                self.step(*span)?;
                let ExprKind::Call(f, args) = &call.kind else {
                    return Err(rt(call.span, "`include` takes a call of a topology"));
                };
                let callee = self.prog.lookup(self.module, &f.name);
                let Some((r, Item::Topology(t))) = callee.map(|r| (r, self.prog.item(r))) else {
                    return Err(rt(f.span, format!("`{}` is not a topology", f.name)));
                };
                let locals = self.locals.clone();
                let bound = self.bind_args(self.module, &locals, r.module, &t.params, args, call.span)?;
                self.build_into(t, r.module, bound, call.span, b)?;
            }
            TopoStmt::Set { chip, attrs, span } => {
                self.step(*span)?;
                let c = self.chip_ref(chip, b)?;
                let attrs = self.attrs(attrs, false)?;
                b.chips[c as usize].attrs.extend(attrs);
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
                let attrs = self.attrs(attrs, true)?;
                let mut add = |x: u32, y: u32| -> R<()> {
                    // Refused while building, before millions of links are allocated.
                    if b.links.len() >= MAX_LINKS {
                        return Err(rt(*span, format!("a package has at most {MAX_LINKS} links"))
                            .help("fully_connected(n = 1448) is the largest fully connected package"));
                    }
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
}

/// Refuses a negative (or NaN, or infinite) capacity or rate where the
/// package is built: the solver, the checker and the cost model read these
/// numbers in their own ways (a negative memory made the solver and the
/// checker disagree), so one of them must not be left to notice. Zero is
/// kept: zero memory is a chip that holds nothing, and zero compute or
/// bandwidth is refused by the cost model alone, so that `check`, `sample`
/// and `verify` still work on such a package.
fn check_rate(a: &Attr, s: &Scalar, on_link: bool) -> R<()> {
    let what = match (a.name.name.as_str(), on_link) {
        ("memory", false) => "a chip's memory",
        ("compute", false) => "a chip's compute rate",
        ("bandwidth", true) => "a link's bandwidth",
        ("latency", true) => "a link's latency",
        _ => return Ok(()),
    };
    let Some(v) = s.as_f64() else { return Ok(()) };
    if v >= 0.0 && v.is_finite() {
        return Ok(());
    }
    let why = if v.is_nan() {
        "is not a number"
    } else if v < 0.0 {
        "cannot be negative"
    } else {
        "must be finite"
    };
    Err(
        Diag::error("mcm::package", format!("`{} = {s}`: {what} {why}", a.name.name))
            .label(a.value.span, format!("this is {s}"))
            .help(format!("give `{}` a value of 0 or more", a.name.name)),
    )
}
