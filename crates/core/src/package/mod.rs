//! The chip package: chips with attributes, directed links between them,
//! and the routing facts the constraints and the cost model ask for.

use crate::quantity::Scalar;
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Debug, PartialEq)]
pub struct Chip {
    /// `die[3]` for a chip of a group, the group name for a lone chip.
    pub name: String,
    pub attrs: BTreeMap<String, Scalar>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    pub src: u32,
    pub dst: u32,
    pub attrs: BTreeMap<String, Scalar>,
}

/// A concrete package. Chips are numbered 0..C-1 in declaration order.
#[derive(Clone, Debug)]
pub struct Package {
    pub name: String,
    pub chips: Vec<Chip>,
    pub links: Vec<Link>,
    /// Fewest links from a to b at `a * C + b`; `u32::MAX` when unreachable.
    hops: Vec<u32>,
    link_index: BTreeMap<(u32, u32), usize>,
}

impl Package {
    /// Builds the package; links must name existing chips and not repeat.
    pub fn new(name: impl Into<String>, chips: Vec<Chip>, links: Vec<Link>) -> Result<Package, String> {
        let c = chips.len();
        let mut link_index = BTreeMap::new();
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); c];
        for (i, l) in links.iter().enumerate() {
            if l.src as usize >= c || l.dst as usize >= c {
                return Err(format!("link {i} names a chip that does not exist"));
            }
            if l.src == l.dst {
                return Err(format!("a link from `{}` to itself", chips[l.src as usize].name));
            }
            if link_index.insert((l.src, l.dst), i).is_some() {
                return Err(format!(
                    "the link `{}` -> `{}` is declared twice",
                    chips[l.src as usize].name, chips[l.dst as usize].name
                ));
            }
            out[l.src as usize].push(l.dst);
        }
        let mut hops = vec![u32::MAX; c * c];
        let mut queue = VecDeque::new();
        for s in 0..c {
            hops[s * c + s] = 0;
            queue.push_back(s as u32);
            while let Some(x) = queue.pop_front() {
                let hx = hops[s * c + x as usize];
                for &y in &out[x as usize] {
                    let slot = &mut hops[s * c + y as usize];
                    if *slot == u32::MAX {
                        *slot = hx + 1;
                        queue.push_back(y);
                    }
                }
            }
        }
        Ok(Package {
            name: name.into(),
            chips,
            links,
            hops,
            link_index,
        })
    }

    pub fn num_chips(&self) -> usize {
        self.chips.len()
    }

    /// Fewest links from `a` to `b`, `None` when `b` cannot be reached.
    pub fn hops(&self, a: u32, b: u32) -> Option<u32> {
        let h = self.hops[a as usize * self.chips.len() + b as usize];
        (h != u32::MAX).then_some(h)
    }

    /// The index of the direct link `a -> b`, if there is one.
    pub fn link(&self, a: u32, b: u32) -> Option<usize> {
        self.link_index.get(&(a, b)).copied()
    }

    /// The next chip on the route from `a` to `b` with fewest links, ties
    /// broken by the lowest next chip id (the cost model's routing rule);
    /// `None` when `a == b` or `b` cannot be reached.
    pub fn next_hop(&self, a: u32, b: u32) -> Option<u32> {
        let h = self.hops(a, b)?;
        if h == 0 {
            return None;
        }
        // Links out of `a`, in increasing destination id.
        self.link_index
            .range((a, 0)..=(a, u32::MAX))
            .map(|(&(_, y), _)| y)
            .find(|&y| self.hops(y, b) == Some(h - 1))
    }

    /// The links (indices into `links`) on the route from `a` to `b`, in
    /// order; empty when `a == b`, `None` when `b` cannot be reached.
    pub fn route(&self, a: u32, b: u32) -> Option<Vec<usize>> {
        self.hops(a, b)?;
        let mut path = Vec::new();
        let mut x = a;
        while let Some(y) = self.next_hop(x, b) {
            path.push(self.link_index[&(x, y)]);
            x = y;
        }
        Some(path)
    }

    /// A numeric attribute of a chip in base units.
    pub fn chip_attr(&self, chip: u32, name: &str) -> Option<&Scalar> {
        if let Some(c) = self.chips.get(chip as usize) {
            return c.attrs.get(name);
        }
        None
    }

    /// A chip attribute as a number (memory in bytes, compute in FLOP/s, ...),
    /// `None` when absent or not a number.
    pub fn chip_number(&self, chip: u32, name: &str) -> Option<f64> {
        self.chip_attr(chip, name).and_then(|s| s.as_f64())
    }

    /// A chip's `memory` in bytes, when it has one.
    pub fn chip_memory(&self, chip: u32) -> Option<f64> {
        self.chip_number(chip, "memory")
    }

    /// A chip's `compute` in FLOP/s, when it has one.
    pub fn chip_compute(&self, chip: u32) -> Option<f64> {
        self.chip_number(chip, "compute")
    }

    /// A link's `bandwidth` in bytes per second, when it has one.
    pub fn link_bandwidth(&self, link: usize) -> Option<f64> {
        self.links.get(link)?.attrs.get("bandwidth")?.as_f64()
    }

    // The one default of each, for the solver and the strategies, where a
    // package leaves an attribute out: no memory limit, and unit rates
    // (every chip and link alike). The cost model refuses such a package
    // instead, since it would report made-up times.

    /// [`Package::chip_memory`], or no limit.
    pub fn memory_or_unlimited(&self, chip: u32) -> f64 {
        self.chip_memory(chip).unwrap_or(f64::INFINITY)
    }

    /// [`Package::chip_compute`], or one FLOP/s.
    pub fn compute_or_unit(&self, chip: u32) -> f64 {
        self.chip_compute(chip).unwrap_or(1.0)
    }

    /// [`Package::link_bandwidth`], or one byte per second.
    pub fn bandwidth_or_unit(&self, link: usize) -> f64 {
        self.link_bandwidth(link).unwrap_or(1.0)
    }

    /// Names of the chip attributes present on every chip.
    pub fn chip_attr_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .chips
            .first()
            .map(|c| c.attrs.keys().map(String::as_str).collect())
            .unwrap_or_default();
        names.retain(|n| self.chips.iter().all(|c| c.attrs.contains_key(*n)));
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chip(i: usize) -> Chip {
        Chip {
            name: format!("c[{i}]"),
            attrs: BTreeMap::new(),
        }
    }

    fn link(a: u32, b: u32) -> Link {
        Link {
            src: a,
            dst: b,
            attrs: BTreeMap::new(),
        }
    }

    #[test]
    fn hops_follow_directed_links() {
        let p = Package::new("ring", (0..3).map(chip).collect(), vec![link(0, 1), link(1, 2)]).unwrap();
        assert_eq!(p.hops(0, 2), Some(2));
        assert_eq!(p.hops(2, 0), None);
        assert_eq!(p.hops(1, 1), Some(0));
        assert_eq!(p.link(0, 1), Some(0));
        assert_eq!(p.link(1, 0), None);
    }

    #[test]
    fn rejects_bad_links() {
        assert!(Package::new("p", (0..2).map(chip).collect(), vec![link(0, 0)]).is_err());
        assert!(Package::new("p", (0..2).map(chip).collect(), vec![link(0, 1), link(0, 1)]).is_err());
    }
}
