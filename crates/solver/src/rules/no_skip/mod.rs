//! `no_skip`: the chips in use are 0..k, with no empty chip below a used
//! one (the stdlib states it as: a node at or above chip d means some node
//! on d).

mod encode;
mod hall;
mod propagator;
#[cfg(test)]
mod tests;

pub use propagator::NoSkip;

pub(super) const RULE: super::NativeRule = super::NativeRule {
    key: "no_skip",
    propagator: NoSkip::build,
    encoding: encode::NoSkipEncoding::boxed,
    upward: None,
    order_only: true,
    refuted: None,
};
