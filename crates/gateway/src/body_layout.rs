//! Where a chat request's parts are in its body, found once per conversation step.
//!
//! An agent's next request is its last one with messages added: the same bytes up to the last
//! message or two (a client may move a cache mark onto the newest), the new messages, then the
//! fields after the messages again, most of them the same (the system prompt and tools an agent
//! sends after its messages). [`Layouts`] keeps the layouts of recent large bodies; a body that
//! begins as one of them is read by comparing the bytes they share (at memory speed) and
//! scanning only what differs: the messages after the last one they share, and the fields
//! after the messages up to the first one from which both end alike. Any other body is scanned
//! whole. Either way the body is checked to be JSON as [`json_scan`](crate::json_scan) checks
//! it: the bytes taken as known are the very bytes checked before, in the same place of the
//! same structure.

use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;

use crate::json_scan::{Member, array_rest, object_members, object_rest};
use crate::newest_kept::NewestKept;
use crate::wire::Api;

/// The parts of a request body the gateway reads, as byte ranges of the body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The conversation's messages (Responses: its input items), each one's range.
    pub(crate) messages: Vec<Range<usize>>,
    /// Where the conversation's array closes (its `]`).
    close: usize,
    /// Every member of the body's object, in order.
    members: Vec<Part>,
    /// Which member is the conversation.
    conversation: usize,
    /// The system prompt given apart (Messages' `system`, Responses' `instructions`).
    pub(crate) system: Option<Range<usize>>,
    pub(crate) tools: Option<Range<usize>>,
    pub(crate) model: Option<Range<usize>>,
    pub(crate) stream: Option<Range<usize>>,
    pub(crate) stream_options: Option<Range<usize>>,
}

/// A member of a body's object: its key, where it starts, its value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Part {
    key: String,
    at: usize,
    value: Range<usize>,
}

impl Part {
    fn of(text: &str, member: &Member<'_>) -> Self {
        Self { key: member.key.clone().into_owned(), at: member.at, value: range(text, member.value) }
    }

    fn shifted(&self, from: usize, to: usize) -> Self {
        let at = |o: usize| o + to - from;
        Self { key: self.key.clone(), at: at(self.at), value: at(self.value.start)..at(self.value.end) }
    }
}

/// Where `part`, a slice of `text`, is in it.
fn range(text: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - text.as_ptr() as usize;
    start..start + part.len()
}

impl Layout {
    /// Scans `text` whole.
    pub(crate) fn scan(api: Api, text: &str) -> Result<Self, String> {
        let (list, conversation, _) = names(api);
        let members = object_members(text, |key| key == conversation)
            .map_err(|e| format!("the body is not a JSON object ({e})"))?;
        let parts = members.iter().map(|m| Part::of(text, m)).collect();
        let mut layout = Self::assemble(api, text, parts, Vec::new(), 0)?;
        let array = &members[layout.conversation];
        let elements = array.elements.as_ref().ok_or_else(|| list.to_owned())?;
        layout.messages = elements.iter().map(|e| range(text, e)).collect();
        layout.close = range(text, array.value).end - 1;
        Ok(layout)
    }

