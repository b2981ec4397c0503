//! `chip(u) >= d -> t_d`, `t_d -> OR_v x[v][d]`: eager, and all the rule needs.

use crate::sat::encode::{Enc, Model, RuleEncoding, L};
use crate::sat::SatOptions;
use mcm_core::problem::{CmpOp, Formula, Term};
use varisat::Solver;

pub(super) struct NoSkipEncoding;

impl NoSkipEncoding {
    pub(super) fn boxed(_: &SatOptions) -> Box<dyn RuleEncoding> {
        Box::new(NoSkipEncoding)
    }
}

impl RuleEncoding for NoSkipEncoding {
    fn encode(&mut self, enc: &mut Enc, ci: usize, _ii: usize, f: &Formula) -> bool {
        encode(enc.m, enc.solver, ci, f)
    }
}

/// The disjuncts of a formula that is an `or` of (or one) `chip(u) >= k` (`ge`)
/// or `chip(u) == k` comparisons, as literals.
fn disjuncts(m: &Model, f: &Formula, ge: bool) -> Option<Vec<L>> {
    let one = |f: &Formula| -> Option<L> {
        match f {
            Formula::Const(b) => Some(if *b { L::True } else { L::False }),
            Formula::Cmp(CmpOp::Ge, Term::Chip(u), Term::Const(k)) if ge => {
                if k.is_nan() {
                    Some(L::False)
                } else {
                    Some(m.ge_l(*u, k.ceil().clamp(-1.0, m.c as f64 + 1.0) as i64))
                }
            }
            Formula::Cmp(CmpOp::Eq, Term::Chip(u), Term::Const(k)) if !ge => {
                if *k >= 0.0 && k.fract() == 0.0 && (*k as usize) < m.c {
                    Some(L::Lit(m.x(*u, *k as u32)))
                } else {
                    Some(L::False)
                }
            }
            _ => None,
        }
    };
    match f {
        Formula::Or(xs) => xs.iter().map(one).collect(),
        Formula::AnyNode(op, k, ds) => ds
            .clone()
            .map(|u| one(&Formula::Cmp(*op, Term::Chip(u), Term::Const(*k))))
            .collect(),
        other => one(other).map(|l| vec![l]),
    }
}

/// `(OR chip(u) >= d) -> (OR chip(v) == d)`: `o[u][d] -> t`, `t -> OR x[v][d]`.
fn encode(m: &mut Model, solver: &mut Solver, ci: usize, f: &Formula) -> bool {
    let (a, b) = match f {
        Formula::Implies(a, b) => (a.as_ref(), b.as_ref()),
        _ => return false,
    };
    let (Some(pre), Some(post)) = (disjuncts(m, a, true), disjuncts(m, b, false)) else {
        return false;
    };
    if post.contains(&L::True) || pre.iter().all(|l| *l == L::False) {
        return true;
    }
    if pre.contains(&L::True) {
        m.add_l(solver, Some(ci), &post);
        return true;
    }
    let t = m.new_lit(solver);
    for l in &pre {
        if let L::Lit(l) = l {
            m.add(solver, &[!*l, t]);
        }
    }
    let mut clause = vec![L::Lit(!t)];
    clause.extend(post);
    m.add_l(solver, Some(ci), &clause);
    true
}
