//! Lays the tokens out: one statement per line, blocks indented by four
//! spaces, canonical spacing between tokens. Line breaks inside a statement
//! are the author's (kept, with a continuation indent); comments stay where
//! they were, on their own line or after code.

use super::tokens::{Kind, Tok};
use crate::parse::Rule;

const INDENT: &str = "    ";

pub fn print(toks: &[Tok]) -> String {
    let mut p = Printer::default();
    for (i, t) in toks.iter().enumerate() {
        p.token(t, i.checked_sub(1).map(|j| &toks[j]));
    }
    let mut out = p.out.trim_end().to_string();
    out.push('\n');
    if out.trim().is_empty() {
        return String::new();
    }
    out
}

#[derive(Default)]
struct Printer {
    out: String,
    /// Block depth.
    depth: usize,
    /// Brackets open inside the current statement (`(`, `[`, inline `{`).
    open: usize,
    /// The last line ended in a comment: the next token starts a line.
    must_break: bool,
}

impl Printer {
    fn token(&mut self, t: &Tok, prev: Option<&Tok>) {
        let closes = matches!(t.text.as_str(), ")" | "]" | "}") && t.kind != Kind::BlockClose;
        match t.kind {
            Kind::BlockClose => self.depth = self.depth.saturating_sub(1),
            Kind::Eof => self.depth = 0,
            _ => {}
        }
        let inner_open = if closes { self.open.saturating_sub(1) } else { self.open };
        // Where the token goes: a new statement line, a continuation line or
        // the current line.
        let at_start = self.out.is_empty();
        let line_indent = if t.stmt || t.kind == Kind::BlockClose || t.kind == Kind::Eof {
            Some(self.depth)
        } else if t.newline_before && t.kind != Kind::BlockOpen || self.must_break || !t.leading.is_empty() {
            Some(self.depth + if closes { inner_open } else { inner_open.max(1) })
        } else if prev.is_some_and(|p| p.kind == Kind::BlockOpen) {
            Some(self.depth)
        } else {
            None
        };
        // Comments of their own lines first, at the indent of what follows
        // (inside a block for the comments before its `}`).
        let after_open = prev.is_some_and(|p| p.kind == Kind::BlockOpen);
        let comment_indent = match t.kind {
            Kind::BlockClose => self.depth + 1,
            _ => line_indent.unwrap_or(self.depth + inner_open.max(1)),
        };
        for (k, c) in t.leading.iter().enumerate() {
            let blank = c.blank_before && !(k == 0 && after_open);
            self.newline(comment_indent, blank, at_start && k == 0);
            self.out.push_str(&c.text);
        }
        let first = at_start && t.leading.is_empty();
        match line_indent {
            Some(ind) => {
                let blank = t.blank_before && !after_open && t.kind != Kind::BlockClose && t.kind != Kind::Eof;
                if t.kind != Kind::Eof {
                    self.newline(ind, blank, first);
                }
            }
            None => {
                if prev.is_some_and(|p| space_between(p, t)) {
                    self.out.push_str(if t.wide { "  " } else { " " });
                }
            }
        }
        self.out.push_str(&t.text);
        self.must_break = false;
        if let Some(c) = &t.trailing {
            self.out.push(' ');
            self.out.push_str(c);
            self.must_break = true;
        }
        match t.kind {
            Kind::BlockOpen => self.depth += 1,
            _ if closes => self.open = inner_open,
            _ if matches!(t.text.as_str(), "(" | "[" | "{") && t.kind == Kind::Punct => self.open += 1,
            _ => {}
        }
    }

    fn newline(&mut self, indent: usize, blank: bool, first: bool) {
        if !first {
            // No trailing spaces; at most one blank line.
            while self.out.ends_with(' ') {
                self.out.pop();
            }
            self.out.push('\n');
            if blank {
                self.out.push('\n');
            }
        }
        for _ in 0..indent {
            self.out.push_str(INDENT);
        }
    }
}

/// Whether a space separates two tokens on one line.
fn space_between(a: &Tok, b: &Tok) -> bool {
    let (x, y) = (a.text.as_str(), b.text.as_str());
    let in_use = a.parent == Rule::use_path || b.parent == Rule::use_path || b.parent == Rule::use_group;
    if a.rule == Some(Rule::neg_op) {
        return false;
    }
    if matches!(x, "(" | "[" | ".") || matches!(y, ")" | "]" | "," | "." | "[") {
        return false;
    }
    if x == ".." || y == ".." {
        return false;
    }
    if x == "::" || y == "::" {
        return !in_use;
    }
    if a.parent == Rule::use_group && x == "{" || b.parent == Rule::use_group && y == "}" {
        return false;
    }
    if y == ":" {
        return false;
    }
    if y == "(" {
        return a.kind != Kind::Ident;
    }
    if x == "{" && y == "}" {
        return false;
    }
    true
}
