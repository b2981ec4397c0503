//! The target cuts exactly the placements the model puts over it: the
//! propagator on complete placements and SAT under decisions fixing every
//! node agree with [`LatencyModel::latency`] for targets at and around each
//! placement's latency; incremental propagation matches from-scratch; SAT
//! with no decisions finds the optimum that enumeration finds; with
//! measured op times too.

use super::{Target, TargetPropagator};
use crate::domain::mask_of;
use crate::propagator::{Cx, Net, Propagator};
use crate::sat::{SatAnswer, SatOracle};
use crate::store::Store;
use mcm_core::graph::{Graph, Node};
use mcm_core::latency::LatencyModel;
use mcm_core::package::{Chip, Link, Package};
use mcm_core::problem::{Metric, Objective, Problem, Sense};
use mcm_core::quantity::{Dim, Scalar};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// A random tiny graph (a replicable node half the time) on a random
/// package: a one-way line, a two-way ring or a 2x2 mesh, chips of unequal
/// speeds, links with or without a latency.
fn instance(rng: &mut ChaCha8Rng) -> (Arc<Graph>, Arc<Package>) {
    let n = rng.random_range(1..=4);
    let mut nodes: Vec<Node> = (0..n)
        .map(|i| {
            let mut x = Node::new(format!("n{i}"));
            x.flops = rng.random_range(0..=6) * 1000;
            x.output_bytes = rng.random_range(0..=4) * 100;
            x
        })
        .collect();
    let mut edges = Vec::new();
    for j in 0..n {
        for i in 0..j {
            if rng.random_bool(0.5) {
                let bytes = rng.random_bool(0.3).then(|| rng.random_range(0..=4) * 100);
                edges.push((i, j, bytes));
            }
        }
    }
    if rng.random_bool(0.5) {
        let mut w = Node::new("w");
        w.flops = rng.random_range(1..=4) * 1000;
        w.replicable = true;
        nodes.push(w);
        for j in 0..n {
            if rng.random_bool(0.5) {
                edges.push((n, j, None));
            }
        }
    }
    let g = Graph::new("g", nodes, edges).expect("a DAG");
    let attrs = |pairs: &[(&str, f64, Dim)]| {
        pairs
            .iter()
            .map(|&(k, v, d)| (k.to_string(), Scalar::Num(v, d)))
            .collect()
    };
    let c: u32 = rng.random_range(1..=3);
    let (c, pairs): (u32, Vec<(u32, u32)>) = match rng.random_range(0..3) {
        0 => (c, (0..c.saturating_sub(1)).map(|a| (a, a + 1)).collect()),
        1 => (
            c,
            (0..c)
                .flat_map(|a| [(a, (a + 1) % c), ((a + 1) % c, a)])
                .filter(|p| p.0 != p.1)
                .collect(),
        ),
        _ => (4, vec![(0, 1), (1, 0), (0, 2), (2, 0), (1, 3), (3, 1), (2, 3), (3, 2)]),
    };
    let chips: Vec<Chip> = (0..c)
        .map(|i| Chip {
            name: format!("c{i}"),
            attrs: attrs(&[("compute", rng.random_range(1..=3) as f64 * 1000.0, Dim::FLOP_RATE)]),
        })
        .collect();
    let mut links: Vec<Link> = Vec::new();
    for (a, b) in pairs {
        if links.iter().any(|l| (l.src, l.dst) == (a, b)) {
            continue;
        }
        let mut at = vec![("bandwidth", rng.random_range(1..=3) as f64 * 100.0, Dim::RATE)];
        if rng.random_bool(0.3) {
            at.push(("latency", 0.5, Dim::TIME));
        }
        links.push(Link {
            src: a,
            dst: b,
            attrs: attrs(&at),
        });
    }
    let mut chips: Vec<Chip> = chips;
    let mut g = g;
    // Half the time, measured op times on some chips' kinds.
    if rng.random_bool(0.5) {
        for chip in &mut chips {
            if let Some(k) = [Some("x"), Some("y"), None][rng.random_range(0..3)] {
                chip.attrs.insert("kind".into(), Scalar::Str(k.into()));
            }
        }
        let mut b = mcm_core::graph::ProfileBuilder::default();
        for _ in 0..g.nodes.len() {
            let mut times = Vec::new();
            for k in ["x", "y"] {
                if rng.random_bool(0.6) {
                    times.push((k.to_string(), rng.random_range(0..=8) as f64 * 0.5));
                }
            }
            b.push(times);
        }
        g = g.with_profile(b.finish()).expect("a profile of its nodes");
    }
    let p = Package::new("p", chips, links).expect("a package");
    (Arc::new(g), Arc::new(p))
}

