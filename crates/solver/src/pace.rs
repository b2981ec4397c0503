//! How fast a pass climbs the chips under a per-chip user rule (an op
//! count, a compute budget): the nodes with inputs (the chain of
//! operations) are spread evenly over the chips left that they may take,
//! each staying on the lowest chip its domain allows until that chip holds
//! its share, then taking the next one.
//!
//! Drawn from their domains (or nearest to a uniformly random proposal), the
//! chain climbs to the highest chip the run bounds allow within its first
//! few nodes: each draw lands halfway up what is left. From there every
//! chip above must be filled to the cap, and where an equality ties each
//! layer norm to its residual add and its weights (groups of four that do
//! not split across chips) almost no pass finds that fill. Spread evenly,
//! each chip keeps room for the weights that follow their consumers, and
//! the rule binds nowhere.

use crate::engine::Solver;
use crate::families::equal::ALONE;

/// The pace of one pass over an order.
pub(crate) struct Pace {
    /// Per position in the order: the nodes with inputs from there on.
    left: Vec<u32>,
    /// Per chip: the nodes with inputs the pass has placed there.
    on: Vec<u32>,
    /// Per position in the order: the highest chip its node may take at
    /// the start of the pass (`NONE` for a node without inputs).
    top: Vec<u32>,
    /// Per chip `h`: the nodes with inputs from `at` on whose highest chip
    /// at the start of the pass is `h`.
    tops: Vec<u32>,
    /// The position `tops` counts from.
    at: usize,
    /// The nodes with inputs, the ones [`Pace::recount`] reads.
    chain: Vec<u32>,
    /// Whether a failure by a per-chip rule turns on
    /// [`Pace::counts_fixed`] (the projections, see [`Pace::failed`]).
    adapts: bool,
    /// Whether a decision that is the first on its chip counts every node
    /// with inputs it fixed, not only itself and its mates.
    counts_fixed: bool,
    /// The per-chip rules' failures last seen.
    seen: u64,
}

/// A position whose node has no inputs: it is not paced.
const NONE: u32 = u32::MAX;

impl Pace {
    pub fn new(solver: &Solver, order: &[u32], adapts: bool) -> Pace {
        let mut left = vec![0u32; order.len() + 1];
        for i in (0..order.len()).rev() {
            left[i] = left[i + 1] + u32::from(has_inputs(solver, order[i]));
        }
        let top: Vec<u32> = order
            .iter()
            .map(|&u| if has_inputs(solver, u) { solver.dom(u).max } else { NONE })
            .collect();
        let mut tops = vec![0u32; solver.num_chips()];
        for &h in top.iter().filter(|&&h| h != NONE) {
            tops[h as usize] += 1;
        }
        let chain = (0..solver.num_nodes() as u32)
            .filter(|&u| has_inputs(solver, u))
            .collect();
        let mut pace = Pace {
            left,
            on: vec![0; solver.num_chips()],
            top,
            tops,
            at: 0,
            chain,
            adapts,
            counts_fixed: false,
            seen: solver.per_chip_failures(),
        };
        pace.recount(solver);
        pace
    }

    /// Whether the rules keep some node with inputs off the last chip in
    /// the domains at hand (at the start of a pass, the root's): the run
    /// bounds of a per-chip rule that binds do (a chain node high up has
    /// no room left for its descendants), one that does not bind leaves
    /// every chip open, and pacing its chain would only leave more nodes
    /// open for longer, which costs the propagators more than it saves.
    pub fn binds(solver: &Solver) -> bool {
        let last = (solver.num_chips() as u32).saturating_sub(1);
        (0..solver.num_nodes() as u32).any(|u| has_inputs(solver, u) && solver.dom(u).max < last)
    }

    /// The chip for `u`, at `pos` in the order, when it has inputs: the
    /// lowest of its domain while that chip holds fewer than its share of
    /// the nodes with inputs left, else the next of its domain.
    pub fn chip(&mut self, solver: &Solver, u: u32, pos: usize) -> Option<u32> {
        if !has_inputs(solver, u) {
            return None;
        }
        let dom = solver.dom(u);
        let on = self.on[dom.min as usize];
        if on < self.even_share(dom.min, pos) || on < self.share(dom.min, pos) {
            return Some(dom.min);
        }
        let next = dom.iter().nth(1).unwrap_or(dom.min);
        Some(next)
    }

