//! `mcmpart fmt`: the one layout of an `.mcm` file. Works from the pest parse
//! tree (so it formats exactly what the language accepts) with the comments
//! read back from between its leaves, and never changes what a file means:
//! the tests check that a formatted file parses to the same syntax tree.

mod print;
mod tokens;

#[cfg(test)]
mod tests;

use crate::parse::{McmParser, Rule};
use mcm_core::diag::Diag;
use pest::Parser;

/// The formatted text of a source file, or its syntax errors.
pub fn format_source(text: &str) -> Result<String, Vec<Diag>> {
    // The parser's own checks (depth, size, syntax) and its diagnostics.
    crate::parse::parse_module(0, text)?;
    let mut pairs = McmParser::parse(Rule::file, text).map_err(|_| Vec::new())?;
    let file = pairs.next().ok_or_else(Vec::new)?;
    let mut lexer = tokens::Lexer::new(text);
    lexer.walk(file);
    Ok(print::print(&lexer.toks))
}
