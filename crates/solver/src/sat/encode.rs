//! The clauses of the static model and the lazy cuts: the variables, the
//! driver that hands each instance to its native rule's encoding (looked up
//! in [`crate::rules::NATIVE_RULES`]) or to the generic one, and the
//! explanation of violated instances that both use.

use super::eval::Partial;
use super::{SatOptions, SatStats};
use crate::checker::Checker;
use crate::families::encode::FamilyEncoding;
use crate::rules::{self, NATIVE_RULES};
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{Formula, Instance, Placement, Problem};
use varisat::{ExtendFormula, Lit, Solver};

/// The variables of the model and the clause bookkeeping.
pub(crate) struct Model {
    pub n: usize,
    pub c: usize,
    /// x[u * c + k]: chip(u) == k.
    x: Vec<Lit>,
    /// o[u * c + k] for k in 1..c: chip(u) >= k (k = 0 unused).
    o: Vec<Lit>,
    /// One selector per constraint.
    pub selectors: Vec<Lit>,
    /// A literal fixed to true.
    top: Lit,
    pub vars: u64,
    pub clauses: u64,
}

/// A literal or a constant, for clauses built from formulas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum L {
    True,
    False,
    Lit(Lit),
}

impl Model {
    pub fn x(&self, u: u32, k: u32) -> Lit {
        self.x[u as usize * self.c + k as usize]
    }

    /// `chip(u) >= k` for 0 < k < c.
    pub fn ge(&self, u: u32, k: u32) -> Lit {
        debug_assert!(k > 0 && (k as usize) < self.c);
        self.o[u as usize * self.c + k as usize]
    }

    /// `chip(u) >= k` for any k, folded to a constant outside 1..c.
    pub(crate) fn ge_l(&self, u: u32, k: i64) -> L {
        if k <= 0 {
            L::True
        } else if k as usize >= self.c {
            L::False
        } else {
            L::Lit(self.ge(u, k as u32))
        }
    }

    pub(crate) fn new_lit(&mut self, solver: &mut Solver) -> Lit {
        self.vars += 1;
        solver.new_lit()
    }

    pub(crate) fn add(&mut self, solver: &mut Solver, clause: &[Lit]) {
        self.clauses += 1;
        solver.add_clause(clause);
    }

    /// One item of a weighted sequential counter: given `prev[j - 1]`
    /// ("the items before weigh at least j units", for j up to `prev.len()`),
    /// the same register with item `x` of `w` units added, capped at `cap`
    /// units. Only that direction is stated, which is what an upper bound
    /// on the total needs. Shared by the resource counters and the latency
    /// target's.
    pub(crate) fn counter_step(&mut self, solver: &mut Solver, prev: &[Lit], x: Lit, w: usize, cap: usize) -> Vec<Lit> {
        let top = (prev.len() + w).min(cap);
        let mut next = Vec::with_capacity(top);
        for j in 1..=top {
            let r = self.new_lit(solver);
            if j <= prev.len() {
                self.add(solver, &[!prev[j - 1], r]);
            }
            if j <= w {
                self.add(solver, &[!x, r]);
            } else if j - w <= prev.len() {
                self.add(solver, &[!x, !prev[j - w - 1], r]);
            }
            next.push(r);
        }
        next
    }

    /// Adds a clause that no constraint guards (definitions of auxiliary variables).
    pub fn add_plain(&mut self, solver: &mut Solver, clause: &[Lit]) {
        self.add(solver, clause);
    }

    /// Adds `selector(ci) -> OR clause`.
    pub fn add_guarded(&mut self, solver: &mut Solver, ci: usize, clause: &[Lit]) {
        let mut full = Vec::with_capacity(clause.len() + 1);
        full.push(!self.selectors[ci]);
        full.extend_from_slice(clause);
        self.add(solver, &full);
    }

    /// Adds a clause of literals and constants (`guard -> OR lits`).
    pub(crate) fn add_l(&mut self, solver: &mut Solver, guard: Option<usize>, lits: &[L]) {
        let mut clause = Vec::with_capacity(lits.len() + 1);
        if let Some(ci) = guard {
            clause.push(!self.selectors[ci]);
        }
        for l in lits {
            match *l {
                L::True => return,
                L::False => {}
                L::Lit(l) => clause.push(l),
            }
        }
        self.add(solver, &clause);
    }

