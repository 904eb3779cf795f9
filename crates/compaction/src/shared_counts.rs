//! Counts of merged pieces shared by every thread of the process: a piece that is several
//! tokens costs dozens of rank lookups to merge, and threads that count different texts meet
//! the same pieces (the audit's threads merged most pieces twice). Locked in shards, and only
//! asked after a thread's own caches miss; each shard starts over when it fills.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;

use foldhash::fast::FixedState;

use crate::vocabulary::{Packed, mix};

/// Shards per map (a power of two).
const SHARDS: usize = 16;
/// Entries a shard holds before it starts over.
const SHARD_KEPT: usize = 1 << 15;

/// A map of counts that starts over when it holds `kept` entries: memory stays bounded, and a
/// count forgotten is merged again, never wrong.
pub(crate) fn remember<K: Hash + Eq, V>(map: &mut HashMap<K, V, FixedState>, key: K, value: V, kept: usize) {
    if map.len() >= kept {
        map.clear();
    }
    map.insert(key, value);
}

/// A map locked in [`SHARDS`] shards, each bounded by [`SHARD_KEPT`].
struct Sharded<K, V>(Vec<Mutex<HashMap<K, V, FixedState>>>);

impl<K: Hash + Eq, V: Copy> Sharded<K, V> {
    fn new() -> Self {
        Self((0..SHARDS).map(|_| Mutex::default()).collect())
    }

    fn get<Q: Hash + Eq + ?Sized>(&self, shard: usize, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.0[shard].lock().ok()?.get(key).copied()
    }

    fn remember(&self, shard: usize, key: K, value: V) {
        if let Ok(mut map) = self.0[shard].lock() {
            remember(&mut map, key, value, SHARD_KEPT);
        }
    }
}

/// Remembered counts of pieces that are not single tokens.
pub(crate) struct SharedCounts {
    packed: Sharded<Packed, u8>,
    longer: Sharded<Box<[u8]>, u32>,
}

impl Default for SharedCounts {
    fn default() -> Self {
        Self { packed: Sharded::new(), longer: Sharded::new() }
    }
}

impl SharedCounts {
    /// The count of the packed piece `key`, if a thread merged it.
    pub(crate) fn packed(&self, key: Packed) -> Option<u8> {
        self.packed.get(packed_shard(key), &key)
    }

    /// Remembers the count of the packed piece `key`.
    pub(crate) fn remember_packed(&self, key: Packed, count: u8) {
        self.packed.remember(packed_shard(key), key, count);
    }

    /// The count of the long piece `piece`, if a thread merged it.
    pub(crate) fn longer(&self, piece: &[u8]) -> Option<u32> {
        self.longer.get(long_shard(piece), piece)
    }

    /// Remembers the count of the long piece `piece`.
    pub(crate) fn remember_longer(&self, piece: &[u8], count: u32) {
        self.longer.remember(long_shard(piece), piece.into(), count);
    }
}

fn packed_shard(key: Packed) -> usize {
    (mix(key) as usize) % SHARDS
}

fn long_shard(piece: &[u8]) -> usize {
    (FixedState::default().hash_one(piece) as usize) % SHARDS
}
