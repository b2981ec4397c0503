//! The typed syntax tree of an `.mcm` file, with a span on every node.

use mcm_core::quantity::Dim;
use mcm_core::source::{FileId, Span};

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Module {
    pub file: FileId,
    pub items: Vec<Item>,
}

#[derive(Clone, Debug)]
pub enum Item {
    Use(UseDecl),
    Let(LetDecl),
    Topology(TopologyDecl),
    Constraint(ConstraintDecl),
    Partition(PartitionDecl),
    Test(TestDecl),
}

#[derive(Clone, Debug)]
pub struct UseDecl {
    pub target: UseTarget,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum UseTarget {
    /// `use "path/file.mcm"`: every item of the file.
    File { path: String, span: Span },
    /// `use std::placement::{a, b}`, `use std::topologies::ring`, `use std::placement::*`.
    Path { segments: Vec<Ident>, items: UseItems },
}

#[derive(Clone, Debug)]
pub enum UseItems {
    /// The path names a module (all items) or an item in one; resolved later.
    Bare,
    All,
    Some(Vec<Ident>),
}

#[derive(Clone, Debug)]
pub struct LetDecl {
    pub name: Ident,
    /// `let x: bytes = ...`: the declared type, checked against the value.
    pub ty: Option<Ident>,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: Ident,
    pub ty: Ident,
    pub default: Option<Expr>,
}

#[derive(Clone, Debug)]
pub struct TopologyDecl {
    pub name: Ident,
    pub params: Vec<Param>,
    pub body: Vec<TopoStmt>,
    pub doc: Option<String>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum TopoStmt {
    Chips {
        name: Ident,
        count: Option<Expr>,
        attrs: Vec<Attr>,
        span: Span,
    },
    /// `include torus(...)`: another topology's chips, groups and links,
    /// built into this one. `call` is a call of that topology.
    Include {
        call: Expr,
        span: Span,
    },
    /// `set tile[i] { memory = 1 GiB }`: attributes of one chip declared
    /// before, added or replacing the group's.
    Set {
        chip: ChipRef,
        attrs: Vec<Attr>,
        span: Span,
    },
    Link {
        src: ChipRef,
        dst: ChipRef,
        both_ways: bool,
        attrs: Vec<Attr>,
        span: Span,
    },
    For {
        var: Ident,
        from: Expr,
        to: Expr,
        body: Vec<TopoStmt>,
    },
    If {
        cond: Expr,
        then: Vec<TopoStmt>,
        otherwise: Vec<TopoStmt>,
    },
    Let(LetDecl),
}

#[derive(Clone, Debug)]
pub struct ChipRef {
    pub group: Ident,
    pub index: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Attr {
    pub name: Ident,
    pub value: Expr,
}

#[derive(Clone, Debug)]
pub struct ConstraintDecl {
    pub name: Ident,
    pub params: Vec<Param>,
    /// `:: native` and any other annotations after the parameters.
    pub annotations: Vec<Ident>,
    /// The conjuncts of the body.
    pub body: Vec<Expr>,
    pub doc: Option<String>,
    pub span: Span,
}

/// The annotation that marks a standard rule the solver implements natively.
pub const NATIVE: &str = "native";

/// The annotations a declaration may carry.
pub const ANNOTATIONS: &[&str] = &[NATIVE];

impl ConstraintDecl {
    /// The key of the solver's native implementation: the rule's name, when
    /// its declaration says `:: native`.
    pub fn native_key(&self) -> Option<&str> {
        self.annotations
            .iter()
            .any(|a| a.name == NATIVE)
            .then_some(self.name.name.as_str())
    }
}

#[derive(Clone, Debug)]
pub struct PartitionDecl {
    pub graph: Expr,
    pub package: Expr,
    pub alias: Option<Ident>,
    pub requires: Vec<ConstraintUse>,
    pub objective: Option<ObjectiveDecl>,
    pub evaluator: Option<(String, Span)>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct ConstraintUse {
    pub name: Ident,
    pub args: Option<Vec<Arg>>,
    pub span: Span,
}

pub use mcm_core::problem::Sense;

/// `maximize throughput`: the objective line as written (the problem's is
/// `mcm_core::problem::Objective`).
#[derive(Clone, Debug)]
pub struct ObjectiveDecl {
    pub sense: Sense,
    pub metric: Ident,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct TestDecl {
    pub name: String,
    pub name_span: Span,
    pub body: Vec<TestStmt>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum TestStmt {
    Let(LetDecl),
    Place(PlaceStmt),
    Partition(PartitionDecl),
    Require(Vec<ConstraintUse>, Span),
    Expect(Expectation, Span),
}

#[derive(Clone, Debug)]
pub struct PlaceStmt {
    pub graph: Expr,
    pub package: Expr,
    pub entries: Vec<PlaceEntry>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct PlaceEntry {
    pub node: String,
    pub node_span: Span,
    pub chip: Expr,
}

#[derive(Clone, Debug)]
pub enum Expectation {
    Valid,
    Violates(Vec<ConstraintUse>),
    Unsatisfiable,
    Satisfiable,
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Int(i64),
    /// A number with a fraction or an exponent and no unit.
    Real(f64),
    /// A number with a unit, in base units.
    Quantity(f64, Dim),
    Bool(bool),
    Str(String),
    Var(String),
    Field(Box<Expr>, Ident),
    Index(Box<Expr>, Box<Expr>),
    Call(Ident, Vec<Arg>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Quant {
        q: Quantifier,
        binders: Vec<Binder>,
        filter: Option<Box<Expr>>,
        body: Box<Expr>,
    },
    Agg {
        op: AggOp,
        binders: Vec<Binder>,
        filter: Option<Box<Expr>>,
        body: Option<Box<Expr>>,
    },
    Graph(GraphLit),
}

#[derive(Clone, Debug)]
pub struct Arg {
    pub name: Option<Ident>,
    pub value: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Implies,
    Iff,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Implies => "->",
            BinOp::Iff => "<->",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    pub fn is_logic(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or | BinOp::Implies | BinOp::Iff)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantifier {
    Forall,
    Exists,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggOp {
    Sum,
    Count,
    Max,
    Min,
}

#[derive(Clone, Debug)]
pub struct Binder {
    pub pattern: Pattern,
    pub domain: Domain,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum Pattern {
    One(Ident),
    Pair(Ident, Ident),
}

impl Pattern {
    pub fn names(&self) -> Vec<&Ident> {
        match self {
            Pattern::One(a) => vec![a],
            Pattern::Pair(a, b) => vec![a, b],
        }
    }
}

#[derive(Clone, Debug)]
pub enum Domain {
    Range(Box<Expr>, Box<Expr>),
    Named(Ident),
}

#[derive(Clone, Debug)]
pub struct GraphLit {
    pub chains: Vec<Vec<GraphNode>>,
}

#[derive(Clone, Debug)]
pub struct GraphNode {
    pub name: String,
    pub span: Span,
    pub attrs: Vec<Attr>,
}
