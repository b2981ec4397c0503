//! mcm-solver's integration tests, one binary: the solver, its SAT backing
//! and the checker against exhaustive search and a direct implementation of
//! the rules on random small problems. Builds without candle.

/// The shared builders (crates/testkit), under the name the root package's
/// tests give them.
use mcm_testkit as common;

mod fuzz;
mod property;
mod sat;
mod solver;