fn problem(g: &Arc<Graph>, p: &Arc<Package>) -> Problem {
    Problem {
        name: "t".into(),
        graph: g.clone(),
        package: p.clone(),
        constraints: Vec::new(),
        objective: Objective {
            sense: Sense::Minimize,
            metric: Metric::Latency,
        },
        evaluator: None,
        span: Default::default(),
        stricter: Default::default(),
    }
}

/// Every placement of `n` nodes on `c` chips.
fn placements(n: usize, c: u32) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new()];
    for _ in 0..n {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..c).map(move |k| {
                    let mut q = p.clone();
                    q.push(k);
                    q
                })
            })
            .collect();
    }
    out
}

/// Propagates every node fixed to `chips` under the target, as the engine
/// does (fix, queue, late, complete): whether it passes.
fn propagator_accepts(net: &Net, target: &Target, chips: &[u32]) -> bool {
    let mut store = Store::new(chips.len(), net.package.num_chips());
    let Ok(mut p) = TargetPropagator::build(&mut Cx::new(&mut store, net, 0), target.clone()) else {
        return false;
    };
    for (x, &k) in chips.iter().enumerate() {
        let mask = mask_of(store.chips, &[k]);
        if store.restrict(x as u32, &mask, usize::MAX).is_err() {
            return false;
        }
    }
    let run = |store: &mut Store, p: &mut TargetPropagator| -> Result<(), crate::store::Fail> {
        while let Some(x) = store.dequeue() {
            p.on_change(x, &mut Cx::new(store, net, 0))?;
        }
        p.late(&mut Cx::new(store, net, 0))?;
        p.complete(&Cx::new(store, net, 0))
    };
    run(&mut store, &mut p).is_ok()
}

/// The targets that decide a placement: its latency (met) and the float
/// just below (missed), and a little above and below.
fn targets_around(l: f64) -> [f64; 4] {
    [l, f64::from_bits(l.to_bits() - 1), l * 1.01, l * 0.99]
}

#[test]
fn the_target_cuts_exactly_the_placements_over_it() {
    let mut rng = ChaCha8Rng::seed_from_u64(24);
    let (mut met, mut missed, mut unroutable) = (0, 0, 0);
    for case in 0..150 {
        let (g, p) = instance(&mut rng);
        let model = Arc::new(LatencyModel::new(g.clone(), p.clone()).unwrap());
        let net = Net::new(&g, &p);
        let prob = problem(&g, &p);
        let mut oracle = SatOracle::new(&prob, true);
        let all = placements(g.num_placed(), p.num_chips() as u32);
        // Decide a few placements at targets around other placements' latencies.
        for chips in all.iter().take(30) {
            let lat = model.latency(chips);
            unroutable += usize::from(lat.is_err());
            let Ok(l) = lat else {
                let t = Target {
                    model: model.clone(),
                    latency_s: f64::INFINITY,
                };
                assert!(
                    !propagator_accepts(&net, &t, chips),
                    "case {case}: {chips:?} has no route"
                );
                continue;
            };
            if l == 0.0 {
                continue;
            }
            for t in targets_around(l) {
                let target = Target {
                    model: model.clone(),
                    latency_s: t,
                };
                let want = l <= t;
                met += usize::from(want);
                missed += usize::from(!want);
                assert_eq!(
                    propagator_accepts(&net, &target, chips),
                    want,
                    "case {case}: {chips:?}, latency {l}, target {t}"
                );
                oracle.set_target(Some(target));
                let fixed: Vec<(u32, Vec<u32>)> = chips.iter().enumerate().map(|(u, &k)| (u as u32, vec![k])).collect();
                let sat = matches!(oracle.solve(&prob, &fixed), SatAnswer::Sat(_));
                assert_eq!(sat, want, "case {case}: SAT on {chips:?}, latency {l}, target {t}");
            }
        }
    }
    assert!(
        met > 200 && missed > 200 && unroutable > 10,
        "{met} {missed} {unroutable}"
    );
}

