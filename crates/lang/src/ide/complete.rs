//! What may be typed at the cursor: after a `.` an attribute, after a
//! number a unit, on a `require` line a rule, elsewhere any name in scope,
//! the standard library's rules and topologies, built-ins and keywords.

use super::{params_detail, DOMAINS};
use crate::ast::Item;
use crate::builtins::BUILTINS;
use crate::loader::STDLIB;
use crate::types::{CHIP_ATTRS, EDGE_FIELDS, GRAPH_NODE_ATTRS, LINK_ATTRS, NODE_FIELDS};
use crate::Compiled;
use mcm_core::problem::{Metric, Sense};
use mcm_core::quantity::unit_names;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    Rule,
    Topology,
    Value,
    Function,
    Attribute,
    Unit,
    Keyword,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    pub label: String,
    pub kind: CompletionKind,
    pub detail: String,
}

const KEYWORDS: &[&str] = &[
    "use",
    "let",
    "topology",
    "constraint",
    "partition",
    "test",
    "chips",
    "include",
    "set",
    "link",
    "for",
    "in",
    "if",
    "else",
    "forall",
    "exists",
    "where",
    "and",
    "or",
    "not",
    "true",
    "false",
    "onto",
    "as",
    "require",
    "maximize",
    "minimize",
    "evaluate",
    "with",
    "place",
    "expect",
    "valid",
    "violates",
    "satisfiable",
    "unsatisfiable",
    "graph",
    "sum",
    "count",
    "max",
    "min",
];

/// Completions at byte `at` of `text` (the editor's text, which may not
/// parse); `c` is the last compilation of it, if any.
pub fn completions(c: Option<&Compiled>, text: &str, at: usize) -> Vec<Completion> {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    // Past the last character that is not part of a word (which may take
    // more than one byte: `é`, a zero-width space).
    let word_start = before
        .char_indices()
        .rfind(|&(_, ch)| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '/'))
        .map_or(0, |(i, ch)| i + ch.len_utf8());
    let prefix = &before[word_start..];
    let ahead = before[..word_start].trim_end_matches([' ', '\t']);
    let line = before[..word_start].rsplit('\n').next().unwrap_or("").trim_start();
    let mut out = Vec::new();
    let mut add = |label: &str, kind, detail: String| {
        if label.starts_with(prefix) && !out.iter().any(|c: &Completion| c.label == label && c.kind == kind) {
            out.push(Completion {
                label: label.to_string(),
                kind,
                detail,
            });
        }
    };
    if ahead.ends_with('.') && !ahead.ends_with("..") {
        for (what, table) in [
            ("chip", CHIP_ATTRS),
            ("link", LINK_ATTRS),
            ("node", NODE_FIELDS),
            ("edge", EDGE_FIELDS),
        ] {
            for (n, t) in table {
                add(n, CompletionKind::Attribute, format!("{what}: {t}"));
            }
        }
        // The program's own attributes (`kind = "hbm"`), after the built-in ones.
        if let Some(c) = c {
            for (what, table) in [("chip", &c.types.chip_attrs), ("link", &c.types.link_attrs)] {
                for (n, t) in table {
                    add(n, CompletionKind::Attribute, format!("{what}: {t}"));
                }
            }
        }
        return out;
    }
    if ahead.ends_with(|ch: char| ch.is_ascii_digit()) && ahead.len() < before[..word_start].len()
        || prefix.starts_with(|ch: char| ch.is_ascii_digit())
    {
        for u in unit_names() {
            add(&u, CompletionKind::Unit, "unit".into());
        }
        return out;
    }
    // After `maximize` or `minimize`: the metrics that go that way.
    if let Some(sense) = [("maximize", Sense::Maximize), ("minimize", Sense::Minimize)]
        .into_iter()
        .find_map(|(k, s)| ahead.ends_with(k).then_some(s))
    {
        for m in Metric::ALL.into_iter().filter(|m| m.better() == sense) {
            add(m.name(), CompletionKind::Keyword, "metric".into());
        }
        return out;
    }
    let rules_only = line.starts_with("require") || line.starts_with("expect violates");
    // Names in scope, then the standard library's.
    if let Some(c) = c {
        if let Some(m) = c.program.modules.first() {
            let mut names: Vec<_> = m.scope.iter().collect();
            names.sort_by_key(|(n, _)| n.as_str());
            for (name, r) in names {
                match c.program.item(*r) {
                    Item::Constraint(k) => add(
                        name,
                        CompletionKind::Rule,
                        format!("constraint {}", params_detail(&k.params)),
                    ),
                    Item::Topology(t) if !rules_only => add(
                        name,
                        CompletionKind::Topology,
                        format!("topology {}", params_detail(&t.params)),
                    ),
                    Item::Let(_) if !rules_only => add(name, CompletionKind::Value, "let".into()),
                    _ => {}
                }
            }
        }
    }
    for (module, src) in STDLIB {
        let Ok(m) = crate::parse::parse_module(u32::MAX, src) else {
            continue;
        };
        for it in &m.items {
            match it {
                Item::Constraint(k) => add(
                    &k.name.name,
                    CompletionKind::Rule,
                    format!("std::{module}: constraint {}", params_detail(&k.params)),
                ),
                Item::Topology(t) if !rules_only => add(
                    &t.name.name,
                    CompletionKind::Topology,
                    format!("std::{module}: topology {}", params_detail(&t.params)),
                ),
                _ => {}
            }
        }
    }
    if rules_only {
        return out;
    }
    for b in BUILTINS {
        add(b.name, CompletionKind::Function, "built-in".into());
    }
    for (d, doc) in DOMAINS {
        add(d, CompletionKind::Keyword, doc.to_string());
    }
    for (what, table) in [
        ("chip", CHIP_ATTRS),
        ("link", LINK_ATTRS),
        ("graph node", GRAPH_NODE_ATTRS),
    ] {
        for (n, t) in table {
            add(n, CompletionKind::Attribute, format!("{what} attribute: {t}"));
        }
    }
    for k in KEYWORDS {
        add(k, CompletionKind::Keyword, "keyword".into());
    }
    out
}
