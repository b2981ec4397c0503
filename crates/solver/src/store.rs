//! The trailed store: domains and propagator state cells, with undo by
//! decision level, and the queue of variables whose domain changed.

use super::domain::{summarize, words_for, Dom};

/// Propagation failed: the constraint (index into the problem's) that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fail {
    pub constraint: usize,
}

/// An entry of the trail: the old domain of a variable (its words on top
/// of `saved`, its bounds and size read back from them), or, with
/// [`CELL`] set, the old value of a cell (on top of `olds`). Four bytes
/// (twelve for a cell): a level that touches every node of a large graph
/// trails an entry or more per node.
type Entry = u32;

/// The bit of a trail entry that marks a cell.
const CELL: u32 = 1 << 31;

pub struct Store {
    pub n: usize,
    pub chips: usize,
    w: usize,
    words: Vec<u64>,
    min: Vec<u32>,
    max: Vec<u32>,
    size: Vec<u32>,
    cells: Vec<i64>,
    trail: Vec<Entry>,
    olds: Vec<i64>,
    saved: Vec<u64>,
    /// Trail length at the start of each open level.
    levels: Vec<(usize, usize)>,
    /// Level stamp of the last save of each variable and cell, so that a
    /// value is saved once per level however often it changes.
    /// Four bytes each (five cells a node and more): when the stamp wraps,
    /// all are cleared, and a value may then be saved twice in a level,
    /// which undoes the same.
    var_stamp: Vec<u32>,
    cell_stamp: Vec<u32>,
    stamp: u32,
    pub queue: Vec<u32>,
    in_queue: Vec<bool>,
    nfixed: usize,
    /// The values at the root, while no change at the root has made them
    /// stale: undoing every level is then one copy, where the trail undoes
    /// an entry at a time (a FIX or SAMPLE pass trails many entries per
    /// node and starts from the root each time). Taken by [`Store::pop_all`]
    /// after a long undo, and only for stores up to [`ROOT_COPY_WORDS`].
    root: Option<Box<Root>>,
}

/// What [`Store::pop_all`] restores.
struct Root {
    words: Vec<u64>,
    min: Vec<u32>,
    max: Vec<u32>,
    size: Vec<u32>,
    cells: Vec<i64>,
    nfixed: usize,
}

/// The largest store (domain words and cells) that keeps a copy of its
/// root: past it the copy would weigh on memory per node, and a pass over
/// so large a graph costs far more than its undo.
const ROOT_COPY_WORDS: usize = 1 << 18;

impl Store {
    pub fn new(n: usize, chips: usize) -> Store {
        let w = words_for(chips);
        let mut full = vec![0u64; w];
        for c in 0..chips {
            full[c / 64] |= 1 << (c % 64);
        }
        let mut words = Vec::with_capacity(n * w);
        for _ in 0..n {
            words.extend_from_slice(&full);
        }
        let top = chips.saturating_sub(1) as u32;
        Store {
            n,
            chips,
            w,
            words,
            min: vec![0; n],
            max: vec![top; n],
            size: vec![chips as u32; n],
            cells: Vec::new(),
            trail: Vec::new(),
            olds: Vec::new(),
            saved: Vec::new(),
            levels: Vec::new(),
            var_stamp: vec![0; n],
            cell_stamp: Vec::new(),
            stamp: 1,
            queue: Vec::new(),
            in_queue: vec![false; n],
            nfixed: if chips == 1 { n } else { 0 },
            root: None,
        }
    }

