//! The SAT side of the families. A resource instance is restated as a plain
//! sum of non-negative weights within a capacity and encoded as
//! `memory_capacity`'s instances are (units and pairs for what cannot fit,
//! a sequential counter, exact for small integer capacities, and lazy cuts
//! of minimal overflowing sets). A per-link sum that the generic table
//! would not take (too many nodes) is [`super::link_encode`]'s. Unary and
//! binary instances are left to the generic encoding: a table over one or
//! two nodes is exact and compact (a unit clause per forbidden chip, a
//! binary clause per forbidden pair).

use super::link_encode::LinkEncoding;
use super::resource::{recognise, Shape};
use crate::rules::memory_capacity::MemoryEncoding;
use crate::sat::encode::{Enc, Judged, RuleEncoding};
use crate::sat::{SatOptions, SatStats};
use mcm_core::problem::{CmpOp, Formula, Term};
use varisat::Lit;

pub(crate) struct FamilyEncoding {
    resource: Box<dyn RuleEncoding>,
    link: LinkEncoding,
}

impl FamilyEncoding {
    pub(crate) fn new(opts: &SatOptions) -> FamilyEncoding {
        FamilyEncoding {
            resource: MemoryEncoding::boxed(opts),
            link: LinkEncoding::default(),
        }
    }
}

/// `sum(chip(u) == k: w) <= cap` with the constant part moved to the
/// capacity, when that is exact: integer weights, or no constant part and
/// a non-strict bound.
pub(crate) fn plain_sum(s: &Shape) -> Option<Formula> {
    let cap = if s.exact {
        s.cap - s.base
    } else if s.base == 0.0 && !s.strict {
        s.cap
    } else {
        return None;
    };
    let items = s
        .items
        .iter()
        .map(|&(u, k, w)| {
            (
                Formula::Cmp(CmpOp::Eq, Term::Chip(u), Term::Const(f64::from(k))),
                Term::Const(w),
            )
        })
        .collect();
    Some(Formula::Cmp(CmpOp::Le, Term::Sum(items), Term::Const(cap)))
}

impl RuleEncoding for FamilyEncoding {
    fn encode(&mut self, enc: &mut Enc, ci: usize, ii: usize, f: &Formula) -> bool {
        if let Some(sum) = recognise(f, enc.m.c).as_ref().and_then(plain_sum) {
            return self.resource.encode(enc, ci, ii, &sum);
        }
        let (deps, global) = f.dependencies();
        let tabled = (enc.m.c as u64)
            .checked_pow(deps.len() as u32)
            .is_some_and(|s| s <= enc.opts.table_limit);
        !global && !tabled && self.link.encode(enc, ci, ii, f)
    }

    fn cuts(&mut self, on: &Judged, stats: &mut SatStats, out: &mut Vec<(usize, Vec<Lit>)>, defs: &mut Vec<Vec<Lit>>) {
        self.resource.cuts(on, stats, out, defs);
        self.link.cuts(on, out);
    }
}
