//! The SAT backing of the solver: the static model as clauses for varisat.
//!
//! Every node `u` has an order encoding `o[u][c] <=> chip(u) >= c` tied to a
//! one-hot `x[u][c] <=> chip(u) == c`. Each constraint's clauses are guarded
//! by a selector literal that every call assumes, so a failed core names the
//! constraints as well as the decisions (passed as assumptions) that conflict.
//!
//! What is encoded up front (eager) and what is added on demand (lazy):
//! - a native rule (a row of [`crate::rules::NATIVE_RULES`]): its own
//!   encoding, described in its folder (`rules/<key>/encode.rs`); it may
//!   keep instances to check after each solve and turn violations into cuts.
//! - anything else (generic): instances over few nodes and no flow relation
//!   are encoded as their truth table (a pruned decision tree, at most
//!   `SatOptions::table_limit` value combinations); the others are lazy, with the
//!   explanation (the values of the nodes the instance can depend on) shrunk
//!   by a three-valued evaluation to the nodes that falsify it on their own.
//!
//! The lazy loop solves, checks the model, adds a clause for every violated
//! instance, and solves again; every cut is implied by its constraint and
//! excludes the current model, so the loop terminates and is exact. The final
//! model is judged by the checker before it is returned. The first call
//! starts the search from a greedy placement (see `hint`), later ones from
//! the previous model (the solver's saved phases).
//!
//! A call can be bounded ([`SatOracle::solve_within`], on an oracle made by
//! [`SatOracle::bounded`]): it then stops after a given amount of work,
//! counted in the solver's own steps (see `meter`), and says it does not know.

pub(crate) mod encode;
pub(crate) mod eval;
mod hint;
mod meter;

use crate::checker::Checker;
use encode::{Lazy, Model};
use mcm_core::problem::{Placement, Problem};
use meter::{Gauge, Meter};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use varisat::{ExtendFormula, Lit, ProofFormat, Solver};

/// The answer of one call.
#[derive(Clone, Debug)]
pub enum SatAnswer {
    /// A full placement that satisfies every constraint and the decisions.
    Sat(Placement),
    /// The decisions do not extend to a valid placement.
    Unsat(Core),
}

/// Why the decisions cannot be extended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Core {
    /// Indices into the `decisions` slice given to `solve` that take part in the conflict.
    pub decisions: Vec<usize>,
    /// Indices into `problem.constraints` of the constraints whose clauses take part.
    pub constraints: Vec<usize>,
    /// The latency target takes part ([`SatOracle::set_target`]).
    pub target: bool,
}

#[derive(Clone, Debug, Default)]
pub struct SatStats {
    /// Calls of `solve`.
    pub calls: u64,
    /// Lazy clauses added (each excludes a cause of a violated instance).
    pub cuts: u64,
    /// Clauses given to the SAT solver, cuts included.
    pub clauses: u64,
    /// SAT variables.
    pub vars: u64,
    /// Runs of the SAT solver (one per lazy round).
    pub solves: u64,
    /// Cuts that had to fall back to excluding a whole model because no
    /// shorter explanation could be proven (0 unless the encoding has a gap).
    pub fallbacks: u64,
}

/// How the static model is encoded. The defaults are what `SatOracle::new`
/// uses; the other settings exist to test the lazy paths against the eager ones.
#[derive(Clone, Debug)]
pub struct SatOptions {
    /// Compact encodings for the constraints with `native: Some(..)`; when
    /// false, every constraint goes through the generic encoding.
    pub native: bool,
    /// The most value combinations a generic instance may have to be encoded
    /// as a table (0: every generic instance is lazy).
    pub table_limit: u64,
    /// At most this many eager pair clauses for `memory_capacity` in all.
    pub memory_pairs: usize,
    /// At most this many clauses and variables for the eager memory counters in all.
    pub memory_counters: usize,
    /// The same for counts (sums whose items all weigh the same, such as
    /// `count(u in nodes where chip(u) == d) <= k`), counted apart: their
    /// counter is exact and O(items x k), and lazy cuts alone cannot settle
    /// them (any k + 1 nodes overflow a chip, each set a cut of its own).
    pub count_counters: usize,
    /// Chip-level arc and walk variables for `triangle_dependency`; without
    /// them its violations are excluded by lazy cuts only.
    pub chip_flows: bool,
    /// At most this many eager arc definitions (edges x chip pairs); past it,
    /// only arcs up to a span that fits are eager, the others are defined when
    /// a model realises them. (Lazy arc definitions converge slowly: a search
    /// that may leave an arc undefined hides it.)
    pub arc_budget: usize,
    /// Start the first search from a greedy placement (`hint`) rather than
    /// from the solver's default phases.
    pub greedy_start: bool,
}

