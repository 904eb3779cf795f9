//! A map that keeps at most a set number of entries: when more are written, the entry written
//! longest ago goes. Used for what the gateway remembers between a conversation's requests
//! (its state after the save, see `write_behind`; the fingerprints its next request will be
//! recognised by): a conversation still going is written at each of its requests, so it stays
//! however many finished ones came before. (An arbitrary choice of which to drop, as before,
//! kept landing on live conversations: after the peers bench's highest-rate phase nearly
//! every one-client request read its state from the store; and clearing the whole map when
//! full dropped every live conversation at once.)

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// At most `limit` entries, the most recently written.
pub(crate) struct NewestKept<K, V> {
    /// Each entry, with when it was written (a count of writes).
    entries: HashMap<K, (u64, V)>,
    /// The keys by when their entry was written, oldest first.
    by_age: BTreeMap<u64, K>,
    /// The next write's count.
    writes: u64,
    limit: usize,
}

impl<K: Hash + Eq + Clone, V> NewestKept<K, V> {
    /// An empty map keeping at most `limit` entries (at least one).
    pub(crate) fn new(limit: usize) -> Self {
        Self { entries: HashMap::new(), by_age: BTreeMap::new(), writes: 0, limit: limit.max(1) }
    }

    /// The entry of `key`.
    pub(crate) fn get<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.entries.get(key).map(|(_, value)| value)
    }

    /// The entry of `key`, taken out.
    pub(crate) fn take<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let (age, value) = self.entries.remove(key)?;
        self.by_age.remove(&age);
        Some(value)
    }

    /// Writes `value` as `key`'s entry. When the map is full, the entry written longest ago
    /// makes room: it is given back.
    pub(crate) fn keep(&mut self, key: K, value: V) -> Option<(K, V)> {
        self.take(&key);
        // At most `limit` are kept, so one taken out makes room.
        let dropped = if self.entries.len() >= self.limit { self.take_oldest() } else { None };
        let age = self.writes;
        self.writes += 1;
        self.by_age.insert(age, key.clone());
        self.entries.insert(key, (age, value));
        dropped
    }

    /// The entry written longest ago, taken out.
    pub(crate) fn take_oldest(&mut self) -> Option<(K, V)> {
        let (_, key) = self.by_age.pop_first()?;
        let (_, value) = self.entries.remove(&key)?;
        Some((key, value))
    }

    /// How many entries are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entries' values, in no order.
    #[cfg(test)]
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.values().map(|(_, value)| value)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_conversation_written_at_each_request_stays_kept_while_many_others_pass() {
        let mut kept = NewestKept::new(64);
        for n in 0..10_000 {
            // A live conversation: taken by its request, written back by its save.
            let live = kept.take("live").unwrap_or(0) + 1;
            kept.keep(format!("finished-{n}"), 0);
            kept.keep("live".to_owned(), live);
        }
        assert_eq!(kept.get("live"), Some(&10_000));
        assert_eq!(kept.len(), 64);
        assert!(kept.take("finished-0").is_none(), "the oldest went");
        assert!(kept.take("finished-9999").is_some());
    }

    proptest! {
        /// Whatever the writes and takes, at most `limit` are kept, the ones kept are the most
        /// recently written (of those not taken since), a write into a full map gives back the
        /// oldest, and a taken state is not kept.
        #[test]
        fn the_most_recently_written_are_the_ones_kept(
            ops in proptest::collection::vec((0_u8..12, any::<bool>()), 0..200),
            limit in 1_usize..6,
        ) {
            let mut kept = NewestKept::new(limit);
            let mut model: Vec<String> = Vec::new(); // oldest first
            for (n, write) in ops {
                let id = format!("c{n}");
                if write {
                    let dropped = kept.keep(id.clone(), n);
                    model.retain(|m| *m != id);
                    let oldest = (model.len() >= limit).then(|| model.remove(0));
                    prop_assert_eq!(dropped.map(|(key, _)| key), oldest);
                    model.push(id);
                } else {
                    let had = model.contains(&id);
                    prop_assert_eq!(kept.take(&id).is_some(), had);
                    model.retain(|m| *m != id);
                }
                prop_assert_eq!(kept.len(), model.len());
                prop_assert!(kept.len() <= limit);
            }
            for id in model {
                prop_assert_eq!(kept.get(&id).map(|n| format!("c{n}")), Some(id.clone()));
            }
        }
    }
}
