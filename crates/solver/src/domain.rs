//! Domains: for every placed node, the set of chips it may still go to, as
//! a bitset over chip ids (any package size), with its bounds and size cached.

/// A read-only view of one domain.
#[derive(Clone, Copy, Debug)]
pub struct Dom<'a> {
    pub words: &'a [u64],
    pub min: u32,
    pub max: u32,
    pub size: u32,
}

impl Dom<'_> {
    pub fn contains(&self, c: u32) -> bool {
        let (w, b) = ((c / 64) as usize, c % 64);
        self.words.get(w).is_some_and(|x| x >> b & 1 == 1)
    }

    pub fn is_fixed(&self) -> bool {
        self.size == 1
    }

    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        bits(self.words)
    }

    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

/// Bitset helpers over word slices.
pub fn words_for(chips: usize) -> usize {
    chips.div_ceil(64).max(1)
}

pub fn set_bit(words: &mut [u64], c: u32) {
    words[(c / 64) as usize] |= 1 << (c % 64);
}

/// The words of a set of chips.
pub fn mask_of(chips: usize, set: &[u32]) -> Vec<u64> {
    let mut m = vec![0; words_for(chips)];
    for &c in set {
        if (c as usize) < chips {
            set_bit(&mut m, c);
        }
    }
    m
}

/// The chips of a bitset, in increasing order.
pub fn bits(words: &[u64]) -> impl Iterator<Item = u32> + '_ {
    words.iter().enumerate().flat_map(|(i, &w)| {
        let mut w = w;
        std::iter::from_fn(move || {
            if w == 0 {
                return None;
            }
            let b = w.trailing_zeros();
            w &= w - 1;
            Some(i as u32 * 64 + b)
        })
    })
}

/// The chips of a bitset, collected.
pub fn bits_of(words: &[u64]) -> Vec<u32> {
    bits(words).collect()
}

/// Bounds and size of a bitset, `None` when empty.
pub fn summarize(words: &[u64]) -> Option<(u32, u32, u32)> {
    let size: u32 = words.iter().map(|w| w.count_ones()).sum();
    if size == 0 {
        return None;
    }
    let lo = words.iter().position(|&w| w != 0)?;
    let hi = words.iter().rposition(|&w| w != 0)?;
    let min = lo as u32 * 64 + words[lo].trailing_zeros();
    let max = hi as u32 * 64 + 63 - words[hi].leading_zeros();
    Some((min, max, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitsets_beyond_one_word() {
        let m = mask_of(130, &[0, 64, 129]);
        assert_eq!(summarize(&m), Some((0, 129, 3)));
        let d = Dom {
            words: &m,
            min: 0,
            max: 129,
            size: 3,
        };
        assert_eq!(d.to_vec(), vec![0, 64, 129]);
        assert!(d.contains(64) && !d.contains(65));
        assert_eq!(summarize(&[0, 0]), None);
    }
}
