//! What a propagator is and what it may do. A propagator removes chips that
//! cannot be part of a valid placement given the current domains. It acts
//! only through a [`Cx`]: it reads domains and its own trailed cells, and
//! changes a domain in three ways (remove a chip, restrict to a mask, fix a
//! value; bounds are masks). The context is bound to the constraint the
//! propagator serves, so every change and every failure names that
//! constraint, and no propagator can touch the queue, the levels or another
//! constraint's blame.

use crate::domain::Dom;
use crate::store::{range_mask, Fail, Store};
use mcm_core::graph::{Csr, Graph};
use mcm_core::package::Package;
use mcm_core::problem::GroundConstraint;
use std::cell::OnceCell;

/// The graph as propagators see it: adjacency over placed nodes.
pub struct Net<'a> {
    pub graph: &'a Graph,
    pub package: &'a Package,
    pub succ: Csr<u32>,
    pub pred: Csr<u32>,
    /// Whether a native rule keeps every edge's flow upward (set by the
    /// engine): then a node's descendants lie on its chip or above.
    pub upward: bool,
    /// The rules, for reasoning that reads one rule's consequences in
    /// another's propagator (set by the engine; empty: none).
    pub rules: &'a [GroundConstraint],
    /// The nodes the rules force onto one chip, found on first need.
    equal: OnceCell<crate::families::equal::Groups>,
}

impl<'a> Net<'a> {
    pub fn new(graph: &'a Graph, package: &'a Package) -> Net<'a> {
        let n = graph.num_placed();
        let edges = graph.placed_edges();
        let succ = Csr::from_pairs(n, edges.iter().map(|e| (e.src, e.dst)));
        let pred = Csr::from_pairs(n, edges.iter().map(|e| (e.dst, e.src)));
        Net {
            graph,
            package,
            succ,
            pred,
            upward: false,
            rules: &[],
            equal: OnceCell::new(),
        }
    }

    /// The groups of nodes the rules' equalities force onto one chip.
    pub(crate) fn groups(&self) -> &crate::families::equal::Groups {
        self.equal
            .get_or_init(|| crate::families::equal::Groups::find(self.rules, self.graph, self.package))
    }

    /// The placed nodes in the graph's topological order.
    pub fn placed_order(&self) -> Vec<u32> {
        self.graph
            .topological_order()
            .iter()
            .filter_map(|&v| self.graph.decision_of(v))
            .collect()
    }
}

/// A propagator's window on the store, for one call, on behalf of one
/// constraint. Building one costs three words; every method is a thin,
/// inlined call into the store.
pub struct Cx<'a> {
    store: &'a mut Store,
    net: &'a Net<'a>,
    constraint: usize,
}

impl<'a> Cx<'a> {
    #[inline]
    pub fn new(store: &'a mut Store, net: &'a Net<'a>, constraint: usize) -> Cx<'a> {
        Cx { store, net, constraint }
    }

    /// The network, borrowed for as long as the context (not just this call),
    /// so that adjacency can be read while domains change.
    #[inline]
    pub fn net(&self) -> &'a Net<'a> {
        self.net
    }

    /// The constraint this context acts for.
    #[inline]
    pub fn constraint(&self) -> usize {
        self.constraint
    }

    /// This constraint's failure.
    #[inline]
    pub fn fail(&self) -> Fail {
        Fail {
            constraint: self.constraint,
        }
    }

    // ------------------------------------------------------------ reading

    /// Variables (placed nodes).
    #[inline]
    pub fn n(&self) -> usize {
        self.store.n
    }

    #[inline]
    pub fn chips(&self) -> usize {
        self.store.chips
    }

    /// Words in a domain's bitset.
    #[inline]
    pub fn words(&self) -> usize {
        self.store.words_per_domain()
    }

    #[inline]
    pub fn dom(&self, x: u32) -> Dom<'_> {
        self.store.dom(x)
    }

    /// Word `k` of `x`'s domain alone (see [`Store::word`]).
    #[inline]
    pub fn word(&self, x: u32, k: usize) -> u64 {
        self.store.word(x, k)
    }

    /// The words of `x`'s domain (see [`Store::words_of`]).
    #[inline]
    pub fn words_of(&self, x: u32) -> &[u64] {
        self.store.words_of(x)
    }

