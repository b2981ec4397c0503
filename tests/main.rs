//! The root package's integration tests, one binary (candle is linked
//! once): each module is one topic, driving the `mcmpart` binary or what
//! only this package has (the command line, the language server, the book,
//! the test-block runner, the experiments). Each crate below holds the tests
//! of its own library (crates/*/tests).

mod common;

mod book;
mod bounds_dataset;
mod cli;
mod cli_solve;
mod compare;
mod convention;
mod deadline;
mod editors;
mod errors_cli;
mod evaluators;
mod fmt;
mod fuzz_run;
mod import;
mod lsp;
mod lsp_fuzz;
mod memory;
mod placeto_hdp;
mod profiled_eval;
mod rl;
mod semantics;
mod show;
mod solve_auto;
mod spec;
mod step_time;
mod train_placers;
