//! The conversation-scoped seen map (F30).

use std::collections::{HashMap, VecDeque};

use foldhash::fast::RandomState;
use serde::{Deserialize, Serialize};

use looprail_loop_core::finalize::Citation;

use crate::chunk::{Chunk, ChunkKey};
use crate::interner::Interner;

/// A chunk the model was shown: its label, where it came from, its text.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownChunk {
    /// The label it was shown under (`[n]`, conversation-wide, from 1).
    pub ref_id: u32,
    /// The chunk.
    pub chunk: Chunk,
    /// The tool call that showed it.
    pub call_id: String,
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    key: ChunkKey,
    text: String,
    source: Option<String>,
    /// Interned call id.
    call: u32,
}

/// The result of passing one retrieval result through the map.
#[derive(Debug, Clone, PartialEq)]
pub struct Filtered<'a> {
    /// New chunks, in their original order, with the labels they are shown under.
    pub kept: Vec<(u32, &'a Chunk)>,
    /// Chunks dropped because the model had already seen them (or saw them earlier in the
    /// same result).
    pub duplicates: u32,
}

/// Every chunk shown to the model in one conversation, keyed by (vector store, file, chunk
/// index). A chunk is shown at most once; a new conversation starts with an empty map.
///
/// Memory is bounded by `capacity` chunks: past it, the chunk shown longest ago is forgotten
/// first (it may then be shown again, and can no longer be cited). Ids are interned, so a
/// repeated store or file id costs nothing per chunk.
#[derive(Debug, Clone)]
pub struct SeenChunks {
    stores: Interner,
    files: Interner,
    calls: Interner,
    /// Key → label. Compact on purpose: a check is one probe of this table.
    index: HashMap<ChunkKey, u32, RandomState>,
    /// Shown chunks, oldest first. Labels are handed out in sequence and the oldest is
    /// forgotten first, so label `n` sits at position `n - first_ref`.
    shown: VecDeque<Entry>,
    first_ref: u32,
    capacity: usize,
    duplicates_total: u64,
}

impl SeenChunks {
    /// An empty map holding at most `capacity` chunks (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            stores: Interner::default(),
            files: Interner::default(),
            calls: Interner::default(),
            index: HashMap::default(),
            shown: VecDeque::new(),
            first_ref: 1,
            capacity: capacity.max(1),
            duplicates_total: 0,
        }
    }

    /// Chunks currently remembered.
    pub fn len(&self) -> usize {
        self.shown.len()
    }

    /// True when nothing was shown yet (or everything was forgotten).
    pub fn is_empty(&self) -> bool {
        self.shown.is_empty()
    }

    /// Duplicates dropped over the conversation.
    pub fn duplicates_total(&self) -> u64 {
        self.duplicates_total
    }

    fn next_ref(&self) -> u32 {
        self.first_ref.saturating_add(u32::try_from(self.shown.len()).unwrap_or(u32::MAX))
    }

    /// True when the model has seen this chunk (and it was not forgotten).
    pub fn contains(&self, store: &str, file: &str, index: u32) -> bool {
        let (Some(store), Some(file)) = (self.stores.get(store), self.files.get(file)) else { return false };
        self.index.contains_key(&ChunkKey { store, file, index })
    }

    /// Drops chunks already seen, marks the others seen, keeps their order.
    pub fn filter<'a>(&mut self, call_id: &str, chunks: &'a [Chunk]) -> Filtered<'a> {
        let mut kept = Vec::with_capacity(chunks.len());
        let mut duplicates = 0u32;
        let call = self.calls.intern(call_id);
        for chunk in chunks {
            let key = ChunkKey {
                store: self.stores.intern(&chunk.vector_store_id),
                file: self.files.intern(&chunk.file_id),
                index: chunk.chunk_index,
            };
            let ref_id = self.next_ref();
            if let std::collections::hash_map::Entry::Vacant(slot) = self.index.entry(key) {
                slot.insert(ref_id);
            } else {
                duplicates += 1;
                continue;
            }
            self.shown.push_back(Entry { key, text: chunk.text.clone(), source: chunk.source.clone(), call });
            kept.push((ref_id, chunk));
            if self.shown.len() > self.capacity
                && let Some(oldest) = self.shown.pop_front()
            {
                self.index.remove(&oldest.key);
                self.first_ref += 1;
            }
        }
        self.duplicates_total += u64::from(duplicates);
        Filtered { kept, duplicates }
    }

    fn shown_chunk(&self, ref_id: u32, entry: &Entry) -> ShownChunk {
        ShownChunk {
            ref_id,
            chunk: Chunk {
                vector_store_id: self.stores.name(entry.key.store).to_owned(),
                file_id: self.files.name(entry.key.file).to_owned(),
                chunk_index: entry.key.index,
                text: entry.text.clone(),
                source: entry.source.clone(),
                score: None,
            },
            call_id: self.calls.name(entry.call).to_owned(),
        }
    }

    /// The deduplicated context: every remembered chunk in the order it was shown (for
    /// grounding and hallucination checks).
    pub fn context(&self) -> Vec<ShownChunk> {
        (self.first_ref..).zip(&self.shown).map(|(r, e)| self.shown_chunk(r, e)).collect()
    }

    /// The chunk shown under label `ref_id`, if remembered.
    pub fn by_ref(&self, ref_id: u32) -> Option<ShownChunk> {
        let position = ref_id.checked_sub(self.first_ref)?;
        self.shown.get(position as usize).map(|e| self.shown_chunk(ref_id, e))
    }
    /// Citations for the `[n]` markers in `answer` (also `[1, 3]` and `[1][3]`): one per marker
    /// naming a chunk the model was shown. Markers naming nothing shown yield nothing.
    pub fn citations(&self, answer: &str) -> Vec<Citation> {
        let bytes = answer.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] != b'[' {
                i += 1;
                continue;
            }
            let Some(close) = answer[i..].find(']').map(|c| i + c) else { break };
            let inner = &answer[i + 1..close];
            let numbers: Option<Vec<u32>> = inner.split(',').map(|p| p.trim().parse::<u32>().ok()).collect();
            if let Some(numbers) = numbers.filter(|n| !n.is_empty()) {
                for ref_id in numbers {
                    if let Some(shown) = self.by_ref(ref_id) {
                        out.push(Citation {
                            ref_id,
                            vector_store_id: shown.chunk.vector_store_id,
                            file_id: shown.chunk.file_id,
                            chunk_index: shown.chunk.chunk_index,
                            source: shown.chunk.source,
                            start: i,
                            end: close + 1,
                        });
                    }
                }
                i = close + 1;
            } else {
                i += 1;
            }
        }
        out
    }
}

