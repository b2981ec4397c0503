//! An encoder-decoder's layout along a line of chips, as one more start
//! candidate (the shape of `tools/encdec_by_hand.py`, which dp's pipelines
//! cannot make: the decoder's first layers beside the encoder's chips).
//!
//! The structure it looks for: the encoder's output, read by four placed
//! linear nodes or more (every decoder layer's cross-attention keys and
//! values); a node the encoder's output depends on that four nodes or more
//! read, not all linear (the encoder's position bias or mask); and one the
//! encoder's output does not depend on (the decoder's), whose span (what
//! lies between it and its last reader) also depends on the encoder's
//! output. A graph without them gets no candidate.
//!
//! Along the line: the shared table and the lookups reading it (`P`); the
//! encoder's span split in two by flops (`E1`, `E2`); the decoder's first
//! projections (`Y`); the cross-attention keys and values, on the chip
//! before the decoder's half that reads them (`Z1`, `Z2`, `Z3`); the
//! decoder's span split in two (`A`, `B`); what follows it (`T`). Every arc
//! of the chips' flow graph is then the only path between its ends. Weights
//! a chip cannot keep go to relay chips just below it ([`relay`]).
//!
//! Without the biases (BART's masks are replicable: nothing confines the
//! decoder's layers to two chips) the decoder is a pipeline of its own
//! ([`BiasFree`]): each of its stages `D_j` after a chip `Z_j` that
//! computes, from the encoder's output alone, the keys and values `D_j`
//! reads. `Z_j` takes only the encoder's output in and sends only to
//! `D_j`, so no arc has a second path beside it; a chip that read the
//! encoder's output and fed a later decoder stage would.

use super::relay::{self, Stream, RESIDENT};
use crate::cost::{topological, CostModel};
use mcm_core::problem::Problem;

/// Readers a node needs to be a position bias or the encoder's output.
const READERS: usize = 4;

/// The logical chips, in their order along the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    P,
    E1,
    E2,
    Y,
    Z1,
    A,
    Z2,
    B,
    Z3,
    T,
}

/// The placed graph's adjacency and a topological order.
struct Dag {
    succ: Vec<Vec<u32>>,
    pred: Vec<Vec<u32>>,
    order: Vec<u32>,
    pos: Vec<usize>,
}

impl Dag {
    fn new(problem: &Problem) -> Dag {
        let g = &problem.graph;
        let n = g.num_placed();
        let mut succ = vec![Vec::new(); n];
        let mut pred = vec![Vec::new(); n];
        for e in g.placed_edges() {
            succ[e.src as usize].push(e.dst);
            pred[e.dst as usize].push(e.src);
        }
        let order = topological(&pred, &succ);
        let mut pos = vec![0; n];
        for (i, &u) in order.iter().enumerate() {
            pos[u as usize] = i;
        }
        Dag { succ, pred, order, pos }
    }

    /// `start` and what it reaches, downward (descendants) or upward.
    fn closure(&self, start: u32, down: bool) -> Vec<bool> {
        let next = if down { &self.succ } else { &self.pred };
        let mut seen = vec![false; self.pos.len()];
        seen[start as usize] = true;
        let mut stack = vec![start];
        while let Some(u) = stack.pop() {
            for &v in &next[u as usize] {
                if !seen[v as usize] {
                    seen[v as usize] = true;
                    stack.push(v);
                }
            }
        }
        seen
    }

    /// The reader of `u` last in the order.
    fn last(&self, u: u32) -> u32 {
        *self.succ[u as usize]
            .iter()
            .max_by_key(|&&v| self.pos[v as usize])
            .unwrap_or(&u)
    }

    /// What lies between `u` and its last reader, both included.
    fn span(&self, u: u32) -> Vec<bool> {
        let last = self.last(u);
        let below = self.closure(last, false);
        self.closure(u, true)
            .iter()
            .zip(&below)
            .map(|(&a, &b)| a && b)
            .collect()
    }
}

