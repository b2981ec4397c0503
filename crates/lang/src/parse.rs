//! From text to syntax tree: pest does the parsing (`grammar/mcm.pest`),
//! this module builds the typed AST and turns pest's errors into diagnostics.

use super::ast::*;
use mcm_core::diag::Diag;
use mcm_core::quantity;
use mcm_core::source::{FileId, Span};
use pest::iterators::Pair;
use pest::Parser;

#[derive(pest_derive::Parser)]
#[grammar = "../../../grammar/mcm.pest"]
struct McmParser;

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

fn syntax_diag(file: FileId, text: &str, e: pest::error::Error<Rule>, base: usize) -> Diag {
    let (start, end) = match e.location {
        pest::error::InputLocation::Pos(p) => (p, p),
        pest::error::InputLocation::Span((s, e)) => (s, e),
    };
    let (start, end) = (start + base, end + base);
    // Point at the offending character rather than at nothing.
    let end = if end == start {
        let rest = &text[start..];
        let word = rest
            .char_indices()
            .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
            .last()
            .map(|(i, c)| i + c.len_utf8());
        match word {
            Some(w) => start + w,
            None => rest.chars().next().map_or(start, |c| start + c.len_utf8()),
        }
    } else {
        end
    };
    let found = text[start..end].trim();
    let positives = match &e.variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } => positives.as_slice(),
        pest::error::ErrorVariant::CustomError { .. } => &[],
    };
    // A word right after a number, where a unit could stand: an unknown
    // unit (`3 XB`, `8 GFLOPS`), better said so than as a syntax error.
    let after_number = text[..start]
        .trim_end_matches([' ', '\t'])
        .ends_with(|c: char| c.is_ascii_digit());
    let word = text[start..]
        .split(|c: char| c.is_whitespace() || ",)}]=:(".contains(c))
        .next()
        .unwrap_or("");
    // A word that names something (`memory = ...`, `b: 1`, `f(...)`) after
    // a number is a missing comma, which the syntax error says better.
    let names_something = text[start + word.len()..].trim_start().starts_with(['=', ':', '(']);
    if positives.contains(&Rule::unit)
        && after_number
        && !names_something
        && word.starts_with(|c: char| c.is_alphabetic())
    {
        return Diag::error("mcm::unit", format!("unknown unit `{word}`"))
            .label(Span::new(file, start, start + word.len()), "not a unit")
            .help(format!("{} (a product is written with `*`)", unit_help(word)));
    }
    let expected = match &e.variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } => describe_expected(positives),
        pest::error::ErrorVariant::CustomError { message } => message.clone(),
    };
    let found = if found.is_empty() {
        "the end of the input".to_string()
    } else {
        format!("`{found}`")
    };
    Diag::error(
        "mcm::syntax",
        format!("syntax error: expected {expected}, found {found}"),
    )
    .label(Span::new(file, start, end), format!("expected {expected} here"))
    .help("see the language reference in the book for the grammar")
}

/// The help of an unknown unit: the nearest known one, and all of them.
fn unit_help(word: &str) -> String {
    let names = mcm_core::quantity::unit_names();
    match mcm_core::diag::suggest(word, names.iter().map(String::as_str)) {
        Some(u) => format!("did you mean `{u}`? The units are {}", names.join(" ")),
        None => format!("the units are {}", names.join(" ")),
    }
}

fn describe_expected(rules: &[Rule]) -> String {
    let mut names: Vec<&str> = rules.iter().map(|r| rule_name(*r)).collect();
    names.sort_unstable();
    names.dedup();
    match names.len() {
        0 => "something else".to_string(),
        1 => names[0].to_string(),
        _ => {
            let last = names.pop().unwrap_or_default();
            format!("{} or {}", names.join(", "), last)
        }
    }
}

