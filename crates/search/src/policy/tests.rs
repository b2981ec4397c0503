//! Tests of the policy: gradients against finite differences, chip-count
//! independence, determinism, checkpoints and a small PPO learning run.

use super::ppo::{self, Batch, PpoConfig, Ratio, Rollout};
use super::*;
use candle_core::{DType, Device, Tensor, Var};
use mcm_core::graph::{Graph, Node};
use mcm_core::package::{Chip, Link, Package};
use mcm_core::quantity::{Dim, Scalar};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A ring of `c` equal chips with `memory` bytes each.
fn ring(c: usize, memory: f64) -> Package {
    let chips = (0..c)
        .map(|i| Chip {
            name: format!("die[{i}]"),
            attrs: BTreeMap::from([
                ("memory".to_string(), Scalar::Num(memory, Dim::BYTES)),
                ("compute".to_string(), Scalar::Num(4e12, Dim::FLOP_RATE)),
            ]),
        })
        .collect();
    let mut links = Vec::new();
    if c > 1 {
        for i in 0..c as u32 {
            let j = (i + 1) % c as u32;
            for (a, b) in [(i, j), (j, i)] {
                if a != b && !links.iter().any(|l: &Link| l.src == a && l.dst == b) {
                    links.push(Link {
                        src: a,
                        dst: b,
                        attrs: BTreeMap::from([("bandwidth".to_string(), Scalar::Num(25e9, Dim::RATE))]),
                    });
                }
            }
        }
    }
    Package::new(format!("ring{c}"), chips, links).unwrap()
}

/// A 5-node diamond-ish DAG with a replicable weight feeding one node.
fn tiny() -> Graph {
    let mk = |id: &str, op: &str, flops: u64, params: u64, out: u64, rep: bool| {
        let mut n = Node::new(id);
        n.op = op.into();
        n.flops = flops;
        n.params = params;
        n.output_bytes = out;
        n.replicable = rep;
        n
    };
    let nodes = vec![
        mk("w", "get_attr", 0, 4096, 4096, true),
        mk("a", "embedding", 1000, 4096, 2048, false),
        mk("b", "linear", 50_000, 0, 2048, false),
        mk("c", "relu", 500, 0, 2048, false),
        mk("d", "add", 500, 0, 2048, false),
        mk("e", "softmax", 2000, 0, 512, false),
    ];
    let edges = vec![
        (0, 2, None),
        (1, 2, None),
        (1, 3, None),
        (2, 4, None),
        (3, 4, None),
        (4, 5, None),
    ];
    Graph::new("tiny", nodes, edges).unwrap()
}

fn real(name: &str) -> Graph {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../data/graphs/{name}.json.gz"));
    mcm_core::graph::load_graph_file(&path).unwrap()
}

fn small_config() -> PolicyConfig {
    PolicyConfig {
        layers: 2,
        hidden: 8,
        iterations: 2,
        op_buckets: 16,
        seed: 7,
    }
}

fn values(t: &Tensor) -> Vec<f64> {
    t.flatten_all()
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .to_vec1()
        .unwrap()
}

/// Central difference of `f` in element `i` of `var`.
fn central(var: &Var, i: usize, eps: f64, f: &dyn Fn() -> f64) -> f64 {
    let orig = var.as_tensor().copy().unwrap();
    let mut v = values(&orig);
    let shift = |v: &[f64]| Tensor::from_vec(v.to_vec(), orig.shape(), orig.device()).unwrap();
    v[i] += eps;
    var.set(&shift(&v)).unwrap();
    let up = f();
    v[i] -= 2.0 * eps;
    var.set(&shift(&v)).unwrap();
    let down = f();
    var.set(&orig).unwrap();
    (up - down) / (2.0 * eps)
}

