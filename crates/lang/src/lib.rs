//! The language front end: parse, resolve, check types and units, evaluate,
//! and ground constraints over a concrete graph and package.

pub mod ast;
mod builtins;
pub mod eval;
pub mod format;
pub mod ide;
pub mod loader;
pub mod parse;
pub mod stricter;
pub mod types;

#[cfg(test)]
mod tests;

use ast::*;
use eval::problem::{build_problem, build_test};
use eval::Interpreter;
use loader::Program;
use mcm_core::diag::{unknown_help, Diag};
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{GroundConstraint, Placement, Problem};
use mcm_core::source::Span;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a test block asks.
#[derive(Clone, Debug)]
pub enum TestQuestion {
    /// `place g onto t { ... }`: judge this placement.
    Place(Placement),
    /// `partition g onto t`: does a valid placement exist?
    Partition,
}

/// A constraint named on an `expect violates` line, with its arguments if given.
#[derive(Clone, Debug)]
pub struct ExpectedViolation {
    pub name: String,
    pub args: Option<Vec<(String, mcm_core::quantity::Scalar)>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum Expect {
    Valid,
    Violates(Vec<ExpectedViolation>),
    Satisfiable,
    Unsatisfiable,
}

/// A test block, ready to run.
#[derive(Clone, Debug)]
pub struct TestCase {
    pub name: String,
    pub span: Span,
    pub graph: Arc<Graph>,
    pub package: Arc<Package>,
    pub question: TestQuestion,
    /// The constraints the test checks: its `require` lines (or every
    /// parameterless constraint in scope), plus those it expects broken.
    pub constraints: Vec<GroundConstraint>,
    pub expect: Expect,
    pub expect_span: Span,
}

/// The result of compiling a file: everything that could be built, and
/// every diagnostic found on the way.
pub struct Compiled {
    pub program: Program,
    pub problems: Vec<Problem>,
    pub tests: Vec<TestCase>,
    pub diags: Vec<Diag>,
    /// Graph files the program loaded (its source files are in
    /// `program.sources`).
    pub graph_files: Vec<PathBuf>,
    /// The packages the file's top-level `let`s name, in order.
    pub packages: Vec<(String, Arc<Package>)>,
    /// What type checking learnt (the types of `let`s, for an editor).
    pub types: types::TypeInfo,
}

impl Compiled {
    /// Every file read to build the problems: sources and graphs.
    pub fn inputs(&self) -> Vec<PathBuf> {
        let sources = self.program.sources.files().iter().filter_map(|f| f.path.clone());
        sources.chain(self.graph_files.iter().cloned()).collect()
    }

    pub fn ok(&self) -> bool {
        self.diags.iter().all(|d| d.warning)
    }

