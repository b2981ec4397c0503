//! `memory_capacity`: the weights (`params`) of the nodes on a chip fit its
//! `memory`.

mod encode;
mod propagator;
#[cfg(test)]
mod tests;

pub(crate) use encode::MemoryEncoding;
pub use propagator::Memory;

pub(super) const RULE: super::NativeRule = super::NativeRule {
    key: "memory_capacity",
    propagator: Memory::build,
    encoding: encode::MemoryEncoding::boxed,
    upward: None,
    order_only: true,
    refuted: Some(propagator::over_total),
};
