//! Random small problems for the property tests: topologies and DAGs.

use proptest::prelude::*;

#[derive(Clone, Debug)]
pub enum Topo {
    Ring(usize),
    Mesh(usize, usize),
}

impl Topo {
    pub fn chips(&self) -> usize {
        match self {
            Topo::Ring(n) => *n,
            Topo::Mesh(r, c) => r * c,
        }
    }

    /// Fewest links, from the topology's definition: a one-way ring, or
    /// Manhattan distance on a mesh with links both ways. C when unreachable.
    pub fn hops(&self, a: usize, b: usize) -> usize {
        match self {
            Topo::Ring(n) => {
                if b >= a {
                    b - a
                } else {
                    *n
                }
            }
            Topo::Mesh(_, c) => (a / c).abs_diff(b / c) + (a % c).abs_diff(b % c),
        }
    }

    /// The stdlib package expression: `memory_kib` per chip, 1 TFLOP/s, 1 GB/s links.
    pub fn package(&self, memory_kib: u64) -> String {
        match self {
            Topo::Ring(n) => {
                format!("ring(n = {n}, memory = {memory_kib} KiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)")
            }
            Topo::Mesh(r, k) => format!(
                "mesh(rows = {r}, cols = {k}, memory = {memory_kib} KiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)"
            ),
        }
    }
}

/// A ring of 1 to 5 chips or a mesh of up to 2 x 3.
pub fn topo() -> impl Strategy<Value = Topo> {
    prop_oneof![
        (1usize..6).prop_map(Topo::Ring),
        (1usize..3, 1usize..4).prop_map(|(r, c)| Topo::Mesh(r, c))
    ]
}

/// A DAG on `n` nodes in topological order: each pair i < j is an edge
/// i -> j with probability `p`.
pub fn dag(n: usize, p: f64) -> impl Strategy<Value = Vec<(usize, usize)>> {
    let pairs: Vec<(usize, usize)> = (0..n).flat_map(|j| (0..j).map(move |i| (i, j))).collect();
    proptest::collection::vec(proptest::bool::weighted(p), pairs.len())
        .prop_map(move |pick| pairs.iter().zip(&pick).filter(|(_, p)| **p).map(|(e, _)| *e).collect())
}
