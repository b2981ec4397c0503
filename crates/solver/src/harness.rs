//! A small solver for propagator unit tests, in the spirit of Pumpkin's
//! `TestSolver`: one variable per placed node of a given graph, over the
//! chips of a given package; post a propagator, change domains, propagate,
//! and assert domains or failure. Propagation runs as in the engine (the
//! queue, then the late pass, then the complete check) or from scratch, so
//! that tests can hold one to the other.

use crate::domain::mask_of;
use crate::propagator::{Cx, Net, Propagator};
use crate::rules::Build;
use crate::store::{Fail, Store};
use mcm_core::graph::{Graph, Node};
use mcm_core::package::{Chip, Link, Package};
use mcm_core::problem::{CmpOp, Formula, GroundConstraint, Instance, Term};
use mcm_core::quantity::Scalar;
use rand::Rng;

pub(crate) struct TestSolver<'p> {
    net: Net<'p>,
    store: Store,
    props: Vec<Box<dyn Propagator + 'p>>,
    watchers: Vec<Vec<u32>>,
}

impl<'p> TestSolver<'p> {
    /// Full domains: every node may go to every chip.
    pub fn new(graph: &'p Graph, package: &'p Package) -> TestSolver<'p> {
        let n = graph.num_placed();
        TestSolver {
            net: Net::new(graph, package),
            store: Store::new(n, package.num_chips()),
            props: Vec::new(),
            watchers: vec![Vec::new(); n],
        }
    }

    /// As the engine marks a problem whose rules keep every edge's flow
    /// upward (propagators may then reason over cones).
    pub fn upward(mut self) -> Self {
        self.net.upward = true;
        self
    }

    /// As the engine lends propagators the problem's rules (a count reads
    /// the equalities other rules force: [`crate::families::equal`]).
    pub fn rules(mut self, rules: &'p [GroundConstraint]) -> Self {
        self.net.rules = rules;
        self
    }

    /// Builds and posts a propagator (its root pruning included) for the
    /// next constraint index.
    pub fn post(&mut self, build: Build, rule: &'p GroundConstraint) -> Result<(), Fail> {
        let k = self.props.len();
        let p = build(&mut Cx::new(&mut self.store, &self.net, k), rule)?;
        for v in p.watches(self.store.n) {
            self.watchers[v as usize].push(k as u32);
        }
        self.props.push(p);
        Ok(())
    }

    /// Opens a level (a decision), to be undone by `pop`.
    pub fn push(&mut self) {
        self.store.push_level();
    }

    pub fn pop(&mut self) {
        self.store.pop_level();
        for p in &mut self.props {
            p.on_backtrack();
        }
    }

    /// Restricts `x` to `chips`, without propagating (as a decision does).
    pub fn set(&mut self, x: u32, chips: &[u32]) -> Result<(), Fail> {
        let mask = mask_of(self.store.chips, chips);
        self.store.restrict(x, &mask, usize::MAX).map(|_| ())
    }

    pub fn remove(&mut self, x: u32, c: u32) -> Result<(), Fail> {
        self.store.remove(x, c, usize::MAX).map(|_| ())
    }

    /// Wakes every propagator on every variable, as the engine does at the root.
    pub fn wake_all(&mut self) {
        for v in (0..self.store.n as u32).rev() {
            self.store.queue.push(v);
        }
    }

    /// Incremental propagation to the fixpoint, as the engine runs it.
    pub fn propagate(&mut self) -> Result<(), Fail> {
        loop {
            while let Some(x) = self.store.dequeue() {
                for i in 0..self.watchers[x as usize].len() {
                    let p = self.watchers[x as usize][i] as usize;
                    self.props[p].on_change(x, &mut Cx::new(&mut self.store, &self.net, p))?;
                }
            }
            let mut again = false;
            for p in 0..self.props.len() {
                if self.props[p].has_late() {
                    self.props[p].late(&mut Cx::new(&mut self.store, &self.net, p))?;
                    if !self.store.queue.is_empty() {
                        again = true;
                        break;
                    }
                }
            }
            if !again {
                break;
            }
        }
        self.complete()
    }

    /// From-scratch propagation of every propagator, repeated until no
    /// domain changes.
    pub fn propagate_from_scratch(&mut self) -> Result<(), Fail> {
        loop {
            for p in 0..self.props.len() {
                self.props[p].propagate_from_scratch(&mut Cx::new(&mut self.store, &self.net, p))?;
            }
            if self.store.queue.is_empty() {
                break;
            }
            while self.store.dequeue().is_some() {}
        }
        self.complete()
    }

    fn complete(&mut self) -> Result<(), Fail> {
        if self.store.all_fixed() {
            for p in 0..self.props.len() {
                self.props[p].complete(&Cx::new(&mut self.store, &self.net, p))?;
            }
        }
        Ok(())
    }

    pub fn dom(&self, x: u32) -> Vec<u32> {
        self.store.dom(x).to_vec()
    }

    pub fn domains(&self) -> Vec<Vec<u32>> {
        (0..self.store.n as u32).map(|x| self.dom(x)).collect()
    }

    #[track_caller]
    pub fn assert_dom(&self, x: u32, chips: &[u32]) {
        assert_eq!(self.dom(x), chips, "the domain of node {x}");
    }
}

