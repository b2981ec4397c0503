//! `o[u][k] -> o[v][k]` for every k, per edge: eager, and all the rule needs.

use crate::sat::encode::{Enc, Model, RuleEncoding};
use crate::sat::SatOptions;
use mcm_core::problem::{CmpOp, Formula, Term};
use varisat::Solver;

pub(super) struct Acyclic;

impl Acyclic {
    pub(super) fn boxed(_: &SatOptions) -> Box<dyn RuleEncoding> {
        Box::new(Acyclic)
    }
}

impl RuleEncoding for Acyclic {
    fn encode(&mut self, enc: &mut Enc, ci: usize, _ii: usize, f: &Formula) -> bool {
        encode(enc.m, enc.solver, ci, f)
    }
}

/// The pair (u, v) of an instance `chip(u) <= chip(v)`.
pub(super) fn pair(f: &Formula) -> Option<(u32, u32)> {
    match f {
        Formula::Cmp(CmpOp::Le, Term::Chip(u), Term::Chip(v)) => Some((*u, *v)),
        Formula::Cmp(CmpOp::Ge, Term::Chip(v), Term::Chip(u)) => Some((*u, *v)),
        _ => None,
    }
}

/// `chip(u) <= chip(v)`: `o[u][k] -> o[v][k]` for every k.
fn encode(m: &mut Model, solver: &mut Solver, ci: usize, f: &Formula) -> bool {
    let Some((u, v)) = pair(f) else {
        return false;
    };
    for k in 1..m.c as u32 {
        let (a, b) = (m.ge(u, k), m.ge(v, k));
        m.add_guarded(solver, ci, &[!a, b]);
    }
    true
}