    #[inline]
    pub fn dom(&self, x: u32) -> Dom<'_> {
        let i = x as usize;
        Dom {
            words: &self.words[i * self.w..(i + 1) * self.w],
            min: self.min[i],
            max: self.max[i],
            size: self.size[i],
        }
    }

    /// Word `k` of `x`'s domain, without its bounds and size (which
    /// [`Store::dom`] reads too): for scans over many nodes.
    #[inline]
    pub fn word(&self, x: u32, k: usize) -> u64 {
        self.words[x as usize * self.w + k]
    }

    /// The words of `x`'s domain alone, without its bounds and size.
    #[inline]
    pub fn words_of(&self, x: u32) -> &[u64] {
        &self.words[x as usize * self.w..(x as usize + 1) * self.w]
    }

    #[inline]
    pub fn is_fixed(&self, x: u32) -> bool {
        self.size[x as usize] == 1
    }

    #[inline]
    pub fn value(&self, x: u32) -> Option<u32> {
        self.is_fixed(x).then(|| self.min[x as usize])
    }

    #[inline]
    pub fn min(&self, x: u32) -> u32 {
        self.min[x as usize]
    }

    #[inline]
    pub fn max(&self, x: u32) -> u32 {
        self.max[x as usize]
    }

    /// Whether every variable has exactly one chip left.
    pub fn all_fixed(&self) -> bool {
        self.nfixed == self.n
    }

    /// The variables changed in the innermost open level (each once while
    /// the level stamps do not wrap).
    pub fn changed_in_level(&self) -> impl Iterator<Item = u32> + '_ {
        let from = self.levels.last().map_or(self.trail.len(), |l| l.0);
        self.trail[from..].iter().copied().filter(|&e| e & CELL == 0)
    }

    pub fn level(&self) -> usize {
        self.levels.len()
    }

    // ------------------------------------------------------------ cells

    /// A new trailed integer for a propagator's state.
    pub fn new_cell(&mut self, v: i64) -> u32 {
        assert!(
            self.cells.len() < CELL as usize,
            "more cells than a trail entry can name"
        );
        self.cells.push(v);
        self.cell_stamp.push(0);
        // Undone to the root, a cell made at a deeper level holds the value
        // it was made with.
        match (&mut self.root, self.levels.is_empty()) {
            (Some(root), false) => root.cells.push(v),
            _ => self.root = None,
        }
        (self.cells.len() - 1) as u32
    }

    #[inline]
    pub fn cell(&self, i: u32) -> i64 {
        self.cells[i as usize]
    }

    /// Cells `i..i + len`, for a propagator that made them in one run of
    /// [`Store::new_cell`] calls and reads several at once.
    #[inline]
    pub fn cells(&self, i: u32, len: usize) -> &[i64] {
        &self.cells[i as usize..i as usize + len]
    }

    /// Inlined: propagators set cells in their inner loops, and most sets
    /// after a cell's first in a level need no trail entry. Always: a
    /// spread sets a cell per node it reaches, and as a call of its own the
    /// set saved and restored more registers than it has instructions.
    /// The cell and its stamp are looked up once each and held while the
    /// trail grows (other vectors), not indexed again.
    #[inline(always)]
    pub fn set_cell(&mut self, i: u32, v: i64) {
        let k = i as usize;
        let cell = &mut self.cells[k];
        if *cell == v {
            return;
        }
        let stamp = &mut self.cell_stamp[k];
        if *stamp != self.stamp || self.levels.is_empty() {
            // The old value onto the trail, once per level (at the root
            // nothing is trailed, and the root's copy goes stale).
            if self.levels.is_empty() {
                forget_root(&mut self.root);
            } else {
                self.trail.push(i | CELL);
                self.olds.push(*cell);
                *stamp = self.stamp;
            }
        }
        *cell = v;
    }

    // ------------------------------------------------------------ levels

    pub fn push_level(&mut self) {
        self.levels.push((self.trail.len(), self.saved.len()));
        self.next_stamp();
    }

    /// Undoes everything since the last `push_level`.
    pub fn pop_level(&mut self) {
        let Some((t, _)) = self.levels.pop() else {
            return;
        };
        while self.trail.len() > t {
            match self.trail.pop() {
                Some(idx) if idx & CELL != 0 => {
                    let old = self.olds.pop().expect("a cell's old value");
                    self.cells[(idx & !CELL) as usize] = old;
                }
                Some(var) => {
                    let i = var as usize;
                    let at = self.saved.len() - self.w;
                    let (min, max, size) = summarize(&self.saved[at..]).expect("a saved domain is not empty");
                    self.words[i * self.w..(i + 1) * self.w].copy_from_slice(&self.saved[at..]);
                    self.saved.truncate(at);
                    if self.size[i] == 1 && size > 1 {
                        self.nfixed -= 1;
                    }
                    self.min[i] = min;
                    self.max[i] = max;
                    self.size[i] = size;
                }
                None => break,
            }
        }
        self.next_stamp();
        self.clear_queue();
    }

    /// Undoes every level: from the copy of the root when one is kept,
    /// else level by level (and then keeps a copy when that undo was long).
    pub fn pop_all(&mut self) {
        if self.levels.is_empty() {
            return;
        }
        if let Some(root) = &self.root {
            self.words.copy_from_slice(&root.words);
            self.min.copy_from_slice(&root.min);
            self.max.copy_from_slice(&root.max);
            self.size.copy_from_slice(&root.size);
            self.cells.copy_from_slice(&root.cells);
            self.nfixed = root.nfixed;
            self.trail.clear();
            self.olds.clear();
            self.saved.clear();
            self.levels.clear();
            self.next_stamp();
            self.clear_queue();
            return;
        }
        let copy = self.words.len() + self.cells.len();
        // An entry undone costs about what a few words copied do.
        let long = self.trail.len() * 8 >= copy;
        while !self.levels.is_empty() {
            self.pop_level();
        }
        if long && copy <= ROOT_COPY_WORDS {
            self.root = Some(Box::new(Root {
                words: self.words.clone(),
                min: self.min.clone(),
                max: self.max.clone(),
                size: self.size.clone(),
                cells: self.cells.clone(),
                nfixed: self.nfixed,
            }));
        }
    }

    /// Forgets the pending changes: what an undo leaves needs no waking.
    fn clear_queue(&mut self) {
        for &x in &self.queue {
            self.in_queue[x as usize] = false;
        }
        self.queue.clear();
    }

    // ------------------------------------------------------------ changes

    /// Intersects the domain of `x` with `mask`; `Ok(true)` when it shrank.
    pub fn restrict(&mut self, x: u32, mask: &[u64], why: usize) -> Result<bool, Fail> {
        let i = x as usize;
        let w = self.w;
        if w == 1 {
            return match mask.first() {
                Some(&m) => self.restrict_word(x, m, why),
                None => Ok(false),
            };
        }
        let cur = &self.words[i * w..(i + 1) * w];
        if cur.iter().zip(mask).all(|(a, m)| a & !m == 0) {
            return Ok(false);
        }
        let mut next = [0u64; 16];
        let mut heap;
        let new: &mut [u64] = if w <= 16 {
            &mut next[..w]
        } else {
            heap = vec![0u64; w];
            &mut heap
        };
        for k in 0..w {
            new[k] = cur[k] & mask.get(k).copied().unwrap_or(0);
        }
        let Some((min, max, size)) = summarize(new) else {
            return Err(Fail { constraint: why });
        };
        self.save(x);
        if size == 1 && self.size[i] > 1 {
            self.nfixed += 1;
        }
        // A loop, not copy_from_slice: a slice copy of unknown length is a
        // call to memcpy, several times the cost of the one word most
        // packages have.
        for (d, &n) in self.words[i * w..(i + 1) * w].iter_mut().zip(new.iter()) {
            *d = n;
        }
        self.min[i] = min;
        self.max[i] = max;
        self.size[i] = size;
        self.enqueue(x);
        Ok(true)
    }

    /// [`Store::restrict`] for domains of one word (packages up to 64
    /// chips): no scratch mask to clear, and the bounds read off the word.
    #[inline]
    fn restrict_word(&mut self, x: u32, mask: u64, why: usize) -> Result<bool, Fail> {
        let i = x as usize;
        let cur = self.words[i];
        if cur & !mask == 0 {
            return Ok(false);
        }
        let new = cur & mask;
        if new == 0 {
            return Err(Fail { constraint: why });
        }
        self.save(x);
        let size = new.count_ones();
        if size == 1 && self.size[i] > 1 {
            self.nfixed += 1;
        }
        self.words[i] = new;
        self.min[i] = new.trailing_zeros();
        self.max[i] = 63 - new.leading_zeros();
        self.size[i] = size;
        self.enqueue(x);
        Ok(true)
    }

    fn next_stamp(&mut self) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.var_stamp.fill(0);
            self.cell_stamp.fill(0);
            self.stamp = 1;
        }
    }

    /// Inlined into the changes: it runs once per change of a domain, and
    /// most often (a second change in a level) only compares the stamp.
    #[inline]
    fn save(&mut self, x: u32) {
        let i = x as usize;
        if self.levels.is_empty() {
            forget_root(&mut self.root);
            return;
        }
        if self.var_stamp[i] == self.stamp {
            return;
        }
        self.var_stamp[i] = self.stamp;
        self.trail.push(x);
        let w = self.w;
        if w == 1 {
            self.saved.push(self.words[i]);
        } else {
            self.saved.extend_from_slice(&self.words[i * w..(i + 1) * w]);
        }
    }

    fn enqueue(&mut self, x: u32) {
        if !self.in_queue[x as usize] {
            self.in_queue[x as usize] = true;
            self.queue.push(x);
        }
    }

    pub fn dequeue(&mut self) -> Option<u32> {
        let x = self.queue.pop()?;
        self.in_queue[x as usize] = false;
        Some(x)
    }

    /// Runs `f` on a scratch mask of this store's width (on the stack when small).
    fn with_mask<T>(&mut self, fill: u64, f: impl FnOnce(&mut Self, &mut [u64]) -> T) -> T {
        let w = self.w;
        if w <= 16 {
            let mut m = [fill; 16];
            f(self, &mut m[..w])
        } else {
            let mut m = vec![fill; w];
            f(self, &mut m)
        }
    }

    pub fn fix(&mut self, x: u32, c: u32, why: usize) -> Result<bool, Fail> {
        if !self.dom(x).contains(c) {
            return Err(Fail { constraint: why });
        }
        self.with_mask(0, |s, m| {
            m[(c / 64) as usize] = 1 << (c % 64);
            s.restrict(x, m, why)
        })
    }

    pub fn remove(&mut self, x: u32, c: u32, why: usize) -> Result<bool, Fail> {
        if !self.dom(x).contains(c) {
            return Ok(false);
        }
        self.with_mask(!0, |s, m| {
            m[(c / 64) as usize] &= !(1 << (c % 64));
            s.restrict(x, m, why)
        })
    }

    /// Removes every chip below `lo`. Inlined as far as the question
    /// whether anything goes: most bounds a propagator sends (every edge's
    /// at every change of its ends) remove nothing.
    #[inline]
    pub fn set_min(&mut self, x: u32, lo: u32, why: usize) -> Result<bool, Fail> {
        if lo <= self.min(x) {
            return Ok(false);
        }
        self.raise_min(x, lo, why)
    }

    /// [`Store::set_min`] where some chips go (or all: a failure).
    #[inline(never)]
    fn raise_min(&mut self, x: u32, lo: u32, why: usize) -> Result<bool, Fail> {
        if lo > self.max(x) {
            return Err(Fail { constraint: why });
        }
        if self.w == 1 {
            // lo <= max < 64 here.
            return self.restrict_word(x, !0u64 << lo, why);
        }
        self.cut_below(x, lo);
        Ok(true)
    }

    /// Removes every chip above `hi` (inlined as [`Store::set_min`] is).
    #[inline]
    pub fn set_max(&mut self, x: u32, hi: u32, why: usize) -> Result<bool, Fail> {
        if hi >= self.max(x) {
            return Ok(false);
        }
        self.lower_max(x, hi, why)
    }

    /// [`Store::set_max`] where some chips go (or all: a failure).
    #[inline(never)]
    fn lower_max(&mut self, x: u32, hi: u32, why: usize) -> Result<bool, Fail> {
        if hi < self.min(x) {
            return Err(Fail { constraint: why });
        }
        if self.w == 1 {
            // min <= hi < max < 64 here.
            return self.restrict_word(x, (1u64 << (hi + 1)) - 1, why);
        }
        self.cut_above(x, hi);
        Ok(true)
    }

    /// Removes the chips of `x` below `lo`, where min < lo <= max (so some
    /// go and the max stays): only the words from the min's to lo's
    /// change, and the bounds and size follow from them, where a range
    /// mask through [`Store::restrict`] built, applied and summarised
    /// every word (bounds travelling through the graph are most of the
    /// changes of a pass on a wide package).
    fn cut_below(&mut self, x: u32, lo: u32) {
        let i = x as usize;
        self.save(x);
        let words = &mut self.words[i * self.w..(i + 1) * self.w];
        let (top, b) = ((lo / 64) as usize, lo % 64);
        let mut gone = 0;
        for word in &mut words[(self.min[i] / 64) as usize..top] {
            gone += word.count_ones();
            *word = 0;
        }
        let cut = words[top] & ((1u64 << b) - 1);
        gone += cut.count_ones();
        words[top] &= !cut;
        // The max is at or above lo: a word from lo's on holds a chip.
        let k = top + words[top..].iter().position(|&w| w != 0).expect("the max stays");
        self.min[i] = k as u32 * 64 + words[k].trailing_zeros();
        self.resize(x, self.size[i] - gone);
    }

    /// Removes the chips of `x` above `hi`, where min <= hi < max: the
    /// mirror image of [`Store::cut_below`].
    fn cut_above(&mut self, x: u32, hi: u32) {
        let i = x as usize;
        self.save(x);
        let words = &mut self.words[i * self.w..(i + 1) * self.w];
        let (bottom, b) = ((hi / 64) as usize, hi % 64);
        let mut gone = 0;
        for word in &mut words[bottom + 1..=(self.max[i] / 64) as usize] {
            gone += word.count_ones();
            *word = 0;
        }
        let cut = words[bottom] & !(!0u64 >> (63 - b));
        gone += cut.count_ones();
        words[bottom] &= !cut;
        // The min is at or below hi: a word up to hi's holds a chip.
        let k = words[..=bottom].iter().rposition(|&w| w != 0).expect("the min stays");
        self.max[i] = k as u32 * 64 + 63 - words[k].leading_zeros();
        self.resize(x, self.size[i] - gone);
    }

    /// `x` lost chips and has `size` left (at least one): the fixed count
    /// and the queue follow.
    fn resize(&mut self, x: u32, size: u32) {
        let i = x as usize;
        if size == 1 && self.size[i] > 1 {
            self.nfixed += 1;
        }
        self.size[i] = size;
        self.enqueue(x);
    }

    pub fn words_per_domain(&self) -> usize {
        self.w
    }

    /// Every variable's domain words, variable by variable
    /// (`words_per_domain` each): one slice to scan for what changed.
    pub fn all_words(&self) -> &[u64] {
        &self.words
    }
}