    /// Chip `m`'s share at `pos`: the nodes with inputs left spread evenly
    /// over the chips from `m` to the last, or, where more is left to the
    /// chips from `m` to some `h` below the last (the nodes whose highest
    /// chip at the start of the pass is `h` or below), spread over those.
    /// Where the rules keep the chain's tail off the last chips (a layer
    /// norm tied to its weights, which may not go on the last chip, keeps
    /// every node before it off that chip too), the chain spread over
    /// every chip left the shares of the chips it may not take to the last
    /// chips it may, which then had no room for them under the cap.
    fn share(&mut self, m: u32, pos: usize) -> u32 {
        self.count_tops_from(pos);
        let last = (self.tops.len() as u32).saturating_sub(1);
        let mut share = self.even_share(m, pos);
        // At most the nodes left whose highest chip is below the last are
        // left to the chips below it: once their spread over the chips
        // from `m` is within the share, no wider run can raise it.
        let at_last = self.tops.get(last as usize).copied().unwrap_or(0);
        let short = self.left[pos].saturating_sub(at_last);
        let mut below = 0u32;
        let tops = self.tops.get(m as usize..last as usize).unwrap_or(&[]);
        for (chips, &t) in (1u32..).zip(tops) {
            if short <= share * chips {
                break;
            }
            below += t;
            if below > share * chips {
                share = below.div_ceil(chips);
            }
        }
        share
    }

    /// The nodes with inputs left at `pos` spread evenly over the chips
    /// from `m` to the last: at most [`Pace::share`].
    fn even_share(&self, m: u32, pos: usize) -> u32 {
        let chips = (self.on.len() as u32).saturating_sub(m);
        self.left[pos].div_ceil(chips.max(1))
    }

    /// `tops` moved to count from `pos` (forward as the pass goes on, back
    /// where backtracking resumes it earlier).
    fn count_tops_from(&mut self, pos: usize) {
        while self.at < pos {
            if let Some(&h) = self.top.get(self.at).filter(|&&h| h != NONE) {
                self.tops[h as usize] -= 1;
            }
            self.at += 1;
        }
        while self.at > pos {
            self.at -= 1;
            if let Some(&h) = self.top.get(self.at).filter(|&&h| h != NONE) {
                self.tops[h as usize] += 1;
            }
        }
    }

    /// The odds that a node with inputs strays from its pace (is drawn from
    /// its whole domain) in uniform SAMPLE's first pass: about one a pass,
    /// so that every valid partition stays reachable.
    pub fn stray_odds(&self) -> f64 {
        1.0 / self.left[0].max(1) as f64
    }

    /// The chip for `u` when it strays from its pace: any of its domain,
    /// the lowest likeliest, each one above half as likely as the one
    /// below (the highest as likely as the one below it). Drawn uniformly,
    /// a stray late in the chain lifted it to near the last chip, where
    /// the chain and its weights left had no room under the rule, and the
    /// pass backtracked over every node after it.
    pub fn stray(&self, solver: &Solver, u: u32, rng: &mut impl rand::Rng) -> u32 {
        let dom = solver.dom(u);
        let mut chips = dom.iter();
        let mut c = chips.next().unwrap_or(dom.min);
        for next in chips {
            if !rng.random_bool(0.5) {
                break;
            }
            c = next;
        }
        c
    }