    /// Reads the placement out of a model.
    pub fn placement(&self, values: &[Lit]) -> Placement {
        let mut truth = vec![false; self.vars as usize + 1];
        for l in values {
            if l.index() < truth.len() {
                truth[l.index()] = l.is_positive();
            }
        }
        let chips = (0..self.n)
            .map(|u| {
                (0..self.c)
                    .find(|&k| truth[self.x[u * self.c + k].index()])
                    .expect("exactly one chip per node") as u32
            })
            .collect();
        Placement::new(chips)
    }
}

/// What a rule's encoding works with while the model is built.
pub(crate) struct Enc<'a> {
    pub m: &'a mut Model,
    pub solver: &'a mut Solver<'static>,
    pub problem: &'a Problem,
    pub opts: &'a SatOptions,
}

impl Enc<'_> {
    /// Whether no arc of the chip flow graph can go down: some native rule
    /// states `chip(u) <= chip(v)` for every placed edge (the table says
    /// which rules state such pairs).
    pub fn upward_flow(&self) -> bool {
        self.opts.native && rules::upward_flow(self.problem)
    }
}

/// A model and what the rules check on it, for lazy cuts.
pub(crate) struct Judged<'a> {
    pub problem: &'a Problem,
    pub m: &'a Model,
    pub p: &'a Placement,
    /// The constraints to check, by index.
    pub active: &'a [bool],
    /// New auxiliary variables a cut may define (in `defs`).
    pub fresh: &'a Fresh,
}

/// Hands out the variables after the model's: the oracle allocates them in
/// the solver once the round's cuts are in (cuts see the model read-only).
pub(crate) struct Fresh {
    next: std::cell::Cell<u64>,
}

impl Fresh {
    pub fn lit(&self) -> Lit {
        let v = self.next.get();
        self.next.set(v + 1);
        Lit::from_index(v as usize, true)
    }
}

/// A native rule's SAT encoding, one per rule in use: it encodes the
/// instances it recognises, keeps what it must check after each solve, and
/// turns violations into cuts.
pub(crate) trait RuleEncoding {
    /// Encodes one instance of constraint `ci`; false leaves it to the
    /// generic encoding (a formula of a shape the rule does not know).
    fn encode(&mut self, enc: &mut Enc, ci: usize, ii: usize, f: &Formula) -> bool;
    /// Runs once every constraint is encoded.
    fn finish(&mut self, _enc: &mut Enc) {}
    /// Cuts for the violated instances of the active constraints (each with
    /// its constraint) and definitions of auxiliary variables.
    fn cuts(
        &mut self,
        _on: &Judged,
        _stats: &mut SatStats,
        _out: &mut Vec<(usize, Vec<Lit>)>,
        _defs: &mut Vec<Vec<Lit>>,
    ) {
    }
}

/// Cuts found on a model: clauses with the constraint that implies each,
/// definitions of auxiliary variables that no constraint guards, and the
/// variable count once the definitions' fresh variables are counted.
pub(crate) type Cuts = (Vec<(usize, Vec<Lit>)>, Vec<Vec<Lit>>, u64);

/// The instances checked after each solve.
pub(crate) struct Lazy {
    /// The encodings of the native rules in use, in table order.
    rules: Vec<Box<dyn RuleEncoding>>,
    /// Generic lazy instances: (constraint, instance, nodes the value depends on).
    generic: Vec<(usize, usize, Vec<u32>)>,
}

