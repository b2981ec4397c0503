//! Native grounding of the standard library's placement rules. Their text
//! stays their meaning; for the four rules of `std::placement` whose
//! declarations say `:: native`, the instances the interpreter would list
//! (one per edge, or one per chip over every node) are made here directly
//! from the graph and the package, formula for formula (the tests ground
//! each rule both ways, on random graphs and packages, and compare). The
//! per-edge rules are not listed at all: their instances are made on demand
//! ([`Instances::made`]), so a graph of a million edges holds no formula for
//! them, and grounding skips millions of interpreted bindings.
//!
//! Anything unexpected (another body, a chip without a numeric `memory`,
//! more bindings than the interpreter allows) declines, and the
//! interpreter grounds the rule as any other.

use super::MAX_BINDINGS;
use crate::ast::*;
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{CmpOp, Elem, Formula, Instance, Instances, MakeInstances, Term};
use mcm_core::quantity::Dim;
use std::cmp::Ordering;
use std::sync::Arc;

/// What a native grounding needs of the rule's text: its one outer
/// `forall` (no filter), the names it binds and its body.
pub(super) struct Outer<'a> {
    pub names: Vec<Arc<str>>,
    pub domain: &'a str,
    pub pair: bool,
    pub body: &'a Expr,
}

/// The outer `forall` of a body of one expression, when it has one binder
/// over a named domain and no filter.
pub(super) fn outer(body: &[Expr]) -> Option<Outer<'_>> {
    let [e] = body else { return None };
    let ExprKind::Quant {
        q: Quantifier::Forall,
        binders,
        filter: None,
        body,
    } = &e.kind
    else {
        return None;
    };
    let [b] = binders.as_slice() else { return None };
    let Domain::Named(d) = &b.domain else { return None };
    Some(Outer {
        names: b.pattern.names().iter().map(|n| Arc::from(n.name.as_str())).collect(),
        domain: d.name.as_str(),
        pair: matches!(b.pattern, Pattern::Pair(..)),
        body,
    })
}

/// The instances of native rule `key` over a graph and a package, `None`
/// when this module does not ground it (the interpreter then does).
pub(super) fn ground(
    key: &str,
    outer: &Outer,
    unit: Option<Dim>,
    graph: &Arc<Graph>,
    package: &Arc<Package>,
) -> Option<Instances> {
    let edges = graph.placed_edges().len();
    let (nodes, chips) = (graph.num_placed(), package.num_chips());
    if nodes > MAX_BINDINGS || edges > MAX_BINDINGS || chips > MAX_BINDINGS {
        return None;
    }
    let per_edge = |rule: EdgeRule| {
        (outer.domain == "edges" && outer.pair && outer.names.len() == 2).then(|| {
            Instances::made(Arc::new(PerEdge {
                rule,
                graph: graph.clone(),
                names: [outer.names[0].clone(), outer.names[1].clone()],
                unit,
            }))
        })
    };
    let per_chip = outer.domain == "chips" && !outer.pair && outer.names.len() == 1;
    match key {
        "acyclic_flow" => per_edge(EdgeRule::Upward),
        "triangle_dependency" => per_edge(EdgeRule::Triangle),
        "no_skip" if per_chip => Some(no_skip(outer.names[0].clone(), unit, nodes as u32, chips as u32)),
        "memory_capacity" if per_chip => memory_capacity(outer.names[0].clone(), unit, graph, package),
        _ => None,
    }
}

#[derive(Clone, Copy)]
enum EdgeRule {
    /// `chip(u) <= chip(v)`
    Upward,
    /// `chip(u) != chip(v) -> longest_path(chip(u), chip(v)) == 1`
    Triangle,
}

/// One instance per placed edge, made when asked for.
struct PerEdge {
    rule: EdgeRule,
    graph: Arc<Graph>,
    names: [Arc<str>; 2],
    unit: Option<Dim>,
}

impl MakeInstances for PerEdge {
    fn count(&self) -> usize {
        self.graph.placed_edges().len()
    }

