//! Recursive trees locked hand over hand with [`chainlock::walk`]: two programs with their
//! invariant checkers, the kind of structures whose depth is known only at run time.
//!
//! - [`FileSystem`]: an in-memory file system (`mkdir -p`, create, write, read, list, stat,
//!   rename, `rm -r`), paths walked by key with latch crabbing.
//! - [`OrderedMap`]: a concurrent B+-tree, inserts on the speculative and retaining
//!   (Bayer–Schkolnick) descents, tested against `std::collections::BTreeMap`.

mod btree;
mod fs;

pub use btree::OrderedMap;
pub use fs::{FileSystem, FsError, MAX_PATH_DEPTH};

/// A small xorshift generator: the deterministic randomness of the clients in the example,
/// the tests and the benchmark (no dependency, the same sequence everywhere for a seed).
///
/// # Examples
///
/// ```
/// let mut rng = chainlock_trees::Rng::new(7);
/// assert!(rng.below(10) < 10);
/// ```
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A number in `0..n`.
    ///
    /// # Panics
    ///
    /// If `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
