//! Weights streamed from relay chips. A stage whose weights exceed its
//! chip's memory keeps what fits and reads the rest, each step, from chips
//! just below it that compute nothing (its relays). On a line of chips every
//! byte a chip reads from below crosses the one link into it, so a stage's
//! relays sit between the previous stage and it: the link into the stage
//! carries the whole stream, the links below it less, and the previous
//! stage's own link none of it. A relay holds only weights that its stage
//! alone reads, so it feeds one chip and adds no path to the chip-flow graph
//! beside an arc (`triangle_dependency` holds where the stages' cut kept it).
//!
//! [`place`] moves a stage's overflow onto its relays; [`relieve`] streams
//! more where the analytical dynamic check (weights plus live tensors,
//! streamed weights among them) still finds the stage's chip out of memory.

use crate::cost::CostModel;
use mcm_core::problem::Problem;
use std::ops::Range;

/// The share of a streaming stage's chip memory its resident weights may
/// fill: the rest is for its live activations and the streamed weight in
/// use, which the dynamic check counts.
pub const RESIDENT: f64 = 0.85;

/// The most relays one stage reads from: each adds a chip that computes
/// nothing, and the link into the stage carries the whole stream anyway.
pub const MOST_RELAYS: usize = 4;

/// Rounds of [`relieve`], each moving one weight of every stage still out
/// of memory.
const RELIEF_ROUNDS: usize = 64;

/// A stage that streams: its chip, the relays below it, and the weights
/// only it reads (candidates to stream).
#[derive(Clone, Debug)]
pub struct Stream {
    pub chip: usize,
    pub relays: Range<usize>,
    pub weights: Vec<u32>,
}

/// Per placed node: a weight that may live apart from its readers (no
/// inputs, no flops, some parameters).
pub fn movable(problem: &Problem) -> Vec<bool> {
    let g = &problem.graph;
    let mut has_input = vec![false; g.num_placed()];
    for e in g.placed_edges() {
        has_input[e.dst as usize] = true;
    }
    (0..g.num_placed() as u32)
        .map(|u| {
            let node = g.placed_node(u);
            !has_input[u as usize] && node.flops == 0 && node.params > 0
        })
        .collect()
}

fn memory(problem: &Problem, chip: usize) -> f64 {
    problem.package.memory_or_unlimited(chip as u32)
}

/// Weights on each chip, in bytes.
fn weights_by_chip(problem: &Problem, chips: &[u32]) -> Vec<f64> {
    let mut w = vec![0f64; problem.package.num_chips()];
    for (u, &c) in chips.iter().enumerate() {
        w[c as usize] += problem.graph.placed_node(u as u32).params as f64;
    }
    w
}

/// Moves `u` onto the highest relay of `s` with room for it; false when
/// none has.
fn to_relay(problem: &Problem, chips: &mut [u32], load: &mut [f64], s: &Stream, u: u32) -> bool {
    let bytes = problem.graph.placed_node(u).params as f64;
    let Some(r) = s.relays.clone().rev().find(|&r| load[r] + bytes <= memory(problem, r)) else {
        return false;
    };
    load[chips[u as usize] as usize] -= bytes;
    load[r] += bytes;
    chips[u as usize] = r as u32;
    true
}

/// Whether `u` may be streamed into `chip`: while a streamed weight is in
/// use it is live there beside the resident ones, within the headroom
/// [`RESIDENT`] leaves.
pub fn streamable(problem: &Problem, u: u32, chip: usize) -> bool {
    problem.graph.placed_node(u).params as f64 <= (1.0 - RESIDENT) * memory(problem, chip)
}

/// The stage's weights still on its chip that may be streamed, largest
/// first (ties by id, so a cut places the same way every time).
fn resident(problem: &Problem, chips: &[u32], s: &Stream) -> Vec<u32> {
    let mut on: Vec<u32> = s
        .weights
        .iter()
        .copied()
        .filter(|&u| chips[u as usize] as usize == s.chip && streamable(problem, u, s.chip))
        .collect();
    on.sort_by_key(|&u| (std::cmp::Reverse(problem.graph.placed_node(u).params), u));
    on
}

