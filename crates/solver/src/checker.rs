//! The independent checker: evaluates grounded constraint formulas on a full
//! placement and reports every violated instance with what breaks it.
//! It shares no code with the propagators but the longest-path routine
//! (`flow.rs`, tested against the definition); it is the one judge of validity.

use crate::flow::ChipFlow;
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{CmpOp, Elem, Formula, GroundConstraint, Instance, Node, Placement, Term};
use std::cell::OnceCell;

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

/// The chip-level flow graph of a placement.
fn flows_of(graph: &Graph, c: usize, chips: &[u32]) -> ChipFlow {
    let mut f = ChipFlow::new(c);
    for e in graph.placed_edges() {
        f.add(chips[e.src as usize], chips[e.dst as usize]);
    }
    f
}

/// Evaluates formulas for one placement.
pub struct Checker<'a> {
    graph: &'a Graph,
    package: &'a Package,
    chips: &'a [u32],
    /// The chip flow graph, built on first use: formulas without `flows` or
    /// `longest_path` never need it.
    flows: OnceCell<ChipFlow>,
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

    fn flows(&self) -> &ChipFlow {
        self.flows
            .get_or_init(|| flows_of(self.graph, self.package.num_chips(), self.chips))
    }

    pub fn holds(&self, f: &Formula) -> bool {
        match f {
            Formula::Const(b) => *b,
            Formula::Cmp(op, a, b) => op.holds(self.value(a), self.value(b)),
            Formula::Not(x) => !self.holds(x),
            Formula::And(xs) => xs.iter().all(|x| self.holds(x)),
            Formula::Or(xs) => xs.iter().any(|x| self.holds(x)),
            Formula::AnyNode(op, k, ds) => ds.clone().any(|d| op.holds(self.chips[d as usize] as f64, *k)),
            Formula::Implies(a, b) => !self.holds(a) || self.holds(b),
            Formula::Iff(a, b) => self.holds(a) == self.holds(b),
            Formula::Flows(a, b) => match (self.chip(a), self.chip(b)) {
                (Some(x), Some(y)) => x != y && self.flows().has(x, y),
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
        let (mut chips, paths) = collect(&inst.formula);
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
            if let (Some(x), Some(y)) = (self.chip(a), self.chip(b)) {
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
            for inst in c.instances.iter() {
                if !self.holds(&inst.formula) {
                    out.push(Violation {
                        constraint: ci,
                        name: c.display_name(),
                        bindings: inst
                            .bindings
                            .iter()
                            .map(|(n, e)| format!("{n} = {}", self.elem(*e)))
                            .collect(),
                        details: self.explain(&inst),
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

/// The nodes an instance mentions and the longest paths it measures, in
/// the order they appear; aggregates mention many nodes, and their total is
/// shown instead.
fn collect(f: &Formula) -> (Vec<u32>, Vec<(&Term, &Term)>) {
    let (mut chips, mut paths) = (Vec::new(), Vec::new());
    f.walk(&mut |n| match n {
        Node::Term(Term::Chip(d)) => {
            chips.push(*d);
            true
        }
        Node::Formula(Formula::AnyNode(_, _, ds)) => {
            chips.extend(ds.clone());
            true
        }
        Node::Term(Term::LongestPath(a, b)) => {
            paths.push((&**a, &**b));
            true
        }
        Node::Term(Term::Sum(_) | Term::Count(_) | Term::Max(_) | Term::Min(_)) => false,
        _ => true,
    });
    (chips, paths)
}

/// Checks a placement against constraints; empty when it is valid.
pub fn check(graph: &Graph, package: &Package, constraints: &[GroundConstraint], p: &Placement) -> Vec<Violation> {
    Checker::new(graph, package, p).violations(constraints)
}
