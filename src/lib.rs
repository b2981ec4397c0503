//! mcmpart: places machine-learning graphs on multi-chip packages.
//!
//! The crate follows the pipeline a problem travels through:
//! [`lang`] (parse, resolve, types and units, ground) → [`problem`] (the
//! grounded model) → [`solver`] (checker, search) ; with the [`graph`] and
//! [`package`] models beside it, [`testing`] for test blocks, and [`cli`].

pub mod cli;
pub mod cost;
pub mod digest;
pub mod graph;
pub mod lang;
pub mod package;
pub mod policy;
pub mod problem;
pub mod quantity;
pub mod solver;
pub mod strategy;
pub mod testing;
pub mod textfile;

/// The stack of every thread that searches, trains or judges: a deep but
/// legal rule recurses there (a 20,000-term sum overflowed 2 MiB threads).
pub const WORKER_STACK: usize = 64 << 20;
