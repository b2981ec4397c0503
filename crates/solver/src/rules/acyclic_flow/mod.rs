//! `acyclic_flow`: `chip(u) <= chip(v)` along every edge, so that data
//! only flows up the chip order and the chip flow graph has no cycle.

mod encode;
mod propagator;
#[cfg(test)]
mod tests;

pub use propagator::Precedence;

pub(super) const RULE: super::NativeRule = super::NativeRule {
    key: "acyclic_flow",
    propagator: Precedence::build,
    encoding: encode::Acyclic::boxed,
    upward: Some(encode::pair),
    order_only: true,
    refuted: None,
};