/// A cell set at the root: the root's copy no longer holds (rare, kept
/// out of the inlined sets).
#[cold]
#[inline(never)]
fn forget_root(root: &mut Option<Box<Root>>) {
    *root = None;
}

/// The words of the chips `lo..=hi`.
pub fn range_mask(w: usize, lo: u32, hi: u32) -> Vec<u64> {
    let mut m = vec![0u64; w];
    fill_range(&mut m, lo, hi);
    m
}

/// Sets the bits of chips `lo..=hi` in `m` (which starts empty).
fn fill_range(m: &mut [u64], lo: u32, hi: u32) {
    let top = (m.len() * 64 - 1) as u32;
    let hi = hi.min(top);
    if lo > hi {
        return;
    }
    for (k, word) in m.iter_mut().enumerate() {
        let base = k as u32 * 64;
        let a = lo.max(base);
        let b = hi.min(base + 63);
        if a > b {
            continue;
        }
        let (a, b) = (a - base, b - base);
        *word = if b - a == 63 {
            !0
        } else {
            ((1u64 << (b - a + 1)) - 1) << a
        };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_wrapped_stamp_still_undoes_to_the_level_start() {
        let mut s = Store::new(1, 4);
        let c = s.new_cell(1);
        s.stamp = u32::MAX - 1;
        s.push_level();
        s.set_cell(c, 2);
        s.set_min(0, 1, 0).unwrap();
        // The stamp wraps here: both are saved again, which undoes the same.
        s.push_level();
        s.set_cell(c, 3);
        s.set_min(0, 2, 0).unwrap();
        s.set_cell(c, 4);
        s.pop_level();
        assert_eq!((s.cell(c), s.min(0)), (2, 1));
        s.pop_level();
        assert_eq!((s.cell(c), s.min(0)), (1, 0));
    }

    #[test]
    fn cells_and_domains_undo_in_order_on_one_trail() {
        let mut s = Store::new(2, 4);
        let c = s.new_cell(5);
        s.push_level();
        s.set_cell(c, 6);
        s.fix(0, 2, 0).unwrap();
        s.set_cell(c, 7);
        s.push_level();
        s.set_cell(c, 9);
        s.fix(1, 3, 0).unwrap();
        s.pop_level();
        assert_eq!((s.cell(c), s.value(1), s.value(0)), (7, None, Some(2)));
        s.pop_level();
        assert_eq!((s.cell(c), s.value(0), s.dom(0).size), (5, None, 4));
    }

    use super::*;

    #[test]
    fn restrict_and_undo() {
        let mut s = Store::new(2, 70);
        s.push_level();
        s.set_min(0, 3, 0).unwrap();
        s.set_max(0, 66, 0).unwrap();
        assert_eq!((s.min(0), s.max(0), s.dom(0).size), (3, 66, 64));
        let c = s.new_cell(5);
        s.set_cell(c, 9);
        s.push_level();
        s.fix(0, 65, 0).unwrap();
        assert_eq!(s.value(0), Some(65));
        assert!(s.remove(0, 65, 7).is_err());
        s.pop_level();
        assert_eq!(s.dom(0).size, 64);
        s.pop_level();
        assert_eq!((s.min(0), s.max(0), s.dom(0).size), (0, 69, 70));
        assert_eq!(s.cell(c), 5);
        assert_eq!(range_mask(2, 60, 70), vec![0xF << 60, 0x7F]);
    }
}

#[cfg(test)]
mod pop_all_tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    type State = (Vec<u64>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<i64>, usize);

    fn state(s: &Store) -> State {
        (
            s.words.clone(),
            s.min.clone(),
            s.max.clone(),
            s.size.clone(),
            s.cells.clone(),
            s.nfixed,
        )
    }

    /// Random levels of changes (cells made at every level, changes at
    /// the root between rounds), undone by `pop_all` and by `pop_level`
    /// one at a time: the same state each time, copy or no copy.
    #[test]
    fn pop_all_equals_undoing_every_level() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for chips in [3usize, 70] {
            let (mut a, mut b) = (Store::new(12, chips), Store::new(12, chips));
            for _ in 0..4 {
                a.new_cell(0);
                b.new_cell(0);
            }
            let mut copies = 0;
            for round in 0..60 {
                if round % 7 == 3 {
                    // A change at the root makes a kept copy stale.
                    let (x, lo) = (rng.random_range(0..12u32), rng.random_range(0..2u32));
                    let _ = a.set_min(x, lo, 0);
                    let _ = b.set_min(x, lo, 0);
                    let c = rng.random_range(0..a.cells.len() as u32);
                    a.set_cell(c, round);
                    b.set_cell(c, round);
                }
                for _ in 0..rng.random_range(1..6) {
                    a.push_level();
                    b.push_level();
                    for _ in 0..rng.random_range(0..30) {
                        match rng.random_range(0..4) {
                            0 => {
                                let v = rng.random_range(-5..5);
                                assert_eq!(a.new_cell(v), b.new_cell(v));
                            }
                            1 | 2 => {
                                let c = rng.random_range(0..a.cells.len() as u32);
                                let v = rng.random_range(-9..9);
                                a.set_cell(c, v);
                                b.set_cell(c, v);
                            }
                            _ => {
                                let x = rng.random_range(0..12u32);
                                let c = rng.random_range(0..chips as u32);
                                assert_eq!(a.remove(x, c, 0).is_ok(), b.remove(x, c, 0).is_ok());
                            }
                        }
                    }
                }
                copies += a.root.is_some() as usize;
                a.pop_all();
                while b.level() > 0 {
                    b.pop_level();
                }
                assert_eq!(state(&a), state(&b), "round {round}, {chips} chips");
                assert_eq!(a.level(), 0);
            }
            assert!(copies > 10, "the copy of the root was used in {copies} rounds");
        }
    }
}

