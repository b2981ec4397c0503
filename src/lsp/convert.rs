//! Between the front end's terms (byte offsets, spans, file ids, `Diag`s)
//! and the protocol's (line/character positions in the encoding the client
//! and the server agreed on, URIs, diagnostics).

use crate::diag::Diag;
use crate::lang::loader::STDLIB;
use crate::lang::Compiled;
use crate::source::{SourceFile, Span};
use lsp_types::{
    Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Position,
    PositionEncodingKind, Range, Url,
};
use std::path::PathBuf;

/// How the protocol counts characters in a line: UTF-16 code units (its
/// default) or, when the client offers it, UTF-8 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    #[default]
    Utf16,
}

impl Encoding {
    /// The encoding to speak with a client that offers `offered` (its
    /// `general.positionEncodings`, in its order of preference).
    pub fn negotiate(offered: &[PositionEncodingKind]) -> Encoding {
        if offered.contains(&PositionEncodingKind::UTF8) {
            Encoding::Utf8
        } else {
            Encoding::Utf16
        }
    }

    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
        }
    }

    fn width(self, ch: char) -> usize {
        match self {
            Encoding::Utf8 => ch.len_utf8(),
            Encoding::Utf16 => ch.len_utf16(),
        }
    }
}

/// Line starts of a text, for byte offset <-> protocol position. Lines end
/// at `\n`, `\r\n` or a lone `\r`, as the protocol says; a position past
/// the end of its line is at the line's end, one past the last line at the
/// end of the text, and one inside a character at its start.
pub struct Lines<'t> {
    text: &'t str,
    starts: Vec<usize>,
    enc: Encoding,
}

impl<'t> Lines<'t> {
    pub fn new(text: &'t str, enc: Encoding) -> Self {
        let bytes = text.as_bytes();
        let starts = std::iter::once(0)
            .chain(
                bytes
                    .iter()
                    .enumerate()
                    .filter(|&(i, &b)| b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')))
                    .map(|(i, _)| i + 1),
            )
            .collect();
        Lines { text, starts, enc }
    }

    /// Where line `line` ends, before its line break.
    fn end(&self, line: usize) -> usize {
        let Some(&next) = self.starts.get(line + 1) else {
            return self.text.len();
        };
        let body = &self.text[..next];
        let body = body.strip_suffix('\n').unwrap_or(body);
        body.strip_suffix('\r').unwrap_or(body).len()
    }

    pub fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let col: usize = self.text[start..offset.min(self.end(line))]
            .chars()
            .map(|c| self.enc.width(c))
            .sum();
        Position::new(line as u32, col as u32)
    }

    pub fn offset(&self, p: Position) -> usize {
        let line = p.line as usize;
        let Some(&start) = self.starts.get(line) else {
            return self.text.len();
        };
        let end = self.end(line);
        let mut units = 0;
        for (i, ch) in self.text[start..end].char_indices() {
            units += self.enc.width(ch);
            if units > p.character as usize {
                return start + i;
            }
        }
        end
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
pub fn location(c: &Compiled, main: &Url, s: Span, enc: Encoding) -> Option<Location> {
    let files = c.program.sources.files();
    let f = files.get(s.file as usize)?;
    let uri = file_uri(f, main, s.file == 0)?;
    Some(Location::new(uri, Lines::new(&f.text, enc).range(s)))
}

/// The front end's diagnostics on the main document: each at its first
/// label (one in another file is shown at the top, naming where it is),
/// the other labels as related information, the help in the message.
pub fn diagnostics(c: &Compiled, main: &Url, text: &str, enc: Encoding) -> Vec<Diagnostic> {
    let lines = Lines::new(text, enc);
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
                location: location(c, main, l.span, lines.enc)?,
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

#[cfg(test)]
mod tests {
    use super::{Encoding, Lines};
    use lsp_types::{Position, PositionEncodingKind};

    fn pos(line: u32, character: u32) -> Position {
        Position::new(line, character)
    }

    #[test]
    fn positions_count_utf16_units_or_utf8_bytes() {
        // `é` is 2 bytes and 1 unit, `😀` 4 bytes and 2 units.
        let text = "é😀x\nab";
        let u16 = Lines::new(text, Encoding::Utf16);
        assert_eq!(u16.offset(pos(0, 1)), 2);
        assert_eq!(u16.offset(pos(0, 3)), 6);
        assert_eq!(u16.position(6), pos(0, 3));
        assert_eq!(u16.position(text.len()), pos(1, 2));
        let u8 = Lines::new(text, Encoding::Utf8);
        assert_eq!(u8.offset(pos(0, 6)), 6);
        assert_eq!(u8.position(6), pos(0, 6));
        for (enc, lines) in [(Encoding::Utf16, &u16), (Encoding::Utf8, &u8)] {
            for (offset, _) in text.char_indices() {
                assert_eq!(lines.offset(lines.position(offset)), offset, "{enc:?} {offset}");
            }
        }
    }

    #[test]
    fn positions_off_the_text_are_clamped() {
        let text = "ab😀\r\nc\rd";
        let l = Lines::new(text, Encoding::Utf16);
        // Inside the emoji's surrogate pair: at its start.
        assert_eq!(l.offset(pos(0, 3)), 2);
        // Past a line's end: at its end, before `\r\n`.
        assert_eq!(l.offset(pos(0, 99)), 6);
        // A lone `\r` ends a line too.
        assert_eq!(l.offset(pos(1, 5)), 9);
        assert_eq!(l.offset(pos(2, 0)), 10);
        assert_eq!(l.position(10), pos(2, 0));
        // Past the last line: the end of the text.
        assert_eq!(l.offset(pos(7, 0)), text.len());
        // Offsets inside a character or past the end.
        assert_eq!(l.position(3), pos(0, 2));
        assert_eq!(l.position(7), pos(0, 4));
        assert_eq!(l.position(999), pos(2, 1));
        assert_eq!(Lines::new("", Encoding::Utf16).offset(pos(3, 3)), 0);
    }

    #[test]
    fn utf8_is_spoken_only_when_offered() {
        let offer = |kinds: &[&str]| {
            let kinds: Vec<PositionEncodingKind> = kinds
                .iter()
                .map(|k| PositionEncodingKind::from(k.to_string()))
                .collect();
            Encoding::negotiate(&kinds)
        };
        assert_eq!(offer(&[]), Encoding::Utf16);
        assert_eq!(offer(&["utf-32", "utf-16"]), Encoding::Utf16);
        assert_eq!(offer(&["utf-16", "utf-8"]), Encoding::Utf8);
        assert_eq!(Encoding::Utf8.kind(), PositionEncodingKind::UTF8);
    }
}
