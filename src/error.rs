//! The one error type of the command line and of the experiments it runs:
//! a kind (which decides the exit status), a message and a help line, and,
//! for errors that point into source files, the report already rendered.
//! How an error is printed (text or `--json`) is decided in one place,
//! `cli::Output::finish`; the exit statuses here.

use crate::diag::{render_text, to_json, Diag};
use crate::lang::Compiled;
use crate::problem::Problem;
use crate::solver::Infeasible;
use crate::source::SourceMap;

/// What went wrong, as far as the exit status is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A flag or value the command cannot mean (an unknown strategy,
    /// contradictory flags), found before anything runs.
    Usage,
    /// An input that cannot be used: a file that does not compile or read,
    /// a partition that does not fit its problem, a broken data set.
    Input,
    /// The problem has no valid partition.
    Infeasible,
    /// A search that found no valid partition, or a strategy or training
    /// that failed part-way.
    Search,
    /// A result that cannot be written.
    Output,
    /// Stopped by Ctrl-C before anything could be kept.
    Interrupted,
    /// No valid partition was found within `--time`: not a proof that none
    /// exists (that is `Infeasible`).
    Timeout,
    /// A bug of ours (the solver handed out an invalid partition).
    Internal,
}

impl Kind {
    /// The exit status of a command that failed so (see the book's
    /// command-line reference).
    pub fn exit_code(self) -> i32 {
        match self {
            Kind::Usage => 2,
            Kind::Timeout => 3,
            Kind::Interrupted => 130,
            Kind::Input | Kind::Infeasible | Kind::Search | Kind::Output | Kind::Internal => 1,
        }
    }
}

/// How a command that ran to its end came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Success,
    /// The answer is no, and the report says why: an invalid partition, a
    /// failed test, a benchmark with invalid partitions.
    Failure,
    /// A search stopped by Ctrl-C, whose best so far is kept.
    Interrupted,
}

impl Status {
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Success => 0,
            Status::Failure => 1,
            Status::Interrupted => 130,
        }
    }

    /// Success when `ok`, else failure.
    pub fn of(ok: bool) -> Status {
        if ok {
            Status::Success
        } else {
            Status::Failure
        }
    }
}

/// What a command returns.
pub type Result<T = Status> = std::result::Result<T, Error>;

/// An error of the command line.
#[derive(Clone, Debug)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
    pub help: Option<String>,
    /// A report richer than the message, rendered while its sources were
    /// at hand.
    pub report: Report,
}

/// What an error prints besides (or instead of) its message.
#[derive(Clone, Debug)]
pub enum Report {
    /// `error: MESSAGE` and `  help: HELP`; JSON `{"ok": false, "error", "help"}`.
    Plain,
    /// Diagnostics of source files: text rendered with the lines they
    /// point at, and their JSON form.
    Diagnostics {
        text: String,
        json: serde_json::Value,
        errors: usize,
    },
    /// No valid partition: the conflicting rules, rendered at their
    /// declarations, and their names for JSON.
    Infeasible { text: String, constraints: Vec<String> },
}

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            help: None,
            report: Report::Plain,
        }
    }

    /// What the command line prints for this error on stderr (without
    /// `--json`): the rendered diagnostics, or `error:` and `help:` lines.
    /// The Python package raises it as the text of its exception.
    pub fn text(&self) -> String {
        match &self.report {
            Report::Plain => match &self.help {
                Some(h) => format!("error: {}\n  help: {h}\n", self.message),
                None => format!("error: {}\n", self.message),
            },
            Report::Diagnostics { text, errors, .. } => format!("{text}error: {errors} error(s)\n"),
            Report::Infeasible { text, .. } => text.clone(),
        }
    }

    pub fn usage(message: impl Into<String>) -> Error {
        Error::new(Kind::Usage, message)
    }

    pub fn input(message: impl Into<String>) -> Error {
        Error::new(Kind::Input, message)
    }

    pub fn output(message: impl Into<String>) -> Error {
        Error::new(Kind::Output, message)
    }

    pub fn search(message: impl Into<String>) -> Error {
        Error::new(Kind::Search, message)
    }

    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(Kind::Internal, message)
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Error {
        self.help = Some(help.into());
        self
    }

    pub fn with_help_opt(mut self, help: Option<String>) -> Error {
        self.help = help;
        self
    }

    /// The diagnostics of a program that does not compile.
    pub fn diagnostics(c: &Compiled) -> Error {
        Error::source_diagnostics(&c.program.sources, &c.diags)
    }

    /// Diagnostics into the files of `sources`.
    pub fn source_diagnostics(sources: &SourceMap, diags: &[Diag]) -> Error {
        let errors = diags.iter().filter(|d| !d.warning).count();
        Error {
            report: Report::Diagnostics {
                text: render_text(sources, diags),
                json: to_json(sources, diags),
                errors,
            },
            ..Error::input(format!("{errors} error(s)"))
        }
    }

    /// `problem` has no valid partition: `inf` names the rules in conflict.
    pub fn infeasible(problem: &Problem, inf: &Infeasible, sources: &SourceMap) -> Error {
        let names = conflicting(problem, inf);
        let message = match names.as_slice() {
            [] => format!("problem `{}` has no valid partition", problem.name),
            [one] => format!(
                "problem `{}` has no valid partition: nothing satisfies `{one}`",
                problem.name
            ),
            many => format!(
                "problem `{}` has no valid partition: {} conflict",
                problem.name,
                many.join(", ")
            ),
        };
        let help = match memory_over_total(problem, inf) {
            Some(why) => format!("{why}: give the package more memory or more chips"),
            None => "relax one of these rules, or give the package more room".to_string(),
        };
        let mut d = Diag::error("mcm::infeasible", message.clone()).help(help);
        for &i in &inf.constraints {
            let c = &problem.constraints[i];
            d = d
                .label(c.use_span, format!("`{}` required here", c.display_name()))
                .label(c.decl_span, format!("`{}` declared here", c.name));
        }
        Error {
            report: Report::Infeasible {
                text: render_text(sources, &[d]),
                constraints: names,
            },
            ..Error::new(Kind::Infeasible, message)
        }
    }

    pub fn exit_code(&self) -> i32 {
        self.kind.exit_code()
    }
}

