//! Pipeline partitioning by dynamic programming, after the thesis seed:
//! cut a topological order of the nodes into contiguous stages, one per
//! chip in id order, minimising the slowest stage's estimated time (its
//! compute plus the bytes it sends on), with each stage's weights within
//! its chip's memory; the solver then makes each cut valid by FIX.
//!
//! The DP yields the best cut for every number of chips used; those are
//! the candidates, evaluated from the best estimate on while the budget
//! lasts. On a package with a chip faster than one before it, the
//! candidates also include cuts that leave each chip before the fast one a
//! single node without inputs or flops ([`filler_cuts`]).
//!
//! Rules beyond the stdlib's shape the cuts through the solver: the order cut
//! puts first the nodes whose root domains start at lower chips (`input_ids`,
//! alone allowed on chip 0, before the embeddings' weights), a stage goes
//! only on a chip that every one of its nodes' root domains allows, a chip
//! some node may not take can be left empty (FIX then fills it if `no_skip`
//! asks), and each cut is settled (FIX, then memory relief) before it is
//! judged. When the root domains admit every plain cut (as without such
//! rules), the cuts are as before.
//!
//! Where the rules forbid an edge that skips a stage (`acyclic_flow` with
//! `triangle_dependency`), the candidates also include cuts of the pipeline
//! order and of a late order ([`late_order`]) in which no edge skips a
//! stage, listed first, taking turns with the others.
//!
//! Where the graph's weights exceed a chip's memory, the candidates also
//! include cuts whose stages may stream weights ([`relay`]): a stage over
//! its chip's memory keeps what fits and reads the rest from chips just
//! below it that compute nothing, its stage time then also bounded by the
//! link into it, which carries the stream and its inputs. Such cuts move
//! gathers onto their table's chip ([`relay::gathers_back`]) and are
//! estimated so. A chip that holds only weights is no stage when the cuts
//! without skips are put first.
//!
//! Under `minimize step_time` the stages are no pipeline: the cuts are
//! proposals like any strategy's, each judged by the step time.
//!
//! A problem that does not require every pipeline rule of the standard
//! library has a stricter twin ([`Problem::stricter`]), whose cuts FIX
//! settles into contiguous stages where the problem's own rules may leave
//! activations and weights together. The first half of the budget is dp's
//! run on the twin, sample for sample ([`Search::replay_on`]; each of its
//! partitions is valid here too), the rest the problem's own cuts: so dp
//! under fewer rules ends no worse than dp under the twin's within half the
//! budget, and no worse than its whole run when that fits in the half (dp
//! judges at most one partition a cut).

use super::{relay, settle_full, Allowed, Search, Strategy};
use crate::cost::CostModel;
use mcm_core::problem::Problem;
use mcm_solver::{Infeasible, Order};

pub struct Dp;

/// The best cut of `order` for each number of chips `k` (1..=C) with its
/// estimated latency, best first; cuts that fit no memory are left out.
pub fn pipeline_cuts(problem: &Problem, order: &[u32]) -> Vec<(f64, Vec<u32>)> {
    let all = Allowed::all(problem.graph.num_placed(), problem.package.num_chips());
    cuts_within(problem, order, &all)
}

/// [`pipeline_cuts`] within the chips each node's root domain allows (see
/// the module's comment); identical cuts are listed once.
pub fn cuts_within(problem: &Problem, order: &[u32], allowed: &Allowed) -> Vec<(f64, Vec<u32>)> {
    cuts_from(problem, order, allowed, 0, &[])
}

/// Orders up to this long are cut at any position; longer ones at the
/// bounds of [`GRID`] blocks of consecutive nodes.
const EXACT_NODES: usize = 20_000;

/// Blocks of a long order: the grid's table takes GRID² steps a chip and
/// GRID² numbers of memory.
const GRID: usize = 1024;

/// What the table of [`cuts_from`] reads: per position along the order,
/// its last consumer's position, the largest tensor it sends, and prefix
/// sums of flops and weights.
struct Cut<'a> {
    order: &'a [u32],
    allowed: &'a Allowed,
    first: usize,
    compute: &'a [f64],
    memory: &'a [f64],
    bandwidth: &'a [f64],
    last: &'a [usize],
    size: &'a [f64],
    flops: &'a [f64],
    params: &'a [f64],
    /// Under `adjacent`: per position, the furthest position an edge from
    /// before it reaches; a stage [i, j) must hold every consumer of the
    /// nodes before i (`reach[i] < j`), so that no edge skips a stage.
    reach: Option<&'a [usize]>,
    /// When stages may stream weights ([`relay`]): per position, whether it
    /// is a weight that may live apart from its readers.
    movable: Option<&'a [bool]>,
}

/// `f[k][j]`: the best slowest stage for the first j positions (of a
/// grid) on chips 0..k; `arg[k][j]`: where that stage starts; `relays[k][j]`:
/// how many chips below that stage relay its weights (the stage before
/// ends on chip `k - 2 - relays`).
type Table = (Vec<Vec<f64>>, Vec<Vec<usize>>, Vec<Vec<usize>>);

