use super::build;
use super::resource::recognise;
use crate::checker::Checker;
use crate::harness::{
    check_incremental_against_scratch, check_incremental_against_scratch_sized, counts, graph, on, random_instance,
    ring, rule, TestSolver,
};
use mcm_core::graph::Graph;
use mcm_core::problem::{CmpOp, Formula, GroundConstraint, Term};
use rand::{Rng, SeedableRng};

fn cmp(op: CmpOp, a: Term, b: Term) -> Formula {
    Formula::Cmp(op, a, b)
}

/// Every family at once, and a generic rest: weights off chip 0, at most
/// two nodes a chip, a fractional budget a chip, edges at most one chip
/// apart upward, and (generic) some node off chip 0.
fn mixed(g: &Graph) -> GroundConstraint {
    let n = g.num_placed() as u32;
    let mut fs = Vec::new();
    for u in 0..n {
        if g.placed_node(u).params > 0 {
            fs.push(cmp(CmpOp::Ne, Term::Chip(u), Term::Const(0.0)));
        }
    }
    fs.extend(counts(n, 6, 2.0));
    for k in 0..6 {
        let items = (0..n)
            .map(|u| (on(u, k), Term::Const(0.1 * (g.placed_node(u).params + 1) as f64)))
            .collect();
        fs.push(cmp(CmpOp::Ge, Term::Const(0.45), Term::Sum(items)));
    }
    for e in g.placed_edges() {
        let d = Term::Sub(Box::new(Term::Chip(e.dst)), Box::new(Term::Chip(e.src)));
        fs.push(cmp(CmpOp::Le, d, Term::Const(1.0)));
    }
    let off0 = (0..n)
        .map(|u| cmp(CmpOp::Ne, Term::Chip(u), Term::Const(0.0)))
        .collect();
    fs.push(cmp(CmpOp::Ge, Term::Count(off0), Term::Const(1.0)));
    rule(fs)
}

#[test]
fn shapes_are_recognised_exactly_or_declined() {
    let s = recognise(&counts(3, 1, 2.5)[0], 4).unwrap();
    assert!(s.exact && s.cap == 2.0 && s.items.len() == 3);
    let lt = cmp(CmpOp::Lt, Term::Count(vec![on(0, 1), on(1, 9)]), Term::Const(2.0));
    let s = recognise(&lt, 4).unwrap();
    assert_eq!((s.cap, s.items.len()), (1.0, 1), "chip 9 does not exist: never counts");
    let neg = cmp(
        CmpOp::Le,
        Term::Sum(vec![(on(0, 0), Term::Const(-1.0))]),
        Term::Const(0.0),
    );
    assert!(recognise(&neg, 2).is_none(), "negative weights decline");
    let ge = cmp(CmpOp::Ge, Term::Count(vec![on(0, 0)]), Term::Const(1.0));
    assert!(recognise(&ge, 2).is_none(), "a lower bound is not a capacity");
}

#[test]
fn unary_instances_filter_the_root() {
    let (g, p) = (graph(&[1, 0], &[]), ring(&[9; 3]));
    let r = rule(vec![cmp(CmpOp::Ne, Term::Chip(0), Term::Const(0.0))]);
    let mut s = TestSolver::new(&g, &p);
    s.post(build, &r).unwrap();
    s.assert_dom(0, &[1, 2]);
    s.assert_dom(1, &[0, 1, 2]);
}