/// Compares autograd with central differences on a few elements of each named parameter.
fn check_grads(policy: &Policy, names: &[&str], loss: &dyn Fn() -> Tensor) {
    let grads = loss().backward().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let f = || values(&loss())[0];
    for name in names {
        let var = policy.var(name).unwrap_or_else(|| panic!("no parameter {name}"));
        let g = grads
            .get(var.as_tensor())
            .map(values)
            .unwrap_or_else(|| vec![0.0; var.elem_count()]);
        for _ in 0..3 {
            let i = rng.random_range(0..var.elem_count());
            let numeric = central(&var, i, 1e-6, &f);
            let err = (g[i] - numeric).abs() / g[i].abs().max(numeric.abs()).max(1e-3);
            assert!(
                err < 1e-4,
                "{name}[{i}]: autograd {} vs numeric {numeric} (rel err {err:e})",
                g[i]
            );
        }
    }
}

const CHECKED: &[&str] = &[
    "op_embedding",
    "input.weight",
    "pipeline.weight",
    "pipeline.bias",
    "previous.weight",
    "sage.0.linear.weight",
    "sage.1.linear.bias",
    "sage.1.norm.weight",
    "chip.0.weight",
    "query.1.weight",
    "value.0.weight",
    "value.1.bias",
];

#[test]
fn encoder_and_heads_match_finite_differences() {
    let policy = Policy::new(&small_config(), &Device::Cpu, DType::F64).unwrap();
    let g = tiny();
    let f = policy.features(&g, &ring(3, 1e6)).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    // The pipeline weights start at zero; off zero, the gradient also flows
    // through them into the encoder.
    let w = policy.var("pipeline.weight").unwrap();
    let values: Vec<f64> = (0..w.elem_count()).map(|_| rng.random_range(-0.3..0.3)).collect();
    w.set(&Tensor::from_vec(values, w.shape(), &Device::Cpu).unwrap())
        .unwrap();
    let weights: Vec<Tensor> = (0..2)
        .map(|_| {
            let w: Vec<f64> = (0..f.num_nodes * 3).map(|_| rng.random_range(-1.0..1.0)).collect();
            Tensor::from_vec(w, (f.num_nodes, 3), &Device::Cpu).unwrap()
        })
        .collect();
    let prev = [0u32, 1, 2, 0, 1];
    let loss = || {
        let out = policy.forward(&f, Some(&prev)).unwrap();
        let mut total = (&out.value * 3.0).unwrap();
        for (lp, w) in out.log_probs.iter().zip(&weights) {
            total = (total + (lp * w).unwrap().sum_all().unwrap()).unwrap();
        }
        total.reshape(1).unwrap()
    };
    check_grads(&policy, CHECKED, &loss);
}

#[test]
fn ppo_loss_matches_finite_differences() {
    let policy = Policy::new(&small_config(), &Device::Cpu, DType::F64).unwrap();
    let g = tiny();
    let features = vec![policy.features(&g, &ring(3, 1e6)).unwrap()];
    let probs = policy.probs(&features[0], None).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let rollouts: Vec<Rollout> = (0..4)
        .map(|k| {
            let (actions, lp) = ppo::sample_actions(&probs, &mut rng);
            // Old log-probs off the current ones, so ratios differ from 1 (some clipped).
            let old = lp.iter().map(|x| x + rng.random_range(-0.3f32..0.3)).collect();
            Rollout {
                // Whole draws, a draw of a few moves, and one with none.
                credit: match k {
                    1 => Some(vec![0, 2]),
                    2 => Some(vec![]),
                    _ => None,
                },
                graph: 0,
                prev: None,
                actions,
                old_log_probs: old,
                reward: k as f32 * 0.3,
                value: 0.1,
            }
        })
        .collect();
    let batch = Batch {
        features: &features,
        rollouts,
    };
    let adv = ppo::advantages(&batch.rollouts);
    for ratio in [Ratio::PerNode, Ratio::Joint] {
        let cfg = PpoConfig {
            ratio,
            ..PpoConfig::default()
        };
        let loss = || {
            ppo::loss(&policy, &batch, &[0, 1, 2, 3], &adv, &cfg)
                .unwrap()
                .total
                .reshape(1)
                .unwrap()
        };
        check_grads(
            &policy,
            &["sage.0.linear.weight", "query.0.weight", "value.1.weight"],
            &loss,
        );
    }
}

