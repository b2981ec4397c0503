//! The chip-level flow graph (an arc a -> b when some edge goes from chip a
//! to chip b) and its longest paths: the one routine behind the checker's
//! `longest_path`, the three-valued evaluator's bounds and the
//! `triangle_dependency` propagator, so that all three measure alike.

use std::cell::RefCell;
use std::collections::HashSet;

/// Not computed yet, in a memo of longest paths.
const UNKNOWN: i64 = i64::MIN;
/// No dense index: a chip that no arc touches.
const NONE: u32 = u32::MAX;

/// A set of arcs between chips with its longest-path queries. Its size
/// follows the arcs, not C²: the queries work over the chips that arcs touch
/// (a flow on a 4,096-chip package usually touches few of them).
pub struct ChipFlow {
    c: usize,
    arcs: HashSet<(u32, u32)>,
    succ: Vec<Vec<u32>>,
    /// Chips with an arc out, to clear `succ` without a pass over all C.
    tails: Vec<u32>,
    /// Built on the first query after a change: most flow graphs are built
    /// in full before they are asked anything.
    cache: RefCell<Option<Cache>>,
}

struct Cache {
    /// The chips arcs touch, and each chip's index among them (NONE: none).
    dense: Vec<u32>,
    /// The arcs between dense indices.
    succ: Vec<Vec<u32>>,
    /// reach[a * k + b] over dense indices: b can be reached from a by one or more arcs.
    reach: Vec<bool>,
    /// Chips on a cycle, and whether there is any.
    cyclic: Vec<bool>,
    any_cycle: bool,
    /// to[b][x]: the longest path from x to b, for targets asked so far.
    to: Vec<Vec<i64>>,
    /// The walk's stack, kept: the propagator asks for all C² pairs at once.
    stack: Vec<(usize, usize)>,
}

impl ChipFlow {
    pub fn new(c: usize) -> ChipFlow {
        ChipFlow {
            c,
            arcs: HashSet::new(),
            succ: vec![Vec::new(); c],
            tails: Vec::new(),
            cache: RefCell::new(None),
        }
    }

    /// Removes every arc, keeping the allocations.
    pub fn clear(&mut self) {
        self.arcs.clear();
        for &a in &self.tails {
            self.succ[a as usize].clear();
        }
        self.tails.clear();
        *self.cache.get_mut() = None;
    }

    /// Adds the arc a -> b; a loop (a == b) is no arc.
    pub fn add(&mut self, a: u32, b: u32) {
        if a != b && self.arcs.insert((a, b)) {
            if self.succ[a as usize].is_empty() {
                self.tails.push(a);
            }
            self.succ[a as usize].push(b);
            *self.cache.get_mut() = None;
        }
    }

    pub fn chips(&self) -> usize {
        self.c
    }

    pub fn has(&self, a: u32, b: u32) -> bool {
        self.arcs.contains(&(a, b))
    }

    /// The heads of the arcs from a, in the order they were added.
    pub fn succ(&self, a: u32) -> &[u32] {
        &self.succ[a as usize]
    }

