//! A slowest stage split into more chips, the pipeline above (or below)
//! it moved along into chips it leaves unused: the inverse of the walk's
//! merge. Where the activations are large, a chip's stage is its compute
//! plus the time its outgoing tensors take on the link; no move of a few
//! nodes shortens it, because any boundary there sends as much. Halving
//! the compute behind each such boundary does, at the price of one more
//! boundary and one more chip, which a pipeline that leaves chips unused
//! can pay. A boundary inside a stage may cut a tensor that comes from the
//! stage before (a block whose input also skips to its end, as a channel
//! split's untouched half does), so a split re-cuts a window of a slowest
//! chip and its neighbours (up to [`WIDEST`] chips) onto one or two chips
//! more. Every transfer stays between neighbouring chips, and the
//! analytical model's stage times pick the cuts.

use crate::cost::CostModel;
use crate::strategy::anneal::{Neighbours, PLATEAU_POWER};
use mcm_core::problem::Problem;

/// Positions judged per cut at most in one pass, spread evenly over
/// those it may take.
const MOST_CUTS: usize = 16;

/// The widest window of used chips re-cut.
const WIDEST: u32 = 4;

/// The most chips a re-cut adds to its window.
const MOST_ADDED: u32 = 2;

/// Passes over a window's cuts, each moving every cut in turn to where the
/// model ranks the partition best.
const PASSES: usize = 2;

/// What a split needs of a problem beside the walk's [`Neighbours`] (the
/// adjacency and flops): its nodes in pipeline order, and the weights that
/// move with their only reader.
pub(super) struct Splits {
    order: Vec<u32>,
    /// Per node: the one node that reads it when it is a weight
    /// ([`Neighbours::is_tied`]), which it follows.
    reader: Vec<Option<u32>>,
}

/// Which way the chips beyond the window move to make room.
#[derive(Clone, Copy)]
enum Side {
    /// The chips from the window's top up to the first unused one above
    /// move up by one.
    Up,
    /// The chips from the window's bottom down to the first unused one
    /// below move down by one.
    Down,
}

/// A window of used chips `lo..=hi` re-cut onto `added` chips more, the
/// chips between it and `room` (the first of `added` unused chips beyond
/// it on `side`) moved `added` along towards `room`.
struct Window {
    lo: u32,
    hi: u32,
    room: u32,
    side: Side,
    added: u32,
}

/// How a partition ranks: its slowest stage, then the sum of every
/// stage's 16th power (in units of the slowest stage before the split),
/// which falls when any stage near the slowest shortens, so that moving
/// one cut of several counts while another stage is still the slowest.
type Rank = (f64, f64);

/// The power of [`Rank`]'s sum: the anneal strategy's plateau term's.
const P: i32 = PLATEAU_POWER;

impl Splits {
    pub(super) fn new(problem: &Problem, nb: &Neighbours) -> Splits {
        let reader = (0..nb.succ.len())
            .map(|u| nb.is_tied(u).then(|| nb.succ[u][0]))
            .collect();
        Splits {
            order: problem.graph.pipeline_order(),
            reader,
        }
    }

    /// The re-cut of one of `at`'s slowest chips, alone or with up to
    /// [`WIDEST`] - 1 used neighbours, onto up to [`MOST_ADDED`] chips more, that most
    /// shortens the slowest stage by the analytical model (or, at the same
    /// slowest stage, has a smaller [`Rank`] sum); `None` when none does
    /// either, or no chip is free.
    pub(super) fn best(&self, nb: &Neighbours, model: &CostModel, at: &[u32], chips: u32) -> Option<Vec<u32>> {
        let stages = model.stage_times(at).ok()?;
        let slowest = stages.iter().copied().fold(0.0, f64::max);
        if slowest <= 0.0 {
            return None;
        }
        let rank = |chips: &[u32]| -> Option<Rank> {
            let stages = model.stage_times(chips).ok()?;
            let max = stages.iter().copied().fold(0.0, f64::max);
            Some((max, stages.iter().map(|s| (s / slowest).powi(P)).sum()))
        };
        let now = rank(at)?;
        let mut used = vec![false; chips as usize];
        for &c in at {
            *used.get_mut(c as usize)? = true;
        }
        let mut best: Option<(Rank, Vec<u32>)> = None;
        for c in (0..chips).filter(|&c| stages[c as usize] >= 0.999 * now.0) {
            for w in 1..=WIDEST {
                for lo in c.saturating_sub(w - 1)..=c {
                    let hi = lo + w - 1;
                    if hi >= chips || !(lo..=hi).all(|x| used[x as usize]) {
                        continue;
                    }
                    for (side, added) in [Side::Up, Side::Down]
                        .into_iter()
                        .flat_map(|s| (1..=MOST_ADDED).map(move |e| (s, e)))
                    {
                        let Some(room) = room(&used, lo, hi, side, added) else {
                            continue;
                        };
                        let window = Window {
                            lo,
                            hi,
                            room,
                            side,
                            added,
                        };
                        let Some((r, cand)) = self.recut(nb, &rank, at, &window) else {
                            continue;
                        };
                        if better(r, best.as_ref().map_or(now, |b| b.0)) {
                            best = Some((r, cand));
                        }
                    }
                }
            }
        }
        best.map(|(_, chips)| chips)
    }