/// A rollout that credits some nodes is judged on those nodes alone.
#[test]
fn only_credited_nodes_enter_the_policy_loss() {
    let policy = Policy::new(&small_config(), &Device::Cpu, DType::F64).unwrap();
    let g = tiny();
    let features = vec![policy.features(&g, &ring(3, 1e6)).unwrap()];
    let probs = policy.probs(&features[0], None).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let (actions, lp) = ppo::sample_actions(&probs, &mut rng);
    let rollout = |old: Vec<f32>, credit: Option<Vec<u32>>, reward: f32| Rollout {
        credit,
        graph: 0,
        prev: None,
        actions: actions.clone(),
        old_log_probs: old,
        reward,
        value: 0.1,
    };
    let shifted: Vec<f32> = lp
        .iter()
        .enumerate()
        .map(|(u, &x)| if u == 1 { x } else { x - 0.5 })
        .collect();
    let cfg = PpoConfig::default();
    let policy_loss = |rs: Vec<Rollout>| {
        let batch = Batch {
            features: &features,
            rollouts: rs,
        };
        let adv = ppo::advantages(&batch.rollouts);
        ppo::loss(&policy, &batch, &[0, 1], &adv, &cfg)
            .unwrap()
            .stats
            .policy_loss
    };
    let credited = |old: &[f32]| {
        policy_loss(vec![
            rollout(old.to_vec(), Some(vec![1]), 1.0),
            rollout(lp.clone(), Some(vec![1]), 0.0),
        ])
    };
    // Node 1's log-prob is the same in both: the others do not count.
    assert_eq!(credited(&lp), credited(&shifted));
    let whole = |old: &[f32]| policy_loss(vec![rollout(old.to_vec(), None, 1.0), rollout(lp.clone(), None, 0.0)]);
    assert_ne!(whole(&lp), whole(&shifted));
    // A node the graph does not have is refused.
    let batch = Batch {
        features: &features,
        rollouts: vec![rollout(lp.clone(), Some(vec![99]), 1.0)],
    };
    assert!(ppo::loss(&policy, &batch, &[0], &[1.0], &cfg).is_err());
}

fn assert_distribution(p: &[Vec<f32>], n: usize, c: usize) {
    assert_eq!(p.len(), n);
    for row in p {
        assert_eq!(row.len(), c);
        assert!(row.iter().all(|&x| x.is_finite() && x >= 0.0));
        let s: f32 = row.iter().sum();
        assert!((s - 1.0).abs() < 1e-4, "row sums to {s}");
    }
}

#[test]
fn one_policy_serves_any_chip_count() {
    let policy = Policy::new(&PolicyConfig::default(), &Device::Cpu, DType::F32).unwrap();
    let g = real("lstm_lm_small");
    for c in [1, 4, 64] {
        let f = policy.features(&g, &ring(c, 64e6)).unwrap();
        let p = policy.probs(&f, None).unwrap();
        assert_distribution(&p, g.num_placed(), c);
        let prev: Vec<u32> = (0..g.num_placed() as u32).map(|i| i % c as u32).collect();
        assert_distribution(&policy.probs(&f, Some(&prev)).unwrap(), g.num_placed(), c);
        let out = policy.forward(&f, None).unwrap();
        assert_eq!(out.log_probs.len(), 3);
        assert!(values(&out.value)[0].is_finite());
    }
}

