//! `exact` against exhaustive search on tiny random problems (those of
//! tests/bounds.rs: random DAGs on rings, a mesh and packages with a fast
//! chip, under random subsets of the stdlib rules): it finds the optimum and
//! proves it; the bound it claims is never above a partition exhaustive
//! search finds, even when its budget stops it early; and the solver's
//! latency target agrees with the cost model on every valid partition.

use crate::bounds::{instance, problem};
use mcm_core::problem::Problem;
use mcm_search::cost::{CostModel, Judge, JudgeOptions};
use mcm_search::strategy::{self, Budget, Exact, Outcome};
use mcm_solver::{exhaustive, Options, Solver, Target};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Every partition valid under the rules and at evaluation, with its latency.
pub(crate) fn judged(p: &Problem, judge: &Judge, model: &CostModel) -> Vec<(Vec<u32>, f64)> {
    let mut out = Vec::new();
    exhaustive::for_each_valid(&p.graph, &p.package, &p.constraints, |pl| {
        if judge.evaluate(&pl.chips).throughput().is_some() {
            out.push((pl.chips.clone(), model.latency(&pl.chips).unwrap()));
        }
        true
    })
    .expect("small enough to enumerate");
    out
}

fn exact(p: &Problem, judge: &Judge, budget: Budget) -> Option<Outcome> {
    strategy::run(p, judge, &mut Exact, budget, 0, None).ok()
}

#[test]
fn exact_proves_the_optimum_that_exhaustive_search_finds() {
    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    let (mut proved, mut cut_short) = (0, 0);
    for case in 0..150 {
        let text = instance(&mut rng);
        let p = problem(&text);
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap();
        let model = CostModel::new(&p).unwrap();
        let all = judged(&p, &judge, &model);
        let optimum = all.iter().map(|x| x.1).reduce(f64::min);
        let Some(o) = exact(&p, &judge, Budget::Samples(500)) else {
            assert!(
                optimum.is_none(),
                "case {case}: exact found the problem infeasible\n{text}"
            );
            continue;
        };
        let (Some(best), Some(optimum)) = (&o.best, optimum) else {
            assert!(o.best.is_none() && optimum.is_none(), "case {case}\n{text}");
            continue;
        };
        // The search keeps the first best throughput: a partition a bit
        // faster whose throughput rounds to the same is no better to it.
        let found = model.latency(&best.chips).unwrap();
        assert_eq!(
            1.0 / found,
            1.0 / optimum,
            "case {case}: exact's best is not the optimum\n{text}"
        );
        let bound = o.proven_bound_s.expect("a bound");
        assert!(
            bound <= optimum,
            "case {case}: bound {bound} above the optimum {optimum}\n{text}"
        );
        assert_eq!(bound, optimum, "case {case}: the optimum is not proven\n{text}");
        proved += 1;
        // Stopped after a few samples, it still claims nothing false.
        if let Some(o) = exact(&p, &judge, Budget::Samples(3)) {
            if let Some(b) = o.proven_bound_s {
                assert!(
                    b <= optimum,
                    "case {case}: bound {b} above the optimum {optimum}\n{text}"
                );
                cut_short += usize::from(b < optimum);
            }
        }
    }
    assert!(proved >= 80, "{proved} optima proved");
    assert!(
        cut_short >= 5,
        "{cut_short} runs cut short with a bound below the optimum"
    );
}

/// Under a target `T`, the solver with every node fixed accepts a valid
/// partition exactly when the cost model's latency is at most `T`.
#[test]
fn the_latency_target_agrees_with_the_cost_model() {
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let (mut kept, mut cut) = (0, 0);
    for case in 0..80 {
        let text = instance(&mut rng);
        let p = problem(&text);
        let model = CostModel::new(&p).unwrap();
        let mut seen = 0;
        exhaustive::for_each_valid(&p.graph, &p.package, &p.constraints, |pl| {
            let Ok(l) = model.latency(&pl.chips) else { return true };
            if l == 0.0 {
                return true;
            }
            for (t, want) in [(l, true), (f64::from_bits(l.to_bits() - 1), false)] {
                let target = Target {
                    model: model.core().clone(),
                    latency_s: t,
                };
                let accepted = Solver::with_target(&p, Options::default(), target).is_ok_and(|mut s| {
                    for (u, &c) in pl.chips.iter().enumerate() {
                        if s.set_domain(u as u32, &[c]) != u + 1 {
                            return false;
                        }
                    }
                    s.placement().is_some_and(|q| q == *pl)
                });
                assert_eq!(
                    accepted, want,
                    "case {case}: {:?} of latency {l} under {t}\n{text}",
                    pl.chips
                );
                kept += usize::from(want);
                cut += usize::from(!want);
            }
            seen += 1;
            seen < 6
        })
        .unwrap();
    }
    assert!(kept > 100 && cut > 100, "{kept} {cut}");
}
