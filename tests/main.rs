//! The integration tests, one binary (candle is linked once): each module
//! is one topic, driving the library or the `mcmpart` binary.

mod common;

mod book;
mod bounds;
mod cli;
mod cli_solve;
mod compare;
mod convention;
mod cost;
mod dataset;
mod deadline;
mod editors;
mod errors;
mod evaluators;
mod exact;
mod fmt;
mod fuzz;
mod lns;
mod lsp;
mod lsp_fuzz;
mod memory;
mod onnx;
mod property;
mod rl;
mod rollouts;
mod sat;
mod semantics;
mod show;
mod solver;
mod spec;
mod step_time;
mod strategies;
