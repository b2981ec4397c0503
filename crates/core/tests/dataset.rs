//! The shipped data set: every graph of the manifest loads, is a DAG, and
//! matches its manifest figures; the splits keep transformers out of
//! training; BERT-large has the size the literature gives it.

use crate::common;

use mcm_core::graph::load_graph_file;
use serde_json::Value;

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(common::root().join("data/graphs/manifest.json")).expect("manifest");
    let v: Value = serde_json::from_str(&text).expect("manifest is JSON");
    v["graphs"].as_array().expect("a `graphs` list").clone()
}

#[test]
fn every_manifest_graph_loads_and_matches_its_figures() {
    let graphs = manifest();
    assert!(graphs.len() >= 80, "only {} graphs", graphs.len());
    for m in &graphs {
        let file = m["file"].as_str().expect("file");
        let g = load_graph_file(&common::root().join("data/graphs").join(file))
            .unwrap_or_else(|e| panic!("{file}: {}", e.message));
        let name = m["name"].as_str().unwrap();
        assert_eq!(g.name, name, "{file}");
        assert_eq!(g.nodes.len() as u64, m["nodes"].as_u64().unwrap(), "{name} nodes");
        assert_eq!(g.edges.len() as u64, m["edges"].as_u64().unwrap(), "{name} edges");
        assert_eq!(g.total_flops(), m["flops"].as_u64().unwrap() as u128, "{name} flops");
        assert_eq!(
            g.total_params(),
            m["weight_bytes"].as_u64().unwrap() as u128,
            "{name} weights"
        );
        // A DAG: the topological order covers every node (Graph::new refuses cycles).
        assert_eq!(g.topological_order().len(), g.nodes.len());
        assert!(g.num_placed() > 0, "{name} has nothing to place");
    }
}

#[test]
fn splits_follow_the_paper() {
    let graphs = manifest();
    let split = |s: &str| graphs.iter().filter(|m| m["split"] == s).count();
    assert!(split("train") >= 40, "train: {}", split("train"));
    assert!(
        (3..=16).contains(&split("validation")),
        "validation: {}",
        split("validation")
    );
    assert!(split("test") >= 10, "test: {}", split("test"));
    for m in &graphs {
        if m["family"] == "transformer" {
            assert_eq!(
                m["split"], "test",
                "{} is a transformer outside the test split",
                m["name"]
            );
        }
    }
    let families: std::collections::BTreeSet<&str> = graphs.iter().filter_map(|m| m["family"].as_str()).collect();
    for f in ["convolutional", "recurrent", "transformer"] {
        assert!(families.contains(f), "no {f} graphs");
    }
    for name in [
        "bert-base",
        "bert-large",
        "gpt2",
        "t5-small",
        "vit_b_16",
        "swin_t",
        "resnet50",
        "vgg16",
    ] {
        assert!(graphs.iter().any(|m| m["name"] == name), "{name} missing");
    }
}

#[test]
fn bert_large_has_its_published_size() {
    let g = load_graph_file(&common::root().join("data/graphs/bert-large.json.gz")).unwrap();
    // 340M parameters (Devlin et al.), 4 bytes each.
    let published = 340e6 * 4.0;
    let weights = g.total_params() as f64;
    assert!(
        (weights / published - 1.0).abs() < 0.02,
        "weights {weights} vs {published}"
    );
    // One sequence of 128 tokens: 2 x non-embedding parameters x tokens.
    let embeddings: u128 = g
        .nodes
        .iter()
        .filter(|n| n.id.starts_with("p_embeddings_") && n.id.ends_with("_embeddings_weight"))
        .map(|n| n.params as u128)
        .sum();
    assert!(embeddings > 100_000_000, "embedding tables not found");
    let non_embedding = (g.total_params() - embeddings) as f64 / 4.0;
    let expected = 2.0 * non_embedding * 128.0;
    let flops = g.total_flops() as f64;
    assert!((flops / expected - 1.0).abs() < 0.10, "flops {flops} vs {expected}");
}