/// The nodes of `span` before half its flops, in the order.
fn first_half(problem: &Problem, dag: &Dag, span: &[bool]) -> Vec<bool> {
    let flops = |u: u32| problem.graph.placed_node(u).flops as f64;
    let total: f64 = dag.order.iter().filter(|&&u| span[u as usize]).map(|&u| flops(u)).sum();
    let mut first = vec![false; span.len()];
    let mut acc = 0.0;
    for &u in dag.order.iter().filter(|&&u| span[u as usize]) {
        first[u as usize] = acc + flops(u) / 2.0 <= total / 2.0;
        acc += flops(u);
    }
    first
}

/// The encoder's output: the first placed node, in the order, read by
/// `READERS` nodes or more, all linear (the cross-attention's keys and
/// values).
fn encoder_output(problem: &Problem, dag: &Dag) -> Option<u32> {
    let g = &problem.graph;
    let linear_only = |u: u32| dag.succ[u as usize].iter().all(|&v| g.placed_node(v).op == "linear");
    dag.order
        .iter()
        .copied()
        .find(|&u| dag.succ[u as usize].len() >= READERS && !dag.pred[u as usize].is_empty() && linear_only(u))
}

/// The shared table: a weight two nodes or more read, with its readers and
/// their inputs that have none (the indices).
fn embedding(problem: &Problem, dag: &Dag) -> Vec<bool> {
    let g = &problem.graph;
    let n = g.num_placed();
    let mut embedding = vec![false; n];
    for w in 0..n as u32 {
        if g.placed_node(w).params > 0 && dag.succ[w as usize].len() >= 2 {
            embedding[w as usize] = true;
            for &v in &dag.succ[w as usize] {
                embedding[v as usize] = true;
                for &p in &dag.pred[v as usize] {
                    if dag.pred[p as usize].is_empty() {
                        embedding[p as usize] = true;
                    }
                }
            }
        }
    }
    embedding
}

/// Nodes that neither compute nor take a chip of their own: weights and
/// attributes, placed after their readers.
fn follows(problem: &Problem, movable: &[bool], u: u32) -> bool {
    movable[u as usize] || problem.graph.placed_node(u).op == "get_attr"
}

/// Every node still without a chip on its lowest reader's (the shared
/// table's logical chip 0 where none has one).
fn fill_readers(dag: &Dag, place: &mut [Option<usize>]) -> Vec<usize> {
    for u in 0..place.len() {
        if place[u].is_none() {
            let lowest = dag.succ[u].iter().filter_map(|&v| place[v as usize]).min();
            place[u] = Some(lowest.unwrap_or(0));
        }
    }
    place.iter().map(|p| p.unwrap_or(0)).collect()
}

