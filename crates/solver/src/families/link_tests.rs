//! The link-resource family against the generic path and enumeration.

use super::build;
use super::link::{recognise, Tables};
use super::link_load::LinkLoad;
use super::tests::completions;
use crate::harness::{check_incremental_against_scratch, graph, random_instance, ring, rule, TestSolver};
use crate::propagator::{Cx, Propagator};
use crate::store::Fail;
use mcm_core::graph::Graph;
use mcm_core::package::{Link, Package};
use mcm_core::problem::{CmpOp, Formula, GroundConstraint, Term};
use rand::{Rng, SeedableRng};

fn k(x: f64) -> Term {
    Term::Const(x)
}

fn hops(a: Term, b: Term) -> Term {
    Term::Hops(Box::new(a), Box::new(b))
}

/// Edge `u -> v` crosses link `l`: `l` is on a shortest route, as the
/// example rule says it (`hops(chip(u), l.src) + 1 + hops(l.dst, chip(v))
/// == hops(chip(u), chip(v))`).
fn on_route(u: u32, v: u32, l: &Link) -> Formula {
    let via = Term::Add(
        Box::new(Term::Add(
            Box::new(hops(Term::Chip(u), k(l.src.into()))),
            Box::new(k(1.0)),
        )),
        Box::new(hops(k(l.dst.into()), Term::Chip(v))),
    );
    Formula::Cmp(CmpOp::Eq, via, hops(Term::Chip(u), Term::Chip(v)))
}

/// Edge `u -> v` passes the cut between chips `a` and `a + 1` of a
/// one-way chain: `chip(u) <= a and chip(v) > a`.
fn past(u: u32, v: u32, a: u32) -> Formula {
    Formula::And(vec![
        Formula::Cmp(CmpOp::Le, Term::Chip(u), k(a.into())),
        Formula::Cmp(CmpOp::Gt, Term::Chip(v), k(a.into())),
    ])
}

fn bounded(items: Vec<(Formula, Term)>, cap: f64) -> Formula {
    Formula::Cmp(CmpOp::Le, Term::Sum(items), k(cap))
}

/// Per link of `p`: the weights `w(i)` of the edges on a route through it, at most `cap`.
fn route_sums(g: &Graph, p: &Package, cap: f64, w: impl Fn(usize) -> f64) -> GroundConstraint {
    let fs = p
        .links
        .iter()
        .map(|l| {
            let items = g
                .placed_edges()
                .iter()
                .enumerate()
                .map(|(i, e)| (on_route(e.src, e.dst, l), k(w(i))))
                .collect();
            bounded(items, cap)
        })
        .collect();
    rule(fs)
}

/// Per cut of a chain of five chips: the weights of the edges past it.
fn cut_sums(g: &Graph, cap: f64, w: impl Fn(usize) -> f64) -> GroundConstraint {
    let fs = (0..4)
        .map(|a| {
            let items = g
                .placed_edges()
                .iter()
                .enumerate()
                .map(|(i, e)| (past(e.src, e.dst, a), k(w(i))))
                .collect();
            bounded(items, cap)
        })
        .collect();
    rule(fs)
}

/// The link propagator alone, its classes caching nothing: which items
/// count is read from the tables on every question.
struct Uncached<'p>(LinkLoad, &'p GroundConstraint, Vec<u32>);

impl Propagator for Uncached<'_> {
    fn watches(&self, _: usize) -> Vec<u32> {
        let mut w = Vec::new();
        self.0.watches(&mut w);
        w
    }

    fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        self.0.on_change(x, cx)
    }

    fn complete(&mut self, cx: &Cx) -> Result<(), Fail> {
        if self.0.complete(self.1, cx, &mut self.2) {
            Ok(())
        } else {
            Err(cx.fail())
        }
    }

    fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        self.0.propagate_from_scratch(cx)
    }
}