#[test]
fn features_are_finite_and_of_order_one() {
    let g = real("lstm_lm_small");
    let f = GraphFeatures::new(&g, &ring(8, 128.0 * 1024.0 * 1024.0), 64, &Device::Cpu, DType::F32).unwrap();
    for t in [&f.nodes, &f.chips] {
        assert!(
            values(t).iter().all(|x| x.is_finite() && x.abs() <= 3.0),
            "{:?}",
            values(t)
        );
    }
    assert!(f.depth.iter().all(|d| (0.0..=1.0).contains(d)));
    assert_eq!(f.depth.iter().cloned().fold(0.0, f32::max), 1.0);
    let bad = Policy::new(&small_config(), &Device::Cpu, DType::F32).unwrap();
    let err = bad.forward(&f, None).unwrap_err().to_string();
    assert!(err.contains("64 buckets"), "{err}");
    let err = bad
        .probs(&bad.features(&g, &ring(2, 1e6)).unwrap(), Some(&[5]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("previous placement"), "{err}");
}

/// The plain tables hand out the tensors the network reads, row by row.
#[test]
fn feature_tables_are_the_network_inputs_row_major() {
    let g = real("lstm_lm_small");
    let f = GraphFeatures::new(&g, &ring(8, 128.0 * 1024.0 * 1024.0), 64, &Device::Cpu, DType::F64).unwrap();
    let (nodes, ops) = f.node_table().unwrap();
    assert_eq!(nodes.len(), g.num_placed() * features::NODE_FEATURES);
    assert_eq!(features::NODE_FEATURE_NAMES.len(), features::NODE_FEATURES);
    let rows = f.nodes.to_vec2::<f64>().unwrap();
    for (d, row) in rows.iter().enumerate() {
        for (k, x) in row.iter().enumerate() {
            assert_eq!(nodes[d * features::NODE_FEATURES + k], *x as f32, "node {d} column {k}");
        }
        assert_eq!(ops[d], features::op_bucket(&g.placed_node(d as u32).op, 64));
    }
    // Column 5 is the depth, as `depth` has it.
    assert_eq!(nodes[5], f.depth[0]);
    let chips = f.chip_table().unwrap();
    assert_eq!(chips.len(), 8 * features::CHIP_FEATURES);
    assert_eq!(chips[features::CHIP_FEATURES * 7], 1.0, "the last chip's normalised id");
}

/// The pairwise pipeline distance: one chip apart on a package of equal
/// chips, and the nearest chip never goes back along the pipeline.
#[test]
fn pipeline_distance_follows_the_pipeline() {
    let g = real("lstm_lm_small");
    let c = 8;
    let f = GraphFeatures::new(&g, &ring(c, 128.0 * 1024.0 * 1024.0), 64, &Device::Cpu, DType::F64).unwrap();
    let d = f.pipeline.to_vec2::<f64>().unwrap();
    let sq = f.pipeline_sq.to_vec2::<f64>().unwrap();
    for (row, row_sq) in d.iter().zip(&sq) {
        for k in 1..c {
            assert!((row[k - 1] - row[k] - 1.0).abs() < 1e-9, "{row:?}");
        }
        assert!(row.iter().zip(row_sq).all(|(a, b)| (a * a - b).abs() < 1e-9));
    }
    let nearest = |u: u32| {
        let row = &d[u as usize];
        (0..c).min_by(|&a, &b| row[a].abs().total_cmp(&row[b].abs())).unwrap()
    };
    let order = g.pipeline_order();
    assert!(order.windows(2).all(|w| nearest(w[0]) <= nearest(w[1])));
    assert_eq!(nearest(order[0]), 0);
    assert_eq!(nearest(*order.last().unwrap()), c - 1);
}

#[test]
fn forward_is_deterministic_for_a_seed() {
    let g = real("lstm_lm_small");
    let pkg = ring(6, 64e6);
    let cfg = PolicyConfig {
        layers: 3,
        hidden: 32,
        ..PolicyConfig::default()
    };
    let a = Policy::new(&cfg, &Device::Cpu, DType::F32).unwrap();
    let b = Policy::new(&cfg, &Device::Cpu, DType::F32).unwrap();
    let c = Policy::new(&PolicyConfig { seed: 1, ..cfg }, &Device::Cpu, DType::F32).unwrap();
    let f = a.features(&g, &pkg).unwrap();
    let pa = a.probs(&f, None).unwrap();
    assert_eq!(pa, a.probs(&f, None).unwrap());
    assert_eq!(pa, b.probs(&f, None).unwrap());
    assert_ne!(pa, c.probs(&f, None).unwrap());
}

/// A checkpoint stem in a scratch folder of its own, removed with the folder.
fn scratch(name: &str) -> (mcm_testkit::Scratch, PathBuf) {
    let dir = mcm_testkit::scratch(&format!("policy-{name}"));
    let stem = dir.join("ckpt");
    (dir, stem)
}

#[test]
fn checkpoints_round_trip() {
    let cfg = PolicyConfig {
        hidden: 16,
        layers: 2,
        seed: 9,
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&cfg, &Device::Cpu, DType::F32).unwrap();
    assert_eq!(policy.num_parameters() as u128, Policy::parameters_for(&cfg));
    let default = Policy::new(&PolicyConfig::default(), &Device::Cpu, DType::F32).unwrap();
    assert_eq!(
        default.num_parameters() as u128,
        Policy::parameters_for(&PolicyConfig::default())
    );
    let (_dir, stem) = scratch("roundtrip");
    checkpoint::save(&policy, &stem).unwrap();
    let loaded = checkpoint::load(&stem, Some(&PolicyConfig { seed: 0, ..cfg.clone() }), &Device::Cpu).unwrap();
    assert_eq!(loaded.config(), &cfg);
    let g = real("lstm_lm_small");
    let f = policy.features(&g, &ring(5, 64e6)).unwrap();
    assert_eq!(policy.probs(&f, None).unwrap(), loaded.probs(&f, None).unwrap());
    let (w, j) = checkpoint::paths(&stem);
    assert!(w.exists() && j.exists());
    assert!(!w.with_extension("safetensors.tmp").exists());
}

#[test]
fn bad_checkpoints_are_refused_with_reasons() {
    let cfg = PolicyConfig {
        hidden: 16,
        layers: 2,
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&cfg, &Device::Cpu, DType::F32).unwrap();
    let (_dir, stem) = scratch("bad");
    let (weights, sidecar) = checkpoint::paths(&stem);
    let err = |stem: &std::path::Path, expected: Option<&PolicyConfig>| {
        checkpoint::load(stem, expected, &Device::Cpu)
            .err()
            .expect("load should fail")
            .to_string()
    };

    let missing = err(&stem.with_file_name("nothing"), None);
    assert!(
        missing.contains("cannot access") && missing.contains("nothing.json"),
        "{missing}"
    );

    checkpoint::save(&policy, &stem).unwrap();
    let wrong = err(
        &stem,
        Some(&PolicyConfig {
            hidden: 128,
            ..cfg.clone()
        }),
    );
    assert!(
        wrong.contains("checkpoint has hidden=16 but config says 128"),
        "{wrong}"
    );

    // Truncated weights.
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();
    let truncated = err(&stem, None);
    assert!(
        truncated.contains("damaged") && truncated.contains("checksum"),
        "{truncated}"
    );

    // Garbage weights with a matching checksum: the safetensors parser refuses.
    let garbage = b"this is not safetensors".to_vec();
    std::fs::write(&weights, &garbage).unwrap();
    let mut meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&sidecar).unwrap()).unwrap();
    meta["checksum"] = mcm_core::digest::fnv1a(&garbage).into();
    std::fs::write(&sidecar, meta.to_string()).unwrap();
    let corrupt = err(&stem, None);
    assert!(corrupt.contains("not a valid safetensors"), "{corrupt}");

    // Weights of another shape under a sidecar that claims this one.
    let other = Policy::new(
        &PolicyConfig {
            hidden: 8,
            ..cfg.clone()
        },
        &Device::Cpu,
        DType::F32,
    )
    .unwrap();
    let (_other_dir, other_stem) = scratch("other");
    checkpoint::save(&other, &other_stem).unwrap();
    let other_bytes = std::fs::read(checkpoint::paths(&other_stem).0).unwrap();
    std::fs::write(&weights, &other_bytes).unwrap();
    meta["checksum"] = mcm_core::digest::fnv1a(&other_bytes).into();
    std::fs::write(&sidecar, meta.to_string()).unwrap();
    let listed = err(&stem, None);
    assert!(listed.contains("differ from those in the weights file"), "{listed}");
    let other_meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(checkpoint::paths(&other_stem).1).unwrap()).unwrap();
    meta["tensors"] = other_meta["tensors"].clone();
    std::fs::write(&sidecar, meta.to_string()).unwrap();
    let shape = err(&stem, None);
    assert!(shape.contains("parameters but its configuration needs"), "{shape}");

    // Same parameter count, one tensor stored transposed.
    let mut tensors: std::collections::HashMap<String, Tensor> = policy
        .vars()
        .into_iter()
        .map(|(k, v)| (k, v.as_tensor().clone()))
        .collect();
    let w = tensors["input.weight"].t().unwrap().contiguous().unwrap();
    tensors.insert("input.weight".into(), w);
    candle_core::safetensors::save(&tensors, &weights).unwrap();
    let bytes = std::fs::read(&weights).unwrap();
    meta["checksum"] = mcm_core::digest::fnv1a(&bytes).into();
    meta["tensors"] = tensors
        .iter()
        .map(|(k, t)| (k.clone(), t.dims().into()))
        .collect::<serde_json::Map<_, _>>()
        .into();
    std::fs::write(&sidecar, meta.to_string()).unwrap();
    let transposed = err(&stem, None);
    assert!(
        transposed.contains("tensor `input.weight` has shape [10, 16] in the checkpoint but the config needs [16, 10]"),
        "{transposed}"
    );

    meta["format_version"] = 99.into();
    std::fs::write(&sidecar, meta.to_string()).unwrap();
    assert!(err(&stem, None).contains("format version 99"));
    meta["format_version"] = FORMAT_VERSION.into();
    meta["feature_schema"] = 0.into();
    std::fs::write(&sidecar, meta.to_string()).unwrap();
    assert!(err(&stem, None).contains("feature schema 0"));

    std::fs::write(&sidecar, "{ not json").unwrap();
    let json = err(&stem, None);
    assert!(json.contains("not a checkpoint sidecar"), "{json}");

    // A sound save whose sidecar is then edited: `iterations` adds no
    // weights (the checksum covers the weights only), so a huge value would
    // pass every other check and make each forward pass endless.
    checkpoint::save(&policy, &stem).unwrap();
    let good: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&sidecar).unwrap()).unwrap();
    let mut edited = good.clone();
    edited["config"]["iterations"] = 1_000_000_000u64.into();
    std::fs::write(&sidecar, edited.to_string()).unwrap();
    let endless = err(&stem, None);
    assert!(
        endless.contains("damaged") && endless.contains("iterations (1000000000) must be at most 64"),
        "{endless}"
    );
    // A sidecar that names another dtype than the weights have.
    let mut edited = good.clone();
    edited["dtype"] = "f16".into();
    std::fs::write(&sidecar, edited.to_string()).unwrap();
    let dtype = err(&stem, None);
    assert!(
        dtype.contains("says the weights are f16 but") && dtype.contains("is f32"),
        "{dtype}"
    );
    std::fs::write(&sidecar, good.to_string()).unwrap();
    assert!(checkpoint::load(&stem, None, &Device::Cpu).is_ok());

    // Weights that went NaN in a diverged run, saved with a true checksum.
    let (name, var) = policy.vars().into_iter().find(|(n, _)| n == "input.weight").unwrap();
    var.set(&(var.as_tensor() * f64::NAN).unwrap()).unwrap();
    checkpoint::save(&policy, &stem).unwrap();
    let nan = err(&stem, None);
    assert!(
        nan.contains("damaged") && nan.contains(&format!("tensor `{name}` holds NaN or infinite weights")),
        "{nan}"
    );
}

