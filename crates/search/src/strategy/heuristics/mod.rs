//! The placement heuristics of the device-placement literature, as
//! strategies: `hash` and `critical-path` (Mayer et al. 2017), `m-topo`,
//! `m-etf` and `m-sct` (Baechi, SoCC 2020), `metis` (multilevel k-way
//! partitioning) and `parmesan` (Liu's thesis, chapter 5).
//!
//! Each proposes one placement from the graph, the package and the op times
//! ([`OpTimes`], so that measured times count where a graph has them), with
//! its own estimate of cost as its paper has it; the proposal is then made
//! valid by the solver (FIX, then memory relief) like every other strategy's
//! start, and judged under the problem's objective, whatever it is.

mod critical_path;
mod estimates;
mod hash;
mod list;
mod m_sct;
mod m_topo;
mod metis;
mod parmesan;

pub use estimates::Estimates;
pub use m_sct::favourite_children;

use super::{settle_full, Allowed, Search, Strategy};
use mcm_core::problem::Problem;
use mcm_solver::{Infeasible, Order};

/// One heuristic of the literature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Hash,
    CriticalPath,
    MTopo,
    MEtf,
    MSct,
    Metis,
    Parmesan,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Hash,
        Kind::CriticalPath,
        Kind::MTopo,
        Kind::MEtf,
        Kind::MSct,
        Kind::Metis,
        Kind::Parmesan,
    ];

    /// The strategy's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Hash => "hash",
            Kind::CriticalPath => "critical-path",
            Kind::MTopo => "m-topo",
            Kind::MEtf => "m-etf",
            Kind::MSct => "m-sct",
            Kind::Metis => "metis",
            Kind::Parmesan => "parmesan",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// The heuristic's placement of every placed node, before the solver makes
/// it valid: chips its root domain allows where the heuristic has a choice.
/// The same problem and seed give the same proposal.
pub fn propose(kind: Kind, problem: &Problem, allowed: &Allowed, seed: u64) -> Vec<u32> {
    if problem.graph.num_placed() == 0 {
        return Vec::new();
    }
    let est = Estimates::within(problem, allowed);
    match kind {
        Kind::Hash => hash::proposal(problem, &est, seed),
        Kind::CriticalPath => critical_path::proposal(&est, allowed),
        Kind::MTopo => m_topo::proposal(&est, allowed),
        Kind::MEtf => list::etf(&est, allowed, |_, _| None),
        Kind::MSct => m_sct::proposal(&est, allowed),
        Kind::Metis => metis::proposal(problem, &est, allowed, seed),
        Kind::Parmesan => parmesan::proposal(&est, allowed),
    }
}

/// A heuristic as a strategy: one sample, its proposal made valid.
pub struct Heuristic(pub Kind);

impl Strategy for Heuristic {
    fn name(&self) -> &str {
        self.0.name()
    }

    /// The given start (settled), if any, is the first sample; then the
    /// heuristic's proposal, made valid by FIX in topological order and
    /// relieved where it runs out of memory.
    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        search.order = Order::Topological;
        if let Some(start) = search.start()? {
            search.submit_one(start);
        }
        if search.done() {
            return Ok(());
        }
        let allowed = search.allowed();
        let proposal = propose(self.0, search.problem, &allowed, search.seed());
        let chips = settle_full(search, &proposal)?;
        search.submit_one(chips);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