fn uncached<'p>(cx: &mut Cx, rule: &'p GroundConstraint) -> Result<Box<dyn Propagator + 'p>, Fail> {
    let mut tables = Tables::new(cx.chips());
    let net = (cx.net().graph, cx.net().package);
    let shapes = (rule.instances.iter().enumerate())
        .map(|(i, inst)| (i, recognise(&inst.formula, net, &mut tables).expect("a link shape")))
        .collect();
    let mut p = Uncached(LinkLoad::new(cx, shapes, tables, 0), rule, vec![0; cx.n()]);
    p.propagate_from_scratch(cx)?;
    Ok(Box::new(p))
}

#[test]
fn link_shapes_are_recognised_exactly_or_declined() {
    let (g, p) = (graph(&[0; 3], &[(0, 1), (1, 2), (0, 2)]), ring(&[9; 4]));
    let net = (&g, &p);
    let mut t = Tables::new(4);
    let r = route_sums(&g, &p, 2.5, |i| i as f64);
    let s = recognise(&r.instances.get(0).formula, net, &mut t).unwrap();
    assert!(s.exact && s.cap == 2.0 && s.base == 0.0);
    assert_eq!(s.items.len(), 2, "a zero weight never counts");
    // Every link's condition has its own table, shared by all edges.
    for f in r.instances.iter().skip(1) {
        recognise(&f.formula, net, &mut t).unwrap();
    }
    let mut tables: Vec<u32> = r
        .instances
        .iter()
        .flat_map(|f| recognise(&f.formula, net, &mut t).unwrap().items)
        .map(|it| it.table)
        .collect();
    tables.sort_unstable();
    tables.dedup();
    assert_eq!(tables.len(), p.links.len());
    // A condition that always holds is a constant part.
    let always = Formula::Cmp(CmpOp::Le, Term::Chip(0), Term::Chip(0));
    let f = bounded(vec![(always, k(0.5)), (past(0, 1, 1), k(2.0))], 3.0);
    let s = recognise(&f, net, &mut t).unwrap();
    assert!(!s.exact && s.base == 0.5 && s.items.len() == 1);
    let declined = [
        bounded(vec![(past(0, 1, 0), k(-1.0))], 3.0),
        Formula::Cmp(CmpOp::Ge, Term::Sum(vec![(past(0, 1, 0), k(1.0))]), k(1.0)),
        bounded(vec![(past(0, 1, 0), Term::Chip(2))], 3.0),
        bounded(vec![(Formula::And(vec![past(0, 1, 0), past(1, 2, 0)]), k(1.0))], 3.0),
        bounded(vec![(Formula::Flows(Term::Chip(0), k(1.0)), k(1.0))], 3.0),
    ];
    for f in &declined {
        assert!(recognise(f, net, &mut t).is_none(), "{f:?}");
    }
}

