//! The independent checker: evaluates grounded constraint formulas on a full
//! placement and reports every violated instance with what breaks it.
//! It shares no code with the propagators; it is the one judge of validity.

use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{CmpOp, Elem, Formula, GroundConstraint, Instance, Placement, Term};
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;

/// One broken instance of a constraint.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// Index into the constraints that were checked.
    pub constraint: usize,
    pub name: String,
    /// `u = n0`, `d = die[2]`, ...: the outer bindings of the instance.
    pub bindings: Vec<String>,
    /// The elements that break it: chips of the nodes involved, paths, sums.
    pub details: Vec<String>,
}

impl Violation {
    /// A one-line description: `triangle_dependency: u = n0, v = n2 (chip(n0) = 0, ...)`.
    pub fn describe(&self) -> String {
        let mut s = self.name.clone();
        if !self.bindings.is_empty() {
            s.push_str(" at ");
            s.push_str(&self.bindings.join(", "));
        }
        if !self.details.is_empty() {
            s.push_str(": ");
            s.push_str(&self.details.join("; "));
        }
        s
    }
}

/// The chip-level flow graph of a placement and its longest paths.
struct Flows {
    c: usize,
    arcs: Vec<bool>,
    succ: Vec<Vec<u32>>,
    /// reach[a * c + b]: b can be reached from a by one or more arcs.
    reach: Vec<bool>,
    /// Longest path to `b`, per `b`, for chips whose paths to `b` avoid cycles.
    memo: RefCell<HashMap<u32, Vec<Option<i64>>>>,
}

impl Flows {
    fn new(graph: &Graph, c: usize, chips: &[u32]) -> Flows {
        let mut arcs = vec![false; c * c];
        let mut succ = vec![Vec::new(); c];
        for e in graph.placed_edges() {
            let (a, b) = (chips[e.src as usize] as usize, chips[e.dst as usize] as usize);
            if a != b && !arcs[a * c + b] {
                arcs[a * c + b] = true;
                succ[a].push(b as u32);
            }
        }
        let mut reach = vec![false; c * c];
        for s in 0..c {
            let mut stack: Vec<u32> = succ[s].clone();
            while let Some(x) = stack.pop() {
                if !reach[s * c + x as usize] {
                    reach[s * c + x as usize] = true;
                    stack.extend(succ[x as usize].iter().copied());
                }
            }
        }
        Flows {
            c,
            arcs,
            succ,
            reach,
            memo: RefCell::new(HashMap::new()),
        }
    }

    fn on_cycle(&self, x: usize) -> bool {
        self.reach[x * self.c + x]
    }

    /// Longest path from a to b in arcs: 0 when a == b, -1 when b is
    /// unreachable, and C (more than any simple path) when a path from a to
    /// b can go round a cycle.
    fn longest(&self, a: u32, b: u32) -> i64 {
        let (a, b) = (a as usize, b as usize);
        let c = self.c;
        if a == b {
            return 0;
        }
        if !self.reach[a * c + b] {
            return -1;
        }
        let cyclic =
            (0..c).any(|x| self.on_cycle(x) && (x == a || self.reach[a * c + x]) && (x == b || self.reach[x * c + b]));
        if cyclic {
            return c as i64;
        }
        let mut memo = self.memo.borrow_mut();
        let dist = memo.entry(b as u32).or_insert_with(|| vec![None; c]);
        Self::dist(&self.succ, &self.reach, c, a, b, dist)
    }

    fn dist(succ: &[Vec<u32>], reach: &[bool], c: usize, x: usize, b: usize, memo: &mut [Option<i64>]) -> i64 {
        if x == b {
            return 0;
        }
        if let Some(d) = memo[x] {
            return d;
        }
        let mut best = -1;
        for &y in &succ[x] {
            let y = y as usize;
            if y == b || reach[y * c + b] {
                best = best.max(1 + Self::dist(succ, reach, c, y, b, memo));
            }
        }
        memo[x] = Some(best);
        best
    }

    /// One longest path from a to b, as chip ids (acyclic case).
    fn path(&self, a: u32, b: u32) -> Vec<u32> {
        let mut out = vec![a];
        let mut x = a;
        let total = self.longest(a, b);
        if total < 0 || total >= self.c as i64 {
            return out;
        }
        while x != b {
            let here = self.longest(x, b);
            let next = self.succ[x as usize]
                .iter()
                .copied()
                .find(|&y| (y == b && here == 1) || (y != b && self.longest(y, b) == here - 1));
            match next {
                Some(y) => {
                    out.push(y);
                    x = y;
                }
                None => break,
            }
        }
        out
    }
}

/// Evaluates formulas for one placement.
pub struct Checker<'a> {
    graph: &'a Graph,
    package: &'a Package,
    chips: &'a [u32],
    /// The chip flow graph, built on first use: formulas without `flows` or
    /// `longest_path` never need it.
    flows: OnceCell<Flows>,
}

