//! From the pest parse tree to a flat list of tokens that knows where
//! statements begin and which braces open blocks. Comments are silent in the
//! grammar, so they are read back from the text between the tree's leaves
//! (which holds only whitespace, comments and the grammar's literal tokens).

use crate::parse::Rule;
use pest::iterators::Pair;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A name: a call's `(` and an index's `[` stick to it.
    Ident,
    /// A keyword or word operator.
    Word,
    /// Any other leaf: a number, quantity, string or operator.
    Atom,
    /// A literal punctuation token from the grammar (`(`, `,`, `::`, ...).
    Punct,
    /// The `{` and `}` of a block whose statements go one per line.
    BlockOpen,
    BlockClose,
    /// The end of the file (carries the comments after the last item).
    Eof,
}

#[derive(Clone, Debug)]
pub struct Comment {
    pub text: String,
    /// Whether a blank line stood before it in the source.
    pub blank_before: bool,
}

#[derive(Clone, Debug)]
pub struct Tok {
    pub text: String,
    pub kind: Kind,
    /// The rule whose text holds this token (for context: `::` in a `use`
    /// path or after a constraint's parameters).
    pub parent: Rule,
    /// The rule of the leaf itself (`neg_op`, `add_op`, ...), for leaves.
    pub rule: Option<Rule>,
    /// The token starts a statement (an item, a block's statement).
    pub stmt: bool,
    /// Two spaces before it on a line: the chains of a graph literal.
    pub wide: bool,
    /// A line break stood before it in the source (comments aside).
    pub newline_before: bool,
    /// A blank line stood before it in the source (after any comments).
    pub blank_before: bool,
    /// Comments on lines of their own before this token.
    pub leading: Vec<Comment>,
    /// A comment after this token on the same line.
    pub trailing: Option<String>,
}

/// Rules whose `{ ... }` holds statements, one per line.
fn is_block(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::topo_block | Rule::constraint_decl | Rule::problem_block | Rule::test_decl
    )
}

/// Rules printed as one token (their inner pairs are parts of a lexeme).
fn is_leaf(rule: Rule) -> bool {
    matches!(rule, Rule::string | Rule::quantity | Rule::number)
}

/// Whether a child of `parent` starts a statement.
fn starts_stmt(parent: Rule, child: Rule) -> bool {
    match parent {
        Rule::file => child != Rule::EOI,
        Rule::topo_block | Rule::problem_block => true,
        Rule::constraint_decl => child == Rule::expr,
        Rule::test_decl => child != Rule::string,
        _ => false,
    }
}

pub struct Lexer<'t> {
    text: &'t str,
    pub toks: Vec<Tok>,
    pending: Vec<Comment>,
    pending_stmt: bool,
    pending_wide: bool,
    /// Newlines seen since the last token, and since the last comment.
    newlines: usize,
    newlines_since_comment: usize,
}

impl<'t> Lexer<'t> {
    pub fn new(text: &'t str) -> Self {
        Lexer {
            text,
            toks: Vec::new(),
            pending: Vec::new(),
            pending_stmt: false,
            pending_wide: false,
            newlines: 0,
            newlines_since_comment: 0,
        }
    }

    pub fn walk(&mut self, pair: Pair<'t, Rule>) {
        let rule = pair.as_rule();
        let span = pair.as_span();
        if rule == Rule::EOI {
            self.gap(span.start(), self.text.len(), Rule::file);
            self.push(String::new(), Kind::Eof, Rule::file, Some(rule));
            return;
        }
        let inner: Vec<_> = pair.clone().into_inner().collect();
        if is_leaf(rule) || inner.is_empty() {
            let kind = match rule {
                Rule::ident | Rule::ident_any | Rule::agg_op | Rule::count_op => Kind::Ident,
                Rule::quantifier
                | Rule::not_op
                | Rule::kw_in
                | Rule::kw_and
                | Rule::kw_or
                | Rule::kw_where
                | Rule::bool_lit
                | Rule::objective_sense
                | Rule::expect_valid
                | Rule::expect_unsat
                | Rule::expect_sat
                | Rule::use_all => Kind::Word,
                _ => Kind::Atom,
            };
            // A literal-only rule (`expect_valid`, `link_dir`) may end in
            // whitespace or comments pest skipped: lex them as a gap.
            let body = leaf_text(rule, span.as_str());
            let end = span.start() + body.len();
            let text = if rule == Rule::quantity {
                quantity_text(body)
            } else {
                body.to_string()
            };
            let text = if rule == Rule::use_all { "*".to_string() } else { text };
            self.push(text, kind, rule, Some(rule));
            self.gap(end, span.end(), rule);
            return;
        }
        let mut pos = span.start();
        for (k, child) in inner.into_iter().enumerate() {
            let cs = child.as_span();
            self.gap(pos, cs.start(), rule);
            if starts_stmt(rule, child.as_rule()) {
                self.pending_stmt = true;
            }
            if rule == Rule::graph_lit && k > 0 {
                self.pending_wide = true;
            }
            pos = cs.end();
            self.walk(child);
        }
        self.gap(pos, span.end(), rule);
    }

