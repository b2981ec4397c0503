//! The learned device placers of the literature as strategies, each in its
//! own folder (its networks, its training, its
//! [`crate::strategy::Strategy`]): `hdp` (Mirhoseini et al., ICLR 2018),
//! `placeto` (Addanki et al., NeurIPS 2019), `gdp` (Zhou et al., 2019) and
//! `mars` (Lan et al., ICPP 2021). Their proposals are made valid by the
//! solver like `rl`'s, and their rewards come from the judge, so each works
//! under either objective. `hdp` and `placeto` share a REINFORCE loop
//! ([`reinforce`]); `gdp` and `mars` one PPO agent loop ([`agent`]) and one
//! way of cutting the node sequence into segments ([`seq`]). `auto` judges
//! their zero-shot placements among its first partitions ([`zero_shot`]).

pub mod agent;
pub mod gdp;
pub mod hdp;
pub mod mars;
pub mod placeto;
mod reinforce;
mod seq;
#[cfg(test)]
mod small_problem;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod zero_shot;
