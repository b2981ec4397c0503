//! Adjacency lists in one block (compressed sparse rows): a list per node,
//! all of them in one vector with each node's start beside it. A `Vec` per
//! node costs its 24-byte header and a heap block each (over 50 bytes a
//! node before its first entry); this costs 4 bytes a node.

use std::ops::Index;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Csr<T> {
    /// Node i's items are `items[start[i]..start[i + 1]]`.
    start: Vec<u32>,
    items: Vec<T>,
}

impl<T: Copy> Csr<T> {
    /// The lists of `n` nodes from `(node, item)` pairs; each list keeps
    /// the order its pairs come in. `pairs` is walked twice.
    pub fn from_pairs<I>(n: usize, pairs: I) -> Csr<T>
    where
        I: Iterator<Item = (u32, T)> + Clone,
    {
        let mut start = vec![0u32; n + 1];
        for (u, _) in pairs.clone() {
            start[u as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill: Vec<u32> = start[..n].to_vec();
        let mut items: Vec<Option<T>> = vec![None; start[n] as usize];
        for (u, t) in pairs {
            items[fill[u as usize] as usize] = Some(t);
            fill[u as usize] += 1;
        }
        Csr {
            start,
            items: items.into_iter().flatten().collect(),
        }
    }
}

impl<T> Csr<T> {
    /// How many lists (nodes).
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Index<usize> for Csr<T> {
    type Output = [T];

    fn index(&self, i: usize) -> &[T] {
        &self.items[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_list_keeps_its_pairs_in_order() {
        let pairs = [(2u32, 'a'), (0, 'b'), (2, 'c'), (0, 'd')];
        let csr = Csr::from_pairs(4, pairs.iter().copied());
        assert_eq!(csr.len(), 4);
        assert_eq!(&csr[0], &['b', 'd']);
        assert!(csr[1].is_empty() && csr[3].is_empty());
        assert_eq!(&csr[2], &['a', 'c']);
        assert!(Csr::<u8>::from_pairs(0, std::iter::empty()).is_empty());
    }
}