impl Cut<'_> {
    /// Whether a stage from position `i` to `j` leaves an edge from an
    /// earlier stage reaching past it.
    fn skipped(&self, i: usize, j: usize) -> bool {
        self.reach.is_some_and(|r| r[i] >= j)
    }

    fn stage(&self, chip: usize, i: usize, j: usize, sent: f64) -> f64 {
        let n = self.order.len();
        let out = if j < n { sent / self.bandwidth[chip] } else { 0.0 };
        (self.flops[j] - self.flops[i]) / self.compute[chip] + out
    }

    /// How many relays below `chip` hold `bytes` of streamed weights, when
    /// at most [`relay::MOST_RELAYS`] chips from `self.first` on, each
    /// free to take any node, do.
    fn relays_for(&self, chip: usize, bytes: f64) -> Option<usize> {
        let mut held = 0.0;
        for r in 1..=relay::MOST_RELAYS.min(chip.saturating_sub(self.first)) {
            let below = chip - r;
            if self.allowed.restricted(below) {
                return None;
            }
            held += self.memory[below];
            if held >= bytes {
                return Some(r);
            }
        }
        None
    }

    /// The table over every position.
    #[allow(clippy::needless_range_loop)] // row k of the table reads row k - 1
    fn exact_table(&self) -> Table {
        let (n, c) = (self.order.len(), self.compute.len());
        let inf = f64::INFINITY;
        let mut f = vec![vec![inf; n + 1]; c + 1];
        let mut arg = vec![vec![0usize; n + 1]; c + 1];
        let mut relays = vec![vec![0usize; n + 1]; c + 1];
        // crossing[i]: bytes of the tensors made before position i and
        // read at or after it.
        let mut crossing = vec![0f64; n + 1];
        for x in 0..n {
            if self.last[x] > x {
                crossing[x + 1] += self.size[x];
                crossing[self.last[x] + 1] -= self.size[x];
            }
        }
        for i in 1..=n {
            crossing[i] += crossing[i - 1];
        }
        f[self.first][0] = 0.0;
        for k in self.first + 1..=c {
            let chip = k - 1;
            let may_skip = self.allowed.restricted(chip);
            let memory = self.memory[chip];
            // A streaming stage keeps at most this much resident.
            let keep = relay::RESIDENT * memory;
            let most = memory * (1 + relay::MOST_RELAYS) as f64;
            for j in 0..=n {
                if may_skip && f[k - 1][j] < f[k][j] {
                    // Chip `chip` left empty.
                    f[k][j] = f[k - 1][j];
                    arg[k][j] = j;
                }
                let mut sent = 0.0;
                // Weights of the stage read by it alone: what it may stream.
                let mut own = 0.0;
                for i in (0..j).rev() {
                    if self.last[i] >= j {
                        sent += self.size[i];
                    }
                    let w = self.params[j] - self.params[i];
                    let bytes = self.params[i + 1] - self.params[i];
                    if self.movable.is_some_and(|m| m[i]) && self.last[i] < j && bytes <= memory - keep {
                        own += bytes;
                    }
                    let too_heavy = if self.movable.is_some() { w > most } else { w > memory };
                    if too_heavy || !self.allowed.allows(self.order[i], chip) {
                        break;
                    }
                    // Within memory the stage reads its weights in place;
                    // beyond it streams what it cannot keep from relays.
                    // Where stages may stream, one keeps room for its live
                    // tensors as a streaming one does.
                    let in_place = if self.movable.is_some() { keep } else { memory };
                    let (r, streamed) = if w <= in_place {
                        (0, 0.0)
                    } else if w - keep > own {
                        continue;
                    } else {
                        match self.relays_for(chip, w - keep) {
                            Some(r) => (r, w - keep),
                            None => continue,
                        }
                    };
                    let from = k - 1 - r;
                    if f[from][i] == inf || self.skipped(i, j) {
                        continue;
                    }
                    let mut v = f[from][i].max(self.stage(chip, i, j, sent));
                    if r > 0 {
                        // The link into the stage carries its stream and
                        // the tensors it receives.
                        v = v.max((streamed + crossing[i]) / self.bandwidth[chip - 1]);
                    }
                    if v < f[k][j] {
                        f[k][j] = v;
                        arg[k][j] = i;
                        relays[k][j] = r;
                    }
                }
            }
        }
        (f, arg, relays)
    }

    /// The table over the positions of `grid` (ascending, from 0 to the
    /// order's length): a stage spans whole blocks. The bytes a stage
    /// sends come from a table of each block's tensors still needed at
    /// each later bound (built in one pass over the nodes).
    #[allow(clippy::needless_range_loop)] // row k of the table reads row k - 1
    fn grid_table(&self, grid: &[usize]) -> Table {
        let (m, c) = (grid.len() - 1, self.compute.len());
        // live[b * (m + 1) + t]: bytes of block b's tensors whose last
        // consumer is at or past bound t (t > b), as differences first.
        let mut live = vec![0f64; m * (m + 1)];
        let bound_of = |x: usize| grid.partition_point(|&p| p <= x);
        for b in 0..m {
            for x in grid[b]..grid[b + 1] {
                // Bounds t with grid[t] in (x, last[x]]: from b + 1 to the
                // last bound at or before last[x].
                let upto = bound_of(self.last[x]);
                if upto > b + 1 {
                    live[b * (m + 1) + b + 1] += self.size[x];
                    if upto <= m {
                        live[b * (m + 1) + upto] -= self.size[x];
                    }
                }
            }
            for t in b + 2..=m {
                live[b * (m + 1) + t] += live[b * (m + 1) + t - 1];
            }
        }
        // Blocks a chip takes whole: every node of them allowed there.
        let ok = |b: usize, chip: usize| (grid[b]..grid[b + 1]).all(|x| self.allowed.allows(self.order[x], chip));
        let inf = f64::INFINITY;
        let mut f = vec![vec![inf; m + 1]; c + 1];
        let mut arg = vec![vec![0usize; m + 1]; c + 1];
        f[self.first][0] = 0.0;
        for k in self.first + 1..=c {
            let chip = k - 1;
            let may_skip = self.allowed.restricted(chip);
            let allowed: Vec<bool> = (0..m).map(|b| ok(b, chip)).collect();
            for t in 0..=m {
                if may_skip && f[k - 1][t] < f[k][t] {
                    f[k][t] = f[k - 1][t];
                    arg[k][t] = t;
                }
                let j = grid[t];
                let mut sent = 0.0;
                for b in (0..t).rev() {
                    sent += live[b * (m + 1) + t];
                    let i = grid[b];
                    if self.params[j] - self.params[i] > self.memory[chip] || !allowed[b] {
                        break;
                    }
                    if f[k - 1][b] == inf || self.skipped(i, j) {
                        continue;
                    }
                    let v = f[k - 1][b].max(self.stage(chip, i, j, sent));
                    if v < f[k][t] {
                        f[k][t] = v;
                        arg[k][t] = b;
                    }
                }
            }
        }
        (f, arg, vec![vec![0; m + 1]; c + 1])
    }
}

