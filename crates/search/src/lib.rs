//! mcmpart's search: the cost models and the judge strategies ask
//! ([`cost`]), the strategies behind one interface ([`strategy`]), and the
//! learned policy ([`policy`]) and its pretraining on a set of graphs
//! ([`pretrain`], above the strategies it imitates). The only crate of the workspace that links
//! candle.

pub mod baseline;
pub mod cost;
pub mod placers;
pub mod policy;
pub mod pretrain;
pub mod strategy;
