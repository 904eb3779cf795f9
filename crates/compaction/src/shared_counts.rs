//! Counts of merged pieces shared by every thread of the process: a piece that is several
//! tokens costs dozens of rank lookups to merge, and threads that count different texts meet
//! the same pieces (the audit's threads merged most pieces twice). Locked in shards, and only
//! asked after a thread's own caches miss; each shard starts over when it fills.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;

use foldhash::fast::FixedState;

use crate::vocabulary::{Packed, mix};

/// Shards per map (a power of two).
const SHARDS: usize = 16;
/// Entries a shard holds before it starts over.
const SHARD_KEPT: usize = 1 << 15;

/// One shard: counts by piece.
type Shard<K, V> = Mutex<HashMap<K, V, FixedState>>;

/// Remembered counts of pieces that are not single tokens.
pub(crate) struct SharedCounts {
    packed: Vec<Shard<Packed, u8>>,
    longer: Vec<Shard<Box<[u8]>, u32>>,
}

impl Default for SharedCounts {
    fn default() -> Self {
        Self {
            packed: (0..SHARDS).map(|_| Mutex::default()).collect(),
            longer: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl SharedCounts {
    /// The count of the packed piece `key`, if a thread merged it.
    pub(crate) fn packed(&self, key: Packed) -> Option<u8> {
        self.packed[packed_shard(key)].lock().ok()?.get(&key).copied()
    }

    /// Remembers the count of the packed piece `key`.
    pub(crate) fn remember_packed(&self, key: Packed, count: u8) {
        if let Ok(mut shard) = self.packed[packed_shard(key)].lock() {
            if shard.len() >= SHARD_KEPT {
                shard.clear();
            }
            shard.insert(key, count);
        }
    }

    /// The count of the long piece `piece`, if a thread merged it.
    pub(crate) fn longer(&self, piece: &[u8]) -> Option<u32> {
        self.longer[long_shard(piece)].lock().ok()?.get(piece).copied()
    }

    /// Remembers the count of the long piece `piece`.
    pub(crate) fn remember_longer(&self, piece: &[u8], count: u32) {
        if let Ok(mut shard) = self.longer[long_shard(piece)].lock() {
            if shard.len() >= SHARD_KEPT {
                shard.clear();
            }
            shard.insert(piece.into(), count);
        }
    }
}

fn packed_shard(key: Packed) -> usize {
    (mix(key) as usize) % SHARDS
}

fn long_shard(piece: &[u8]) -> usize {
    (FixedState::default().hash_one(piece) as usize) % SHARDS
}
