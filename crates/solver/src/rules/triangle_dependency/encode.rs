//! Chip-level arc variables `f[a][b]` (implied by each edge placed from a
//! to b: eager for every chip pair, upward only when another rule keeps
//! every edge upward, within a budget, lazy past it) and walk variables
//! `r[a][b]`, with `not (f[a][b] and f[a][m] and r[m][b])`: an arc may not
//! coexist with a longer walk between its ends. When the instances do not
//! cover every edge, lazy cuts: the edge plus one edge for each arc of a
//! walk of length >= 2.

use crate::flow::ChipFlow;
use crate::sat::encode::{explain, Enc, Fresh, Judged, Model, RuleEncoding};
use crate::sat::eval::Partial;
use crate::sat::{SatOptions, SatStats};
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{CmpOp, Formula, Placement, Term};
use std::collections::HashMap;
use varisat::Lit;

/// The instances of every `triangle_dependency` constraint, and the
/// chip-level arcs when they are built.
pub(super) struct TriangleEncoding {
    /// (constraint, instance, u, v).
    tri: Vec<(usize, usize, u32, u32)>,
    flow: Option<FlowVars>,
    /// Node-pair literals defined by cuts so far: `chip(x) < chip(y)` at
    /// (x, y, false) and `chip(x) == chip(y)` at (min, max, true).
    pair_lits: HashMap<(u32, u32, bool), Lit>,
    /// `chip(x) != chip(y)` literals, at (min, max).
    differ: HashMap<(u32, u32), Lit>,
}

impl TriangleEncoding {
    pub(super) fn boxed(_: &SatOptions) -> Box<dyn RuleEncoding> {
        Box::new(TriangleEncoding {
            tri: Vec::new(),
            flow: None,
            pair_lits: HashMap::new(),
            differ: HashMap::new(),
        })
    }
}

impl RuleEncoding for TriangleEncoding {
    fn encode(&mut self, _enc: &mut Enc, ci: usize, ii: usize, f: &Formula) -> bool {
        match pair(f) {
            Some((u, v)) => {
                self.tri.push((ci, ii, u, v));
                true
            }
            None => false,
        }
    }

    fn finish(&mut self, enc: &mut Enc) {
        // The chip-level arcs take C³ clauses: past a few hundred chips they
        // would not fit in memory (512 chips: billions of literals), and the
        // rule is refined lazily without them.
        let c = enc.problem.package.num_chips();
        if enc.opts.chip_flows && c.saturating_mul(c).saturating_mul(c) <= MAX_FLOW_CELLS {
            self.flow = flow_structure(enc, &self.tri);
        }
    }

    /// With the chip-level arcs, the definitions of the arcs the model
    /// realises; without them (or when all are defined), per violated
    /// instance the edge and one edge per arc of a walk of length >= 2.
    fn cuts(&mut self, on: &Judged, stats: &mut SatStats, out: &mut Vec<(usize, Vec<Lit>)>, defs: &mut Vec<Vec<Lit>>) {
        let (problem, m, p, active) = (on.problem, on.m, on.p, on.active);
        if self.tri.iter().all(|t| !active[t.0]) {
            return;
        }
        let graph = &problem.graph;
        let mut arcs = ChipFlow::new(m.c);
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
            return;
        }
        // With the chip-level arcs, defining the arcs this model realises
        // is enough to exclude it.
        if let Some(fv) = &mut self.flow {
            let before = defs.len();
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
            if defs.len() > before {
                return;
            }
        }
        for (ci, ii, u, v) in violated {
            let (a, b) = (p.chip(u), p.chip(v));
            let inst = problem.constraints[ci].instances.get(ii);
            let f = &inst.formula;
            let picked = walk(&arcs, a, b).map(|w| {
                let mut nodes = vec![u, v];
                let mut edges_on = Vec::new();
                for pair in w.windows(2) {
                    let edges = &realise[&(pair[0], pair[1])];
                    let pick = *edges
                        .iter()
                        .find(|(s, t)| nodes.contains(s) && nodes.contains(t))
                        .or_else(|| edges.iter().find(|(s, t)| nodes.contains(s) || nodes.contains(t)))
                        .unwrap_or(&edges[0]);
                    nodes.push(pick.0);
                    nodes.push(pick.1);
                    edges_on.push(pick);
                }
                (w, edges_on, nodes)
            });
            // A walk whose chips rise (or fall) all the way is a simple path
            // of two or more arcs whatever the chips are: the cut then holds
            // for every placement with the same order, not just this one.
            let general = picked.as_ref().and_then(|(w, edges_on, _)| {
                let up = w.windows(2).all(|x| x[0] < x[1]);
                let down = w.windows(2).all(|x| x[0] > x[1]);
                let mut sorted = w.clone();
                sorted.sort_unstable();
                sorted.dedup();
                let distinct = sorted.len() == w.len() && w.len() <= 6;
                (up || down || distinct).then(|| self.order_cut(m, on.fresh, defs, u, v, edges_on, up, down))
            });
            let clause = general
                .or_else(|| {
                    picked.and_then(|(_, _, mut nodes)| {
                        nodes.sort_unstable();
                        nodes.dedup();
                        proven(graph, &problem.package, f, &nodes, p)
                            .then(|| nodes.iter().map(|&w| !m.x(w, p.chip(w))).collect())
                    })
                })
                .unwrap_or_else(|| {
                    let mut deps: Vec<u32> = graph.placed_edges().iter().flat_map(|e| [e.src, e.dst]).collect();
                    deps.sort_unstable();
                    deps.dedup();
                    explain(graph, &problem.package, m, f, &deps, p, stats)
                });
            out.push((ci, clause));
        }
    }
}

