//! Values worked out from pieces of a request, remembered by the pieces' bytes.
//!
//! An agent sends the same pieces with every request of a conversation, and mostly with every
//! conversation: its tools' declarations, its system prompt, its first message, often tens of
//! kilobytes together. Working a value out of them again (parsing, normalising, hashing the
//! text) costs a few nanoseconds per byte; finding it by the bytes costs a fraction of a
//! nanosecond per byte. An entry is found by a hash of the bytes (foldhash, seeded at random
//! per process) and used only when its bytes are the very bytes given: a hash collision, by
//! chance or crafted by a client, costs a miss, never another request's value.
//!
//! What is kept is bounded twice: in entries, and in the bytes the entries hold (the one
//! written longest ago goes first); pieces larger than the whole budget are not kept.

use std::hash::BuildHasher;
use std::sync::Mutex;

use crate::newest_kept::NewestKept;

/// An entry: the pieces it was worked out from, and the value.
type Entry<V> = (Box<[Box<[u8]>]>, V);

/// Values by the bytes of the pieces they were worked out from.
pub(crate) struct BytesMemo<V> {
    hasher: foldhash::quality::RandomState,
    kept: Mutex<Kept<V>>,
}

struct Kept<V> {
    entries: NewestKept<u64, Entry<V>>,
    /// The bytes the entries hold.
    bytes: usize,
    /// The most bytes the entries may hold.
    budget: usize,
}

/// How many bytes an entry holds.
fn size(pieces: &[impl AsRef<[u8]>]) -> usize {
    pieces.iter().map(|p| p.as_ref().len()).sum()
}

impl<V: Clone> BytesMemo<V> {
    /// Keeps at most `entries` values, whose pieces hold at most `budget` bytes together.
    pub(crate) fn new(entries: usize, budget: usize) -> Self {
        let kept = Kept { entries: NewestKept::new(entries), bytes: 0, budget };
        Self { hasher: foldhash::quality::RandomState::default(), kept: Mutex::new(kept) }
    }

    /// The value worked out from `pieces`: the one kept for these bytes, else `work`'s (kept
    /// when it succeeds).
    pub(crate) fn get_or_work<E>(
        &self,
        pieces: &[&[u8]],
        work: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        let hash = self.hasher.hash_one(pieces);
        if let Some(value) = self.find(hash, pieces) {
            return Ok(value);
        }
        let value = work()?;
        self.keep(hash, pieces, value.clone());
        Ok(value)
    }

