//! The clauses of the static model and the lazy cuts.

use super::eval::{ArcSet, Partial};
use super::{SatOptions, SatStats};
use crate::checker::Checker;
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{CmpOp, Formula, Instance, Placement, Problem, Term};
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
enum L {
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
    fn ge_l(&self, u: u32, k: i64) -> L {
        if k <= 0 {
            L::True
        } else if k as usize >= self.c {
            L::False
        } else {
            L::Lit(self.ge(u, k as u32))
        }
    }

    fn new_lit(&mut self, solver: &mut Solver) -> Lit {
        self.vars += 1;
        solver.new_lit()
    }

    fn add(&mut self, solver: &mut Solver, clause: &[Lit]) {
        self.clauses += 1;
        solver.add_clause(clause);
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
    fn add_l(&mut self, solver: &mut Solver, guard: Option<usize>, lits: &[L]) {
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

/// A memory instance: items `(node, chip, weight)`, of which those with
/// `chip(node) == chip` add up, and must stay within `cap`.
struct MemInst {
    ci: usize,
    items: Vec<(u32, u32, f64)>,
    cap: f64,
    /// Position of each node's item, `NONE` when it has none, `MANY` when several.
    pos: Vec<u32>,
}

const NONE: u32 = u32::MAX;
const MANY: u32 = u32::MAX - 1;

/// Cuts found on a model: clauses with the constraint that implies each,
/// and definitions of auxiliary variables (arcs) that no constraint guards.
pub(crate) type Cuts = (Vec<(usize, Vec<Lit>)>, Vec<Vec<Lit>>);

/// The instances checked after each solve.
pub(crate) struct Lazy {
    mem: Vec<MemInst>,
    /// Triangle instances: (constraint, instance, u, v).
    tri: Vec<(usize, usize, u32, u32)>,
    /// Generic lazy instances: (constraint, instance, nodes the value depends on).
    generic: Vec<(usize, usize, Vec<u32>)>,
    /// The chip-level flow graph, when a triangle constraint uses it.
    flow: Option<FlowVars>,
}

/// Chip-level arcs and reachability: `f[a][b]` is implied by every edge
/// placed from chip a to chip b, `r[a][b]` by a walk of one or more arcs.
/// A triangle constraint whose instances cover every edge then says
/// `not (f[a][b] and f[a][m] and r[m][b])` for m != a: an arc a -> b may not
/// coexist with a walk of two or more arcs from a to b.
struct FlowVars {
    f: Vec<Lit>,
    /// Arc definitions for pairs a < b <= a + window are eager (when the
    /// problem requires `acyclic_flow` no arc goes down, and long arcs are
    /// rare); the others are added when a violating model realises them.
    window: u32,
    upward: bool,
    added: std::collections::HashSet<(u32, u32, u32)>,
}

/// Builds the model's variables and eager clauses, and the lazy checks.
pub(crate) fn encode(solver: &mut Solver, problem: &Problem, opts: &SatOptions) -> (Model, Lazy) {
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
    let mut lazy = Lazy {
        mem: Vec::new(),
        tri: Vec::new(),
        generic: Vec::new(),
        flow: None,
    };
    let mut pair_budget = opts.memory_pairs;
    let mut counter_used = 0;
    for (ci, gc) in problem.constraints.iter().enumerate() {
        let kind = if native { gc.native.as_deref() } else { None };
        for (ii, inst) in gc.instances.iter().enumerate() {
            let done = match kind {
                Some("acyclic_flow") => acyclic(&mut m, solver, ci, &inst.formula),
                Some("no_skip") => no_skip(&mut m, solver, ci, &inst.formula),
                Some("memory_capacity") => match memory(n, c, ci, &inst.formula) {
                    Some(mi) => {
                        memory_eager(&mut m, solver, &mi, &mut pair_budget);
                        let share = opts.memory_counters / c.max(1);
                        let left = opts.memory_counters - counter_used;
                        counter_used += memory_counter(&mut m, solver, &mi, share.min(left));
                        lazy.mem.push(mi);
                        true
                    }
                    None => false,
                },
                Some("triangle_dependency") => match triangle(&inst.formula) {
                    Some((u, v)) => {
                        lazy.tri.push((ci, ii, u, v));
                        true
                    }
                    None => false,
                },
                _ => false,
            };
            if !done {
                generic(&mut m, solver, problem, ci, ii, inst, opts.table_limit, &mut lazy);
            }
        }
    }
    // The chip-level arcs take C³ clauses: past a few hundred chips they
    // would not fit in memory (512 chips: billions of literals), and the
    // triangle rule is refined lazily without them.
    let c = problem.package.num_chips();
    if opts.chip_flows && c.saturating_mul(c).saturating_mul(c) <= MAX_FLOW_CELLS {
        flow_structure(&mut m, solver, problem, native, opts.arc_budget, &mut lazy);
    }
    (m, lazy)
}

/// The largest C³ the chip-level arcs are built for (128 chips).
const MAX_FLOW_CELLS: usize = 128 * 128 * 128;

/// Builds the chip-level arcs for the triangle constraints whose instances
/// cover every placed edge.
fn flow_structure(
    m: &mut Model,
    solver: &mut Solver,
    problem: &Problem,
    native: bool,
    arc_budget: usize,
    lazy: &mut Lazy,
) {
    let edges = problem.graph.placed_edges();
    let mut all: Vec<(u32, u32)> = edges.iter().map(|e| (e.src, e.dst)).collect();
    all.sort_unstable();
    let mut users = Vec::new();
    for ci in 0..problem.constraints.len() {
        let mut mine: Vec<(u32, u32)> = lazy.tri.iter().filter(|t| t.0 == ci).map(|t| (t.2, t.3)).collect();
        mine.sort_unstable();
        mine.dedup();
        if !mine.is_empty() && mine == all {
            users.push(ci);
        }
    }
    let c = m.c;
    if users.is_empty() || c < 2 {
        return;
    }
    let upward = native
        && problem.constraints.iter().any(|gc| {
            gc.native.as_deref() == Some("acyclic_flow")
                && gc.instances.len() == edges.len()
                && gc.instances.iter().all(|i| acyclic_pair(&i.formula).is_some())
        });
    // Eager arc definitions: upward only when no arc can go down.
    let per = edges.len().max(1) * c * if upward { 1 } else { 2 };
    let window = (arc_budget / per).min(c) as u32;
    let mut f = Vec::with_capacity(c * c);
    let mut r = Vec::with_capacity(c * c);
    for _ in 0..c * c {
        let l = m.new_lit(solver);
        f.push(l);
        let l = m.new_lit(solver);
        r.push(l);
    }
    let at = |a: usize, b: usize| a * c + b;
    for a in 0..c {
        for b in 0..c {
            // r[a][b] <= f[a][b]; r[a][b] <= f[a][k] and r[k][b].
            if a != b {
                m.add(solver, &[!f[at(a, b)], r[at(a, b)]]);
            }
            for k in 0..c {
                if k != a {
                    m.add(solver, &[!f[at(a, k)], !r[at(k, b)], r[at(a, b)]]);
                }
            }
        }
    }
    for &ci in &users {
        for a in 0..c {
            for b in 0..c {
                if a == b {
                    continue;
                }
                for k in 0..c {
                    if k != a {
                        let clause = [!f[at(a, b)], !f[at(a, k)], !r[at(k, b)]];
                        m.add_guarded(solver, ci, &clause);
                    }
                }
            }
        }
    }
    for e in edges {
        for a in 0..c as u32 {
            for b in a.saturating_sub(window)..(a + 1 + window).min(c as u32) {
                if b != a && (b > a || !upward) {
                    let clause = [!m.x(e.src, a), !m.x(e.dst, b), f[at(a as usize, b as usize)]];
                    m.add(solver, &clause);
                }
            }
        }
    }
    lazy.flow = Some(FlowVars {
        f,
        window,
        upward,
        added: Default::default(),
    });
}

fn acyclic_pair(f: &Formula) -> Option<(u32, u32)> {
    match f {
        Formula::Cmp(CmpOp::Le, Term::Chip(u), Term::Chip(v)) => Some((*u, *v)),
        Formula::Cmp(CmpOp::Ge, Term::Chip(v), Term::Chip(u)) => Some((*u, *v)),
        _ => None,
    }
}

/// `chip(u) <= chip(v)`: `o[u][k] -> o[v][k]` for every k.
fn acyclic(m: &mut Model, solver: &mut Solver, ci: usize, f: &Formula) -> bool {
    let Some((u, v)) = acyclic_pair(f) else {
        return false;
    };
    for k in 1..m.c as u32 {
        let (a, b) = (m.ge(u, k), m.ge(v, k));
        m.add_guarded(solver, ci, &[!a, b]);
    }
    true
}

/// The disjuncts of a formula that is an `or` of (or one) `chip(u) >= k` (`ge`)
/// or `chip(u) == k` comparisons, as literals.
fn disjuncts(m: &Model, f: &Formula, ge: bool) -> Option<Vec<L>> {
    let one = |f: &Formula| -> Option<L> {
        match f {
            Formula::Const(b) => Some(if *b { L::True } else { L::False }),
            Formula::Cmp(CmpOp::Ge, Term::Chip(u), Term::Const(k)) if ge => {
                if k.is_nan() {
                    Some(L::False)
                } else {
                    Some(m.ge_l(*u, k.ceil().clamp(-1.0, m.c as f64 + 1.0) as i64))
                }
            }
            Formula::Cmp(CmpOp::Eq, Term::Chip(u), Term::Const(k)) if !ge => {
                if *k >= 0.0 && k.fract() == 0.0 && (*k as usize) < m.c {
                    Some(L::Lit(m.x(*u, *k as u32)))
                } else {
                    Some(L::False)
                }
            }
            _ => None,
        }
    };
    match f {
        Formula::Or(xs) => xs.iter().map(one).collect(),
        other => one(other).map(|l| vec![l]),
    }
}

/// `(OR chip(u) >= d) -> (OR chip(v) == d)`: `o[u][d] -> t`, `t -> OR x[v][d]`.
fn no_skip(m: &mut Model, solver: &mut Solver, ci: usize, f: &Formula) -> bool {
    let (a, b) = match f {
        Formula::Implies(a, b) => (a.as_ref(), b.as_ref()),
        _ => return false,
    };
    let (Some(pre), Some(post)) = (disjuncts(m, a, true), disjuncts(m, b, false)) else {
        return false;
    };
    if post.contains(&L::True) || pre.iter().all(|l| *l == L::False) {
        return true;
    }
    if pre.contains(&L::True) {
        m.add_l(solver, Some(ci), &post);
        return true;
    }
    let t = m.new_lit(solver);
    for l in &pre {
        if let L::Lit(l) = l {
            m.add(solver, &[!*l, t]);
        }
    }
    let mut clause = vec![L::Lit(!t)];
    clause.extend(post);
    m.add_l(solver, Some(ci), &clause);
    true
}

/// `sum(chip(u) == k: w) <= cap` with finite weights >= 0.
fn memory(n: usize, c: usize, ci: usize, f: &Formula) -> Option<MemInst> {
    let Formula::Cmp(CmpOp::Le, Term::Sum(es), Term::Const(cap)) = f else {
        return None;
    };
    if cap.is_nan() {
        return None;
    }
    let mut items = Vec::with_capacity(es.len());
    let mut pos = vec![NONE; n];
    for (cond, t) in es {
        let (Formula::Cmp(CmpOp::Eq, Term::Chip(u), Term::Const(k)), Term::Const(w)) = (cond, t) else {
            return None;
        };
        if !(w.is_finite() && *w >= 0.0) {
            return None;
        }
        if !(*k >= 0.0 && k.fract() == 0.0 && (*k as usize) < c) {
            // Never holds: the item never counts.
            continue;
        }
        let slot = &mut pos[*u as usize];
        *slot = if *slot == NONE { items.len() as u32 } else { MANY };
        items.push((*u, *k as u32, *w));
    }
    Some(MemInst {
        ci,
        items,
        cap: *cap,
        pos,
    })
}

/// Whether the items at these positions (in instance order) overflow.
fn overflows(mi: &MemInst, positions: &mut [usize]) -> bool {
    positions.sort_unstable();
    let total: f64 = positions.iter().map(|&i| mi.items[i].2).sum();
    // NaN never fits (the checker's `<=` is false on it).
    matches!(total.partial_cmp(&mi.cap), Some(std::cmp::Ordering::Greater) | None)
}

/// The finest resolution of the eager memory counters: weights are counted
/// in units of `cap / K`, rounded down, for the largest K of these that fits
/// the budget.
const COUNTER_UNITS: [u64; 4] = [64, 32, 16, 8];

/// A weighted sequential counter of the weights rounded down to units of
/// `q = cap / K`: each weight is `q * units + r` with `r >= 0`, so `sum w <=
/// cap` implies `sum units <= K`, and `sum units <= K - 1` as soon as some
/// remainder is there (a virtual item of one unit stands for "some item with
/// a remainder is on the chip"). The clauses are therefore sound, and the
/// lazy cuts settle what the rounding lets through. Exact integer arithmetic
/// only: weights and capacity must be integers.
fn memory_counter(m: &mut Model, solver: &mut Solver, mi: &MemInst, budget: usize) -> usize {
    let integral = |v: f64| v.fract() == 0.0 && (0.0..9.0e15).contains(&v);
    if !integral(mi.cap) || mi.cap < 1.0 || mi.items.iter().any(|it| !integral(it.2)) {
        return 0;
    }
    let cap = mi.cap as u128;
    let fits: Vec<(u32, u32, u128)> = mi
        .items
        .iter()
        .filter(|it| it.2 <= mi.cap)
        .map(|&(u, d, w)| (u, d, w as u128))
        .collect();
    for k in COUNTER_UNITS {
        let mut items: Vec<(Lit, usize)> = fits
            .iter()
            .filter(|it| it.2 * k as u128 >= cap)
            .map(|&(u, d, w)| (m.x(u, d), (w * k as u128 / cap) as usize))
            .collect();
        let rest: Vec<Lit> = fits
            .iter()
            .filter(|it| !(it.2 * k as u128).is_multiple_of(cap))
            .map(|&(u, d, _)| m.x(u, d))
            .collect();
        let k = k as usize;
        let total: usize = items.iter().map(|it| it.1).sum::<usize>() + usize::from(!rest.is_empty());
        if items.is_empty() || total <= k {
            return 0;
        }
        // Lightest first: the running totals stay small for longer.
        items.sort_by_key(|it| it.1);
        let (mut cost, mut run) = (rest.len() + 1, usize::from(!rest.is_empty()));
        for it in &items {
            run = (run + it.1).min(k);
            cost += 3 * run + 1;
        }
        if cost > budget {
            continue;
        }
        if !rest.is_empty() {
            let v = m.new_lit(solver);
            for &x in &rest {
                m.add(solver, &[!x, v]);
            }
            items.insert(0, (v, 1));
        }
        // prev[j - 1]: the items so far weigh at least j units.
        let mut prev: Vec<Lit> = Vec::new();
        for (i, &(x, w)) in items.iter().enumerate() {
            // Overflow: x and at least k + 1 - w units before.
            if prev.len() > k - w {
                let clause = [!x, !prev[k - w]];
                m.add_guarded(solver, mi.ci, &clause);
            }
            if i + 1 == items.len() {
                break;
            }
            let top = (prev.len() + w).min(k);
            let mut next: Vec<Lit> = Vec::with_capacity(top);
            for j in 1..=top {
                let r = m.new_lit(solver);
                if j <= prev.len() {
                    m.add(solver, &[!prev[j - 1], r]);
                }
                if j <= w {
                    m.add(solver, &[!x, r]);
                } else if j - w <= prev.len() {
                    m.add(solver, &[!x, !prev[j - w - 1], r]);
                }
                next.push(r);
            }
            prev = next;
        }
        return cost;
    }
    0
}

/// Units for items that overflow alone, pairs for pairs that do.
fn memory_eager(m: &mut Model, solver: &mut Solver, mi: &MemInst, budget: &mut usize) {
    let mut order: Vec<usize> = (0..mi.items.len()).collect();
    order.sort_by(|&a, &b| mi.items[b].2.total_cmp(&mi.items[a].2));
    let lit = |m: &Model, i: usize| m.x(mi.items[i].0, mi.items[i].1);
    for (ai, &a) in order.iter().enumerate() {
        if overflows(mi, &mut [a]) {
            let l = lit(m, a);
            m.add_guarded(solver, mi.ci, &[!l]);
            continue;
        }
        for &b in &order[ai + 1..] {
            if *budget == 0 || !overflows(mi, &mut [a, b]) {
                break;
            }
            *budget -= 1;
            let (la, lb) = (lit(m, a), lit(m, b));
            m.add_guarded(solver, mi.ci, &[!la, !lb]);
        }
    }
}

/// `chip(u) != chip(v) -> longest_path(chip(u), chip(v)) == 1`.
fn triangle(f: &Formula) -> Option<(u32, u32)> {
    let Formula::Implies(a, b) = f else { return None };
    let Formula::Cmp(CmpOp::Ne, Term::Chip(u), Term::Chip(v)) = a.as_ref() else {
        return None;
    };
    let Formula::Cmp(CmpOp::Eq, Term::LongestPath(x, y), Term::Const(one)) = b.as_ref() else {
        return None;
    };
    (**x == Term::Chip(*u) && **y == Term::Chip(*v) && *one == 1.0).then_some((*u, *v))
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
    lazy: &mut Lazy,
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
    lazy.generic.push((ci, ii, deps));
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
    pub fn cuts(&mut self, problem: &Problem, m: &Model, p: &Placement, active: &[bool], stats: &mut SatStats) -> Cuts {
        let mut out = Vec::new();
        self.memory_cuts(m, p, active, &mut out);
        let defs = self.triangle_cuts(problem, m, p, active, stats, &mut out);
        let graph = &problem.graph;
        let package = &problem.package;
        if !self.generic.is_empty() {
            let checker = Checker::new(graph, package, p);
            for (ci, ii, deps) in &self.generic {
                if active[*ci] {
                    let inst = &problem.constraints[*ci].instances[*ii];
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
                for inst in &gc.instances {
                    if !checker.holds(&inst.formula) {
                        let all: Vec<u32> = (0..m.n as u32).collect();
                        stats.fallbacks += 1;
                        out.push((ci, explain(graph, package, m, &inst.formula, &all, p, stats)));
                    }
                }
            }
        }
        (out, defs)
    }

    fn memory_cuts(&self, m: &Model, p: &Placement, active: &[bool], out: &mut Vec<(usize, Vec<Lit>)>) {
        for mi in &self.mem {
            if !active[mi.ci] {
                continue;
            }
            let on: Vec<usize> = (0..mi.items.len())
                .filter(|&i| p.chip(mi.items[i].0) == mi.items[i].1)
                .collect();
            let total: f64 = on.iter().map(|&i| mi.items[i].2).sum();
            if total <= mi.cap {
                continue;
            }
            // A small overflowing set: the heaviest items first.
            let mut by_weight = on.clone();
            by_weight.sort_by(|&a, &b| mi.items[b].2.total_cmp(&mi.items[a].2));
            let mut acc = 0.0;
            let mut take = Vec::new();
            for &i in &by_weight {
                take.push(i);
                acc += mi.items[i].2;
                if acc > mi.cap {
                    break;
                }
            }
            if !overflows(mi, &mut take) {
                take = on;
            }
            let nodes: Vec<u32> = take.iter().map(|&i| mi.items[i].0).collect();
            // The same nodes overflow every chip they do not fit on.
            for other in &self.mem {
                if other.ci != mi.ci {
                    continue;
                }
                let mut pos: Vec<usize> = Vec::with_capacity(nodes.len());
                for &u in &nodes {
                    match other.pos[u as usize] {
                        NONE | MANY => break,
                        i => pos.push(i as usize),
                    }
                }
                if pos.len() == nodes.len() && overflows(other, &mut pos) {
                    let clause = pos.iter().map(|&i| !m.x(other.items[i].0, other.items[i].1)).collect();
                    out.push((other.ci, clause));
                }
            }
        }
        // Cuts found through several overloaded chips can repeat.
        out.sort();
        out.dedup();
    }

    fn triangle_cuts(
        &mut self,
        problem: &Problem,
        m: &Model,
        p: &Placement,
        active: &[bool],
        stats: &mut SatStats,
        out: &mut Vec<(usize, Vec<Lit>)>,
    ) -> Vec<Vec<Lit>> {
        let mut defs = Vec::new();
        if self.tri.iter().all(|t| !active[t.0]) {
            return defs;
        }
        let graph = &problem.graph;
        let mut arcs = ArcSet::new(m.c);
        // The edges realising each arc (a, b).
        let mut realise: std::collections::HashMap<(u32, u32), Vec<(u32, u32)>> = Default::default();
        for e in graph.placed_edges() {
            let (a, b) = (p.chip(e.src), p.chip(e.dst));
            if a != b {
                arcs.add(a, b);
                realise.entry((a, b)).or_default().push((e.src, e.dst));
            }
        }
        let violated: Vec<(usize, usize, u32, u32)> = self
            .tri
            .iter()
            .copied()
            .filter(|&(ci, _, u, v)| {
                let (a, b) = (p.chip(u), p.chip(v));
                active[ci] && a != b && arcs.longest(a, b) != 1
            })
            .collect();
        if violated.is_empty() {
            return defs;
        }
        // With the chip-level arcs, defining the arcs this model realises
        // is enough to exclude it.
        if let Some(fv) = &mut self.flow {
            for (ei, e) in graph.placed_edges().iter().enumerate() {
                let (a, b) = (p.chip(e.src), p.chip(e.dst));
                if a == b
                    || ((a < b || !fv.upward) && a.abs_diff(b) <= fv.window)
                    || !fv.added.insert((ei as u32, a, b))
                {
                    continue;
                }
                defs.push(vec![
                    !m.x(e.src, a),
                    !m.x(e.dst, b),
                    fv.f[a as usize * m.c + b as usize],
                ]);
            }
            if !defs.is_empty() {
                return defs;
            }
        }
        for (ci, ii, u, v) in violated {
            let (a, b) = (p.chip(u), p.chip(v));
            let f = &problem.constraints[ci].instances[ii].formula;
            let clause = walk(&arcs, a, b)
                .and_then(|w| {
                    let mut nodes = vec![u, v];
                    for pair in w.windows(2) {
                        let edges = &realise[&(pair[0], pair[1])];
                        let pick = edges
                            .iter()
                            .find(|(s, t)| nodes.contains(s) && nodes.contains(t))
                            .or_else(|| edges.iter().find(|(s, t)| nodes.contains(s) || nodes.contains(t)))
                            .unwrap_or(&edges[0]);
                        nodes.push(pick.0);
                        nodes.push(pick.1);
                    }
                    nodes.sort_unstable();
                    nodes.dedup();
                    proven(graph, &problem.package, f, &nodes, p)
                        .then(|| nodes.iter().map(|&w| !m.x(w, p.chip(w))).collect())
                })
                .unwrap_or_else(|| {
                    let mut deps: Vec<u32> = graph.placed_edges().iter().flat_map(|e| [e.src, e.dst]).collect();
                    deps.sort_unstable();
                    deps.dedup();
                    explain(graph, &problem.package, m, f, &deps, p, stats)
                });
            out.push((ci, clause));
        }
        defs
    }
}

/// A shortest walk of length >= 2 from a to b over the arcs.
fn walk(arcs: &ArcSet, a: u32, b: u32) -> Option<Vec<u32>> {
    // Breadth-first search over (chip, steps taken so far capped at 2).
    let c = arcs.chips();
    let mut back: Vec<[Option<(u32, u8)>; 3]> = vec![[None; 3]; c];
    let mut seen = vec![[false; 3]; c];
    let mut queue = std::collections::VecDeque::new();
    seen[a as usize][0] = true;
    queue.push_back((a, 0u8));
    while let Some((x, s)) = queue.pop_front() {
        if x == b && s == 2 {
            let mut path = vec![b];
            let mut cur = (b, 2u8);
            while let Some(pr) = back[cur.0 as usize][cur.1 as usize] {
                path.push(pr.0);
                cur = pr;
            }
            path.reverse();
            return Some(path);
        }
        let ns = (s + 1).min(2);
        for &y in arcs.succ(x) {
            if !seen[y as usize][ns as usize] {
                seen[y as usize][ns as usize] = true;
                back[y as usize][ns as usize] = Some((x, s));
                queue.push_back((y, ns));
            }
        }
    }
    None
}

/// Whether fixing these nodes at their chips in `p` falsifies `f` whatever
/// the other nodes do.
fn proven(graph: &Graph, package: &Package, f: &Formula, nodes: &[u32], p: &Placement) -> bool {
    let mut chips = vec![None; p.chips.len()];
    for &w in nodes {
        chips[w as usize] = Some(p.chip(w));
    }
    Partial::new(graph, package, &chips).holds(f) == Some(false)
}

/// A clause excluding the cause of a violated instance: the values of a
/// subset of `deps` that falsifies `f` whatever the rest, shrunk by deletion
/// (in halving chunks, then one by one). Falls back to the whole model.
fn explain(
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