#[cfg(test)]
mod one_word_tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The chips of `x` in `s` below 64, with its bounds and size.
    fn low(s: &Store, x: u32) -> (u64, u32, u32, u32) {
        let d = s.dom(x);
        (d.words[0], d.min, d.max, d.size)
    }

    /// Domains of one word take their own path through `restrict`,
    /// `set_min` and `set_max`: random changes, levels and undos on a
    /// store of 40 chips and on one of 100 whose chips past 40 are removed
    /// at the root leave the same domains, failures, fixed count and queue.
    /// Wider domains cut by `set_min` and `set_max` in place
    /// ([`Store::cut_below`], [`Store::cut_above`]): random bounds,
    /// restrictions, levels and undos on a store of 200 chips (four words)
    /// leave the same domains, failures, fixed count and queue as the
    /// same bounds given to `restrict` as range masks.
    #[test]
    fn bounds_cut_in_place_as_range_masks_do() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
        let (n, chips) = (8u32, 200u32);
        for _ in 0..100 {
            let (mut a, mut b) = (
                Store::new(n as usize, chips as usize),
                Store::new(n as usize, chips as usize),
            );
            for _ in 0..120 {
                let x = rng.random_range(0..n);
                let (ra, rb) = match rng.random_range(0..7) {
                    0 => {
                        a.push_level();
                        b.push_level();
                        (Ok(false), Ok(false))
                    }
                    1 => {
                        a.pop_level();
                        b.pop_level();
                        (Ok(false), Ok(false))
                    }
                    2 | 3 => {
                        let lo = rng.random_range(0..chips);
                        (a.set_min(x, lo, 1), b.restrict(x, &range_mask(4, lo, chips - 1), 1))
                    }
                    4 | 5 => {
                        let hi = rng.random_range(0..chips);
                        (a.set_max(x, hi, 2), b.restrict(x, &range_mask(4, 0, hi), 2))
                    }
                    _ => {
                        let m: Vec<u64> = (0..4).map(|_| rng.random::<u64>() | rng.random::<u64>()).collect();
                        (a.restrict(x, &m, 3), b.restrict(x, &m, 3))
                    }
                };
                assert_eq!(ra, rb);
                for y in 0..n {
                    let (da, db) = (a.dom(y), b.dom(y));
                    assert_eq!(
                        (da.words, da.min, da.max, da.size),
                        (db.words, db.min, db.max, db.size),
                        "node {y}"
                    );
                }
                assert_eq!(a.nfixed, b.nfixed);
                assert_eq!(a.queue, b.queue);
            }
        }
    }

    #[test]
    fn one_word_domains_change_as_wider_ones_do() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let (n, chips) = (10u32, 40u32);
        for _ in 0..50 {
            let (mut a, mut b) = (Store::new(n as usize, chips as usize), Store::new(n as usize, 100));
            let mut below = vec![0u64; 2];
            below[0] = (1u64 << chips) - 1;
            for x in 0..n {
                b.restrict(x, &below, 0).unwrap();
            }
            b.queue.clear();
            b.in_queue.iter_mut().for_each(|q| *q = false);
            for _ in 0..80 {
                let x = rng.random_range(0..n);
                let (ra, rb) = match rng.random_range(0..6) {
                    0 => {
                        a.push_level();
                        b.push_level();
                        (Ok(false), Ok(false))
                    }
                    1 => {
                        a.pop_level();
                        b.pop_level();
                        (Ok(false), Ok(false))
                    }
                    2 => {
                        let lo = rng.random_range(0..chips);
                        (a.set_min(x, lo, 1), b.set_min(x, lo, 1))
                    }
                    3 => {
                        let hi = rng.random_range(0..chips);
                        (a.set_max(x, hi, 2), b.set_max(x, hi, 2))
                    }
                    _ => {
                        let m: u64 = rng.random::<u64>() | rng.random::<u64>();
                        (a.restrict(x, &[m], 3), b.restrict(x, &[m, !0], 3))
                    }
                };
                assert_eq!(ra, rb);
                for y in 0..n {
                    assert_eq!(low(&a, y), low(&b, y), "node {y}");
                }
                assert_eq!(a.nfixed, b.nfixed);
                assert_eq!(a.queue, b.queue);
            }
        }
    }
}
