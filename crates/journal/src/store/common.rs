//! What both backends compute the same way: the checkpoint write plan (only new messages are
//! written unless the history was rewritten), names of checkpoint kinds, the message hash.

use looprail_loop_core::engine::RunHeader;
use looprail_loop_core::message::Message;
use looprail_loop_core::store::CheckpointKind;

use crate::error::JournalError;

/// The runs a cancel request still means something to (SQL over `runs`, the same in both
/// backends): not ended, or timed out but still to be taken over.
/// A macro, so that each backend's query stays one literal (`concat!`).
macro_rules! cancellable {
    () => {
        "(status NOT IN ('completed', 'failed', 'cancelled', 'timed_out') \
         OR (status = 'timed_out' AND resume_available = 1))"
    };
}
pub(super) use cancellable;

/// FNV-1a of a stored message body: recognises the last persisted message cheaply.
pub(super) fn hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The stored name of a checkpoint kind.
pub(super) fn kind_name(kind: CheckpointKind) -> Result<String, JournalError> {
    looprail_loop_core::event::wire_name(&kind)
        .ok_or_else(|| JournalError::corrupt("checkpoint kind", "unnamed kind"))
}

/// A checkpoint kind read back from its stored name.
pub(super) fn parse_kind(name: String, what: &str) -> Result<CheckpointKind, JournalError> {
    serde_json::from_value(serde_json::Value::String(name)).map_err(|e| JournalError::corrupt(what, e))
}

/// What one checkpoint write does.
pub(super) struct CheckpointPlan {
    /// Every message, serialized.
    pub bodies: Vec<String>,
    /// The first index to insert; messages before it are already stored.
    pub from: usize,
    /// True when the stored messages must be deleted first (the history was rewritten).
    pub rewrite: bool,
    /// The header, serialized.
    pub header: String,
    /// The kind's stored name.
    pub kind: String,
    /// The hash of the last message, stored for the next write's check.
    pub last_hash: Option<String>,
}

impl CheckpointPlan {
    /// Plans a write given what the run row says is stored: `persisted` messages, the last
    /// one hashing to `last_hash`. Only the new messages are written while the stored prefix
    /// is intact, so a write is O(new messages), not O(history).
    pub(super) fn new(
        persisted: i64,
        last_hash: Option<&str>,
        kind: CheckpointKind,
        header: &RunHeader,
        messages: &[Message],
    ) -> Result<Self, JournalError> {
        let persisted = usize::try_from(persisted).unwrap_or(usize::MAX);
        let prefix_intact = persisted <= messages.len()
            && kind != CheckpointKind::Compaction
            && (persisted == 0 || {
                let body = serde_json::to_string(&messages[persisted - 1])
                    .map_err(|e| JournalError::corrupt("message", e))?;
                last_hash == Some(hash(&body).as_str())
            });
        let from = if prefix_intact { persisted } else { 0 };
        let bodies: Vec<String> = messages[from..]
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<_, _>>()
            .map_err(|e| JournalError::corrupt("message", e))?;
        Ok(Self {
            last_hash: match bodies.last() {
                Some(body) => Some(hash(body)),
                None if from > 0 => last_hash.map(str::to_owned),
                None => None,
            },
            bodies,
            from,
            rewrite: !prefix_intact,
            header: serde_json::to_string(header).map_err(|e| JournalError::corrupt("run header", e))?,
            kind: kind_name(kind)?,
        })
    }

    /// The new messages with their indexes.
    pub(super) fn new_messages(&self) -> impl Iterator<Item = (i64, &str)> {
        self.bodies.iter().enumerate().map(|(i, b)| ((self.from + i) as i64, b.as_str()))
    }

    /// How many messages the checkpoint covers.
    pub(super) fn total(&self) -> i64 {
        (self.from + self.bodies.len()) as i64
    }
}

/// Refuses a write to a run another worker holds (it took the run over after this one's
/// heartbeats stopped): the fence that keeps a worker that lost its lease from running a tool
/// call or overwriting a checkpoint. Runs not running, or held by nobody, accept writes.
pub(super) fn check_holder(
    run_id: &str,
    status: &str,
    holder: Option<String>,
    me: &str,
) -> Result<(), JournalError> {
    match holder {
        Some(holder) if status == "running" && holder != me => {
            Err(JournalError::LeaseLost { run_id: run_id.to_owned(), holder })
        }
        _ => Ok(()),
    }
}

/// A claim's result: a unique violation means another worker holds the lane (the claim did
/// not happen, `T::default()`); any other error is mapped by `db`.
pub(super) fn claimed<T: Default>(
    result: Result<T, sqlx::Error>,
    db: impl FnOnce(sqlx::Error) -> JournalError,
) -> Result<T, JournalError> {
    match result {
        Ok(value) => Ok(value),
        Err(e) if e.as_database_error().is_some_and(|d| d.is_unique_violation()) => Ok(T::default()),
        Err(e) => Err(db(e)),
    }
}

/// Whether the reconciler leaves a stale running run to a worker's take-over instead of timing
/// it out: a worker can take it over (it has a recipe and was taken over fewer than
/// [`MAX_TAKEOVERS`](super::MAX_TAKEOVERS) times), and its latest checkpoint does not allow a
/// resume (none yet, a human pause, or its end). Only a take-over handles those rightly: it
/// starts a run that never checkpointed from its recipe, and closes a run whose end was
/// recorded with that outcome, where a time-out would leave them dead.
pub(super) fn left_for_take_over(has_recipe: bool, takeovers: i64, resumable: bool) -> bool {
    has_recipe && takeovers < super::MAX_TAKEOVERS && !resumable
}
