//! `triangle_dependency`: a flow between two chips may not coexist with a
//! longer path between them. The chip flow graph is kept from the edges
//! whose two ends are fixed (arc counts are trailed); its longest paths are
//! recomputed when an arc appears, which happens at most C^2 times along a
//! branch. Candidates of nodes next to fixed ones are pruned when the arcs
//! they would add close a shortcut or a cycle.

use super::{Ctx, Propagator};
use crate::solver::store::{Fail, Store};

pub struct Triangle {
    constraint: usize,
    c: usize,
    counted: Vec<u32>,
    /// Trailed number of fixed edges realising arc a -> b, at a * C + b.
    arcs: Vec<u32>,
    /// Longest path lengths over the current arcs (-1: none; C: via a cycle),
    /// valid while `fresh`.
    lp: Vec<i32>,
    arc_list: Vec<(u32, u32)>,
    fresh: bool,
}

impl Triangle {
    pub fn new(constraint: usize, s: &mut Store) -> Triangle {
        let c = s.chips;
        Triangle {
            constraint,
            c,
            counted: (0..s.n).map(|_| s.new_cell(0)).collect(),
            arcs: (0..c * c).map(|_| s.new_cell(0)).collect(),
            lp: vec![-1; c * c],
            arc_list: Vec::new(),
            fresh: false,
        }
    }

    fn has_arc(&self, s: &Store, a: u32, b: u32) -> bool {
        s.cell(self.arcs[a as usize * self.c + b as usize]) > 0
    }

    /// Recomputes longest paths from the trailed arc counts.
    fn refresh(&mut self, s: &Store) {
        if self.fresh {
            return;
        }
        let c = self.c;
        self.arc_list.clear();
        let mut succ: Vec<Vec<u32>> = vec![Vec::new(); c];
        for a in 0..c {
            for b in 0..c {
                if s.cell(self.arcs[a * c + b]) > 0 {
                    succ[a].push(b as u32);
                    self.arc_list.push((a as u32, b as u32));
                }
            }
        }
        // Reachability by one or more arcs, then longest paths where no cycle lies on the way.
        let mut reach = vec![false; c * c];
        for s0 in 0..c {
            let mut stack: Vec<u32> = succ[s0].clone();
            while let Some(x) = stack.pop() {
                if !reach[s0 * c + x as usize] {
                    reach[s0 * c + x as usize] = true;
                    stack.extend(succ[x as usize].iter().copied());
                }
            }
        }
        let cyclic: Vec<bool> = (0..c).map(|x| reach[x * c + x]).collect();
        for b in 0..c {
            let mut memo: Vec<Option<i32>> = vec![None; c];
            for a in 0..c {
                self.lp[a * c + b] = if a == b {
                    0
                } else if !reach[a * c + b] {
                    -1
                } else if (0..c).any(|x| cyclic[x] && (x == a || reach[a * c + x]) && (x == b || reach[x * c + b])) {
                    c as i32
                } else {
                    dist(&succ, &reach, c, a, b, &mut memo)
                };
            }
        }
        self.fresh = true;
    }

    fn lp(&self, a: u32, b: u32) -> i32 {
        self.lp[a as usize * self.c + b as usize]
    }

    fn reach(&self, a: u32, b: u32) -> bool {
        a == b || self.lp(a, b) >= 1
    }

    /// Whether adding arc a -> b (absent now) keeps every arc the only path.
    fn arc_ok(&self, a: u32, b: u32) -> bool {
        if a == b {
            return true;
        }
        // A cycle, or a longer path a ~> b already there.
        if self.reach(b, a) || self.lp(a, b) >= 2 {
            return false;
        }
        // An existing arc x -> y that a path through a -> b would shortcut.
        !self
            .arc_list
            .iter()
            .any(|&(x, y)| (x, y) != (a, b) && self.reach(x, a) && self.reach(b, y))
    }

