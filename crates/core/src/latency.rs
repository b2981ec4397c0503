//! The arithmetic of the analytical cost model, shared by the judge (the
//! search crate's `CostModel`) and the solver's latency target, so that
//! "latency ≤ T" means the same thing to both, bit for bit.
//!
//! stage(d) = compute(d) + the time of the links leaving d; compute(d) sums
//! the op times of the nodes on d (placed nodes in decision order, then
//! replicable copies in node order), each its measured time on d's `kind`
//! where the graph gives one, else `flops / compute`; a node's output goes once to each other
//! chip hosting a consumer, along the route with fewest links, a link shared
//! by several destinations carrying it once; its size is the largest `bytes`
//! of its edges that leave the chip. Link time = bytes / bandwidth +
//! transfers × the link's latency.
//!
//! Every sum adds non-negative terms in a fixed order, so it is monotone in
//! its terms: the stage summed from a subset of a chip's contributions
//! ([`LatencyModel::stage_of`]) is never above the full one. The solver's
//! explanations rest on that.

use crate::graph::{Csr, Graph};
use crate::op_time::Measured;
use crate::package::Package;
use std::sync::Arc;

/// No link: the route's end, or no route.
const NO_LINK: u32 = u32::MAX;

/// Why a package cannot be costed (a missing or non-positive rate).
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyError {
    pub message: String,
    pub help: String,
}

/// The static part of the model of one graph on one package.
#[derive(Debug)]
pub struct LatencyModel {
    pub graph: Arc<Graph>,
    pub package: Arc<Package>,
    /// FLOP/s per chip.
    pub compute: Vec<f64>,
    /// Bytes/s per link.
    pub bandwidth: Vec<f64>,
    /// Seconds per transfer per link.
    pub latency: Vec<f64>,
    /// First link of the route `a -> b` at `a * C + b`.
    next_link: Vec<u32>,
    /// Per placed node: its placed consumers and the bytes of each edge.
    pub consumers: Csr<(u32, u64)>,
    /// Per placed node, its flops.
    pub flops: Vec<f64>,
    /// Replicable nodes that run (node index ascending): their flops and
    /// the placed nodes they feed through replicable nodes only; a copy runs
    /// on each chip hosting one of those.
    pub replicas: Vec<(f64, Vec<u32>)>,
    /// The graph node of each replica.
    pub replica_nodes: Vec<usize>,
    /// Measured times: rows are the placed nodes in decision order, then
    /// the replicas in `replicas` order. Empty when none applies.
    pub measured: Measured,
}

/// What one chip's stage is made of, each list ascending: the placed nodes
/// on it, the replicas copied there (indices into `replicas`), and per link
/// leaving it the nodes whose output crosses it with the size sent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChipParts {
    pub nodes: Vec<u32>,
    pub replicas: Vec<u32>,
    /// (link, [(node, bytes)]) in link order.
    pub links: Vec<(usize, Vec<(u32, u64)>)>,
}

