//! Where results and errors go: text for people (results on stdout,
//! diagnostics on stderr) or one JSON document on stdout (`--json`). The
//! one place that turns a command's result into output and an exit status.

use crate::error::{exit_code, Error, Kind, Report, Result};
use crate::lang::{compile_file, Compiled};
use crate::strategy::Budget;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

pub struct Output {
    pub json: bool,
}

impl Output {
    /// Prints a command's JSON. Every object a command prints says `ok`:
    /// one that does not set it is a report made without error.
    pub fn print_json(&self, v: &serde_json::Value) {
        let mut v = v.clone();
        if let serde_json::Value::Object(m) = &mut v {
            m.entry("ok").or_insert(serde_json::Value::Bool(true));
        }
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    }

    /// Prints the error, if the command ended in one, and gives the exit status.
    pub fn finish(&self, result: Result) -> i32 {
        if let Err(e) = &result {
            self.error(e);
        }
        exit_code(&result)
    }

    /// An error: in text on stderr, or as JSON on stdout.
    pub fn error(&self, e: &Error) {
        match (&e.report, self.json) {
            (Report::Plain, true) if e.kind == Kind::Timeout => self
                .print_json(&serde_json::json!({"ok": false, "timed_out": true, "error": e.message, "help": e.help})),
            (Report::Plain, true) => {
                self.print_json(&serde_json::json!({"ok": false, "error": e.message, "help": e.help}))
            }
            (_, false) => eprint!("{}", e.text()),
            (Report::Diagnostics { json, .. }, true) => {
                self.print_json(&serde_json::json!({"ok": false, "diagnostics": json}))
            }
            (Report::Infeasible { constraints, .. }, true) => self.print_json(
                &serde_json::json!({"ok": false, "infeasible": true, "error": e.message, "constraints": constraints}),
            ),
        }
    }
}

/// Compiles a file: its diagnostics are the error when it does not compile.
pub fn compile(file: &Path) -> Result<Compiled> {
    let c = compile_file(file);
    if c.ok() {
        Ok(c)
    } else {
        Err(Error::diagnostics(&c))
    }
}

/// Refuses a `dest` the command is about to write that is one of the files
/// it read (however spelled). `what` finishes "which ...".
pub fn refuse_overwriting(dest: &Path, inputs: &[PathBuf], what: &str) -> Result<()> {
    let Ok(d) = std::fs::canonicalize(dest) else {
        return Ok(());
    };
    let Some(input) = inputs.iter().find(|i| std::fs::canonicalize(i).is_ok_and(|i| i == d)) else {
        return Ok(());
    };
    Err(Error::input(format!(
        "`{}` is `{}`, which {what}: writing there would replace it",
        dest.display(),
        input.display()
    ))
    .with_help("name another output file"))
}

/// A progress bar on a terminal (none with `--json`, or into a log file).
pub fn progress_bar(out: &Output, budget: Budget) -> Option<indicatif::ProgressBar> {
    if out.json || !std::io::stderr().is_terminal() {
        return None;
    }
    let (len, unit) = match budget {
        Budget::Samples(n) => (n as u64, "samples"),
        Budget::Seconds(t) => ((t * 10.0) as u64, "ds"),
    };
    let bar = indicatif::ProgressBar::new(len);
    let style = indicatif::ProgressStyle::with_template(&format!(
        "{{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {unit} {{msg}}"
    ))
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
}
