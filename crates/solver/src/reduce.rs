//! The same question on fewer chips. When every rule is a native rule that
//! compares chips by order and equality only (`order_only` in its row of
//! [`crate::rules::NATIVE_RULES`]: today all four stdlib rules) and every chip has
//! the same memory, a valid placement uses at most N chips (N nodes), and
//! renumbering its chips in order onto 0..k keeps it valid: the same order
//! along edges, the same prefix, an isomorphic flow graph, the same loads
//! on alike chips. So the problem on the first min(N, C) chips is valid
//! exactly when the whole one is, for every subset of its rules too, and a
//! placement valid there is valid on the whole package. SAT then answers
//! "is there any valid partition, and which rules conflict" at a cost that
//! does not depend on the package's size (the tutorial's three-node block
//! on 4,096 chips: 3 chips).
//!
//! Only questions without decisions may be asked of the reduced problem: a
//! decision naming a chip past k has no counterpart there.

use mcm_core::package::Package;
use mcm_core::problem::{Elem, Instance, Problem};
use std::sync::Arc;

/// The problem on its first min(N, C) chips, when that is equivalent and
/// smaller; `None` otherwise.
pub fn fewer_chips(problem: &Problem) -> Option<Problem> {
    let k = problem.graph.num_placed().max(1);
    (k < problem.package.num_chips())
        .then(|| first_chips(problem, k))
        .flatten()
}

/// The problem on its first `k` chips, when its rules are order-only and
/// its chips alike: a placement valid there is valid on the whole package
/// (for any k; the two are equivalent when k >= N). `None` otherwise.
pub fn first_chips(problem: &Problem, k: usize) -> Option<Problem> {
    let pkg = &problem.package;
    let c = pkg.num_chips();
    if k == 0 || k > c || !applies(problem) {
        return None;
    }
    let past_k = |e: &Elem| matches!(*e, Elem::Chip(d) if d as usize >= k);
    let mut constraints = problem.constraints.clone();
    for g in &mut constraints {
        g.instances.retain(|i| !binds(i, &past_k));
    }
    let links = pkg
        .links
        .iter()
        .filter(|l| (l.src as usize) < k && (l.dst as usize) < k)
        .cloned()
        .collect();
    let small = Package::new(pkg.name.clone(), pkg.chips[..k].to_vec(), links).ok()?;
    Some(Problem {
        package: Arc::new(small),
        constraints,
        ..problem.clone()
    })
}

/// Whether [`first_chips`] applies: every rule order-only, every chip with
/// the same memory, no rule instance bound to a link.
pub fn applies(problem: &Problem) -> bool {
    let pkg = &problem.package;
    let c = pkg.num_chips();
    let order_only = problem.constraints.iter().all(|g| {
        g.native
            .as_deref()
            .and_then(crate::rules::lookup)
            .is_some_and(|r| r.order_only)
    });
    let mem = pkg.memory_or_unlimited(0);
    // Compared as bits: equal memories read from the same declaration.
    if !order_only || (1..c as u32).any(|d| pkg.memory_or_unlimited(d).to_bits() != mem.to_bits()) {
        return false;
    }
    // Link indices change with the package (none of these rules binds one).
    let on_link = |e: &Elem| matches!(e, Elem::Link(_));
    !problem
        .constraints
        .iter()
        .any(|g| g.instances.iter().any(|i| binds(&i, &on_link)))
}

/// Whether an instance binds an element that `f` picks.
fn binds(i: &Instance, f: &dyn Fn(&Elem) -> bool) -> bool {
    i.bindings.iter().any(|(_, e)| f(e))
}