/// [`cuts_within`] of `order` over chips `first..` only, the nodes of
/// `placed` (not in `order`) on their given chips.
fn cuts_from(
    problem: &Problem,
    order: &[u32],
    allowed: &Allowed,
    first: usize,
    placed: &[(u32, u32)],
) -> Vec<(f64, Vec<u32>)> {
    cuts_over(problem, order, allowed, first, placed, EXACT_NODES, Shape::default())
}

/// Which cuts [`cuts_over`] makes beyond plain contiguous stages.
#[derive(Clone, Copy, Debug, Default)]
struct Shape {
    /// No edge skips a stage (each stage holds every consumer of the
    /// stages before it that later stages read).
    adjacent: bool,
    /// A stage may stream the weights it alone reads from relays below it
    /// ([`relay`]) where its chip cannot hold them (exact tables only).
    stream: bool,
    /// A stage's send to the next chip costs every link of the route there
    /// ([`next_bandwidth`]).
    routed: bool,
}

/// Per chip, the rate of its sends to the next chip as the table charges
/// them: the link to the next chip; where there is none, with `routed`,
/// the route there with every link's time charged to the chip (a row's end
/// on a mesh relays the tensor over the row's links, whose chips pay it),
/// else the slowest link out.
fn next_bandwidth(p: &mcm_core::package::Package, routed: bool) -> Vec<f64> {
    let c = p.num_chips() as u32;
    let slowest_out = |i: u32| {
        (0..p.links.len())
            .filter(|&l| p.links[l].src == i)
            .map(|l| p.bandwidth_or_unit(l))
            .fold(f64::INFINITY, f64::min)
    };
    let route_s = |i: u32| {
        let (mut at, mut s) = (i, 0.0);
        while at != i + 1 {
            let y = p.next_hop(at, i + 1)?;
            s += 1.0 / p.bandwidth_or_unit(p.link(at, y)?);
            at = y;
        }
        Some(s)
    };
    (0..c)
        .map(|i| match p.link(i, i + 1) {
            Some(l) => p.bandwidth_or_unit(l),
            None if routed && i + 1 < c => route_s(i).map_or_else(|| slowest_out(i), |s| 1.0 / s),
            None => slowest_out(i),
        })
        .collect()
}

