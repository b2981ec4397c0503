//! The learned placers of the literature as strategies, each in its own
//! folder (its networks, its training, its [`crate::strategy::Strategy`]).
//! `gdp` and `mars` share one PPO agent loop ([`agent`]) and one way of
//! cutting the node sequence into segments ([`seq`]).

pub mod agent;
pub mod gdp;
pub mod mars;
mod seq;
#[cfg(test)]
mod small_problem;