/// With no decisions, SAT under a target finds a placement exactly when
/// enumeration has one at or below it: at the optimum and just below it.
#[test]
fn sat_under_a_target_finds_the_optimum() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut proved = 0;
    for case in 0..120 {
        let (g, p) = instance(&mut rng);
        let model = Arc::new(LatencyModel::new(g.clone(), p.clone()).unwrap());
        let prob = problem(&g, &p);
        let best = placements(g.num_placed(), p.num_chips() as u32)
            .iter()
            .filter_map(|c| model.latency(c).ok())
            .fold(f64::INFINITY, f64::min);
        if !(best > 0.0 && best.is_finite()) {
            continue;
        }
        let mut oracle = SatOracle::new(&prob, true);
        for (t, want) in [
            (best * 1.5, true),
            (best, true),
            (f64::from_bits(best.to_bits() - 1), false),
        ] {
            oracle.set_target(Some(Target {
                model: model.clone(),
                latency_s: t,
            }));
            match oracle.solve(&prob, &[]) {
                SatAnswer::Sat(pl) => {
                    assert!(want, "case {case}: found {pl:?} under {t}, the optimum is {best}");
                    assert!(model.latency(&pl.chips).unwrap() <= t);
                }
                SatAnswer::Unsat(core) => {
                    assert!(!want, "case {case}: nothing under {t}, the optimum is {best}");
                    assert!(core.target && core.decisions.is_empty());
                    proved += 1;
                }
            }
        }
    }
    assert!(proved > 50, "{proved}");
}

/// Incremental propagation (decisions, undone at random) reaches the same
/// domains, or the same failure, as from-scratch propagation of the same
/// decisions, under targets that prune.
#[test]
fn incremental_propagation_matches_from_scratch() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut failures = 0;
    let mut pruned = 0;
    for case in 0..300 {
        let (g, p) = instance(&mut rng);
        let model = Arc::new(LatencyModel::new(g.clone(), p.clone()).unwrap());
        let total: f64 = model.flops.iter().sum::<f64>() / model.compute.iter().cloned().fold(f64::INFINITY, f64::min);
        let target = Target {
            model: model.clone(),
            latency_s: total * rng.random_range(0.2..1.0),
        };
        let net = Net::new(&g, &p);
        let n = g.num_placed();
        let scratch = |decisions: &[(u32, u32)]| -> Option<Vec<Vec<u32>>> {
            let mut store = Store::new(n, p.num_chips());
            let mut prop = TargetPropagator::build(&mut Cx::new(&mut store, &net, 0), target.clone()).ok()?;
            for &(x, k) in decisions {
                store.restrict(x, &mask_of(store.chips, &[k]), usize::MAX).ok()?;
            }
            loop {
                while store.dequeue().is_some() {}
                prop.propagate_from_scratch(&mut Cx::new(&mut store, &net, 0)).ok()?;
                if store.queue.is_empty() {
                    break;
                }
            }
            if store.all_fixed() {
                prop.complete(&Cx::new(&mut store, &net, 0)).ok()?;
            }
            Some((0..n as u32).map(|x| store.dom(x).to_vec()).collect())
        };
        // Incremental: as the engine runs it, every node woken at the root.
        let fixpoint = |store: &mut Store, prop: &mut TargetPropagator| loop {
            while let Some(y) = store.dequeue() {
                prop.on_change(y, &mut Cx::new(store, &net, 0))?;
            }
            prop.late(&mut Cx::new(store, &net, 0))?;
            if store.queue.is_empty() {
                break if store.all_fixed() {
                    prop.complete(&Cx::new(store, &net, 0))
                } else {
                    Ok(())
                };
            }
        };
        let mut store = Store::new(n, p.num_chips());
        let root = TargetPropagator::build(&mut Cx::new(&mut store, &net, 0), target.clone()).and_then(|mut prop| {
            store.queue.extend((0..n as u32).rev());
            fixpoint(&mut store, &mut prop).map(|_| prop)
        });
        let Ok(mut prop) = root else {
            assert_eq!(scratch(&[]), None, "case {case} at the root");
            continue;
        };
        let mut decisions: Vec<(u32, u32)> = Vec::new();
        for _ in 0..8 {
            if !decisions.is_empty() && rng.random_bool(0.25) {
                store.pop_level();
                prop.on_backtrack();
                decisions.pop();
            } else {
                let open: Vec<u32> = (0..n as u32).filter(|&x| !store.is_fixed(x)).collect();
                let Some(&x) = open.get(rng.random_range(0..open.len().max(1))) else {
                    break;
                };
                let dom = store.dom(x).to_vec();
                let k = dom[rng.random_range(0..dom.len())];
                store.push_level();
                decisions.push((x, k));
                let r = store
                    .restrict(x, &mask_of(store.chips, &[k]), usize::MAX)
                    .map(|_| ())
                    .and_then(|_| fixpoint(&mut store, &mut prop));
                let got = r
                    .ok()
                    .map(|_| (0..n as u32).map(|y| store.dom(y).to_vec()).collect::<Vec<_>>());
                let want = scratch(&decisions);
                assert_eq!(got, want, "case {case}, decisions {decisions:?}");
                pruned +=
                    usize::from(got.is_some_and(|d| d.iter().any(|x| x.len() < p.num_chips()) && decisions.len() < n));
                if want.is_none() {
                    failures += 1;
                    store.pop_level();
                    prop.on_backtrack();
                    decisions.pop();
                }
            }
        }
    }
    assert!(failures > 20 && pruned > 20, "{failures} failures, {pruned} prunings");
}

