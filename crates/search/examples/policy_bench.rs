//! Times the default policy (8 layers of 128, T = 3) on the largest graph:
//! forward, and forward + backward + AdamW step of a PPO minibatch, to plan
//! training time. `cargo run --release -p mcm-search --example policy_bench [graph] [chips]`.

use candle_core::{DType, Device};
use mcm_core::package::{Chip, Link, Package};
use mcm_core::quantity::{Dim, Scalar};
use mcm_search::policy::ppo::{self, Batch, PpoConfig, Rollout};
use mcm_search::policy::{Policy, PolicyConfig};
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::time::Instant;

fn ring(c: usize) -> Package {
    let chips = (0..c)
        .map(|i| Chip {
            name: format!("die[{i}]"),
            attrs: BTreeMap::from([
                ("memory".to_string(), Scalar::Num(128.0 * 1024.0 * 1024.0, Dim::BYTES)),
                ("compute".to_string(), Scalar::Num(4e12, Dim::FLOP_RATE)),
            ]),
        })
        .collect();
    let mut links = Vec::new();
    for i in 0..c as u32 {
        for j in [(i + 1) % c as u32, (i + c as u32 - 1) % c as u32] {
            if j != i && !links.iter().any(|l: &Link| l.src == i && l.dst == j) {
                links.push(Link {
                    src: i,
                    dst: j,
                    attrs: BTreeMap::from([("bandwidth".to_string(), Scalar::Num(25e9, Dim::RATE))]),
                });
            }
        }
    }
    Package::new(format!("ring{c}"), chips, links).unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let graph = args.get(1).map(String::as_str).unwrap_or("data/graphs/gpt2-xl.json.gz");
    let chips: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(36);
    let g = mcm_core::graph::load_graph_file(std::path::Path::new(graph)).unwrap();
    let pkg = ring(chips);
    for iterations in [3, 1] {
        let cfg = PolicyConfig {
            iterations,
            ..PolicyConfig::default()
        };
        let policy = Policy::new(&cfg, &Device::Cpu, DType::F32).unwrap();
        let t = Instant::now();
        let f = policy.features(&g, &pkg).unwrap();
        let features_s = t.elapsed().as_secs_f64();
        println!(
            "{}: {} decision nodes, {} placed edges, {chips} chips; policy {}x{} T={iterations}, {} parameters; features {:.1}ms",
            g.name,
            g.num_placed(),
            g.placed_edges().len(),
            cfg.layers,
            cfg.hidden,
            policy.num_parameters(),
            features_s * 1e3
        );
        let reps = 5;
        // Warm up (thread pool, allocator) before timing.
        let mut probs = policy.probs(&f, None).unwrap();
        let t = Instant::now();
        for _ in 0..reps {
            probs = policy.probs(&f, None).unwrap();
        }
        let probs_s = t.elapsed().as_secs_f64() / reps as f64;
        let t = Instant::now();
        for _ in 0..reps {
            policy.forward(&f, None).unwrap();
        }
        let forward_s = t.elapsed().as_secs_f64() / reps as f64;
        println!("  forward: probs {probs_s:.3}s, tensors only {forward_s:.3}s");

        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let features = vec![f];
        let rollouts: Vec<Rollout> = (0..5)
            .map(|k| {
                let (actions, lp) = ppo::sample_actions(&probs, &mut rng);
                Rollout {
                    credit: None,
                    graph: 0,
                    prev: None,
                    actions,
                    old_log_probs: lp,
                    reward: k as f32,
                    value: 0.0,
                }
            })
            .collect();
        let batch = Batch {
            features: &features,
            rollouts,
        };
        let adv = ppo::advantages(&batch.rollouts);
        let pcfg = PpoConfig::default();
        let t = Instant::now();
        for _ in 0..reps {
            let l = ppo::loss(&policy, &batch, &[0, 1, 2, 3, 4], &adv, &pcfg).unwrap();
            let _ = l.total.backward().unwrap();
        }
        println!(
            "  forward+backward (5 rollouts):   {:.3}s",
            t.elapsed().as_secs_f64() / reps as f64
        );
        // One update = epochs x minibatches steps; 20 rollouts in 4 minibatches of 5.
        let full = Batch {
            features: &features,
            rollouts: (0..20).map(|i| batch.rollouts[i % 5].clone()).collect(),
        };
        let mut opt = ppo::optimizer(&policy, &pcfg).unwrap();
        let one_epoch = PpoConfig {
            epochs: 1,
            ..pcfg.clone()
        };
        let t = Instant::now();
        ppo::update(&policy, &mut opt, &full, &one_epoch, &mut rng).unwrap();
        let epoch_s = t.elapsed().as_secs_f64();
        println!(
            "  one PPO epoch (4 minibatch steps): {epoch_s:.3}s -> one default update (10 epochs) ~{:.1}s + 20 rollouts' forwards",
            epoch_s * pcfg.epochs as f64
        );
    }
}
