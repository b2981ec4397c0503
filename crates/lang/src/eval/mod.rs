//! Evaluation and grounding. One interpreter serves both: over static
//! values it computes (lets, topologies, graph literals, arguments); where a
//! value depends on `chip(u)` it builds the formula instead, so a constraint
//! body grounded over a graph and a package folds to formulas over `chip(u)`
//! only. Split by topic: values, operators, expressions, quantifiers and
//! aggregates, topologies, graphs, grounding, and problems and tests.

mod expr;
mod graph;
mod ground;
mod native;
mod ops;
pub(crate) mod problem;
mod quant;
mod topology;
mod value;

#[cfg(test)]
mod tests;

pub use graph::name_graph;
pub use value::Value;
pub(crate) use value::{is_int, term, G};

use crate::ast::*;
use crate::loader::{ItemRef, Program};
use mcm_core::diag::Diag;
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::source::Span;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The most chips a package may have: far beyond any package of this field,
/// and few enough that the tables of C² entries (fewest hops, the cost
/// model's routes) stay within memory.
const MAX_CHIPS: i64 = 4096;
/// The most evaluation steps (bindings, loop turns, chips and links) of one
/// unit of work: a top-level `let`, a problem or test, and within them each
/// required rule. Each has a budget of its own, so that a slow rule fails
/// alone and not the problems after it.
pub(crate) const MAX_STEPS: u64 = 50_000_000;

/// The most bindings one `forall`, `exists` or aggregate enumerates (and
/// the longest range): each is held at once, a few hundred bytes, so this
/// stays near a gigabyte; a rule over every pair of nodes of a 2,000-node
/// graph fits.
const MAX_BINDINGS: usize = 4_000_000;

pub(crate) type R<T> = Result<T, Diag>;

/// The code of an error that stands for one already reported (a failed
/// `let` used again); the front end drops these.
pub const REPORTED: &str = "mcm::reported";

pub(crate) fn rt(span: Span, msg: impl Into<String>) -> Diag {
    Diag::error("mcm::eval", msg).label(span, "here")
}

/// The graph and package a constraint is grounded over.
#[derive(Clone)]
pub(crate) struct World {
    pub(crate) graph: Arc<Graph>,
    pub(crate) package: Arc<Package>,
}

/// Evaluates and grounds the program's expressions (a problem's external
/// evaluator, which judges finished partitions, is `mcm_core::problem::Evaluator`).
pub struct Interpreter<'p> {
    prog: &'p Program,
    types: &'p crate::types::TypeInfo,
    module: usize,
    locals: Vec<(String, Value)>,
    /// Evaluated lets; `None` for one whose error was already reported.
    lets: HashMap<ItemRef, Option<Value>>,
    graphs: HashMap<PathBuf, Arc<Graph>>,
    world: Option<World>,
    /// Steps taken by the current unit of work (see [`MAX_STEPS`]).
    steps: u64,
    max_steps: u64,
    /// Topologies being instantiated, to refuse one that builds itself.
    building: Vec<String>,
}

impl<'p> Interpreter<'p> {
    pub fn new(prog: &'p Program, types: &'p crate::types::TypeInfo) -> Interpreter<'p> {
        Self::with_step_limit(prog, types, MAX_STEPS)
    }

    /// An interpreter whose units of work may take `max_steps` steps each.
    pub(crate) fn with_step_limit(
        prog: &'p Program,
        types: &'p crate::types::TypeInfo,
        max_steps: u64,
    ) -> Interpreter<'p> {
        Interpreter {
            prog,
            types,
            module: 0,
            locals: Vec::new(),
            lets: HashMap::new(),
            graphs: HashMap::new(),
            world: None,
            steps: 0,
            max_steps,
            building: Vec::new(),
        }
    }

    /// The graph files loaded so far.
    pub fn graph_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self.graphs.keys().cloned().collect();
        files.sort();
        files
    }

    /// Evaluates a static expression in a module, with extra local bindings.
    pub fn value(&mut self, module: usize, locals: &[(String, Value)], e: &Expr) -> R<Value> {
        let saved = (
            self.module,
            std::mem::replace(&mut self.locals, locals.to_vec()),
            self.world.take(),
        );
        self.module = module;
        let r = self.eval(e).and_then(|g| match g {
            G::V(v) => Ok(v),
            _ => Err(rt(e.span, "this value depends on a placement")),
        });
        (self.module, self.locals, self.world) = saved;
        r
    }

    /// The value of a top-level `let`, evaluated once.
    pub fn let_value(&mut self, r: ItemRef) -> R<Value> {
        match self.lets.get(&r) {
            Some(Some(v)) => return Ok(v.clone()),
            Some(None) => return Err(Diag::error(REPORTED, "")),
            None => {}
        }
        let Item::Let(l) = self.prog.item(r) else {
            return Err(Diag::error("mcm::eval", "not a value"));
        };
        match self.own_steps(|ev| ev.value(r.module, &[], &l.value)) {
            Ok(v) => {
                let v = name_graph(v, &l.value, &l.name.name);
                self.lets.insert(r, Some(v.clone()));
                Ok(v)
            }
            Err(d) => {
                self.lets.insert(r, None);
                Err(d)
            }
        }
    }

    pub(crate) fn world(&self, span: Span) -> R<&World> {
        self.world
            .as_ref()
            .ok_or_else(|| rt(span, "this needs a graph and a package: use it inside a constraint"))
    }

    /// Runs one unit of work with a step budget of its own; the steps of
    /// the unit around it are where they were afterwards.
    pub(crate) fn own_steps<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let outer = std::mem::take(&mut self.steps);
        let r = f(self);
        self.steps = outer;
        r
    }

    fn step(&mut self, span: Span) -> R<()> {
        self.steps += 1;
        if self.steps > self.max_steps {
            return Err(rt(span, "evaluation took too many steps")
                .help("a topology or formula this large is probably a mistake in its loops"));
        }
        Ok(())
    }
}
