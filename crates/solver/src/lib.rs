//! The solver stage: domains and a trailed store, propagators (native for
//! the stdlib rules, one folder each under `rules`, generic for any
//! formula), the engine with its get_domain/set_domain contract, the SAMPLE
//! and FIX modes, SAT backing, the independent checker, and exhaustive
//! enumeration as the oracle for tiny cases.

pub mod checker;
pub mod domain;
pub mod engine;
pub mod exhaustive;
pub mod families;
pub mod flow;
pub mod generic;
#[cfg(test)]
pub(crate) mod harness;
pub mod modes;
mod pace;
pub mod propagator;
pub mod reduce;
pub mod rules;
pub mod sat;
pub mod store;
pub mod target;

pub use checker::{check, Checker, Violation};
pub use engine::{Infeasible, Options, Solver, Stats};
pub use modes::{fix, fix_or, node_order, sample, sample_or, Mode, Order, Probs};
pub use target::Target;
