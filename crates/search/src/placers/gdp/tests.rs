//! GDP: valid partitions under both objectives, pretraining that improves
//! its objective, checkpoints that round-trip, and seeds that fix a run.

use super::{load, save, Gdp, GdpConfig, GdpNet};
use crate::placers::agent::{self, AgentConfig, Net};
use crate::placers::small_problem::{ends, optimum, problem, run_on, task};
use crate::policy::PolicyError;

fn small() -> GdpConfig {
    GdpConfig {
        sage_layers: 2,
        hidden: 16,
        segment: 3,
        attention_layers: 1,
        op_buckets: 16,
        seed: 1,
    }
}

fn scratch() -> Gdp {
    Gdp::new("gdp-scratch", None, true).expect("fresh weights")
}

#[test]
fn partitions_are_valid_under_both_objectives() {
    for objective in ["maximize throughput", "minimize step_time"] {
        let p = problem(objective);
        let o = run_on(&p, &mut scratch(), 40, 1);
        assert_eq!(o.records.len(), 40, "{objective}");
    }
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let p = problem("minimize step_time");
    let a = run_on(&p, &mut scratch(), 40, 5);
    let b = run_on(&p, &mut scratch(), 40, 5);
    let scores = |o: &crate::strategy::Outcome| o.records.iter().map(|r| r.throughput).collect::<Vec<_>>();
    assert_eq!(scores(&a), scores(&b));
    assert_eq!(a.best.unwrap().chips, b.best.unwrap().chips);
}

#[test]
fn pretraining_improves_the_reward_and_reaches_the_optimum() {
    let p = problem("minimize step_time");
    let best = optimum(&p);
    let t = task(&p);
    let net = GdpNet::new(&small()).unwrap();
    // Dense draws (the papers' rollouts) from a network that starts near
    // uniform: what it learns shows in every rollout.
    let cfg = AgentConfig {
        rollouts: 8,
        moves: 0,
        lr: 3e-3,
        ..AgentConfig::default()
    };
    let logs = agent::pretrain(&net, std::slice::from_ref(&t), &cfg, 480, 3, &mut |_| {}).unwrap();
    let means: Vec<f64> = logs.iter().map(|l| l.mean_reward).collect();
    let (first, last) = ends(&means, 10);
    assert!(last > first, "mean reward from {first:.4} to {last:.4}");
    // The strategy (moves around the best so far, fine-tuned as it goes)
    // finds the optimum within 300 samples.
    let found = run_on(&p, &mut scratch(), 300, 2).best.unwrap().throughput;
    assert!(found >= best * (1.0 - 1e-12), "best {found} of an optimum {best}");
}

#[test]
fn checkpoints_round_trip_and_refuse_damage() {
    let dir = std::env::temp_dir().join(format!("mcm-gdp-ckpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stem = dir.join("gdp");
    let p = problem("maximize throughput");
    let net = GdpNet::new(&small()).unwrap();
    save(&net, &stem, serde_json::json!({"test": true})).unwrap();
    let back = load(&stem).unwrap();
    assert_eq!(back.config(), net.config());
    let f = agent::features(&net, &p).unwrap();
    let out = |n: &GdpNet| {
        n.forward(&f)
            .unwrap()
            .0
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    assert_eq!(out(&net), out(&back));
    // Through the strategy too: a run from the checkpoint is valid.
    let mut s = Gdp::new("gdp", Some(stem.clone()), false).unwrap();
    run_on(&p, &mut s, 20, 1);
    // A byte changed in the weights is caught by the checksum.
    let weights = dir.join("gdp.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&weights, bytes).unwrap();
    assert!(matches!(load(&stem), Err(PolicyError::Corrupt { .. })));
    // Another placer's checkpoint is refused by name.
    let mars = crate::placers::mars::MarsNet::new(&Default::default()).unwrap();
    crate::placers::mars::save(&mars, &dir.join("mars"), serde_json::Value::Null).unwrap();
    let e = load(&dir.join("mars")).err().expect("refused");
    assert!(e.to_string().contains("`mars` weights"), "{e}");
    assert!(Gdp::new("gdp", Some(dir.join("none")), false).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
