//! Syntax errors: what pest expected, said in words, and unknown units told
//! apart from other syntax errors.

use super::Rule;
use mcm_core::diag::Diag;
use mcm_core::source::{FileId, Span};

pub(super) fn syntax_diag(file: FileId, text: &str, e: pest::error::Error<Rule>, base: usize) -> Diag {
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
/// A rate written the usual way elsewhere (`TFLOPS`, `GBps`, `GB/sec`) is
/// the unit with `/s`.
pub(super) fn unit_help(word: &str) -> String {
    let names = mcm_core::quantity::unit_names();
    let rate = ["/sec", "ps", "PS", "S"]
        .iter()
        .filter_map(|suffix| word.strip_suffix(suffix))
        .map(|base| format!("{base}/s"))
        .find(|r| names.contains(r));
    if let Some(r) = rate {
        return format!("a rate is written with `/s`: `{r}`. The units are {}", names.join(" "));
    }
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
        Rule::expr | Rule::arith_expr | Rule::unary => "an expression",
        // Tried where an operand of `and`, `or`, `->` or `<->` starts, with `unary`.
        Rule::not_op => "an expression",
        Rule::postfix_expr | Rule::quantity | Rule::number => "an expression",
        Rule::string => "a string",
        Rule::use_decl | Rule::let_decl | Rule::topology_decl | Rule::constraint_decl => "an item",
        Rule::partition_decl | Rule::test_decl => "an item",
        Rule::EOI => "the end of the file",
        Rule::cmp_op => "a comparison",
        // `->` is tried next to `and` and `or`.
        Rule::add_op | Rule::mul_op | Rule::imp_op => "an operator",
        Rule::kw_and | Rule::kw_or => "an operator",
        Rule::kw_in => "`in`",
        // The whole-word looks that begin statements stand for them.
        Rule::w_use | Rule::w_let | Rule::w_topology | Rule::w_constraint | Rule::w_partition | Rule::w_test => {
            "an item"
        }
        Rule::w_include | Rule::w_chips | Rule::w_set | Rule::w_link | Rule::w_for | Rule::w_if => {
            "a topology statement"
        }
        Rule::w_require | Rule::w_sense | Rule::w_evaluate => "a problem statement",
        Rule::w_place | Rule::w_expect => "a test statement",
        Rule::w_expectation => "`valid`, `violates`, `satisfiable` or `unsatisfiable`",
        Rule::w_else => "`else`",
        Rule::w_onto => "`onto`",
        Rule::w_as => "`as`",
        Rule::w_with => "`with`",
        Rule::kw_where => "`where`",
        Rule::attrs => "`{ attribute = value, ... }`",
        Rule::attr => "`attribute = value`",
        Rule::params | Rule::param => "a parameter `name: type`",
        Rule::args | Rule::arg => "an argument",
        Rule::include_stmt | Rule::chips_stmt | Rule::set_stmt | Rule::link_stmt | Rule::for_stmt | Rule::if_stmt => {
            "a topology statement"
        }
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
