//! Property tests of the dedup map (issue 7).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use looprail_rag_dedup::{Chunk, SeenChunks};
use proptest::prelude::*;

fn query() -> impl Strategy<Value = Vec<(u8, u8, u8)>> {
    prop::collection::vec((0u8..3, 0u8..4, 0u8..10), 0..20)
}

fn chunks(q: &[(u8, u8, u8)]) -> Vec<Chunk> {
    q.iter()
        .map(|(s, f, i)| {
            Chunk::new(format!("store{s}"), format!("file{f}"), u32::from(*i), format!("text {s}/{f}/{i}"))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn a_chunk_is_shown_at_most_once_per_conversation(queries in prop::collection::vec(query(), 1..20)) {
        let mut seen = SeenChunks::new(10_000);
        let mut shown = HashSet::new();
        let mut offered = 0u64;
        for (n, q) in queries.iter().enumerate() {
            offered += q.len() as u64;
            for (_, chunk) in seen.filter(&format!("c{n}"), &chunks(q)).kept {
                prop_assert!(shown.insert((chunk.vector_store_id.clone(), chunk.file_id.clone(), chunk.chunk_index)), "shown twice");
            }
        }
        // Every offered chunk was either shown (once) or counted as a duplicate.
        prop_assert_eq!(shown.len() as u64 + seen.duplicates_total(), offered);
    }

    #[test]
    fn citations_name_only_shown_chunks(
        queries in prop::collection::vec(query(), 1..10),
        markers in prop::collection::vec(0u32..60, 0..12),
        capacity in 1usize..40,
    ) {
        let mut seen = SeenChunks::new(capacity);
        for (n, q) in queries.iter().enumerate() {
            seen.filter(&format!("c{n}"), &chunks(q));
        }
        let answer: String = markers.iter().map(|m| format!("claim [{m}]. ")).collect();
        let remembered: HashSet<(String, String, u32)> =
            seen.context().into_iter().map(|s| (s.chunk.vector_store_id, s.chunk.file_id, s.chunk.chunk_index)).collect();
        for citation in seen.citations(&answer) {
            prop_assert!(remembered.contains(&(citation.vector_store_id.clone(), citation.file_id.clone(), citation.chunk_index)));
            prop_assert_eq!(&answer[citation.start..citation.end], format!("[{}]", citation.ref_id));
        }
    }

    #[test]
    fn a_serde_round_trip_preserves_every_future_verdict(
        before in prop::collection::vec(query(), 0..10),
        after in prop::collection::vec(query(), 1..10),
        capacity in 1usize..50,
    ) {
        let mut original = SeenChunks::new(capacity);
        for (n, q) in before.iter().enumerate() {
            original.filter(&format!("b{n}"), &chunks(q));
        }
        let json = serde_json::to_string(&original.save()).unwrap();
        let mut restored = SeenChunks::restore(serde_json::from_str(&json).unwrap()).unwrap();
        for (n, q) in after.iter().enumerate() {
            let (qa, qb) = (chunks(q), chunks(q));
            let a = original.filter(&format!("a{n}"), &qa);
            let b = restored.filter(&format!("a{n}"), &qb);
            prop_assert_eq!(a, b);
        }
        prop_assert_eq!(original.citations("[1] [2] [3] [40]"), restored.citations("[1] [2] [3] [40]"));
    }
}
