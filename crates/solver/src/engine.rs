//! The propagation engine and the solver contract of the brief:
//! `get_domain(u)`, and `set_domain(u, S)`, which makes a decision,
//! propagates, and on failure backtracks, excluding the failed choice, and
//! returns the number of decisions still standing.

use super::domain::{mask_of, Dom};
use super::families;
use super::generic;
use super::propagator::{Cx, Net, Propagator};
use super::rules;
use super::sat::{SatAnswer, SatOracle};
use super::store::{Fail, Store};
use mcm_core::problem::{Placement, Problem};

#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Native propagators for the rules of `std::placement`, and the
    /// propagator families for other rules; when false, every rule goes
    /// through the generic path (for differential tests).
    pub native: bool,
    /// Ask the SAT backing for the culprit when propagation proves that
    /// the standing decisions fail, and backjump to it.
    pub sat: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            native: true,
            sat: true,
        }
    }
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    pub decisions: u64,
    pub failures: u64,
    /// Decisions undone by backtracking.
    pub backtracks: u64,
    pub sat_calls: u64,
    /// Passes in a dependency-blind order that gave up and restarted.
    pub restarts: u64,
    /// FIX calls that gave up on their proposal and fell back on a given
    /// valid partition ([`super::fix_or`]).
    pub fallbacks: u64,
    /// Failures by the constraint whose propagation failed.
    pub failures_by_constraint: Vec<u64>,
}

/// No valid partition exists; `constraints` indexes the conflicting rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Infeasible {
    pub constraints: Vec<usize>,
}

struct Decision {
    var: u32,
    mask: Mask,
}

/// A decision's chips: one word in place (packages of up to 64 chips, no
/// heap block per decision of a million-node pass), more words boxed.
enum Mask {
    Word(u64),
    Words(Box<[u64]>),
}

impl Mask {
    /// The mask of `chips` on a package of `total` chips: for one word,
    /// built in place (a decision is made per node of every pass, and
    /// `mask_of`'s heap block cost more than the rest of the call).
    fn of(total: usize, chips: &[u32]) -> Mask {
        if total <= 64 {
            let word = chips
                .iter()
                .filter(|&&c| (c as usize) < total)
                .fold(0u64, |w, &c| w | 1 << c);
            return Mask::Word(word);
        }
        Mask::Words(mask_of(total, chips).into())
    }

    fn words(&self) -> &[u64] {
        match self {
            Mask::Word(w) => std::slice::from_ref(w),
            Mask::Words(ws) => ws,
        }
    }
}

pub struct Solver<'p> {
    pub problem: &'p Problem,
    pub(crate) net: Net<'p>,
    store: Store,
    /// One propagator per constraint, in order: propagator k serves
    /// constraint k, and its changes and failures name k.
    props: Vec<Box<dyn Propagator + 'p>>,
    watchers: Vec<Vec<u32>>,
    late: Vec<usize>,
    decisions: Vec<Decision>,
    /// Set when the decisions undone reach the root and it fails too.
    infeasible: Option<Infeasible>,
    /// Built on first need: most searches never fail twice in a row.
    sat: Option<SatOracle>,
    /// For questions without decisions (a witness, the rules that
    /// conflict): the problem on fewer chips when that is equivalent
    /// ([`super::reduce`]), with its own oracle; built on first need.
    small: Option<Option<Box<(Problem, SatOracle)>>>,
    /// Whether [`super::reduce`] applies to the problem, asked on first
    /// need: the question walks every rule's instances, which on a large
    /// graph costs more than the pass that asks it.
    reducible: std::cell::OnceCell<bool>,
    /// Per constraint, whether it is a rule outside the standard library
    /// that bounds a sum or count per chip ([`families::bounds_per_chip`]),
    /// asked on first need.
    per_chip: std::cell::OnceCell<Vec<bool>>,
    use_sat: bool,
    backjump_on: bool,
    native: bool,
    /// A latency target the placements must meet too (its propagator is
    /// the last, numbered `problem.constraints.len()`).
    target: Option<crate::target::Target>,
    /// When the searcher wants its passes given up (a deadline, Ctrl-C).
    stop: Option<Stop>,
    /// Set once a pass gave up because `stop` said so.
    cut_short: bool,
    pub stats: Stats,
}

/// Says whether the searcher wants the solver's passes given up.
pub type Stop = std::sync::Arc<dyn Fn() -> bool + Send + Sync>;

