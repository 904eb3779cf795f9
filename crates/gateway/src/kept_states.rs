//! The conversation states kept in memory after their saves (see `write_behind`), at most
//! [`STATES_KEPT`](crate::write_behind::STATES_KEPT) of them: when more are written, the one
//! written longest ago goes (its conversation's next request reads the store). A conversation
//! still going is written at each of its requests, so it stays kept however many finished
//! ones came before; an arbitrary choice of which to drop, as before, could drop it (after a
//! few thousand conversations nearly every request of a live one read the store).

use std::collections::{BTreeMap, HashMap};

use crate::write_behind::Kept;

/// Kept states by conversation, with the order they were written in.
#[derive(Default)]
pub(crate) struct KeptStates {
    /// Each conversation's state, with when it was written (a count of writes).
    by_id: HashMap<String, (u64, Kept)>,
    /// The conversations by when their kept state was written, oldest first.
    by_age: BTreeMap<u64, String>,
    /// The next write's count.
    writes: u64,
}

impl KeptStates {
    /// Conversation `id`'s kept state, taken out.
    pub(crate) fn take(&mut self, id: &str) -> Option<Kept> {
        let (age, kept) = self.by_id.remove(id)?;
        self.by_age.remove(&age);
        Some(kept)
    }

    /// Keeps `kept` as conversation `id`'s state, dropping the oldest kept while `limit` or
    /// more are.
    pub(crate) fn keep(&mut self, id: String, kept: Kept, limit: usize) {
        self.take(&id);
        while self.by_id.len() >= limit.max(1) {
            let Some((_, oldest)) = self.by_age.pop_first() else { break };
            self.by_id.remove(&oldest);
        }
        let age = self.writes;
        self.writes += 1;
        self.by_age.insert(age, id.clone());
        self.by_id.insert(id, (age, kept));
    }

    /// How many states are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;
    use crate::conversation::ConversationState;

    fn state(id: &str) -> Kept {
        (ConversationState { id: id.to_owned(), ..ConversationState::default() }, Arc::new(Value::Null), None)
    }

    #[test]
    fn a_conversation_written_at_each_request_stays_kept_while_many_others_pass() {
        let mut kept = KeptStates::default();
        for n in 0..10_000 {
            // A live conversation: taken by its request, written back by its save.
            let live = kept.take("live").unwrap_or_else(|| state("live"));
            kept.keep(format!("finished-{n}"), state("finished"), 64);
            kept.keep("live".to_owned(), live, 64);
        }
        assert!(kept.take("live").is_some());
        assert_eq!(kept.len(), 63);
        assert!(kept.take("finished-0").is_none(), "the oldest went");
        assert!(kept.take("finished-9999").is_some());
    }

    proptest! {
        /// Whatever the writes and takes, at most `limit` are kept, the ones kept are the most
        /// recently written (of those not taken since), and a taken state is not kept.
        #[test]
        fn the_most_recently_written_are_the_ones_kept(
            ops in proptest::collection::vec((0_u8..12, any::<bool>()), 0..200),
            limit in 1_usize..6,
        ) {
            let mut kept = KeptStates::default();
            let mut model: Vec<String> = Vec::new(); // oldest first
            for (n, write) in ops {
                let id = format!("c{n}");
                if write {
                    kept.keep(id.clone(), state(&id), limit);
                    model.retain(|m| *m != id);
                    while model.len() >= limit {
                        model.remove(0);
                    }
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
                prop_assert_eq!(kept.take(&id).map(|k| k.0.id), Some("c".to_owned() + &id[1..]));
            }
        }
    }
}