    /// The best re-cut of the nodes of the window's chips onto as many
    /// chips more as it adds, in pipeline order, the chips from the window
    /// to its room moved along (see [`Window`]), and its rank. Every transfer stays between
    /// neighbouring chips: what the window reads from below reaches only its
    /// first segment, what it sends above leaves only its last, and a
    /// segment feeds only itself and the next (the order is topological, so
    /// nothing feeds back). The cuts start where they split the window's
    /// compute evenly; each pass moves each cut, in turn, to the position
    /// the model ranks best.
    fn recut(
        &self,
        nb: &Neighbours,
        rank: &dyn Fn(&[u32]) -> Option<Rank>,
        at: &[u32],
        win: &Window,
    ) -> Option<(Rank, Vec<u32>)> {
        let (lo, hi) = (win.lo, win.hi);
        let inside = |v: u32| (lo..=hi).contains(&at[v as usize]);
        let on: Vec<u32> = self
            .order
            .iter()
            .copied()
            .filter(|&u| inside(u) && self.reader[u as usize].is_none())
            .collect();
        let mut pos = vec![usize::MAX; at.len()];
        for (i, &u) in on.iter().enumerate() {
            pos[u as usize] = i;
        }
        let reads_outside = |u: u32| {
            nb.pred[u as usize]
                .iter()
                .any(|&p| self.reader[p as usize].is_none() && !inside(p))
        };
        let sends_outside = |u: u32| nb.succ[u as usize].iter().any(|&s| !inside(s));
        // Every cut comes after the nodes reading from below and before
        // those sending above; reach[i]: the furthest position the first
        // i nodes feed, which the cut after next must pass.
        let first = on.iter().rposition(|&u| reads_outside(u)).map_or(1, |i| i + 1);
        let last = on.iter().position(|&u| sends_outside(u)).unwrap_or(on.len());
        let last = last.min(on.len().saturating_sub(1));
        let mut reach = vec![0; on.len() + 1];
        for (i, &u) in on.iter().enumerate() {
            let far = nb.succ[u as usize]
                .iter()
                .map(|&s| pos[s as usize])
                .filter(|&p| p != usize::MAX);
            reach[i + 1] = reach[i].max(far.max().unwrap_or(0));
        }
        // k cuts make the window's chips and the added ones.
        let k = (hi - lo + win.added) as usize;
        // The cuts that split the compute evenly, pushed into their ranges.
        let total: f64 = on.iter().map(|&u| nb.flops[u as usize]).sum();
        let mut cuts = Vec::with_capacity(k);
        let mut sum = 0.0;
        let mut i = 0;
        for t in 1..=k {
            while i < on.len() && sum < total * t as f64 / (k + 1) as f64 {
                sum += nb.flops[on[i] as usize];
                i += 1;
            }
            cuts.push(i);
        }
        // Where cut t may go at the earliest: past the nodes reading from
        // below, and past the cut before it and all that its nodes feed.
        let floor = |cuts: &[usize], t: usize| match t {
            0 => first,
            _ => (cuts[t - 1] + 1).max(reach[cuts[t - 1]] + 1),
        };
        for t in 0..k {
            cuts[t] = cuts[t].max(floor(&cuts, t));
            if cuts[t] > last {
                return None;
            }
        }
        let mut chips = self.place(at, &on, &cuts, win);
        let mut best = rank(&chips)?;
        for _ in 0..PASSES {
            for t in 0..k {
                let from = floor(&cuts, t);
                let to = match cuts.get(t + 1) {
                    // Before the next cut, and feeding nothing past it.
                    Some(&next) => (from..next).rev().find(|&x| reach[x] < next).unwrap_or(from),
                    None => last,
                };
                if from > to {
                    continue;
                }
                let step = (to + 1 - from).div_ceil(MOST_CUTS);
                for x in (from..=to).step_by(step) {
                    if x == cuts[t] {
                        continue;
                    }
                    let mut moved = cuts.clone();
                    moved[t] = x;
                    let cand = self.place(at, &on, &moved, win);
                    let Some(r) = rank(&cand) else { continue };
                    if better(r, best) {
                        (best, cuts, chips) = (r, moved, cand);
                    }
                }
            }
        }
        Some((best, chips))
    }