    fn cache(&self) -> std::cell::RefMut<'_, Cache> {
        std::cell::RefMut::map(self.cache.borrow_mut(), |slot| slot.get_or_insert_with(|| self.build()))
    }

    fn build(&self) -> Cache {
        let mut dense = vec![NONE; self.c];
        let mut active = Vec::new();
        let mut tails = self.tails.clone();
        tails.sort_unstable();
        for &a in &tails {
            for &b in std::iter::once(&a).chain(&self.succ[a as usize]) {
                if dense[b as usize] == NONE {
                    dense[b as usize] = active.len() as u32;
                    active.push(b);
                }
            }
        }
        let c = active.len();
        let succ: Vec<Vec<u32>> = active
            .iter()
            .map(|&x| self.succ[x as usize].iter().map(|&y| dense[y as usize]).collect())
            .collect();
        let mut reach = vec![false; c * c];
        let mut stack = Vec::new();
        for s in 0..c {
            stack.extend(succ[s].iter().copied());
            while let Some(x) = stack.pop() {
                if !reach[s * c + x as usize] {
                    reach[s * c + x as usize] = true;
                    stack.extend(succ[x as usize].iter().copied());
                }
            }
        }
        let cyclic: Vec<bool> = (0..c).map(|x| reach[x * c + x]).collect();
        let any_cycle = cyclic.iter().any(|&x| x);
        Cache {
            dense,
            succ,
            reach,
            cyclic,
            any_cycle,
            to: vec![Vec::new(); c],
            stack: Vec::new(),
        }
    }

    /// Longest path from a to b: 0 when a == b, -1 when b cannot be reached,
    /// C (more than any simple path) when a path from a to b can go round a
    /// cycle.
    pub fn longest(&self, a: u32, b: u32) -> i64 {
        if a == b {
            return 0;
        }
        self.longest_in(&mut self.cache(), a, b)
    }

    /// Every pair's [`ChipFlow::longest`], row-major (`out[a * c + b]`),
    /// with one look at the cache: the propagator refreshes all C² at once.
    pub fn longest_all(&self, out: &mut [i32]) {
        let c = self.c;
        let mut cache = self.cache();
        for a in 0..c {
            for b in 0..c {
                out[a * c + b] = if a == b {
                    0
                } else {
                    self.longest_in(&mut cache, a as u32, b as u32) as i32
                };
            }
        }
    }

    fn longest_in(&self, cache: &mut Cache, a: u32, b: u32) -> i64 {
        let (a, b) = (cache.dense[a as usize], cache.dense[b as usize]);
        if a == NONE || b == NONE {
            return -1;
        }
        let c = cache.succ.len();
        let Cache {
            dense: _,
            succ,
            reach,
            cyclic,
            any_cycle,
            to,
            stack,
        } = cache;
        let (a, b) = (a as usize, b as usize);
        if !reach[a * c + b] {
            return -1;
        }
        let on_path = |x: usize| (x == a || reach[a * c + x]) && (x == b || reach[x * c + b]);
        if *any_cycle && (0..c).any(|x| cyclic[x] && on_path(x)) {
            return self.c as i64;
        }
        // No cycle between a and b, so none between b and any chip met on
        // the way: the memo for b stays right for later sources.
        let memo = &mut to[b];
        if memo.is_empty() {
            memo.resize(c, UNKNOWN);
            memo[b] = 0;
        }
        if memo[a] != UNKNOWN {
            return memo[a];
        }
        // Iterative post-order: no recursion as deep as the chip count.
        let toward_b = |y: usize| y == b || reach[y * c + b];
        stack.clear();
        stack.push((a, 0));
        while let Some(&mut (x, ref mut i)) = stack.last_mut() {
            if memo[x] != UNKNOWN {
                stack.pop();
                continue;
            }
            let succ = &succ[x];
            if *i < succ.len() {
                let y = succ[*i] as usize;
                *i += 1;
                if toward_b(y) && memo[y] == UNKNOWN {
                    stack.push((y, 0));
                }
            } else {
                let best = succ
                    .iter()
                    .map(|&y| y as usize)
                    .filter(|&y| toward_b(y) && memo[y] != UNKNOWN)
                    .map(|y| memo[y] + 1)
                    .max()
                    .unwrap_or(-1);
                memo[x] = best;
                stack.pop();
            }
        }
        memo[a]
    }

    /// One longest path from a to b, as chip ids; just `[a]` when there is
    /// none or it goes round a cycle.
    pub fn path(&self, a: u32, b: u32) -> Vec<u32> {
        let mut out = vec![a];
        let total = self.longest(a, b);
        if total < 0 || total >= self.c as i64 {
            return out;
        }
        let mut x = a;
        while x != b {
            let here = self.longest(x, b);
            let next = self.succ[x as usize]
                .iter()
                .copied()
                .find(|&y| (y == b && here == 1) || (y != b && self.longest(y, b) == here - 1));
            match next {
                Some(y) => {
                    out.push(y);
                    x = y;
                }
                None => break,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Longest simple path by trying every path: the definition.
    fn brute(f: &ChipFlow, a: u32, b: u32) -> i64 {
        fn go(f: &ChipFlow, x: u32, b: u32, on: &mut Vec<bool>, cycle: &mut bool) -> i64 {
            if x == b {
                return 0;
            }
            on[x as usize] = true;
            let mut best = -1;
            for &y in f.succ(x) {
                if on[y as usize] {
                    *cycle = true;
                } else {
                    let d = go(f, y, b, on, cycle);
                    if d >= 0 {
                        best = best.max(d + 1);
                    }
                }
            }
            on[x as usize] = false;
            best
        }
        if a == b {
            return 0;
        }
        let mut on = vec![false; f.chips()];
        let mut cycle = false;
        let d = go(f, a, b, &mut on, &mut cycle);
        // A cycle counts only where it lies on a way from a to b.
        let c = f.chips() as u32;
        let via_cycle = d >= 0
            && (0..c).any(|x| {
                (x == a || go(f, a, x, &mut vec![false; c as usize], &mut false) >= 0)
                    && (x == b || go(f, x, b, &mut vec![false; c as usize], &mut false) >= 0)
                    && f.succ(x)
                        .iter()
                        .any(|&y| y == x || go(f, y, x, &mut vec![false; c as usize], &mut false) >= 0)
            });
        if via_cycle {
            c as i64
        } else {
            d
        }
    }

    #[test]
    fn longest_paths_match_the_definition() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..300 {
            let c = rng.random_range(1..=6);
            let mut f = ChipFlow::new(c);
            for _ in 0..rng.random_range(0..=c * 2) {
                f.add(rng.random_range(0..c as u32), rng.random_range(0..c as u32));
            }
            for a in 0..c as u32 {
                for b in 0..c as u32 {
                    assert_eq!(f.longest(a, b), brute(&f, a, b), "{a} -> {b} in {:?}", f.succ);
                }
            }
            let (a, b) = (0, c as u32 - 1);
            let p = f.path(a, b);
            let len = f.longest(a, b);
            if (1..c as i64).contains(&len) {
                assert_eq!(p.len() as i64, len + 1);
                assert!(p.windows(2).all(|w| f.has(w[0], w[1])));
            }
        }
    }

    #[test]
    fn an_added_arc_renews_the_answers() {
        let mut f = ChipFlow::new(3);
        f.add(0, 1);
        f.add(1, 2);
        assert_eq!(f.longest(0, 2), 2);
        f.add(2, 1);
        assert_eq!(f.longest(0, 2), 3, "a cycle on the way counts as C");
        f.clear();
        f.add(0, 2);
        assert_eq!((f.longest(0, 2), f.longest(0, 1)), (1, -1));
    }
}
