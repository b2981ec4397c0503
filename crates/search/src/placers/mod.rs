//! The learned device placers of the literature as strategies, each in its
//! own module (networks, training, the strategy): `hdp` (Mirhoseini et al.,
//! ICLR 2018) and `placeto` (Addanki et al., NeurIPS 2019). Their proposals
//! are made valid by the solver like `rl`'s, and their rewards come from
//! the judge, so each works under either objective.

pub mod hdp;
pub mod placeto;
mod reinforce;
#[cfg(test)]
mod testing;
