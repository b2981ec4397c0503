//! mcmpart: places machine-learning graphs on multi-chip packages.
//!
//! The workspace follows the pipeline a problem travels through:
//! `mcm-core` (quantities, spans, graph, package, the grounded problem) →
//! `mcm-lang` (parse, resolve, types and units, ground) → `mcm-solver`
//! (propagators, engine, SAT backing, checker) → `mcm-search` (cost models,
//! strategies, the learned policy). This crate is the last stage: the
//! command line ([`cli`]), the experiments it runs ([`experiment`]), the
//! one error type of both ([`error`]) and the runner of `test` blocks
//! ([`testing`]). It re-exports the stages so that a
//! user of the library needs one dependency.

pub mod cli;
pub mod error;
pub mod experiment;
pub mod lsp;
pub mod testing;

pub use mcm_core::{diag, digest, graph, package, problem, quantity, source, textfile, WORKER_STACK};
pub use mcm_lang as lang;
pub use mcm_search::{baseline, cost, placers, policy, pretrain, strategy};
pub use mcm_solver as solver;