/// One remembered chunk in [`SavedSeen`]; `store` and `file` index the saved id tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedChunk {
    store: u32,
    file: u32,
    index: u32,
    ref_id: u32,
    text: String,
    source: Option<String>,
    call_id: String,
}

/// The serde form of [`SeenChunks`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedSeen {
    stores: Vec<String>,
    files: Vec<String>,
    /// The remembered chunks, in the order shown.
    chunks: Vec<SavedChunk>,
    capacity: usize,
    next_ref: u32,
    duplicates_total: u64,
}

impl SeenChunks {
    /// The map as serde data.
    pub fn save(&self) -> SavedSeen {
        SavedSeen {
            stores: self.stores.names().map(str::to_owned).collect(),
            files: self.files.names().map(str::to_owned).collect(),
            chunks: (self.first_ref..)
                .zip(&self.shown)
                .map(|(ref_id, e)| SavedChunk {
                    store: e.key.store,
                    file: e.key.file,
                    index: e.key.index,
                    ref_id,
                    text: e.text.clone(),
                    source: e.source.clone(),
                    call_id: self.calls.name(e.call).to_owned(),
                })
                .collect(),
            capacity: self.capacity,
            next_ref: self.next_ref(),
            duplicates_total: self.duplicates_total,
        }
    }

    /// Rebuilds the map; ids outside the saved tables, labels out of sequence or a repeated
    /// chunk are errors.
    pub fn restore(saved: SavedSeen) -> Result<Self, String> {
        let mut seen = Self::new(saved.capacity);
        let (stores, files) = (saved.stores.len(), saved.files.len());
        seen.stores = Interner::from_names(saved.stores);
        seen.files = Interner::from_names(saved.files);
        seen.first_ref = saved.chunks.first().map_or(saved.next_ref, |c| c.ref_id);
        for SavedChunk { store, file, index, ref_id, text, source, call_id } in saved.chunks {
            if store as usize >= stores || file as usize >= files {
                return Err(format!("chunk {ref_id} refers to an id outside the saved tables"));
            }
            if ref_id != seen.next_ref() {
                return Err(format!("chunk label {ref_id} is out of sequence"));
            }
            let key = ChunkKey { store, file, index };
            if seen.index.insert(key, ref_id).is_some() {
                return Err(format!("chunk {ref_id} is saved twice"));
            }
            let call = seen.calls.intern(&call_id);
            seen.shown.push_back(Entry { key, text, source, call });
        }
        if seen.next_ref() != saved.next_ref {
            return Err("the next label does not follow the saved chunks".to_owned());
        }
        seen.duplicates_total = saved.duplicates_total;
        Ok(seen)
    }
}
