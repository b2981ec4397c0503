//! Instances over two nodes (relations over edges, whatever their formula):
//! a support table per distinct shape, computed once by the checker over
//! every pair of chips, and arc consistency on each pair. Arc consistency
//! has one fixpoint, so incremental and from-scratch propagation agree.

use crate::checker::Checker;
use crate::domain::set_bit;
use crate::propagator::Cx;
use crate::store::Fail;
use mcm_core::graph::Graph;
use mcm_core::package::Package;
use mcm_core::problem::Formula;
use std::collections::HashMap;

/// The most chip pairs a shape's table may take to compute; past it the
/// instances stay generic.
pub(crate) const TABLE_LIMIT: usize = 1 << 16;

struct Pair {
    a: u32,
    b: u32,
    table: u32,
}

/// The binary instances of one constraint.
pub(crate) struct Binary {
    pairs: Vec<Pair>,
    /// Per table: for each chip of `a` the chips of `b` it supports, then for
    /// each chip of `b` the chips of `a`; `words` words each.
    tables: Vec<Vec<u64>>,
    /// Per table: every chip pair holds (its instances need no propagator).
    full: Vec<bool>,
    of_node: Vec<Vec<u32>>,
    chips: usize,
    words: usize,
    mask: Vec<u64>,
}

/// The formula with its two nodes renamed, as the key of its table: the
/// same relation on other nodes shares it (attributes are already folded
/// into constants, so equal text is an equal relation).
pub(super) fn shape_key(f: &Formula, a: u32, b: u32) -> String {
    format!("{f:?}")
        .replace(&format!("Chip({a})"), "Chip(#a)")
        .replace(&format!("Chip({b})"), "Chip(#b)")
}

/// Where `f` over nodes `a` and `b` holds, by the checker over every pair
/// of chips: for each chip of `a` the chips of `b` (`words` words each),
/// then for each chip of `b` the chips of `a`. With `a == b`, the diagonal
/// (`x`, `x`) says where it holds.
pub(super) fn pair_table(net: (&Graph, &Package), f: &Formula, a: u32, b: u32, c: usize, w: usize) -> Vec<u64> {
    let (graph, package) = net;
    let mut t = vec![0u64; 2 * c * w];
    let mut chips = vec![0u32; graph.num_placed()];
    for x in 0..c as u32 {
        for y in 0..c as u32 {
            chips[a as usize] = x;
            chips[b as usize] = y;
            if Checker::over(graph, package, &chips).holds(f) {
                set_bit(&mut t[x as usize * w..(x as usize + 1) * w], y);
                set_bit(&mut t[(c + y as usize) * w..(c + y as usize + 1) * w], x);
            }
        }
    }
    t
}

impl Binary {
    pub fn new(cx: &Cx, chips: usize) -> Binary {
        let words = cx.words();
        Binary {
            pairs: Vec::new(),
            tables: Vec::new(),
            full: Vec::new(),
            of_node: vec![Vec::new(); cx.n()],
            chips,
            words,
            mask: vec![0; words],
        }
    }

    /// Adds instance `f` over nodes `a` and `b`, computing its table unless
    /// a table of the same shape exists. Returns false when the instance
    /// always holds (nothing to propagate).
    pub fn add(&mut self, cx: &Cx, f: &Formula, a: u32, b: u32, cache: &mut HashMap<String, u32>) -> bool {
        let key = shape_key(f, a, b);
        let t = match cache.get(&key) {
            Some(&t) => t,
            None => {
                let t = self.tables.len() as u32;
                let table = self.table(cx, f, a, b);
                let full = (0..self.chips)
                    .all(|x| (0..self.chips).all(|y| table[x * self.words + y / 64] >> (y % 64) & 1 == 1));
                self.tables.push(table);
                self.full.push(full);
                cache.insert(key, t);
                t
            }
        };
        if self.full[t as usize] {
            return false;
        }
        let p = self.pairs.len() as u32;
        self.pairs.push(Pair { a, b, table: t });
        self.of_node[a as usize].push(p);
        self.of_node[b as usize].push(p);
        true
    }

    fn table(&self, cx: &Cx, f: &Formula, a: u32, b: u32) -> Vec<u64> {
        let net = cx.net();
        pair_table((net.graph, net.package), f, a, b, self.chips, self.words)
    }

    pub fn watches(&self, out: &mut Vec<u32>) {
        out.extend((0..self.of_node.len() as u32).filter(|&u| !self.of_node[u as usize].is_empty()));
    }

    /// The other end of each pair of `x` keeps the chips some chip of `x`
    /// supports. The rows are read until every chip left to the other end
    /// has a support: a loose relation (an edge's span under most of the
    /// package) is settled by the first row, where reading all of them cost
    /// a quarter of a partition.
    pub fn on_change(&mut self, x: u32, cx: &mut Cx) -> Result<(), Fail> {
        for j in 0..self.of_node[x as usize].len() {
            let p = &self.pairs[self.of_node[x as usize][j] as usize];
            let (other, half) = if p.a == x { (p.b, 0) } else { (p.a, self.chips) };
            let table = &self.tables[p.table as usize];
            self.mask.iter_mut().for_each(|m| *m = 0);
            let left = cx.words_of(other);
            let mut supported = false;
            for v in cx.dom(x).iter() {
                let row = &table[(half + v as usize) * self.words..(half + v as usize + 1) * self.words];
                let mut all = true;
                for ((m, r), l) in self.mask.iter_mut().zip(row).zip(left) {
                    *m |= r;
                    all &= l & !*m == 0;
                }
                if all {
                    supported = true;
                    break;
                }
            }
            if !supported {
                cx.restrict(other, &self.mask)?;
            }
        }
        Ok(())
    }

    /// Both ends of every pair revised.
    pub fn propagate_from_scratch(&mut self, cx: &mut Cx) -> Result<(), Fail> {
        for u in 0..self.of_node.len() as u32 {
            self.on_change(u, cx)?;
        }
        Ok(())
    }
}
