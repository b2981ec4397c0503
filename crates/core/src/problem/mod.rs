//! A compiled problem: the interface between the language front end and the
//! solver. Constraints are grounded: quantifiers over the graph and the
//! package are expanded, and what remains depends only on `chip(u)`.

mod placement;

pub use placement::{
    parse_partition, parse_proposal, partition_json, read_partition, read_proposal, write_partition, PartitionError,
    Placement,
};

use crate::graph::Graph;
use crate::package::Package;
use crate::quantity::Scalar;
use crate::source::Span;
use std::sync::Arc;

/// Whether the objective is to be maximised or minimised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sense {
    Maximize,
    Minimize,
}

#[derive(Clone, Debug)]
pub struct Problem {
    pub name: String,
    pub graph: Arc<Graph>,
    pub package: Arc<Package>,
    pub constraints: Vec<GroundConstraint>,
    pub objective: Objective,
    /// An external evaluator command and the folder it runs in.
    pub evaluator: Option<Evaluator>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    pub sense: Sense,
    pub metric: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Evaluator {
    pub command: String,
    pub dir: std::path::PathBuf,
}

/// One required constraint, grounded over a graph and a package.
#[derive(Clone, Debug)]
pub struct GroundConstraint {
    /// The constraint's name, as declared.
    pub name: String,
    /// Its arguments, in parameter order.
    pub args: Vec<(String, Scalar)>,
    /// Where it is declared (its whole declaration).
    pub decl_span: Span,
    /// Where the problem or test asks for it.
    pub use_span: Span,
    /// One formula per binding of the body's outer `forall`s; all must hold.
    pub instances: Vec<Instance>,
    /// The key of the solver's native implementation (the rule's name) when
    /// its declaration says `:: native`, which only the standard library may:
    /// a user's copy of the same text goes through the generic path. The
    /// formula stays the meaning; the checker judges by it.
    pub native: Option<String>,
}

impl GroundConstraint {
    /// `near(k = 2)`, or `no_skip` without arguments.
    pub fn display_name(&self) -> String {
        if self.args.is_empty() {
            self.name.clone()
        } else {
            let a: Vec<String> = self.args.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            format!("{}({})", self.name, a.join(", "))
        }
    }
}

#[derive(Clone, Debug)]
pub struct Instance {
    /// The outer quantifier variables and what they are bound to.
    pub bindings: Vec<(String, Elem)>,
    pub formula: Formula,
    /// The unit of the comparison the formula asserts, for reports.
    pub unit: Option<crate::quantity::Dim>,
}

/// An element of the graph or the package that a variable was bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// A placed node, by decision index.
    Node(u32),
    /// A placed edge, by index into `Graph::placed_edges`.
    Edge(u32),
    Chip(u32),
    Link(u32),
    Int(i64),
}

