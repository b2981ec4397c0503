//! Between the front end's terms (byte offsets, spans, file ids, `Diag`s)
//! and the protocol's (UTF-16 line/character positions, URIs, diagnostics).

use crate::diag::Diag;
use crate::lang::loader::STDLIB;
use crate::lang::Compiled;
use crate::source::{SourceFile, Span};
use lsp_types::{
    Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Position, Range, Url,
};
use std::path::PathBuf;

/// Line starts of a text, for offset <-> position in UTF-16 code units (the
/// protocol's default).
pub struct Lines<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> Lines<'t> {
    pub fn new(text: &'t str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { text, starts }
    }

    pub fn position(&self, offset: usize) -> Position {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let col: usize = self.text.get(start..offset).map_or(0, |s| s.encode_utf16().count());
        Position::new(line as u32, col as u32)
    }

    pub fn offset(&self, p: Position) -> usize {
        let Some(&start) = self.starts.get(p.line as usize) else {
            return self.text.len();
        };
        let mut units = 0;
        for (i, ch) in self.text[start..].char_indices() {
            if units >= p.character as usize || ch == '\n' {
                return start + i;
            }
            units += ch.len_utf16();
        }
        self.text.len()
    }

    pub fn range(&self, s: Span) -> Range {
        Range::new(self.position(s.start as usize), self.position(s.end as usize))
    }
}

/// The file an editor opens for a source the program read: the main
/// document, an imported file, or, for the embedded standard library, the
/// repository's `stdlib/` file (or a copy written once to the temp folder
/// when the binary runs away from its source tree).
pub fn file_uri(f: &SourceFile, main: &Url, is_main: bool) -> Option<Url> {
    if is_main {
        return Some(main.clone());
    }
    if let Some(p) = &f.path {
        return Url::from_file_path(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())).ok();
    }
    let (name, text) = STDLIB.iter().find(|(n, _)| f.name == format!("stdlib/{n}.mcm"))?;
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("stdlib")
        .join(format!("{name}.mcm"));
    if std::fs::read_to_string(&repo).is_ok_and(|t| t == *text) {
        return Url::from_file_path(repo).ok();
    }
    let dir = std::env::temp_dir().join(format!("mcmpart-{}-stdlib", env!("CARGO_PKG_VERSION")));
    let copy = dir.join(format!("{name}.mcm"));
    if std::fs::read_to_string(&copy).ok().as_deref() != Some(*text) {
        std::fs::create_dir_all(&dir).ok()?;
        std::fs::write(&copy, text).ok()?;
    }
    Url::from_file_path(copy).ok()
}

/// A span as a location an editor can open.
pub fn location(c: &Compiled, main: &Url, s: Span) -> Option<Location> {
    let files = c.program.sources.files();
    let f = files.get(s.file as usize)?;
    let uri = file_uri(f, main, s.file == 0)?;
    Some(Location::new(uri, Lines::new(&f.text).range(s)))
}

/// The front end's diagnostics on the main document: each at its first
/// label (one in another file is shown at the top, naming where it is),
/// the other labels as related information, the help in the message.
pub fn diagnostics(c: &Compiled, main: &Url, text: &str) -> Vec<Diagnostic> {
    let lines = Lines::new(text);
    c.diags.iter().map(|d| diagnostic(c, main, &lines, d)).collect()
}

fn diagnostic(c: &Compiled, main: &Url, lines: &Lines, d: &Diag) -> Diagnostic {
    let sources = &c.program.sources;
    let primary = d.labels.first();
    let mut message = d.message.clone();
    let range = match primary {
        Some(l) if l.span.file == 0 => {
            if !l.text.is_empty() && l.text != d.message {
                message.push_str(&format!(" ({})", l.text));
            }
            lines.range(l.span)
        }
        Some(l) => {
            let (line, col) = sources.line_col(l.span);
            message = format!("{}:{line}:{col}: {message}", sources.get(l.span.file).name);
            Range::default()
        }
        None => Range::default(),
    };
    if let Some(h) = &d.help {
        message.push_str(&format!("\nhelp: {h}"));
    }
    let related: Vec<DiagnosticRelatedInformation> = d
        .labels
        .iter()
        .skip(usize::from(primary.is_some_and(|l| l.span.file == 0)))
        .filter_map(|l| {
            Some(DiagnosticRelatedInformation {
                location: location(c, main, l.span)?,
                message: if l.text.is_empty() {
                    d.message.clone()
                } else {
                    l.text.clone()
                },
            })
        })
        .collect();
    Diagnostic {
        range,
        severity: Some(if d.warning {
            DiagnosticSeverity::WARNING
        } else {
            DiagnosticSeverity::ERROR
        }),
        code: Some(NumberOrString::String(d.code.to_string())),
        source: Some("mcmpart".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        ..Diagnostic::default()
    }
}