    /// `at` with the chips from the window to its room moved along, and
    /// the window's nodes `on` (in pipeline order) cut at `cuts` onto the
    /// window's chips and the ones freed beside them; a weight follows its
    /// reader wherever the reader went.
    fn place(&self, at: &[u32], on: &[u32], cuts: &[usize], win: &Window) -> Vec<u32> {
        let (lo, hi, room, e) = (win.lo, win.hi, win.room, win.added);
        let mut out: Vec<u32> = at
            .iter()
            .map(|&x| match win.side {
                Side::Up if x > hi && x < room => x + e,
                Side::Down if x < lo && x > room => x - e,
                _ => x,
            })
            .collect();
        let base = match win.side {
            Side::Up => lo,
            Side::Down => lo - e,
        };
        for (i, &u) in on.iter().enumerate() {
            out[u as usize] = base + cuts.iter().filter(|&&k| i >= k).count() as u32;
        }
        for (w, r) in self.reader.iter().enumerate() {
            if let Some(r) = *r {
                if out[r as usize] != at[r as usize] {
                    out[w] = out[r as usize];
                }
            }
        }
        out
    }
}

/// Whether a partition ranked `a` is faster than one ranked `b`: a slowest
/// stage shorter by 0.1%, or as short with a smaller sum.
fn better(a: Rank, b: Rank) -> bool {
    a.0 < 0.999 * b.0 || (a.0 <= b.0 && a.1 < b.1 * (1.0 - 1e-9))
}

/// The first chip `used` leaves empty beyond the window `lo..=hi` on
/// `side`, when it and the `added` - 1 chips after it (away from the
/// window) are all empty.
fn room(used: &[bool], lo: u32, hi: u32, side: Side, added: u32) -> Option<u32> {
    let free = |x: u32| !used[x as usize];
    match side {
        Side::Up => {
            let x = (hi + 1..used.len() as u32).find(|&x| free(x))?;
            (x..x + added)
                .all(|y| (y as usize) < used.len() && free(y))
                .then_some(x)
        }
        Side::Down => {
            let x = (0..lo).rev().find(|&x| free(x))?;
            (x + 1 >= added && (x + 1 - added..=x).all(free)).then_some(x)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Splits;
    use crate::cost::CostModel;
    use crate::strategy::anneal::Neighbours;
    use crate::strategy::relay::tests::{compile, valid};

    /// Six 4-GFLOP ops in a chain sending 1 MB tensors, on a ring of five
    /// chips where the link takes as long as an op computes, three ops on
    /// chip 1: the split, valid before any repair, spreads them over free
    /// chips and shortens the slowest stage (4 ms: three ops and a send).
    #[test]
    fn a_slowest_stage_splits_into_unused_chips_valid_as_it_comes() {
        let mut g = String::from("let g = graph {\n");
        for i in 0..6 {
            g += &format!("    n{i} {{ flops = 4 GFLOP, output_bytes = 1 MB }}\n");
            if i > 0 {
                g += &format!("    n{} -> n{i}\n", i - 1);
            }
        }
        g += "}\n";
        let p = compile(
            &g,
            "ring(n = 5, memory = 1 GiB, compute = 4 TFLOP/s, bandwidth = 1 GB/s)",
        );
        let model = CostModel::new(&p).unwrap();
        let at = [0, 1, 1, 1, 2, 2];
        assert!(valid(&p, &at));
        let nb = Neighbours::new(&p);
        let splits = Splits::new(&p, &nb);
        let s = splits.best(&nb, &model, &at, 5).expect("a split");
        assert!(valid(&p, &s), "{s:?}");
        let slowest = |c: &[u32]| model.stage_times(c).unwrap().into_iter().fold(0.0, f64::max);
        assert!(slowest(&s) < 0.999 * slowest(&at), "{s:?}");
        let used = |c: &[u32]| c.iter().collect::<std::collections::HashSet<_>>().len();
        assert!(used(&s) > used(&at), "{s:?}");
        // No chip is free beside the pipeline's ends once all five are used.
        let full = [0, 1, 2, 2, 3, 4];
        assert!(valid(&p, &full));
        assert_eq!(splits.best(&nb, &model, &full, 5), None);
    }
}