/// The logical chip of every placed node (an index along the line) under
/// T5's shape; `None` without the structure.
fn parts(problem: &Problem, dag: &Dag) -> Option<Vec<usize>> {
    let g = &problem.graph;
    let n = g.num_placed();
    let op = |u: u32| g.placed_node(u).op.as_str();
    let linear_only = |u: u32| dag.succ[u as usize].iter().all(|&v| op(v) == "linear");
    let multi: Vec<u32> = dag
        .order
        .iter()
        .copied()
        .filter(|&u| dag.succ[u as usize].len() >= READERS && !dag.pred[u as usize].is_empty())
        .collect();
    let enc_out = encoder_output(problem, dag)?;
    let encoder = dag.closure(enc_out, false);
    let bias = |inside: bool| {
        multi
            .iter()
            .copied()
            .find(|&u| u != enc_out && encoder[u as usize] == inside && !linear_only(u))
    };
    let (enc_bias, dec_bias) = (bias(true)?, bias(false)?);
    let w_enc = dag.span(enc_bias);
    let w_dec = dag.span(dec_bias);
    let after_enc = dag.closure(enc_out, true);
    if !(0..n).any(|u| w_dec[u] && after_enc[u]) {
        return None;
    }
    let (enc1, dec1) = (first_half(problem, dag, &w_enc), first_half(problem, dag, &w_dec));
    let after_dec = dag.closure(dec_bias, true);
    // The encoder output's reader each node before the decoder's bias
    // serves (the keys and values it computes).
    let mut kv_of: Vec<Option<u32>> = vec![None; n];
    for &k in &dag.succ[enc_out as usize] {
        for (u, &d) in dag.closure(k, true).iter().enumerate() {
            if d && !after_dec[u] {
                kv_of[u] = Some(k);
            }
        }
    }
    let mut group: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (u, k) in kv_of.iter().enumerate() {
        if let Some(k) = k {
            group[*k as usize].push(u as u32);
        }
    }
    let after_last = dag.closure(dag.last(dec_bias), true);
    let dec_path = dag.closure(dec_bias, false);
    let weight = relay::movable(problem);
    let follows = |u: u32| follows(problem, &weight, u);
    let mut place: Vec<Option<Part>> = vec![None; n];
    for &u in &dag.order {
        let i = u as usize;
        if follows(u) {
            continue;
        }
        place[i] = if w_enc[i] {
            Some(if enc1[i] { Part::E1 } else { Part::E2 })
        } else if w_dec[i] {
            Some(if dec1[i] { Part::A } else { Part::B })
        } else if after_last[i] {
            Some(Part::T)
        } else {
            None
        };
    }
    let embedding = embedding(problem, dag);
    for &u in &dag.order {
        let i = u as usize;
        if follows(u) || place[i].is_some() {
            continue;
        }
        place[i] = Some(if embedding[i] {
            Part::P
        } else if let Some(k) = kv_of[i] {
            let lowest = group[k as usize]
                .iter()
                .flat_map(|&j| dag.succ[j as usize].iter())
                .filter(|&&v| kv_of[v as usize].is_none())
                .filter_map(|&v| place[v as usize])
                .min();
            match lowest {
                Some(Part::A) => Part::Z1,
                Some(Part::B) => Part::Z2,
                _ => Part::Z3,
            }
        } else if encoder[i] {
            let reaches_first = dag.closure(u, true).iter().zip(&enc1).any(|(&d, &f)| d && f);
            if reaches_first {
                Part::E1
            } else {
                Part::E2
            }
        } else if dec_path[i] {
            Part::A
        } else if after_dec[i] {
            Part::T
        } else {
            Part::Y
        });
    }
    let mut place: Vec<Option<usize>> = place.into_iter().map(|p| p.map(|x| x as usize)).collect();
    Some(fill_readers(dag, &mut place))
}

/// Candidates of the bias-free shape judged: the decoder's stage counts
/// whose compute estimate is lowest.
const BIAS_FREE_CANDIDATES: usize = 3;

/// The heaviest part of the best split of `flops` (in order) into at most
/// `k` contiguous parts, and each item's part (0-based).
fn split(flops: &[f64], k: usize) -> (f64, Vec<usize>) {
    let total: f64 = flops.iter().sum();
    let largest = flops.iter().copied().fold(0.0, f64::max);
    let fill = |cap: f64| {
        let (mut part, mut acc) = (0usize, 0.0);
        let parts: Vec<usize> = flops
            .iter()
            .map(|&f| {
                if acc > 0.0 && acc + f > cap {
                    part += 1;
                    acc = 0.0;
                }
                acc += f;
                part
            })
            .collect();
        parts
    };
    let fits = |cap: f64| fill(cap).last().is_none_or(|&p| p < k.max(1));
    let (mut lo, mut hi) = (largest.max(total / k.max(1) as f64), total.max(largest));
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (hi, fill(hi))
}

/// The bias-free shape, computed once for every stage count tried: the
/// encoder's computing nodes and the decoder's in the order, the keys and
/// values (nodes computed from the encoder's output alone, weights aside,
/// each with the encoder-output reader it starts from) and the shared table.
struct BiasFree {
    enc: Vec<u32>,
    dec: Vec<u32>,
    kv_of: Vec<Option<u32>>,
    table: Vec<bool>,
    weight: Vec<bool>,
}

