//! Token counting with OpenAI's tiktoken vocabularies (F29): cl100k_base by default as a
//! cross-provider proxy, o200k_base selectable, with tiktoken's exact counts (tested against
//! tiktoken-rs). Counting is most of what the audit and compaction's first pass spend, so a
//! text goes through cheap steps before expensive ones: cl100k's pre-tokenizer written out for
//! ASCII, a per-thread table of recent short pieces, the vocabulary (a piece that is a token
//! counts 1), a per-thread memo of longer pieces, tiktoken's merging for pieces of up to 48
//! bytes, and `bpe-openai`'s encoder (github/rust-gems) for the rest.

use std::collections::HashMap;
use std::sync::OnceLock;

use foldhash::fast::FixedState;

use looprail_loop_core::context::TokenCounter;

use crate::merge::{MERGED_UP_TO, merged_count};
use crate::pretokenize::split_cl100k;
use looprail_loop_core::message::{ContentPart, Message};

/// Framing tokens per message (role and separators), as OpenAI's chat format counts them.
pub const MESSAGE_OVERHEAD: u64 = 3;
/// Framing tokens per tool call and per tool result (ids, type markers).
pub const TOOL_PART_OVERHEAD: u64 = 3;
/// The estimate for one image: a 1024×1024 high-detail image in OpenAI's accounting.
pub const IMAGE_TOKENS: u64 = 765;

/// Which BPE vocabulary to count with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// GPT-4 / GPT-3.5's vocabulary; the default proxy for every provider.
    #[default]
    Cl100kBase,
    /// GPT-4o's vocabulary.
    O200kBase,
}

/// Counts tokens with a shared tiktoken vocabulary (loaded once per process), exactly as
/// tiktoken counts them.
///
/// A message counts as [`MESSAGE_OVERHEAD`] plus its text, plus for each tool call its name and
/// arguments and [`TOOL_PART_OVERHEAD`], plus for each tool result its content and
/// [`TOOL_PART_OVERHEAD`], plus [`IMAGE_TOKENS`] per image.
///
/// ```
/// use looprail_compaction::TiktokenCounter;
/// use looprail_loop_core::context::TokenCounter;
/// use looprail_loop_core::message::Message;
///
/// let counter = TiktokenCounter::default();
/// assert_eq!(counter.count_text("hello world"), 2);
/// assert_eq!(counter.count_message(&Message::user("hello world")), 2 + 3);
/// ```
#[derive(Clone, Copy)]
pub struct TiktokenCounter {
    vocab: &'static Vocabulary,
    encoding: Encoding,
}

/// A tokenizer and the set of its tokens' bytes: a pre-tokenized piece that is itself a token
/// counts 1 without running the encoder, exactly as tiktoken does (most pieces are words that
/// are tokens, and the encoder allocates per piece).
struct Vocabulary {
    tokenizer: &'static bpe_openai::Tokenizer,
    /// Which of a thread's piece maps is this vocabulary's.
    slot: usize,
    /// Tokens of up to 7 bytes, [`packed`] into a word, with their ranks (ids): most pieces
    /// are short, and a word hashes and compares in one instruction.
    short: HashMap<u64, u32, FixedState>,
    /// The longer tokens, with their ranks.
    tokens: HashMap<&'static [u8], u32, FixedState>,
}

/// A piece of at most 7 bytes as one word: its bytes (little-endian), and its length in the
/// top byte. Built from two overlapping loads in registers: copying the bytes into a buffer and
/// reading it back as a word stalls on the store, and this runs once per piece.
fn packed(bytes: &[u8]) -> Option<u64> {
    let len = bytes.len();
    let word = match len {
        0 => 0,
        1 => u64::from(bytes[0]),
        2 | 3 => {
            let low = u64::from(u16::from_le_bytes([bytes[0], bytes[1]]));
            let high = u64::from(u16::from_le_bytes([bytes[len - 2], bytes[len - 1]]));
            low | high << ((len - 2) * 8)
        }
        4..=7 => {
            let low = u64::from(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
            let end = &bytes[len - 4..];
            let high = u64::from(u32::from_le_bytes([end[0], end[1], end[2], end[3]]));
            low | high << ((len - 4) * 8)
        }
        _ => return None,
    };
    Some(word | (len as u64) << 56)
}

impl Vocabulary {
    fn of(tokenizer: &'static bpe_openai::Tokenizer, slot: usize) -> Self {
        let bpe = &tokenizer.bpe;
        let all = (0..bpe.num_tokens() as u32).map(|id| (bpe.token_bytes(id), id));
        let short = all.clone().filter_map(|(t, id)| Some((packed(t)?, id))).collect();
        let tokens = all.filter(|(t, _)| packed(t).is_none()).collect();
        Self { tokenizer, slot, short, tokens }
    }

    fn count(&self, text: &str) -> usize {
        PIECES.with(|pieces| {
            let mut pieces = pieces.borrow_mut();
            let pieces = &mut pieces[self.slot];
            if self.slot == CL100K_SLOT {
                let split = split_cl100k(text, |rest| self.tokenizer.split(rest).next());
                split.map(|piece| self.count_piece(pieces, piece)).sum()
            } else {
                self.tokenizer.split(text).map(|piece| self.count_piece(pieces, piece)).sum()
            }
        })
    }

    /// One piece: its count from the thread's recent pieces, else 1 when it is a token, else
    /// its remembered count, else the encoder's.
    fn count_piece(&self, cache: &mut PieceCache, piece: &str) -> usize {
        let bytes = piece.as_bytes();
        if let Some(word) = packed(bytes) {
            let slot = &mut cache.recent[recent_slot(word)];
            if slot.0 == word {
                return slot.1 as usize;
            }
            let count =
                if self.short.contains_key(&word) { 1 } else { self.encoded(&mut cache.longer, bytes) };
            *slot = (word, count as u32);
            return count;
        }
        if self.tokens.contains_key(bytes) {
            return 1;
        }
        self.encoded(&mut cache.longer, bytes)
    }

    /// The rank of the token whose bytes these are, if they are one.
    fn rank(&self, bytes: &[u8]) -> Option<u32> {
        match packed(bytes) {
            Some(word) => self.short.get(&word).copied(),
            None => self.tokens.get(bytes).copied(),
        }
    }

    /// A piece that is not a single token: its remembered count, else tiktoken's merging
    /// (short pieces) or the encoder's.
    fn encoded(&self, pieces: &mut PieceCounts, bytes: &[u8]) -> usize {
        if let Some(count) = pieces.get(bytes) {
            return *count as usize;
        }
        let count = if bytes.len() <= MERGED_UP_TO {
            merged_count(bytes, |joined| self.rank(joined))
        } else {
            self.tokenizer.bpe.count(bytes)
        };
        if pieces.len() >= PIECES_KEPT {
            pieces.clear();
        }
        pieces.insert(bytes.into(), count as u32);
        count
    }
}

/// The slot of cl100k, whose pre-tokenizer is written out for ASCII ([`split_cl100k`]).
const CL100K_SLOT: usize = 0;

type PieceCounts = HashMap<Box<[u8]>, u32, FixedState>;

/// How many short pieces a thread's recent table holds (a power of two): 4,096 entries of 16
/// bytes stay in the core's own cache, where the vocabulary's 100,000 tokens do not. Words
/// follow Zipf's law, so most pieces met are among the few thousand met last.
const RECENT: usize = 1 << 12;

/// The recent table's slot of a [`packed`] piece (Fibonacci hashing: the top bits of a
/// multiply).
fn recent_slot(word: u64) -> usize {
    (word.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - RECENT.trailing_zeros())) as usize
}