fn rule_name(r: Rule) -> &'static str {
    match r {
        Rule::ident | Rule::ident_any => "a name",
        Rule::expr | Rule::iff_expr | Rule::imp_expr | Rule::or_expr | Rule::and_expr => "an expression",
        Rule::not_expr | Rule::cmp_expr | Rule::sum_expr | Rule::product | Rule::unary => "an expression",
        Rule::postfix_expr | Rule::quantity | Rule::number => "an expression",
        Rule::string => "a string",
        Rule::use_decl | Rule::let_decl | Rule::topology_decl | Rule::constraint_decl => "an item",
        Rule::partition_decl | Rule::test_decl => "an item",
        Rule::EOI => "the end of the file",
        Rule::cmp_op => "a comparison",
        Rule::add_op | Rule::mul_op => "an operator",
        Rule::kw_and | Rule::kw_or => "an operator",
        Rule::kw_in => "`in`",
        Rule::kw_where => "`where`",
        Rule::attrs => "`{ attribute = value, ... }`",
        Rule::attr => "`attribute = value`",
        Rule::params | Rule::param => "a parameter `name: type`",
        Rule::args | Rule::arg => "an argument",
        Rule::chips_stmt | Rule::link_stmt | Rule::for_stmt | Rule::if_stmt => "a topology statement",
        Rule::require_stmt | Rule::objective_stmt | Rule::evaluate_stmt => "a problem statement",
        Rule::place_stmt | Rule::expect_stmt => "a test statement",
        Rule::expect_valid | Rule::expect_violates | Rule::expect_unsat | Rule::expect_sat => {
            "`valid`, `violates`, `satisfiable` or `unsatisfiable`"
        }
        Rule::link_dir => "`->` or `<->`",
        Rule::binders | Rule::binder => "a binder `x in domain`",
        Rule::domain | Rule::range => "a domain",
        Rule::constraint_use => "a constraint",
        Rule::graph_chain | Rule::graph_node | Rule::node_name => "a node",
        Rule::place_entry => "`node: chip`",
        Rule::problem_block => "`{`",
        Rule::topo_block => "`{`",
        Rule::unit => "a unit",
        Rule::use_path | Rule::use_group | Rule::use_all => "a module path",
        Rule::objective_sense => "`maximize` or `minimize`",
        Rule::quantifier => "`forall` or `exists`",
        Rule::agg_op | Rule::count_op | Rule::aggregate | Rule::agg_body => "an aggregate",
        Rule::type_ann => "a type",
        Rule::annotation => "an annotation",
        Rule::call => "a call",
        Rule::bool_lit => "`true` or `false`",
        Rule::field | Rule::index => "`.field` or `[index]`",
        _ => "a token",
    }
}

/// Errors found while building the AST from a successful parse (bad numbers).
struct Builder<'t> {
    file: FileId,
    text: &'t str,
}

type R<T> = Result<T, Diag>;

impl<'t> Builder<'t> {
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

    fn item(&self, p: P) -> R<Item> {
        Ok(match p.as_rule() {
            Rule::use_decl => Item::Use(self.use_decl(p)),
            Rule::let_decl => Item::Let(self.let_decl(p)?),
            Rule::topology_decl => Item::Topology(self.topology(p)?),
            Rule::constraint_decl => Item::Constraint(self.constraint(p)?),
            Rule::partition_decl => Item::Partition(self.partition(p)?),
            Rule::test_decl => Item::Test(self.test(p)?),
            r => unreachable!("grammar yields no item {r:?}"),
        })
    }

    fn use_decl(&self, p: P) -> UseDecl {
        let span = self.span(&p);
        let inner = p.into_inner().next().expect("use has a target");
        let target = match inner.as_rule() {
            Rule::string => UseTarget::File {
                span: self.span(&inner),
                path: unescape(string_text(&inner)),
            },
            _ => {
                let mut segments = Vec::new();
                let mut items = UseItems::Bare;
                for q in inner.into_inner() {
                    match q.as_rule() {
                        Rule::ident => segments.push(self.ident(q)),
                        Rule::use_all => items = UseItems::All,
                        Rule::use_group => items = UseItems::Some(q.into_inner().map(|i| self.ident(i)).collect()),
                        _ => {}
                    }
                }
                UseTarget::Path { segments, items }
            }
        };
        UseDecl { target, span }
    }