impl BiasFree {
    /// `None` without an encoder's output, or with an empty side.
    fn new(problem: &Problem, dag: &Dag) -> Option<BiasFree> {
        let g = &problem.graph;
        let n = g.num_placed();
        let enc_out = encoder_output(problem, dag)?;
        let encoder = dag.closure(enc_out, false);
        let after = dag.closure(enc_out, true);
        let table = embedding(problem, dag);
        let weight = relay::movable(problem);
        let follows = |u: u32| follows(problem, &weight, u);
        let mut kv_of: Vec<Option<u32>> = vec![None; n];
        for &u in &dag.order {
            let i = u as usize;
            if u == enc_out || encoder[i] || follows(u) {
                continue;
            }
            let inputs: Vec<u32> = dag.pred[i].iter().copied().filter(|&p| !follows(p)).collect();
            if inputs.is_empty() {
                continue;
            }
            if inputs.iter().all(|&p| p == enc_out || kv_of[p as usize].is_some()) {
                kv_of[i] = Some(if inputs.contains(&enc_out) {
                    u
                } else {
                    kv_of[inputs[0] as usize]?
                });
            }
        }
        let compute = |u: u32| !follows(u) && !table[u as usize];
        let enc: Vec<u32> = dag
            .order
            .iter()
            .copied()
            .filter(|&u| encoder[u as usize] && compute(u))
            .collect();
        let dec: Vec<u32> = dag
            .order
            .iter()
            .copied()
            .filter(|&u| !encoder[u as usize] && after[u as usize] && kv_of[u as usize].is_none() && compute(u))
            .collect();
        if dec.is_empty() || enc.is_empty() {
            return None;
        }
        Some(BiasFree {
            enc,
            dec,
            kv_of,
            table,
            weight,
        })
    }

    /// The logical chips at `ke` encoder and `kd` decoder stages: the shared
    /// table's chip (0), the encoder's stages, the decoder's prefix (what
    /// does not depend on the encoder's output), then per decoder stage `j`
    /// the chip of the keys and values it reads and its own.
    fn place(&self, problem: &Problem, dag: &Dag, ke: usize, kd: usize) -> Vec<usize> {
        let g = &problem.graph;
        let n = g.num_placed();
        let follows = |u: u32| follows(problem, &self.weight, u);
        let kv_of = &self.kv_of;
        let flops = |list: &[u32]| list.iter().map(|&u| g.placed_node(u).flops as f64).collect::<Vec<_>>();
        let (_, enc_part) = split(&flops(&self.enc), ke.max(1));
        let (_, dec_part) = split(&flops(&self.dec), kd.max(1));
        let prefix = 1 + ke.max(1);
        let mut place: Vec<Option<usize>> = vec![None; n];
        for (&u, &p) in self.enc.iter().zip(&enc_part) {
            place[u as usize] = Some(1 + p);
        }
        for (&u, &p) in self.dec.iter().zip(&dec_part) {
            place[u as usize] = Some(prefix + 2 + 2 * p);
        }
        for &u in &dag.order {
            let i = u as usize;
            if follows(u) || place[i].is_some() || kv_of[i].is_some() {
                continue;
            }
            place[i] = Some(if self.table[i] { 0 } else { prefix });
        }
        // Each group of keys or values on the chip before the lowest decoder
        // stage that reads it.
        let mut lowest: Vec<Option<usize>> = vec![None; n];
        for &u in &dag.order {
            if let Some(k) = kv_of[u as usize] {
                for &v in &dag.succ[u as usize] {
                    if let (None, Some(c)) = (kv_of[v as usize], place[v as usize]) {
                        let l = &mut lowest[k as usize];
                        *l = Some(l.map_or(c, |x| x.min(c)));
                    }
                }
            }
        }
        for u in 0..n {
            if let Some(k) = kv_of[u] {
                place[u] = Some(lowest[k as usize].map_or(prefix + 2 * kd.max(1), |c| c.max(prefix + 2) - 1));
            }
        }
        fill_readers(dag, &mut place)
    }
}

/// The decoder's stage counts the bias-free shape is tried with, best
/// compute estimate first, each with the encoder's stage count that
/// balances it on what the line has left.
fn stage_counts(problem: &Problem, dag: &Dag) -> Vec<(usize, usize)> {
    let g = &problem.graph;
    let c = problem.package.num_chips();
    let Some(enc_out) = encoder_output(problem, dag) else {
        return Vec::new();
    };
    let encoder = dag.closure(enc_out, false);
    let after = dag.closure(enc_out, true);
    let flops = |keep: &dyn Fn(usize) -> bool| {
        dag.order
            .iter()
            .filter(|&&u| keep(u as usize))
            .map(|&u| g.placed_node(u).flops as f64)
            .collect::<Vec<_>>()
    };
    let enc = flops(&|u| encoder[u]);
    let dec = flops(&|u| !encoder[u] && after[u]);
    let mut counts: Vec<(f64, usize, usize)> = (1..c)
        .filter_map(|kd| {
            let ke = c.checked_sub(2 + 2 * kd).filter(|&ke| ke > 0)?;
            Some((split(&enc, ke).0.max(split(&dec, kd).0), ke, kd))
        })
        .collect();
    counts.sort_by(|a, b| a.0.total_cmp(&b.0));
    counts
        .into_iter()
        .take(BIAS_FREE_CANDIDATES)
        .map(|(_, ke, kd)| (ke, kd))
        .collect()
}