/// Streams each stage's largest weights onto its relays until what stays
/// fits [`RESIDENT`] of its chip's memory (or the relays are full). Relays
/// fill from the one next to the stage down, so a link below carries only
/// what the relays below it hold.
pub fn place(problem: &Problem, chips: &mut [u32], streams: &[Stream]) {
    let mut load = weights_by_chip(problem, chips);
    for s in streams {
        let keep = RESIDENT * memory(problem, s.chip);
        for u in resident(problem, chips, s) {
            if load[s.chip] <= keep {
                break;
            }
            to_relay(problem, chips, &mut load, s, u);
        }
    }
}

/// While the dynamic check finds a streaming stage's chip out of memory,
/// streams its largest resident weight that a relay has room for, a bounded
/// number of rounds.
pub fn relieve(model: &CostModel, problem: &Problem, chips: &mut [u32], streams: &[Stream]) {
    let mut load = weights_by_chip(problem, chips);
    for _ in 0..RELIEF_ROUNDS {
        let Err(overflow) = model.peak_memory(chips) else {
            return;
        };
        let mut moved = false;
        for s in streams {
            let over = overflow
                .usage
                .peak
                .get(s.chip)
                .is_some_and(|&m| m as f64 > memory(problem, s.chip));
            if !over {
                continue;
            }
            for u in resident(problem, chips, s) {
                if to_relay(problem, chips, &mut load, s, u) {
                    moved = true;
                    break;
                }
            }
        }
        if !moved {
            return;
        }
    }
}

/// Whether a node with these input and output edges makes a tensor much
/// smaller than its largest input (a gather from a table).
fn shrinks(ins: &[(u32, u64)], outs: &[(u32, u64)]) -> bool {
    let big = ins.iter().map(|&(_, b)| b).max().unwrap_or(0);
    let out = outs.iter().map(|&(_, b)| b).max().unwrap_or(0);
    out.saturating_mul(4) <= big && big > 0
}

/// Per placed node, the other end of each of its tensors and the bytes.
type Tensors = Vec<Vec<(u32, u64)>>;

/// Per placed node: its inputs and its consumers.
fn tensors_in_and_out(problem: &Problem) -> (Tensors, Tensors) {
    let g = &problem.graph;
    let mut ins: Tensors = vec![Vec::new(); g.num_placed()];
    let mut outs: Tensors = vec![Vec::new(); g.num_placed()];
    for e in g.placed_edges() {
        ins[e.dst as usize].push((e.src, e.bytes));
        outs[e.src as usize].push((e.dst, e.bytes));
    }
    (ins, outs)
}

/// Per placed node: a gather [`gathers_back`] may move onto its largest
/// input's chip (it computes and keeps nothing and shrinks that input), so
/// the estimate of a cut need not charge that input's tensor.
pub fn gathers(problem: &Problem) -> Vec<bool> {
    let g = &problem.graph;
    let n = g.num_placed();
    let (ins, outs) = tensors_in_and_out(problem);
    (0..n)
        .map(|v| {
            let node = g.placed_node(v as u32);
            node.flops == 0 && node.params == 0 && shrinks(&ins[v], &outs[v])
        })
        .collect()
}