impl LatencyModel {
    pub fn new(graph: Arc<Graph>, package: Arc<Package>) -> Result<LatencyModel, LatencyError> {
        let c = package.num_chips();
        if c == 0 {
            return Err(LatencyError {
                message: "the package has no chips".into(),
                help: "declare at least one chip".into(),
            });
        }
        let mut compute = Vec::with_capacity(c);
        for (i, chip) in package.chips.iter().enumerate() {
            match package.chip_compute(i as u32) {
                Some(x) if x > 0.0 && x.is_finite() => compute.push(x),
                Some(_) => {
                    return Err(LatencyError {
                        message: format!("chip `{}` has a compute rate that is not positive", chip.name),
                        help: "the cost model divides flops by `compute`; give every chip a positive rate".into(),
                    })
                }
                None => {
                    return Err(LatencyError {
                        message: format!("chip `{}` (chip {i}) has no `compute` attribute", chip.name),
                        help: "the cost model needs `compute = ... TFLOP/s` on every chip".into(),
                    })
                }
            }
        }
        let mut bandwidth = Vec::with_capacity(package.links.len());
        for (li, l) in package.links.iter().enumerate() {
            let (a, b) = (&package.chips[l.src as usize].name, &package.chips[l.dst as usize].name);
            match package.link_bandwidth(li) {
                Some(x) if x > 0.0 && x.is_finite() => bandwidth.push(x),
                _ => {
                    return Err(LatencyError {
                        message: format!("the link `{a}` -> `{b}` has no positive `bandwidth`"),
                        help: "the cost model needs `bandwidth = ... GB/s` on every link".into(),
                    })
                }
            }
        }
        let latency = (0..package.links.len())
            .map(|l| package.link_latency(l).unwrap_or(0.0))
            .collect();
        let next_link = (0..c * c)
            .map(|i| {
                let (a, b) = ((i / c) as u32, (i % c) as u32);
                package
                    .next_hop(a, b)
                    .and_then(|y| package.link(a, y))
                    .map_or(NO_LINK, |l| l as u32)
            })
            .collect();
        let consumers = Csr::from_pairs(
            graph.num_placed(),
            graph.placed_edges().iter().map(|e| (e.src, (e.dst, e.bytes))),
        );
        let flops = (0..graph.num_placed() as u32)
            .map(|d| graph.placed_node(d).flops as f64)
            .collect();
        let (replicas, replica_nodes) = replica_feeds(&graph);
        let rows: Vec<usize> = graph
            .placed_nodes()
            .iter()
            .copied()
            .chain(replica_nodes.iter().copied())
            .collect();
        let measured = Measured::new(&graph, &package, &rows);
        Ok(LatencyModel {
            graph,
            package,
            compute,
            bandwidth,
            latency,
            next_link,
            consumers,
            flops,
            replicas,
            replica_nodes,
            measured,
        })
    }

    /// Some op has a measured time on some chip's kind.
    pub fn is_profiled(&self) -> bool {
        !self.measured.is_empty()
    }

    /// Seconds placed node `u` computes on chip `c`: its measured time on
    /// `c`'s kind, else flops / compute.
    #[inline]
    pub fn op_time(&self, u: u32, c: u32) -> f64 {
        match self.measured.get(u as usize, c) {
            Some(t) => t,
            None => self.flops[u as usize] / self.compute[c as usize],
        }
    }

    /// Seconds a copy of replica `r` computes on chip `c`, alike.
    #[inline]
    pub fn replica_time(&self, r: u32, c: u32) -> f64 {
        match self.measured.get(self.flops.len() + r as usize, c) {
            Some(t) => t,
            None => self.replicas[r as usize].0 / self.compute[c as usize],
        }
    }

    /// Per graph node, the least time it takes on any chip (placed nodes
    /// and replicas; 0 for a replicable node that never runs): what a lower
    /// bound may charge a node wherever it goes.
    pub fn shortest_op_times(&self) -> Vec<f64> {
        // Chips of one measured kind and one rate cost every op alike.
        let mut chips: Vec<u32> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for d in 0..self.num_chips() as u32 {
            if seen.insert((self.measured.column(d), self.compute[d as usize].to_bits())) {
                chips.push(d);
            }
        }
        let least = |t: &dyn Fn(u32) -> f64| chips.iter().map(|&d| t(d)).fold(f64::INFINITY, f64::min);
        let mut out = vec![0.0; self.graph.nodes.len()];
        for (u, &v) in self.graph.placed_nodes().iter().enumerate() {
            out[v] = least(&|d| self.op_time(u as u32, d));
        }
        for (r, &v) in self.replica_nodes.iter().enumerate() {
            out[v] = least(&|d| self.replica_time(r as u32, d));
        }
        out
    }

