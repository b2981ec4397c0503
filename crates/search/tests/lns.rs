//! `lns` and the `auto` portfolio against exhaustive search on tiny random
//! problems (those of bounds.rs): every partition they hand the judge
//! passes the checker; lns never ends worse than the start it is given and
//! mostly reaches the optimum; the bound auto claims is never above the
//! optimum, under a sample budget (turns) and a time budget (both workers
//! at once). (tests/solve_auto.rs at the root runs `solve` with them.)

use crate::bounds::{instance, problem};
use mcm_core::problem::{Placement, Problem};
use mcm_search::cost::{Analytical, CostModel, Evaluate, Judge, Verdict};
use mcm_search::strategy::{self, Auto, Budget, Lns, Outcome, Strategy};
use mcm_solver::check;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::{Arc, Mutex};

/// The analytical judge (dynamic check on), failing every partition the
/// checker refuses and keeping the others.
struct Checked {
    inner: Analytical,
    problem: Problem,
    seen: Arc<Mutex<Vec<Vec<u32>>>>,
}

impl Evaluate for Checked {
    fn evaluate(&self, chips: &[u32]) -> Verdict {
        let p = &self.problem;
        let broken = check(&p.graph, &p.package, &p.constraints, &Placement::new(chips.to_vec()));
        assert!(broken.is_empty(), "handed out {chips:?}: {}", broken[0].describe());
        self.seen.lock().unwrap().push(chips.to_vec());
        self.inner.evaluate(chips)
    }
}

fn checked_judge(p: &Problem) -> (Judge, Arc<Mutex<Vec<Vec<u32>>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let inner = Checked {
        inner: Analytical::new(p).expect("costable"),
        problem: p.clone(),
        seen: seen.clone(),
    };
    (Judge::with(Box::new(inner), "checked".into(), 1), seen)
}

/// Every partition valid under the rules and at evaluation (the analytical
/// judge), with its latency.
fn judged(p: &Problem, model: &CostModel) -> Vec<(Vec<u32>, f64)> {
    let judge = Judge::with(Box::new(Analytical::new(p).unwrap()), "analytical".into(), 1);
    crate::exact::judged(p, &judge, model)
}

/// A tiny random problem (tests/bounds.rs's), every partition valid under
/// its rules and at evaluation with its latency, and the optimum.
struct Case {
    text: String,
    p: Problem,
    model: CostModel,
    all: Vec<(Vec<u32>, f64)>,
    optimum: f64,
}

/// `None` when no partition of the drawn problem is valid.
fn draw_case(rng: &mut ChaCha8Rng) -> Option<Case> {
    let text = instance(rng);
    let p = problem(&text);
    let model = CostModel::new(&p).unwrap();
    let all = judged(&p, &model);
    let optimum = all.iter().map(|x| x.1).reduce(f64::min)?;
    Some(Case {
        text,
        p,
        model,
        all,
        optimum,
    })
}

fn run(p: &Problem, judge: &Judge, s: &mut dyn Strategy, budget: Budget, init: Option<&[u32]>) -> Outcome {
    strategy::run_from(p, judge, s, budget, 7, None, init)
        .expect("feasible")
        .0
}

#[test]
fn lns_never_ends_worse_than_its_start_and_hands_out_valid_partitions() {
    let mut rng = ChaCha8Rng::seed_from_u64(2025);
    let (mut cases, mut optimal) = (0, 0);
    for case in 0..120 {
        let Some(Case {
            text,
            p,
            model,
            all,
            optimum,
        }) = draw_case(&mut rng)
        else {
            continue;
        };
        // Any valid partition as the start, the worst more often than not.
        let start = match rng.random_bool(0.5) {
            true => all.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap(),
            false => &all[rng.random_range(0..all.len())],
        };
        let (judge, seen) = checked_judge(&p);
        let o = run(&p, &judge, &mut Lns, Budget::Samples(40), Some(&start.0));
        let best = o
            .best
            .as_ref()
            .unwrap_or_else(|| panic!("case {case}: no best\n{text}"));
        let found = model.latency(&best.chips).unwrap();
        assert!(
            found <= start.1,
            "case {case}: {found} worse than the start {}\n{text}",
            start.1
        );
        assert!(found >= optimum, "case {case}\n{text}");
        assert!(!seen.lock().unwrap().is_empty());
        if let Some(b) = o.proven_bound_s {
            assert!(
                b <= optimum,
                "case {case}: bound {b} above the optimum {optimum}\n{text}"
            );
        }
        cases += 1;
        optimal += usize::from(1.0 / found == 1.0 / optimum);
    }
    assert!(cases >= 60, "{cases} cases");
    assert!(
        optimal * 10 >= cases * 9,
        "lns reached the optimum in {optimal} of {cases} cases"
    );
}

#[test]
fn auto_claims_no_bound_above_the_optimum() {
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    let (mut cases, mut proved) = (0, 0);
    for case in 0..100 {
        let Some(Case {
            text,
            p,
            model,
            optimum,
            ..
        }) = draw_case(&mut rng)
        else {
            continue;
        };
        // Both paths: turns under samples, the race under a (short) time.
        let budget = match case % 4 {
            0 => Budget::Seconds(0.3),
            _ => Budget::Samples(60),
        };
        let (judge, _) = checked_judge(&p);
        let o = run(&p, &judge, &mut Auto, budget, None);
        let best = o
            .best
            .as_ref()
            .unwrap_or_else(|| panic!("case {case}: no best\n{text}"));
        let found = model.latency(&best.chips).unwrap();
        assert!(found >= optimum, "case {case}\n{text}");
        let bound = o.proven_bound_s.expect("at least the structural bound");
        assert!(
            bound <= optimum,
            "case {case}: bound {bound} above the optimum {optimum}\n{text}"
        );
        cases += 1;
        proved += usize::from(bound == found);
    }
    assert!(cases >= 50, "{cases} cases");
    assert!(proved * 10 >= cases * 8, "auto proved {proved} of {cases} optima");
}

/// A problem too large for `exact` under a sample budget (`lns::FREE_CAP`):
/// once lns's sweeps find nothing, auto anneals from its best for the
/// samples left instead of ending there, so it spends its whole budget
/// unless it has proven its best optimal.
#[test]
fn auto_spends_a_sample_budget_its_workers_leave() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut g = String::new();
    for i in 0..60 {
        g += &format!(
            "  n{i} {{ flops = {} GFLOP, output_bytes = {} MB }}\n",
            rng.random_range(1..=9),
            rng.random_range(1..=4)
        );
    }
    for i in 1..60 {
        g += &format!("  n{} -> n{i}\n", i - 1);
    }
    let text = format!(
        "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
         use std::topologies::ring\n\
         let t = ring(n = 20, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
         let g = graph {{\n{g}}}\n\
         partition g onto t {{ require acyclic_flow, no_skip, triangle_dependency, memory_capacity\n maximize throughput }}\n"
    );
    let p = crate::bounds::problem(&text);
    let (judge, _) = checked_judge(&p);
    let o = run(&p, &judge, &mut Auto, Budget::Samples(400), None);
    let best = o.best.as_ref().expect("a valid partition");
    let proven = o.proven_bound_s.is_some_and(|b| b * best.throughput >= 1.0 - 1e-9);
    assert!(
        proven || o.records.len() == 400,
        "auto ended after {} of 400 samples, unproven",
        o.records.len()
    );
}
