//! What an editor asks of the front end, by byte offset into the main file
//! of a compiled program: what the name under the cursor is (hover), where
//! it is defined, what may be typed here (completion), and the outline. The
//! language server (`mcmpart lsp`) turns these into the protocol's terms.

mod complete;
pub mod find;

pub use complete::{completions, Completion, CompletionKind};

use crate::ast::*;
use crate::builtins::BUILTINS;
use crate::loader::{ItemRef, Program};
use crate::types::{Ty, CHIP_ATTRS, EDGE_FIELDS, GRAPH_NODE_ATTRS, LINK_ATTRS, NODE_FIELDS};
use crate::Compiled;
use find::{Found, Occ};
use mcm_core::quantity::{format_quantity, unit, unit_names, Dim};
use mcm_core::source::Span;

/// What a name stands for.
enum Target<'p> {
    Item(ItemRef),
    /// A parameter of a topology or constraint: (its item, its index).
    Param(ItemRef, usize),
    Local(Span),
    Group(Span),
    Builtin(&'p crate::builtins::Builtin),
    Domain(&'static str),
}

fn main_module(c: &Compiled) -> Option<&Module> {
    c.program.modules.first().map(|m| &m.ast)
}

fn params_of(item: &Item) -> &[Param] {
    match item {
        Item::Topology(t) => &t.params,
        Item::Constraint(k) => &k.params,
        _ => &[],
    }
}

const DOMAINS: &[(&str, &str)] = &[
    (
        "nodes",
        "the graph's operations (`u.flops`, `u.params`, `u.output_bytes`, `u.op`)",
    ),
    ("edges", "the graph's edges, as pairs `(u, v)` (`e.bytes`)"),
    ("chips", "the package's chips, by id (`d.memory`, `d.compute`)"),
    ("links", "the package's links (`l.bandwidth`)"),
];

fn resolve<'p>(c: &'p Compiled, f: &Found, all: &[Found]) -> Option<Target<'p>> {
    let prog = &c.program;
    let here = ItemRef {
        module: 0,
        index: f.item,
    };
    let name = match &f.occ {
        Occ::Name(n) => n,
        Occ::ItemDecl(i) => return Some(Target::Item(ItemRef { module: 0, index: *i })),
        Occ::ParamDecl(n) => {
            let i = params_of(prog.item(here)).iter().position(|p| &p.name.name == n)?;
            return Some(Target::Param(here, i));
        }
        Occ::LocalDecl(_) | Occ::GroupDecl(_) => return Some(Target::Local(f.span)),
        Occ::GroupRef(g) => {
            return all
                .iter()
                .find(|o| o.item == f.item && o.occ == Occ::GroupDecl(g.clone()))
                .map(|o| Target::Group(o.span))
        }
        Occ::ArgName { callee, name } => {
            let r = prog.lookup(0, callee)?;
            let i = params_of(prog.item(r)).iter().position(|p| &p.name.name == name)?;
            return Some(Target::Param(r, i));
        }
        _ => return None,
    };
    // The nearest declaration of a local before the cursor, in the same item.
    let local = all
        .iter()
        .filter(|o| o.item == f.item && o.occ == Occ::LocalDecl(name.clone()) && o.span.start <= f.span.start)
        .max_by_key(|o| o.span.start);
    if let Some(l) = local {
        return Some(Target::Local(l.span));
    }
    if let Some(i) = params_of(prog.item(here)).iter().position(|p| &p.name.name == name) {
        return Some(Target::Param(here, i));
    }
    if let Some(r) = prog.lookup(0, name) {
        return Some(Target::Item(r));
    }
    if let Some(b) = BUILTINS.iter().find(|b| b.name == name) {
        return Some(Target::Builtin(b));
    }
    DOMAINS.iter().find(|(d, _)| d == name).map(|(d, _)| Target::Domain(d))
}

/// Where the name at byte `at` of the main file is defined.
pub fn definition(c: &Compiled, at: usize) -> Option<Span> {
    let m = main_module(c)?;
    let all = find::occurrences(m);
    let f = find::at(m, at)?;
    Some(match resolve(c, &f, &all)? {
        Target::Item(r) => item_name_span(c.program.item(r))?,
        Target::Param(r, i) => params_of(c.program.item(r))[i].name.span,
        Target::Local(s) | Target::Group(s) => s,
        Target::Builtin(_) | Target::Domain(_) => return None,
    })
}

