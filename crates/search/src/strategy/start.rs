//! Starting points through the solver. A strategy's heuristic proposal (greedy's
//! fill, dp's cuts, a user's `--init` file) is shaped by the stdlib rules only;
//! the problem may have others. So a start is built from what the solver allows
//! at the root (every rule propagated, no decision yet), repaired by FIX under
//! every rule, and then relieved where the dynamic check (peak memory) would
//! fail, before it is judged: a user rule that FIX satisfies by piling nodes onto
//! a neighbouring chip (no weights on chip 0) would otherwise leave every
//! candidate out of memory.

use super::Search;
use crate::cost::CostModel;
use mcm_core::problem::Problem;
use mcm_solver::Infeasible;

/// Per node, the chips its root domain allows: what propagation of every rule
/// leaves before any decision.
#[derive(Clone, Debug)]
pub struct Allowed {
    chips: usize,
    ok: Vec<bool>,
    /// Per chip: some node may not go there.
    restricted: Vec<bool>,
}

impl Allowed {
    /// Every chip for every node (the stdlib-shaped heuristics as they were).
    pub fn all(nodes: usize, chips: usize) -> Allowed {
        Allowed {
            chips,
            ok: vec![true; nodes * chips],
            restricted: vec![false; chips],
        }
    }

    /// The root domains of `solver`'s nodes (its decisions are undone).
    pub fn of(solver: &mut mcm_solver::Solver) -> Allowed {
        solver.reset();
        let (n, c) = (solver.num_nodes(), solver.num_chips());
        let mut a = Allowed::all(n, c);
        for u in 0..n {
            let dom = solver.dom(u as u32);
            for d in 0..c {
                if !dom.contains(d as u32) {
                    a.ok[u * c + d] = false;
                    a.restricted[d] = true;
                }
            }
        }
        a
    }

    pub fn allows(&self, u: u32, chip: usize) -> bool {
        self.ok.get(u as usize * self.chips + chip).copied().unwrap_or(false)
    }

    /// Whether some node may not go on `chip`.
    pub fn restricted(&self, chip: usize) -> bool {
        self.restricted.get(chip).copied().unwrap_or(false)
    }

    /// Whether every node of `chips` is on a chip its root domain allows: a
    /// stdlib-shaped proposal that is needs no domain-aware replacement (any
    /// valid partition is, propagation being sound).
    pub fn admits(&self, chips: &[u32]) -> bool {
        chips
            .iter()
            .enumerate()
            .all(|(u, &c)| self.allows(u as u32, c as usize))
    }

    /// The graph's pipeline order, stably sorted by the first chip each node
    /// may take, so that a contiguous cut can give each chip what it allows:
    /// under `acyclic_flow` propagation keeps that chip non-decreasing along
    /// edges, so the order stays topological; with every chip allowed it is
    /// the pipeline order itself. A weight (a node with parameters and no
    /// inputs) is sorted by its first consumer's first chip instead, within
    /// its own domain: bounds that spread the graph (a count a chip under
    /// `acyclic_flow`) let every weight start at the lowest chips, and sorted
    /// there they all came first, so that dp's cuts gave whole chips to
    /// weights and piled the operations on a few (BERT-large under
    /// `all_user_rules.mcm`: one cut, of 3 ms). Sorting a source no later
    /// than its consumers keeps the order topological.
    pub fn pipeline_order(&self, problem: &Problem) -> Vec<u32> {
        let g = &problem.graph;
        let first = |u: u32| self.next_from(u, 0).unwrap_or(self.chips);
        let mut key: Vec<usize> = (0..g.num_placed() as u32).map(first).collect();
        let mut consumers: Vec<Option<usize>> = vec![None; key.len()];
        let mut has_input = vec![false; key.len()];
        for e in g.placed_edges() {
            has_input[e.dst as usize] = true;
            let k = &mut consumers[e.src as usize];
            *k = Some(k.map_or(key[e.dst as usize], |k| k.min(key[e.dst as usize])));
        }
        for u in 0..key.len() {
            if let (false, true, Some(k)) = (has_input[u], g.placed_node(u as u32).params > 0, consumers[u]) {
                let last = (0..self.chips)
                    .rev()
                    .find(|&d| self.allows(u as u32, d))
                    .unwrap_or(key[u]);
                key[u] = k.clamp(key[u], last.max(key[u]));
            }
        }
        let mut order = g.pipeline_order();
        order.sort_by_key(|&u| key[u as usize]);
        order
    }

