//! The dynamic check of the solver brief: run each chip's nodes in
//! topological order and keep its weights plus the activations still
//! needed within the chip's memory. A parameter node's output is its
//! weights, not a second copy; a tensor received from another chip is one.

use mcm_core::graph::{Csr, Graph};
use mcm_core::package::Package;
use std::fmt;

/// Per chip: resident weights and the peak of weights plus live tensors.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PeakMemory {
    pub weights: Vec<u64>,
    pub peak: Vec<u64>,
}

/// The first point where a chip runs out of memory.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryOverflow {
    pub chip: String,
    pub node: String,
    pub weights: u64,
    pub live: u64,
    pub capacity: f64,
    /// What every chip uses (its peak over the whole run).
    pub usage: PeakMemory,
}

impl fmt::Display for MemoryOverflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use mcm_core::quantity::{format_quantity, Dim};
        let b = |v: f64| format_quantity(v, Dim::BYTES);
        write!(
            f,
            "chip `{}` runs out of memory at node `{}`: {} of weights and {} of live activations exceed its {}",
            self.chip,
            self.node,
            b(self.weights as f64),
            b(self.live as f64),
            b(self.capacity)
        )
    }
}

/// Edge lists by node, built once per graph: evaluations run on every
/// sample and must not rescan the edge list.
pub struct EdgeIndex {
    /// Indices into `g.edges` of each node's input edges.
    ins: Csr<u32>,
    /// Each node's consumers.
    outs: Csr<u32>,
}

impl EdgeIndex {
    pub fn new(g: &Graph) -> EdgeIndex {
        let n = g.nodes.len();
        let ins = g.edges.iter().enumerate().map(|(i, e)| (e.dst as u32, i as u32));
        EdgeIndex {
            ins: Csr::from_pairs(n, ins),
            outs: Csr::from_pairs(n, g.edges.iter().map(|e| (e.src as u32, e.dst as u32))),
        }
    }
}

/// The chips each replicable node is copied to: every chip hosting one of
/// its consumers (copies included), as `(node, chips)` for replicable nodes
/// with at least one consumer.
pub fn replica_hosts(g: &Graph, edges: &EdgeIndex, chips: &[u32]) -> Vec<(usize, Vec<u32>)> {
    let n = g.nodes.len();
    if g.num_placed() == n {
        return Vec::new();
    }
    let mut hosts: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &v in g.topological_order().iter().rev() {
        if g.decision_of(v).is_some() {
            continue;
        }
        // Consumers come later in topological order, so theirs are known.
        let mut hs: Vec<u32> = Vec::new();
        for &w in &edges.outs[v] {
            let w = w as usize;
            match g.decision_of(w) {
                Some(d) => hs.push(chips[d as usize]),
                None => hs.extend_from_slice(&hosts[w]),
            }
        }
        hs.sort_unstable();
        hs.dedup();
        hosts[v] = hs;
    }
    hosts
        .into_iter()
        .enumerate()
        .filter(|(v, h)| g.decision_of(*v).is_none() && !h.is_empty())
        .collect()
}

/// Runs the dynamic check. A tensor made on a chip is live from its
/// producer to its last consumer there (at least while its producer runs);
/// a tensor received from another chip is live from its first consumer to
/// its last. `memory[c]` is `None` for a chip without a limit.
pub fn peak_memory(
    g: &Graph,
    edges: &EdgeIndex,
    package: &Package,
    memory: &[Option<f64>],
    chips: &[u32],
) -> Result<PeakMemory, MemoryOverflow> {
    let c = package.num_chips();
    let mut on_chip: Vec<Vec<usize>> = vec![Vec::new(); c];
    let mut copies: Vec<Vec<u32>> = vec![Vec::new(); g.nodes.len()];
    for (v, hs) in replica_hosts(g, edges, chips) {
        copies[v] = hs;
    }
    for &v in g.topological_order() {
        match g.decision_of(v) {
            Some(d) => on_chip[chips[d as usize] as usize].push(v),
            None => {
                for &h in &copies[v] {
                    on_chip[h as usize].push(v);
                }
            }
        }
    }
    let mut usage = PeakMemory {
        weights: vec![0; c],
        peak: vec![0; c],
    };
    // Per producer: first and last step of use on the current chip, and size.
    let mut stamp = vec![usize::MAX; g.nodes.len()];
    let mut span = vec![(0usize, 0usize, 0u64); g.nodes.len()];
    let mut first_overflow: Option<MemoryOverflow> = None;
    for (chip, seq) in on_chip.iter().enumerate() {
        // Saturating: a byte count past 2^64 is over any memory, not 0.
        let weights: u64 = seq.iter().fold(0u64, |w, &v| w.saturating_add(g.nodes[v].params));
        let mut touched = Vec::new();
        for (step, &v) in seq.iter().enumerate() {
            // The node's own output, live at least while it runs (a node
            // runs once per chip, so this is its first sight here).
            stamp[v] = chip;
            span[v] = (step, step, own_output(&g.nodes[v]));
            touched.push(v);
            for &ei in &edges.ins[v] {
                let e = &g.edges[ei as usize];
                let u = e.src;
                if stamp[u] != chip {
                    // Received from another chip: live from here on.
                    stamp[u] = chip;
                    span[u] = (step, step, e.bytes);
                    touched.push(u);
                } else {
                    span[u].1 = span[u].1.max(step);
                    if !local(g, chips, &copies, u, chip) {
                        span[u].2 = span[u].2.max(e.bytes);
                    }
                }
            }
        }
        let mut delta = vec![0i128; seq.len() + 1];
        for &u in &touched {
            let (s, t, b) = span[u];
            delta[s] += b as i128;
            delta[t + 1] -= b as i128;
        }
        let mut live = 0i128;
        let mut peak = 0u64;
        for (step, d) in delta.iter().take(seq.len()).enumerate() {
            live += d;
            let l = live.max(0) as u64;
            peak = peak.max(l);
            if let (Some(cap), None) = (memory[chip], &first_overflow) {
                if weights.saturating_add(l) as f64 > cap {
                    first_overflow = Some(MemoryOverflow {
                        chip: package.chips[chip].name.clone(),
                        node: g.nodes[seq[step]].id.clone(),
                        weights,
                        live: l,
                        capacity: cap,
                        usage: PeakMemory::default(),
                    });
                }
            }
        }
        usage.weights[chip] = weights;
        usage.peak[chip] = weights.saturating_add(peak);
    }
    match first_overflow {
        Some(mut o) => {
            o.usage = usage;
            Err(o)
        }
        None => Ok(usage),
    }
}

/// Bytes a node's output adds to its chip. A node that computes nothing and
/// keeps weights (a parameter read) hands out its weights themselves, which
/// are already counted as resident.
fn own_output(n: &mcm_core::graph::Node) -> u64 {
    if n.flops == 0 && n.params > 0 {
        n.output_bytes.saturating_sub(n.params)
    } else {
        n.output_bytes
    }
}

/// Whether `u` runs on `chip` (placed there, or copied there).
fn local(g: &Graph, chips: &[u32], copies: &[Vec<u32>], u: usize, chip: usize) -> bool {
    match g.decision_of(u) {
        Some(d) => chips[d as usize] as usize == chip,
        None => copies[u].contains(&(chip as u32)),
    }
}
