//! mcmpart's shared models, used by every stage of the pipeline: quantities
//! with units, source spans and diagnostics, the graph and package models,
//! the grounded problem and partition files, the one checksum, and reading
//! maybe-gzipped text files.

pub mod diag;
pub mod digest;
pub mod graph;
pub mod latency;
pub mod op_time;
pub mod package;
pub mod problem;
pub mod quantity;
pub mod source;
pub mod step_time;
pub mod textfile;

/// The stack of every thread that searches, trains or judges: a deep but
/// legal rule recurses there (a 20,000-term sum overflowed 2 MiB threads).
pub const WORKER_STACK: usize = 64 << 20;