/// A loss that is not finite stops the update before the optimiser steps:
/// the weights stay as they were, and the error says training diverged.
#[test]
fn a_diverged_update_is_refused_and_leaves_the_weights() {
    let policy = Policy::new(&small_config(), &Device::Cpu, DType::F32).unwrap();
    let g = real("lstm_lm_small");
    let features = vec![policy.features(&g, &ring(4, 64e6)).unwrap()];
    let probs = policy.probs(&features[0], None).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let rollouts: Vec<Rollout> = (0..4)
        .map(|i| {
            let (actions, lp) = ppo::sample_actions(&probs, &mut rng);
            Rollout {
                credit: None,
                graph: 0,
                prev: None,
                // One reward is NaN (an evaluator's garbage let through):
                // every normalised advantage becomes NaN.
                reward: if i == 2 { f32::NAN } else { 1.0 },
                actions,
                old_log_probs: lp,
                value: 0.0,
            }
        })
        .collect();
    let batch = Batch {
        features: &features,
        rollouts,
    };
    let cfg = PpoConfig::default();
    let mut opt = ppo::optimizer(&policy, &cfg).unwrap();
    let before: Vec<Vec<f64>> = policy.vars().iter().map(|(_, v)| values(v.as_tensor())).collect();
    let e = ppo::update(&policy, &mut opt, &batch, &cfg, &mut rng).unwrap_err();
    assert!(matches!(e, PolicyError::Diverged(_)), "{e}");
    assert!(e.to_string().contains("training diverged: the PPO loss is NaN"), "{e}");
    let after: Vec<Vec<f64>> = policy.vars().iter().map(|(_, v)| values(v.as_tensor())).collect();
    assert_eq!(before, after);
}

