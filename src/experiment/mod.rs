//! The experiments the command line runs, as library code tests and tools
//! can call: [`compare`] (strategies side by side, the paper's tables and
//! figures), [`train`] (pretraining the policy) and [`bounds`] (the
//! structural bounds against real partitions).

pub mod bounds;
pub mod compare;
pub mod train;
