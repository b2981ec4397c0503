//! The generic path: any grounded formula, exactly. An instance is checked
//! as soon as its variables are fixed, and when one variable is left the
//! chips that would make it false are removed (forward checking). Instances
//! over the flow graph (`flows`, `longest_path`) depend on every node and
//! are checked when the placement is complete.
//!
//! Each local instance watches two of its open variables, as a SAT solver
//! watches two literals of a clause: while two are open nothing can be
//! inferred, so fixing an unwatched variable costs nothing, and fixing a
//! watched one moves the watch to another open variable, or, when none is
//! left, checks or forward-checks the instance. Watches need no undoing: a
//! watched variable is fixed only after every other one but the other
//! watch, so backtracking that reopens any of those reopens it too.

use crate::checker::Checker;
use crate::propagator::{Cx, Net, Propagator};
use crate::store::Fail;
use mcm_core::problem::GroundConstraint;

struct Inst {
    index: usize,
    vars: Vec<u32>,
    global: bool,
    /// The watched variables (one for a one-variable instance).
    watch: [u32; 2],
}

pub struct Generic<'p> {
    rule: &'p GroundConstraint,
    insts: Vec<Inst>,
    /// Instances watching each variable (local instances only).
    of_var: Vec<Vec<u32>>,
    /// Variables some local instance mentions: any may come to be watched.
    mentioned: Vec<bool>,
    scratch: Vec<u32>,
}

/// The generic propagator of `rule`, with the chips that make a
/// one-variable instance false removed at the root.
pub fn build<'p>(cx: &mut Cx, rule: &'p GroundConstraint) -> Result<Box<dyn Propagator + 'p>, Fail> {
    let mut g = Generic::over(rule, cx.n(), 0..rule.instances.len());
    g.propagate_from_scratch(cx)?;
    Ok(Box::new(g))
}