#[test]
fn a_full_chip_turns_the_others_away() {
    let (g, p) = (graph(&[0; 4], &[]), ring(&[9; 2]));
    let r = rule(counts(4, 2, 2.0));
    let mut s = TestSolver::new(&g, &p);
    s.post(build, &r).unwrap();
    s.set(0, &[0]).unwrap();
    s.set(1, &[0]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(2, &[1]);
    s.assert_dom(3, &[1]);
    let mut t = TestSolver::new(&g, &p);
    t.post(build, &r).unwrap();
    t.set(0, &[0]).unwrap();
    t.set(1, &[0]).unwrap();
    t.set(2, &[0]).unwrap();
    assert!(t.propagate().is_err(), "three nodes on a chip of two");
}

#[test]
fn fractional_budgets_are_judged_exactly_on_complete_placements() {
    // 0.1 + 0.2 > 0.3 in floating point, as the checker computes it.
    let (g, p) = (graph(&[0; 2], &[]), ring(&[9; 1]));
    let sum = Term::Sum(vec![(on(0, 0), Term::Const(0.1)), (on(1, 0), Term::Const(0.2))]);
    let r = rule(vec![cmp(CmpOp::Le, sum, Term::Const(0.3))]);
    let mut s = TestSolver::new(&g, &p);
    let holds = Checker::over(&g, &p, &[0, 0]).holds(&r.instances.get(0).formula);
    assert_eq!(s.post(build, &r).and_then(|_| s.propagate()).is_ok(), holds);
}

#[test]
fn edge_relations_are_arc_consistent() {
    let (g, p) = (graph(&[0; 2], &[(0, 1)]), ring(&[9; 5]));
    let d = Term::Sub(Box::new(Term::Chip(1)), Box::new(Term::Chip(0)));
    let r = rule(vec![
        cmp(CmpOp::Le, d.clone(), Term::Const(1.0)),
        cmp(CmpOp::Ge, d, Term::Const(0.0)),
    ]);
    let mut s = TestSolver::new(&g, &p);
    s.post(build, &r).unwrap();
    s.set(1, &[4]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(0, &[3, 4]);
    s.set(0, &[3]).unwrap();
    s.propagate().unwrap();
}

#[test]
fn incremental_propagation_matches_from_scratch() {
    let failed = check_incremental_against_scratch(23, 400, build, mixed);
    assert!(failed > 0, "some decisions fail");
}

/// Full domains on `c` chips with up to `most` random nodes fixed.
pub(super) fn some_fixed(rng: &mut impl Rng, n: u32, c: u32, most: u32) -> Vec<Vec<u32>> {
    let mut doms: Vec<Vec<u32>> = (0..n).map(|_| (0..c).collect()).collect();
    for _ in 0..rng.random_range(0..=most) {
        let u = rng.random_range(0..n) as usize;
        doms[u] = vec![rng.random_range(0..c)];
    }
    doms
}

/// Every valid completion of the decisions, by enumeration.
pub(super) fn completions(
    g: &Graph,
    p: &mcm_core::package::Package,
    rs: &[GroundConstraint],
    doms: &[Vec<u32>],
) -> Vec<Vec<u32>> {
    let n = doms.len();
    let mut out = Vec::new();
    let mut chips = vec![0u32; n];
    fn walk(i: usize, chips: &mut Vec<u32>, doms: &[Vec<u32>], ok: &mut dyn FnMut(&[u32])) {
        if i == doms.len() {
            ok(chips);
            return;
        }
        for &c in &doms[i] {
            chips[i] = c;
            walk(i + 1, chips, doms, ok);
        }
    }
    walk(0, &mut chips, doms, &mut |pl| {
        let checker = Checker::over(g, p, pl);
        if rs
            .iter()
            .flat_map(|r| r.instances.iter())
            .all(|i| checker.holds(&i.formula))
        {
            out.push(pl.to_vec());
        }
    });
    out
}

/// Propagation against enumeration: domains that keep every chip of every
/// valid completion, and a failure only when there is none. True when it
/// failed.
pub(super) fn sound<E>(case: usize, got: &Result<Vec<Vec<u32>>, E>, valid: &[Vec<u32>]) -> bool {
    match got {
        Err(_) => {
            assert!(valid.is_empty(), "case {case}: failed with {valid:?} valid");
            true
        }
        Ok(d) => {
            for pl in valid {
                for (u, &c) in pl.iter().enumerate() {
                    assert!(d[u].contains(&c), "case {case}: node {u} lost chip {c}");
                }
            }
            false
        }
    }
}

/// Against enumeration: propagation removes no chip of a valid completion
/// of the decisions, fails only when none exists, and a complete placement
/// passes exactly when the checker accepts it; the generic path agrees on
/// every verdict and keeps at least the families' domains.
#[test]
fn families_agree_with_enumeration_and_the_generic_path() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let (mut failed, mut pruned) = (0, 0);
    for case in 0..300 {
        let (g, p) = random_instance(&mut rng, 6, 4);
        let n = g.num_placed() as u32;
        // A count on its own constraint gets run bounds as well.
        let rs = [mixed(&g), rule(counts(n, 6, 2.0))];
        let c = p.num_chips() as u32;
        let doms = some_fixed(&mut rng, n, c, n);
        let valid = completions(&g, &p, &rs, &doms);
        let run = |b: crate::rules::Build| {
            let mut s = TestSolver::new(&g, &p);
            s.post(b, &rs[0])?;
            s.post(b, &rs[1])?;
            for (u, d) in doms.iter().enumerate() {
                s.set(u as u32, d)?;
            }
            s.propagate().map(|_| s.domains())
        };
        let fam = run(build);
        let gen = run(crate::generic::build);
        failed += usize::from(sound(case, &fam, &valid));
        if let Ok(d) = &fam {
            if d.iter().all(|x| x.len() == 1) {
                assert_eq!(valid.len(), 1, "case {case}: a complete placement passed invalid");
            }
        }
        if doms.iter().all(|x| x.len() == 1) {
            assert_eq!(fam.is_ok(), gen.is_ok(), "case {case}: verdicts differ");
        }
        if let (Ok(f), Ok(gd)) = (&fam, &gen) {
            for u in 0..n as usize {
                assert!(f[u].iter().all(|k| gd[u].contains(k)), "case {case}: node {u}");
            }
            pruned += usize::from(f != gd);
        }
    }
    assert!(failed > 0 && pruned > 0, "failures {failed}, stronger pruning {pruned}");
}

#[test]
fn nodes_confined_to_a_run_of_chips_must_fit_its_room() {
    let (g, p) = (graph(&[0; 3], &[]), ring(&[9; 3]));
    let r = rule(counts(3, 3, 1.0));
    let mut s = TestSolver::new(&g, &p);
    s.post(build, &r).unwrap();
    s.set(0, &[0, 1]).unwrap();
    s.set(1, &[0, 1]).unwrap();
    s.propagate().unwrap();
    s.set(2, &[1, 2]).unwrap();
    s.propagate().unwrap();
    s.set(2, &[0, 1]).unwrap();
    assert!(s.propagate().is_err(), "three nodes within chips 0 and 1, one a chip");
    let mut t = TestSolver::new(&g, &p);
    t.post(build, &r).unwrap();
    t.set(1, &[1, 2]).unwrap();
    t.set(2, &[2]).unwrap();
    t.set(0, &[1, 2]).unwrap();
    assert!(t.propagate().is_err(), "the same from the last chip");
}

#[test]
fn nodes_confined_to_a_window_of_chips_must_fit_its_room() {
    // Three nodes within chips 1 and 2, one a chip: the prefix 0..=2 and
    // the suffix 1.. each have room for them; the window 1..=2 does not.
    let (g, p) = (graph(&[0; 3], &[]), ring(&[9; 5]));
    let r = rule(counts(3, 5, 1.0));
    let mut s = TestSolver::new(&g, &p);
    s.post(build, &r).unwrap();
    s.set(0, &[1, 2]).unwrap();
    s.set(1, &[1, 2]).unwrap();
    s.propagate().unwrap();
    s.set(2, &[1, 2, 3]).unwrap();
    s.propagate().unwrap();
    s.set(2, &[1, 2]).unwrap();
    assert!(s.propagate().is_err(), "three nodes within chips 1 and 2, one a chip");
}

/// Against enumeration, with domains confined to random windows of chips
/// (as the pipeline rules confine a node's weights next to it): the window
/// bounds fail only when no valid completion exists.
#[test]
fn window_bounds_keep_every_solution() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(43);
    let mut failed = 0;
    for case in 0..400 {
        let (g, p) = random_instance(&mut rng, 7, 6);
        let n = g.num_placed() as u32;
        let c = p.num_chips() as u32;
        let cap = f64::from(rng.random_range(1..=2u32));
        let rs = [upward_edges(&g), rule(counts(n, c, cap))];
        let mut doms = some_fixed(&mut rng, n, c, 1);
        for d in doms.iter_mut().filter(|d| d.len() > 1) {
            let lo = rng.random_range(0..c);
            let hi = (lo + rng.random_range(0..3)).min(c - 1);
            *d = (lo..=hi).collect();
        }
        let valid = completions(&g, &p, &rs, &doms);
        let mut s = TestSolver::new(&g, &p).upward();
        let got = (|| {
            s.post(crate::rules::Precedence::build, &rs[0])?;
            s.post(build, &rs[1])?;
            for (u, d) in doms.iter().enumerate() {
                s.set(u as u32, d)?;
            }
            s.propagate().map(|_| s.domains())
        })();
        failed += usize::from(sound(case, &got, &valid));
    }
    assert!(failed > 0, "some cases fail");
}