    /// The package to show: the `let` called `name`, or else the package of
    /// the only problem, or else the only package a `let` names.
    pub fn package(&self, name: Option<&str>) -> Result<Arc<Package>, String> {
        let lets = || self.packages.iter().map(|(n, _)| n.as_str());
        if let Some(n) = name {
            return self
                .packages
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, p)| p.clone())
                .ok_or_else(|| format!("no `let {n} = ...` package; {}", unknown_help(n, "package", lets())));
        }
        if self.problems.len() == 1 {
            return Ok(self.problems[0].package.clone());
        }
        match self.packages.as_slice() {
            [(_, p)] => Ok(p.clone()),
            [] => Err("the file names no package: no `let NAME = TOPOLOGY(...)` and no problem".into()),
            _ => Err(format!(
                "the file names {} packages ({}); pick one with --package",
                self.packages.len(),
                lets().collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// The problem called `name`, or the only one when `name` is `None`.
    pub fn problem(&self, name: Option<&str>) -> Result<&Problem, String> {
        match name {
            Some(n) => self.problems.iter().find(|p| p.name == n).ok_or_else(|| {
                format!(
                    "no problem named `{n}`; {}",
                    unknown_help(n, "problem", self.problems.iter().map(|p| p.name.as_str()))
                )
            }),
            None => match self.problems.len() {
                0 => Err("the file declares no `partition ... onto ...` problem".into()),
                1 => Ok(&self.problems[0]),
                _ => {
                    let names: Vec<&str> = self.problems.iter().map(|p| p.name.as_str()).collect();
                    Err(format!(
                        "the file declares {} problems ({}); pick one with --problem",
                        names.len(),
                        names.join(", ")
                    ))
                }
            },
        }
    }
}

/// Compiles a file and everything it imports.
pub fn compile_file(path: &Path) -> Compiled {
    let (program, diags) = loader::load_file(path);
    compile(program, diags, None)
}

/// Compiles a file with `graph` in place of the graph of each of its
/// `partition ... onto ...` problems (the package, the rules and the
/// objective stay the file's): one problem applied to other graphs, as
/// `mcmpart compare --graphs` does. The problem's graph expression is not
/// evaluated (a `let` it names still is, as every `let`); `test` blocks keep
/// their graphs.
pub fn compile_file_with_graph(path: &Path, graph: Arc<Graph>) -> Compiled {
    let (program, diags) = loader::load_file(path);
    compile(program, diags, Some(graph))
}

/// Compiles source text; relative paths resolve against `dir`.
pub fn compile_str(name: &str, text: &str, dir: &Path) -> Compiled {
    let (program, diags) = loader::load_str(name, text, dir);
    compile(program, diags, None)
}

/// [`compile_str`] with `graph` in place of each problem's graph (see
/// [`compile_file_with_graph`]).
pub fn compile_str_with_graph(name: &str, text: &str, dir: &Path, graph: Arc<Graph>) -> Compiled {
    let (program, diags) = loader::load_str(name, text, dir);
    compile(program, diags, Some(graph))
}

fn compile(program: Program, diags: Vec<Diag>, graph: Option<Arc<Graph>>) -> Compiled {
    compile_with_step_limit(program, diags, graph, eval::MAX_STEPS)
}

/// [`compile`] with another step budget for each unit of work (a `let`, a
/// problem, a test, a required rule): tests reach it in a few steps.
fn compile_with_step_limit(
    program: Program,
    mut diags: Vec<Diag>,
    graph: Option<Arc<Graph>>,
    max_steps: u64,
) -> Compiled {
    let (type_diags, types) = types::check_program(&program);
    diags.extend(type_diags);
    let mut problems = Vec::new();
    let mut tests = Vec::new();
    let mut graph_files = Vec::new();
    let mut packages = Vec::new();
    if diags.is_empty() && !program.modules.is_empty() {
        let mut ev = Interpreter::with_step_limit(&program, &types, max_steps);
        let mut names: Vec<(String, Span)> = Vec::new();
        let mut test_names: Vec<(&str, Span)> = Vec::new();
        for (i, item) in program.modules[0].ast.items.iter().enumerate() {
            match item {
                Item::Let(l) => {
                    // Evaluate every let, used or not, so that its errors show.
                    match ev.let_value(loader::ItemRef { module: 0, index: i }) {
                        Ok(eval::Value::Package(p)) => packages.push((l.name.name.clone(), p)),
                        Ok(_) => {}
                        Err(d) => diags.push(d),
                    }
                }
                Item::Partition(p) => {
                    match ev.own_steps(|ev| build_problem(&program, ev, p, problems.len(), graph.as_ref())) {
                        Ok(prob) => {
                            if let Some((_, first)) = names.iter().find(|(n, _)| *n == prob.name) {
                                diags.push(
                                    Diag::error("mcm::duplicate", format!("two problems are named `{}`", prob.name))
                                        .label(p.span, "second problem")
                                        .label(*first, "first problem")
                                        .help("name them apart: `partition g onto t as NAME { ... }`"),
                                );
                            }
                            names.push((prob.name.clone(), p.span));
                            problems.push(prob);
                        }
                        Err(d) => diags.extend(d),
                    }
                }
                Item::Test(t) => {
                    // Results are reported by name: two tests may not share one.
                    if let Some((_, first)) = test_names.iter().find(|(n, _)| *n == t.name) {
                        diags.push(
                            Diag::error("mcm::duplicate", format!("two tests are named \"{}\"", t.name))
                                .label(t.name_span, "second test")
                                .label(*first, "first test")
                                .help("give each test its own name"),
                        );
                        continue;
                    }
                    test_names.push((&t.name, t.name_span));
                    match ev.own_steps(|ev| build_test(&program, ev, t)) {
                        Ok(tc) => tests.push(tc),
                        Err(d) => diags.extend(d),
                    }
                }
                _ => {}
            }
        }
        graph_files = ev.graph_files();
    }
    diags.retain(|d| d.code != eval::REPORTED);
    Compiled {
        program,
        problems,
        tests,
        diags,
        graph_files,
        packages,
        types,
    }
}