fn item_name_span(item: &Item) -> Option<Span> {
    crate::loader::item_name(item).map(|i| i.span)
}

/// The units a dimension is written in: `B, KB, MB, ...`.
pub fn units_of(d: Dim) -> Vec<String> {
    unit_names()
        .into_iter()
        .filter(|u| unit(u).is_some_and(|(_, ud)| ud == d))
        .collect()
}

/// A type with its units: `bytes (B, KB, ...)`.
fn ty_text(t: Ty) -> String {
    match t {
        Ty::Num(d) if !d.is_none() => {
            let units = units_of(d);
            if units.is_empty() {
                t.to_string()
            } else {
                format!("{t} (in {})", units.join(", "))
            }
        }
        _ => t.to_string(),
    }
}

fn param_text(prog: &Program, p: &Param) -> String {
    let t = crate::types::param_type(&p.ty.name).map_or(p.ty.name.clone(), ty_text);
    let default = p.default.as_ref().map_or(String::new(), |d| {
        format!(", default `{}`", prog.sources.snippet(d.span))
    });
    format!("`{}`: {t}{default}", p.name.name)
}

fn signature(prog: &Program, kw: &str, name: &str, params: &[Param], extra: &str) -> String {
    let ps: Vec<String> = params
        .iter()
        .map(|p| match &p.default {
            Some(d) => format!("{}: {} = {}", p.name.name, p.ty.name, prog.sources.snippet(d.span)),
            None => format!("{}: {}", p.name.name, p.ty.name),
        })
        .collect();
    format!("```mcm\n{kw} {name}({}){extra}\n```", ps.join(", "))
}

fn item_hover(c: &Compiled, r: ItemRef) -> String {
    let prog = &c.program;
    let (kw, name, params, doc, extra) = match prog.item(r) {
        Item::Topology(t) => ("topology", &t.name.name, &t.params, &t.doc, String::new()),
        Item::Constraint(k) => {
            let native = if k.native_key().is_some() { " :: native" } else { "" };
            ("constraint", &k.name.name, &k.params, &k.doc, native.to_string())
        }
        Item::Let(l) => {
            let t = c.types.lets.get(&r).copied().unwrap_or(Ty::Err);
            let mut s = format!("```mcm\nlet {}: {t}\n```", l.name.name);
            if let Ty::Num(d) = t {
                if !d.is_none() {
                    s.push_str(&format!("\n\n{}", ty_text(t)));
                }
            }
            if r.module == 0 {
                if let Some((_, p)) = c.packages.iter().find(|(n, _)| *n == l.name.name) {
                    s.push_str(&format!(
                        "\n\n{}: {} chips, {} links",
                        p.name,
                        p.num_chips(),
                        p.links.len()
                    ));
                }
            }
            return s;
        }
        _ => return String::new(),
    };
    let mut s = signature(prog, kw, name, params, &extra);
    if !params.is_empty() {
        s.push_str("\n\nParameters:\n");
        for p in params {
            s.push_str(&format!("- {}\n", param_text(prog, p)));
        }
    }
    if let Some(d) = doc {
        s.push_str(&format!("\n{d}"));
    }
    if r.module != 0 {
        let file = prog.sources.get(prog.modules[r.module].ast.file);
        s.push_str(&format!("\n\n*from `{}`*", file.name));
    }
    s.trim_end().to_string()
}

fn attr_hover(name: &str) -> Option<String> {
    let tables: [(&str, &[(&str, Ty)]); 5] = [
        ("chip attribute", CHIP_ATTRS),
        ("link attribute", LINK_ATTRS),
        ("node field", NODE_FIELDS),
        ("edge field", EDGE_FIELDS),
        ("graph node attribute", GRAPH_NODE_ATTRS),
    ];
    let lines: Vec<String> = tables
        .iter()
        .filter_map(|(what, t)| {
            t.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, ty)| format!("{what}: {}", ty_text(*ty)))
        })
        .collect();
    (!lines.is_empty()).then(|| format!("`{name}`\n\n{}", lines.join("\n\n")))
}

