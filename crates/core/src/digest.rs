//! FNV-1a 64, the one checksum of the project: checkpoints use it to catch
//! a torn or swapped weights file, `compare` to tell whether a run on disk
//! was made with the settings of the run it would stand for, the policy to
//! bucket operator names. Not a
//! cryptographic hash; stable across builds and platforms.

/// An incremental FNV-1a 64 hash.
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    pub fn new() -> Fnv1a {
        Fnv1a::default()
    }

    pub fn update(&mut self, bytes: &[u8]) -> &mut Fnv1a {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    /// Adds a piece with its length first, so that ("ab", "c") and ("a", "bc")
    /// hash apart.
    pub fn field(&mut self, bytes: &[u8]) -> &mut Fnv1a {
        self.update(&(bytes.len() as u64).to_le_bytes()).update(bytes)
    }

    /// The hash.
    pub fn value(&self) -> u64 {
        self.0
    }

    /// The hash as 16 hex digits.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

/// FNV-1a 64 of `bytes`, in hex.
pub fn fnv1a(bytes: &[u8]) -> String {
    Fnv1a::new().update(bytes).hex()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // Reference values of FNV-1a 64.
        assert_eq!(fnv1a(b""), "cbf29ce484222325");
        assert_eq!(fnv1a(b"a"), "af63dc4c8601ec8c");
        assert_eq!(fnv1a(b"foobar"), "85944171f73967e8");
    }

    #[test]
    fn fields_keep_their_boundaries() {
        let ab_c = Fnv1a::new().field(b"ab").field(b"c").hex();
        let a_bc = Fnv1a::new().field(b"a").field(b"bc").hex();
        assert_ne!(ab_c, a_bc);
        assert_eq!(Fnv1a::new().update(b"ab").update(b"c").hex(), fnv1a(b"abc"));
    }
}