    /// `u` was decided and its decision stands: it is counted, and so are
    /// the mates an equality ties to it (an attention matmul and its
    /// inputs), which the decision fixed on the same chip. Counting `u`
    /// alone, a chip whose nodes come in such groups took several times
    /// its share before the pace moved on, and the weights decided last
    /// found no room beside them. Nodes the flow squeezed onto the chip are
    /// not counted: the first chips filling to a cap pins them all at once
    /// where an even spread would narrow them one decision at a time.
    ///
    /// Once [`Pace::counts_fixed`] is on, the first decision on a chip
    /// counts every node with inputs its level fixed, each on its chip:
    /// entering a chip in the middle of a block, a decision fixes the rest
    /// of the block there (the block's input feeds its residual join, and
    /// `triangle_dependency` keeps the join on the block's second chip).
    pub fn placed(&mut self, solver: &Solver, u: u32) {
        let Some(c) = solver.value(u) else {
            return;
        };
        if self.counts_fixed && self.on[c as usize] == 0 {
            for v in solver.changed_by_last_decision() {
                if let Some(d) = solver.value(v).filter(|_| has_inputs(solver, v)) {
                    self.on[d as usize] += 1;
                }
            }
            return;
        }
        let groups = solver.net.groups();
        let mates = match groups.of(u) {
            ALONE => std::slice::from_ref(&u),
            g => groups.members(g),
        };
        let fixed = mates
            .iter()
            .filter(|&&v| has_inputs(solver, v) && solver.is_fixed(v))
            .count();
        self.on[solver.dom(u).min as usize] += fixed as u32;
    }

    /// A decision failed. In a projection (`adapts`), a failure by a rule
    /// that bounds each chip turns on counting what a decision entering a
    /// chip fixes, for the rest of the pass: the pace counting decisions
    /// and their mates alone has then let a chip fill past what the rule
    /// allows with its weights, where a decision entering a chip fixes
    /// many nodes there (each chip a failure, and the weights of the
    /// overfilled chips failed again at the end of the pass). Counting
    /// them from the start costs the problems whose chips hold the nodes
    /// the count misses without a failure: a chain spread more evenly
    /// keeps more nodes open for longer.
    pub fn failed(&mut self, solver: &Solver) {
        if !self.adapts {
            return;
        }
        let now = solver.per_chip_failures();
        if now > self.seen {
            self.counts_fixed = true;
        }
        self.seen = now;
    }

    /// The placed nodes counted again (after backtracking undid some):
    /// after every failure of a pass, so it reads the nodes with inputs
    /// alone, each by its value.
    pub fn recount(&mut self, solver: &Solver) {
        self.on.fill(0);
        for &v in &self.chain {
            if let Some(c) = solver.value(v) {
                self.on[c as usize] += 1;
            }
        }
    }
}

