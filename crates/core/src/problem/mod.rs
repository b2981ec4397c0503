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
use std::sync::{Arc, OnceLock};

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
    /// The same problem under the stricter structure of the standard
    /// library's pipeline rules it does not require ([`Problem::stricter`]).
    pub stricter: Stricter,
}

/// How the front end makes a problem's stricter twin: every partition valid
/// under the twin is valid under the problem (the twin only adds rules), and
/// a search may look there first, where pipeline order and contiguous stages
/// make good partitions easy to find and to prove, so that dropping rules
/// never leaves a search worse off than keeping them. Made on first use: the
/// added rules are grounded over the whole graph. A clone keeps the maker and
/// makes its own twin (a clone may be given other rules).
#[derive(Default)]
pub struct Stricter {
    make: Option<MakeStricter>,
    made: OnceLock<Option<Box<Problem>>>,
}

/// Builds the stricter twin of a problem, `None` when it has none.
pub type MakeStricter = Arc<dyn Fn(&Problem) -> Option<Problem> + Send + Sync>;

impl Stricter {
    pub fn new(make: MakeStricter) -> Stricter {
        Stricter {
            make: Some(make),
            made: OnceLock::new(),
        }
    }
}

impl Clone for Stricter {
    fn clone(&self) -> Stricter {
        Stricter {
            make: self.make.clone(),
            made: OnceLock::new(),
        }
    }
}

impl std::fmt::Debug for Stricter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.make.is_some() {
            "Stricter(some)"
        } else {
            "Stricter(none)"
        })
    }
}

impl Problem {
    /// The problem with the standard library's pipeline rules it lacks
    /// added (see [`Stricter`]); `None` when it lacks none of them or the
    /// front end made it without a maker.
    pub fn stricter(&self) -> Option<&Problem> {
        let make = self.stricter.make.as_ref()?;
        self.stricter.made.get_or_init(|| make(self).map(Box::new)).as_deref()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    pub sense: Sense,
    pub metric: Metric,
}

/// What an objective measures. Throughput is one over latency, so both ask
/// for the same partitions; `maximize throughput` and `minimize latency` are
/// the two right ways round. `minimize step_time` asks for the fastest single
/// execution of the graph (`shared/spec/step-time.md`), not the fastest pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    Throughput,
    Latency,
    StepTime,
}

impl Metric {
    pub const ALL: [Metric; 3] = [Metric::Throughput, Metric::Latency, Metric::StepTime];

