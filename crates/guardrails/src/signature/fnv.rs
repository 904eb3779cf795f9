//! [`Fnv64`]: the stable hasher signatures and fingerprints are taken with.

/// A stable 64-bit hasher that takes input eight bytes at a time (deterministic across
/// processes and versions, unlike `std`'s, so hashes can be saved with a run). Not for
/// anything adversarial.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fnv64 {
    state: u64,
    lane: u64,
    buffer: u64,
    filled: u32,
    length: u64,
}

const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

impl Fnv64 {
    #[inline]
    fn absorb(&mut self, word: u64) {
        self.state = (self.state ^ word).wrapping_mul(MIX).rotate_left(29);
    }

    /// Feeds one byte.
    #[inline]
    pub fn write_byte(&mut self, byte: u8) {
        self.buffer |= u64::from(byte) << (8 * self.filled);
        self.filled += 1;
        self.length += 1;
        if self.filled == 8 {
            let word = self.buffer;
            self.absorb(word);
            self.buffer = 0;
            self.filled = 0;
        }
    }

    /// Feeds bytes.
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while self.filled != 0 {
            let Some((first, tail)) = rest.split_first() else { return };
            self.write_byte(*first);
            rest = tail;
        }
        // Two independent lanes over 16-byte blocks, so the multiplies overlap.
        let mut blocks = rest.chunks_exact(16);
        let mut lane = self.lane;
        for block in &mut blocks {
            let mut a = [0u8; 8];
            let mut b = [0u8; 8];
            a.copy_from_slice(&block[..8]);
            b.copy_from_slice(&block[8..]);
            self.state = (self.state ^ u64::from_le_bytes(a)).wrapping_mul(MIX).rotate_left(29);
            lane = (lane ^ u64::from_le_bytes(b)).wrapping_mul(MIX).rotate_left(31);
        }
        self.lane = lane;
        let block_bytes = rest.len() - blocks.remainder().len();
        self.length += block_bytes as u64;
        for byte in blocks.remainder() {
            self.write_byte(*byte);
        }
    }

    /// The hash so far.
    pub fn finish(self) -> u64 {
        let mut h = self;
        let (buffer, length) = (h.buffer, h.length);
        h.absorb(buffer ^ (u64::from(h.filled) << 59));
        h.absorb(length);
        let lane = h.lane;
        h.absorb(lane);
        let mut z = h.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Hashes one string.
pub fn hash_str(text: &str) -> u64 {
    let mut h = Fnv64::default();
    h.write(text.as_bytes());
    h.finish()
}