/// Why `memory_capacity` alone refuses every partition, when the graph's
/// weights outweigh all the chips' memories together (the solver then
/// fails at the root without asking SAT which rules conflict).
pub fn memory_over_total(problem: &Problem, inf: &Infeasible) -> Option<String> {
    use crate::quantity::{format_quantity, Dim};
    let [k] = inf.constraints[..] else { return None };
    if problem.constraints.get(k)?.native.as_deref() != Some("memory_capacity") {
        return None;
    }
    let (g, p) = (&problem.graph, &problem.package);
    let weights: f64 = (0..g.num_placed() as u32).map(|u| g.placed_node(u).params as f64).sum();
    let memory: f64 = (0..p.num_chips() as u32).map(|c| p.memory_or_unlimited(c)).sum();
    (weights > memory).then(|| {
        format!(
            "the graph's weights total {}, more than the {} chips' memories together ({})",
            format_quantity(weights, Dim::BYTES),
            p.num_chips(),
            format_quantity(memory, Dim::BYTES)
        )
    })
}

/// The names of the rules `inf` says conflict, as `check` prints them.
pub fn conflicting(problem: &Problem, inf: &Infeasible) -> Vec<String> {
    inf.constraints
        .iter()
        .map(|&i| problem.constraints[i].display_name())
        .collect()
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Inputs that cannot be used: a partition file that does not fit, a
/// problem the cost model cannot judge, a graph file that does not load.
macro_rules! input_errors {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::input(e.message).with_help_opt(e.help)
            }
        }
    )*};
}
input_errors!(
    crate::problem::PartitionError,
    crate::cost::CostError,
    crate::graph::GraphError
);

/// The exit status of a command's result.
pub fn exit_code(r: &Result) -> i32 {
    match r {
        Ok(s) => s.exit_code(),
        Err(e) => e.exit_code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_kind() {
        assert_eq!(exit_code(&Err(Error::usage("x"))), 2);
        for k in [
            Kind::Input,
            Kind::Infeasible,
            Kind::Search,
            Kind::Output,
            Kind::Internal,
        ] {
            assert_eq!(exit_code(&Err(Error::new(k, "x"))), 1, "{k:?}");
        }
        assert_eq!(exit_code(&Err(Error::new(Kind::Interrupted, "x"))), 130);
        assert_eq!(exit_code(&Err(Error::new(Kind::Timeout, "x"))), 3);
        assert_eq!(exit_code(&Ok(Status::Success)), 0);
        assert_eq!(exit_code(&Ok(Status::Failure)), 1);
        assert_eq!(exit_code(&Ok(Status::Interrupted)), 130);
    }
}