    /// Whether `x`'s domain holds chip `c`, reading one word.
    #[inline]
    pub fn holds(&self, x: u32, c: u32) -> bool {
        self.word(x, (c / 64) as usize) >> (c % 64) & 1 == 1
    }

    #[inline]
    pub fn is_fixed(&self, x: u32) -> bool {
        self.store.is_fixed(x)
    }

    #[inline]
    pub fn value(&self, x: u32) -> Option<u32> {
        self.store.value(x)
    }

    #[inline]
    pub fn min(&self, x: u32) -> u32 {
        self.store.min(x)
    }

    #[inline]
    pub fn max(&self, x: u32) -> u32 {
        self.store.max(x)
    }

    #[inline]
    pub fn all_fixed(&self) -> bool {
        self.store.all_fixed()
    }

    /// The variables whose changes wait to be propagated: a propagator
    /// that watches every variable has seen the latest change of none of
    /// them (a node fixed there is not yet counted by such a propagator).
    #[inline]
    pub fn queued(&self) -> &[u32] {
        &self.store.queue
    }

    // ------------------------------------------------------------ trailed state

    /// A new trailed integer (undone with the decisions), for state a
    /// propagator keeps between calls.
    #[inline]
    pub fn new_cell(&mut self, v: i64) -> u32 {
        self.store.new_cell(v)
    }

    #[inline]
    pub fn cell(&self, i: u32) -> i64 {
        self.store.cell(i)
    }

    /// Cells `i..i + len` (made in one run of [`Cx::new_cell`] calls).
    #[inline]
    pub fn cells(&self, i: u32, len: usize) -> &[i64] {
        self.store.cells(i, len)
    }

    #[inline(always)]
    pub fn set_cell(&mut self, i: u32, v: i64) {
        self.store.set_cell(i, v)
    }

    // ------------------------------------------------------------ changes

    /// Removes chip `c` from `x`; `Ok(true)` when it was there.
    #[inline]
    pub fn remove(&mut self, x: u32, c: u32) -> Result<bool, Fail> {
        self.store.remove(x, c, self.constraint)
    }

    /// Intersects the domain of `x` with `mask`; `Ok(true)` when it shrank.
    #[inline]
    pub fn restrict(&mut self, x: u32, mask: &[u64]) -> Result<bool, Fail> {
        self.store.restrict(x, mask, self.constraint)
    }

    /// Fixes `x` to chip `c`; fails when `c` is not in its domain.
    #[inline]
    pub fn fix(&mut self, x: u32, c: u32) -> Result<bool, Fail> {
        self.store.fix(x, c, self.constraint)
    }

    /// Restricts `x` to chips `lo..` (a range mask, built on the stack).
    #[inline]
    pub fn set_min(&mut self, x: u32, lo: u32) -> Result<bool, Fail> {
        self.store.set_min(x, lo, self.constraint)
    }

    /// Restricts `x` to chips `..=hi`.
    #[inline]
    pub fn set_max(&mut self, x: u32, hi: u32) -> Result<bool, Fail> {
        self.store.set_max(x, hi, self.constraint)
    }

    /// The words of chips `lo..=hi`, for `restrict`.
    pub fn range(&self, lo: u32, hi: u32) -> Vec<u64> {
        range_mask(self.words(), lo, hi)
    }
}

pub trait Propagator {
    /// The variables whose changes wake this propagator.
    fn watches(&self, n: usize) -> Vec<u32>;
    /// `x`'s domain changed.
    fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail>;
    /// Runs once the queue is empty, for propagators that reason over all
    /// domains at once.
    fn late(&mut self, _cx: &mut Cx) -> Result<(), Fail> {
        Ok(())
    }
    fn has_late(&self) -> bool {
        false
    }
    /// Runs when every variable is fixed: the exact check of the rule.
    fn complete(&mut self, _cx: &Cx) -> Result<(), Fail> {
        Ok(())
    }
    /// Decisions were undone: drop caches derived from the store.
    fn on_backtrack(&mut self) {}
    /// Everything the propagator infers from the current domains, as if it
    /// had never seen them before: its incremental state is rebuilt from
    /// the domains, not trusted. Repeated until nothing changes, it reaches
    /// the same domains (or the same failure) as incremental propagation of
    /// the same decisions; the tests hold each propagator to that.
    fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail>;
}