/// The engine under a target hands out only placements that meet it, and
/// says so when none does.
#[test]
fn the_engine_under_a_target() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (mut solved, mut refused) = (0, 0);
    for case in 0..100 {
        let (g, p) = instance(&mut rng);
        let model = Arc::new(LatencyModel::new(g.clone(), p.clone()).unwrap());
        let prob = problem(&g, &p);
        let best = placements(g.num_placed(), p.num_chips() as u32)
            .iter()
            .filter_map(|c| model.latency(c).ok())
            .fold(f64::INFINITY, f64::min);
        if !(best > 0.0 && best.is_finite()) {
            continue;
        }
        for (t, want) in [(best, true), (best * 0.999, false)] {
            let target = Target {
                model: model.clone(),
                latency_s: t,
            };
            // Depth first, lowest chip first: set_domain backtracks on failure.
            let found = crate::Solver::with_target(&prob, Default::default(), target.clone())
                .ok()
                .and_then(|mut s| {
                    while s.infeasible().is_none() {
                        if let Some(pl) = s.placement() {
                            return Some(pl);
                        }
                        let u = (0..s.num_nodes() as u32).find(|&u| !s.is_fixed(u))?;
                        let low = s.get_domain(u)[0];
                        s.set_domain(u, &[low]);
                    }
                    None
                });
            match found {
                Some(pl) => {
                    assert!(want, "case {case}: {pl:?} under {t}, optimum {best}");
                    assert!(target.holds(&pl.chips), "case {case}");
                    solved += 1;
                }
                None => {
                    assert!(!want, "case {case}: nothing under the optimum {best}");
                    refused += 1;
                }
            }
        }
    }
    assert!(solved > 30 && refused > 30, "{solved} {refused}");
}

/// Before a placement is complete, a transfer between two fixed nodes
/// counts on the chip it leaves: on a chain a -> b -> c under a target
/// below the time of `a -> b` over the link, `a` and `b` on two chips fail
/// with `c` still open; a chip whose compute is full turns `c` away.
#[test]
fn forced_transfers_and_full_chips_prune_before_the_end() {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let (_, p) = loop {
        let (g, p) = instance(&mut rng);
        if p.num_chips() == 2 && p.links.len() == 1 && !p.links[0].attrs.contains_key("latency") {
            break (g, p);
        }
    };
    let nodes: Vec<Node> = ["a", "b", "c"]
        .iter()
        .map(|id| {
            let mut x = Node::new(*id);
            x.flops = 1000;
            x.output_bytes = 400;
            x
        })
        .collect();
    let g = Arc::new(Graph::new("g", nodes, vec![(0, 1, None), (1, 2, None)]).unwrap());
    let model = Arc::new(LatencyModel::new(g.clone(), p.clone()).unwrap());
    let (bw, c0) = (model.bandwidth[0], model.compute[0]);
    let net = Net::new(&g, &p);
    // The link alone is over the target: fixing a on 0 and b on 1 fails.
    let t = 400.0 / bw * 0.99;
    let mut store = Store::new(3, 2);
    let target = Target {
        model: model.clone(),
        latency_s: t,
    };
    let mut prop = TargetPropagator::build(&mut Cx::new(&mut store, &net, 0), target).unwrap();
    store.push_level();
    store.restrict(0, &mask_of(2, &[0]), usize::MAX).unwrap();
    store.restrict(1, &mask_of(2, &[1]), usize::MAX).unwrap();
    while let Some(y) = store.dequeue() {
        let _ = prop.on_change(y, &mut Cx::new(&mut store, &net, 0));
    }
    assert!(
        prop.late(&mut Cx::new(&mut store, &net, 0)).is_err(),
        "the transfer a -> b is over {t}"
    );
    // Compute: a and b on chip 0 leave no room for c there.
    let t = 2000.0 / c0 + 500.0 / c0;
    let mut store = Store::new(3, 2);
    let target = Target { model, latency_s: t };
    let mut prop = TargetPropagator::build(&mut Cx::new(&mut store, &net, 0), target).unwrap();
    store.push_level();
    store.restrict(0, &mask_of(2, &[0]), usize::MAX).unwrap();
    store.restrict(1, &mask_of(2, &[0]), usize::MAX).unwrap();
    while let Some(y) = store.dequeue() {
        prop.on_change(y, &mut Cx::new(&mut store, &net, 0)).unwrap();
    }
    assert_eq!(store.dom(2).to_vec(), vec![1], "c no longer fits chip 0");
}
