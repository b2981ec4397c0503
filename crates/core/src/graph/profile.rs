//! Measured op times: a node may carry, per chip kind, the seconds one
//! execution took on a chip of that kind (`"times": {"a100": 1.25e-4}`).
//! Kinds are interned once per graph and every node's entries are a slice of
//! one flat vector, so a graph without times costs one empty vector and a
//! profiled one 12 bytes per measured time plus 4 per node.

use std::collections::HashMap;

/// The measured times of a graph's nodes, by node index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    kinds: Vec<String>,
    /// Node `i`'s entries are `entries[start[i]..start[i + 1]]`; empty when
    /// no node has a time.
    start: Vec<u32>,
    /// (kind, seconds), each node's kinds ascending.
    entries: Vec<(u32, f64)>,
}

impl Profile {
    /// No node has a measured time.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The kinds some node was measured on, in order of first appearance.
    pub fn kinds(&self) -> &[String] {
        &self.kinds
    }

    pub fn kind_index(&self, kind: &str) -> Option<u32> {
        self.kinds.iter().position(|k| k == kind).map(|i| i as u32)
    }

    /// Node `node`'s measured times as (kind index, seconds).
    pub fn times(&self, node: usize) -> &[(u32, f64)] {
        match (self.start.get(node), self.start.get(node + 1)) {
            (Some(&a), Some(&b)) => &self.entries[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Seconds node `node` took on a chip of kind `kind`, if measured.
    pub fn time(&self, node: usize, kind: u32) -> Option<f64> {
        self.times(node).iter().find(|(k, _)| *k == kind).map(|&(_, t)| t)
    }

    /// Whether this profile can be that of a graph of `nodes` nodes (one
    /// with times past the last node cannot).
    pub fn fits(&self, nodes: usize) -> bool {
        self.start.len() <= nodes + 1
    }

    /// How many nodes carry at least one time.
    pub fn measured_nodes(&self) -> usize {
        self.start.windows(2).filter(|w| w[1] > w[0]).count()
    }
}

/// Builds a [`Profile`] node by node, in node order.
#[derive(Debug, Default)]
pub struct ProfileBuilder {
    profile: Profile,
    interned: HashMap<String, u32>,
    nodes: usize,
}

impl ProfileBuilder {
    /// Adds the next node's times (seconds; validated by the caller).
    pub fn push(&mut self, times: impl IntoIterator<Item = (String, f64)>) {
        let p = &mut self.profile;
        let from = p.entries.len();
        for (kind, t) in times {
            let k = match self.interned.get(&kind) {
                Some(&k) => k,
                None => {
                    let k = p.kinds.len() as u32;
                    p.kinds.push(kind.clone());
                    self.interned.insert(kind, k);
                    k
                }
            };
            p.entries.push((k, t));
        }
        p.entries[from..].sort_by_key(|&(k, _)| k);
        if p.entries.len() > from && p.start.is_empty() {
            // The first node with times: the nodes before it have none.
            p.start = vec![0; self.nodes + 1];
        }
        self.nodes += 1;
        if !p.start.is_empty() {
            p.start.push(p.entries.len() as u32);
        }
    }

    pub fn finish(mut self) -> Profile {
        self.profile.entries.shrink_to_fit();
        self.profile.start.shrink_to_fit();
        self.profile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_found_by_node_and_kind() {
        let mut b = ProfileBuilder::default();
        b.push([]);
        b.push([("gpu".to_string(), 2.0), ("cpu".to_string(), 5.0)]);
        b.push([]);
        b.push([("cpu".to_string(), 7.0)]);
        let p = b.finish();
        assert_eq!(p.kinds(), ["gpu", "cpu"]);
        let cpu = p.kind_index("cpu").unwrap();
        assert_eq!(p.time(0, cpu), None);
        assert_eq!(p.time(1, cpu), Some(5.0));
        assert_eq!(p.time(1, 0), Some(2.0));
        assert_eq!(p.time(2, cpu), None);
        assert_eq!(p.time(3, cpu), Some(7.0));
        assert_eq!(p.time(3, 0), None);
        assert_eq!(p.time(9, cpu), None, "past the last node");
        assert_eq!(p.measured_nodes(), 2);
        let mut none = ProfileBuilder::default();
        none.push([]);
        assert!(none.finish().is_empty());
    }
}