/// Which weights a logical chip that cannot keep them all streams.
#[derive(Clone, Copy)]
enum Streaming {
    /// In the order, until [`RESIDENT`] of the memory stays.
    InOrder,
    /// The smallest first, until this share of the memory stays: the
    /// streamed weight in use is live on the chip beside the resident ones,
    /// so small ones leave more of the memory resident, and less to stream
    /// over the one link into the chip.
    SmallestFirst(f64),
}

/// The shares of memory the smallest-first streaming keeps resident
/// (what the dynamic check still finds over, [`relay::relieve`] streams).
const SMALLEST_FIRST: [f64; 2] = [0.93, 0.97];

/// The chips of a layout along the line, from each node's logical chip:
/// each logical chip (the empty ones left out) after the relays that hold
/// the weights it cannot keep. `None` when it needs more chips than the
/// package has.
fn along_the_line(problem: &Problem, dag: &Dag, place: &[usize], streaming: Streaming) -> Option<Vec<u32>> {
    let g = &problem.graph;
    let c = problem.package.num_chips();
    let memory = (0..c as u32)
        .map(|chip| problem.package.memory_or_unlimited(chip))
        .fold(f64::INFINITY, f64::min);
    let keep = match streaming {
        Streaming::InOrder => RESIDENT,
        Streaming::SmallestFirst(share) => share,
    } * memory;
    let movable = relay::movable(problem);
    let params = |u: u32| g.placed_node(u).params as f64;
    let logical = place.iter().copied().max().map_or(0, |m| m + 1);
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); logical];
    for &u in &dag.order {
        members[place[u as usize]].push(u);
    }
    let mut chips = vec![0u32; place.len()];
    let mut streams = Vec::new();
    let mut used = 0usize;
    for members in members.iter().filter(|m| !m.is_empty()) {
        let mut weights: Vec<u32> = members.iter().copied().filter(|&u| movable[u as usize]).collect();
        if let Streaming::SmallestFirst(_) = streaming {
            weights.sort_by(|&a, &b| params(a).total_cmp(&params(b)));
        }
        let mut held: f64 = members.iter().map(|&u| params(u)).sum();
        let first_relay = used;
        let mut room = 0.0;
        let mut relayed = vec![false; place.len()];
        for &w in &weights {
            if held <= keep {
                break;
            }
            if room < params(w) {
                used += 1;
                room = memory;
            }
            chips[w as usize] = (used - 1) as u32;
            relayed[w as usize] = true;
            room -= params(w);
            held -= params(w);
        }
        for &u in members.iter().filter(|&&u| !relayed[u as usize]) {
            chips[u as usize] = used as u32;
        }
        if used > first_relay {
            streams.push(Stream {
                chip: used,
                relays: first_relay..used,
                weights,
            });
        }
        used += 1;
    }
    if used > c {
        return None;
    }
    if let Ok(model) = CostModel::new(problem) {
        relay::relieve(&model, problem, &mut chips, &streams);
    }
    Some(chips)
}

/// The encoder-decoder's layouts, chip per placed node: T5's shape where
/// the graph has the biases (streaming in the order, then the smallest
/// weights first), else the bias-free shape at the decoder's best stage
/// counts (fewer encoder stages where relays need the chips). Empty without
/// the structure.
pub(super) fn layouts(problem: &Problem) -> Vec<Vec<u32>> {
    let dag = Dag::new(problem);
    if let Some(place) = parts(problem, &dag) {
        let smallest = SMALLEST_FIRST.map(Streaming::SmallestFirst);
        return [Streaming::InOrder]
            .iter()
            .chain(&smallest)
            .filter_map(|&streaming| along_the_line(problem, &dag, &place, streaming))
            .collect();
    }
    let Some(shape) = BiasFree::new(problem, &dag) else {
        return Vec::new();
    };
    let mut made = Vec::new();
    for (ke, kd) in stage_counts(problem, &dag) {
        let fitted = (1..=ke)
            .rev()
            .find_map(|ke| along_the_line(problem, &dag, &shape.place(problem, &dag, ke, kd), Streaming::InOrder));
        made.extend(fitted);
    }
    made
}