#[test]
fn run_bounds_match_from_scratch() {
    let failed = check_incremental_against_scratch(29, 400, build, |g| rule(counts(g.num_placed() as u32, 5, 1.0)));
    // Fractional weights: run bounds in scaled units.
    assert!(failed > 0, "some decisions fail");
    let failed = check_incremental_against_scratch(31, 400, build, |g| {
        let n = g.num_placed() as u32;
        let fs = (0..5)
            .map(|k| {
                let items = (0..n)
                    .map(|u| (on(u, k), Term::Const(0.3 * (g.placed_node(u).params + 1) as f64)))
                    .collect();
                cmp(CmpOp::Le, Term::Sum(items), Term::Const(0.7))
            })
            .collect();
        rule(fs)
    });
    assert!(failed > 0, "some decisions fail");
}

/// On packages wider than a window (up to 14 chips), where a check reads
/// only the windows whose load grew since the last check passed: the same
/// failures as the from-scratch check of every window, after decisions and
/// undos alike.
#[test]
fn window_checks_of_the_changed_chips_match_from_scratch() {
    let failed = check_incremental_against_scratch_sized(47, 300, (10, 14, 24), build, |g| {
        rule(counts(g.num_placed() as u32, 14, 1.0))
    });
    assert!(failed > 0, "some decisions fail");
}