    /// The name the language uses.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::Latency => "latency",
            Metric::StepTime => "step_time",
        }
    }

    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The sense that looks for the best partition.
    pub fn better(self) -> Sense {
        match self {
            Metric::Throughput => Sense::Maximize,
            Metric::Latency | Metric::StepTime => Sense::Minimize,
        }
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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
    pub instances: Instances,
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

/// The instances of a grounded constraint: listed one by one, or made on
/// demand, one at a time, by a [`MakeInstances`]: the front end's grounding
/// of a standard-library rule, which gives exactly the instances the
/// interpreter lists (a test compares the two) without holding a formula
/// per edge of a million-node graph. Whoever reads them (the checker, the
/// encoders) sees the same instances either way.
#[derive(Clone)]
pub struct Instances(Repr);

#[derive(Clone)]
enum Repr {
    Listed(Vec<Instance>),
    /// Instances `keep[k]` (all of them, in order, when `None`) of the maker's.
    Made {
        maker: Arc<dyn MakeInstances>,
        keep: Option<Arc<[u32]>>,
    },
}

/// Makes the instances of a constraint on demand, by index.
pub trait MakeInstances: Send + Sync {
    /// How many instances there are.
    fn count(&self) -> usize;
    /// Instance `i` (`i < count()`).
    fn make(&self, i: usize) -> Instance;
}

impl Instances {
    pub fn listed(list: Vec<Instance>) -> Instances {
        Instances(Repr::Listed(list))
    }

    pub fn made(maker: Arc<dyn MakeInstances>) -> Instances {
        Instances(Repr::Made { maker, keep: None })
    }

    /// Whether they are made on demand rather than listed.
    pub fn is_made(&self) -> bool {
        matches!(self.0, Repr::Made { .. })
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Listed(l) => l.len(),
            Repr::Made { keep: Some(k), .. } => k.len(),
            Repr::Made { maker, keep: None } => maker.count(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Instance `i`: borrowed when listed, made when not.
    pub fn get(&self, i: usize) -> std::borrow::Cow<'_, Instance> {
        match &self.0 {
            Repr::Listed(l) => std::borrow::Cow::Borrowed(&l[i]),
            Repr::Made { maker, keep } => {
                std::borrow::Cow::Owned(maker.make(keep.as_ref().map_or(i, |k| k[i] as usize)))
            }
        }
    }

    /// Every instance in order; a made one lives until the next is made.
    pub fn iter(&self) -> impl Iterator<Item = std::borrow::Cow<'_, Instance>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Keeps the instances `f` accepts, in order.
    pub fn retain(&mut self, mut f: impl FnMut(&Instance) -> bool) {
        match &mut self.0 {
            Repr::Listed(l) => l.retain(f),
            Repr::Made { maker, keep } => {
                let old = keep.take();
                let all = || (0..maker.count() as u32).collect::<Vec<u32>>();
                let from = old.as_deref().map_or_else(all, <[u32]>::to_vec);
                let kept: Vec<u32> = from.iter().copied().filter(|&i| f(&maker.make(i as usize))).collect();
                *keep = (kept.len() < maker.count()).then(|| kept.into());
            }
        }
    }
}

impl From<Vec<Instance>> for Instances {
    fn from(list: Vec<Instance>) -> Instances {
        Instances::listed(list)
    }
}

impl FromIterator<Instance> for Instances {
    fn from_iter<I: IntoIterator<Item = Instance>>(it: I) -> Instances {
        Instances::listed(it.into_iter().collect())
    }
}

impl std::fmt::Debug for Instances {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Repr::Listed(l) => l.fmt(f),
            Repr::Made { .. } => write!(f, "Instances(made, {})", self.len()),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    /// The outer quantifier variables and what they are bound to (the
    /// names shared by the instances of a rule).
    pub bindings: Box<[(Arc<str>, Elem)]>,
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
    /// `chip(u) op k` for some placed node u of the range: the `or` of
    /// those comparisons, which an `exists` over the nodes grounds to,
    /// held in three words instead of one formula per node.
    AnyNode(CmpOp, f64, std::ops::Range<u32>),
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
        Formula::junction(parts, true)
    }

    /// Disjunction with constants folded away.
    pub fn or(parts: Vec<Formula>) -> Formula {
        Formula::junction(parts, false)
    }

    /// `and` (`conj`) or `or`: nested ones of the same kind flattened, the
    /// neutral constant dropped, the absorbing one the answer. The parts
    /// stay in their vector, at its exact size: an `exists` over a
    /// million nodes is one such vector.
    fn junction(mut parts: Vec<Formula>, conj: bool) -> Formula {
        let same = |f: &Formula| match f {
            Formula::And(_) => conj,
            Formula::Or(_) => !conj,
            _ => false,
        };
        if parts.contains(&Formula::Const(!conj)) {
            return Formula::Const(!conj);
        }
        if parts.iter().any(same) {
            let mut flat = Vec::with_capacity(parts.len());
            for p in parts {
                match p {
                    Formula::And(inner) if conj => flat.extend(inner),
                    Formula::Or(inner) if !conj => flat.extend(inner),
                    other => flat.push(other),
                }
            }
            parts = flat;
        }
        parts.retain(|p| *p != Formula::Const(conj));
        match parts.len() {
            0 => Formula::Const(conj),
            1 => parts.pop().expect("one element"),
            _ => {
                parts.shrink_to_fit();
                if conj {
                    Formula::And(parts)
                } else {
                    Formula::Or(parts)
                }
            }
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

/// A formula or a term, as a walk over a formula meets it.
#[derive(Clone, Copy, Debug)]
pub enum Node<'a> {
    Formula(&'a Formula),
    Term(&'a Term),
}

impl Formula {
    /// Visits this formula and everything below it, depth first, a node
    /// before its children and children left to right. `visit` returns
    /// whether to go below the node it was given. The one walk over the IR:
    /// whoever needs the variables, the paths or the shape of a formula
    /// uses it rather than a match of its own.
    pub fn walk<'a>(&'a self, visit: &mut impl FnMut(Node<'a>) -> bool) {
        if !visit(Node::Formula(self)) {
            return;
        }
        match self {
            Formula::Const(_) | Formula::AnyNode(..) => {}
            Formula::Cmp(_, a, b) | Formula::Flows(a, b) | Formula::Link(a, b) => {
                a.walk(visit);
                b.walk(visit);
            }
            Formula::Not(x) => x.walk(visit),
            Formula::And(xs) | Formula::Or(xs) => xs.iter().for_each(|x| x.walk(visit)),
            Formula::Implies(a, b) | Formula::Iff(a, b) => {
                a.walk(visit);
                b.walk(visit);
            }
        }
    }

    /// The decision variables the formula mentions (sorted, once each), and
    /// whether it reads the flow graph (`flows`, `longest_path`), which
    /// depends on every placed node.
    pub fn dependencies(&self) -> (Vec<u32>, bool) {
        let mut vars = Vec::new();
        let mut global = false;
        self.walk(&mut |n| {
            match n {
                Node::Term(Term::Chip(d)) => vars.push(*d),
                Node::Formula(Formula::AnyNode(_, _, ds)) => vars.extend(ds.clone()),
                Node::Formula(Formula::Flows(..)) | Node::Term(Term::LongestPath(..)) => global = true,
                _ => {}
            }
            true
        });
        vars.sort_unstable();
        vars.dedup();
        (vars, global)
    }
}

impl Term {
    /// Visits this term and everything below it, as [`Formula::walk`].
    pub fn walk<'a>(&'a self, visit: &mut impl FnMut(Node<'a>) -> bool) {
        if !visit(Node::Term(self)) {
            return;
        }
        match self {
            Term::Const(_) | Term::Chip(_) => {}
            Term::ChipAttr(a, _) | Term::Neg(a) => a.walk(visit),
            Term::Add(a, b)
            | Term::Sub(a, b)
            | Term::Mul(a, b)
            | Term::Div(a, b)
            | Term::IntDiv(a, b)
            | Term::Rem(a, b)
            | Term::Hops(a, b)
            | Term::LongestPath(a, b) => {
                a.walk(visit);
                b.walk(visit);
            }
            Term::Sum(es) | Term::Max(es) | Term::Min(es) => {
                for (c, x) in es {
                    c.walk(visit);
                    x.walk(visit);
                }
            }
            Term::Count(cs) => cs.iter().for_each(|c| c.walk(visit)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chip(d: u32) -> Term {
        Term::Chip(d)
    }

    #[test]
    fn the_walk_meets_every_node_and_can_skip_below_one() {
        // sum(chip(3) == 1: 2) <= 4 and longest_path(chip(1), chip(0)) == 1
        let f = Formula::And(vec![
            Formula::Cmp(
                CmpOp::Le,
                Term::Sum(vec![(
                    Formula::Cmp(CmpOp::Eq, chip(3), Term::Const(1.0)),
                    Term::Const(2.0),
                )]),
                Term::Const(4.0),
            ),
            Formula::Cmp(
                CmpOp::Eq,
                Term::LongestPath(Box::new(chip(1)), Box::new(chip(0))),
                Term::Const(1.0),
            ),
        ]);
        assert_eq!(f.dependencies(), (vec![0, 1, 3], true));
        let mut seen = Vec::new();
        f.walk(&mut |n| {
            if let Node::Term(Term::Chip(d)) = n {
                seen.push(*d);
            }
            !matches!(n, Node::Term(Term::Sum(_)))
        });
        assert_eq!(seen, vec![1, 0], "pre-order, left to right, nothing below the sum");
        let local = Formula::Cmp(CmpOp::Ne, chip(2), chip(2));
        assert_eq!(local.dependencies(), (vec![2], false));
    }
}