/// Moves each node that computes nothing and keeps nothing, and that turns
/// a large tensor from a lower chip into a smaller one (a gather from an
/// embedding table), onto its large input's chip, with the inputs that only
/// it reads and that keep nothing (the indices): the large tensor then stays
/// where it is, the small one crosses the links instead. Only where every
/// consumer sits on that chip or on one it already sends to, so the move adds
/// no arc to the chip-flow graph.
pub fn gathers_back(problem: &Problem, chips: &mut [u32]) {
    let g = &problem.graph;
    let n = g.num_placed();
    let (ins, outs) = tensors_in_and_out(problem);
    for v in 0..n {
        let node = g.placed_node(v as u32);
        if node.flops != 0 || node.params != 0 {
            continue;
        }
        let Some(&(u, _)) = ins[v].iter().max_by_key(|&&(u, b)| (b, std::cmp::Reverse(u))) else {
            continue;
        };
        let (from, at) = (chips[u as usize], chips[v]);
        if from >= at || !shrinks(&ins[v], &outs[v]) {
            continue;
        }
        // Inputs that follow it: on its chip, read by it alone, keeping nothing.
        let mut along = Vec::new();
        let mut ok = true;
        for &(x, _) in &ins[v] {
            let c = chips[x as usize];
            if c == from {
                continue;
            }
            let alone = ins[x as usize].is_empty() && outs[x as usize].len() == 1 && g.placed_node(x).params == 0;
            if c == at && alone {
                along.push(x);
            } else {
                ok = false;
            }
        }
        if !ok {
            continue;
        }
        let sends_to = |to: u32| {
            to == from
                || (0..n).any(|a| {
                    chips[a] == from && a != u as usize && outs[a].iter().any(|&(b, _)| chips[b as usize] == to)
                })
        };
        if outs[v].iter().all(|&(w, _)| sends_to(chips[w as usize])) {
            chips[v] = from;
            for x in along {
                chips[x as usize] = from;
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::strategy::{dp, Allowed};
    use mcm_core::problem::Placement;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Whether `chips` passes the checker under `p`'s rules.
    pub(in crate::strategy) fn valid(p: &Problem, chips: &[u32]) -> bool {
        mcm_solver::check(&p.graph, &p.package, &p.constraints, &Placement::new(chips.to_vec())).is_empty()
    }

    /// `graph` on `package` under the four stdlib rules.
    pub(in crate::strategy) fn compile(graph: &str, package: &str) -> Problem {
        let text = format!(
            "{}let p = {package}\n{graph}partition g onto p {{\n    \
             require acyclic_flow, no_skip, triangle_dependency, memory_capacity\n}}\n",
            mcm_testkit::HEADER
        );
        mcm_testkit::compile_ok(&text).problems[0].clone()
    }

    /// Eighteen 1-GFLOP ops in a chain, each reading its own 2 MiB weight,
    /// and a small op `bias` read by the first and the last (a position bias,
    /// as in T5): the rules keep the chain on two chips, whose 2 x 16 MiB
    /// cannot hold the 36 MiB of weights.
    fn confined() -> Problem {
        let mut g = String::from("let g = graph {\n    bias { flops = 1 MFLOP, output_bytes = 1 KiB }\n");
        for i in 0..18 {
            g += &format!("    w{i} {{ params = 2 MiB, output_bytes = 2 MiB }}\n");
            g += &format!("    n{i} {{ flops = 1 GFLOP, output_bytes = 1 MB }}\n    w{i} -> n{i}\n");
            if i > 0 {
                g += &format!("    n{} -> n{i}\n", i - 1);
            }
        }
        g += "    bias -> n0\n    bias -> n17\n}\n";
        compile(
            &g,
            "ring(n = 4, memory = 16 MiB, compute = 1 TFLOP/s, bandwidth = 100 GB/s)",
        )
    }

    /// The chain on two chips, nine ops each (9 ms), the weights that do
    /// not fit streamed from the chip below each at 100 GB/s: dp's cuts
    /// include such a partition, valid as it comes.
    #[test]
    fn a_stage_that_cannot_hold_its_weights_streams_them_from_the_chip_below() {
        let p = confined();
        let model = CostModel::new(&p).unwrap();
        let all = Allowed::all(p.graph.num_placed(), 4);
        let best = dp::candidates(&p, &all)
            .into_iter()
            .filter(|(_, chips)| valid(&p, chips) && model.peak_memory(chips).is_ok())
            .map(|(_, chips)| model.latency(&chips).unwrap())
            .fold(f64::INFINITY, f64::min);
        assert!(best < 9.1e-3, "best valid cut {best}");
    }

    /// A random graph of ops reading weights, with gathers from a shared
    /// table (an embedding read twice), on a ring whose chips hold a few of
    /// the weights each.
    fn random_problem(rng: &mut ChaCha8Rng) -> Problem {
        let n: usize = rng.random_range(4..10);
        let mut g = String::from("let g = graph {\n    table { params = 3 MiB, output_bytes = 3 MiB }\n");
        for i in 0..n {
            g += &format!(
                "    n{i} {{ flops = {} MFLOP, output_bytes = {} KiB }}\n",
                rng.random_range(1..50) * 20,
                rng.random_range(1..64)
            );
            if rng.random_bool(0.7) {
                g += &format!(
                    "    w{i} {{ params = {} KiB, output_bytes = 1 KiB }}\n    w{i} -> n{i}\n",
                    rng.random_range(64..1024)
                );
            }
            if i > 0 {
                g += &format!("    n{} -> n{i}\n", rng.random_range(i.saturating_sub(2)..i));
            }
        }
        for (k, at) in [(0, 0), (1, rng.random_range(1..n))] {
            g += &format!("    ids{k} {{ output_bytes = 1 KiB }}\n    gather{k} {{ output_bytes = 4 KiB }}\n");
            g += &format!("    table -> gather{k}\n    ids{k} -> gather{k}\n    gather{k} -> n{at}\n");
        }
        g += "}\n";
        let chips = rng.random_range(3..7);
        let memory = rng.random_range(4..12);
        compile(
            &g,
            &format!("ring(n = {chips}, memory = {memory} MiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)"),
        )
    }

    /// On random instances: moving gathers onto their table's chip keeps a
    /// valid partition valid and never makes it slower, and every streaming
    /// cut keeps on each relay only weights that one chip above it reads.
    #[test]
    fn the_steps_keep_partitions_valid_and_never_slower() {
        let mut rng = ChaCha8Rng::seed_from_u64(30);
        let (mut checked, mut moved, mut streamed) = (0, 0, 0);
        for _ in 0..150 {
            let p = random_problem(&mut rng);
            let Ok(model) = CostModel::new(&p) else { continue };
            let c = p.package.num_chips();
            let all = Allowed::all(p.graph.num_placed(), c);
            let readers = {
                let mut r: Vec<Vec<u32>> = vec![Vec::new(); p.graph.num_placed()];
                for e in p.graph.placed_edges() {
                    r[e.src as usize].push(e.dst);
                }
                r
            };
            let movable = movable(&p);
            for (_, chips) in dp::candidates(&p, &all) {
                if !valid(&p, &chips) {
                    continue;
                }
                // Relays (chips holding only weights) feed one chip each.
                let mut relay = vec![true; c];
                for (u, &at) in chips.iter().enumerate() {
                    relay[at as usize] &= movable[u];
                }
                for (u, &at) in chips.iter().enumerate() {
                    let reads: Vec<u32> = readers[u].iter().map(|&v| chips[v as usize]).collect();
                    if relay[at as usize] && reads.iter().any(|&r| r != at) {
                        assert!(
                            reads.iter().all(|&r| r == reads[0]),
                            "a relayed weight read by two chips"
                        );
                        streamed += 1;
                    }
                }
                let before = model.latency(&chips).unwrap();
                let mut after = chips.clone();
                gathers_back(&p, &mut after);
                moved += usize::from(after != chips);
                assert!(valid(&p, &after), "a gather moved out of the rules");
                assert!(model.latency(&after).unwrap() <= before + 1e-12);
                checked += 1;
            }
        }
        assert!(
            checked > 100 && moved > 0 && streamed > 0,
            "{checked} {moved} {streamed}"
        );
    }
}