/// A thread's memory of the pieces it counted, for one vocabulary.
struct PieceCache {
    /// Short pieces met last, direct-mapped: a [`packed`] piece and its count (an empty slot
    /// holds the empty piece, whose count is 0).
    recent: Box<[(u64, u32)]>,
    /// Pieces that are not single tokens, met before.
    longer: PieceCounts,
}

impl Default for PieceCache {
    fn default() -> Self {
        Self { recent: vec![(0, 0); RECENT].into_boxed_slice(), longer: PieceCounts::default() }
    }
}

/// How many multi-token pieces a thread remembers before it starts over.
const PIECES_KEPT: usize = 1 << 18;

thread_local! {
    /// Counts of the pieces that are not single tokens, met before on this thread, one map
    /// per encoding: words and identifiers recur, and a lookup costs a fraction of the
    /// encoder. Per thread, so no lock is taken.
    static PIECES: std::cell::RefCell<[PieceCache; 2]> = std::cell::RefCell::new(Default::default());
}

static CL100K: OnceLock<Vocabulary> = OnceLock::new();
static O200K: OnceLock<Vocabulary> = OnceLock::new();

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter").field("encoding", &self.encoding).finish()
    }
}

impl Default for TiktokenCounter {
    fn default() -> Self {
        Self::new(Encoding::Cl100kBase)
    }
}

impl TiktokenCounter {
    /// A counter for `encoding`, sharing the process-wide vocabulary.
    pub fn new(encoding: Encoding) -> Self {
        let vocab = match encoding {
            Encoding::Cl100kBase => {
                CL100K.get_or_init(|| Vocabulary::of(bpe_openai::cl100k_base(), CL100K_SLOT))
            }
            Encoding::O200kBase => O200K.get_or_init(|| Vocabulary::of(bpe_openai::o200k_base(), 1)),
        };
        Self { vocab, encoding }
    }

    /// The vocabulary in use.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
}

impl TokenCounter for TiktokenCounter {
    fn count_text(&self, text: &str) -> u64 {
        self.vocab.count(text) as u64
    }

    fn count_message(&self, message: &Message) -> u64 {
        let mut total = MESSAGE_OVERHEAD;
        for part in &message.content {
            total += match part {
                ContentPart::Text { text } => self.count_text(text),
                ContentPart::ToolUse(call) => {
                    TOOL_PART_OVERHEAD + self.count_text(&call.name) + self.count_text(&call.arguments)
                }
                ContentPart::ToolResult(result) => TOOL_PART_OVERHEAD + self.count_text(&result.content),
                ContentPart::Image { .. } => IMAGE_TOKENS,
            };
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::packed;
    use proptest::prelude::*;

    /// The plain way: the bytes copied into a word, the length in its top byte.
    fn copied(bytes: &[u8]) -> Option<u64> {
        (bytes.len() <= 7).then(|| {
            let mut word = [0u8; 8];
            word[..bytes.len()].copy_from_slice(bytes);
            word[7] = bytes.len() as u8;
            u64::from_le_bytes(word)
        })
    }

    proptest! {
        #[test]
        fn packing_in_registers_equals_copying(bytes in proptest::collection::vec(any::<u8>(), 0..12)) {
            prop_assert_eq!(packed(&bytes), copied(&bytes));
        }
    }

    #[test]
    fn pieces_of_different_lengths_never_share_a_word() {
        // "a" and "a\0" hold the same bytes in the low part; the length tells them apart.
        assert_ne!(packed(b"a"), packed(b"a\0"));
        assert_eq!(packed(b"12345678"), None);
    }
}