/// [`cuts_from`], cutting anywhere on orders up to `exact_nodes` long and
/// on the grid of blocks beyond.
#[allow(clippy::needless_range_loop)] // a cut reads rows first + 1..=k of the table
fn cuts_over(
    problem: &Problem,
    order: &[u32],
    allowed: &Allowed,
    first: usize,
    placed: &[(u32, u32)],
    exact_nodes: usize,
    shape: Shape,
) -> Vec<(f64, Vec<u32>)> {
    let g = &problem.graph;
    let p = &problem.package;
    let (n, c) = (order.len(), p.num_chips());
    if n == 0 || c <= first {
        return Vec::new();
    }
    let compute: Vec<f64> = (0..c).map(|i| p.compute_or_unit(i as u32)).collect();
    let memory: Vec<f64> = (0..c).map(|i| p.memory_or_unlimited(i as u32)).collect();
    let bandwidth = next_bandwidth(p, shape.routed);
    // Positions along `order`; nodes not in it count as before it.
    let mut pos = vec![0usize; g.num_placed()];
    for (i, &d) in order.iter().enumerate() {
        pos[d as usize] = i;
    }
    // Per position: last consumer's position and the largest tensor sent.
    let mut last = vec![0usize; n];
    let mut size = vec![0f64; n];
    let inside: Vec<bool> = {
        let mut v = vec![false; g.num_placed()];
        order.iter().for_each(|&d| v[d as usize] = true);
        v
    };
    // Streaming cuts move gathers onto their table's chip
    // ([`relay::gathers_back`]): the gather's small tensor crosses the
    // links in place of the table's.
    let gathers = if shape.stream {
        relay::gathers(problem)
    } else {
        Vec::new()
    };
    for e in g.placed_edges() {
        if !inside[e.src as usize] || !inside[e.dst as usize] {
            continue;
        }
        let (s, t) = (pos[e.src as usize], pos[e.dst as usize]);
        last[s] = last[s].max(t);
        let gather = gathers.get(e.dst as usize).copied().unwrap_or(false) && g.placed_node(e.src).params > 0;
        let bytes = if gather {
            g.placed_node(e.dst).output_bytes
        } else {
            e.bytes
        };
        size[s] = size[s].max(bytes as f64);
    }
    let mut flops = vec![0f64; n + 1];
    let mut params = vec![0f64; n + 1];
    for (i, &d) in order.iter().enumerate() {
        let node = g.placed_node(d);
        flops[i + 1] = flops[i] + node.flops as f64;
        params[i + 1] = params[i] + node.params as f64;
    }
    let reach: Vec<usize> = std::iter::once(0)
        .chain(last.iter().scan(0, |r, &l| {
            *r = (*r).max(l);
            Some(*r)
        }))
        .collect();
    let movable: Vec<bool> = {
        let m = relay::movable(problem);
        order.iter().map(|&u| m[u as usize]).collect()
    };
    let cut = Cut {
        reach: shape.adjacent.then_some(&reach[..]),
        movable: shape.stream.then_some(&movable[..]),
        order,
        allowed,
        first,
        compute: &compute,
        memory: &memory,
        bandwidth: &bandwidth,
        last: &last,
        size: &size,
        flops: &flops,
        params: &params,
    };
    // Positions a stage may end at: every one, or on long orders the
    // bounds of `GRID` blocks (the exact table is quadratic in the nodes
    // where memory does not cut stages short: hours at a million).
    let (grid, (f, arg, relays)) = if n <= exact_nodes {
        ((0..=n).collect::<Vec<usize>>(), cut.exact_table())
    } else {
        let mut grid: Vec<usize> = (0..=GRID).map(|b| b * n / GRID).collect();
        grid.dedup();
        let table = cut.grid_table(&grid);
        (grid, table)
    };
    let m = grid.len() - 1;
    // The dynamic check of streaming stages' memory.
    let model = if shape.stream {
        CostModel::new(problem).ok()
    } else {
        None
    };
    let mut cuts: Vec<(f64, Vec<u32>)> = Vec::new();
    for k in first + 1..=c {
        if f[k][m] == f64::INFINITY {
            continue;
        }
        let mut chips = vec![0u32; g.num_placed()];
        for &(u, chip) in placed {
            chips[u as usize] = chip;
        }
        let mut streams = Vec::new();
        let (mut kk, mut j) = (k, m);
        while kk > first {
            let (i, r) = (arg[kk][j], relays[kk][j]);
            for &d in &order[grid[i]..grid[j]] {
                chips[d as usize] = (kk - 1) as u32;
            }
            if r > 0 {
                streams.push(relay::Stream {
                    chip: kk - 1,
                    relays: kk - 1 - r..kk - 1,
                    weights: (grid[i]..grid[j])
                        .filter(|&x| movable[x] && last[x] < grid[j])
                        .map(|x| order[x])
                        .collect(),
                });
            }
            j = i;
            kk -= 1 + r;
        }
        if shape.stream {
            relay::gathers_back(problem, &mut chips);
        }
        if !streams.is_empty() {
            relay::place(problem, &mut chips, &streams);
            if let Some(model) = &model {
                relay::relieve(model, problem, &mut chips, &streams);
            }
        }
        if !cuts.iter().any(|(_, c)| *c == chips) {
            cuts.push((f[k][m], chips));
        }
    }
    cuts.sort_by(|a, b| a.0.total_cmp(&b.0));
    cuts
}