/// The toy task: put each node on the chip of its depth band. PPO must
/// raise the mean reward within 15 updates.
#[test]
fn ppo_learns_a_toy_placement() {
    let cfg = PolicyConfig {
        layers: 2,
        hidden: 32,
        iterations: 2,
        op_buckets: 16,
        seed: 1,
    };
    let policy = Policy::new(&cfg, &Device::Cpu, DType::F32).unwrap();
    let g = real("lstm_lm_small");
    let c = 4;
    let features = vec![policy.features(&g, &ring(c, 64e6)).unwrap()];
    let target: Vec<u32> = features[0]
        .depth
        .iter()
        .map(|d| ((d * c as f32) as u32).min(c as u32 - 1))
        .collect();
    let ppo_cfg = PpoConfig {
        lr: 3e-3,
        epochs: 4,
        ..PpoConfig::default()
    };
    let mut opt = ppo::optimizer(&policy, &ppo_cfg).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut means = Vec::new();
    for _ in 0..15 {
        let out = policy.forward(&features[0], None).unwrap();
        let value = values(&out.value)[0] as f32;
        let probs = policy.probs(&features[0], None).unwrap();
        let rollouts: Vec<Rollout> = (0..ppo_cfg.rollouts)
            .map(|_| {
                let (actions, lp) = ppo::sample_actions(&probs, &mut rng);
                let hits = actions.iter().zip(&target).filter(|(a, t)| a == t).count();
                Rollout {
                    credit: None,
                    graph: 0,
                    prev: None,
                    reward: hits as f32 / actions.len() as f32,
                    actions,
                    old_log_probs: lp,
                    value,
                }
            })
            .collect();
        means.push(rollouts.iter().map(|r| r.reward as f64).sum::<f64>() / rollouts.len() as f64);
        let batch = Batch {
            features: &features,
            rollouts,
        };
        let stats = ppo::update(&policy, &mut opt, &batch, &ppo_cfg, &mut rng).unwrap();
        assert!(stats.policy_loss.is_finite() && stats.entropy > 0.0 && stats.approx_kl >= 0.0);
    }
    let first = means[..3].iter().sum::<f64>() / 3.0;
    let last = means[12..].iter().sum::<f64>() / 3.0;
    assert!(
        last > first + 0.15,
        "mean reward went from {first:.3} to {last:.3}: {means:?}"
    );
}