impl TriangleEncoding {
    /// The cut of a monotone walk u ~ s1 -> t1 ~ s2 -> ... -> tk ~ v (`~`:
    /// same chip, `->`: an edge between chips in the walk's direction): if
    /// the joints share chips and every edge rises (falls), the chips of the
    /// walk are distinct and the arc chip(u) -> chip(v) has a second path.
    #[allow(clippy::too_many_arguments)]
    fn order_cut(
        &mut self,
        m: &Model,
        fresh: &Fresh,
        defs: &mut Vec<Vec<Lit>>,
        u: u32,
        v: u32,
        edges: &[(u32, u32)],
        up: bool,
        down: bool,
    ) -> Vec<Lit> {
        let mut clause = Vec::new();
        let mut at = u;
        // A node on each chip of the walk, in order.
        let mut on_walk = vec![u];
        for &(s, t) in edges {
            if at != s {
                clause.push(!self.pair_lit(m, fresh, defs, at, s, true));
            }
            if up || down {
                let (lo, hi) = if up { (s, t) } else { (t, s) };
                clause.push(!self.pair_lit(m, fresh, defs, lo, hi, false));
            }
            on_walk.push(t);
            at = t;
        }
        if at != v {
            clause.push(!self.pair_lit(m, fresh, defs, at, v, true));
        }
        if !(up || down) {
            // Chips pairwise distinct: the walk is a simple path.
            for i in 0..on_walk.len() {
                for j in i + 1..on_walk.len() {
                    clause.push(!self.differ_lit(m, fresh, defs, on_walk[i], on_walk[j]));
                }
            }
        }
        clause
    }

    /// A literal implied by `chip(x) != chip(y)`: by either order literal.
    fn differ_lit(&mut self, m: &Model, fresh: &Fresh, defs: &mut Vec<Vec<Lit>>, x: u32, y: u32) -> Lit {
        let (x, y) = (x.min(y), x.max(y));
        if let Some(&l) = self.differ.get(&(x, y)) {
            return l;
        }
        let l = fresh.lit();
        for (p, q) in [(x, y), (y, x)] {
            let lt = self.pair_lit(m, fresh, defs, p, q, false);
            defs.push(vec![!lt, l]);
        }
        self.differ.insert((x, y), l);
        l
    }

    /// A literal implied by `chip(x) == chip(y)` (`same`) or by
    /// `chip(x) < chip(y)`, defined on first use (C clauses). Only the
    /// implication is needed: the literal occurs negated in cuts alone.
    fn pair_lit(&mut self, m: &Model, fresh: &Fresh, defs: &mut Vec<Vec<Lit>>, x: u32, y: u32, same: bool) -> Lit {
        let key = if same {
            (x.min(y), x.max(y), true)
        } else {
            (x, y, false)
        };
        if let Some(&l) = self.pair_lits.get(&key) {
            return l;
        }
        let l = fresh.lit();
        let c = m.c as u32;
        for k in 0..c {
            if same {
                defs.push(vec![!m.x(x, k), !m.x(y, k), l]);
            } else if k + 1 < c {
                defs.push(vec![!m.x(x, k), !m.ge(y, k + 1), l]);
            }
        }
        self.pair_lits.insert(key, l);
        l
    }
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

/// The largest C³ the chip-level arcs are built for (40 chips): past that
/// their C³ clauses cost more than they prune, and the lazy cuts over
/// node-pair order literals, whose size does not grow with C, do better
/// (the tutorial's infeasible block on a 64-chip ring: 20 s with them).
const MAX_FLOW_CELLS: usize = 40 * 40 * 40;

/// Builds the chip-level arcs for the triangle constraints whose instances
/// cover every placed edge.
fn flow_structure(enc: &mut Enc, tri: &[(usize, usize, u32, u32)]) -> Option<FlowVars> {
    let upward = enc.upward_flow();
    let (m, solver, problem) = (&mut *enc.m, &mut *enc.solver, enc.problem);
    let arc_budget = enc.opts.arc_budget;
    let edges = problem.graph.placed_edges();
    let mut all: Vec<(u32, u32)> = edges.iter().map(|e| (e.src, e.dst)).collect();
    all.sort_unstable();
    let mut users = Vec::new();
    for ci in 0..problem.constraints.len() {
        let mut mine: Vec<(u32, u32)> = tri.iter().filter(|t| t.0 == ci).map(|t| (t.2, t.3)).collect();
        mine.sort_unstable();
        mine.dedup();
        if !mine.is_empty() && mine == all {
            users.push(ci);
        }
    }
    let c = m.c;
    if users.is_empty() || c < 2 {
        return None;
    }
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
    Some(FlowVars {
        f,
        window,
        upward,
        added: Default::default(),
    })
}

/// `chip(u) != chip(v) -> longest_path(chip(u), chip(v)) == 1`.
fn pair(f: &Formula) -> Option<(u32, u32)> {
    let Formula::Implies(a, b) = f else { return None };
    let Formula::Cmp(CmpOp::Ne, Term::Chip(u), Term::Chip(v)) = a.as_ref() else {
        return None;
    };
    let Formula::Cmp(CmpOp::Eq, Term::LongestPath(x, y), Term::Const(one)) = b.as_ref() else {
        return None;
    };
    (**x == Term::Chip(*u) && **y == Term::Chip(*v) && *one == 1.0).then_some((*u, *v))
}

/// A shortest walk of length >= 2 from a to b over the arcs.
fn walk(arcs: &ChipFlow, a: u32, b: u32) -> Option<Vec<u32>> {
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