/// The cuts dp judges: the plain ones when the root domains admit them all
/// (problems the stdlib shape suits keep their candidates), else those
/// within the root domains (the plain ones if there are none).
pub(super) fn candidates(problem: &Problem, allowed: &Allowed) -> Vec<(f64, Vec<u32>)> {
    let mut cuts = stage_cuts(problem, allowed, false);
    for cut in filler_cuts(problem, allowed) {
        if !cuts.iter().any(|(_, c)| *c == cut.1) {
            cuts.push(cut);
        }
    }
    cuts.sort_by(|a, b| a.0.total_cmp(&b.0));
    if adjacent_stages(problem) {
        cuts = without_skips_first(problem, cuts);
    }
    if next_bandwidth(&problem.package, true) == next_bandwidth(&problem.package, false) {
        return cuts;
    }
    // Where a chip reaches the next over several links (a mesh's row ends),
    // the cuts whose table charges the whole route take turns with the
    // others: each kind ranks some packages' best cut late (the plain
    // table puts big tensors on row ends, the routed one leaves the chips
    // before a row end light), and `auto` judges only the first few.
    let mut routed = stage_cuts(problem, allowed, true);
    routed.retain(|(_, c)| !cuts.iter().any(|(_, x)| x == c));
    if adjacent_stages(problem) {
        routed = without_skips_first(problem, routed);
    }
    take_turns(cuts, routed)
}

/// `a` and `b` in turns, `a`'s first; the longer one's rest at the end.
fn take_turns<T>(a: Vec<T>, b: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let mut b = b.into_iter();
    for x in a {
        out.push(x);
        out.extend(b.next());
    }
    out.extend(b);
    out
}

/// Cuts whose every edge stays on its chip or goes to the next, taking
/// turns with the others, each kind best estimate first. A cut with an edge
/// that skips a stage has an estimate the rules do not allow (FIX moves its
/// nodes), so by estimate alone those came first and a strategy judging
/// only the first few (`auto`) never met the others.
fn without_skips_first(problem: &Problem, cuts: Vec<(f64, Vec<u32>)>) -> Vec<(f64, Vec<u32>)> {
    let (others, adjacent): (Vec<_>, Vec<_>) = cuts.into_iter().partition(|(_, c)| skips_a_stage(problem, c));
    take_turns(adjacent, others)
}

/// Whether an edge of `chips` passes a stage: a chip between its ends that
/// holds a node with inputs (a chip holding only weights and other nodes
/// without inputs relays, it is no stage).
fn skips_a_stage(problem: &Problem, chips: &[u32]) -> bool {
    let g = &problem.graph;
    let c = problem.package.num_chips();
    let mut stage = vec![false; c + 1];
    for e in g.placed_edges() {
        stage[chips[e.dst as usize] as usize] = true;
    }
    // before[d]: stages among chips 0..d.
    let before: Vec<usize> = std::iter::once(0)
        .chain(stage.iter().scan(0, |n, &s| {
            *n += usize::from(s);
            Some(*n)
        }))
        .collect();
    g.placed_edges().iter().any(|e| {
        let (a, b) = (chips[e.src as usize] as usize, chips[e.dst as usize] as usize);
        b > a + 1 && before[b] > before[a + 1]
    })
}