/// The strategy runs the policy from worker threads.
#[test]
fn policy_and_features_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Policy>();
    check::<GraphFeatures>();
}

/// x -> y (with its own weight w) -> z -> t, and x -> t: on three chips
/// with x on 0, w, y, z on 1 and t on 2.
fn slide_case() -> (Graph, GraphFeatures, [u32; 5]) {
    let mk = |id: &str, flops: u64, params: u64| {
        let mut n = Node::new(id);
        n.flops = flops;
        n.params = params;
        n.output_bytes = 1024;
        n
    };
    let nodes = vec![
        mk("x", 100, 0),
        mk("w", 0, 4096),
        mk("y", 10_000, 0),
        mk("z", 100, 0),
        mk("t", 100, 0),
    ];
    let edges = vec![(0, 2, None), (1, 2, None), (2, 3, None), (3, 4, None), (0, 4, None)];
    let g = Graph::new("slides", nodes, edges).unwrap();
    let f = GraphFeatures::new(&g, &ring(3, 1e9), 16, &Device::Cpu, DType::F64).unwrap();
    (g, f, [0, 1, 1, 1, 2])
}

/// A slide is a move to a neighbouring chip that keeps the chip flow going
/// forward, the weight of one node moves with it, and relief is positive
/// exactly towards a lighter chip.
#[test]
fn slides_keep_the_chip_flow_forward() {
    let (_, f, anchor) = slide_case();
    let (slide, relief) = f.anchor_terms(&anchor).unwrap();
    let (slide, relief) = (slide.to_vec2::<f64>().unwrap(), relief.to_vec2::<f64>().unwrap());
    let expect: [[f64; 3]; 5] = [
        [0.0, 1.0, 0.0], // x: its consumers are all past chip 0
        [1.0, 0.0, 0.0], // w: goes where y goes
        [1.0, 0.0, 0.0], // y: down with its weight; z holds it on chip 1
        [0.0, 0.0, 1.0], // z: up to t's chip
        [0.0, 1.0, 0.0], // t: down, all its inputs are before chip 2
    ];
    assert_eq!(slide, expect.map(|r| r.to_vec()).to_vec());
    for (u, row) in relief.iter().enumerate() {
        for (c, r) in row.iter().enumerate() {
            // Chip 1 (y) is by far the heaviest.
            let want = if slide[u][c] == 0.0 {
                0.0
            } else if c == 1 {
                -1.0
            } else if anchor[u] == 1 {
                1.0
            } else {
                0.0
            };
            assert!((r - want).abs() < 0.02, "relief[{u}][{c}] = {r}, about {want} expected");
        }
    }
    assert!(f.anchor_terms(&[0, 1, 1, 1]).is_err());
    assert!(f.anchor_terms(&[0, 1, 1, 1, 3]).is_err());
}