impl<'p> Generic<'p> {
    /// The generic propagator of some instances of `rule` (by index): the
    /// families take the others.
    pub(crate) fn over(rule: &'p GroundConstraint, n: usize, which: impl IntoIterator<Item = usize>) -> Generic<'p> {
        let mut insts = Vec::new();
        let mut mentioned = vec![false; n];
        for i in which {
            let (vars, global) = rule.instances.get(i).formula.dependencies();
            if !global {
                for &v in &vars {
                    mentioned[v as usize] = true;
                }
            }
            insts.push(Inst {
                index: i,
                vars,
                global,
                watch: [u32::MAX; 2],
            });
        }
        Generic {
            rule,
            insts,
            of_var: vec![Vec::new(); n],
            mentioned,
            scratch: vec![0; n],
        }
    }

    /// Every local instance watches two of its open variables (its fixed
    /// ones when fewer are open).
    fn rewatch(&mut self, cx: &Cx) {
        self.of_var.iter_mut().for_each(Vec::clear);
        for (k, inst) in self.insts.iter_mut().enumerate() {
            if inst.global || inst.vars.is_empty() {
                continue;
            }
            let mut order: Vec<u32> = inst.vars.iter().copied().filter(|&v| cx.value(v).is_none()).collect();
            order.extend(inst.vars.iter().copied().filter(|&v| cx.value(v).is_some()));
            inst.watch = [order[0], *order.get(1).unwrap_or(&u32::MAX)];
            for &v in order.iter().take(2) {
                self.of_var[v as usize].push(k as u32);
            }
        }
    }

    fn holds(&self, k: usize, net: &Net) -> bool {
        let inst = self.rule.instances.get(self.insts[k].index);
        Checker::over(net.graph, net.package, &self.scratch).holds(&inst.formula)
    }

    fn visit(&mut self, k: usize, cx: &mut Cx) -> Result<(), Fail> {
        let mut open = None;
        for &v in &self.insts[k].vars {
            match cx.value(v) {
                Some(c) => self.scratch[v as usize] = c,
                None if open.is_none() => open = Some(v),
                None => return Ok(()),
            }
        }
        match open {
            None => {
                if !self.holds(k, cx.net()) {
                    return Err(cx.fail());
                }
            }
            Some(v) => {
                for c in cx.dom(v).to_vec() {
                    self.scratch[v as usize] = c;
                    if !self.holds(k, cx.net()) {
                        cx.remove(v, c)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl Propagator for Generic<'_> {
    fn watches(&self, n: usize) -> Vec<u32> {
        (0..n as u32).filter(|&v| self.mentioned[v as usize]).collect()
    }

    /// Only a fixed watched variable matters: its watch moves on, or its
    /// instance has at most one open variable left and is visited.
    fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        if cx.value(x).is_none() {
            return Ok(());
        }
        let mut j = 0;
        while j < self.of_var[x as usize].len() {
            let k = self.of_var[x as usize][j] as usize;
            let inst = &mut self.insts[k];
            let slot = usize::from(inst.watch[0] != x);
            let other = inst.watch[1 - slot];
            let next = inst
                .vars
                .iter()
                .copied()
                .find(|&v| v != x && v != other && cx.value(v).is_none());
            match next {
                Some(v) => {
                    inst.watch[slot] = v;
                    self.of_var[x as usize].swap_remove(j);
                    self.of_var[v as usize].push(k as u32);
                }
                None => {
                    self.visit(k, cx)?;
                    j += 1;
                }
            }
        }
        Ok(())
    }

    /// Every local instance, checked or forward-checked, with its watches
    /// chosen again.
    fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        self.rewatch(cx);
        for k in 0..self.insts.len() {
            if !self.insts[k].global {
                self.visit(k, cx)?;
            }
        }
        Ok(())
    }

    fn complete(&mut self, cx: &Cx) -> Result<(), Fail> {
        if self.insts.is_empty() {
            return Ok(());
        }
        for v in 0..cx.n() as u32 {
            self.scratch[v as usize] = cx.value(v).unwrap_or(0);
        }
        let net = cx.net();
        let checker = Checker::over(net.graph, net.package, &self.scratch);
        let ok = self
            .insts
            .iter()
            .all(|i| checker.holds(&self.rule.instances.get(i.index).formula));
        if ok {
            Ok(())
        } else {
            Err(cx.fail())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build;
    use crate::harness::{check_incremental_against_scratch, graph, ring, rule, TestSolver};
    use mcm_core::graph::Graph;
    use mcm_core::problem::{CmpOp, Formula, GroundConstraint, Term};

    /// Ends of an edge on different chips, at most two nodes on chip 0, and
    /// (global) no flow from chip 1 to chip 0.
    fn mixed(g: &Graph) -> GroundConstraint {
        let chip = Term::Chip;
        let mut fs: Vec<Formula> = g
            .placed_edges()
            .iter()
            .map(|e| Formula::Cmp(CmpOp::Ne, chip(e.src), chip(e.dst)))
            .collect();
        let on0 = (0..g.num_placed() as u32)
            .map(|u| Formula::Cmp(CmpOp::Eq, chip(u), Term::Const(0.0)))
            .collect();
        fs.push(Formula::Cmp(CmpOp::Le, Term::Count(on0), Term::Const(2.0)));
        fs.push(Formula::Not(Box::new(Formula::Flows(
            Term::Const(1.0),
            Term::Const(0.0),
        ))));
        rule(fs)
    }

    #[test]
    fn the_last_open_node_of_an_instance_loses_the_chips_that_break_it() {
        let (g, p) = (graph(&[0; 3], &[(0, 1)]), ring(&[9; 3]));
        let r = mixed(&g);
        let mut s = TestSolver::new(&g, &p);
        s.post(build, &r).unwrap();
        s.set(0, &[0]).unwrap();
        s.set(2, &[0]).unwrap();
        s.propagate().unwrap();
        // Not with node 0 (the edge), not a third node on chip 0 (the count).
        s.assert_dom(1, &[1, 2]);
        // The flow 1 -> 0 is only seen complete.
        s.set(1, &[1]).unwrap();
        s.propagate().unwrap();
        let (g2, p2) = (graph(&[0; 2], &[(0, 1)]), ring(&[9; 2]));
        let r2 = mixed(&g2);
        let mut t = TestSolver::new(&g2, &p2);
        t.post(build, &r2).unwrap();
        t.set(0, &[1]).unwrap();
        assert!(t.propagate().is_err(), "node 1 must go to chip 0: a flow 1 -> 0");
    }

    #[test]
    fn incremental_propagation_matches_from_scratch() {
        let failed = check_incremental_against_scratch(15, 300, build, mixed);
        assert!(failed > 0, "some decisions fail");
    }
}
