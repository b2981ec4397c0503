//! The solver stage. For now: the independent checker, which judges a full
//! placement against grounded constraints, and exhaustive search, the exact
//! oracle for tiny instances.

pub mod checker;
pub mod exhaustive;

pub use checker::{check, Checker, Violation};
