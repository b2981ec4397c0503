//! Exhaustive enumeration of every placement: exact, and only for tiny
//! instances. It answers `expect (un)satisfiable` on small tests and is the
//! oracle the solver is tested against.

use super::checker::Checker;
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{GroundConstraint, Placement};

/// The most placements exhaustive enumeration will visit.
pub const LIMIT: u128 = 2_000_000;

/// The number of placements of `graph` on `package`, if it is small enough to enumerate.
pub fn space(graph: &Graph, package: &Package) -> Option<u128> {
    let c = package.num_chips() as u128;
    let mut total: u128 = 1;
    for _ in 0..graph.num_placed() {
        total = total.checked_mul(c)?;
        if total > LIMIT {
            return None;
        }
    }
    Some(total)
}

/// Calls `f` on every valid placement until it returns false; `None` when
/// the instance is too large to enumerate.
pub fn for_each_valid(
    graph: &Graph,
    package: &Package,
    constraints: &[GroundConstraint],
    mut f: impl FnMut(&Placement) -> bool,
) -> Option<()> {
    space(graph, package)?;
    let n = graph.num_placed();
    let c = package.num_chips() as u32;
    if c == 0 {
        return Some(());
    }
    let mut p = Placement::new(vec![0; n]);
    loop {
        if Checker::new(graph, package, &p).all_hold(constraints) && !f(&p) {
            return Some(());
        }
        // Next placement in odometer order.
        let mut i = 0;
        loop {
            if i == n {
                return Some(());
            }
            p.chips[i] += 1;
            if p.chips[i] < c {
                break;
            }
            p.chips[i] = 0;
            i += 1;
        }
    }
}

/// A valid placement if one exists; `None` when too large to enumerate.
pub fn find(graph: &Graph, package: &Package, constraints: &[GroundConstraint]) -> Option<Option<Placement>> {
    let mut found = None;
    for_each_valid(graph, package, constraints, |p| {
        found = Some(p.clone());
        false
    })?;
    Some(found)
}