impl Default for SatOptions {
    fn default() -> SatOptions {
        SatOptions {
            native: true,
            table_limit: 4096,
            memory_pairs: 100_000,
            memory_counters: 1_000_000,
            count_counters: 6_000_000,
            chip_flows: true,
            arc_budget: 3_000_000,
            greedy_start: true,
        }
    }
}

/// Why a run of the lazy loop found no placement.
enum Halt {
    /// The assumptions conflict; these failed.
    Unsat(Vec<Lit>),
    /// The call's work limit was spent first (see `meter`).
    Spent,
}

/// Where an assumption literal comes from.
#[derive(Clone, Copy, Debug)]
enum Origin {
    Decision(usize),
    Constraint(usize),
    Target,
}

/// The SAT oracle of one problem. It keeps one incremental varisat solver:
/// learned clauses and lazy cuts persist from call to call.
pub struct SatOracle {
    solver: Solver<'static>,
    model: Model,
    lazy: Lazy,
    /// Fresh literals standing for "chip(u) in S", by (u, S).
    set_lits: HashMap<(u32, Vec<u32>), Lit>,
    /// The last valid placement found.
    witness: Option<Placement>,
    /// Minimise the decisions of a core by deletion (a few more calls).
    minimize: bool,
    /// Whether the search has been given a starting placement yet.
    hinted: bool,
    /// Print each round of the lazy loop (`MCMPART_SAT_TRACE` set).
    trace: bool,
    stats: SatStats,
    /// The latency target's clauses, made when a target is first set.
    target: Option<crate::target::encode::TargetSat>,
    /// The target calls are under, if any.
    target_now: Option<crate::target::Target>,
    /// How the problem was encoded (to encode it again, see `rebuild`).
    options: SatOptions,
    /// The proof's byte count, on an oracle whose calls may be bounded.
    gauge: Option<Rc<Gauge>>,
    /// A call spent its work limit: the solver cannot go on.
    stopped: bool,
    /// The placements excluded so far (to exclude them again after a
    /// rebuild), on an oracle whose calls may be bounded.
    excluded: Vec<Placement>,
}

impl SatOracle {
    /// Encodes the static model. `native`: use compact encodings for constraints with
    /// `native: Some(..)`; when false, every constraint goes through the generic encoding
    /// (used by differential tests).
    pub fn new(problem: &Problem, native: bool) -> SatOracle {
        SatOracle::with_options(
            problem,
            &SatOptions {
                native,
                ..SatOptions::default()
            },
        )
    }

    /// Encodes the static model with these settings.
    pub fn with_options(problem: &Problem, options: &SatOptions) -> SatOracle {
        SatOracle::build(problem, options, None)
    }

    /// An oracle whose calls may be bounded ([`SatOracle::solve_within`]).
    /// Its solver writes a proof of its search, into a sink that only counts
    /// it (see `meter`): a little more work a conflict, the search itself
    /// unchanged.
    pub fn bounded(problem: &Problem, native: bool) -> SatOracle {
        let options = SatOptions {
            native,
            ..SatOptions::default()
        };
        SatOracle::build(problem, &options, Some(Gauge::new()))
    }

    /// A bounded oracle ([`SatOracle::bounded`]) whose calls also stop, as
    /// one past its work limit does, once `stop` is set (from any thread):
    /// a call whose answer will not be read is ended at the solver's next
    /// proof step or lazy round. After that every call answers `None` at
    /// once (without encoding the problem again). Its calls go through
    /// [`SatOracle::solve_within`] (a stopped [`SatOracle::solve`] has no
    /// answer to give).
    pub fn stoppable(problem: &Problem, native: bool, stop: Arc<AtomicBool>) -> SatOracle {
        let options = SatOptions {
            native,
            ..SatOptions::default()
        };
        SatOracle::build(problem, &options, Some(Gauge::with_stop(Some(stop))))
    }