    /// The first chip at or after `from` that `u` may take.
    pub fn next_from(&self, u: u32, from: usize) -> Option<usize> {
        (from..self.chips).find(|&d| self.allows(u, d))
    }
}

/// Rounds of memory relief before a start is judged as it is.
const RELIEF_ROUNDS: usize = 6;

/// Nodes moved off an overflowing chip per round: its last quarter along the
/// pipeline, enough to clear most overflows in a round or two without emptying it.
fn relief_share(on_chip: usize) -> usize {
    on_chip.div_ceil(4).max(1)
}

/// A proposal made valid under every rule by FIX (in the search's order), then
/// relieved where the analytical dynamic check fails: the tail (along the
/// pipeline) of each chip out of memory moves to the next chip (the head to the
/// previous one on the last chip) and FIX runs again, a few rounds at most. A
/// proposal that passes both is returned as FIX leaves it, so on problems the
/// heuristics already suit nothing changes. Once the search is out of time
/// no more rounds run: the last partition FIX made is returned.
pub fn settle(search: &mut Search, proposal: &[Option<u32>]) -> Result<Vec<u32>, Infeasible> {
    let mut chips = search.fix(proposal, None)?;
    let relief = search.relief();
    let (Some(model), rank) = (&relief.model, &relief.rank) else {
        return Ok(chips);
    };
    for _ in 0..RELIEF_ROUNDS {
        // Out of time, the partition FIX made is judged as it is.
        if search.solver.stopping() {
            break;
        }
        let Err(overflow) = model.peak_memory(&chips) else {
            break;
        };
        let p = &search.problem.package;
        let c = p.num_chips();
        let over: Vec<usize> = (0..c)
            .filter(|&d| {
                overflow
                    .usage
                    .peak
                    .get(d)
                    .is_some_and(|&m| m as f64 > p.memory_or_unlimited(d as u32))
            })
            .collect();
        if over.is_empty() || c < 2 {
            break;
        }
        let mut next: Vec<Option<u32>> = chips.iter().copied().map(Some).collect();
        for d in over {
            let mut on: Vec<usize> = (0..chips.len()).filter(|&u| chips[u] as usize == d).collect();
            if on.is_empty() {
                continue;
            }
            on.sort_by_key(|&u| rank[u]);
            let k = relief_share(on.len());
            let (moved, to) = if d + 1 < c {
                (&on[on.len() - k..], d + 1)
            } else {
                (&on[..k], d - 1)
            };
            for &u in moved {
                next[u] = Some(to as u32);
            }
        }
        chips = match search.fix(&next, None) {
            Ok(relieved) => relieved,
            Err(_) if search.solver.cut_short() => break,
            Err(inf) => return Err(inf),
        };
    }
    Ok(chips)
}

/// A starting proposal with every node's chip given.
pub fn settle_full(search: &mut Search, proposal: &[u32]) -> Result<Vec<u32>, Infeasible> {
    let p: Vec<Option<u32>> = proposal.iter().copied().map(Some).collect();
    settle(search, &p)
}

/// What memory relief needs of a problem, made once per search (dp settles
/// every cut it judges): the analytical model's dynamic check, when the
/// package has one, and each node's place along the pipeline.
pub struct Relief {
    pub model: Option<CostModel>,
    rank: Vec<u32>,
}

impl Relief {
    pub fn of(problem: &Problem) -> Relief {
        Relief {
            model: CostModel::new(problem).ok(),
            rank: problem.graph.pipeline_rank(),
        }
    }
}

/// How many nodes of `after` differ from `before`.
pub fn moved(before: &[u32], after: &[u32]) -> usize {
    before.iter().zip(after).filter(|(a, b)| a != b).count()
}