/// Builds the model's variables and eager clauses, and the lazy checks.
pub(crate) fn encode(solver: &mut Solver<'static>, problem: &Problem, opts: &SatOptions) -> (Model, Lazy) {
    let native = opts.native;
    let graph = &problem.graph;
    let n = graph.num_placed();
    let c = problem.package.num_chips();
    let mut m = Model {
        n,
        c,
        x: Vec::new(),
        o: Vec::new(),
        selectors: Vec::new(),
        top: Lit::from_index(0, true),
        vars: 0,
        clauses: 0,
    };
    m.top = m.new_lit(solver);
    m.add(solver, &[m.top]);
    for _ in 0..n * c {
        let l = m.new_lit(solver);
        m.x.push(l);
    }
    for _u in 0..n {
        for k in 0..c {
            let l = if k == 0 { m.top } else { m.new_lit(solver) };
            m.o.push(l);
        }
    }
    // The order encoding and its tie to the one-hot variables.
    for u in 0..n as u32 {
        if c == 0 {
            m.add(solver, &[]);
            break;
        }
        for k in 1..c.saturating_sub(1) as u32 {
            let (a, b) = (m.ge(u, k + 1), m.ge(u, k));
            m.add(solver, &[!a, b]);
        }
        for k in 0..c as u32 {
            let xk = m.x(u, k);
            let here = m.ge_l(u, k as i64);
            let next = m.ge_l(u, k as i64 + 1);
            if let L::Lit(g) = here {
                m.add(solver, &[!xk, g]);
            }
            if let L::Lit(g) = next {
                m.add(solver, &[!xk, !g]);
            }
            let neg = |l: L| match l {
                L::True => L::False,
                L::False => L::True,
                L::Lit(l) => L::Lit(!l),
            };
            m.add_l(solver, None, &[neg(here), next, L::Lit(xk)]);
        }
    }
    for _ in &problem.constraints {
        let s = m.new_lit(solver);
        m.selectors.push(s);
    }
    let mut generic_lazy = Vec::new();
    // One encoding per native rule, made when its first constraint comes.
    let mut used: Vec<Option<Box<dyn RuleEncoding>>> = NATIVE_RULES.iter().map(|_| None).collect();
    let mut family: Option<Box<dyn RuleEncoding>> = None;
    let mut enc = Enc {
        m: &mut m,
        solver,
        problem,
        opts,
    };
    for (ci, gc) in problem.constraints.iter().enumerate() {
        let row = if native {
            gc.native.as_deref().and_then(rules::position)
        } else {
            None
        };
        for (ii, inst) in gc.instances.iter().enumerate() {
            let done = match row {
                Some(r) => used[r].get_or_insert_with(|| (NATIVE_RULES[r].encoding)(opts)).encode(
                    &mut enc,
                    ci,
                    ii,
                    &inst.formula,
                ),
                // No native key: the families of its instances' shapes.
                None if native => family
                    .get_or_insert_with(|| Box::new(FamilyEncoding::new(opts)))
                    .encode(&mut enc, ci, ii, &inst.formula),
                None => false,
            };
            if !done {
                generic(
                    enc.m,
                    enc.solver,
                    problem,
                    ci,
                    ii,
                    &inst,
                    opts.table_limit,
                    &mut generic_lazy,
                );
            }
        }
    }
    let mut natives: Vec<Box<dyn RuleEncoding>> = used.into_iter().flatten().chain(family).collect();
    for r in &mut natives {
        r.finish(&mut enc);
    }
    (
        m,
        Lazy {
            rules: natives,
            generic: generic_lazy,
        },
    )
}

/// The generic path: a truth table (pruned decision tree) for an instance
/// over few nodes, a lazy check otherwise.
#[allow(clippy::too_many_arguments)]
fn generic(
    m: &mut Model,
    solver: &mut Solver,
    problem: &Problem,
    ci: usize,
    ii: usize,
    inst: &Instance,
    table_limit: u64,
    lazy: &mut Vec<(usize, usize, Vec<u32>)>,
) {
    match inst.formula {
        Formula::Const(true) => return,
        Formula::Const(false) => {
            m.add_guarded(solver, ci, &[]);
            return;
        }
        _ => {}
    }
    let (mut deps, global) = inst.formula.dependencies();
    if global {
        // The flow graph depends on every edge's endpoints.
        for e in problem.graph.placed_edges() {
            deps.push(e.src);
            deps.push(e.dst);
        }
        deps.sort_unstable();
        deps.dedup();
    }
    let size = (m.c as u64).checked_pow(deps.len() as u32);
    if !global && size.is_some_and(|s| s <= table_limit) {
        let mut chips = vec![None; m.n];
        let mut forbidden = Vec::new();
        if table(problem, &inst.formula, &deps, 0, &mut chips, m.c as u32, &mut forbidden) {
            for combo in forbidden {
                let clause: Vec<Lit> = combo.iter().map(|&(u, k)| !m.x(u, k)).collect();
                m.add_guarded(solver, ci, &clause);
            }
            return;
        }
    }
    lazy.push((ci, ii, deps));
}

