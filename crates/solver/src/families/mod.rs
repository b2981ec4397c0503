//! Propagator families: a rule a user writes compiles to native-speed
//! propagation chosen by the shape of its ground formulas, not its name.
//! Each instance of a constraint is classified on its own:
//!
//! - over one node (`chip(u) != 0`): root domain filtering, computed by the
//!   checker on every chip, and never propagated again;
//! - a bounded sum or count over `chip(u) == k` conditions: a resource
//!   propagator with trailed loads ([`resource`]), and with one instance
//!   per chip, load bounds over runs of chips ([`spread`]) and, for
//!   weights that differ under an upward flow rule, whole operations
//!   packed along the pipeline ([`pack`]);
//! - over two nodes (relations over edges): arc consistency on a support
//!   table shared by instances of the same shape ([`binary`]);
//! - a bounded sum over edges whose entries each count on a condition over
//!   the edge's two nodes (the traffic an edge puts on a link): trailed
//!   loads per instance and pruning of the chip pairs that would overflow
//!   ([`link`], [`link_load`]);
//! - anything else: the generic propagator, over those instances only.
//!
//! Recognisers are exact or decline: a declined instance is generic.
//! The SAT side is [`encode`].

mod binary;
pub(crate) mod encode;
pub(crate) mod equal;
#[cfg(test)]
mod equal_tests;
mod link;
mod link_encode;
mod link_load;
#[cfg(test)]
mod link_tests;
mod pack;
#[cfg(test)]
mod pack_tests;
mod resource;
mod spread;
#[cfg(test)]
mod tests;

use crate::checker::Checker;
use crate::generic::Generic;
use crate::propagator::{Cx, Propagator};
use crate::store::Fail;
use binary::Binary;
use link_load::LinkLoad;
use mcm_core::problem::{GroundConstraint, Problem};
use resource::Resource;
use std::collections::HashMap;

/// One constraint's instances, split by family.
struct Family<'p> {
    rule: &'p GroundConstraint,
    /// (node, allowed chips) of each unary instance.
    unary: Vec<(u32, Vec<u64>)>,
    resource: Resource,
    binary: Binary,
    link: LinkLoad,
    generic: Generic<'p>,
    has_generic: bool,
    /// Whether the binary and link families hold any instance.
    has_binary: bool,
    has_link: bool,
    scratch: Vec<u32>,
}

/// The propagator of a constraint that has no native key: its instances'
/// families, and the generic path for the rest; root pruning done.
pub fn build<'p>(cx: &mut Cx, rule: &'p GroundConstraint) -> Result<Box<dyn Propagator + 'p>, Fail> {
    let c = cx.chips();
    let mut unary = Vec::new();
    let mut shapes = Vec::new();
    let mut binary = Binary::new(cx, c);
    let mut cache = HashMap::new();
    let mut tables = link::Tables::new(c);
    let mut links = Vec::new();
    let mut rest = Vec::new();
    let mut chips = vec![0u32; cx.n()];
    for (i, inst) in rule.instances.iter().enumerate() {
        let f = &inst.formula;
        let (vars, global) = f.dependencies();
        if global {
            rest.push(i);
        } else if vars.len() == 1 {
            let u = vars[0];
            let net = cx.net();
            let mut mask = vec![0u64; cx.words()];
            for k in 0..c as u32 {
                chips[u as usize] = k;
                if Checker::over(net.graph, net.package, &chips).holds(f) {
                    crate::domain::set_bit(&mut mask, k);
                }
            }
            unary.push((u, mask));
        } else if let Some(s) = resource::recognise(f, c) {
            shapes.push((i, s));
        } else if vars.len() == 2 && c * c <= binary::TABLE_LIMIT {
            binary.add(cx, f, vars[0], vars[1], &mut cache);
        } else if let Some(s) = link::recognise(f, (cx.net().graph, cx.net().package), &mut tables) {
            links.push((i, s));
        } else {
            rest.push(i);
        }
    }
    let has_generic = !rest.is_empty();
    let resource = Resource::new(cx, shapes);
    let link = LinkLoad::new(cx, links, tables, link_load::HIT_SLOTS);
    let watched = |watches: &dyn Fn(&mut Vec<u32>)| {
        let mut w = Vec::new();
        watches(&mut w);
        !w.is_empty()
    };
    let (has_binary, has_link) = (watched(&|w| binary.watches(w)), watched(&|w| link.watches(w)));
    let mut p = Family {
        rule,
        unary,
        resource,
        binary,
        link,
        generic: Generic::over(rule, cx.n(), rest),
        has_generic,
        has_binary,
        has_link,
        scratch: vec![0; cx.n()],
    };
    p.propagate_from_scratch(cx)?;
    Ok(Box::new(p))
}

/// Per constraint, whether it is a rule without a native propagator with an
/// instance of the resource shape over several nodes: a sum or count bounded per chip,
/// such as a user's op count or compute budget (`memory_capacity`, native,
/// is not one).
pub(crate) fn bounds_per_chip(problem: &Problem) -> Vec<bool> {
    let chips = problem.package.num_chips();
    problem
        .constraints
        .iter()
        .map(|c| {
            c.native.as_deref().and_then(crate::rules::lookup).is_none()
                && c.instances
                    .iter()
                    .any(|i| resource::recognise(&i.formula, chips).is_some_and(|s| s.items.len() > 1))
        })
        .collect()
}

impl Propagator for Family<'_> {
    fn watches(&self, n: usize) -> Vec<u32> {
        let mut w = self.generic.watches(n);
        self.resource.watches(&mut w);
        self.binary.watches(&mut w);
        self.link.watches(&mut w);
        w.sort_unstable();
        w.dedup();
        w
    }

    fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        self.resource.on_change(x, cx)?;
        // Most rules use one family: a count over every node wakes on every
        // change, and the empty ones need not be called.
        if self.has_binary {
            self.binary.on_change(x, cx)?;
        }
        if self.has_link {
            self.link.on_change(x, cx)?;
        }
        if self.has_generic {
            self.generic.on_change(x, cx)?;
        }
        Ok(())
    }

    fn has_late(&self) -> bool {
        self.resource.has_late()
    }

    fn late(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        self.resource.late(cx)
    }

    fn complete(&mut self, cx: &Cx) -> Result<(), Fail> {
        if self.has_generic {
            self.generic.complete(cx)?;
        }
        if !self.resource.is_exact() && !self.resource.complete(self.rule, cx, &mut self.scratch) {
            return Err(cx.fail());
        }
        if !self.link.complete(self.rule, cx, &mut self.scratch) {
            return Err(cx.fail());
        }
        Ok(())
    }

    fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        for (u, mask) in &self.unary {
            cx.restrict(*u, mask)?;
        }
        self.resource.propagate_from_scratch(cx)?;
        self.binary.propagate_from_scratch(cx)?;
        self.link.propagate_from_scratch(cx)?;
        self.generic.propagate_from_scratch(cx)
    }
}