    /// The layout of members `members` of `text`, the conversation's array holding `messages`
    /// and closing at `close`: each field the gateway reads is given once (a repeated one
    /// could be read otherwise upstream); `null` is as good as absent.
    fn assemble(
        api: Api,
        text: &str,
        members: Vec<Part>,
        messages: Vec<Range<usize>>,
        close: usize,
    ) -> Result<Self, String> {
        let (list, conversation_key, system) = names(api);
        let field = |key: &'static str| -> Result<Option<usize>, String> {
            let mut found = members.iter().enumerate().filter(|(_, m)| m.key == key);
            let first = found.next();
            if found.next().is_some() {
                return Err(format!("the body gives the field `{key}` more than once"));
            }
            Ok(first.filter(|(_, m)| &text[m.value.clone()] != "null").map(|(i, _)| i))
        };
        let conversation = field(conversation_key)?.ok_or_else(|| list.to_owned())?;
        let range = |key: &'static str| field(key).map(|i| i.map(|i| members[i].value.clone()));
        Ok(Self {
            system: range(system)?,
            tools: range("tools")?,
            model: range("model")?,
            stream: range("stream")?,
            stream_options: range("stream_options")?,
            messages,
            close,
            members,
            conversation,
        })
    }

    /// The layout of `text` when it begins as `before` (whose layout this is) up to the end of
    /// one of its messages, and ends as it ends from one of the members after its messages on:
    /// only what lies between is scanned. `None` when it does not, or when what lies between
    /// is not JSON (then a whole scan says why).
    fn extended(&self, api: Api, before: &[u8], text: &str, same: usize) -> Option<Self> {
        let bytes = text.as_bytes();
        // The last message wholly in the common beginning (a number that goes on in `text`
        // leaves what follows it unreadable as the array's rest: then `text` is scanned whole).
        let kept = self.messages.iter().take_while(|m| m.end <= same).count();
        let resume = self.messages.get(kept.checked_sub(1)?)?.end;
        let (end, added) = array_rest(text, resume).ok()?;
        let close = end - 1;
        // The members after the array: those in the common ending are taken as they were.
        let tail = common_suffix(bytes, before);
        let after = &self.members[self.conversation + 1..];
        let adopt = |at: usize| {
            after.iter().position(|m| m.at >= before.len() - tail && m.at + bytes.len() - before.len() == at)
        };
        let (scanned, stopped) = object_rest(text, end, |at| at > close && adopt(at).is_some()).ok()?;
        let mut members = self.members[..=self.conversation].to_vec();
        members[self.conversation].value.end = end;
        members.extend(scanned.iter().map(|m| Part::of(text, m)));
        if let Some(at) = stopped {
            let from = adopt(at)?;
            members.extend(after[from..].iter().map(|m| m.shifted(before.len(), bytes.len())));
        }
        let mut messages = self.messages[..kept].to_vec();
        messages.extend(added.iter().map(|e| range(text, e)));
        Self::assemble(api, text, members, messages, close).ok()
    }
}

/// How many bytes `a` and `b` begin with alike (compared a block at a time).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let n = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= n && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..n].iter().zip(&b[at..n]).take_while(|(x, y)| x == y).count()
}

/// How many bytes `a` and `b` end with alike.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut at = n;
    while at >= BLOCK && a[at - BLOCK..at] == b[at - BLOCK..at] {
        at -= BLOCK;
    }
    n - at + a[..at].iter().rev().zip(b[..at].iter().rev()).take_while(|(x, y)| x == y).count()
}

/// A request body as text (JSON is UTF-8).
pub(crate) fn body_text(body: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(body).map_err(|_| "the body is not UTF-8 text".to_owned())
}

/// The error for a body without its conversation, and the names of the conversation's and the
/// system prompt's fields, in `api`.
fn names(api: Api) -> (&'static str, &'static str, &'static str) {
    match api {
        Api::Responses => ("`input` must be a list of items", "input", "instructions"),
        _ => ("`messages` must be an array of messages", "messages", "system"),
    }
}

/// The smallest body whose layout is kept: a smaller one is scanned in a few microseconds.
const WORTH_KEEPING: usize = 16 * 1024;

/// How many bytes from a body's start find the layouts it may extend.
const PREFIX: usize = 2048;

/// Layouts kept per prefix (conversations whose bodies begin alike).
const PER_PREFIX: usize = 4;

/// A body and its layout.
type Known = Arc<(Api, Bytes, Layout)>;

/// A request body to keep with its layout ([`Layouts::read`], [`Layouts::keep_body`]).
pub(crate) struct ToKeep {
    key: u64,
    api: Api,
    body: Bytes,
    layout: Layout,
    /// The kept body it extends, which it replaces.
    extends: Option<Known>,
}

/// The layouts of recent request bodies, by the hash of their first [`PREFIX`] bytes, within
/// a budget of the bytes the bodies hold.
pub(crate) struct Layouts {
    hasher: foldhash::quality::RandomState,
    kept: Mutex<Kept>,
}