/// Nodes narrowed step by step to runs of chips inside a package of 16
/// (one a chip), with undos: a window of the middle overflows once more
/// nodes are confined to it than it has chips, and the incremental check,
/// which reads only the windows holding a node whose bounds moved, fails
/// exactly when the from-scratch check of every window does.
#[test]
fn narrowing_to_runs_fails_exactly_when_some_window_overflows() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(53);
    let (n, c) = (9u32, 16u32);
    let (g, p) = (graph(&[0; 9], &[]), ring(&[9; 16]));
    let r = rule(counts(n, c, 1.0));
    let mut windows = 0;
    for case in 0..300 {
        let mut inc = TestSolver::new(&g, &p);
        inc.post(build, &r).unwrap();
        let mut decisions: Vec<(u32, Vec<u32>)> = Vec::new();
        for step in 0..30 {
            if !decisions.is_empty() && rng.random_bool(0.2) {
                inc.pop();
                decisions.pop();
                continue;
            }
            let x = rng.random_range(0..n);
            let lo = rng.random_range(0..c);
            let hi = (lo + rng.random_range(0..4)).min(c - 1);
            let chips: Vec<u32> = inc.dom(x).into_iter().filter(|k| (lo..=hi).contains(k)).collect();
            if chips.is_empty() || chips.len() == inc.dom(x).len() {
                continue;
            }
            inc.push();
            decisions.push((x, chips.clone()));
            let got = inc.set(x, &chips).and_then(|_| inc.propagate()).is_ok();
            let mut s = TestSolver::new(&g, &p);
            s.post(build, &r).unwrap();
            let want = decisions.iter().all(|(y, d)| s.set(*y, d).is_ok()) && s.propagate_from_scratch().is_ok();
            assert_eq!(got, want, "case {case}, step {step}: {decisions:?}");
            if !got {
                // Past the prefixes and suffixes: a window of the middle.
                windows += usize::from(decisions.iter().all(|(_, d)| d[0] > 0 && d[d.len() - 1] < c - 1));
                inc.pop();
                decisions.pop();
            }
        }
    }
    assert!(windows > 0, "no failure inside the package");
}