    /// The problem encoded under `options`, its solver's proof counted by
    /// `gauge` if any.
    fn build(problem: &Problem, options: &SatOptions, gauge: Option<Rc<Gauge>>) -> SatOracle {
        let mut solver = Solver::new();
        // Before any clause: varisat's proof covers the whole formula.
        if let Some(g) = &gauge {
            solver.write_proof(Meter(g.clone()), ProofFormat::Varisat);
        }
        let (model, lazy) = encode::encode(&mut solver, problem, options);
        let stats = SatStats {
            clauses: model.clauses,
            vars: model.vars,
            ..SatStats::default()
        };
        SatOracle {
            solver,
            model,
            lazy,
            set_lits: HashMap::new(),
            witness: None,
            minimize: false,
            hinted: !options.greedy_start,
            trace: std::env::var_os("MCMPART_SAT_TRACE").is_some(),
            stats,
            target: None,
            target_now: None,
            options: options.clone(),
            gauge,
            stopped: false,
            excluded: Vec::new(),
        }
    }

    /// Asks every later call for partitions whose latency is at most the
    /// target as well (`None`: no target). Targets of one oracle share
    /// their model (one problem); what a call learns under a target keeps
    /// holding under every lower one. An unsatisfiable answer under a
    /// target with no decisions proves that no valid partition meets it
    /// (`Core::target` says the target took part).
    pub fn set_target(&mut self, target: Option<crate::target::Target>) {
        if let Some(t) = &target {
            let enc = self
                .target
                .get_or_insert_with(|| crate::target::encode::TargetSat::new(t.model.clone()));
            // Encoded now, so that the assumptions are known before a call.
            enc.selectors(&mut self.model, &mut self.solver, t.latency_s);
        }
        self.target_now = target;
    }

    /// Whether a placement meets the target (any placement, without one).
    fn meets_target(&self, p: &Placement) -> bool {
        self.target_now.as_ref().is_none_or(|t| t.holds(&p.chips))
    }

    /// The selectors of the target calls are under.
    fn target_selectors(&mut self) -> Vec<Lit> {
        match (&mut self.target, &self.target_now) {
            (Some(enc), Some(t)) => enc.selectors(&mut self.model, &mut self.solver, t.latency_s),
            _ => Vec::new(),
        }
    }

    /// Whether an unsatisfiable answer's decisions are made minimal by
    /// deletion (off by default: each deletion tried costs one more solve,
    /// and one that turns out satisfiable can be a hard search).
    pub fn set_minimize(&mut self, on: bool) {
        self.minimize = on;
    }

    /// Is there a valid full placement in which node `d` is on a chip of `allowed` for
    /// every `(d, allowed)` in `decisions`? Sat returns such a placement, which
    /// satisfies every constraint as judged by the checker; Unsat returns the core.
    pub fn solve(&mut self, problem: &Problem, decisions: &[(u32, Vec<u32>)]) -> SatAnswer {
        if let Some(g) = &self.gauge {
            g.allow(None);
        }
        self.answer(problem, decisions)
            .expect("a call without a work limit runs to its end")
    }

    /// [`SatOracle::solve`] within `work` bytes of the solver's proof (see
    /// `meter`), on an oracle made by [`SatOracle::bounded`] (on another,
    /// without a limit): `None` when the call spent them first, which says
    /// nothing of the answer. A call stopped before its core was shrunk
    /// still answers, with the core it had. After a stop the oracle encodes
    /// the problem again (varisat cannot go on): its exclusions, target and
    /// last valid placement carry over; what the solver had learned is lost.
    pub fn solve_within(&mut self, problem: &Problem, decisions: &[(u32, Vec<u32>)], work: u64) -> Option<SatAnswer> {
        let Some(g) = self.gauge.clone() else {
            return Some(self.solve(problem, decisions));
        };
        g.allow(Some(work));
        let answer = self.answer(problem, decisions);
        g.allow(None);
        if self.stopped && !g.halted() {
            self.rebuild(problem);
        }
        answer
    }

    /// The proof bytes the solver has written, on an oracle made by
    /// [`SatOracle::bounded`] (the work its calls have done, in the unit of
    /// [`SatOracle::solve_within`]'s limit).
    pub fn work(&self) -> Option<u64> {
        self.gauge.as_ref().map(|g| g.spent())
    }

    /// The problem encoded afresh after a stopped call (see
    /// [`SatOracle::solve_within`]).
    fn rebuild(&mut self, problem: &Problem) {
        let mut fresh = SatOracle::build(problem, &self.options, self.gauge.clone());
        fresh.stats = self.stats.clone();
        fresh.minimize = self.minimize;
        fresh.hinted = true;
        for p in &self.excluded {
            fresh.exclude(p);
        }
        fresh.set_target(self.target_now.clone());
        if let Some(w) = self.witness.take() {
            fresh.suggest(problem, &w);
        }
        *self = fresh;
    }