/// The hover text (markdown) of the name at byte `at`, and its span.
pub fn hover(c: &Compiled, at: usize) -> Option<(Span, String)> {
    let m = main_module(c)?;
    let all = find::occurrences(m);
    let f = find::at(m, at)?;
    let prog = &c.program;
    let text = match &f.occ {
        Occ::Field(n) | Occ::AttrKey(n) => attr_hover(n).unwrap_or_else(|| format!("`{n}`: a user-declared attribute")),
        Occ::TypeName(t) => match crate::types::param_type(t) {
            Some(ty) => format!("type {}", ty_text(ty)),
            None => format!("type `{t}`"),
        },
        Occ::Quantity(v, d) => format!(
            "{}: {} = {} {}",
            ty_text(Ty::Num(*d)),
            format_quantity(*v, *d),
            v,
            d.base_unit()
        ),
        _ => match resolve(c, &f, &all)? {
            Target::Item(r) => item_hover(c, r),
            Target::Param(r, i) => {
                let owner = crate::loader::item_name(prog.item(r)).map_or("", |n| n.name.as_str());
                format!(
                    "parameter {} of `{owner}`",
                    param_text(prog, &params_of(prog.item(r))[i])
                )
            }
            Target::Local(s) => format!(
                "`{}`: declared here, line {}",
                prog.sources.snippet(s),
                prog.sources.line_col(s).0
            ),
            Target::Group(s) => format!("chip group `{}`", prog.sources.snippet(s)),
            Target::Builtin(b) => {
                let ps: Vec<String> = b
                    .params
                    .iter()
                    .map(|(n, t)| t.map_or(n.to_string(), |t| format!("{n}: {t}")))
                    .collect();
                let ret = b.ret.map_or(String::new(), |t| format!(" -> {t}"));
                format!("```mcm\n{}({}){ret}\n```\n\nbuilt-in", b.name, ps.join(", "))
            }
            Target::Domain(d) => format!(
                "`{d}`: {}",
                DOMAINS.iter().find(|(n, _)| *n == d).map_or("", |(_, t)| t)
            ),
        },
    };
    Some((f.span, text))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Topology,
    Constraint,
    Let,
    Problem,
    Test,
    Use,
}

/// One entry of a file's outline.
#[derive(Clone, Debug)]
pub struct Symbol {
    pub name: String,
    pub kind: SymbolKind,
    pub span: Span,
    pub name_span: Span,
    pub detail: String,
}

/// The top-level items of the main file.
pub fn symbols(c: &Compiled) -> Vec<Symbol> {
    let Some(m) = main_module(c) else { return Vec::new() };
    let snippet = |s: Span| c.program.sources.snippet(s).to_string();
    m.items
        .iter()
        .map(|it| {
            let (name, kind, span, name_span, detail) = match it {
                Item::Topology(t) => (
                    t.name.name.clone(),
                    SymbolKind::Topology,
                    t.span,
                    t.name.span,
                    params_detail(&t.params),
                ),
                Item::Constraint(k) => (
                    k.name.name.clone(),
                    SymbolKind::Constraint,
                    k.span,
                    k.name.span,
                    params_detail(&k.params),
                ),
                Item::Let(l) => (l.name.name.clone(), SymbolKind::Let, l.span, l.name.span, String::new()),
                Item::Partition(p) => {
                    let name = p.alias.as_ref().map_or_else(
                        || format!("partition {} onto {}", snippet(p.graph.span), snippet(p.package.span)),
                        |a| a.name.clone(),
                    );
                    (
                        name,
                        SymbolKind::Problem,
                        p.span,
                        p.alias.as_ref().map_or(p.span, |a| a.span),
                        String::new(),
                    )
                }
                Item::Test(t) => (t.name.clone(), SymbolKind::Test, t.span, t.name_span, String::new()),
                // A `use`'s span may run over the comments after it.
                Item::Use(u) => {
                    let text = snippet(u.span);
                    let first = text.lines().next().unwrap_or("").trim().to_string();
                    (first, SymbolKind::Use, u.span, u.span, String::new())
                }
            };
            Symbol {
                name,
                kind,
                span,
                name_span,
                detail,
            }
        })
        .collect()
}

fn params_detail(ps: &[Param]) -> String {
    let v: Vec<String> = ps.iter().map(|p| format!("{}: {}", p.name.name, p.ty.name)).collect();
    format!("({})", v.join(", "))
}

#[cfg(test)]
mod tests;
