//! The experiments the command line runs, as library code tests and tools
//! can call: [`compare`] (strategies side by side, the paper's tables and
//! figures) and [`train`] (pretraining the policy).

pub mod compare;
pub mod train;