    /// [`SatOracle::solve`]; `None` when the work limit was spent first.
    fn answer(&mut self, problem: &Problem, decisions: &[(u32, Vec<u32>)]) -> Option<SatAnswer> {
        self.stats.calls += 1;
        let n = self.model.n;
        let c = self.model.c as u32;
        for (d, _) in decisions {
            assert!(
                (*d as usize) < n,
                "decision on node {d}, but the problem has {n} placed nodes"
            );
        }
        let fits = |o: &SatOracle, w: &Placement| {
            decisions.iter().all(|(d, allowed)| allowed.contains(&w.chip(*d))) && o.meets_target(w)
        };
        if let Some(w) = self.witness.clone().filter(|w| fits(self, w)) {
            return Some(SatAnswer::Sat(w));
        }
        if !self.hinted {
            self.hinted = true;
            if let Some(h) = hint::greedy(problem) {
                self.suggest(problem, &h);
                if let Some(w) = self.witness.clone().filter(|w| fits(self, w)) {
                    return Some(SatAnswer::Sat(w));
                }
            }
        }
        // Decisions as assumption literals.
        let mut origins: HashMap<Lit, Vec<Origin>> = HashMap::new();
        let mut dec_lits: Vec<Vec<Lit>> = Vec::with_capacity(decisions.len());
        for (i, (d, allowed)) in decisions.iter().enumerate() {
            let mut set: Vec<u32> = allowed.iter().copied().filter(|&x| x < c).collect();
            set.sort_unstable();
            set.dedup();
            if set.is_empty() {
                return Some(SatAnswer::Unsat(Core {
                    decisions: vec![i],
                    constraints: vec![],
                    target: false,
                }));
            }
            let lits = self.set_literals(*d, &set);
            for &l in &lits {
                origins.entry(l).or_default().push(Origin::Decision(i));
            }
            dec_lits.push(lits);
        }
        for (ci, &s) in self.model.selectors.iter().enumerate() {
            origins.entry(s).or_default().push(Origin::Constraint(ci));
        }
        for s in self.target_selectors() {
            origins.entry(s).or_default().push(Origin::Target);
        }
        let all: Vec<usize> = (0..self.model.selectors.len()).collect();
        let assumptions = self.assumptions(&all, dec_lits.iter().flatten().copied());
        match self.run(problem, &assumptions, &all) {
            Ok(p) => {
                self.witness = Some(p.clone());
                Some(SatAnswer::Sat(p))
            }
            Err(Halt::Spent) => None,
            Err(Halt::Unsat(mut core)) => {
                let mut keep: Vec<usize> = core_decisions(&core, &origins);
                // Solving again under the core's decisions alone often gives a
                // smaller core (cheap: it is known to fail).
                for _ in 0..3 {
                    if keep.len() < 3 {
                        break;
                    }
                    let lits = keep.iter().flat_map(|&k| dec_lits[k].iter().copied());
                    let assumptions = self.assumptions(&all, lits);
                    match self.run(problem, &assumptions, &all) {
                        // The core so far stands.
                        Err(Halt::Spent) => break,
                        Err(Halt::Unsat(c2)) => {
                            let inner = core_decisions(&c2, &origins);
                            let shrank = inner.len() < keep.len();
                            keep = inner;
                            core = c2;
                            if !shrank {
                                break;
                            }
                        }
                        Ok(p) => {
                            // Cannot happen (a subset of the core's decisions
                            // and every constraint); keep the full core.
                            self.witness = Some(p);
                            break;
                        }
                    }
                }
                if self.minimize {
                    // Deletion-based minimisation of the decisions.
                    for cand in keep.clone() {
                        if !keep.contains(&cand) {
                            continue;
                        }
                        let trial: Vec<usize> = keep.iter().copied().filter(|&k| k != cand).collect();
                        let lits = trial.iter().flat_map(|&k| dec_lits[k].iter().copied());
                        let assumptions = self.assumptions(&all, lits);
                        match self.run(problem, &assumptions, &all) {
                            // `cand` is needed; the placement is a valid witness.
                            Ok(p) => self.witness = Some(p),
                            Err(Halt::Spent) => break,
                            Err(Halt::Unsat(c2)) => {
                                // The new core is within `trial`, so within `keep`.
                                keep = core_decisions(&c2, &origins);
                                core = c2;
                            }
                        }
                    }
                }
                if keep.is_empty() && !to_core(&core, &origins).target {
                    // The constraints conflict on their own: name the fewest.
                    core = self.minimize_constraints(problem, core, &origins);
                }
                Some(SatAnswer::Unsat(to_core(&core, &origins)))
            }
        }
    }

