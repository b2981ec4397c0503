//! The generic path: any grounded formula, exactly. An instance is checked
//! as soon as its variables are fixed, and when one variable is left the
//! chips that would make it false are removed (forward checking). Instances
//! over the flow graph (`flows`, `longest_path`) depend on every node and
//! are checked when the placement is complete.

use super::{Ctx, Propagator};
use crate::checker::Checker;
use crate::store::{Fail, Store};
use mcm_core::problem::GroundConstraint;

struct Inst {
    index: usize,
    vars: Vec<u32>,
    global: bool,
}

pub struct Generic<'p> {
    constraint: usize,
    rule: &'p GroundConstraint,
    insts: Vec<Inst>,
    /// Instances mentioning each variable (local instances only).
    of_var: Vec<Vec<u32>>,
    scratch: Vec<u32>,
}

impl<'p> Generic<'p> {
    pub fn new(constraint: usize, rule: &'p GroundConstraint, n: usize) -> Generic<'p> {
        let mut insts = Vec::with_capacity(rule.instances.len());
        let mut of_var = vec![Vec::new(); n];
        for (i, inst) in rule.instances.iter().enumerate() {
            let (vars, global) = inst.formula.dependencies();
            if !global {
                for &v in &vars {
                    of_var[v as usize].push(insts.len() as u32);
                }
            }
            insts.push(Inst { index: i, vars, global });
        }
        Generic {
            constraint,
            rule,
            insts,
            of_var,
            scratch: vec![0; n],
        }
    }

    /// Removes at the root the chips that make a one-variable instance false,
    /// and fails on instances that are false whatever the placement.
    pub fn initial(&mut self, s: &mut Store, ctx: &Ctx) -> Result<(), Fail> {
        for k in 0..self.insts.len() {
            if !self.insts[k].global {
                self.visit(k, s, ctx)?;
            }
        }
        Ok(())
    }

    fn holds(&self, k: usize, ctx: &Ctx) -> bool {
        let f = &self.rule.instances[self.insts[k].index].formula;
        Checker::over(ctx.graph, ctx.package, &self.scratch).holds(f)
    }

    fn visit(&mut self, k: usize, s: &mut Store, ctx: &Ctx) -> Result<(), Fail> {
        let fail = Fail {
            constraint: self.constraint,
        };
        let mut open = None;
        for &v in &self.insts[k].vars {
            match s.value(v) {
                Some(c) => self.scratch[v as usize] = c,
                None if open.is_none() => open = Some(v),
                None => return Ok(()),
            }
        }
        match open {
            None => {
                if !self.holds(k, ctx) {
                    return Err(fail);
                }
            }
            Some(v) => {
                for c in s.dom(v).to_vec() {
                    self.scratch[v as usize] = c;
                    if !self.holds(k, ctx) {
                        s.remove(v, c, self.constraint)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl Propagator for Generic<'_> {
    fn watches(&self, n: usize) -> Vec<u32> {
        (0..n as u32).filter(|&v| !self.of_var[v as usize].is_empty()).collect()
    }

    fn on_change(&mut self, x: u32, s: &mut Store, ctx: &Ctx) -> Result<(), Fail> {
        for j in 0..self.of_var[x as usize].len() {
            let k = self.of_var[x as usize][j] as usize;
            self.visit(k, s, ctx)?;
        }
        Ok(())
    }

    fn complete(&mut self, s: &Store, ctx: &Ctx) -> Result<(), Fail> {
        for v in 0..s.n as u32 {
            self.scratch[v as usize] = s.value(v).unwrap_or(0);
        }
        let checker = Checker::over(ctx.graph, ctx.package, &self.scratch);
        let ok = self.rule.instances.iter().all(|i| checker.holds(&i.formula));
        if ok {
            Ok(())
        } else {
            Err(Fail {
                constraint: self.constraint,
            })
        }
    }
}