    /// (ops with a measured time on their chip's kind, ops) under `chips`,
    /// replicable copies counted as ops.
    pub fn profiled_ops(&self, chips: &[u32]) -> (usize, usize) {
        let hosts = self.replica_hosts(chips);
        let total = chips.len() + hosts.iter().map(Vec::len).sum::<usize>();
        if self.measured.is_empty() {
            return (0, total);
        }
        let n = self.flops.len();
        let placed = chips
            .iter()
            .enumerate()
            .filter(|&(u, &c)| self.measured.get(u, c).is_some())
            .count();
        let copies: usize = hosts
            .iter()
            .enumerate()
            .map(|(r, h)| h.iter().filter(|&&c| self.measured.get(n + r, c).is_some()).count())
            .sum();
        (placed + copies, total)
    }

    pub fn num_chips(&self) -> usize {
        self.compute.len()
    }

    /// The first link of the route `a -> b`; `None` when `a == b` or `b`
    /// cannot be reached.
    pub fn first_link(&self, a: u32, b: u32) -> Option<usize> {
        let l = self.next_link[a as usize * self.compute.len() + b as usize];
        (l != NO_LINK).then_some(l as usize)
    }

    /// The links from `a` to `b` in order, `None` when `b` is unreachable.
    pub fn route(&self, a: u32, b: u32) -> Option<impl Iterator<Item = usize> + '_> {
        self.package.hops(a, b)?;
        let mut at = a;
        Some(std::iter::from_fn(move || {
            let l = self.first_link(at, b)?;
            at = self.package.links[l].dst;
            Some(l)
        }))
    }

    /// The chips hosting each replica's copies (ascending) under `chips`.
    pub fn replica_hosts(&self, chips: &[u32]) -> Vec<Vec<u32>> {
        self.replicas
            .iter()
            .map(|(_, feeds)| {
                let mut h: Vec<u32> = feeds.iter().map(|&d| chips[d as usize]).collect();
                h.sort_unstable();
                h.dedup();
                h
            })
            .collect()
    }

    /// Seconds of compute per chip, replicable copies included.
    pub fn compute_times(&self, chips: &[u32]) -> Vec<f64> {
        if self.is_profiled() {
            return self.measured_compute_times(chips);
        }
        let mut t = vec![0.0; self.compute.len()];
        for (d, &c) in chips.iter().enumerate() {
            t[c as usize] += self.flops[d] / self.compute[c as usize];
        }
        for ((f, _), hosts) in self.replicas.iter().zip(self.replica_hosts(chips)) {
            for c in hosts {
                t[c as usize] += f / self.compute[c as usize];
            }
        }
        t
    }

    /// [`LatencyModel::compute_times`] with measured times, in the same order.
    fn measured_compute_times(&self, chips: &[u32]) -> Vec<f64> {
        let mut t = vec![0.0; self.compute.len()];
        for (d, &c) in chips.iter().enumerate() {
            t[c as usize] += self.op_time(d as u32, c);
        }
        for (r, hosts) in self.replica_hosts(chips).into_iter().enumerate() {
            for c in hosts {
                t[c as usize] += self.replica_time(r as u32, c);
            }
        }
        t
    }

    /// The size node `u` sends under `chips` (the largest edge leaving its
    /// chip) and the chips it sends to, in consumer order; `None` when it
    /// sends nothing.
    pub fn sends(&self, chips: &[u32], u: u32, dests: &mut Vec<u32>) -> Option<u64> {
        let from = chips[u as usize];
        dests.clear();
        let mut size = 0u64;
        for &(v, b) in &self.consumers[u as usize] {
            let to = chips[v as usize];
            if to != from {
                size = size.max(b);
                if !dests.contains(&to) {
                    dests.push(to);
                }
            }
        }
        (!dests.is_empty()).then_some(size)
    }

    /// Bytes and transfers carried per link; `Err` names a transfer that no
    /// route can carry.
    pub fn link_traffic(&self, chips: &[u32]) -> Result<(Vec<f64>, Vec<u32>), String> {
        let mut bytes = vec![0.0; self.bandwidth.len()];
        let mut transfers = vec![0u32; self.bandwidth.len()];
        let mut stamp = vec![u32::MAX; self.bandwidth.len()];
        let mut dests: Vec<u32> = Vec::new();
        for u in 0..self.consumers.len() as u32 {
            let Some(size) = self.sends(chips, u, &mut dests) else {
                continue;
            };
            let from = chips[u as usize];
            for &to in &dests {
                let Some(route) = self.route(from, to) else {
                    return Err(self.no_route(u, from, to));
                };
                for l in route {
                    if stamp[l] != u {
                        stamp[l] = u;
                        bytes[l] += size as f64;
                        transfers[l] += 1;
                    }
                }
            }
        }
        Ok((bytes, transfers))
    }

    /// Why `u`'s output cannot go from `from` to `to`.
    pub fn no_route(&self, u: u32, from: u32, to: u32) -> String {
        let p = &self.package;
        format!(
            "node `{}` on chip `{}` sends to chip `{}`, which no route reaches",
            self.graph.placed_node(u).id,
            p.chips[from as usize].name,
            p.chips[to as usize].name
        )
    }

    /// Seconds a link is busy for these bytes and transfers.
    pub fn link_time(&self, l: usize, bytes: f64, transfers: u32) -> f64 {
        bytes / self.bandwidth[l] + transfers as f64 * self.latency[l]
    }

    /// Per chip: compute seconds and seconds of the links leaving it; per
    /// link: (bytes, transfers, busy seconds).
    #[allow(clippy::type_complexity)]
    pub fn stages(&self, chips: &[u32]) -> Result<(Vec<f64>, Vec<f64>, Vec<(f64, u32, f64)>), String> {
        self.check(chips)?;
        let compute = self.compute_times(chips);
        let mut links = vec![0.0; compute.len()];
        let (bytes, transfers) = self.link_traffic(chips)?;
        let mut traffic = Vec::with_capacity(bytes.len());
        for (l, (b, k)) in bytes.into_iter().zip(transfers).enumerate() {
            let t = self.link_time(l, b, k);
            links[self.package.links[l].src as usize] += t;
            traffic.push((b, k, t));
        }
        Ok((compute, links, traffic))
    }

    /// Every chip's stage time (compute plus outgoing links).
    pub fn stage_times(&self, chips: &[u32]) -> Result<Vec<f64>, String> {
        let (compute, links, _) = self.stages(chips)?;
        Ok(compute.iter().zip(&links).map(|(a, b)| a + b).collect())
    }

    /// Seconds per inference: the slowest chip's stage.
    pub fn latency(&self, chips: &[u32]) -> Result<f64, String> {
        Ok(self.stage_times(chips)?.into_iter().fold(0.0, f64::max))
    }

    /// A partition of the right length on existing chips.
    pub fn check(&self, chips: &[u32]) -> Result<(), String> {
        if chips.len() != self.consumers.len() {
            return Err(format!(
                "a partition of {} nodes for a graph with {}",
                chips.len(),
                self.consumers.len()
            ));
        }
        if let Some(&c) = chips.iter().find(|&&c| c as usize >= self.compute.len()) {
            return Err(format!(
                "chip {c} does not exist (the package has {})",
                self.compute.len()
            ));
        }
        Ok(())
    }

    /// What chip `d`'s stage is made of under `chips` (every transfer
    /// routable: see [`LatencyModel::link_traffic`]).
    pub fn parts(&self, chips: &[u32], d: u32) -> ChipParts {
        let mut parts = ChipParts {
            nodes: (0..chips.len() as u32).filter(|&u| chips[u as usize] == d).collect(),
            ..ChipParts::default()
        };
        for (i, hosts) in self.replica_hosts(chips).into_iter().enumerate() {
            if hosts.contains(&d) {
                parts.replicas.push(i as u32);
            }
        }
        let out: Vec<usize> = (0..self.package.links.len())
            .filter(|&l| self.package.links[l].src == d)
            .collect();
        let mut per_link: Vec<Vec<(u32, u64)>> = vec![Vec::new(); out.len()];
        let mut dests = Vec::new();
        for u in 0..self.consumers.len() as u32 {
            let Some(size) = self.sends(chips, u, &mut dests) else {
                continue;
            };
            let from = chips[u as usize];
            for (k, &l) in out.iter().enumerate() {
                let crosses = dests
                    .iter()
                    .any(|&to| self.route(from, to).is_some_and(|mut r| r.any(|x| x == l)));
                if crosses {
                    per_link[k].push((u, size));
                }
            }
        }
        parts.links = out.into_iter().zip(per_link).filter(|(_, v)| !v.is_empty()).collect();
        parts
    }

    /// Chip `d`'s stage summed from these parts, in the model's order: with
    /// every part of a placement it is that placement's stage, bit for bit;
    /// with fewer it is no more.
    pub fn stage_of(&self, d: u32, parts: &ChipParts) -> f64 {
        let c = self.compute[d as usize];
        let mut compute = 0.0;
        if self.is_profiled() {
            for &u in &parts.nodes {
                compute += self.op_time(u, d);
            }
            for &r in &parts.replicas {
                compute += self.replica_time(r, d);
            }
        } else {
            for &u in &parts.nodes {
                compute += self.flops[u as usize] / c;
            }
            for &r in &parts.replicas {
                compute += self.replicas[r as usize].0 / c;
            }
        }
        let mut links = 0.0;
        for (l, crossing) in &parts.links {
            let mut bytes = 0.0;
            for &(_, b) in crossing {
                bytes += b as f64;
            }
            links += self.link_time(*l, bytes, crossing.len() as u32);
        }
        compute + links
    }
}

