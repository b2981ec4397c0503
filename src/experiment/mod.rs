//! The experiments the command line runs, as library code tests and tools
//! can call: [`compare`] (strategies side by side, the paper's tables and
//! figures), [`train`] (pretraining the policy), [`bounds`] (the
//! structural bounds against real partitions) and [`scale`] (generated
//! large graphs and the peak memory of the commands on them).

pub mod bounds;
pub mod compare;
pub mod scale;
pub mod train;
pub mod train_placer;