struct Kept {
    bodies: NewestKept<u64, Vec<Known>>,
    bytes: usize,
    budget: usize,
}

fn held(known: &[Known]) -> usize {
    known.iter().map(|k| k.1.len()).sum()
}

impl Layouts {
    /// At most `prefixes` prefixes, the bodies holding at most `budget` bytes.
    pub(crate) fn new(prefixes: usize, budget: usize) -> Self {
        let kept = Kept { bodies: NewestKept::new(prefixes), bytes: 0, budget };
        Self { hasher: foldhash::quality::RandomState::default(), kept: Mutex::new(kept) }
    }

    /// The layout of `body`, a request of `api`, and the body as text: from a kept body it
    /// extends, else scanned; the body is kept for the next one at once.
    #[cfg(test)]
    pub(crate) fn layout<'b>(&self, api: Api, body: &'b Bytes) -> Result<(&'b str, Layout), String> {
        let (text, layout, to_keep) = self.read(api, body)?;
        if let Some(to_keep) = to_keep {
            self.keep_body(to_keep);
        }
        Ok((text, layout))
    }

    /// The layout of `body`, a request of `api`, and the body as text: from a kept body it
    /// extends, else scanned. A body worth keeping comes back as a [`ToKeep`], for
    /// [`Layouts::keep_body`] once the request has gone on: keeping copies the body, which the
    /// request need not wait for.
    pub(crate) fn read<'b>(
        &self,
        api: Api,
        body: &'b Bytes,
    ) -> Result<(&'b str, Layout, Option<ToKeep>), String> {
        let text = body_text(body)?;
        if body.len() < WORTH_KEEPING {
            return Ok((text, Layout::scan(api, text)?, None));
        }
        let key = self.hasher.hash_one((api.name(), &body[..body.len().min(PREFIX)]));
        let candidates: Vec<Known> =
            self.kept.lock().ok().and_then(|kept| kept.bodies.get(&key).cloned()).unwrap_or_default();
        // Only the kept body this one begins most alike with is extended (the comparisons are
        // cheap, a failed extension is not): at worst a scan of the rest and then a whole one.
        let found = candidates
            .iter()
            .filter(|k| k.0 == api)
            .map(|k| (common_prefix(body, &k.1), k))
            .max_by_key(|(same, _)| *same)
            .and_then(|(same, k)| k.2.extended(api, &k.1, text, same).map(|layout| (layout, k)));
        let (layout, extends) = match found {
            Some((layout, known)) => (layout, Some(Arc::clone(known))),
            None => (Layout::scan(api, text)?, None),
        };
        let to_keep = ToKeep { key, api, body: body.clone(), layout: layout.clone(), extends };
        Ok((text, layout, Some(to_keep)))
    }

    /// Keeps a body [`Layouts::read`] gave back, in place of the one it extends.
    pub(crate) fn keep_body(&self, to_keep: ToKeep) {
        let ToKeep { key, api, body, layout, extends } = to_keep;
        // A copy of its own: `body` may share a larger buffer, which the budget would not see.
        self.keep(key, Arc::new((api, Bytes::copy_from_slice(&body), layout)), extends.as_ref());
    }

    /// Keeps `known` under `key`, in place of the body it `extends` (one body per conversation).
    fn keep(&self, key: u64, known: Known, extends: Option<&Known>) {
        let Ok(mut kept) = self.kept.lock() else { return };
        let needed = known.1.len();
        if needed > kept.budget / 4 {
            return;
        }
        let mut list = kept.bodies.take(&key).unwrap_or_default();
        kept.bytes -= held(&list);
        list.retain(|k| !extends.is_some_and(|e| Arc::ptr_eq(e, k)));
        list.insert(0, known);
        list.truncate(PER_PREFIX);
        let adding = held(&list);
        while kept.bytes + adding > kept.budget {
            let Some((_, old)) = kept.bodies.take_oldest() else { break };
            kept.bytes -= held(&old);
        }
        if let Some((_, old)) = kept.bodies.keep(key, list) {
            kept.bytes -= held(&old);
        }
        kept.bytes += adding;
    }
}

#[cfg(test)]
mod tests;
