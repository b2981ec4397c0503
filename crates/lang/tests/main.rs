//! mcm-lang's integration tests, one binary: the diagnostics of every
//! kind of error.

/// The shared builders (crates/testkit), under the name the root package's
/// tests give them.
use mcm_testkit as common;

mod errors;
mod native_grounding;