#[cfg(test)]
mod tests {
    use super::super::relay::tests::{compile, valid};
    use super::*;
    use mcm_core::problem::Placement;

    /// A small encoder-decoder in T5's shape: a shared table read by both
    /// lookups, each followed by a dropout; `layers` encoder layers, each adding a bias `pos_e` to its
    /// projection; the encoder's output `enc_out` read by every decoder
    /// layer's key and value projections; `layers` decoder layers adding
    /// their own bias `pos_d`; a head. Each decoder projection's weight is
    /// `dec_weight` MiB. Without `decoder`, the encoder alone; without
    /// `biased`, no layer reads a bias (BART's shape, its masks replicable).
    fn encoder_decoder(layers: usize, dec_weight: usize, decoder: bool, biased: bool) -> String {
        let mut g = String::from(
            "let g = graph {\n    \
             table { params = 2 MiB, output_bytes = 2 MiB }\n    \
             ids_e { output_bytes = 1 KiB }\n    ids_d { output_bytes = 1 KiB }\n    \
             emb_e { op = \"embedding\", output_bytes = 64 KiB }\n    \
             emb_d { op = \"embedding\", output_bytes = 64 KiB }\n    \
             table -> emb_e\n    ids_e -> emb_e\n    table -> emb_d\n    ids_d -> emb_d\n    \
             xe { op = \"dropout\", output_bytes = 64 KiB }\n    \
             xd { op = \"dropout\", output_bytes = 64 KiB }\n    \
             emb_e -> xe\n    emb_d -> xd\n    \
             steps_e { output_bytes = 1 KiB }\n    steps_d { output_bytes = 1 KiB }\n    \
             pos_e { op = \"unsqueeze\", flops = 1 MFLOP, output_bytes = 16 KiB }\n    \
             pos_d { op = \"unsqueeze\", flops = 1 MFLOP, output_bytes = 16 KiB }\n    \
             steps_e -> pos_e\n    steps_d -> pos_d\n",
        );
        let mut h = String::from("xe");
        for i in 0..layers {
            g += &format!(
                "    we{i} {{ params = 2 MiB, output_bytes = 2 MiB }}\n    \
                 qe{i} {{ op = \"linear\", flops = 2 GFLOP, output_bytes = 64 KiB }}\n    \
                 se{i} {{ op = \"add\", flops = 1 MFLOP, output_bytes = 64 KiB }}\n    \
                 he{i} {{ op = \"add\", flops = 1 MFLOP, output_bytes = 64 KiB }}\n    \
                 we{i} -> qe{i}\n    {h} -> qe{i}\n    qe{i} -> se{i}\n    \
                 se{i} -> he{i}\n    {h} -> he{i}\n"
            );
            if biased {
                g += &format!("    pos_e -> se{i}\n");
            }
            h = format!("he{i}");
        }
        g += &format!("    enc_out {{ op = \"mul\", flops = 1 MFLOP, output_bytes = 64 KiB }}\n    {h} -> enc_out\n");
        if !decoder {
            return g + "}\n";
        }
        let mut h = String::from("xd");
        for j in 0..layers {
            g += &format!(
                "    wq{j} {{ params = {dec_weight} MiB, output_bytes = 1 KiB }}\n    \
                 wk{j} {{ params = {dec_weight} MiB, output_bytes = 1 KiB }}\n    \
                 wv{j} {{ params = {dec_weight} MiB, output_bytes = 1 KiB }}\n    \
                 qd{j} {{ op = \"linear\", flops = 2 GFLOP, output_bytes = 64 KiB }}\n    \
                 kd{j} {{ op = \"linear\", flops = 2 GFLOP, output_bytes = 64 KiB }}\n    \
                 vd{j} {{ op = \"linear\", flops = 2 GFLOP, output_bytes = 64 KiB }}\n    \
                 sd{j} {{ op = \"add\", flops = 1 MFLOP, output_bytes = 64 KiB }}\n    \
                 hd{j} {{ op = \"add\", flops = 1 MFLOP, output_bytes = 64 KiB }}\n    \
                 wq{j} -> qd{j}\n    wk{j} -> kd{j}\n    wv{j} -> vd{j}\n    \
                 {h} -> qd{j}\n    enc_out -> kd{j}\n    enc_out -> vd{j}\n    \
                 qd{j} -> sd{j}\n    kd{j} -> sd{j}\n    \
                 sd{j} -> hd{j}\n    vd{j} -> hd{j}\n    {h} -> hd{j}\n"
            );
            if biased {
                g += &format!("    pos_d -> sd{j}\n");
            }
            h = format!("hd{j}");
        }
        g += &format!("    head {{ op = \"linear\", flops = 1 GFLOP, output_bytes = 64 KiB }}\n    {h} -> head\n}}\n");
        g
    }

