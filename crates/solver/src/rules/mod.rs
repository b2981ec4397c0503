//! The native rules: Rust implementations of rules of `std::placement`,
//! each in its own folder (what the rule is, its propagator, its SAT
//! encoding, its tests), registered in one table. The engine and the SAT
//! encoder look a constraint's key (`GroundConstraint::native`) up here and
//! know no rule by name; a key that is not in the table goes through the
//! generic path. Adding a native rule is one folder and one row.

mod acyclic_flow;
pub(crate) mod memory_capacity;
mod no_skip;
mod triangle_dependency;

use crate::propagator::{Cx, Propagator};
use crate::sat::encode::RuleEncoding;
use crate::sat::SatOptions;
use crate::store::Fail;
use mcm_core::problem::{Formula, GroundConstraint, Problem};

pub use acyclic_flow::Precedence;
pub use memory_capacity::Memory;
pub use no_skip::NoSkip;
pub use triangle_dependency::Triangle;

/// Builds the propagator of one constraint, with its pruning at the root
/// (a failure there means the problem is infeasible).
pub type Build = for<'p> fn(&mut Cx<'_>, &'p GroundConstraint) -> Result<Box<dyn Propagator + 'p>, Fail>;

/// The pair (u, v) of an instance that states `chip(u) <= chip(v)`.
pub type UpwardPair = fn(&Formula) -> Option<(u32, u32)>;

/// One row of the table: a native rule and what the engine and the
/// encoder need of it.
pub struct NativeRule {
    /// The key the standard library's declaration names.
    pub key: &'static str,
    pub propagator: Build,
    /// Its SAT encoding, made once per problem for all of its constraints.
    pub(crate) encoding: fn(&SatOptions) -> Box<dyn RuleEncoding>,
    /// For a rule whose instances each state `chip(u) <= chip(v)`: that
    /// pair, read from an instance. When a rule's instances cover every edge,
    /// no arc of the chip flow graph goes down, and the flow encoding leaves
    /// the downward arcs out.
    pub upward: Option<UpwardPair>,
    /// Whether the rule compares chips by order and equality only, reading
    /// no chip attribute but `memory` and binding no link: its meaning is
    /// unchanged when chips are renumbered in order, which lets
    /// [`crate::reduce`] ask questions on fewer chips.
    pub order_only: bool,
    /// A cheap proof that the rule alone admits no partition of a problem
    /// (its propagator then fails at the root): the rule is the whole
    /// conflict, and no SAT question is asked to name it, which on a
    /// pigeonhole over many chips could run for longer than anyone waits.
    pub refuted: Option<fn(&Problem) -> bool>,
}

/// Every native rule. The order is the order in which their lazy cuts are
/// collected after a solve.
pub static NATIVE_RULES: &[NativeRule] = &[
    acyclic_flow::RULE,
    no_skip::RULE,
    memory_capacity::RULE,
    triangle_dependency::RULE,
];

/// Whether no arc of the chip flow graph can go down: some native rule
/// states `chip(u) <= chip(v)` for every placed edge (the table says which
/// rules state such pairs). Then a node's descendants lie on its chip or
/// above, its ancestors on its chip or below.
pub fn upward_flow(problem: &Problem) -> bool {
    let edges = problem.graph.placed_edges().len();
    problem.constraints.iter().any(|gc| {
        let upward = gc.native.as_deref().and_then(lookup).and_then(|r| r.upward);
        upward
            .is_some_and(|pair| gc.instances.len() == edges && gc.instances.iter().all(|i| pair(&i.formula).is_some()))
    })
}

/// Whether constraint `k` of `problem` is a native rule that alone admits
/// no partition ([`NativeRule::refuted`]).
pub fn refuted(problem: &Problem, k: usize) -> bool {
    problem
        .constraints
        .get(k)
        .and_then(|c| c.native.as_deref())
        .and_then(lookup)
        .and_then(|r| r.refuted)
        .is_some_and(|r| r(problem))
}

/// The row of a key.
pub fn position(key: &str) -> Option<usize> {
    NATIVE_RULES.iter().position(|r| r.key == key)
}

pub fn lookup(key: &str) -> Option<&'static NativeRule> {
    position(key).map(|r| &NATIVE_RULES[r])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_unknown_ones_are_not_native() {
        for (i, r) in NATIVE_RULES.iter().enumerate() {
            assert_eq!(position(r.key), Some(i), "{} twice", r.key);
        }
        assert!(lookup("my_rule").is_none());
    }
}