// ------------------------------------------------------------ instances

/// A graph of nodes `n0..` with these weights (`params`) and edges.
pub(crate) fn graph(params: &[u64], edges: &[(usize, usize)]) -> Graph {
    let nodes = params
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let mut n = Node::new(format!("n{i}"));
            n.params = p;
            n
        })
        .collect();
    Graph::new("g", nodes, edges.iter().map(|&(a, b)| (a, b, None)).collect()).expect("a DAG")
}

/// A ring of chips with these memories (bytes), links both ways.
pub(crate) fn ring(memory: &[i64]) -> Package {
    let c = memory.len() as u32;
    let chips = memory
        .iter()
        .enumerate()
        .map(|(i, &m)| Chip {
            name: format!("c{i}"),
            attrs: [("memory".to_string(), Scalar::Int(m))].into_iter().collect(),
        })
        .collect();
    let mut links = Vec::new();
    for a in 0..c {
        for b in [(a + 1) % c, (a + c - 1) % c] {
            if b != a && !links.iter().any(|l: &Link| (l.src, l.dst) == (a, b)) {
                links.push(Link {
                    src: a,
                    dst: b,
                    attrs: Default::default(),
                });
            }
        }
    }
    Package::new("ring", chips, links).expect("a ring")
}

/// A random small instance: up to `n` nodes with small weights, forward
/// edges, and up to `c` chips with small memories.
pub(crate) fn random_instance(rng: &mut impl Rng, n: usize, c: usize) -> (Graph, Package) {
    let n = rng.random_range(1..=n);
    let params: Vec<u64> = (0..n).map(|_| rng.random_range(0..4)).collect();
    let mut edges = Vec::new();
    for j in 0..n {
        for i in 0..j {
            if rng.random_bool(0.4) {
                edges.push((i, j));
            }
        }
    }
    let memory: Vec<i64> = (0..rng.random_range(1..=c)).map(|_| rng.random_range(1..=6)).collect();
    (graph(&params, &edges), ring(&memory))
}

/// A constraint with no instances, for natives (they read the graph and
/// the package, not the formula).
pub(crate) fn native(key: &str) -> GroundConstraint {
    GroundConstraint {
        name: key.to_string(),
        args: Vec::new(),
        decl_span: Default::default(),
        use_span: Default::default(),
        instances: Vec::new().into(),
        native: Some(key.to_string()),
    }
}

/// Posts `rule` with `build` on random instances, makes random decisions
/// and undoes some, and after each step compares incremental propagation
/// with from-scratch propagation of the standing decisions on a fresh
/// solver: the same domains, or both fail. Returns how many steps failed,
/// so that callers can check the failing side was exercised.
pub(crate) fn check_incremental_against_scratch(
    seed: u64,
    cases: usize,
    build: Build,
    rule: impl Fn(&Graph) -> GroundConstraint,
) -> usize {
    check_incremental_against_scratch_sized(seed, cases, (7, 5, 12), build, rule)
}

