//! From text to syntax tree: pest does the parsing (`grammar/mcm.pest`),
//! this module builds the typed AST (items in `items`, expressions with a
//! Pratt parser in `expr`) and turns pest's errors into diagnostics
//! (`errors`).

mod errors;
mod expr;
mod items;
#[cfg(test)]
mod tests;

use crate::ast::*;
use errors::syntax_diag;
use mcm_core::diag::Diag;
use mcm_core::source::{FileId, Span};
use pest::iterators::Pair;
use pest::Parser;

#[derive(pest_derive::Parser)]
#[grammar = "../../../grammar/mcm.pest"]
pub(crate) struct McmParser;

type P<'a> = Pair<'a, Rule>;

/// Parses a whole file. On a syntax error, the file is cut at the lines that
/// start a top-level item and each piece is parsed alone, so that one run
/// reports every item with a syntax error, not just the first.
pub fn parse_module(file: FileId, text: &str) -> Result<Module, Vec<Diag>> {
    if let Some(at) = too_deep(text) {
        return Err(vec![Diag::error(
            "mcm::syntax",
            format!("brackets nested more than {MAX_DEPTH} deep"),
        )
        .label(Span::new(file, at, at + 1), "too deep")
        .help("split the expression with `let`")]);
    }
    if let Some(at) = too_many_operators(text) {
        return Err(vec![Diag::error(
            "mcm::syntax",
            format!("a file with more than {MAX_OPERATORS} operators"),
        )
        .label(Span::new(file, at, at + 1), "one too many")
        .help(
            "split it into several `let`s or rules; a large graph belongs in a graph file",
        )]);
    }
    match McmParser::parse(Rule::file, text) {
        Ok(mut pairs) => {
            let b = Builder { file, text };
            let mut errs = Vec::new();
            let file_pair = pairs.next().expect("the file rule always yields a pair");
            let mut items = Vec::new();
            for p in file_pair.into_inner() {
                if p.as_rule() == Rule::EOI {
                    continue;
                }
                match b.item(p) {
                    Ok(i) => items.push(i),
                    Err(e) => errs.push(e),
                }
            }
            if errs.is_empty() {
                Ok(Module { file, items })
            } else {
                Err(errs)
            }
        }
        Err(first) => {
            let mut diags = Vec::new();
            for (start, end) in item_chunks(text) {
                if let Err(e) = McmParser::parse(Rule::file, &text[start..end]) {
                    diags.push(syntax_diag(file, text, e, start));
                }
            }
            if diags.is_empty() {
                diags.push(syntax_diag(file, text, first, 0));
            }
            Err(diags)
        }
    }
}

/// Deeper nesting than this is refused before parsing, so that no input can
/// exhaust the stack of the recursive parser and the passes after it.
const MAX_DEPTH: usize = 200;

fn too_deep(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(i);
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// More operators than this in one file are refused before parsing: chains
/// without brackets (`not not ...`, `- - ...`, `a + b + ...`, `p -> q -> ...`,
/// `forall i in r: forall ...`) nest as deep as they are long in the parser
/// and the passes after it. Every operator character and the words `not`,
/// `and`, `or`, `forall`, `exists` count (`->` twice), comments and strings
/// not. Counted over the whole file, in one pass: items are cut at lines
/// that start with a keyword, which an expression can continue with.
const MAX_OPERATORS: usize = 60_000;

/// Where the file's operator count passes [`MAX_OPERATORS`], if it does.
fn too_many_operators(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let (mut count, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        let b = bytes[i];
        let step = match b {
            b'/' if bytes.get(i + 1) == Some(&b'/') => text[i..].find('\n').unwrap_or(text.len() - i),
            b'"' => {
                // To the closing quote; a backslash escapes the next byte,
                // a line end included.
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                j + 1 - i
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'<' | b'>' | b'=' | b'!' => {
                count += 1;
                1
            }
            _ if b.is_ascii_alphabetic() || b == b'_' => {
                let len = bytes[i..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                    .count();
                if matches!(&text[i..i + len], "not" | "and" | "or" | "forall" | "exists") {
                    count += 1;
                }
                len
            }
            _ => 1,
        };
        if count > MAX_OPERATORS {
            return Some(i);
        }
        i += step.max(1);
    }
    None
}

/// Byte ranges of the pieces that begin at a line starting an item keyword.
fn item_chunks(text: &str) -> Vec<(usize, usize)> {
    const STARTS: [&str; 6] = ["use ", "let ", "topology ", "constraint ", "partition ", "test "];
    let mut cuts = vec![0];
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if offset > 0 && STARTS.iter().any(|s| line.starts_with(s)) {
            cuts.push(offset);
        }
        offset += line.len();
    }
    cuts.push(text.len());
    cuts.windows(2).map(|w| (w[0], w[1])).collect()
}

/// Errors found while building the AST from a successful parse (bad numbers).
struct Builder<'t> {
    file: FileId,
    text: &'t str,
}

type R<T> = Result<T, Diag>;

impl Builder<'_> {
    /// The pair's span without the whitespace and comments pest may have
    /// consumed after it while trying an optional part.
    fn span(&self, p: &P) -> Span {
        let s = p.as_span();
        let text = &self.text[s.start()..s.end()];
        let mut end = s.end();
        let trimmed = text.trim_end();
        if trimmed.len() < text.len() {
            end = s.start() + trimmed.len();
        }
        Span::new(self.file, s.start(), end)
    }

    fn ident(&self, p: P) -> Ident {
        Ident {
            name: p.as_str().to_string(),
            span: self.span(&p),
        }
    }
}

fn string_text<'a>(p: &P<'a>) -> &'a str {
    p.clone().into_inner().next().map_or("", |i| i.as_str())
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(o) => out.push(o),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The `///` lines directly above byte offset `at`, joined.
pub fn doc_comment(text: &str, at: usize) -> Option<String> {
    let before = &text[..at.min(text.len())];
    let mut lines: Vec<&str> = Vec::new();
    for line in before.lines().rev().skip_while(|l| l.trim().is_empty()) {
        match line.trim_start().strip_prefix("///") {
            Some(d) => lines.push(d.trim()),
            None => break,
        }
    }
    if lines.is_empty() {
        return None;
    }
    lines.reverse();
    Some(lines.join("\n"))
}
