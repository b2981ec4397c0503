//! The proven bound on a sample of the data set (`bench bounds` runs the
//! whole set, figures in the book); crates/search/tests/bounds.rs holds it
//! against exhaustive search.

use crate::common;
use mcmpart::cost::BoundKind;
use mcmpart::experiment::bounds::measure;
use std::sync::Arc;

/// A sample of the data set on the ring of `examples/bert_ring36.mcm`: no
/// partition greedy finds beats the proven bound, and on ALBERT the shared
/// weights confine most of the network to two chips (the bound the issue
/// asks for: over ten times total / total), whose boundary they all cross
/// (the chain cuts, of a chain or a span: above the edge span).
#[test]
fn no_partition_of_the_data_set_sample_beats_the_proven_bound() {
    let root = common::root();
    for name in [
        "lstm_lm_small",
        "char_cnn_lstm",
        "squeezenet1_1",
        "resnet18",
        "albert-base-v2",
    ] {
        let g = mcm_core::graph::load_graph_file(&root.join(format!("data/graphs/{name}.json.gz"))).unwrap();
        let c = mcm_lang::compile_file_with_graph(&root.join("examples/bert_ring36.mcm"), Arc::new(g));
        assert!(c.ok(), "{name}");
        let row = measure(c.problem(None).unwrap(), "greedy", 1, 0).unwrap();
        assert!(row.best_latency_s.is_some(), "{name}: greedy found a partition");
        assert!(row.sound(), "{name}: {row:?}");
        assert!(row.proven.latency_s > row.total_compute_s, "{name}: {row:?}");
        if name == "albert-base-v2" {
            assert_eq!(row.proven.kind, BoundKind::StageCuts, "{row:?}");
            // A span is a chain of one edge: the shared weights cross its
            // boundary too, and its relaxation is now the highest.
            assert!(
                row.proven.because.contains("chain") || row.proven.because.contains("span"),
                "{row:?}"
            );
            assert!(row.proven.latency_s > 10.0 * row.total_compute_s, "{row:?}");
        }
    }
}
