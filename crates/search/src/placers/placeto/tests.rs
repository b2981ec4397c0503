use super::train::{self, Settings};
use super::{features, load, save, Placeto, PlacetoConfig, PlacetoNet, Plan};
use crate::placers::testing::{judge, optimum, problem, run_valid, OBJECTIVES};
use crate::pretrain::Task;
use candle_core::Tensor;

use mcm_testkit::scratch;

fn fresh(seed: u64) -> PlacetoNet {
    PlacetoNet::new(&PlacetoConfig {
        seed,
        ..PlacetoConfig::default()
    })
    .expect("a network")
}

#[test]
fn placeto_partitions_are_valid_under_both_objectives() {
    for objective in OBJECTIVES {
        let p = problem(objective);
        for tune in [false, true] {
            run_valid(&p, &mut Placeto::new("placeto", fresh(0), tune), 30, 1);
        }
    }
}

#[test]
fn the_groups_cover_every_node_once_in_pipeline_order() {
    let p = problem("minimize step_time");
    for groups in [1, 4, 6, 50] {
        let plan = Plan::new(&p, groups);
        assert_eq!(plan.members.len(), groups.min(6));
        let mut all: Vec<u32> = plan.members.concat();
        all.sort();
        assert_eq!(all, (0..6).collect::<Vec<u32>>());
    }
}

/// The probabilities the network gives the first group under greedy's partition.
fn first_move(net: &PlacetoNet) -> Vec<f32> {
    let p = problem("minimize step_time");
    let f = features(net, &p).unwrap();
    let plan = Plan::new(&p, net.config.groups);
    let chips = crate::strategy::greedy_proposal(&p);
    let members = Tensor::from_vec(
        plan.members[0].clone(),
        plan.members[0].len(),
        &candle_core::Device::Cpu,
    )
    .unwrap();
    let lp = net
        .log_probs(
            &f,
            &plan.state(&chips, 0).unwrap(),
            &members,
            &plan.devices(&chips, 0).unwrap(),
        )
        .unwrap();
    lp.exp().unwrap().to_vec1::<f32>().unwrap()
}

#[test]
fn checkpoints_round_trip_and_refuse_what_is_not_theirs() {
    let dir = scratch("ckpt");
    let net = fresh(7);
    save(&net, &dir.join("p")).unwrap();
    let back = load(&dir.join("p")).unwrap();
    assert_eq!(back.config, net.config);
    assert_eq!(first_move(&back), first_move(&net));
    assert_ne!(first_move(&fresh(8)), first_move(&net));
    // A missing checkpoint says how to make one; damaged weights are caught.
    let e = load(&dir.join("none")).err().unwrap().to_string();
    assert!(e.contains("train --placer placeto"), "{e}");
    let weights = dir.join("p.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&weights, bytes).unwrap();
    let e = load(&dir.join("p")).err().unwrap().to_string();
    assert!(e.contains("checksum"), "{e}");
    // Another placer's sidecar is refused by name.
    let side = std::fs::read_to_string(dir.join("p.json")).unwrap();
    std::fs::write(dir.join("p.json"), side.replace("\"placeto\"", "\"hdp\"")).unwrap();
    let e = load(&dir.join("p")).err().unwrap().to_string();
    assert!(e.contains("not a placeto one"), "{e}");
}

fn task(objective: &str) -> Task {
    let p = problem(objective);
    let j = judge(&p);
    Task::new("small", p, j).expect("greedy is valid")
}

/// The mean final score of one zero-shot episode from greedy's partition, over seeds.
fn one_episode(net: PlacetoNet, seeds: u64) -> (f64, f64, PlacetoNet) {
    let p = problem("minimize step_time");
    let mut s = Placeto::new("placeto", net, false);
    let (mut sum, mut best) = (0.0, 0.0f64);
    for seed in 0..seeds {
        let o = run_valid(&p, &mut s, 6, seed);
        let last = o.records.last().and_then(|r| r.throughput).unwrap_or(0.0);
        sum += last;
        best = best.max(o.best.unwrap().throughput);
    }
    (sum / seeds as f64, best, s.net)
}

/// Training on a graph makes the policy's episodes from greedy's partition
/// end faster than a fresh policy's, and at the optimum exhaustive search knows.
#[test]
fn training_improves_the_episodes_towards_the_optimum() {
    let dir = scratch("train");
    let settings = Settings {
        samples: 600,
        seed: 3,
        config: PlacetoConfig {
            lr: 1e-2,
            ..PlacetoConfig::default()
        },
    };
    let tasks = [task("minimize step_time")];
    let (net, report) = train::run(&tasks, &settings, &dir, &mut |_| {}).expect("training runs");
    assert!(report.samples >= 600 && report.episodes > 0);
    let (before, _, _) = one_episode(fresh(3), 20);
    let (after, best, _) = one_episode(net, 20);
    assert!(after > before, "after training {after}, before {before}");
    let opt = optimum(&tasks[0].problem);
    assert!(best >= opt * (1.0 - 1e-9), "best {best} short of the optimum {opt}");
    // The checkpoint it wrote is the network it returned.
    let (again, _, _) = one_episode(load(&dir.join("placeto")).unwrap(), 20);
    assert_eq!(again, after);
}

#[test]
fn the_same_seed_gives_the_same_training() {
    let settings = Settings {
        samples: 60,
        seed: 1,
        config: PlacetoConfig::default(),
    };
    let tasks = [task("maximize throughput")];
    let (a, b) = (scratch("seed-a"), scratch("seed-b"));
    train::run(&tasks, &settings, &a, &mut |_| {}).unwrap();
    train::run(&tasks, &settings, &b, &mut |_| {}).unwrap();
    let weights = |d: &std::path::Path| std::fs::read(d.join("placeto.safetensors")).unwrap();
    assert_eq!(weights(&a), weights(&b));
    let rows = |d: &std::path::Path| {
        std::fs::read_to_string(d.join("log.csv"))
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(',').unwrap().0.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&a), rows(&b), "the log, less its clock");
}
