//! `triangle_dependency`: where an edge goes from chip a to chip b, the
//! longest path from a to b in the chip flow graph is 1, so no flow between
//! two chips coexists with a longer way round.

mod encode;
mod propagator;
mod shared_tail;
#[cfg(test)]
mod tests;

pub use propagator::Triangle;

pub(super) const RULE: super::NativeRule = super::NativeRule {
    key: "triangle_dependency",
    propagator: Triangle::build,
    encoding: encode::TriangleEncoding::boxed,
    upward: None,
    order_only: true,
    refuted: None,
};