    /// Prunes the chips of unfixed node v that would break the rule given its fixed neighbours.
    fn prune(&self, v: u32, s: &mut Store, ctx: &Ctx) -> Result<(), Fail> {
        let mut pc: Vec<u32> = ctx.pred[v as usize].iter().filter_map(|&p| s.value(p)).collect();
        let mut sc: Vec<u32> = ctx.succ[v as usize].iter().filter_map(|&w| s.value(w)).collect();
        if pc.is_empty() && sc.is_empty() {
            return Ok(());
        }
        pc.sort_unstable();
        pc.dedup();
        sc.sort_unstable();
        sc.dedup();
        let cands = s.dom(v).to_vec();
        for cand in cands {
            let bad = pc
                .iter()
                .any(|&a| a != cand && !self.has_arc(s, a, cand) && !self.arc_ok(a, cand))
                || sc
                    .iter()
                    .any(|&b| b != cand && !self.has_arc(s, cand, b) && !self.arc_ok(cand, b))
                || pc.iter().any(|&a| {
                    a != cand
                        && sc
                            .iter()
                            .any(|&b| b != cand && (a == b || self.has_arc(s, a, b) || self.lp(a, b) >= 2))
                });
            if bad {
                s.remove(v, cand, self.constraint)?;
            }
        }
        Ok(())
    }

    fn check_all(&self) -> Result<(), Fail> {
        if self.arc_list.iter().any(|&(a, b)| self.lp(a, b) != 1) {
            return Err(Fail {
                constraint: self.constraint,
            });
        }
        Ok(())
    }
}

fn dist(succ: &[Vec<u32>], reach: &[bool], c: usize, x: usize, b: usize, memo: &mut [Option<i32>]) -> i32 {
    if x == b {
        return 0;
    }
    if let Some(d) = memo[x] {
        return d;
    }
    let mut best = -1;
    for &y in &succ[x] {
        let y = y as usize;
        if y == b || reach[y * c + b] {
            best = best.max(1 + dist(succ, reach, c, y, b, memo));
        }
    }
    memo[x] = Some(best);
    best
}

impl Propagator for Triangle {
    fn watches(&self, n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }

    fn on_change(&mut self, x: u32, s: &mut Store, ctx: &Ctx) -> Result<(), Fail> {
        let Some(cx) = s.value(x) else { return Ok(()) };
        if s.cell(self.counted[x as usize]) != 0 {
            return Ok(());
        }
        s.set_cell(self.counted[x as usize], 1);
        let mut new_arc = false;
        let c = self.c;
        let ends = ctx.succ[x as usize]
            .iter()
            .filter_map(|&w| s.value(w).map(|b| (cx, b)))
            .chain(ctx.pred[x as usize].iter().filter_map(|&p| s.value(p).map(|a| (a, cx))))
            .collect::<Vec<_>>();
        for (a, b) in ends {
            if a != b {
                let cell = self.arcs[a as usize * c + b as usize];
                let k = s.cell(cell);
                s.set_cell(cell, k + 1);
                new_arc |= k == 0;
            }
        }
        if new_arc {
            self.fresh = false;
            self.refresh(s);
            self.check_all()?;
            // A new arc can rule out chips anywhere next to a fixed node.
            for v in 0..s.n as u32 {
                if !s.is_fixed(v)
                    && (ctx.pred[v as usize].iter().any(|&p| s.is_fixed(p))
                        || ctx.succ[v as usize].iter().any(|&w| s.is_fixed(w)))
                {
                    self.prune(v, s, ctx)?;
                }
            }
        } else {
            self.refresh(s);
            let around: Vec<u32> = ctx.succ[x as usize]
                .iter()
                .chain(&ctx.pred[x as usize])
                .copied()
                .collect();
            for v in around {
                if !s.is_fixed(v) {
                    self.prune(v, s, ctx)?;
                }
            }
        }
        Ok(())
    }

    fn complete(&mut self, s: &Store, _ctx: &Ctx) -> Result<(), Fail> {
        self.fresh = false;
        self.refresh(s);
        self.check_all()
    }

    fn on_backtrack(&mut self) {
        self.fresh = false;
    }
}
