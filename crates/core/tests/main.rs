//! mcm-core's integration tests, one binary: the shipped data set and
//! the ONNX importer.

/// The shared builders (crates/testkit), under the name the root package's
/// tests give them.
use mcm_testkit as common;

mod dataset;
mod onnx;