    /// Lexes text between leaves: whitespace, comments, literal tokens.
    fn gap(&mut self, from: usize, to: usize, parent: Rule) {
        let s = &self.text[from..to];
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c == b'\n' {
                self.newlines += 1;
                self.newlines_since_comment += 1;
                i += 1;
            } else if c.is_ascii_whitespace() {
                i += 1;
            } else if s[i..].starts_with("//") {
                let end = s[i..].find('\n').map_or(s.len(), |e| i + e);
                let text = s[i..end].trim_end().to_string();
                match self.toks.last_mut() {
                    Some(t) if self.newlines == 0 && t.trailing.is_none() && self.pending.is_empty() => {
                        t.trailing = Some(text)
                    }
                    _ => self.pending.push(Comment {
                        text,
                        blank_before: self.newlines_since_comment >= 2,
                    }),
                }
                self.newlines_since_comment = 0;
                i = end;
            } else {
                let len = literal_len(&s[i..]);
                let lit = &s[i..i + len];
                let kind = match lit {
                    "{" if is_block(parent) => Kind::BlockOpen,
                    "}" if is_block(parent) => Kind::BlockClose,
                    _ if lit.as_bytes()[0].is_ascii_alphabetic() => Kind::Word,
                    _ => Kind::Punct,
                };
                self.push(lit.to_string(), kind, parent, None);
                i += len;
            }
        }
    }

    fn push(&mut self, text: String, kind: Kind, parent: Rule, rule: Option<Rule>) {
        let had_comments = !self.pending.is_empty();
        self.toks.push(Tok {
            text,
            kind,
            parent,
            rule,
            stmt: std::mem::take(&mut self.pending_stmt),
            wide: std::mem::take(&mut self.pending_wide),
            newline_before: self.newlines > 0,
            blank_before: if had_comments {
                self.newlines_since_comment >= 2
            } else {
                self.newlines >= 2
            },
            leading: std::mem::take(&mut self.pending),
            trailing: None,
        });
        self.newlines = 0;
        self.newlines_since_comment = 0;
    }
}

/// A leaf's own text: literal-only rules may have swallowed trailing
/// whitespace or comments.
fn leaf_text(rule: Rule, s: &str) -> &str {
    if matches!(
        rule,
        Rule::string | Rule::quantity | Rule::number | Rule::ident | Rule::ident_any
    ) {
        return s;
    }
    let cut = s.find("//").unwrap_or(s.len());
    s[..cut].trim_end()
}

/// `128   MiB` is `128 MiB`; `8GB` is `8 GB`.
fn quantity_text(s: &str) -> String {
    let split = s
        .find(|c: char| c.is_ascii_whitespace() || (c.is_ascii_alphabetic() && c != 'e' && c != 'E'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let unit = unit.trim();
    if unit.is_empty() {
        num.to_string()
    } else {
        format!("{num} {unit}")
    }
}

/// The length of the literal token at the start of `s`.
fn literal_len(s: &str) -> usize {
    const MULTI: [&str; 8] = ["<->", "->", "::", "..", "==", "!=", "<=", ">="];
    if let Some(m) = MULTI.iter().find(|m| s.starts_with(**m)) {
        return m.len();
    }
    let word = s
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
        .count();
    if word > 0 {
        word
    } else {
        s.chars().next().map_or(1, char::len_utf8)
    }
}