fn has_inputs(solver: &Solver, u: u32) -> bool {
    !solver.net.pred[u as usize].is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Options;

    /// A chain of four on two chips under upward flow: at most two nodes a
    /// chip keeps `b` (three nodes from it on) off the last chip, so the
    /// chain is paced; at most four leaves every chip open, and it is not.
    /// An equality ties `b` and `d` to `c` (edges into an `mm`): deciding
    /// `b` on chip 0 fixes the three there, and the pace counts them all
    /// (counting the decided node alone, chip 0 held three nodes where
    /// the pace saw one).
    #[test]
    fn a_decision_counts_the_mates_an_equality_fixes_with_it() {
        let text = "use std::placement::{acyclic_flow}\n\
                    use std::topologies::ring\n\
                    let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
                    let g = graph {\n  a\n  b\n  c { op = \"mm\" }\n  d { op = \"mm\" }\n  e\n  f\n\
                    a -> b\n  b -> c\n  c -> d\n  d -> e\n  e -> f\n}\n\
                    constraint glued() { forall (u, v) in edges where v.op == \"mm\": chip(u) == chip(v) }\n\
                    partition g onto t { require acyclic_flow, glued }\n";
        let c = mcm_lang::compile_str("pace.mcm", text, std::path::Path::new("."));
        let p = c.problem(None).unwrap();
        let g = &p.graph;
        let id = |name: &str| g.decision_of(g.node_index(name).unwrap()).unwrap();
        let mut s = Solver::new(p, Options::default()).unwrap();
        let order: Vec<u32> = ["b", "a", "c", "d", "e", "f"].iter().map(|n| id(n)).collect();
        let mut pace = Pace::new(&s, &order, false);
        assert!(s.set_domain(id("b"), &[0]) > 0);
        assert!(
            s.is_fixed(id("c")) && s.is_fixed(id("d")),
            "the equality fixes the mates"
        );
        pace.placed(&s, id("b"));
        assert_eq!(pace.on, [3, 0]);
    }

    /// Ten nodes with inputs on a ring of three, every node kept off the
    /// last chip: chip 0 holding three, the seven left from the fourth on
    /// are spread over the two chips they may take, four a chip, and the
    /// fourth stays on chip 0 (spread over all three chips, three a chip,
    /// it took chip 1, and the last chip's share went to chip 1).
    #[test]
    fn the_share_counts_only_the_chips_the_tail_may_take() {
        let text = "use std::placement::{acyclic_flow}\n\
                    use std::topologies::ring\n\
                    let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
                    let g = graph { a -> b -> c -> d -> e -> f -> g -> h -> i -> j -> k }\n\
                    constraint off_the_last() { forall u in nodes: chip(u) != 2 }\n\
                    partition g onto t { require acyclic_flow, off_the_last }\n";
        let c = mcm_lang::compile_str("pace.mcm", text, std::path::Path::new("."));
        let p = c.problem(None).unwrap();
        let g = &p.graph;
        let id = |name: &str| g.decision_of(g.node_index(name).unwrap()).unwrap();
        let mut s = Solver::new(p, Options::default()).unwrap();
        let names = ["b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "a"];
        let order: Vec<u32> = names.iter().map(|n| id(n)).collect();
        let mut pace = Pace::new(&s, &order, false);
        for &u in &order[..3] {
            assert_eq!(pace.chip(&s, u, 0), Some(0));
            assert!(s.set_domain(u, &[0]) > 0);
            pace.placed(&s, u);
        }
        assert_eq!(pace.on, [3, 0, 0]);
        assert_eq!(pace.chip(&s, order[3], 3), Some(0));
    }

    /// The block `a -> b -> j` with its input `x` feeding the join `j` on
    /// a ring of three: `x` on chip 0 and `a` on chip 1 fix `b` and `j` on
    /// chip 1 (`triangle_dependency`: `x -> j` may not skip chip 1). Once
    /// a per-chip failure has turned on `counts_fixed`, deciding `a`, the
    /// first on chip 1, counts the three; before it, `a` alone (counting
    /// the decided node alone, it fails: `[0, 1, 0]` against `[0, 3, 0]`).
    #[test]
    fn a_decision_entering_a_chip_counts_what_it_fixes_once_a_chip_overfilled() {
        let text = "use std::placement::{acyclic_flow, triangle_dependency}\n\
                    use std::topologies::ring\n\
                    let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
                    let g = graph { s -> x  x -> a -> b -> j  x -> j }\n\
                    partition g onto t { require acyclic_flow, triangle_dependency }\n";
        let c = mcm_lang::compile_str("pace.mcm", text, std::path::Path::new("."));
        let p = c.problem(None).unwrap();
        let g = &p.graph;
        let id = |name: &str| g.decision_of(g.node_index(name).unwrap()).unwrap();
        let placed = |counts_fixed: bool| {
            let mut s = Solver::new(p, Options::default()).unwrap();
            let order: Vec<u32> = ["x", "a", "b", "j", "s"].iter().map(|n| id(n)).collect();
            let mut pace = Pace::new(&s, &order, true);
            pace.counts_fixed = counts_fixed;
            assert!(s.set_domain(id("x"), &[0]) > 0);
            assert!(s.set_domain(id("a"), &[1]) > 0);
            assert!(s.is_fixed(id("b")) && s.is_fixed(id("j")), "the join is kept on chip 1");
            pace.placed(&s, id("a"));
            pace.on.clone()
        };
        assert_eq!(placed(false), [0, 1, 0]);
        assert_eq!(placed(true), [0, 3, 0]);
    }

    #[test]
    fn only_a_count_that_binds_paces() {
        let binds = |k: u32| {
            let text = format!(
                "use std::placement::{{acyclic_flow}}\n\
                 use std::topologies::ring\n\
                 let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
                 let g = graph {{ a -> b -> c -> d }}\n\
                 constraint at_most(k: int) {{ forall d in chips: count(u in nodes where chip(u) == d) <= k }}\n\
                 partition g onto t {{ require acyclic_flow, at_most({k}) }}\n"
            );
            let c = mcm_lang::compile_str("pace.mcm", &text, std::path::Path::new("."));
            let p = c.problem(None).unwrap();
            let s = Solver::new(p, Options::default()).unwrap();
            assert!(s.bounds_per_chip());
            Pace::binds(&s)
        };
        assert!(binds(2));
        assert!(!binds(4));
    }
}
