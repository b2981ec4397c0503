//! The chip package: chips with attributes, directed links between them,
//! and the routing facts the constraints and the cost model ask for.

pub mod svg;
pub mod view;

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

/// The most chips a package may have: the solver's chip sets are bitsets of
/// at most 64 words, and the fewest-hops table takes 4·C² bytes (64 MiB here).
pub const MAX_CHIPS: usize = 4096;

/// The most links a package may have (2^21 = 2,097,152: `fully_connected(n = 1448)`).
/// Each link keeps its attributes (a few hundred bytes), so a package at the
/// limit takes about a gigabyte; a 4,096-chip fully connected package (16.8
/// million links) is refused instead of allocated for minutes.
pub const MAX_LINKS: usize = 1 << 21;

/// A concrete package. Chips are numbered 0..C-1 in declaration order.
#[derive(Clone, Debug)]
pub struct Package {
    pub name: String,
    pub chips: Vec<Chip>,
    pub links: Vec<Link>,
    /// Fewest links from a to b at `a * C + b` (u16: a route has fewer than
    /// MAX_CHIPS links); `u16::MAX` when unreachable.
    hops: Vec<u16>,
    /// Links out of each chip, sorted by destination, as compressed rows:
    /// the links out of `a` are `out_link[out_start[a]..out_start[a + 1]]`
    /// (link indices), their heads `out_dst[..]` alike.
    out_start: Vec<u32>,
    out_dst: Vec<u32>,
    out_link: Vec<u32>,
}

impl Package {
    /// Builds the package; links must name existing chips and not repeat.
    /// At most [`MAX_CHIPS`] chips and [`MAX_LINKS`] links.
    pub fn new(name: impl Into<String>, chips: Vec<Chip>, links: Vec<Link>) -> Result<Package, String> {
        let c = chips.len();
        if c > MAX_CHIPS {
            return Err(format!("{c} chips: a package has at most {MAX_CHIPS} chips"));
        }
        if links.len() > MAX_LINKS {
            return Err(format!(
                "{} links: a package has at most {MAX_LINKS} links",
                links.len()
            ));
        }
        for (i, l) in links.iter().enumerate() {
            if l.src as usize >= c || l.dst as usize >= c {
                return Err(format!("link {i} names a chip that does not exist"));
            }
            if l.src == l.dst {
                return Err(format!("a link from `{}` to itself", chips[l.src as usize].name));
            }
        }
        // Compressed rows sorted by (source, destination): the lookups are
        // binary searches, and no per-link map entry is allocated.
        let mut order: Vec<u32> = (0..links.len() as u32).collect();
        order.sort_unstable_by_key(|&i| (links[i as usize].src, links[i as usize].dst));
        for w in order.windows(2) {
            let (a, b) = (&links[w[0] as usize], &links[w[1] as usize]);
            if (a.src, a.dst) == (b.src, b.dst) {
                return Err(format!(
                    "the link `{}` -> `{}` is declared twice",
                    chips[a.src as usize].name, chips[a.dst as usize].name
                ));
            }
        }
        let mut out_start = vec![0u32; c + 1];
        for l in &links {
            out_start[l.src as usize + 1] += 1;
        }
        for a in 0..c {
            out_start[a + 1] += out_start[a];
        }
        let out_dst: Vec<u32> = order.iter().map(|&i| links[i as usize].dst).collect();
        let hops = fewest_hops(c, &out_start, &out_dst);
        Ok(Package {
            name: name.into(),
            chips,
            links,
            hops,
            out_start,
            out_dst,
            out_link: order,
        })
    }