/// Walks the assignments of `deps[i..]`, collecting the partial assignments
/// that falsify `f` whatever the rest; false when some full assignment
/// leaves it undecided.
fn table(
    problem: &Problem,
    f: &Formula,
    deps: &[u32],
    i: usize,
    chips: &mut Vec<Option<u32>>,
    c: u32,
    out: &mut Vec<Vec<(u32, u32)>>,
) -> bool {
    let verdict = Partial::new(&problem.graph, &problem.package, chips).holds(f);
    match verdict {
        Some(true) => return true,
        Some(false) => {
            out.push(
                deps[..i]
                    .iter()
                    .map(|&u| (u, chips[u as usize].expect("assigned")))
                    .collect(),
            );
            return true;
        }
        None if i == deps.len() => return false,
        None => {}
    }
    let u = deps[i] as usize;
    for k in 0..c {
        chips[u] = Some(k);
        if !table(problem, f, deps, i + 1, chips, c, out) {
            chips[u] = None;
            return false;
        }
    }
    chips[u] = None;
    true
}

impl Lazy {
    /// Clauses for the violated instances of the active constraints, each
    /// with its constraint, and definitions of auxiliary variables (arcs);
    /// both empty when the placement is valid for all of them.
    /// `m.vars` counts the variables in use, so the first fresh one is
    /// `m.vars`; the third result is the variable count after the cuts.
    pub fn cuts(&mut self, problem: &Problem, m: &Model, p: &Placement, active: &[bool], stats: &mut SatStats) -> Cuts {
        let mut out = Vec::new();
        let mut defs = Vec::new();
        let fresh = Fresh {
            next: std::cell::Cell::new(m.vars),
        };
        let on = Judged {
            problem,
            m,
            p,
            active,
            fresh: &fresh,
        };
        for r in &mut self.rules {
            r.cuts(&on, stats, &mut out, &mut defs);
        }
        let graph = &problem.graph;
        let package = &problem.package;
        if !self.generic.is_empty() {
            let checker = Checker::new(graph, package, p);
            for (ci, ii, deps) in &self.generic {
                if active[*ci] {
                    let inst = problem.constraints[*ci].instances.get(*ii);
                    if !checker.holds(&inst.formula) {
                        out.push((*ci, explain(graph, package, m, &inst.formula, deps, p, stats)));
                    }
                }
            }
        }
        if out.is_empty() && defs.is_empty() {
            // The checker is the judge: anything it rejects that the
            // encoding let through is excluded (never expected to happen).
            let checker = Checker::new(graph, package, p);
            for (ci, gc) in problem.constraints.iter().enumerate() {
                if !active[ci] {
                    continue;
                }
                for inst in gc.instances.iter() {
                    if !checker.holds(&inst.formula) {
                        let all: Vec<u32> = (0..m.n as u32).collect();
                        stats.fallbacks += 1;
                        out.push((ci, explain(graph, package, m, &inst.formula, &all, p, stats)));
                    }
                }
            }
        }
        (out, defs, fresh.next.get())
    }
}

/// A clause excluding the cause of a violated instance: the values of a
/// subset of `deps` that falsifies `f` whatever the rest, shrunk by deletion
/// (in halving chunks, then one by one). Falls back to the whole model.
pub(crate) fn explain(
    graph: &Graph,
    package: &Package,
    m: &Model,
    f: &Formula,
    deps: &[u32],
    p: &Placement,
    stats: &mut SatStats,
) -> Vec<Lit> {
    let mut chips: Vec<Option<u32>> = vec![None; p.chips.len()];
    for &w in deps {
        chips[w as usize] = Some(p.chip(w));
    }
    if Partial::new(graph, package, &chips).holds(f) != Some(false) {
        stats.fallbacks += 1;
        return (0..m.n as u32).map(|w| !m.x(w, p.chip(w))).collect();
    }
    let mut kept: Vec<u32> = deps.to_vec();
    let mut chunk = kept.len().div_ceil(2).max(1);
    loop {
        let mut next = Vec::with_capacity(kept.len());
        let mut i = 0;
        while i < kept.len() {
            let end = (i + chunk).min(kept.len());
            for &w in &kept[i..end] {
                chips[w as usize] = None;
            }
            if Partial::new(graph, package, &chips).holds(f) != Some(false) {
                for &w in &kept[i..end] {
                    chips[w as usize] = Some(p.chip(w));
                }
                next.extend_from_slice(&kept[i..end]);
            }
            i = end;
        }
        kept = next;
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    kept.iter().map(|&w| !m.x(w, p.chip(w))).collect()
}