impl<'a> Checker<'a> {
    pub fn new(graph: &'a Graph, package: &'a Package, placement: &'a Placement) -> Checker<'a> {
        Checker::over(graph, package, &placement.chips)
    }

    /// A checker over a chip for each placed node.
    pub fn over(graph: &'a Graph, package: &'a Package, chips: &'a [u32]) -> Checker<'a> {
        Checker {
            graph,
            package,
            chips,
            flows: OnceCell::new(),
        }
    }

    fn flows(&self) -> &Flows {
        self.flows
            .get_or_init(|| Flows::new(self.graph, self.package.num_chips(), self.chips))
    }

    pub fn holds(&self, f: &Formula) -> bool {
        match f {
            Formula::Const(b) => *b,
            Formula::Cmp(op, a, b) => op.holds(self.value(a), self.value(b)),
            Formula::Not(x) => !self.holds(x),
            Formula::And(xs) => xs.iter().all(|x| self.holds(x)),
            Formula::Or(xs) => xs.iter().any(|x| self.holds(x)),
            Formula::Implies(a, b) => !self.holds(a) || self.holds(b),
            Formula::Iff(a, b) => self.holds(a) == self.holds(b),
            Formula::Flows(a, b) => match (self.chip(a), self.chip(b)) {
                (Some(x), Some(y)) => x != y && self.flows().arcs[x as usize * self.flows().c + y as usize],
                _ => false,
            },
            Formula::Link(a, b) => match (self.chip(a), self.chip(b)) {
                (Some(x), Some(y)) => self.package.link(x, y).is_some(),
                _ => false,
            },
        }
    }

    /// A term's value as a chip id, if it is one.
    fn chip(&self, t: &Term) -> Option<u32> {
        let v = self.value(t);
        (v >= 0.0 && v.fract() == 0.0 && (v as usize) < self.package.num_chips()).then_some(v as u32)
    }

    pub fn value(&self, t: &Term) -> f64 {
        match t {
            Term::Const(v) => *v,
            Term::Chip(d) => self.chips[*d as usize] as f64,
            Term::ChipAttr(c, name) => self
                .chip(c)
                .and_then(|id| self.package.chip_attr(id, name))
                .and_then(|s| s.as_f64())
                .unwrap_or(f64::NAN),
            Term::Add(a, b) => self.value(a) + self.value(b),
            Term::Sub(a, b) => self.value(a) - self.value(b),
            Term::Mul(a, b) => self.value(a) * self.value(b),
            Term::Div(a, b) => self.value(a) / self.value(b),
            Term::IntDiv(a, b) => (self.value(a) / self.value(b)).floor(),
            Term::Rem(a, b) => {
                let (x, y) = (self.value(a), self.value(b));
                x - y * (x / y).floor()
            }
            Term::Neg(a) => -self.value(a),
            Term::Sum(es) => es
                .iter()
                .filter(|(c, _)| self.holds(c))
                .map(|(_, t)| self.value(t))
                .sum(),
            Term::Count(cs) => cs.iter().filter(|c| self.holds(c)).count() as f64,
            Term::Max(es) => es
                .iter()
                .filter(|(c, _)| self.holds(c))
                .map(|(_, t)| self.value(t))
                .reduce(f64::max)
                .unwrap_or(0.0),
            Term::Min(es) => es
                .iter()
                .filter(|(c, _)| self.holds(c))
                .map(|(_, t)| self.value(t))
                .reduce(f64::min)
                .unwrap_or(0.0),
            Term::LongestPath(a, b) => match (self.chip(a), self.chip(b)) {
                (Some(x), Some(y)) => self.flows().longest(x, y) as f64,
                _ => f64::NAN,
            },
            Term::Hops(a, b) => match (self.chip(a), self.chip(b)) {
                (Some(x), Some(y)) => self
                    .package
                    .hops(x, y)
                    .map_or(self.package.num_chips() as f64, |h| h as f64),
                _ => f64::NAN,
            },
        }
    }

    fn elem(&self, e: Elem) -> String {
        match e {
            Elem::Node(d) => self.graph.placed_node(d).id.clone(),
            Elem::Edge(i) => {
                let e = self.graph.placed_edges()[i as usize];
                format!(
                    "{} -> {}",
                    self.graph.placed_node(e.src).id,
                    self.graph.placed_node(e.dst).id
                )
            }
            Elem::Chip(c) => format!("chip {c} ({})", self.package.chips[c as usize].name),
            Elem::Link(l) => {
                let l = &self.package.links[l as usize];
                format!(
                    "link {} -> {}",
                    self.package.chips[l.src as usize].name, self.package.chips[l.dst as usize].name
                )
            }
            Elem::Int(i) => i.to_string(),
        }
    }

    /// What makes a violated instance false: the chips of the nodes it
    /// mentions, the longest paths it measures, the sides of a comparison.
    fn explain(&self, inst: &Instance) -> Vec<String> {
        let mut chips = Vec::new();
        let mut paths = Vec::new();
        collect(&inst.formula, &mut chips, &mut paths);
        let mut out = Vec::new();
        chips.sort_unstable();
        chips.dedup();
        let shown: Vec<String> = chips
            .iter()
            .take(6)
            .map(|d| format!("chip({}) = {}", self.graph.placed_node(*d).id, self.chips[*d as usize]))
            .collect();
        if !shown.is_empty() {
            let more = if chips.len() > 6 {
                format!(" and {} more", chips.len() - 6)
            } else {
                String::new()
            };
            out.push(format!("{}{more}", shown.join(", ")));
        }
        for (a, b) in paths {
            if let (Some(x), Some(y)) = (self.chip(&a), self.chip(&b)) {
                let len = self.flows().longest(x, y);
                if len >= self.package.num_chips() as i64 {
                    out.push(format!("the flows from chip {x} to chip {y} go round a cycle"));
                } else if len > 1 {
                    let p: Vec<String> = self.flows().path(x, y).iter().map(u32::to_string).collect();
                    out.push(format!("longest path {} has length {len}", p.join(" -> ")));
                }
            }
        }
        if let Some((op, a, b)) = root_cmp(&inst.formula) {
            if !matches!(a, Term::Chip(_) | Term::Const(_)) || !matches!(b, Term::Chip(_) | Term::Const(_)) {
                let sym = match op {
                    CmpOp::Eq => "==",
                    CmpOp::Ne => "!=",
                    CmpOp::Lt => "<",
                    CmpOp::Le => "<=",
                    CmpOp::Gt => ">",
                    CmpOp::Ge => ">=",
                };
                let show = |v: f64| match inst.unit {
                    Some(d) if !d.is_none() => mcm_core::quantity::format_quantity(v, d),
                    _ => fmt_num(v),
                };
                out.push(format!(
                    "{} {sym} {} is false",
                    show(self.value(a)),
                    show(self.value(b))
                ));
            }
        }
        out
    }

    /// Every violated instance of every constraint.
    pub fn violations(&self, constraints: &[GroundConstraint]) -> Vec<Violation> {
        let mut out = Vec::new();
        for (ci, c) in constraints.iter().enumerate() {
            for inst in &c.instances {
                if !self.holds(&inst.formula) {
                    out.push(Violation {
                        constraint: ci,
                        name: c.display_name(),
                        bindings: inst
                            .bindings
                            .iter()
                            .map(|(n, e)| format!("{n} = {}", self.elem(*e)))
                            .collect(),
                        details: self.explain(inst),
                    });
                }
            }
        }
        out
    }

    /// Whether every instance holds, stopping at the first that does not.
    pub fn all_hold(&self, constraints: &[GroundConstraint]) -> bool {
        constraints
            .iter()
            .all(|c| c.instances.iter().all(|i| self.holds(&i.formula)))
    }
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The comparison an instance finally asserts, looking through implications.
fn root_cmp(f: &Formula) -> Option<(CmpOp, &Term, &Term)> {
    match f {
        Formula::Cmp(op, a, b) => Some((*op, a, b)),
        Formula::Implies(_, b) => root_cmp(b),
        _ => None,
    }
}

fn collect(f: &Formula, chips: &mut Vec<u32>, paths: &mut Vec<(Term, Term)>) {
    match f {
        Formula::Const(_) => {}
        Formula::Cmp(_, a, b) | Formula::Flows(a, b) | Formula::Link(a, b) => {
            collect_t(a, chips, paths);
            collect_t(b, chips, paths);
        }
        Formula::Not(x) => collect(x, chips, paths),
        Formula::And(xs) | Formula::Or(xs) => xs.iter().for_each(|x| collect(x, chips, paths)),
        Formula::Implies(a, b) | Formula::Iff(a, b) => {
            collect(a, chips, paths);
            collect(b, chips, paths);
        }
    }
}

fn collect_t(t: &Term, chips: &mut Vec<u32>, paths: &mut Vec<(Term, Term)>) {
    match t {
        Term::Const(_) => {}
        Term::Chip(d) => chips.push(*d),
        Term::ChipAttr(a, _) | Term::Neg(a) => collect_t(a, chips, paths),
        Term::Add(a, b)
        | Term::Sub(a, b)
        | Term::Mul(a, b)
        | Term::Div(a, b)
        | Term::IntDiv(a, b)
        | Term::Rem(a, b)
        | Term::Hops(a, b) => {
            collect_t(a, chips, paths);
            collect_t(b, chips, paths);
        }
        Term::LongestPath(a, b) => {
            paths.push(((**a).clone(), (**b).clone()));
            collect_t(a, chips, paths);
            collect_t(b, chips, paths);
        }
        // Aggregates mention many nodes; their total is shown instead.
        Term::Sum(_) | Term::Count(_) | Term::Max(_) | Term::Min(_) => {}
    }
}

/// Checks a placement against constraints; empty when it is valid.
pub fn check(graph: &Graph, package: &Package, constraints: &[GroundConstraint], p: &Placement) -> Vec<Violation> {
    Checker::new(graph, package, p).violations(constraints)
}