    /// The value worked out from `pieces`: the one kept for these bytes, else `work`'s.
    pub(crate) fn get(&self, pieces: &[&[u8]], work: impl FnOnce() -> V) -> V {
        match self.get_or_work(pieces, || Ok::<_, std::convert::Infallible>(work())) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    fn find(&self, hash: u64, pieces: &[&[u8]]) -> Option<V> {
        let kept = self.kept.lock().ok()?;
        let (bytes, value) = kept.entries.get(&hash)?;
        let same =
            bytes.len() == pieces.len() && bytes.iter().zip(pieces).all(|(kept, given)| **kept == **given);
        same.then(|| value.clone())
    }

    fn keep(&self, hash: u64, pieces: &[&[u8]], value: V) {
        let needed = size(pieces);
        let Ok(mut kept) = self.kept.lock() else { return };
        if needed > kept.budget {
            return;
        }
        // An entry of the same hash (other bytes: a collision) makes way.
        if let Some((old, _)) = kept.entries.take(&hash) {
            kept.bytes -= size(&old);
        }
        while kept.bytes + needed > kept.budget {
            let Some((_, (old, _))) = kept.entries.take_oldest() else { break };
            kept.bytes -= size(&old);
        }
        let bytes = pieces.iter().map(|p| Box::<[u8]>::from(*p)).collect();
        // A full map makes room by the entry written longest ago.
        if let Some((_, (old, _))) = kept.entries.keep(hash, (bytes, value)) {
            kept.bytes -= size(&old);
        }
        kept.bytes += needed;
    }

    /// How many values are kept, and the bytes their pieces hold.
    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        self.kept.lock().map(|k| (k.entries.len(), k.bytes)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use proptest::prelude::*;

    use super::*;

    /// `pieces`' value through `memo`, and whether it was worked out (not found).
    fn value(memo: &BytesMemo<String>, pieces: &[&[u8]]) -> (String, bool) {
        let worked = Cell::new(false);
        let value = memo
            .get_or_work(pieces, || {
                worked.set(true);
                Ok::<_, ()>(pieces.iter().map(|p| String::from_utf8_lossy(p)).collect::<Vec<_>>().join("|"))
            })
            .unwrap();
        (value, worked.get())
    }

    #[test]
    fn the_same_bytes_are_worked_out_once_and_a_piece_boundary_counts() {
        let memo = BytesMemo::new(8, 1 << 20);
        assert_eq!(value(&memo, &[b"ab", b"c"]), ("ab|c".to_owned(), true));
        assert_eq!(value(&memo, &[b"ab", b"c"]), ("ab|c".to_owned(), false));
        // The same bytes cut elsewhere are other pieces.
        assert_eq!(value(&memo, &[b"a", b"bc"]), ("a|bc".to_owned(), true));
        // A failed working-out is not kept.
        let failed: Result<String, &str> = memo.get_or_work(&[b"x"], || Err("no"));
        assert_eq!(failed, Err("no"));
        assert!(value(&memo, &[b"x"]).1, "worked out again");
    }

    #[test]
    fn a_colliding_hash_is_a_miss_not_the_other_value() {
        let memo = BytesMemo::new(8, 1 << 20);
        value(&memo, &[b"first"]);
        // Another value filed under the same hash, as a collision would.
        let hash = memo.hasher.hash_one(&[b"second".as_slice()][..]);
        memo.keep(hash, &[b"first"], "first's value".to_owned());
        assert_eq!(value(&memo, &[b"second"]), ("second".to_owned(), true));
        assert_eq!(value(&memo, &[b"second"]), ("second".to_owned(), false));
        // The colliding entry made way: "first" (5 bytes) and "second" (6) are held.
        assert_eq!(memo.held(), (2, 11));
    }

    #[test]
    fn pieces_larger_than_the_budget_are_worked_out_each_time() {
        let memo = BytesMemo::new(8, 4);
        assert!(value(&memo, &[b"12345"]).1);
        assert!(value(&memo, &[b"12345"]).1);
        assert_eq!(memo.held(), (0, 0));
    }

    proptest! {
        /// Whatever is asked, the value is the one working it out gives; what was just worked
        /// out within the budget is found next time; the entries and the bytes they hold
        /// (counted exactly) stay within the bounds.
        #[test]
        fn values_are_right_and_bounds_hold(
            asks in proptest::collection::vec(proptest::collection::vec("[ab]{0,6}", 1..3), 1..120),
            entries in 1_usize..5,
            budget in 0_usize..24,
        ) {
            let memo = BytesMemo::new(entries, budget);
            for ask in &asks {
                let pieces: Vec<&[u8]> = ask.iter().map(|p| p.as_bytes()).collect();
                prop_assert_eq!(value(&memo, &pieces).0, ask.join("|"));
                let (again, worked) = value(&memo, &pieces);
                prop_assert_eq!(again, ask.join("|"));
                prop_assert_eq!(worked, size(&pieces) > budget);
                let kept = memo.kept.lock().unwrap();
                let held: usize = kept.entries.values().map(|(bytes, _)| size(bytes)).sum();
                prop_assert_eq!(kept.bytes, held);
                prop_assert!(kept.entries.len() <= entries);
                prop_assert!(kept.bytes <= budget);
            }
        }
    }
}