    /// Excludes one placement from every later answer (one the caller's
    /// judge refused): answers then speak of the other placements only.
    pub fn exclude(&mut self, placement: &Placement) {
        if placement.chips.len() != self.model.n || placement.chips.iter().any(|&x| x as usize >= self.model.c) {
            return;
        }
        let clause: Vec<Lit> = (0..self.model.n as u32)
            .map(|u| !self.model.x(u, placement.chips[u as usize]))
            .collect();
        self.model.add_plain(&mut self.solver, &clause);
        if self.gauge.is_some() {
            self.excluded.push(placement.clone());
        }
        if self.witness.as_ref() == Some(placement) {
            self.witness = None;
        }
    }

    /// Gives the solver a placement to start its search from (for example a
    /// greedy one): the next search prefers its values. When the placement is
    /// valid it also becomes the witness, returned for decisions it agrees with.
    pub fn suggest(&mut self, problem: &Problem, placement: &Placement) {
        self.hinted = true;
        let n = self.model.n;
        if placement.chips.len() != n || placement.chips.iter().any(|&x| x as usize >= self.model.c) {
            return;
        }
        if Checker::new(&problem.graph, &problem.package, placement).all_hold(&problem.constraints) {
            self.witness = Some(placement.clone());
        }
        // Solving under the placement as assumptions leaves the solver's saved
        // phases at its values (the lazy loop's cuts stay valid either way).
        let all: Vec<usize> = (0..self.model.selectors.len()).collect();
        let lits: Vec<Lit> = (0..n).map(|u| self.model.x(u as u32, placement.chips[u])).collect();
        let assumptions = self.assumptions(&all, lits.into_iter());
        if let Ok(p) = self.run(problem, &assumptions, &all) {
            self.witness = Some(p);
        }
    }

    pub fn stats(&self) -> SatStats {
        let mut s = self.stats.clone();
        s.clauses = self.model.clauses;
        s.vars = self.model.vars;
        s
    }

    /// The selectors of `active` constraints and of the target, then the
    /// given literals.
    fn assumptions(&mut self, active: &[usize], lits: impl Iterator<Item = Lit>) -> Vec<Lit> {
        let mut out: Vec<Lit> = active.iter().map(|&ci| self.model.selectors[ci]).collect();
        out.extend(self.target_selectors());
        let mut seen: std::collections::HashSet<Lit> = out.iter().copied().collect();
        out.extend(lits.filter(|l| seen.insert(*l)));
        out
    }

    /// Literals whose conjunction says `chip(u) in set` (set sorted, non-empty).
    fn set_literals(&mut self, u: u32, set: &[u32]) -> Vec<Lit> {
        let c = self.model.c as u32;
        let (lo, hi) = (set[0], set[set.len() - 1]);
        if set.len() == 1 {
            return vec![self.model.x(u, lo)];
        }
        if (hi - lo + 1) as usize == set.len() {
            // An interval: chip(u) >= lo and not chip(u) >= hi + 1.
            let mut out = Vec::new();
            if lo > 0 {
                out.push(self.model.ge(u, lo));
            }
            if hi + 1 < c {
                out.push(!self.model.ge(u, hi + 1));
            }
            return out;
        }
        if let Some(&l) = self.set_lits.get(&(u, set.to_vec())) {
            return vec![l];
        }
        let l = self.solver.new_lit();
        self.model.vars += 1;
        let mut clause = vec![!l];
        clause.extend(set.iter().map(|&x| self.model.x(u, x)));
        self.solver.add_clause(&clause);
        self.model.clauses += 1;
        self.set_lits.insert((u, set.to_vec()), l);
        vec![l]
    }

