//! Diagnostics: what went wrong, where, and what to do about it.
//!
//! The front end collects `Diag`s; `render` turns them into miette reports
//! (text for people, JSON for tools). Labels in several files are split into
//! related reports, one per file, because a miette report has one source.

use crate::source::{SourceMap, Span};
use miette::{Diagnostic, LabeledSpan, NamedSource, Severity};
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Diag {
    pub code: &'static str,
    pub message: String,
    pub labels: Vec<Label>,
    pub help: Option<String>,
    pub warning: bool,
}

impl Diag {
    pub fn error(code: &'static str, message: impl Into<String>) -> Diag {
        Diag {
            code,
            message: message.into(),
            labels: Vec::new(),
            help: None,
            warning: false,
        }
    }

    pub fn label(mut self, span: Span, text: impl Into<String>) -> Diag {
        self.labels.push(Label {
            span,
            text: text.into(),
        });
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Diag {
        self.help = Some(help.into());
        self
    }

    pub fn help_opt(mut self, help: Option<String>) -> Diag {
        if help.is_some() {
            self.help = help;
        }
        self
    }

    pub fn primary_span(&self) -> Option<Span> {
        self.labels.first().map(|l| l.span)
    }
}

/// A list of diagnostics that is an error when not empty.
pub type Diags = Vec<Diag>;

/// `Did you mean ...?` for a misspelt name, from the names that are known.
pub fn suggest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<String> {
    // Edit distances take time quadratic in the lengths: a name of a
    // million characters hung the error report. Past this, no suggestion.
    const LONGEST: usize = 256;
    if name.len() > LONGEST {
        return None;
    }
    let mut best: Option<(f64, &str)> = None;
    for k in known.into_iter().filter(|k| k.len() <= LONGEST) {
        let score = strsim::jaro_winkler(name, k);
        let close = strsim::damerau_levenshtein(name, k) <= (name.len().max(2) / 2).max(1);
        if (score > 0.8 || close) && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, k));
        }
    }
    best.map(|(_, k)| k.to_string())
}

/// The known name that `name` is a slip of the keyboard away from (one
/// edit for short names, two for longer ones; a swap of neighbours is one),
/// when `name` is not itself known: `bandwith`, `latncy`, `Memory`. Unlike
/// [`suggest`], which finds the nearest of names that must be one of them,
/// this tells a typo from a name of the user's own (`mem`, `power`).
pub fn misspelt<'a>(name: &str, known: impl IntoIterator<Item = &'a str> + Clone) -> Option<&'a str> {
    if known.clone().into_iter().any(|k| k == name) {
        return None;
    }
    let most = if name.chars().count() <= 4 { 1 } else { 2 };
    // Lengths further apart than the edits allowed cannot match: a long
    // name costs nothing (the distance takes time quadratic in the lengths).
    known
        .into_iter()
        .filter(|k| name.len().abs_diff(k.len()) <= most)
        .map(|k| (strsim::damerau_levenshtein(name, k), k))
        .filter(|(d, _)| *d <= most)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// The help line for an unknown name: the nearest known one, or the list.
pub fn unknown_help<'a>(name: &str, what: &str, known: impl IntoIterator<Item = &'a str> + Clone) -> String {
    match suggest(name, known.clone()) {
        Some(s) => format!("did you mean `{s}`?"),
        None => {
            let mut all: Vec<&str> = known.into_iter().collect();
            all.sort_unstable();
            all.dedup();
            if all.is_empty() {
                format!("no {what} is defined here")
            } else if all.len() <= 12 {
                format!("known {what}s: {}", all.join(", "))
            } else {
                format!("define or import the {what} first")
            }
        }
    }
}

struct Report {
    code: &'static str,
    message: String,
    help: Option<String>,
    warning: bool,
    source: Option<NamedSource<String>>,
    labels: Vec<LabeledSpan>,
    related: Vec<Report>,
}

impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Report {}

impl Diagnostic for Report {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }
    fn severity(&self) -> Option<Severity> {
        Some(if self.warning {
            Severity::Warning
        } else {
            Severity::Error
        })
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            None
        } else {
            Some(Box::new(self.labels.iter().cloned()))
        }
    }
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        if self.related.is_empty() {
            None
        } else {
            Some(Box::new(self.related.iter().map(|r| r as &dyn Diagnostic)))
        }
    }
}

/// Labels further right than this are named, not drawn.
const MAX_SNIPPET_COLUMN: usize = 4096;

fn report(map: &SourceMap, d: &Diag) -> Report {
    let mut files: Vec<u32> = Vec::new();
    for l in &d.labels {
        if !files.contains(&l.span.file) {
            files.push(l.span.file);
        }
    }
    let part = |file: u32, code, message: String, help| {
        let f = map.get(file);
        // A line too long to show (miette panics past column 65,535): the
        // place in words instead of the snippet.
        let far = d
            .labels
            .iter()
            .filter(|l| l.span.file == file)
            .map(|l| map.line_col(l.span))
            .find(|&(_, col)| col > MAX_SNIPPET_COLUMN);
        if let Some((line, col)) = far {
            return Report {
                code,
                message: format!("{message} (at {}:{line}:{col})", f.name),
                help,
                warning: d.warning,
                source: None,
                labels: Vec::new(),
                related: Vec::new(),
            };
        }
        let labels = d
            .labels
            .iter()
            .filter(|l| l.span.file == file)
            .map(|l| {
                let text = (!l.text.is_empty()).then(|| l.text.clone());
                LabeledSpan::new(text, l.span.start as usize, l.span.len())
            })
            .collect();
        Report {
            code,
            message,
            help,
            warning: d.warning,
            source: Some(NamedSource::new(f.name.clone(), f.text.to_string()).with_language("mcm")),
            labels,
            related: Vec::new(),
        }
    };
    match files.split_first() {
        None => Report {
            code: d.code,
            message: d.message.clone(),
            help: d.help.clone(),
            warning: d.warning,
            source: None,
            labels: Vec::new(),
            related: Vec::new(),
        },
        Some((first, rest)) => {
            let mut r = part(*first, d.code, d.message.clone(), d.help.clone());
            r.related = rest
                .iter()
                .map(|f| part(*f, d.code, format!("see also {}", map.get(*f).name), None))
                .collect();
            r
        }
    }
}

/// Renders diagnostics for a terminal or a log, without colour.
pub fn render_text(map: &SourceMap, diags: &[Diag]) -> String {
    let handler = miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor()).with_width(100);
    let mut out = String::new();
    for d in diags {
        let r = report(map, d);
        if handler.render_report(&mut out, &r).is_err() {
            out.push_str(&d.message);
        }
        out.push('\n');
    }
    out
}

/// Diagnostics as JSON values, with file, line and column for each label.
pub fn to_json(map: &SourceMap, diags: &[Diag]) -> serde_json::Value {
    let items: Vec<serde_json::Value> = diags
        .iter()
        .map(|d| {
            let labels: Vec<serde_json::Value> = d
                .labels
                .iter()
                .map(|l| {
                    let (line, col) = map.line_col(l.span);
                    serde_json::json!({
                        "file": map.get(l.span.file).name,
                        "line": line,
                        "column": col,
                        "offset": l.span.start,
                        "length": l.span.len(),
                        "label": l.text,
                    })
                })
                .collect();
            serde_json::json!({
                "severity": if d.warning { "warning" } else { "error" },
                "code": d.code,
                "message": d.message,
                "help": d.help,
                "labels": labels,
            })
        })
        .collect();
    serde_json::Value::Array(items)
}