/// Per replicable node that runs (ascending), its flops and the placed
/// nodes it feeds through replicable nodes only; and its node index.
#[allow(clippy::type_complexity)]
fn replica_feeds(g: &Graph) -> (Vec<(f64, Vec<u32>)>, Vec<usize>) {
    if g.num_placed() == g.nodes.len() {
        return (Vec::new(), Vec::new());
    }
    g.replica_feeds()
        .into_iter()
        .enumerate()
        .filter(|(v, f)| g.decision_of(*v).is_none() && !f.is_empty())
        .map(|(v, f)| ((g.nodes[v].flops as f64, f), v))
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Node;
    use crate::package::{Chip, Link};
    use crate::quantity::{Dim, Scalar};

    fn chip(name: &str, compute: f64) -> Chip {
        let mut attrs = std::collections::BTreeMap::new();
        attrs.insert("compute".into(), Scalar::Num(compute, Dim::FLOP_RATE));
        Chip {
            name: name.into(),
            attrs,
        }
    }

    /// A diamond with a replicable weight read by two nodes, on a one-way
    /// line of three chips of unequal speeds.
    fn model() -> LatencyModel {
        let mut nodes: Vec<Node> = (0..5)
            .map(|i| {
                let mut n = Node::new(format!("n{i}"));
                n.flops = 1000 * (i + 1) as u64;
                n.output_bytes = 100 * (i + 1) as u64;
                n
            })
            .collect();
        nodes[4].replicable = true;
        let g = Graph::new(
            "g",
            nodes,
            vec![
                (0, 1, None),
                (0, 2, Some(7)),
                (1, 3, None),
                (2, 3, None),
                (4, 1, None),
                (4, 3, None),
            ],
        )
        .unwrap();
        let mut links = Vec::new();
        for (a, b) in [(0, 1), (1, 2)] {
            let mut attrs = std::collections::BTreeMap::new();
            attrs.insert("bandwidth".into(), Scalar::Num(10.0 * (a + 1) as f64, Dim::RATE));
            links.push(Link { src: a, dst: b, attrs });
        }
        let p = Package::new("p", vec![chip("a", 1.0), chip("b", 2.0), chip("c", 3.0)], links).unwrap();
        LatencyModel::new(Arc::new(g), Arc::new(p)).unwrap()
    }

    /// Summed from its parts, a chip's stage is the model's, bit for bit;
    /// from fewer parts it is no more.
    #[test]
    fn a_stage_from_its_parts_is_the_stage() {
        let m = model();
        for code in 0..81u32 {
            let chips: Vec<u32> = (0..4).map(|i| code / 3u32.pow(i) % 3).collect();
            let Ok(stages) = m.stage_times(&chips) else {
                continue;
            };
            for d in 0..3 {
                let mut parts = m.parts(&chips, d);
                assert_eq!(
                    m.stage_of(d, &parts).to_bits(),
                    stages[d as usize].to_bits(),
                    "{chips:?}"
                );
                if parts.nodes.pop().is_some() || parts.links.pop().is_some() {
                    assert!(m.stage_of(d, &parts) <= stages[d as usize]);
                }
            }
        }
        // n0 on a, the rest on c: n0 sends 100 B (its largest edge off a)
        // over both links; the weight n4 runs on c only.
        let chips = [0, 2, 2, 2];
        let st = m.stage_times(&chips).unwrap();
        assert_eq!(
            st,
            vec![
                1000.0 + 100.0 / 10.0,
                100.0 / 20.0,
                (2000.0 + 3000.0 + 4000.0 + 5000.0) / 3.0
            ]
        );
        assert!(m.stage_times(&[2, 0, 0, 0]).unwrap_err().contains("no route"));
    }

    /// Measured times replace flops / compute on chips of their kind, for
    /// placed nodes and replicable copies alike; the parts still sum to the
    /// stage bit for bit.
    #[test]
    fn measured_times_replace_flops_on_their_kind() {
        let g = crate::graph::parse_graph_json(
            r#"{"nodes": [
                {"id": "x", "flops": 600, "output_bytes": 40, "times": {"fast": 1.5}},
                {"id": "y", "flops": 900, "times": {"fast": 0.25, "slow": 7.0}},
                {"id": "w", "flops": 30, "replicable": true, "times": {"fast": 0.125}}],
               "edges": [{"from": "x", "to": "y"}, {"from": "w", "to": "x"}, {"from": "w", "to": "y"}]}"#,
        )
        .unwrap();
        let mut a = chip("a", 100.0);
        a.attrs.insert("kind".into(), Scalar::Str("fast".into()));
        let b = chip("b", 300.0);
        let mut attrs = std::collections::BTreeMap::new();
        attrs.insert("bandwidth".into(), Scalar::Num(20.0, Dim::RATE));
        let p = Package::new("p", vec![a, b], vec![Link { src: 0, dst: 1, attrs }]).unwrap();
        let m = LatencyModel::new(Arc::new(g), Arc::new(p)).unwrap();
        assert!(m.is_profiled());
        // x on a (measured 1.5), y on b (no kind: 900 / 300); w copied to both.
        let chips = [0, 1];
        assert_eq!(m.compute_times(&chips), vec![1.5 + 0.125, 900.0 / 300.0 + 30.0 / 300.0]);
        assert_eq!(
            m.stage_times(&chips).unwrap(),
            vec![1.5 + 0.125 + 40.0 / 20.0, 900.0 / 300.0 + 30.0 / 300.0]
        );
        assert_eq!(m.profiled_ops(&chips), (2, 4));
        assert_eq!(m.compute_times(&[0, 0]), vec![1.5 + 0.25 + 0.125, 0.0]);
        assert_eq!(m.profiled_ops(&[0, 0]), (3, 3));
        for chips in [[0, 0], [0, 1], [1, 0], [1, 1]] {
            let Ok(stages) = m.stage_times(&chips) else { continue };
            for d in 0..2 {
                let parts = m.parts(&chips, d);
                assert_eq!(m.stage_of(d, &parts).to_bits(), stages[d as usize].to_bits());
            }
        }
        // Unprofiled, the same graph costs flops / compute.
        assert_eq!(model().profiled_ops(&[0, 1, 2, 2]), (0, 6));
    }
}