impl<'p> Solver<'p> {
    /// Builds the propagator network and propagates at the root.
    pub fn new(problem: &'p Problem, options: Options) -> Result<Solver<'p>, Infeasible> {
        Solver::build(problem, options, None)
    }

    /// A solver whose placements also meet a latency target: its propagator
    /// comes after the rules' (a failure or an infeasibility naming
    /// constraint `problem.constraints.len()` is the target's), and its SAT
    /// backing encodes it (questions are not moved to fewer chips, which
    /// would change the latency).
    pub fn with_target(
        problem: &'p Problem,
        options: Options,
        target: crate::target::Target,
    ) -> Result<Solver<'p>, Infeasible> {
        Solver::build(problem, options, Some(target))
    }

    fn build(
        problem: &'p Problem,
        options: Options,
        target: Option<crate::target::Target>,
    ) -> Result<Solver<'p>, Infeasible> {
        let mut net = Net::new(&problem.graph, &problem.package);
        net.upward = options.native && rules::upward_flow(problem);
        if options.native {
            net.rules = &problem.constraints;
        }
        let n = problem.graph.num_placed();
        let mut store = Store::new(n, problem.package.num_chips());
        let root_fail = |f: Fail| root_conflict(problem, options, f);
        if problem.package.num_chips() == 0 && n > 0 {
            return Err(Infeasible {
                constraints: Vec::new(),
            });
        }
        let mut props: Vec<Box<dyn Propagator + 'p>> = Vec::with_capacity(problem.constraints.len());
        for (k, c) in problem.constraints.iter().enumerate() {
            // A key the table does not know is served by the generic path.
            let native = options
                .native
                .then(|| c.native.as_deref().and_then(rules::lookup))
                .flatten();
            let mut cx = Cx::new(&mut store, &net, k);
            let p = match native {
                Some(rule) => (rule.propagator)(&mut cx, c),
                // A rule without a native key: the families of its shapes.
                None if options.native => families::build(&mut cx, c),
                None => generic::build(&mut cx, c),
            };
            props.push(p.map_err(root_fail)?);
        }
        if let Some(t) = &target {
            let k = problem.constraints.len();
            let mut cx = Cx::new(&mut store, &net, k);
            let p = crate::target::TargetPropagator::build(&mut cx, t.clone())
                .map_err(|_| Infeasible { constraints: vec![k] })?;
            props.push(Box::new(p));
        }
        let mut watchers = vec![Vec::new(); n];
        let mut late = Vec::new();
        for (i, p) in props.iter().enumerate() {
            for v in p.watches(n) {
                watchers[v as usize].push(i as u32);
            }
            if p.has_late() {
                late.push(i);
            }
        }
        let mut s = Solver {
            problem,
            net,
            store,
            props,
            watchers,
            late,
            decisions: Vec::new(),
            infeasible: None,
            sat: None,
            small: None,
            reducible: std::cell::OnceCell::new(),
            per_chip: std::cell::OnceCell::new(),
            use_sat: options.sat,
            backjump_on: options.sat,
            native: options.native,
            target,
            stop: None,
            cut_short: false,
            stats: Stats::default(),
        };
        // Wake every propagator once at the root.
        for v in 0..n as u32 {
            s.store.queue.push(v);
        }
        s.store.queue.reverse();
        if let Err(f) = s.propagate() {
            return Err(match &s.target {
                Some(_) => Infeasible {
                    constraints: vec![f.constraint],
                },
                None => root_fail(f),
            });
        }
        Ok(s)
    }

    pub fn num_nodes(&self) -> usize {
        self.store.n
    }

    pub fn num_chips(&self) -> usize {
        self.store.chips
    }

    /// The current domain of placed node `u`, after propagation.
    pub fn get_domain(&self, u: u32) -> Vec<u32> {
        self.store.dom(u).to_vec()
    }

    pub fn dom(&self, u: u32) -> Dom<'_> {
        self.store.dom(u)
    }

    /// Every placed node's domain as bitset words, node by node
    /// (`domain_words_per_node` words each, chip `c` at bit `c % 64` of
    /// word `c / 64`): a caller mirroring all domains (the Python env's
    /// observation) scans this one slice for the rows that changed rather
    /// than asking node by node.
    pub fn domain_words(&self) -> &[u64] {
        self.store.all_words()
    }

    pub fn domain_words_per_node(&self) -> usize {
        self.store.words_per_domain()
    }

    pub fn is_fixed(&self, u: u32) -> bool {
        self.store.is_fixed(u)
    }

    /// The chip of `u` when it has one left.
    #[inline]
    pub(crate) fn value(&self, u: u32) -> Option<u32> {
        self.store.value(u)
    }

    /// The options this solver was built with.
    pub fn options(&self) -> Options {
        Options {
            native: self.native,
            sat: self.use_sat,
        }
    }

    /// Whether the problem has an equivalent on fewer chips
    /// ([`super::reduce::applies`]).
    pub(crate) fn reducible(&self) -> bool {
        *self.reducible.get_or_init(|| super::reduce::applies(self.problem))
    }

    /// Whether a user rule bounds a sum or count per chip (an op count, a
    /// compute budget): SAMPLE's first pass then lets weights follow their
    /// consumers ([`super::modes`]).
    pub(crate) fn bounds_per_chip(&self) -> bool {
        self.per_chip_rules().iter().any(|&b| b)
    }

    /// Per constraint, whether it is such a rule.
    fn per_chip_rules(&self) -> &[bool] {
        self.per_chip.get_or_init(|| families::bounds_per_chip(self.problem))
    }

    /// Failures so far by the rules that bound per chip
    /// ([`Solver::bounds_per_chip`]).
    pub(crate) fn per_chip_failures(&self) -> u64 {
        self.per_chip_rules()
            .iter()
            .zip(&self.stats.failures_by_constraint)
            .filter(|(&b, _)| b)
            .map(|(_, &f)| f)
            .sum()
    }

    /// The nodes the last decision's level changed: the decided node and
    /// those its propagation narrowed.
    pub(crate) fn changed_by_last_decision(&self) -> impl Iterator<Item = u32> + '_ {
        self.store.changed_in_level()
    }

    pub fn num_decisions(&self) -> usize {
        self.decisions.len()
    }

    pub fn infeasible(&self) -> Option<&Infeasible> {
        self.infeasible.as_ref()
    }

    /// Every node has one chip left: the placement.
    pub fn placement(&self) -> Option<Placement> {
        if !self.store.all_fixed() {
            return None;
        }
        Some(Placement::new(
            (0..self.store.n as u32).map(|x| self.store.min(x)).collect(),
        ))
    }

    /// Whether a doomed set of decisions is handed to SAT for its culprit
    /// (on when the options ask for SAT). Search passes that restart on
    /// their own when they fail too often turn it off.
    pub fn set_backjump(&mut self, on: bool) {
        self.backjump_on = on && self.use_sat;
    }

    /// Gives up SAMPLE and FIX passes once `stop` returns true (a search's
    /// deadline or a stop request): they end with an error and
    /// [`Solver::cut_short`] set, and no SAT question is asked any more
    /// (one varisat call cannot be interrupted). Checked once a node.
    pub fn set_stop(&mut self, stop: Option<Stop>) {
        self.stop = stop;
    }

    /// The check given to [`Solver::set_stop`], for solvers built on the side.
    pub fn stop(&self) -> Option<Stop> {
        self.stop.clone()
    }

    /// Whether the searcher wants the passes given up now; remembered for
    /// [`Solver::cut_short`].
    pub fn stopping(&mut self) -> bool {
        if self.cut_short {
            return true;
        }
        self.cut_short = self.stop.as_ref().is_some_and(|s| s());
        self.cut_short
    }

    /// Whether a pass was given up at the searcher's request: an error of
    /// SAMPLE or FIX then means "stopped", not "no valid partition".
    pub fn cut_short(&self) -> bool {
        self.cut_short
    }

    /// Forgets that a pass was given up, for a searcher that gave one pass a
    /// stop of its own (a share of its time) and goes on after it; the stop
    /// is checked afresh from the next pass on.
    pub fn resume(&mut self) {
        self.cut_short = false;
    }

    /// Undoes every decision.
    pub fn reset(&mut self) {
        self.decisions.clear();
        self.store.pop_all();
        for p in &mut self.props {
            p.on_backtrack();
        }
    }

    /// Undoes the latest decisions until at most `n` stand: the
    /// backtracking of a caller that explores by hand (a mark taken with
    /// [`Solver::num_decisions`], then undone to). What a backjump of
    /// [`Solver::set_domain`] excluded at a level that stays, stays: it
    /// follows from the decisions still standing.
    pub fn undo_to(&mut self, n: usize) {
        if self.decisions.len() <= n {
            return;
        }
        while self.decisions.len() > n {
            self.decisions.pop();
            self.store.pop_level();
        }
        for p in &mut self.props {
            p.on_backtrack();
        }
    }

    fn propagate(&mut self) -> Result<(), Fail> {
        loop {
            while let Some(x) = self.store.dequeue() {
                for &p in &self.watchers[x as usize] {
                    let mut cx = Cx::new(&mut self.store, &self.net, p as usize);
                    self.props[p as usize].on_change(x, &mut cx)?;
                }
            }
            let mut again = false;
            for &p in &self.late {
                let mut cx = Cx::new(&mut self.store, &self.net, p);
                self.props[p].late(&mut cx)?;
                if !self.store.queue.is_empty() {
                    again = true;
                    break;
                }
            }
            if !again {
                break;
            }
        }
        if self.store.all_fixed() {
            for (k, p) in self.props.iter_mut().enumerate() {
                p.complete(&Cx::new(&mut self.store, &self.net, k))?;
            }
        }
        Ok(())
    }

    fn undo_level(&mut self) {
        self.store.pop_level();
        for p in &mut self.props {
            p.on_backtrack();
        }
    }

    /// Restricts `u` to `chips` as a new decision and propagates. On failure
    /// the decision is undone and its chips excluded; if that fails too, the
    /// decision before it is undone and excluded, and so on. Returns the
    /// number of decisions standing (one more than before on success).
    pub fn set_domain(&mut self, u: u32, chips: &[u32]) -> usize {
        if self.infeasible.is_some() {
            return 0;
        }
        self.stats.decisions += 1;
        let mask = Mask::of(self.store.chips, chips);
        self.store.push_level();
        let var = u;
        self.decisions.push(Decision { var, mask });
        let mask = self.decisions.last().expect("just pushed").mask.words();
        let ok = self
            .store
            .restrict(var, mask, usize::MAX)
            .map(|_| ())
            .and_then(|_| self.propagate());
        if let Err(f) = ok {
            self.count_failure(f);
            self.recover(f);
        }
        self.decisions.len()
    }

    fn count_failure(&mut self, f: Fail) {
        self.stats.failures += 1;
        let k = self.problem.constraints.len();
        self.stats.failures_by_constraint.resize(k, 0);
        if f.constraint < k {
            self.stats.failures_by_constraint[f.constraint] += 1;
        }
    }

    /// Undoes failed decisions, excluding each one's choice at the level
    /// below, until a level survives. When an exclusion fails too, the
    /// standing decisions are doomed: the SAT backing names the decisions
    /// that cause it, and the search jumps back to the latest of them
    /// (or, without SAT, undoes one decision at a time). With no decision
    /// left to blame, the problem is infeasible.
    fn recover(&mut self, mut fail: Fail) {
        loop {
            let Some(d) = self.decisions.pop() else {
                self.declare_infeasible(fail);
                return;
            };
            self.undo_level();
            self.stats.backtracks += 1;
            let keep: Vec<u64> = d.mask.words().iter().map(|m| !m).collect();
            match self
                .store
                .restrict(d.var, &keep, fail.constraint)
                .map(|_| ())
                .and_then(|_| self.propagate())
            {
                Ok(()) => return,
                Err(f) => {
                    self.count_failure(f);
                    fail = f;
                    if self.decisions.is_empty() {
                        self.declare_infeasible(f);
                        return;
                    }
                    // Past the deadline, undo one decision at a time: the
                    // pass is about to give up, and SAT cannot be interrupted.
                    if self.backjump_on && !self.stopping() {
                        self.backjump();
                        if self.infeasible.is_some() {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// A full valid placement from SAT, searched from `hint` (its values are
    /// preferred where they fit); `None` when SAT is off, the solver is
    /// stopping ([`Solver::set_stop`]), or no valid placement exists (then [`Solver::infeasible`] names the rules that
    /// conflict). The last resort of FIX: it always ends.
    pub fn witness_near(&mut self, hint: &[u32]) -> Option<Placement> {
        if !self.use_sat || self.stopping() {
            return None;
        }
        self.stats.sat_calls += 1;
        let (problem, oracle) = self.root_oracle();
        let top = problem.package.num_chips().saturating_sub(1) as u32;
        let hint: Vec<u32> = hint.iter().map(|&c| c.min(top)).collect();
        oracle.suggest(problem, &Placement::new(hint));
        match oracle.solve(problem, &[]) {
            SatAnswer::Sat(p) => Some(p),
            SatAnswer::Unsat(core) => {
                let constraints = named(problem, &core);
                self.infeasible = Some(Infeasible { constraints });
                None
            }
        }
    }

    /// The oracle for questions without decisions, and the problem it
    /// answers: the reduced one when there is one (its answers hold for the
    /// whole problem), else the main oracle.
    fn root_oracle(&mut self) -> (&Problem, &mut SatOracle) {
        let (problem, native) = (self.problem, self.native);
        if self.target.is_some() {
            let target = self.target.clone();
            let o = self.sat.get_or_insert_with(|| oracle(problem, native, target));
            return (problem, o);
        }
        let small = self.small.get_or_insert_with(|| {
            super::reduce::fewer_chips(problem).map(|p| {
                let o = SatOracle::new(&p, native);
                Box::new((p, o))
            })
        });
        match small {
            Some(b) => {
                let (p, o) = &mut **b;
                (p, o)
            }
            None => (problem, self.sat.get_or_insert_with(|| SatOracle::new(problem, native))),
        }
    }

    /// Asks SAT which standing decisions doom the search, and undoes every
    /// decision above the latest culprit (the culprit itself is undone and
    /// excluded by the caller's loop).
    fn backjump(&mut self) {
        let problem = self.problem;
        let native = self.native;
        let asked: Vec<(u32, Vec<u32>)> = self
            .decisions
            .iter()
            .map(|d| (d.var, super::domain::bits_of(d.mask.words())))
            .collect();
        self.stats.sat_calls += 1;
        let target = self.target.clone();
        let oracle = self.sat.get_or_insert_with(|| {
            let mut o = oracle(problem, native, target);
            // Only the latest culprit matters here; minimising the core would
            // cost one more solve per decision.
            o.set_minimize(false);
            o
        });
        match oracle.solve(problem, &asked) {
            SatAnswer::Unsat(core) => match core.decisions.iter().max() {
                None => {
                    self.infeasible = Some(Infeasible {
                        constraints: core.constraints,
                    });
                }
                Some(&j) => {
                    // Keep decisions 0..=j; the loop undoes and excludes j.
                    while self.decisions.len() > j + 1 {
                        self.decisions.pop();
                        self.undo_level();
                        self.stats.backtracks += 1;
                    }
                }
            },
            // Propagation is sound, so this does not happen; undoing one
            // decision at a time stays correct if it does.
            SatAnswer::Sat(_) => {}
        }
    }

    /// The root failed: no valid partition exists. SAT names the rules that
    /// conflict; without it, the rule whose propagation failed.
    fn declare_infeasible(&mut self, fail: Fail) {
        let mut constraints: Vec<usize> = (fail.constraint != usize::MAX)
            .then_some(fail.constraint)
            .into_iter()
            .collect();
        if self.use_sat {
            self.stats.sat_calls += 1;
            let (problem, oracle) = self.root_oracle();
            if let SatAnswer::Unsat(core) = oracle.solve(problem, &[]) {
                constraints = named(problem, &core);
            }
        }
        self.infeasible = Some(Infeasible { constraints });
    }
}

/// A SAT oracle for the solver's questions, under its target if any.
fn oracle(problem: &Problem, native: bool, target: Option<crate::target::Target>) -> SatOracle {
    let mut o = SatOracle::new(problem, native);
    o.set_target(target);
    o
}

/// The constraints a core names, the target as `problem.constraints.len()`.
fn named(problem: &Problem, core: &super::sat::Core) -> Vec<usize> {
    let mut out = core.constraints.clone();
    if core.target {
        out.push(problem.constraints.len());
    }
    out
}

/// The root failed while the solver was built: SAT names the rules that
/// conflict (on fewer chips when that is equivalent); without it, the rule
/// whose propagation failed.
fn root_conflict(problem: &Problem, options: Options, f: Fail) -> Infeasible {
    let failed = Infeasible {
        constraints: vec![f.constraint],
    };
    if !options.sat || rules::refuted(problem, f.constraint) {
        return failed;
    }
    let small = super::reduce::fewer_chips(problem);
    let p = small.as_ref().unwrap_or(problem);
    match SatOracle::new(p, options.native).solve(p, &[]) {
        SatAnswer::Unsat(core) => Infeasible {
            constraints: core.constraints,
        },
        // Propagation is sound, so this does not happen.
        SatAnswer::Sat(_) => failed,
    }
}

#[cfg(test)]
mod mask_tests {
    use super::Mask;
    use crate::domain::mask_of;
    use rand::{Rng, SeedableRng};

    /// A decision's mask built in place (one word) holds the chips
    /// `mask_of` does, chips past the package left out, on packages of one
    /// word and of several.
    #[test]
    fn a_mask_built_in_place_is_mask_of() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for _ in 0..500 {
            let total = rng.random_range(0..140usize);
            let chips: Vec<u32> = (0..rng.random_range(0..5))
                .map(|_| rng.random_range(0..(total as u32 + 3)))
                .collect();
            assert_eq!(
                Mask::of(total, &chips).words(),
                &mask_of(total, &chips)[..],
                "{chips:?} of {total}"
            );
        }
    }
}