/// A number that may depend on the placement.
#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    Const(f64),
    /// `chip(u)` for the placed node with this decision index.
    Chip(u32),
    /// An attribute of the chip a term evaluates to (`chip(u).memory`).
    ChipAttr(Box<Term>, String),
    Add(Box<Term>, Box<Term>),
    Sub(Box<Term>, Box<Term>),
    Mul(Box<Term>, Box<Term>),
    Div(Box<Term>, Box<Term>),
    /// Integer division and remainder, for int operands.
    IntDiv(Box<Term>, Box<Term>),
    Rem(Box<Term>, Box<Term>),
    Neg(Box<Term>),
    /// Sum of the terms whose condition holds, plus nothing else.
    Sum(Vec<(Formula, Term)>),
    /// How many conditions hold.
    Count(Vec<Formula>),
    /// Largest (smallest) term whose condition holds; 0 when none does.
    Max(Vec<(Formula, Term)>),
    Min(Vec<(Formula, Term)>),
    /// Longest path between two chips in the flow graph of the placement.
    LongestPath(Box<Term>, Box<Term>),
    /// Fewest package links between two chips.
    Hops(Box<Term>, Box<Term>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// Numbers, or integers compared exactly.
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

/// A truth value that may depend on the placement.
#[derive(Clone, Debug, PartialEq)]
pub enum Formula {
    Const(bool),
    Cmp(CmpOp, Term, Term),
    Not(Box<Formula>),
    And(Vec<Formula>),
    Or(Vec<Formula>),
    Implies(Box<Formula>, Box<Formula>),
    Iff(Box<Formula>, Box<Formula>),
    /// Some placed edge goes from chip a to chip b, a != b.
    Flows(Term, Term),
    /// The package has a direct link a -> b.
    Link(Term, Term),
}

impl Term {
    pub fn as_const(&self) -> Option<f64> {
        match self {
            Term::Const(v) => Some(*v),
            _ => None,
        }
    }
}

impl Formula {
    pub fn as_const(&self) -> Option<bool> {
        match self {
            Formula::Const(b) => Some(*b),
            _ => None,
        }
    }

    /// Conjunction with constants folded away.
    pub fn and(parts: Vec<Formula>) -> Formula {
        let mut out = Vec::with_capacity(parts.len());
        for p in parts {
            match p {
                Formula::Const(true) => {}
                Formula::Const(false) => return Formula::Const(false),
                Formula::And(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        match out.len() {
            0 => Formula::Const(true),
            1 => out.pop().expect("one element"),
            _ => Formula::And(out),
        }
    }

    /// Disjunction with constants folded away.
    pub fn or(parts: Vec<Formula>) -> Formula {
        let mut out = Vec::with_capacity(parts.len());
        for p in parts {
            match p {
                Formula::Const(false) => {}
                Formula::Const(true) => return Formula::Const(true),
                Formula::Or(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        match out.len() {
            0 => Formula::Const(false),
            1 => out.pop().expect("one element"),
            _ => Formula::Or(out),
        }
    }

    #[allow(clippy::should_implement_trait)]
    pub fn not(f: Formula) -> Formula {
        match f {
            Formula::Const(b) => Formula::Const(!b),
            Formula::Not(inner) => *inner,
            other => Formula::Not(Box::new(other)),
        }
    }

    pub fn implies(a: Formula, b: Formula) -> Formula {
        match (a, b) {
            (Formula::Const(false), _) | (_, Formula::Const(true)) => Formula::Const(true),
            (Formula::Const(true), b) => b,
            (a, Formula::Const(false)) => Formula::not(a),
            (a, b) => Formula::Implies(Box::new(a), Box::new(b)),
        }
    }

    pub fn iff(a: Formula, b: Formula) -> Formula {
        match (a, b) {
            (Formula::Const(x), Formula::Const(y)) => Formula::Const(x == y),
            (Formula::Const(true), f) | (f, Formula::Const(true)) => f,
            (Formula::Const(false), f) | (f, Formula::Const(false)) => Formula::not(f),
            (a, b) => Formula::Iff(Box::new(a), Box::new(b)),
        }
    }
}

impl Formula {
    /// The decision variables the formula mentions (sorted, once each), and
    /// whether it reads the flow graph (`flows`, `longest_path`), which
    /// depends on every placed node.
    pub fn dependencies(&self) -> (Vec<u32>, bool) {
        let mut vars = Vec::new();
        let mut global = false;
        deps_f(self, &mut vars, &mut global);
        vars.sort_unstable();
        vars.dedup();
        (vars, global)
    }
}

fn deps_f(f: &Formula, vars: &mut Vec<u32>, global: &mut bool) {
    match f {
        Formula::Const(_) => {}
        Formula::Cmp(_, a, b) | Formula::Link(a, b) => {
            deps_t(a, vars, global);
            deps_t(b, vars, global);
        }
        Formula::Flows(a, b) => {
            *global = true;
            deps_t(a, vars, global);
            deps_t(b, vars, global);
        }
        Formula::Not(x) => deps_f(x, vars, global),
        Formula::And(xs) | Formula::Or(xs) => xs.iter().for_each(|x| deps_f(x, vars, global)),
        Formula::Implies(a, b) | Formula::Iff(a, b) => {
            deps_f(a, vars, global);
            deps_f(b, vars, global);
        }
    }
}

fn deps_t(t: &Term, vars: &mut Vec<u32>, global: &mut bool) {
    match t {
        Term::Const(_) => {}
        Term::Chip(d) => vars.push(*d),
        Term::ChipAttr(a, _) | Term::Neg(a) => deps_t(a, vars, global),
        Term::Add(a, b)
        | Term::Sub(a, b)
        | Term::Mul(a, b)
        | Term::Div(a, b)
        | Term::IntDiv(a, b)
        | Term::Rem(a, b)
        | Term::Hops(a, b) => {
            deps_t(a, vars, global);
            deps_t(b, vars, global);
        }
        Term::LongestPath(a, b) => {
            *global = true;
            deps_t(a, vars, global);
            deps_t(b, vars, global);
        }
        Term::Sum(es) | Term::Max(es) | Term::Min(es) => {
            for (c, x) in es {
                deps_f(c, vars, global);
                deps_t(x, vars, global);
            }
        }
        Term::Count(cs) => cs.iter().for_each(|c| deps_f(c, vars, global)),
    }
}
