//! The solver stage: domains and a trailed store, propagators (native for
//! the stdlib rules, generic for any formula), the engine with its
//! get_domain/set_domain contract, SAMPLE and FIX, SAT backing, the
//! independent checker, and exhaustive search as the oracle for tiny cases.

pub mod checker;
pub mod domain;
pub mod engine;
pub mod exhaustive;
pub mod propagators;
pub mod sat;
pub mod search;
pub mod store;

pub use checker::{check, Checker, Violation};
pub use engine::{Infeasible, Options, Solver, Stats};
pub use search::{fix, fix_or, node_order, sample, sample_or, Order, Probs};
