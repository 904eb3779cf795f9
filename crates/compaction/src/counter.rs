//! Token counting with OpenAI's tiktoken vocabularies (F29): cl100k_base by default as a
//! cross-provider proxy, o200k_base selectable, with tiktoken's exact counts (tested against
//! tiktoken-rs). Counting is most of what the audit and compaction's first pass spend. For
//! cl100k the vocabulary is embedded at build time (nothing is deserialised at start-up) and
//! texts are cut into pieces 64 bytes at a time without a regex ([`crate::pretokenize`]); each
//! piece is then counted by [`crate::pieces`]. o200k_base uses bpe-openai's tokenizer and regex
//! to load its vocabulary and cut its pieces.

use std::sync::OnceLock;

use looprail_loop_core::context::TokenCounter;
use looprail_loop_core::message::{ContentPart, Message};

use crate::pieces::Vocabulary;

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
            Encoding::Cl100kBase => CL100K.get_or_init(Vocabulary::cl100k),
            Encoding::O200kBase => O200K.get_or_init(Vocabulary::o200k),
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