/// dp's stage cuts; `routed`: a send to the next chip costs its whole route
/// ([`next_bandwidth`]).
fn stage_cuts(problem: &Problem, allowed: &Allowed, routed: bool) -> Vec<(f64, Vec<u32>)> {
    let shape = Shape {
        routed,
        ..Shape::default()
    };
    let order = problem.graph.pipeline_order();
    let plain = cuts_over(
        problem,
        &order,
        &Allowed::all(problem.graph.num_placed(), problem.package.num_chips()),
        0,
        &[],
        EXACT_NODES,
        shape,
    );
    let mut cuts = if !plain.is_empty() && plain.iter().all(|(_, c)| allowed.admits(c)) {
        plain
    } else {
        let within = cuts_over(
            problem,
            &allowed.pipeline_order(problem),
            allowed,
            0,
            &[],
            EXACT_NODES,
            shape,
        );
        if within.is_empty() {
            plain
        } else {
            within
        }
    };
    if adjacent_stages(problem) {
        for order in [problem.graph.pipeline_order(), late_order(problem)] {
            let adjacent = Shape {
                adjacent: true,
                ..shape
            };
            for cut in cuts_over(problem, &order, allowed, 0, &[], EXACT_NODES, adjacent) {
                if !cuts.iter().any(|(_, c)| *c == cut.1) {
                    cuts.push(cut);
                }
            }
        }
        cuts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    if streams_help(problem) {
        let stream = Shape {
            adjacent: adjacent_stages(problem),
            stream: true,
            routed,
        };
        for order in [problem.graph.pipeline_order(), late_order(problem)] {
            for cut in cuts_over(problem, &order, allowed, 0, &[], EXACT_NODES, stream) {
                if !cuts.iter().any(|(_, c)| *c == cut.1) {
                    cuts.push(cut);
                }
            }
        }
        cuts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    cuts
}

/// Orders up to this long get streaming cuts: their table runs on to five
/// chips' memory of weights a stage where the plain one stops at one, so
/// on long orders it would multiply dp's time where memory cut it short.
const STREAM_NODES: usize = 8192;

/// Whether a stage might need weights streamed ([`relay`]): the graph's
/// weights exceed some chip's memory (on orders up to [`STREAM_NODES`]).
fn streams_help(problem: &Problem) -> bool {
    if problem.graph.num_placed() > STREAM_NODES {
        return false;
    }
    let p = &problem.package;
    let weights: f64 = (0..problem.graph.num_placed() as u32)
        .map(|u| problem.graph.placed_node(u).params as f64)
        .sum();
    (0..p.num_chips()).any(|d| weights > p.memory_or_unlimited(d as u32))
}

/// The rules make a pipeline of stages that only feed the next one:
/// `acyclic_flow` and `triangle_dependency` together forbid an edge that
/// skips a stage (its chip-flow path would be two arcs long), so a cut
/// that has one is judged only after FIX has moved its nodes, often onto
/// a few chips. Such problems also get cuts where no edge skips.
fn adjacent_stages(problem: &Problem) -> bool {
    ["acyclic_flow", "triangle_dependency"]
        .iter()
        .all(|k| problem.constraints.iter().any(|g| g.native.as_deref() == Some(*k)))
}

/// A topological order in which every node comes as late as its consumers
/// allow (sinks first, breadth first, then reversed), each node without
/// inputs just before its first consumer. The pipeline order puts a chain
/// that reads only weights (Swin's relative position bias: a table, a
/// gather, a reshape) at the start, far from the attention that adds it,
/// and no contiguous cut then keeps that edge within adjacent stages.
pub fn late_order(problem: &Problem) -> Vec<u32> {
    let g = &problem.graph;
    let n = g.num_placed();
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut outs = vec![0usize; n];
    for e in g.placed_edges() {
        preds[e.dst as usize].push(e.src);
        outs[e.src as usize] += 1;
    }
    let mut rev: Vec<u32> = (0..n as u32).filter(|&u| outs[u as usize] == 0).collect();
    let mut q = 0;
    while q < rev.len() {
        let v = rev[q];
        q += 1;
        for &u in &preds[v as usize] {
            outs[u as usize] -= 1;
            if outs[u as usize] == 0 {
                rev.push(u);
            }
        }
    }
    g.weights_before_consumers(rev.into_iter().rev())
}

/// Cuts for a package whose faster chip sits after slower ones: `no_skip`
/// asks every chip before it for a node, and contiguous stages put real
/// work there (ResNet-18 on seven 1 TFLOP/s dies before a 16 TFLOP/s one:
/// 502.6 us, where the optimum, 227.7 us, leaves the slow dies one small
/// weight each). So each chip before the fast one gets one node without
/// inputs or flops (the smallest outputs first, where its root domain allows
/// it), and the rest of the order is cut over the chips from the fast one on.
fn filler_cuts(problem: &Problem, allowed: &Allowed) -> Vec<(f64, Vec<u32>)> {
    let (g, p) = (&problem.graph, &problem.package);
    let c = p.num_chips();
    let compute: Vec<f64> = (0..c).map(|i| p.compute_or_unit(i as u32)).collect();
    let mut has_input = vec![false; g.num_placed()];
    let mut out = vec![0u64; g.num_placed()];
    for e in g.placed_edges() {
        has_input[e.dst as usize] = true;
        out[e.src as usize] = out[e.src as usize].max(e.bytes);
    }
    let mut fillers: Vec<u32> = (0..g.num_placed() as u32)
        .filter(|&u| !has_input[u as usize] && g.placed_node(u).flops == 0)
        .collect();
    fillers.sort_by_key(|&u| (out[u as usize], g.placed_node(u).params, u));
    let order = allowed.pipeline_order(problem);
    let mut cuts = Vec::new();
    let mut slowest = f64::INFINITY;
    for fast in 1..c {
        slowest = slowest.min(compute[fast - 1]);
        if compute[fast] <= slowest {
            continue;
        }
        let mut placed: Vec<(u32, u32)> = Vec::with_capacity(fast);
        for chip in 0..fast as u32 {
            let pick = fillers
                .iter()
                .copied()
                .find(|&u| allowed.allows(u, chip as usize) && !placed.iter().any(|&(v, _)| v == u));
            match pick {
                Some(u) => placed.push((u, chip)),
                None => break,
            }
        }
        if placed.len() < fast {
            continue;
        }
        let rest: Vec<u32> = order
            .iter()
            .copied()
            .filter(|u| !placed.iter().any(|&(v, _)| v == *u))
            .collect();
        cuts.extend(cuts_from(problem, &rest, allowed, fast, &placed));
    }
    cuts
}

impl Strategy for Dp {
    fn name(&self) -> &str {
        "dp"
    }

    /// The twin's run first (see the module's comment), then the problem's.
    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        if let Some(twin) = search.problem.stricter() {
            // A twin with no valid partition offers none; the problem may
            // still have some.
            let _ = search.replay_on(twin, cut);
            if search.done() {
                return Ok(());
            }
        }
        cut(search)
    }
}

/// dp's run on the search's problem: the given start (settled) is the first
/// candidate, then the cuts.
fn cut(search: &mut Search) -> Result<(), Infeasible> {
    let allowed = search.allowed();
    let cuts = candidates(search.problem, &allowed);
    let order = search.problem.graph.pipeline_order();
    search.order = Order::Topological;
    if let Some(start) = search.start()? {
        search.submit_one(start);
    }
    if cuts.is_empty() {
        // No cut fits: let the solver find a partition (or say that
        // none exists) from no proposal at all.
        let chips = search.fix(&vec![None; order.len()], None)?;
        search.submit_one(chips);
        return Ok(());
    }
    let mut cuts = cuts.into_iter();
    while !search.done() {
        let mut batch = Vec::new();
        for (_, chips) in cuts.by_ref().take(search.batch()) {
            batch.push(settle_full(search, &chips)?);
        }
        if batch.is_empty() {
            break;
        }
        search.submit(batch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph of `n` nodes: a chain with a skip from every fourth node
    /// to the node three after it, weights on every third.
    fn problem(n: usize, memory: &str) -> Problem {
        let mut g = String::from("let g = graph {\n");
        for i in 0..n {
            let w = if i % 3 == 0 { 4 + i % 5 } else { 0 };
            g += &format!(
                "    n{i} {{ flops = {}, params = {w} KiB, output_bytes = {} KiB }}\n",
                100 + 37 * (i % 7),
                1 + i % 4
            );
        }
        for i in 1..n {
            g += &format!("    n{} -> n{i}\n", i - 1);
            if i % 4 == 0 && i + 3 < n {
                g += &format!("    n{i} -> n{}\n", i + 3);
            }
        }
        g += "}\n";
        let text = format!(
            "{}let p = ring(n = 4, memory = {memory}, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n{g}\
             partition g onto p {{\n    require acyclic_flow, no_skip, memory_capacity\n}}\n",
            mcm_testkit::HEADER
        );
        let c = mcm_testkit::compile_ok(&text);
        c.problems[0].clone()
    }

    #[test]
    fn the_grid_of_every_position_gives_the_exact_cuts() {
        for (n, memory) in [(9, "1 MiB"), (23, "40 KiB"), (40, "60 KiB"), (61, "1 MiB")] {
            let p = problem(n, memory);
            let order = p.graph.pipeline_order();
            let all = Allowed::all(n, 4);
            let exact = cuts_over(&p, &order, &all, 0, &[], usize::MAX, Shape::default());
            // Shorter than the grid: every position is a bound.
            let grid = cuts_over(&p, &order, &all, 0, &[], 0, Shape::default());
            assert!(!exact.is_empty());
            assert_eq!(exact, grid, "{n} nodes, {memory}");
        }
    }

    #[test]
    fn a_long_order_is_cut_at_the_bounds_of_its_blocks() {
        let n = 3 * GRID;
        let p = problem(n, "1 GiB");
        let order = p.graph.pipeline_order();
        let all = Allowed::all(n, 4);
        let cuts = cuts_over(&p, &order, &all, 0, &[], 0, Shape::default());
        assert_eq!(cuts.len(), 4, "one cut for each number of chips");
        let exact = cuts_over(&p, &order, &all, 0, &[], usize::MAX, Shape::default());
        for ((t, chips), (best, _)) in cuts.iter().zip(&exact) {
            // Stages change chip only at multiples of the block size (3).
            for (k, w) in order.windows(2).enumerate() {
                if chips[w[0] as usize] != chips[w[1] as usize] {
                    assert_eq!((k + 1) % 3, 0, "a stage ends inside a block");
                }
            }
            assert!(*t >= *best && *t <= *best * 1.01, "{t} against the exact {best}");
        }
    }

    /// A chain of twelve 1-GFLOP ops and, like Swin's relative position
    /// bias, a small op that reads only a weight table and feeds the
    /// eleventh op, on four chips under the stdlib's pipeline rules.
    fn bias_problem() -> Problem {
        let mut g = String::from("let g = graph {\n    table { params = 4 KiB, output_bytes = 4 KiB }\n");
        g += "    bias { flops = 1 MFLOP, output_bytes = 1 KiB }\n    table -> bias\n    bias -> n10\n";
        for i in 0..12 {
            g += &format!("    n{i} {{ flops = 1 GFLOP, output_bytes = 1 MB }}\n");
            if i > 0 {
                g += &format!("    n{} -> n{i}\n", i - 1);
            }
        }
        g += "}\n";
        let text = format!(
            "{}let p = ring(n = 4, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)\n{g}\
             partition g onto p {{\n    require acyclic_flow, no_skip, triangle_dependency\n}}\n",
            mcm_testkit::HEADER
        );
        mcm_testkit::compile_ok(&text).problems[0].clone()
    }

    #[test]
    fn the_late_order_puts_a_weight_only_chain_before_its_consumer() {
        let p = bias_problem();
        let id = |name: &str| {
            (0..p.graph.num_placed() as u32)
                .find(|&u| p.graph.placed_node(u).id == name)
                .unwrap()
        };
        let order = late_order(&p);
        let at = |name: &str| order.iter().position(|&u| u == id(name)).unwrap();
        assert_eq!(order.len(), p.graph.num_placed());
        for e in p.graph.placed_edges() {
            let (a, b) = (
                order.iter().position(|&u| u == e.src),
                order.iter().position(|&u| u == e.dst),
            );
            assert!(a < b, "not topological");
        }
        assert_eq!(at("table") + 1, at("bias"), "{order:?}");
        assert!(at("bias") > at("n8") && at("bias") < at("n10"), "{order:?}");
        // With the chain at the start, the bias edge spans all but the last
        // op: the balanced cuts of that order (3.1 ms) skip a stage, and once
        // skips are refused two stages hold n0..n10 (at least 5.5 ms).
        let mut early = vec![id("table"), id("bias")];
        early.extend((0..12).map(|i| id(&format!("n{i}"))));
        let all = Allowed::all(p.graph.num_placed(), 4);
        let best = |cuts: Vec<(f64, Vec<u32>)>| cuts.iter().map(|c| c.0).fold(f64::INFINITY, f64::min);
        assert!(best(cuts_over(&p, &early, &all, 0, &[], usize::MAX, Shape::default())) < 3.2e-3);
        assert!(
            best(cuts_over(
                &p,
                &early,
                &all,
                0,
                &[],
                usize::MAX,
                Shape {
                    adjacent: true,
                    ..Shape::default()
                }
            )) > 5.4e-3
        );
    }

    /// DistilBERT on a 4 x 4 mesh under the four pipeline rules: a row's
    /// last tile reaches the next row's first over four links, and the
    /// row's tiles relay the tensor. The plain table charges that send one
    /// link; the cuts whose table charges the whole route, taking turns
    /// with the plain ones, end below the latency the plain cuts alone reach.
    #[test]
    fn on_a_mesh_the_cuts_charged_their_whole_route_are_judged_too() {
        use crate::cost::{Judge, JudgeOptions};
        use crate::strategy::Budget;
        let graph = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/graphs/distilbert-base.json.gz");
        let text = format!(
            "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
             use std::topologies::mesh\n\
             let package = mesh(rows = 4, cols = 4, memory = 256 MiB, compute = 4 TFLOP/s, bandwidth = 25 GB/s)\n\
             let net = graph(\"{graph}\")\n\
             partition net onto package {{\n\
                 require acyclic_flow, no_skip, triangle_dependency, memory_capacity\n\
                 maximize throughput\n\
             }}\n"
        );
        let c = mcm_testkit::compile_in(&mcm_testkit::scratch("dp-routed"), &text);
        let p = c.problem(None).expect("a problem").clone();
        let routed = next_bandwidth(&p.package, true);
        assert!(routed[3] < next_bandwidth(&p.package, false)[3] / 3.0, "{routed:?}");
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let out = crate::strategy::run(&p, &judge, &mut Dp, Budget::Samples(500), 1, None).unwrap();
        let latency = 1.0 / out.best.expect("a valid cut").throughput;
        assert!(latency < 330e-6, "{latency}");
    }

    #[test]
    fn under_the_pipeline_rules_some_cut_spreads_over_every_chip_without_skips() {
        let p = bias_problem();
        let all = Allowed::all(p.graph.num_placed(), 4);
        let cuts = candidates(&p, &all);
        // Four stages of three 1-GFLOP ops (3 ms) and a 1 MB send (0.1 ms),
        // each edge to the same or the next chip.
        let skips = |chips: &[u32]| {
            p.graph
                .placed_edges()
                .iter()
                .any(|e| chips[e.dst as usize] > chips[e.src as usize] + 1)
        };
        let spread = cuts
            .iter()
            .find(|(_, chips)| chips.contains(&3) && !skips(chips))
            .expect("a four-chip cut with no skipping edge");
        assert!(spread.0 < 3.2e-3, "{}", spread.0);
        // Judged first: a strategy that takes only the first few meets it.
        assert!(!skips(&cuts[0].1), "{:?}", cuts[0]);
        // The judge agrees with the estimate.
        let model = crate::cost::CostModel::new(&p).unwrap();
        assert!(model.latency(&spread.1).unwrap() < 3.2e-3);
    }
}