/// [`check_incremental_against_scratch`] on instances of up to `n` nodes
/// and `c` chips, with `steps` steps each: `(n, c, steps)`.
pub(crate) fn check_incremental_against_scratch_sized(
    seed: u64,
    cases: usize,
    (n, c, steps): (usize, usize, usize),
    build: Build,
    rule: impl Fn(&Graph) -> GroundConstraint,
) -> usize {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut failures = 0;
    for case in 0..cases {
        let (g, p) = random_instance(&mut rng, n, c);
        let gc = rule(&g);
        let scratch = |decisions: &[(u32, Vec<u32>)]| -> Option<Vec<Vec<u32>>> {
            let mut s = TestSolver::new(&g, &p);
            s.post(build, &gc).ok()?;
            s.propagate_from_scratch().ok()?;
            for (x, chips) in decisions {
                s.set(*x, chips).ok()?;
            }
            s.propagate_from_scratch().ok()?;
            Some(s.domains())
        };
        let mut inc = TestSolver::new(&g, &p);
        let root = inc.post(build, &gc).and_then(|_| {
            inc.wake_all();
            inc.propagate()
        });
        assert_eq!(
            root.ok().map(|_| inc.domains()),
            scratch(&[]),
            "case {case} at the root"
        );
        if root.is_err() {
            failures += 1;
            continue;
        }
        failures += walk_against_scratch(&mut rng, &mut inc, &g, (case, steps), true, &scratch);
    }
    failures
}

/// A decision of a random walk: a node and the chips left to it.
pub(crate) type Decision = (u32, Vec<u32>);

/// The domains after propagating a list of decisions from scratch (`None`:
/// it fails).
pub(crate) type Scratch<'a> = &'a dyn Fn(&[Decision]) -> Option<Vec<Vec<u32>>>;

/// From `inc`'s root, `steps` random decisions (each a fix, or with
/// `subsets` half the time a random proper subset of the domain), each
/// undone now and then, comparing after every step incremental propagation
/// with `scratch`'s from-scratch propagation of the standing decisions: the
/// same domains, or both fail. Returns how many decisions failed.
pub(crate) fn walk_against_scratch(
    rng: &mut impl Rng,
    inc: &mut TestSolver,
    g: &Graph,
    (case, steps): (usize, usize),
    subsets: bool,
    scratch: Scratch<'_>,
) -> usize {
    let mut failures = 0;
    let mut decisions: Vec<Decision> = Vec::new();
    for step in 0..steps {
        if !decisions.is_empty() && rng.random_bool(0.25) {
            inc.pop();
            decisions.pop();
        } else {
            let open: Vec<u32> = (0..g.num_placed() as u32).filter(|&x| inc.dom(x).len() > 1).collect();
            if open.is_empty() {
                break;
            }
            let x = open[rng.random_range(0..open.len())];
            let dom = inc.dom(x);
            let chips: Vec<u32> = if !subsets || rng.random_bool(0.5) {
                vec![dom[rng.random_range(0..dom.len())]]
            } else {
                let mut keep: Vec<u32> = dom.iter().copied().filter(|_| rng.random_bool(0.5)).collect();
                if keep.is_empty() || keep.len() == dom.len() {
                    keep = dom[1..].to_vec();
                }
                keep
            };
            inc.push();
            decisions.push((x, chips.clone()));
            let r = inc.set(x, &chips).and_then(|_| inc.propagate());
            let expected = scratch(&decisions);
            assert_eq!(
                r.ok().map(|_| inc.domains()),
                expected,
                "case {case}, step {step}, decisions {decisions:?}, graph {:?}",
                g.placed_edges()
            );
            if r.is_err() {
                failures += 1;
                inc.pop();
                decisions.pop();
            }
        }
        assert_eq!(Some(inc.domains()), scratch(&decisions), "case {case} after undoing");
    }
    failures
}

/// `chip(u) == k`.
pub fn on(u: u32, k: u32) -> Formula {
    Formula::Cmp(CmpOp::Eq, Term::Chip(u), Term::Const(f64::from(k)))
}

/// `count(chip(u) == k for u < n) <= cap` for each chip k.
pub fn counts(n: u32, chips: u32, cap: f64) -> Vec<Formula> {
    (0..chips)
        .map(|k| {
            Formula::Cmp(
                CmpOp::Le,
                Term::Count((0..n).map(|u| on(u, k)).collect()),
                Term::Const(cap),
            )
        })
        .collect()
}

/// A rule named `r` whose instances are these formulas.
pub fn rule(formulas: Vec<Formula>) -> GroundConstraint {
    GroundConstraint {
        name: "r".into(),
        args: Vec::new(),
        decl_span: Default::default(),
        use_span: Default::default(),
        instances: formulas
            .into_iter()
            .map(|formula| Instance {
                bindings: Box::new([]),
                formula,
                unit: None,
            })
            .collect(),
        native: None,
    }
}