/// A demonstration teaches only the moves that are slides from the anchor.
#[test]
fn a_demonstration_teaches_its_slides() {
    let (_, f, anchor) = slide_case();
    // x two chips up is no slide; y and its weight down are; z stays.
    let target = f.slide_target(&anchor, &[2, 0, 0, 1, 2]).unwrap();
    assert_eq!(target, vec![0, 0, 0, 1, 2]);
    assert!(f.slide_target(&anchor, &[0, 1]).is_err());
}

/// A lower temperature sharpens the policy towards its likeliest chips;
/// a temperature that is not positive is refused.
#[test]
fn temperature_sharpens_the_policy() {
    let mut policy = Policy::new(&small_config(), &Device::Cpu, DType::F64).unwrap();
    let f = policy.features(&tiny(), &ring(3, 1e6)).unwrap();
    let top = |p: &[Vec<f32>]| -> f32 { p.iter().map(|r| r.iter().copied().fold(0.0, f32::max)).sum() };
    let base = policy.probs(&f, None).unwrap();
    policy.set_temperature(0.25).unwrap();
    let sharp = policy.probs(&f, None).unwrap();
    assert!(top(&sharp) > top(&base) + 1e-3, "{sharp:?} vs {base:?}");
    for (a, b) in base.iter().zip(&sharp) {
        let arg = |r: &[f32]| (0..r.len()).max_by(|&i, &j| r[i].total_cmp(&r[j])).unwrap();
        assert_eq!(arg(a), arg(b));
    }
    for t in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(policy.set_temperature(t).is_err(), "{t}");
    }
}
