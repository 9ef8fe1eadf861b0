//! One hash to one of a power-of-two number of slots (stripes, shards).
//!
//! Masking a hash's low bits trusts the hasher's low bits: foldhash's fast hasher, seeded
//! randomly per process, maps consecutive integers to low bits that pile up on a few slots
//! for some seeds (one stripe in 64 got 1,599 of 128,000 keys against a mean of 2,000, about
//! 1 process start in 200). Multiplying by 2^64 / φ and keeping the top bits (Fibonacci
//! hashing, Knuth 6.4) mixes every bit of the hash into the index.

/// Picks one of `2^bits` slots for a hash.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spread {
    /// `bits`: rotating the product left by it brings its top `bits` bits to the bottom.
    bits: u32,
    mask: usize,
}

impl Spread {
    /// Spreads hashes over `count` slots, a power of two.
    pub(crate) fn over(count: usize) -> Self {
        debug_assert!(count.is_power_of_two());
        Self {
            bits: count.trailing_zeros(),
            mask: count - 1,
        }
    }

    /// The slot of `hash`, below the count.
    #[inline]
    pub(crate) fn slot(self, hash: u64) -> usize {
        hash.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(self.bits) as usize
            & self.mask
    }
}

#[cfg(test)]
mod tests {
    use super::Spread;

    #[test]
    fn every_slot_is_reached_and_none_beyond() {
        for count in [1, 2, 64, 1 << 16] {
            let spread = Spread::over(count);
            let mut seen = vec![false; count];
            for hash in 0..(count as u64 * 64) {
                seen[spread.slot(hash)] = true;
            }
            assert!(seen.iter().all(|&s| s), "{count} slots");
        }
    }

    #[test]
    fn a_hash_weak_in_its_low_bits_still_spreads() {
        // Hashes that differ only above bit 40: a low-bit mask would put them all on slot 0.
        let spread = Spread::over(64);
        let mut per_slot = [0_usize; 64];
        for i in 0..64_000_u64 {
            per_slot[spread.slot(i << 40)] += 1;
        }
        assert!(
            per_slot.iter().all(|&n| n.abs_diff(1000) < 200),
            "{per_slot:?}"
        );
    }
}