    /// The lazy loop under the given assumptions, checking the `active`
    /// constraints: a placement valid for them, or the failed assumptions
    /// (or the work limit spent, see `meter`).
    fn run(&mut self, problem: &Problem, assumptions: &[Lit], active: &[usize]) -> Result<Placement, Halt> {
        if self.stopped {
            return Err(Halt::Spent);
        }
        let mut mask = vec![false; problem.constraints.len()];
        for &ci in active {
            mask[ci] = true;
        }
        loop {
            // A stop between the lazy loop's rounds (a round that learns
            // nothing writes no proof).
            if self.gauge.as_ref().is_some_and(|g| g.halted()) {
                self.stopped = true;
                return Err(Halt::Spent);
            }
            self.solver.assume(assumptions);
            self.stats.solves += 1;
            let started = self.trace.then(std::time::Instant::now);
            match self.solver.solve() {
                Ok(true) => {
                    let values = self.solver.model().expect("a model after a satisfiable solve");
                    let p = self.model.placement(&values);
                    let (cuts, defs, vars) = self.lazy.cuts(problem, &self.model, &p, &mask, &mut self.stats);
                    // The target's cuts once the rules hold (it judges
                    // valid placements; its clauses guard themselves).
                    let mut own = Vec::new();
                    if let (true, Some(enc), Some(t)) =
                        (cuts.is_empty() && defs.is_empty(), &self.target, &self.target_now)
                    {
                        own = enc.cuts(&self.model, &p, t.latency_s);
                    }
                    // The variables the cuts defined, in the order they were handed out.
                    while self.model.vars < vars {
                        let l = self.solver.new_lit();
                        debug_assert_eq!(l.index() as u64, self.model.vars);
                        self.model.vars += 1;
                    }
                    if let Some(t) = started {
                        eprintln!(
                            "sat: round in {:?}: {} cuts, {} arc definitions",
                            t.elapsed(),
                            cuts.len(),
                            defs.len()
                        );
                    }
                    if cuts.is_empty() && defs.is_empty() && own.is_empty() {
                        return Ok(p);
                    }
                    for clause in own {
                        self.stats.cuts += 1;
                        self.model.add_plain(&mut self.solver, &clause);
                    }
                    for clause in defs {
                        self.stats.cuts += 1;
                        self.model.add_plain(&mut self.solver, &clause);
                    }
                    for (ci, clause) in cuts {
                        self.stats.cuts += 1;
                        self.model.add_guarded(&mut self.solver, ci, &clause);
                    }
                }
                Ok(false) => {
                    let core = self.solver.failed_core().map(<[Lit]>::to_vec).unwrap_or_default();
                    if let Some(t) = started {
                        eprintln!(
                            "sat: unsatisfiable in {:?}, {} failed assumptions",
                            t.elapsed(),
                            core.len()
                        );
                    }
                    return Err(Halt::Unsat(core));
                }
                // Only the meter fails a call (no other proof is written).
                Err(e) if self.gauge.is_some() => {
                    if self.trace {
                        eprintln!("sat: stopped ({e})");
                    }
                    self.stopped = true;
                    return Err(Halt::Spent);
                }
                Err(e) => panic!("the SAT solver failed: {e}"),
            }
        }
    }

    /// Drops constraints from a core of no decisions while the rest still conflict.
    fn minimize_constraints(
        &mut self,
        problem: &Problem,
        mut core: Vec<Lit>,
        origins: &HashMap<Lit, Vec<Origin>>,
    ) -> Vec<Lit> {
        let mut keep: Vec<usize> = to_core(&core, origins).constraints;
        for cand in keep.clone() {
            if !keep.contains(&cand) {
                continue;
            }
            let trial: Vec<usize> = keep.iter().copied().filter(|&k| k != cand).collect();
            let assumptions = self.assumptions(&trial, std::iter::empty());
            // A placement valid for only some constraints is no witness.
            match self.run(problem, &assumptions, &trial) {
                Err(Halt::Unsat(c2)) => {
                    keep = to_core(&c2, origins).constraints;
                    core = c2;
                }
                // The core so far stands.
                Err(Halt::Spent) => break,
                Ok(_) => {}
            }
        }
        core
    }
}

fn core_decisions(core: &[Lit], origins: &HashMap<Lit, Vec<Origin>>) -> Vec<usize> {
    to_core(core, origins).decisions
}

fn to_core(core: &[Lit], origins: &HashMap<Lit, Vec<Origin>>) -> Core {
    let mut out = Core::default();
    for l in core {
        for o in origins.get(l).map(Vec::as_slice).unwrap_or(&[]) {
            match *o {
                Origin::Decision(i) => out.decisions.push(i),
                Origin::Constraint(ci) => out.constraints.push(ci),
                Origin::Target => out.target = true,
            }
        }
    }
    out.decisions.sort_unstable();
    out.decisions.dedup();
    out.constraints.sort_unstable();
    out.constraints.dedup();
    out
}
