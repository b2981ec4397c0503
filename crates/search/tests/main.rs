//! mcm-search's integration tests, one binary: cost models, bounds and
//! strategies against exhaustive search, FIX with a fallback, and the
//! policy's rollouts.

/// The shared builders (crates/testkit), under the name the root package's
/// tests give them.
use mcm_testkit as common;

mod bounds;
mod cost;
mod exact;
mod fix;
mod lns;
mod rl;
mod rollouts;
mod strategies;
mod twin;