/// `chip(u) <= chip(v)` for every edge.
fn upward_edges(g: &Graph) -> GroundConstraint {
    rule(
        g.placed_edges()
            .iter()
            .map(|e| cmp(CmpOp::Le, Term::Chip(e.src), Term::Chip(e.dst)))
            .collect(),
    )
}

#[test]
fn a_node_stays_where_its_cones_fit() {
    // A chain 0 -> 1 -> 2 -> 3 on four chips, two nodes a chip: a node's
    // descendants (itself included) need a chip for every two above it, its
    // ancestors likewise below it.
    let (g, p) = (graph(&[0; 4], &[(0, 1), (1, 2), (2, 3)]), ring(&[9; 4]));
    let (flow, r) = (upward_edges(&g), rule(counts(4, 4, 2.0)));
    let mut s = TestSolver::new(&g, &p).upward();
    s.post(crate::rules::Precedence::build, &flow).unwrap();
    s.post(build, &r).unwrap();
    s.propagate().unwrap();
    s.assert_dom(0, &[0, 1, 2]);
    s.assert_dom(1, &[0, 1, 2]);
    s.assert_dom(2, &[1, 2, 3]);
    s.assert_dom(3, &[1, 2, 3]);
    // Without the flow rule's promise, nothing is known at the root.
    let mut t = TestSolver::new(&g, &p);
    t.post(build, &r).unwrap();
    t.propagate().unwrap();
    t.assert_dom(0, &[0, 1, 2, 3]);
}

/// Against enumeration, under an upward flow rule: the cone bounds remove
/// no chip of a valid completion, and fail only when none exists.
#[test]
fn cone_bounds_keep_every_solution() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
    let (mut failed, mut pruned) = (0, 0);
    for case in 0..400 {
        let (g, p) = random_instance(&mut rng, 7, 5);
        let n = g.num_placed() as u32;
        let c = p.num_chips() as u32;
        let cap = f64::from(rng.random_range(1..=3u32));
        let rs = [upward_edges(&g), rule(counts(n, c, cap))];
        let doms = some_fixed(&mut rng, n, c, 2);
        let valid = completions(&g, &p, &rs, &doms);
        let run = |up: bool| {
            let mut s = TestSolver::new(&g, &p);
            if up {
                s = s.upward();
            }
            s.post(crate::rules::Precedence::build, &rs[0])?;
            s.post(build, &rs[1])?;
            for (u, d) in doms.iter().enumerate() {
                s.set(u as u32, d)?;
            }
            s.propagate().map(|_| s.domains())
        };
        let got = run(true);
        failed += usize::from(sound(case, &got, &valid));
        if let Ok(d) = &got {
            pruned += usize::from(run(false).is_ok_and(|plain| plain != *d));
        }
    }
    assert!(
        failed > 0 && pruned > 0,
        "failures {failed}, pruned beyond the run bounds {pruned}"
    );
}
