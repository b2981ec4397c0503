//! The editor support outside Rust (the VS Code extension, the book's
//! highlighting) knows every keyword and unit of the grammar.

use crate::common;

fn read(p: &str) -> String {
    std::fs::read_to_string(common::root().join(p)).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// The quoted words of a rule of `grammar/mcm.pest`.
fn rule_words(rule: &str) -> Vec<String> {
    let g = read("grammar/mcm.pest");
    let start = g.find(&format!("\n{rule} = ")).unwrap_or_else(|| panic!("rule {rule}"));
    // To the line that closes the rule.
    let mut text = String::new();
    for line in g[start + 1..].lines() {
        text.push_str(line);
        if line.trim_end().ends_with('}') {
            break;
        }
    }
    text.split('"').skip(1).step_by(2).map(String::from).collect()
}

/// Whether `word` is one alternative of a regular expression in `text`.
fn alternative(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        matches!(before, Some('(' | '|' | ':')) && matches!(after, Some('|' | ')'))
    })
}

#[test]
fn the_vscode_extension_is_well_formed_and_knows_the_grammar() {
    let pkg: serde_json::Value = serde_json::from_str(&read("editors/vscode/package.json")).unwrap();
    assert_eq!(pkg["contributes"]["languages"][0]["extensions"][0], ".mcm");
    assert_eq!(pkg["main"], "./extension.js");
    let client = read("editors/vscode/extension.js");
    assert!(client.contains(r#"args: ["lsp"]"#));
    let _: serde_json::Value = serde_json::from_str(&read("editors/vscode/language-configuration.json")).unwrap();
    let tm = read("editors/vscode/syntaxes/mcm.tmLanguage.json");
    let _: serde_json::Value = serde_json::from_str(&tm).unwrap();
    let js = read("book/src/mcm-highlight.js");
    let keywords = rule_words("keyword");
    assert!(keywords.len() >= 10, "{keywords:?}");
    // The words that begin statements (`w_let`, `w_include`, ...) too.
    let grammar = read("grammar/mcm.pest");
    let statement_words: Vec<String> = grammar
        .lines()
        .filter_map(|l| {
            l.strip_prefix("w_")?
                .split_once(' ')
                .map(|(name, _)| format!("w_{name}"))
        })
        .flat_map(|rule| rule_words(&rule))
        .collect();
    assert!(statement_words.iter().any(|w| w == "include"), "{statement_words:?}");
    for k in keywords
        .iter()
        .chain(&rule_words("objective_sense"))
        .chain(&statement_words)
    {
        assert!(alternative(&tm, k), "the TextMate grammar lacks `{k}`");
        assert!(js.contains(k.as_str()), "the book's highlighting lacks `{k}`");
    }
    for u in rule_words("unit").iter().filter(|u| *u != "/s") {
        assert!(alternative(&tm, u), "the TextMate grammar lacks the unit `{u}`");
        assert!(alternative(&js, u), "the book's highlighting lacks the unit `{u}`");
    }
    assert!(read("book/book.toml").contains("mcm-highlight.js"));
    assert!(read("book/src/SUMMARY.md").contains("(editors.md)"));
}
