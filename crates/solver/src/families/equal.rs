//! Nodes the rules force onto one chip: every instance over two nodes whose
//! relation holds only on equal chips (`chip(u) == chip(v)`, whatever its
//! formula, judged by the checker over every pair of chips, as
//! [`super::binary`] does) joins its two nodes, and the joins close into
//! groups. A group goes where any of its members goes, so a per-chip sum
//! or count can weigh a node together with its open mates
//! ([`super::resource`]): a chip too full for the whole group is closed to
//! each member before the first one is placed there, not after.
//!
//! The run bounds weigh the groups too: a node's descendant cone lies on
//! its chip and above, and so do the mates of every member of the cone
//! ([`super::spread`]).
//!
//! Only rules without a native propagator are read (the standard library
//! forces no equalities), and only on first need: a problem without a
//! per-chip sum or count never asks.

use super::binary::{pair_table, shape_key, TABLE_LIMIT};
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::{CmpOp, Formula, GroundConstraint, Term};
use std::collections::HashMap;

/// Groups of two or more nodes forced onto one chip.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Groups {
    /// Per node: its group, or `ALONE`.
    of: Vec<u32>,
    /// Per group: its members, ascending.
    members: Vec<Vec<u32>>,
}

/// The group of a node that no equality joins to another.
pub(crate) const ALONE: u32 = u32::MAX;

impl Groups {
    /// The groups the equalities among `rules` force, over `graph`'s placed nodes.
    pub fn find(rules: &[GroundConstraint], graph: &Graph, package: &Package) -> Groups {
        let n = graph.num_placed();
        let c = package.num_chips();
        let mut parent: Vec<u32> = (0..n as u32).collect();
        let mut cache: HashMap<String, bool> = HashMap::new();
        for rule in rules {
            if rule.native.as_deref().and_then(crate::rules::lookup).is_some() {
                continue;
            }
            for inst in rule.instances.iter() {
                let f = &inst.formula;
                let (vars, global) = f.dependencies();
                let &[a, b] = &vars[..] else { continue };
                if global || a as usize >= n || b as usize >= n {
                    continue;
                }
                let equal = is_chip_equality(f, a, b)
                    || (c * c <= TABLE_LIMIT
                        && *cache
                            .entry(shape_key(f, a, b))
                            .or_insert_with(|| only_on_the_diagonal(graph, package, f, a, b)));
                if equal {
                    union(&mut parent, a, b);
                }
            }
        }
        Groups::from_parents(&mut parent)
    }

    /// Groups from union-find parents; a root alone is no group.
    fn from_parents(parent: &mut [u32]) -> Groups {
        let n = parent.len();
        let mut size = vec![0u32; n];
        for u in 0..n as u32 {
            size[find(parent, u) as usize] += 1;
        }
        let mut id = vec![ALONE; n];
        let mut members: Vec<Vec<u32>> = Vec::new();
        let mut of = vec![ALONE; n];
        for u in 0..n as u32 {
            let r = find(parent, u) as usize;
            if size[r] < 2 {
                continue;
            }
            if id[r] == ALONE {
                id[r] = members.len() as u32;
                members.push(Vec::new());
            }
            of[u as usize] = id[r];
            members[id[r] as usize].push(u);
        }
        Groups { of, members }
    }

    /// Whether no two nodes are forced together.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The members of group `g`, ascending.
    pub fn members(&self, g: u32) -> &[u32] {
        &self.members[g as usize]
    }

    /// The number of groups.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// `u`'s group, or [`ALONE`].
    pub fn of(&self, u: u32) -> u32 {
        self.of.get(u as usize).copied().unwrap_or(ALONE)
    }
}

/// `chip(a) == chip(b)` written as such (no table needed, any package size).
fn is_chip_equality(f: &Formula, a: u32, b: u32) -> bool {
    match f {
        Formula::Cmp(CmpOp::Eq, Term::Chip(x), Term::Chip(y)) => (*x, *y) == (a, b) || (*x, *y) == (b, a),
        _ => false,
    }
}

/// Whether `f` over nodes `a` and `b` holds on no pair of distinct chips.
fn only_on_the_diagonal(graph: &Graph, package: &Package, f: &Formula, a: u32, b: u32) -> bool {
    let c = package.num_chips();
    let w = crate::domain::words_for(c);
    let t = pair_table((graph, package), f, a, b, c, w);
    (0..c).all(|x| crate::domain::bits(&t[x * w..(x + 1) * w]).all(|y| y as usize == x))
}

fn find(parent: &mut [u32], mut u: u32) -> u32 {
    while parent[u as usize] != u {
        let up = parent[parent[u as usize] as usize];
        parent[u as usize] = up;
        u = up;
    }
    u
}

fn union(parent: &mut [u32], a: u32, b: u32) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        parent[ra.max(rb) as usize] = ra.min(rb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_close_into_groups_and_singletons_stay_alone() {
        let mut parent: Vec<u32> = (0..7).collect();
        union(&mut parent, 4, 1);
        union(&mut parent, 5, 6);
        union(&mut parent, 1, 6);
        let g = Groups::from_parents(&mut parent);
        assert_eq!(g.of(0), ALONE);
        assert_eq!(g.of(2), ALONE);
        assert_eq!(g.of(1), g.of(6));
        assert_eq!(g.members[g.of(4) as usize], [1, 4, 5, 6]);
        assert_eq!(g.of(99), ALONE);
    }
}