    fn make(&self, i: usize) -> Instance {
        let e = self.graph.placed_edges()[i];
        let (u, v) = (Term::Chip(e.src), Term::Chip(e.dst));
        let formula = match self.rule {
            EdgeRule::Upward => Formula::Cmp(CmpOp::Le, u, v),
            EdgeRule::Triangle => Formula::Implies(
                Box::new(Formula::Cmp(CmpOp::Ne, u.clone(), v.clone())),
                Box::new(Formula::Cmp(
                    CmpOp::Eq,
                    Term::LongestPath(Box::new(u), Box::new(v)),
                    Term::Const(1.0),
                )),
            ),
        };
        Instance {
            bindings: Box::new([
                (self.names[0].clone(), Elem::Node(e.src)),
                (self.names[1].clone(), Elem::Node(e.dst)),
            ]),
            formula,
            unit: self.unit,
        }
    }
}

/// `(exists u in nodes: chip(u) >= d) -> (exists v in nodes: chip(v) == d)`
/// for each chip d: two node ranges each, listed.
fn no_skip(name: Arc<str>, unit: Option<Dim>, nodes: u32, chips: u32) -> Instances {
    let any = |op, d: u32| match nodes {
        0 => Formula::Const(false),
        1 => Formula::Cmp(op, Term::Chip(0), Term::Const(d as f64)),
        n => Formula::AnyNode(op, d as f64, 0..n),
    };
    (0..chips)
        .filter_map(|d| {
            let formula = Formula::implies(any(CmpOp::Ge, d), any(CmpOp::Eq, d));
            (formula != Formula::Const(true)).then(|| Instance {
                bindings: Box::new([(name.clone(), Elem::Chip(d))]),
                formula,
                unit,
            })
        })
        .collect()
}

/// `sum(u in nodes where chip(u) == d) u.params <= d.memory` for each chip
/// d: made when asked for (each holds a term per weighted node), listed
/// when no node has weights (each is then constant).
fn memory_capacity(name: Arc<str>, unit: Option<Dim>, graph: &Arc<Graph>, package: &Arc<Package>) -> Option<Instances> {
    let mut memory = Vec::with_capacity(package.num_chips());
    for c in &package.chips {
        // The interpreter's `d.memory`: a missing or non-numeric one is its
        // error to report.
        memory.push(super::Value::from_scalar(c.attrs.get("memory")?).num()?);
    }
    let weighted = (0..graph.num_placed() as u32).any(|d| graph.placed_node(d).params != 0);
    let sums = Sums {
        graph: graph.clone(),
        memory,
        name,
        unit,
    };
    Some(if weighted {
        Instances::made(Arc::new(sums))
    } else {
        // `0 <= memory`, decided: an instance only where it is false.
        (0..sums.memory.len())
            .filter(|&d| {
                !matches!(
                    sums.memory[d].partial_cmp(&0.0),
                    Some(Ordering::Greater | Ordering::Equal)
                )
            })
            .map(|d| Instance {
                bindings: Box::new([(sums.name.clone(), Elem::Chip(d as u32))]),
                formula: Formula::Const(false),
                unit,
            })
            .collect()
    })
}

/// memory_capacity's instances over a graph with weights: one per chip.
struct Sums {
    graph: Arc<Graph>,
    memory: Vec<f64>,
    name: Arc<str>,
    unit: Option<Dim>,
}

impl MakeInstances for Sums {
    fn count(&self) -> usize {
        self.memory.len()
    }

    fn make(&self, d: usize) -> Instance {
        let g = &self.graph;
        let k = Term::Const(d as f64);
        let entries: Vec<(Formula, Term)> = (0..g.num_placed() as u32)
            .filter_map(|u| {
                let w = g.placed_node(u).params;
                (w != 0).then(|| (Formula::Cmp(CmpOp::Eq, Term::Chip(u), k.clone()), Term::Const(w as f64)))
            })
            .collect();
        Instance {
            bindings: Box::new([(self.name.clone(), Elem::Chip(d as u32))]),
            formula: Formula::Cmp(CmpOp::Le, Term::Sum(entries), Term::Const(self.memory[d])),
            unit: self.unit,
        }
    }
}