    const RING: &str = "ring(n = 16, memory = 16 MiB, compute = 1 TFLOP/s, bandwidth = 100 GB/s)";

    /// The fastest of dp's cuts that are valid and fit in memory.
    fn best_valid_cut(p: &Problem, model: &CostModel) -> f64 {
        use crate::strategy::{dp, Allowed};
        let all = Allowed::all(p.graph.num_placed(), p.package.num_chips());
        dp::candidates(p, &all)
            .into_iter()
            .filter(|(_, chips)| valid(p, chips) && model.peak_memory(chips).is_ok())
            .map(|(_, chips)| model.latency(&chips).unwrap())
            .fold(f64::INFINITY, f64::min)
    }

    /// `auto`'s first incumbent (dp's cuts, then the layouts) on `p`.
    fn first_incumbent(p: &Problem) -> crate::strategy::incumbent::Incumbent {
        use crate::cost::{Judge, JudgeOptions};
        use crate::strategy::incumbent::{start, Start, DP_CUTS};
        use crate::strategy::{Budget, Search};
        let judge = Judge::new(p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let mut search = Search::new(p, &judge, Budget::Samples(1_000), 1).unwrap();
        let Start { best, .. } = start(&mut search, DP_CUTS).unwrap().expect("the analytical model");
        best
    }

    /// The layout of a small encoder-decoder is valid under the four rules
    /// and within memory as it comes, with the decoder's weights a chip
    /// cannot keep on chips that compute nothing.
    #[test]
    fn an_encoder_decoder_gets_its_layout_valid_and_within_memory() {
        let p = compile(&encoder_decoder(4, 4, true, true), RING);
        let made = layouts(&p);
        assert_eq!(made.len(), 1 + SMALLEST_FIRST.len(), "the encoder-decoder's structure");
        let model = CostModel::new(&p).unwrap();
        let g = &p.graph;
        for chips in made {
            let broken = mcm_solver::check(&p.graph, &p.package, &p.constraints, &Placement::new(chips.clone()));
            assert!(broken.is_empty(), "the layout breaks a rule: {broken:?}");
            assert!(model.peak_memory(&chips).is_ok(), "the layout overflows a chip");
            let mut computes = vec![false; p.package.num_chips()];
            let mut holds = vec![false; p.package.num_chips()];
            for (u, &c) in chips.iter().enumerate() {
                let node = g.placed_node(u as u32);
                computes[c as usize] |= node.flops > 0;
                holds[c as usize] |= node.params > 0;
            }
            assert!(
                (0..computes.len()).any(|c| holds[c] && !computes[c]),
                "no relay: the decoder's weights all stay with their readers"
            );
            assert!(computes.iter().filter(|&&c| c).count() >= 6, "{chips:?}");
        }
    }

    /// Where a chip's weights are of two sizes, streaming the smallest
    /// first keeps the large ones resident and leaves less to stream over
    /// the link into it: on slow links a smallest-first variant of the
    /// layout is faster than the in-order one, and as valid.
    #[test]
    fn streaming_the_smallest_weights_first_is_faster_on_slow_links() {
        // Each decoder weight's tensor as large as the weight, so that
        // streaming it costs its bytes on the link.
        let mut text = encoder_decoder(4, 7, true, true).replace(
            "params = 7 MiB, output_bytes = 1 KiB",
            "params = 7 MiB, output_bytes = 7 MiB",
        );
        for w in ["wk1", "wv1", "wk3", "wv3"] {
            text = text.replace(
                &format!("{w} {{ params = 7 MiB, output_bytes = 7 MiB"),
                &format!("{w} {{ params = 1 MiB, output_bytes = 1 MiB"),
            );
        }
        let slow = "ring(n = 16, memory = 16 MiB, compute = 4 TFLOP/s, bandwidth = 1 GB/s)";
        let p = compile(&text, slow);
        let model = CostModel::new(&p).unwrap();
        let made = layouts(&p);
        assert_eq!(made.len(), 1 + SMALLEST_FIRST.len(), "the encoder-decoder's structure");
        for chips in &made {
            assert!(valid(&p, chips), "a layout breaks a rule: {chips:?}");
            assert!(model.peak_memory(chips).is_ok(), "a layout overflows a chip");
        }
        let in_order = model.latency(&made[0]).unwrap();
        let smallest = made[1..]
            .iter()
            .map(|chips| model.latency(chips).unwrap())
            .fold(f64::INFINITY, f64::min);
        assert!(
            smallest < in_order,
            "smallest first {smallest} against in order {in_order}"
        );
    }

    /// `auto`'s first incumbent counts the layout among its candidates:
    /// it is no slower than the layout, which dp's cuts do not reach here.
    #[test]
    fn the_first_incumbent_is_at_least_as_fast_as_the_layout() {
        let p = compile(&encoder_decoder(4, 4, true, true), RING);
        let model = CostModel::new(&p).unwrap();
        let own = layouts(&p)
            .iter()
            .map(|chips| model.latency(chips).unwrap())
            .fold(f64::INFINITY, f64::min);
        let cuts = best_valid_cut(&p, &model);
        assert!(cuts > own, "a dp cut {cuts} as fast as the layout {own}");
        let best = first_incumbent(&p);
        assert!(
            best.latency <= own * (1.0 + 1e-9),
            "first {} against the layout's {own}",
            best.latency
        );
    }

    /// Without a bias (BART's shape), the layouts put the decoder's stages
    /// each after the chip of its keys and values: valid under the four
    /// rules, within memory, the best faster than every valid dp cut (whose
    /// line keeps the decoder on the chips next to the encoder's output),
    /// and `auto`'s first incumbent no slower than it.
    #[test]
    fn a_bias_free_encoder_decoder_gets_layouts_faster_than_dp_cuts() {
        let p = compile(&encoder_decoder(6, 1, true, false), RING);
        let model = CostModel::new(&p).unwrap();
        let made = layouts(&p);
        assert!(!made.is_empty(), "no layout for the bias-free encoder-decoder");
        let mut own = f64::INFINITY;
        for chips in &made {
            assert!(valid(&p, chips), "a layout breaks a rule: {chips:?}");
            assert!(model.peak_memory(chips).is_ok(), "a layout overflows a chip");
            own = own.min(model.latency(chips).unwrap());
        }
        let cuts = best_valid_cut(&p, &model);
        assert!(cuts > 1.2 * own, "a dp cut {cuts} near the layouts' {own}");
        let best = first_incumbent(&p);
        assert!(
            best.latency <= own * (1.0 + 1e-9),
            "first {} against the layouts' {own}",
            best.latency
        );
    }

    /// Without the structure, no candidate: a chain, and an encoder alone
    /// (a bias read by every layer, no output read by linear nodes only).
    #[test]
    fn a_graph_without_the_structure_gets_no_layout() {
        let mut chain = String::from("let g = graph {\n");
        for i in 0..12 {
            chain += &format!("    w{i} {{ params = 1 MiB }}\n    n{i} {{ op = \"linear\", flops = 1 GFLOP, output_bytes = 1 MB }}\n    w{i} -> n{i}\n");
            if i > 0 {
                chain += &format!("    n{} -> n{i}\n", i - 1);
            }
        }
        chain += "}\n";
        assert!(layouts(&compile(&chain, RING)).is_empty());
        assert!(layouts(&compile(&encoder_decoder(4, 1, false, true), RING)).is_empty());
    }
}