    /// The links out of `a` as (destination, link index), by destination.
    fn out_of(&self, a: u32) -> impl Iterator<Item = (u32, usize)> + '_ {
        let r = self.out_start[a as usize] as usize..self.out_start[a as usize + 1] as usize;
        self.out_dst[r.clone()]
            .iter()
            .zip(&self.out_link[r])
            .map(|(&d, &l)| (d, l as usize))
    }

    pub fn num_chips(&self) -> usize {
        self.chips.len()
    }

    /// Fewest links from `a` to `b`, `None` when `b` cannot be reached.
    pub fn hops(&self, a: u32, b: u32) -> Option<u32> {
        let h = *self.hops.get(a as usize * self.chips.len() + b as usize)?;
        (h != u16::MAX).then_some(u32::from(h))
    }

    /// The index of the direct link `a -> b`, if there is one.
    pub fn link(&self, a: u32, b: u32) -> Option<usize> {
        let r = self.out_start.get(a as usize)?..self.out_start.get(a as usize + 1)?;
        let (lo, hi) = (*r.start as usize, *r.end as usize);
        let k = self.out_dst[lo..hi].binary_search(&b).ok()?;
        Some(self.out_link[lo + k] as usize)
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
        self.out_of(a).map(|(y, _)| y).find(|&y| self.hops(y, b) == Some(h - 1))
    }

    /// The links (indices into `links`) on the route from `a` to `b`, in
    /// order; empty when `a == b`, `None` when `b` cannot be reached.
    pub fn route(&self, a: u32, b: u32) -> Option<Vec<usize>> {
        self.hops(a, b)?;
        let mut path = Vec::new();
        let mut x = a;
        while let Some(y) = self.next_hop(x, b) {
            path.push(self.link(x, y).expect("a next hop is a link"));
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

    /// A chip's `kind` (`"a100"`, `"die"`): the key of the graph's measured
    /// op times; `None` when absent or empty (no kind).
    pub fn chip_kind(&self, chip: u32) -> Option<&str> {
        match self.chip_attr(chip, "kind")? {
            Scalar::Str(s) if !s.is_empty() => Some(s),
            _ => None,
        }
    }

    /// A link's `bandwidth` in bytes per second, when it has one.
    pub fn link_bandwidth(&self, link: usize) -> Option<f64> {
        self.links.get(link)?.attrs.get("bandwidth")?.as_f64()
    }

    /// Seconds a transfer waits per hop on this link, before its bytes
    /// flow; `None` where the link declares none (the cost model takes 0).
    pub fn link_latency(&self, link: usize) -> Option<f64> {
        self.links.get(link)?.attrs.get("latency")?.as_f64()
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

/// Breadth-first search from every chip over compressed rows. A search
/// stops once every chip is reached, so a dense package costs C² rather
/// than C times its links (1024 fully connected chips: 10^6 steps, not 10^9).
fn fewest_hops(c: usize, start: &[u32], dst: &[u32]) -> Vec<u16> {
    let mut hops = vec![u16::MAX; c * c];
    let mut queue = VecDeque::with_capacity(c);
    for s in 0..c {
        let row = &mut hops[s * c..(s + 1) * c];
        row[s] = 0;
        let mut reached = 1;
        queue.clear();
        queue.push_back(s as u32);
        'bfs: while let Some(x) = queue.pop_front() {
            let hx = row[x as usize];
            for &y in &dst[start[x as usize] as usize..start[x as usize + 1] as usize] {
                let slot = &mut row[y as usize];
                if *slot == u16::MAX {
                    *slot = hx + 1;
                    reached += 1;
                    if reached == c {
                        break 'bfs;
                    }
                    queue.push_back(y);
                }
            }
        }
    }
    hops
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

    /// Fewest hops by relaxing every link until nothing changes: the definition.
    fn slow_hops(c: usize, links: &[(u32, u32)], a: usize, b: usize) -> Option<u32> {
        let mut d = vec![u32::MAX; c];
        d[a] = 0;
        for _ in 0..c {
            for &(x, y) in links {
                if d[x as usize] != u32::MAX {
                    d[y as usize] = d[y as usize].min(d[x as usize] + 1);
                }
            }
        }
        (d[b] != u32::MAX).then_some(d[b])
    }

    #[test]
    fn compact_rows_answer_like_the_definition() {
        // A small linear congruential generator: no dependency for a test.
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..200 {
            let c = 1 + next(7) as usize;
            let mut pairs = Vec::new();
            for _ in 0..next(20) {
                let (a, b) = (next(c as u64) as u32, next(c as u64) as u32);
                if a != b && !pairs.contains(&(a, b)) {
                    pairs.push((a, b));
                }
            }
            let links = pairs.iter().map(|&(a, b)| link(a, b)).collect();
            let p = Package::new("p", (0..c).map(chip).collect(), links).unwrap();
            for a in 0..c {
                for b in 0..c {
                    let h = p.hops(a as u32, b as u32);
                    assert_eq!(h, slow_hops(c, &pairs, a, b), "{a} -> {b} over {pairs:?}");
                    let direct = pairs.iter().position(|&l| l == (a as u32, b as u32));
                    assert_eq!(p.link(a as u32, b as u32), direct);
                    if let Some(route) = p.route(a as u32, b as u32) {
                        assert_eq!(route.len() as u32, h.unwrap());
                        let mut x = a as u32;
                        for l in route {
                            assert_eq!(pairs[l].0, x);
                            x = pairs[l].1;
                        }
                        assert_eq!(x, b as u32);
                    }
                }
            }
        }
        let p = Package::new("p", (0..2).map(chip).collect(), vec![link(0, 1)]).unwrap();
        assert_eq!((p.link(5, 0), p.hops(5, 0)), (None, None), "chips out of range");
    }

    #[test]
    fn refuses_past_the_limits() {
        let e = Package::new("p", (0..MAX_CHIPS + 1).map(chip).collect(), vec![]).unwrap_err();
        assert!(e.contains("at most 4096 chips"), "{e}");
        let links = vec![link(0, 1); MAX_LINKS + 1];
        let e = Package::new("p", (0..2).map(chip).collect(), links).unwrap_err();
        assert!(e.contains("at most 2097152 links"), "{e}");
    }
}