    fn let_decl(&self, p: P) -> R<LetDecl> {
        let span = self.span(&p);
        let mut it = p.into_inner().peekable();
        let name = self.ident(it.next().expect("let name"));
        let ty = match it.peek().map(|q| q.as_rule()) {
            Some(Rule::type_ann) => it.next().and_then(|q| q.into_inner().next()).map(|q| self.ident(q)),
            _ => None,
        };
        let value = self.expr(it.next().expect("let value"))?;
        Ok(LetDecl { name, ty, value, span })
    }

    fn params(&self, p: P) -> R<Vec<Param>> {
        p.into_inner()
            .map(|q| {
                let mut it = q.into_inner();
                let name = self.ident(it.next().expect("param name"));
                let ty = self.ident(it.next().expect("param type"));
                let default = it.next().map(|e| self.expr(e)).transpose()?;
                Ok(Param { name, ty, default })
            })
            .collect()
    }

    fn topology(&self, p: P) -> R<TopologyDecl> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("topology name"));
        let mut params = Vec::new();
        let mut body = Vec::new();
        for q in it {
            match q.as_rule() {
                Rule::params => params = self.params(q)?,
                Rule::topo_block => body = self.topo_block(q)?,
                _ => {}
            }
        }
        Ok(TopologyDecl {
            name,
            params,
            body,
            doc: doc_comment(self.text, span.start as usize),
            span,
        })
    }

    fn topo_block(&self, p: P) -> R<Vec<TopoStmt>> {
        p.into_inner().map(|q| self.topo_stmt(q)).collect()
    }

    fn topo_stmt(&self, p: P) -> R<TopoStmt> {
        let span = self.span(&p);
        Ok(match p.as_rule() {
            Rule::chips_stmt => {
                let mut it = p.into_inner();
                let name = self.ident(it.next().expect("chips name"));
                let mut count = None;
                let mut attrs = Vec::new();
                for q in it {
                    match q.as_rule() {
                        Rule::attrs => attrs = self.attrs(q)?,
                        _ => count = Some(self.expr(q)?),
                    }
                }
                TopoStmt::Chips {
                    name,
                    count,
                    attrs,
                    span,
                }
            }
            Rule::link_stmt => {
                let mut it = p.into_inner();
                let src = self.chip_ref(it.next().expect("link source"))?;
                let both_ways = it.next().expect("link direction").as_str() == "<->";
                let dst = self.chip_ref(it.next().expect("link target"))?;
                let attrs = it.next().map(|q| self.attrs(q)).transpose()?.unwrap_or_default();
                TopoStmt::Link {
                    src,
                    dst,
                    both_ways,
                    attrs,
                    span,
                }
            }
            Rule::for_stmt => {
                let mut it = p.into_inner();
                let var = self.ident(it.next().expect("for variable"));
                let _in = it.next();
                let range = it.next().expect("for range");
                let (from, to) = self.range(range)?;
                let body = self.topo_block(it.next().expect("for body"))?;
                TopoStmt::For { var, from, to, body }
            }
            Rule::if_stmt => {
                let mut it = p.into_inner();
                let cond = self.expr(it.next().expect("if condition"))?;
                let then = self.topo_block(it.next().expect("if body"))?;
                let otherwise = it.next().map(|q| self.topo_block(q)).transpose()?.unwrap_or_default();
                TopoStmt::If { cond, then, otherwise }
            }
            Rule::let_decl => TopoStmt::Let(self.let_decl(p)?),
            r => unreachable!("grammar yields no topology statement {r:?}"),
        })
    }

    fn range(&self, p: P) -> R<(Expr, Expr)> {
        let mut it = p.into_inner();
        let a = self.expr(it.next().expect("range start"))?;
        let b = self.expr(it.next().expect("range end"))?;
        Ok((a, b))
    }

    fn chip_ref(&self, p: P) -> R<ChipRef> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let group = self.ident(it.next().expect("chip group"));
        let index = it.next().map(|q| self.expr(q)).transpose()?;
        Ok(ChipRef { group, index, span })
    }

    fn attrs(&self, p: P) -> R<Vec<Attr>> {
        p.into_inner()
            .map(|q| {
                let mut it = q.into_inner();
                let name = self.ident(it.next().expect("attribute name"));
                let value = self.expr(it.next().expect("attribute value"))?;
                Ok(Attr { name, value })
            })
            .collect()
    }

    fn constraint(&self, p: P) -> R<ConstraintDecl> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("constraint name"));
        let mut params = Vec::new();
        let mut annotations = Vec::new();
        let mut body = Vec::new();
        for q in it {
            match q.as_rule() {
                Rule::params => params = self.params(q)?,
                Rule::annotation => annotations.push(self.ident(q.into_inner().next().expect("annotation name"))),
                _ => body.push(self.expr(q)?),
            }
        }
        Ok(ConstraintDecl {
            name,
            params,
            annotations,
            body,
            doc: doc_comment(self.text, span.start as usize),
            span,
        })
    }

    fn partition(&self, p: P) -> R<PartitionDecl> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let graph = self.expr(it.next().expect("partition graph"))?;
        let package = self.expr(it.next().expect("partition package"))?;
        let mut d = PartitionDecl {
            graph,
            package,
            alias: None,
            requires: Vec::new(),
            objective: None,
            evaluator: None,
            span,
        };
        for q in it {
            match q.as_rule() {
                Rule::ident => d.alias = Some(self.ident(q)),
                Rule::problem_block => {
                    for s in q.into_inner() {
                        let sspan = self.span(&s);
                        match s.as_rule() {
                            Rule::require_stmt => d.requires.extend(self.require(s)?),
                            Rule::objective_stmt => {
                                let mut it = s.into_inner();
                                let sense = match it.next().expect("sense").as_str() {
                                    "maximize" => Sense::Maximize,
                                    _ => Sense::Minimize,
                                };
                                let metric = self.ident(it.next().expect("metric"));
                                d.objective = Some(ObjectiveDecl {
                                    sense,
                                    metric,
                                    span: sspan,
                                });
                            }
                            Rule::evaluate_stmt => {
                                let st = s.into_inner().next().expect("evaluator string");
                                d.evaluator = Some((unescape(string_text(&st)), self.span(&st)));
                            }
                            r => unreachable!("grammar yields no problem statement {r:?}"),
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(d)
    }

    fn require(&self, p: P) -> R<Vec<ConstraintUse>> {
        p.into_inner().map(|q| self.constraint_use(q)).collect()
    }

    fn constraint_use(&self, p: P) -> R<ConstraintUse> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("constraint name"));
        // `near()` has an empty argument list; `near` has none at all.
        let has_parens = p_has_parens(span, &name, self.text);
        let args = match it.next() {
            Some(a) => Some(self.args(a)?),
            None if has_parens => Some(Vec::new()),
            None => None,
        };
        Ok(ConstraintUse { name, args, span })
    }

    fn test(&self, p: P) -> R<TestDecl> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let name_pair = it.next().expect("test name");
        let name_span = self.span(&name_pair);
        let name = unescape(string_text(&name_pair));
        let mut body = Vec::new();
        for q in it {
            let qspan = self.span(&q);
            body.push(match q.as_rule() {
                Rule::let_decl => TestStmt::Let(self.let_decl(q)?),
                Rule::partition_decl => TestStmt::Partition(self.partition(q)?),
                Rule::require_stmt => TestStmt::Require(self.require(q)?, qspan),
                Rule::place_stmt => {
                    let mut it = q.into_inner();
                    let graph = self.expr(it.next().expect("place graph"))?;
                    let package = self.expr(it.next().expect("place package"))?;
                    let mut entries = Vec::new();
                    for e in it {
                        let mut ei = e.into_inner();
                        let n = ei.next().expect("node name");
                        let node_span = self.span(&n);
                        let node = self.node_name(n);
                        let chip = self.expr(ei.next().expect("chip"))?;
                        entries.push(PlaceEntry { node, node_span, chip });
                    }
                    TestStmt::Place(PlaceStmt {
                        graph,
                        package,
                        entries,
                        span: qspan,
                    })
                }
                Rule::expect_stmt => {
                    let e = q.into_inner().next().expect("expectation");
                    let x = match e.as_rule() {
                        Rule::expect_valid => Expectation::Valid,
                        Rule::expect_unsat => Expectation::Unsatisfiable,
                        Rule::expect_sat => Expectation::Satisfiable,
                        _ => Expectation::Violates(e.into_inner().map(|c| self.constraint_use(c)).collect::<R<_>>()?),
                    };
                    TestStmt::Expect(x, qspan)
                }
                r => unreachable!("grammar yields no test statement {r:?}"),
            });
        }
        Ok(TestDecl {
            name,
            name_span,
            body,
            span,
        })
    }

    fn node_name(&self, p: P) -> String {
        let inner = p.into_inner().next().expect("node name");
        match inner.as_rule() {
            Rule::string => unescape(string_text(&inner)),
            _ => inner.as_str().to_string(),
        }
    }

    fn args(&self, p: P) -> R<Vec<Arg>> {
        p.into_inner()
            .map(|a| {
                let mut it = a.into_inner().peekable();
                let name = if it.peek().map(|q| q.as_rule()) == Some(Rule::ident) {
                    Some(self.ident(it.next().expect("argument name")))
                } else {
                    None
                };
                let value = self.expr(it.next().expect("argument value"))?;
                Ok(Arg { name, value })
            })
            .collect()
    }

    fn expr(&self, p: P) -> R<Expr> {
        let span = self.span(&p);
        match p.as_rule() {
            Rule::expr | Rule::agg_body => {
                // agg_body is a product: postfix followed by (op unary)*.
                if p.as_rule() == Rule::agg_body {
                    return self.left_assoc(p);
                }
                self.expr(p.into_inner().next().expect("expression"))
            }
            Rule::quantified => {
                let mut it = p.into_inner();
                let q = match it.next().expect("quantifier").as_str() {
                    "forall" => Quantifier::Forall,
                    _ => Quantifier::Exists,
                };
                let binders = self.binders(it.next().expect("binders"))?;
                let mut filter = None;
                let mut body = None;
                while let Some(n) = it.next() {
                    if n.as_rule() == Rule::kw_where {
                        filter = Some(Box::new(self.expr(it.next().expect("filter"))?));
                    } else {
                        body = Some(Box::new(self.expr(n)?));
                    }
                }
                Ok(Expr {
                    kind: ExprKind::Quant {
                        q,
                        binders,
                        filter,
                        body: body.expect("quantifier body"),
                    },
                    span,
                })
            }
            Rule::iff_expr | Rule::or_expr | Rule::and_expr | Rule::sum_expr | Rule::product => self.left_assoc(p),
            Rule::imp_expr => {
                let mut it = p.into_inner();
                let lhs = self.expr(it.next().expect("implication lhs"))?;
                match it.next() {
                    None => Ok(lhs),
                    Some(r) => {
                        let rhs = self.expr(r)?;
                        Ok(Expr {
                            kind: ExprKind::Binary(BinOp::Implies, Box::new(lhs), Box::new(rhs)),
                            span,
                        })
                    }
                }
            }
            Rule::not_expr => {
                let mut it = p.into_inner();
                let first = it.next().expect("not operand");
                if first.as_rule() == Rule::not_op {
                    let e = self.expr(it.next().expect("not operand"))?;
                    Ok(Expr {
                        kind: ExprKind::Unary(UnOp::Not, Box::new(e)),
                        span,
                    })
                } else {
                    self.expr(first)
                }
            }
            Rule::cmp_expr => self.left_assoc(p),
            Rule::unary => {
                let mut negs = 0;
                let mut inner = None;
                for q in p.into_inner() {
                    if q.as_rule() == Rule::neg_op {
                        negs += 1;
                    } else {
                        inner = Some(self.expr(q)?);
                    }
                }
                let mut e = inner.expect("unary operand");
                for _ in 0..negs {
                    e = Expr {
                        kind: ExprKind::Unary(UnOp::Neg, Box::new(e)),
                        span,
                    };
                }
                Ok(e)
            }
            Rule::postfix_expr => {
                let mut it = p.into_inner();
                let mut e = self.expr(it.next().expect("primary"))?;
                for q in it {
                    let qspan = self.span(&q);
                    let whole = e.span.to(qspan);
                    match q.as_rule() {
                        Rule::field => {
                            let f = self.ident(q.into_inner().next().expect("field name"));
                            e = Expr {
                                kind: ExprKind::Field(Box::new(e), f),
                                span: whole,
                            };
                        }
                        _ => {
                            let i = self.expr(q.into_inner().next().expect("index"))?;
                            e = Expr {
                                kind: ExprKind::Index(Box::new(e), Box::new(i)),
                                span: whole,
                            };
                        }
                    }
                }
                Ok(e)
            }
            Rule::aggregate => {
                let mut it = p.into_inner();
                let op = match it.next().expect("aggregate").as_str() {
                    "sum" => AggOp::Sum,
                    "count" => AggOp::Count,
                    "max" => AggOp::Max,
                    _ => AggOp::Min,
                };
                // (count_op and agg_op both yield the operator's text.)
                let binders = self.binders(it.next().expect("binders"))?;
                let mut filter = None;
                let mut body = None;
                while let Some(n) = it.next() {
                    match n.as_rule() {
                        Rule::kw_where => filter = Some(Box::new(self.expr(it.next().expect("filter"))?)),
                        _ => body = Some(Box::new(self.expr(n)?)),
                    }
                }
                Ok(Expr {
                    kind: ExprKind::Agg {
                        op,
                        binders,
                        filter,
                        body,
                    },
                    span,
                })
            }
            Rule::call => {
                let mut it = p.into_inner();
                let f = self.ident(it.next().expect("callee"));
                let args = it.next().map(|a| self.args(a)).transpose()?.unwrap_or_default();
                Ok(Expr {
                    kind: ExprKind::Call(f, args),
                    span,
                })
            }
            Rule::bool_lit => Ok(Expr {
                kind: ExprKind::Bool(p.as_str() == "true"),
                span,
            }),
            Rule::string => Ok(Expr {
                kind: ExprKind::Str(unescape(string_text(&p))),
                span,
            }),
            Rule::ident => Ok(Expr {
                kind: ExprKind::Var(p.as_str().to_string()),
                span,
            }),
            Rule::quantity => self.quantity(p),
            Rule::graph_lit => {
                let mut chains = Vec::new();
                for c in p.into_inner() {
                    let mut chain = Vec::new();
                    for n in c.into_inner() {
                        let mut it = n.into_inner();
                        let name_pair = it.next().expect("node name");
                        let nspan = self.span(&name_pair);
                        let name = self.node_name(name_pair);
                        let attrs = it.next().map(|a| self.attrs(a)).transpose()?.unwrap_or_default();
                        chain.push(GraphNode {
                            name,
                            span: nspan,
                            attrs,
                        });
                    }
                    chains.push(chain);
                }
                Ok(Expr {
                    kind: ExprKind::Graph(GraphLit { chains }),
                    span,
                })
            }
            r => unreachable!("grammar yields no expression {r:?}"),
        }
    }

    /// Folds `a op b op c` left to right; works for every binary level.
    fn left_assoc(&self, p: P) -> R<Expr> {
        let mut it = p.into_inner();
        let mut lhs = self.expr(it.next().expect("operand"))?;
        while let Some(op) = it.next() {
            let rhs = self.expr(it.next().expect("operand"))?;
            let op = match op.as_str().trim() {
                "+" => BinOp::Add,
                "-" => BinOp::Sub,
                "*" => BinOp::Mul,
                "/" => BinOp::Div,
                "%" => BinOp::Rem,
                "==" => BinOp::Eq,
                "!=" => BinOp::Ne,
                "<" => BinOp::Lt,
                "<=" => BinOp::Le,
                ">" => BinOp::Gt,
                ">=" => BinOp::Ge,
                "and" => BinOp::And,
                "or" => BinOp::Or,
                "<->" => BinOp::Iff,
                o => unreachable!("grammar yields no operator {o:?}"),
            };
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
        }
        Ok(lhs)
    }

    fn binders(&self, p: P) -> R<Vec<Binder>> {
        p.into_inner()
            .map(|b| {
                let span = self.span(&b);
                let mut it = b.into_inner();
                let pat = it.next().expect("pattern");
                let pattern = match pat.as_rule() {
                    Rule::tuple_pattern => {
                        let mut pi = pat.into_inner();
                        Pattern::Pair(
                            self.ident(pi.next().expect("first")),
                            self.ident(pi.next().expect("second")),
                        )
                    }
                    _ => Pattern::One(self.ident(pat)),
                };
                let _in = it.next();
                let dom = it.next().expect("domain").into_inner().next().expect("domain");
                let domain = match dom.as_rule() {
                    Rule::range => {
                        let (a, b) = self.range(dom)?;
                        Domain::Range(Box::new(a), Box::new(b))
                    }
                    _ => Domain::Named(self.ident(dom)),
                };
                Ok(Binder { pattern, domain, span })
            })
            .collect()
    }

    fn quantity(&self, p: P) -> R<Expr> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let num = it.next().expect("number");
        let digits: String = num.as_str().chars().filter(|c| *c != '_').collect();
        let is_int = !digits.contains(['.', 'e', 'E']);
        let bad = || {
            Diag::error(
                "mcm::number",
                format!("`{}` is not a number this tool can hold", num.as_str()),
            )
            .label(span, "out of range")
            .help("integers must fit in 64 bits; other numbers must lie within about 1e-300 and 1e300")
        };
        // A real that overflows to infinity, or underflows to 0 though it
        // has a non-zero digit, would be taken silently as inf or 0.
        let real = |v: f64| {
            let mantissa = digits.split(['e', 'E']).next().unwrap_or("");
            let nonzero = mantissa.chars().any(|c| c.is_ascii_digit() && c != '0');
            (v.is_finite() && (v != 0.0 || !nonzero)).then_some(v).ok_or_else(bad)
        };
        match it.next() {
            None if is_int => Ok(Expr {
                kind: ExprKind::Int(digits.parse().map_err(|_| bad())?),
                span,
            }),
            None => Ok(Expr {
                kind: ExprKind::Real(real(digits.parse().map_err(|_| bad())?)?),
                span,
            }),
            Some(u) => {
                let v: f64 = real(digits.parse().map_err(|_| bad())?)?;
                let (factor, dim) = quantity::unit(u.as_str()).ok_or_else(|| {
                    Diag::error("mcm::unit", format!("unknown unit `{}`", u.as_str()))
                        .label(self.span(&u), "not a unit")
                        .help(unit_help(u.as_str()))
                })?;
                Ok(Expr {
                    kind: ExprKind::Quantity(real(v * factor)?, dim),
                    span,
                })
            }
        }
    }
}

fn p_has_parens(span: Span, name: &Ident, text: &str) -> bool {
    text.get(name.span.end as usize..span.end as usize)
        .is_some_and(|rest| rest.trim_start().starts_with('('))
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
