//! Node ids to node numbers. A map from `String` holds every id a second
//! time (its header, its heap block and the map's slot: about 90 bytes a
//! node); this table holds four bytes a node (and its free slots) and
//! finds an id by hashing it and comparing with the ids the nodes hold.

use super::Node;
use hashbrown::hash_table::{Entry, HashTable};
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

#[derive(Clone, Default)]
pub(crate) struct IdIndex {
    table: HashTable<u32>,
    hasher: RandomState,
}

impl IdIndex {
    /// The index of the nodes' ids, or the first id given twice (in node
    /// order: the second of its nodes is the first to repeat an id).
    pub fn new(nodes: &[Node]) -> Result<IdIndex, &str> {
        let hasher = RandomState::new();
        let mut table = HashTable::with_capacity(nodes.len());
        let rehash = |&j: &u32| hasher.hash_one(nodes[j as usize].id.as_str());
        for (i, n) in nodes.iter().enumerate() {
            let h = hasher.hash_one(n.id.as_str());
            match table.entry(h, |&j| nodes[j as usize].id == n.id, rehash) {
                Entry::Occupied(_) => return Err(n.id.as_str()),
                Entry::Vacant(v) => {
                    v.insert(i as u32);
                }
            }
        }
        Ok(IdIndex { table, hasher })
    }

    /// The number of the node of `nodes` (the ones indexed) with this id.
    pub fn get(&self, nodes: &[Node], id: &str) -> Option<usize> {
        let h = self.hasher.hash_one(id);
        self.table.find(h, |&j| nodes[j as usize].id == id).map(|&j| j as usize)
    }
}

impl std::fmt::Debug for IdIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IdIndex({} ids)", self.table.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_found_and_the_first_repeat_is_named() {
        let nodes: Vec<Node> = ["a", "b", "c"].into_iter().map(Node::new).collect();
        let ix = IdIndex::new(&nodes).unwrap();
        assert_eq!(
            (ix.get(&nodes, "b"), ix.get(&nodes, "c"), ix.get(&nodes, "d")),
            (Some(1), Some(2), None)
        );
        let twice: Vec<Node> = ["x", "y", "y", "x"].into_iter().map(Node::new).collect();
        assert_eq!(IdIndex::new(&twice).unwrap_err(), "y");
    }
}
