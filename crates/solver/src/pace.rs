//! How fast a pass climbs the chips under a per-chip user rule (an op
//! count, a compute budget): the nodes with inputs (the chain of
//! operations) are spread evenly over the chips left (those the rules let
//! the rest of the chain take), each staying on the lowest chip its domain
//! allows until that chip holds its share, then taking the next one.
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

/// The pace of one pass over an order.
pub(crate) struct Pace {
    /// The nodes with inputs in the order.
    chain: u32,
    /// Per chip: the nodes with inputs fixed there.
    on: Vec<u32>,
    /// Per chip: the open nodes with inputs whose highest chip at the start
    /// of the pass it was.
    by_max: Vec<u32>,
    /// Per node with inputs: its highest chip at the start of the pass.
    max: Vec<u32>,
    /// Per node: whether it is counted in `on`.
    counted: Vec<bool>,
    /// The nodes fixed when `on` was last brought up to date.
    fixed: usize,
}

impl Pace {
    pub fn new(solver: &Solver, order: &[u32]) -> Pace {
        let chain = order.iter().filter(|&&u| has_inputs(solver, u)).count() as u32;
        let max = (0..solver.num_nodes() as u32).map(|u| solver.dom(u).max).collect();
        let mut pace = Pace {
            chain,
            on: vec![0; solver.num_chips()],
            by_max: vec![0; solver.num_chips()],
            max,
            counted: vec![false; solver.num_nodes()],
            fixed: 0,
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

    /// The chip for `u` when it has inputs: the lowest of its domain, `m`,
    /// while that chip holds fewer than its share, else the next of its
    /// domain. The share is what chips `m..=h` must hold each, evenly, of
    /// the nodes with inputs fixed there and the open ones that could not
    /// go above `h` at the start of the pass, at the `h` that asks most:
    /// the last chip (every node left spread over every chip from `m` on)
    /// unless the rules keep the tail off the last chips. Spread over every
    /// chip regardless, the chain reached the last chips it may take with
    /// more left than they hold (a unary rule keeping `gelu` off the last
    /// chip leaves the chips below it the whole tail).
    pub fn chip(&self, solver: &Solver, u: u32) -> Option<u32> {
        if !has_inputs(solver, u) {
            return None;
        }
        let dom = solver.dom(u);
        let m = dom.min as usize;
        // Open nodes whose highest chip is below `m` must fit below `h` too.
        let mut need: u32 = self.by_max[..m].iter().sum();
        let mut share = 0;
        for (chips, h) in (m..self.on.len()).enumerate() {
            need += self.on[h] + self.by_max[h];
            share = share.max(need.div_ceil(chips as u32 + 1));
        }
        if self.on[m] < share {
            return Some(dom.min);
        }
        let next = dom.iter().nth(1).unwrap_or(dom.min);
        Some(next)
    }

    /// The odds that a node with inputs strays from its pace (is drawn from
    /// its whole domain) in uniform SAMPLE's first pass: about one a pass,
    /// so that every valid partition stays reachable.
    pub fn stray_odds(&self) -> f64 {
        1.0 / self.chain.max(1) as f64
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

    /// A decision on `u` stands: the nodes with inputs it fixed are
    /// counted, `u` and every one its propagation fixed with it. Counting
    /// the decided node alone, a chip whose nodes come in groups (an
    /// equality tying an attention matmul to its inputs, a chain squeezed
    /// onto one chip by the flow) held far more than its share before the
    /// pace moved on, and the last chips were left with the weights that
    /// had no room beside the first ones.
    pub fn placed(&mut self, solver: &Solver, u: u32) {
        let fixed = solver.num_fixed();
        let mut left = fixed.saturating_sub(self.fixed);
        if left == 1 && solver.is_fixed(u) {
            // `u` alone: no scan of the changes.
            self.count(solver, u);
        } else {
            for v in solver.changed_by_last_decision() {
                if left == 0 {
                    break;
                }
                if solver.is_fixed(v) && !self.counted[v as usize] {
                    left -= 1;
                    self.count(solver, v);
                }
            }
        }
        self.fixed = fixed;
    }

    /// `v`, newly fixed, counted on its chip when it has inputs.
    fn count(&mut self, solver: &Solver, v: u32) {
        self.counted[v as usize] = true;
        if has_inputs(solver, v) {
            self.on[solver.dom(v).min as usize] += 1;
            self.by_max[self.max[v as usize] as usize] -= 1;
        }
    }

    /// The fixed nodes counted again (after backtracking undid some).
    pub fn recount(&mut self, solver: &Solver) {
        self.on.fill(0);
        self.by_max.fill(0);
        for v in 0..solver.num_nodes() as u32 {
            let fixed = solver.is_fixed(v);
            self.counted[v as usize] = fixed;
            if !has_inputs(solver, v) {
                continue;
            }
            if fixed {
                self.on[solver.dom(v).min as usize] += 1;
            } else {
                self.by_max[self.max[v as usize] as usize] += 1;
            }
        }
        self.fixed = solver.num_fixed();
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

    /// Under upward flow, `d` decided on chip 0 takes `b` and `c` (and the
    /// source `a`) there with it: the pace counts the three nodes with
    /// inputs on chip 0, its share (half of the six), so `e` moves on to
    /// chip 1, where counting `d` alone kept it on chip 0.
    #[test]
    fn a_decision_counts_every_node_it_fixes() {
        let text = "use std::placement::{acyclic_flow}\n\
                    use std::topologies::ring\n\
                    let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
                    let g = graph { a -> b -> c -> d -> e -> f -> h }\n\
                    partition g onto t { require acyclic_flow }\n";
        let c = mcm_lang::compile_str("pace.mcm", text, std::path::Path::new("."));
        let p = c.problem(None).unwrap();
        let g = &p.graph;
        let id = |name: &str| g.decision_of(g.node_index(name).unwrap()).unwrap();
        let mut s = Solver::new(p, Options::default()).unwrap();
        let order: Vec<u32> = ["d", "a", "b", "c", "e", "f", "h"].iter().map(|n| id(n)).collect();
        let mut pace = Pace::new(&s, &order);
        assert_eq!(s.set_domain(id("d"), &[0]), 1);
        pace.placed(&s, id("d"));
        assert_eq!(pace.on, [3, 0]);
        assert_eq!(pace.chip(&s, id("e")), Some(1));
    }

    /// The nodes with weights (`c` to `f`) are kept off the last of three
    /// chips, and under upward flow so is `b`: five of the six nodes with
    /// inputs must share chips 0 and 1, three on one of them. Spread over
    /// all three chips, two a chip, chip 0 would take two, chip 1 the
    /// other three, and chip 2 only `h`.
    #[test]
    fn the_share_counts_the_chips_the_tail_may_take() {
        let text = "use std::placement::{acyclic_flow}\n\
                    use std::topologies::ring\n\
                    let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
                    let g = graph { a -> b -> c { params = 1 B } -> d { params = 1 B } -> e { params = 1 B } -> f { params = 1 B } -> h }\n\
                    constraint light_last() { forall u in nodes where u.params > 0 B: chip(u) != 2 }\n\
                    partition g onto t { require acyclic_flow, light_last }\n";
        let c = mcm_lang::compile_str("pace.mcm", text, std::path::Path::new("."));
        let p = c.problem(None).unwrap();
        let g = &p.graph;
        let id = |name: &str| g.decision_of(g.node_index(name).unwrap()).unwrap();
        let mut s = Solver::new(p, Options::default()).unwrap();
        let order: Vec<u32> = ["a", "b", "c", "d", "e", "f", "h"].iter().map(|n| id(n)).collect();
        let mut pace = Pace::new(&s, &order);
        for (n, chip) in [("a", 0), ("b", 0), ("c", 0)] {
            assert_eq!(
                s.set_domain(id(n), &[chip]),
                order.iter().position(|&u| u == id(n)).unwrap() + 1
            );
            pace.placed(&s, id(n));
        }
        assert_eq!(pace.on, [2, 0, 0]);
        assert_eq!(pace.chip(&s, id("d")), Some(0));
        assert_eq!(s.set_domain(id("d"), &[0]), 4);
        pace.placed(&s, id("d"));
        assert_eq!(pace.chip(&s, id("e")), Some(1));
    }
}