#[test]
fn a_loaded_link_turns_heavy_edges_away() {
    // Cuts of a chain of five chips carry at most 3; edges weigh 2 (the
    // last one keeps nodes open, so no node is the last open one).
    let g = graph(&[0; 8], &[(0, 2), (1, 3), (4, 5), (6, 7)]);
    let p = ring(&[9; 5]);
    let r = cut_sums(&g, 3.0, |_| 2.0);
    let mut s = TestSolver::new(&g, &p);
    s.post(build, &r).unwrap();
    s.set(1, &[0]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(3, &[0, 1, 2, 3, 4]);
    // Edge 0 -> 2 loads cuts 0 and 1 with 2: edge 1 -> 3 may cross neither.
    s.set(0, &[0]).unwrap();
    s.set(2, &[2]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(3, &[0]);
    // Both nodes of edge 4 -> 5 open: which chips it would take is not known.
    s.assert_dom(5, &[0, 1, 2, 3, 4]);
    s.set(4, &[1]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(5, &[0, 1]);
}

#[test]
fn the_last_open_node_is_judged_with_all_it_adds() {
    // Two edges into node 2 of weight 2 each fit a cut of 3 alone, not together.
    let g = graph(&[0; 3], &[(0, 2), (1, 2)]);
    let p = ring(&[9; 3]);
    let r = cut_sums(&g, 3.0, |_| 2.0);
    let mut s = TestSolver::new(&g, &p);
    s.post(build, &r).unwrap();
    s.set(0, &[0]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(2, &[0, 1, 2]);
    s.set(1, &[0]).unwrap();
    s.propagate().unwrap();
    s.assert_dom(2, &[0]);
}

#[test]
fn link_propagation_matches_from_scratch() {
    let failed = check_incremental_against_scratch(37, 400, build, |g| cut_sums(g, 3.0, |i| (1 + i % 3) as f64));
    assert!(failed > 0, "some decisions fail");
    // Fractional weights: pruning past a margin, the checker on complete placements.
    let failed =
        check_incremental_against_scratch(41, 400, build, |g| cut_sums(g, 0.7, |i| 0.1 + 0.2 * (i % 3) as f64));
    assert!(failed > 0, "some decisions fail");
}

/// Against enumeration: propagation removes no chip of a valid completion,
/// fails only when none exists, and passes a complete placement exactly
/// when the checker accepts it; the generic path agrees on every verdict
/// and keeps at least the family's domains.
#[test]
fn link_sums_agree_with_enumeration_and_the_generic_path() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
    let (mut failed, mut pruned, mut stronger, mut compared) = (0, 0, 0, 0);
    for case in 0..400 {
        let (g, p) = random_instance(&mut rng, 6, 4);
        let n = g.num_placed() as u32;
        let r = match case % 3 {
            0 => route_sums(&g, &p, rng.random_range(1..5) as f64, |i| (1 + i % 3) as f64),
            1 => route_sums(&g, &p, 0.55, |i| 0.1 * (1 + i % 4) as f64),
            _ => cut_sums(&g, rng.random_range(1..4) as f64, |i| (i % 2 + 1) as f64),
        };
        let rs = [r];
        let c = p.num_chips() as u32;
        let doms = super::tests::some_fixed(&mut rng, n, c, n);
        let valid = completions(&g, &p, &rs, &doms);
        let run = |b: crate::rules::Build| {
            let mut s = TestSolver::new(&g, &p);
            s.post(b, &rs[0])?;
            for (u, d) in doms.iter().enumerate() {
                s.set(u as u32, d)?;
            }
            s.propagate().map(|_| s.domains())
        };
        let fam = run(build);
        let gen = run(crate::generic::build);
        // Instances over one or two nodes go to other families.
        if rs[0].instances.iter().all(|i| i.formula.dependencies().0.len() > 2) {
            let alone = run(uncached);
            assert_eq!(alone.as_ref().ok(), fam.as_ref().ok(), "case {case}: uncached");
            compared += 1;
        }
        failed += usize::from(super::tests::sound(case, &fam, &valid));
        if let Ok(d) = &fam {
            if d.iter().all(|x| x.len() == 1) {
                assert_eq!(valid.len(), 1, "case {case}: a complete placement passed invalid");
            }
            pruned += usize::from(d != &doms);
        }
        if doms.iter().all(|x| x.len() == 1) {
            assert_eq!(fam.is_ok(), gen.is_ok(), "case {case}: verdicts differ");
        }
        match (&fam, &gen) {
            (Ok(f), Ok(gd)) => {
                for u in 0..n as usize {
                    assert!(f[u].iter().all(|k| gd[u].contains(k)), "case {case}: node {u}");
                }
                stronger += usize::from(f != gd);
            }
            (Ok(_), Err(_)) => panic!("case {case}: the generic path fails where the family does not"),
            _ => {}
        }
    }
    assert!(
        failed > 0 && pruned > 0 && stronger > 0 && compared > 100,
        "failures {failed}, pruned {pruned}, stronger than generic {stronger}, uncached {compared}"
    );
}
