use super::{reward, Hdp, HdpConfig};
use crate::placers::testing::{mean_score, optimum, problem, run_valid, OBJECTIVES};

#[test]
fn hdp_partitions_are_valid_under_both_objectives() {
    for objective in OBJECTIVES {
        let p = problem(objective);
        run_valid(&p, &mut Hdp::default(), 30, 1);
    }
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let p = problem("minimize step_time");
    let a = run_valid(&p, &mut Hdp::default(), 24, 5);
    let b = run_valid(&p, &mut Hdp::default(), 24, 5);
    let scores = |o: &crate::strategy::Outcome| o.records.iter().map(|r| r.throughput).collect::<Vec<_>>();
    assert_eq!(scores(&a), scores(&b));
    assert_eq!(a.best, b.best);
}

/// Per-graph training moves the samples towards the optimum exhaustive
/// search knows: the last samples are on average faster than the first,
/// and the best reaches the optimum. The policy's samples alone: the walk
/// a stalled run takes around its best would mix in moves from it.
#[test]
fn training_improves_the_step_time_towards_the_optimum() {
    let p = problem("minimize step_time");
    let best = optimum(&p);
    let mut hdp = Hdp::new(HdpConfig::default());
    hdp.walk = false;
    let o = run_valid(&p, &mut hdp, 400, 0);
    let (first, last) = (mean_score(&o, 0, 40), mean_score(&o, 360, 400));
    assert!(last > first, "the last samples average {last}, the first {first}");
    // The same run at a learning rate that leaves the weights as they were:
    // its draws stay those of the fresh network, so the gain is the
    // training's (its draws alone also reach the optimum of six nodes).
    let mut frozen = Hdp::new(HdpConfig {
        lr: 0.0,
        ..HdpConfig::default()
    });
    frozen.walk = false;
    let still = mean_score(&run_valid(&p, &mut frozen, 400, 0), 360, 400);
    assert!(last > still, "the last samples average {last}, untrained {still}");
    let found = o.best.expect("a partition").throughput;
    assert!(found >= best * (1.0 - 1e-9), "best {found} short of the optimum {best}");
}

#[test]
fn the_reward_prefers_faster_placements_and_fewer_repairs() {
    // Scores are one over the step: twice greedy's score is half its step.
    assert!(reward(Some(2.0), 1.0, 0, 10, 1.0) > reward(Some(1.0), 1.0, 0, 10, 1.0));
    assert!((reward(Some(1.0), 1.0, 0, 10, 1.0) + 1.0).abs() < 1e-12);
    assert!(reward(Some(1.0), 1.0, 5, 10, 1.0) < reward(Some(1.0), 1.0, 0, 10, 1.0));
    // A refused placement is worse than any valid one within a hundred times
    // greedy's step, and valid ones are told apart however slow they are.
    assert!(reward(None, 1.0, 0, 10, 1.0) <= reward(Some(0.01), 1.0, 0, 10, 1.0));
    assert!(reward(Some(0.01), 1.0, 0, 10, 1.0) > reward(Some(0.001), 1.0, 0, 10, 1.0));
    assert!(reward(Some(f64::NAN), 1.0, 0, 10, 1.0).is_finite());
}
