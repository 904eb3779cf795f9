//! Call signatures (B1) and observation fingerprints (B4).
//!
//! A signature is the tool name plus the WHOLE arguments as canonical JSON (object keys sorted,
//! no whitespace), hashed to 64 bits so windows hold integers, not strings. Key order and
//! whitespace never change a signature; any other difference anywhere in the arguments does
//! (two full-file rewrites that differ only at the end are two different calls).
//!
//! S1's 200-character cut of string values is for display only: [`display_arguments`].

use serde_json::Value;

/// String values longer than this many characters are cut when arguments are shown to a person
/// (events, evidence, errors). Never used for equality.
pub const DISPLAY_TRUNCATION: usize = 200;

/// A stable 64-bit hasher that takes input eight bytes at a time (deterministic across
/// processes and versions, unlike `std`'s, so hashes can be saved with a run). Not for
/// anything adversarial.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fnv64 {
    state: u64,
    lane: u64,
    buffer: u64,
    filled: u32,
    length: u64,
}

const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

impl Fnv64 {
    #[inline]
    fn absorb(&mut self, word: u64) {
        self.state = (self.state ^ word).wrapping_mul(MIX).rotate_left(29);
    }

    /// Feeds one byte.
    #[inline]
    pub fn write_byte(&mut self, byte: u8) {
        self.buffer |= u64::from(byte) << (8 * self.filled);
        self.filled += 1;
        self.length += 1;
        if self.filled == 8 {
            let word = self.buffer;
            self.absorb(word);
            self.buffer = 0;
            self.filled = 0;
        }
    }

    /// Feeds bytes.
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while self.filled != 0 {
            let Some((first, tail)) = rest.split_first() else { return };
            self.write_byte(*first);
            rest = tail;
        }
        // Two independent lanes over 16-byte blocks, so the multiplies overlap.
        let mut blocks = rest.chunks_exact(16);
        let mut lane = self.lane;
        for block in &mut blocks {
            let mut a = [0u8; 8];
            let mut b = [0u8; 8];
            a.copy_from_slice(&block[..8]);
            b.copy_from_slice(&block[8..]);
            self.state = (self.state ^ u64::from_le_bytes(a)).wrapping_mul(MIX).rotate_left(29);
            lane = (lane ^ u64::from_le_bytes(b)).wrapping_mul(MIX).rotate_left(31);
        }
        self.lane = lane;
        let block_bytes = rest.len() - blocks.remainder().len();
        self.length += block_bytes as u64;
        for byte in blocks.remainder() {
            self.write_byte(*byte);
        }
    }

    /// The hash so far.
    pub fn finish(self) -> u64 {
        let mut h = self;
        let (buffer, length) = (h.buffer, h.length);
        h.absorb(buffer ^ (u64::from(h.filled) << 59));
        h.absorb(length);
        let lane = h.lane;
        h.absorb(lane);
        let mut z = h.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Hashes one string.
pub fn hash_str(text: &str) -> u64 {
    let mut h = Fnv64::default();
    h.write(text.as_bytes());
    h.finish()
}

/// Writes `value` as canonical JSON into `out`: sorted keys, no whitespace; string values
/// longer than `cut` characters are cut there (`usize::MAX` keeps them whole).
pub fn canonical_json(value: &Value, cut: usize, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    canonical_json(v, cut, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, cut, out);
            }
            out.push(']');
        }
        Value::String(s) => {
            let kept = s.char_indices().nth(cut).map_or(s.as_str(), |(i, _)| &s[..i]);
            out.push_str(&Value::String(kept.to_owned()).to_string());
        }
        other => out.push_str(&other.to_string()),
    }
}

/// An object's entries in document order: keys borrowed from the text (decoded when they hold
/// escapes), values as raw text.
struct Entries<'a>(Vec<(std::borrow::Cow<'a, str>, &'a serde_json::value::RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Entries<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Entries<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some((key, value)) =
                    map.next_entry::<CowKey<'de>, &'de serde_json::value::RawValue>()?
                {
                    entries.push((key.0, value));
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(Visit(std::marker::PhantomData))
    }
}

/// A key borrowed from the text when it can be, decoded when it holds escapes.
struct CowKey<'a>(std::borrow::Cow<'a, str>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for CowKey<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = CowKey<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowKey(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowKey(std::borrow::Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(Visit(std::marker::PhantomData))
    }
}

/// Feeds the canonical JSON of `raw` to `h` straight from the text, borrowing keys and values
/// (decoding only strings that hold escapes). Returns false (having fed a partial hash) when
/// the text is not JSON.
fn hash_raw(raw: &str, h: &mut Fnv64) -> bool {
    use serde_json::value::RawValue;
    let raw = raw.trim();
    match raw.as_bytes().first() {
        Some(b'{') => {
            let Ok(Entries(mut entries)) = serde_json::from_str::<Entries<'_>>(raw) else {
                return false;
            };
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            h.write_byte(b'{');
            for (i, (key, value)) in entries.iter().enumerate() {
                if i > 0 {
                    h.write_byte(b',');
                }
                write_json_string(key, h);
                h.write_byte(b':');
                if !hash_raw(value.get(), h) {
                    return false;
                }
            }
            h.write_byte(b'}');
            true
        }
        Some(b'[') => {
            let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(raw) else { return false };
            h.write_byte(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    h.write_byte(b',');
                }
                if !hash_raw(item.get(), h) {
                    return false;
                }
            }
            h.write_byte(b']');
            true
        }
        Some(b'"') => {
            let inner = &raw[1..raw.len().saturating_sub(1).max(1)];
            if !raw.ends_with('"') || raw.len() < 2 {
                return false;
            }
            match memchr::memchr(b'\\', inner.as_bytes()) {
                // No escapes (RawValue has checked there is no control character either):
                // serde_json writes it back as it is.
                None => write_quoted(inner.as_bytes(), h),
                // Escapes serde_json would write the same way: the literal is already
                // canonical, and is fed in one piece as `write_json_string` feeds it.
                Some(first) if canonical_escapes(inner.as_bytes(), first) => h.write(raw.as_bytes()),
                Some(_) => {
                    let Ok(decoded) = serde_json::from_str::<String>(raw) else { return false };
                    write_json_string(&decoded, h);
                }
            }
            true
        }
        // A number, `true`, `false` or `null`, as written (RawValue has checked it).
        Some(_) => {
            h.write(raw.as_bytes());
            true
        }
        None => true,
    }
}

/// Feeds `value`'s canonical JSON to `h` without building the text (same bytes as
/// [`canonical_json`]).
fn hash_canonical(value: &Value, h: &mut Fnv64) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            h.write_byte(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    h.write_byte(b',');
                }
                write_json_string(key, h);
                h.write_byte(b':');
                if let Some(v) = map.get(key) {
                    hash_canonical(v, h);
                }
            }
            h.write_byte(b'}');
        }
        Value::Array(items) => {
            h.write_byte(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    h.write_byte(b',');
                }
                hash_canonical(item, h);
            }
            h.write_byte(b']');
        }
        Value::String(s) => write_json_string(s, h),
        other => h.write(other.to_string().as_bytes()),
    }
}

/// Feeds `s` as a JSON string literal. A plain string goes straight through as `"`, its
/// bytes and `"`; one that needs escapes is written escaped exactly as serde_json writes it
/// (`"` and `\\`, the short escapes for `\b \f \n \r \t`, `\u00XX` for other control
/// characters) into a reused buffer and fed in one piece. (Signatures are saved with runs, and
/// [`Fnv64`] hashes eight bytes at a time, so how bytes are fed must not change.)
fn write_json_string(s: &str, h: &mut Fnv64) {
    if first_to_escape(s.as_bytes(), 0).is_none() {
        write_quoted(s.as_bytes(), h);
        return;
    }
    thread_local! {
        static LITERAL: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    LITERAL.with(|literal| {
        let mut literal = literal.borrow_mut();
        literal.clear();
        escape_json_string(s, &mut literal);
        h.write(&literal);
    });
}

/// Feeds the literal of a string that needs no escapes: `"`, its bytes, `"`, in three writes.
fn write_quoted(plain: &[u8], h: &mut Fnv64) {
    h.write_byte(b'"');
    h.write(plain);
    h.write_byte(b'"');
}

/// Where the first byte from `from` on that JSON escapes is (a control character, `"` or
/// `\\`), looking at eight bytes at a time: long arguments (whole files) are mostly plain.
fn first_to_escape(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v & HIGH != 0;
    let mut at = from;
    while at + 8 <= bytes.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        let w = u64::from_le_bytes(word);
        let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH != 0;
        if control || zero_in(w ^ (ONES * u64::from(b'"'))) || zero_in(w ^ (ONES * u64::from(b'\\'))) {
            break;
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| b < 0x20 || b == b'"' || b == b'\\').map(|i| at + i)
}

/// True when every escape in the inside of a valid JSON string literal, the first at `first`,
/// is the one serde_json writes for the character it stands for: `\\"` `\\\\` `\\b` `\\f`
/// `\\n` `\\r` `\\t`, or `\\u00xx` (lower-case hex) for another control character. Such a
/// literal is exactly what serialising its decoded text gives back.
fn canonical_escapes(inner: &[u8], first: usize) -> bool {
    let mut at = first;
    loop {
        let canonical = match inner.get(at + 1) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => {
                at += 2;
                true
            }
            Some(b'u') => {
                let hex = inner.get(at + 2..at + 6);
                at += 6;
                match hex {
                    Some([b'0', b'0', high @ (b'0' | b'1'), low]) => {
                        // serde_json writes lower-case hex: `\u001F` is not its spelling.
                        let low = match low {
                            b'0'..=b'9' => Some(low - b'0'),
                            b'a'..=b'f' => Some(low - b'a' + 10),
                            _ => None,
                        };
                        low.is_some_and(|low| {
                            !matches!((high - b'0') * 16 + low, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)
                        })
                    }
                    _ => false,
                }
            }
            _ => false,
        };
        if !canonical {
            return false;
        }
        match memchr::memchr(b'\\', &inner[at.min(inner.len())..]) {
            Some(next) => at += next,
            None => return true,
        }
    }
}

/// `s` as a JSON string literal, as serde_json escapes it.
fn escape_json_string(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut from = 0;
    while let Some(i) = first_to_escape(bytes, from) {
        let b = bytes[i];
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x0c => b'f',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            _ => b'u',
        };
        out.extend_from_slice(&bytes[from..i]);
        out.extend_from_slice(&[b'\\', short]);
        if short == b'u' {
            out.extend_from_slice(&[b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
        }
        from = i + 1;
    }
    out.extend_from_slice(&bytes[from..]);
    out.push(b'"');
}

/// The canonical form of a raw arguments text; text that is not JSON is used as it is, with
/// surrounding whitespace trimmed.
pub fn canonical_arguments(raw: &str) -> String {
    canonical_with_cut(raw, usize::MAX)
}

/// The canonical arguments as shown to a person: string values cut at
/// [`DISPLAY_TRUNCATION`] characters (S1's signature). Never compare these.
pub fn display_arguments(raw: &str) -> String {
    canonical_with_cut(raw, DISPLAY_TRUNCATION)
}

fn canonical_with_cut(raw: &str, cut: usize) -> String {
    match serde_json::from_str::<Value>(raw.trim()) {
        Ok(value) => {
            let mut out = String::with_capacity(raw.len().min(4096));
            canonical_json(&value, cut, &mut out);
            out
        }
        Err(_) => {
            let text = raw.trim();
            text.char_indices().nth(cut).map_or(text, |(i, _)| &text[..i]).to_owned()
        }
    }
}

/// One tool call reduced to what detectors compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CallSignature {
    /// Hash of the tool name.
    pub tool: u64,
    /// Hash of the tool name and canonical arguments.
    pub call: u64,
}

impl CallSignature {
    /// The signature of a call.
    pub fn of(tool: &str, raw_arguments: &str) -> Self {
        let mut h = Fnv64::default();
        h.write(tool.as_bytes());
        h.write_byte(0);
        let raw = raw_arguments.trim();
        if !hash_raw(raw, &mut h) {
            // Not JSON after all (RawValue is stricter on some inputs): the tree decides.
            let mut h2 = Fnv64::default();
            h2.write(tool.as_bytes());
            h2.write_byte(0);
            match serde_json::from_str::<Value>(raw) {
                Ok(value) => hash_canonical(&value, &mut h2),
                Err(_) => h2.write(raw.as_bytes()),
            }
            h = h2;
        }
        Self { tool: hash_str(tool), call: h.finish() }
    }
}

/// Byte classes for the fingerprint scanner.
const OTHER: u8 = 0;
const DECIMAL: u8 = 1;
const HEX_LETTER: u8 = 2;
const WORD: u8 = 3;

const CLASSES: [u8; 256] = {
    let mut table = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = if c.is_ascii_digit() {
            DECIMAL
        } else if matches!(c, b'a'..=b'f' | b'A'..=b'F') {
            HEX_LETTER
        } else if c.is_ascii_alphabetic() || c == b'_' {
            WORD
        } else {
            OTHER
        };
        b += 1;
    }
    table
};

/// A fingerprint of a tool result with volatile numbers masked (B4): every run of decimal
/// digits (line numbers, PIDs, ports, timestamps, durations) and every word made only of hex
/// digits with a digit in it (`0x7f3a`, a commit hash) counts as the same token, so two results
/// that differ only there are the same observation. Other words stay as they are.
pub fn observation_fingerprint(text: &str) -> u64 {
    let all = text.as_bytes();
    if all.len() <= FINGERPRINT_HEAD + FINGERPRINT_TAIL {
        return fingerprint_bytes(all);
    }
    // Long output: its head, its tail and its size class (cut at word boundaries so a number
    // split by the cut is still masked as a whole).
    let mut head_end = FINGERPRINT_HEAD;
    while head_end < all.len() && CLASSES[all[head_end] as usize] != OTHER {
        head_end += 1;
    }
    let mut tail_start = all.len() - FINGERPRINT_TAIL;
    while tail_start > head_end && CLASSES[all[tail_start - 1] as usize] != OTHER {
        tail_start -= 1;
    }
    let mut h = Fnv64::default();
    h.write(&fingerprint_bytes(&all[..head_end]).to_le_bytes());
    h.write(&fingerprint_bytes(&all[tail_start..]).to_le_bytes());
    h.write(&((all.len() / 256) as u64).to_le_bytes());
    h.finish()
}

/// Bytes read from the start of a long output for its fingerprint.
pub const FINGERPRINT_HEAD: usize = 1024;
/// Bytes read from the end of a long output for its fingerprint.
pub const FINGERPRINT_TAIL: usize = 256;

fn fingerprint_bytes(bytes: &[u8]) -> u64 {
    // Normalise into one buffer (unchanged spans are memcpy'd), then hash it in one pass.
    let mut normal = Vec::with_capacity(bytes.len());
    let mut raw_from = 0;
    let mut at = 0;
    while let Some(digit) = next_digit(bytes, at) {
        let mut start = digit;
        while start > raw_from && CLASSES[bytes[start - 1] as usize] != OTHER {
            start -= 1;
        }
        let mut end = digit;
        while end < bytes.len() && CLASSES[bytes[end] as usize] != OTHER {
            end += 1;
        }
        normal.extend_from_slice(&bytes[raw_from..start]);
        write_masked_word(&bytes[start..end], &mut normal);
        raw_from = end;
        at = end;
    }
    normal.extend_from_slice(&bytes[raw_from..]);
    let mut h = Fnv64::default();
    h.write(&normal);
    h.finish()
}

/// The index of the first ASCII digit at or after `from`, checking 16 bytes at a time without
/// branches (the compiler vectorises the inner fold).
fn next_digit(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 16 <= bytes.len() {
        let chunk = &bytes[i..i + 16];
        if chunk.iter().fold(false, |any, b| any | (b.wrapping_sub(b'0') < 10)) {
            return chunk.iter().position(u8::is_ascii_digit).map(|p| i + p);
        }
        i += 16;
    }
    bytes[i.min(bytes.len())..].iter().position(u8::is_ascii_digit).map(|p| i + p)
}

/// Writes a word that holds a digit: `#` for a number or a hex id, otherwise the word with each
/// run of digits replaced by `#` (`T10`, `v2`, `utf8`).
fn write_masked_word(word: &[u8], out: &mut Vec<u8>) {
    let hex_only = word.iter().all(|b| CLASSES[*b as usize] != WORD);
    let hex_prefixed = word.len() > 1 && word[0] == b'0' && (word[1] == b'x' || word[1] == b'X');
    if hex_only || hex_prefixed {
        out.push(b'#');
        return;
    }
    let mut in_digits = false;
    for &b in word {
        if b.is_ascii_digit() {
            if !in_digits {
                out.push(b'#');
            }
            in_digits = true;
        } else {
            out.push(b);
            in_digits = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_and_whitespace_do_not_change_a_signature() {
        let a = CallSignature::of("grep", r#"{"pattern": "x", "path": "src"}"#);
        let b = CallSignature::of("grep", "{\"path\":\"src\",\n \"pattern\":\"x\"}");
        assert_eq!(a, b);
        assert_ne!(a, CallSignature::of("grep", r#"{"pattern": "y", "path": "src"}"#));
        assert_ne!(a.call, CallSignature::of("find", r#"{"pattern": "x", "path": "src"}"#).call);
    }

    #[test]
    fn long_values_are_compared_whole_and_cut_only_for_display() {
        // Two full-file rewrites that differ only after the 200th character (issue 13).
        let long_a = format!("{}A", "x".repeat(5000));
        let long_b = format!("{}B", "x".repeat(5000));
        let args_a = serde_json::json!({ "file_text": long_a, "path": "f.py" }).to_string();
        let args_b = serde_json::json!({ "file_text": long_b, "path": "f.py" }).to_string();
        assert_ne!(CallSignature::of("create", &args_a), CallSignature::of("create", &args_b));
        // The same through the escaped (allocating) path.
        let esc_a = serde_json::json!({ "file_text": format!("line\n{long_a}") }).to_string();
        let esc_b = serde_json::json!({ "file_text": format!("line\n{long_b}") }).to_string();
        assert_ne!(CallSignature::of("create", &esc_a), CallSignature::of("create", &esc_b));
        assert_eq!(display_arguments(&args_a), display_arguments(&args_b));
        assert!(display_arguments(&args_a).len() < 240);
        assert!(canonical_arguments(&args_a).len() > 5000);
    }

    /// `s` as a JSON string literal with one kind of character spelled as writers other than
    /// serde_json spell it (`choice`), every other character as serde_json writes it: a
    /// literal that still means `s`. (Replacing text in the canonical literal does not: in
    /// the literal of a backslash and an `n`, `\\n` is no line break.)
    fn respelled(s: &str, choice: usize) -> String {
        let mut literal = String::from("\"");
        for c in s.chars() {
            match (choice, c) {
                (0, '\n') => literal.push_str("\\u000a"),
                (1, '/') => literal.push_str("\\/"),
                (2, '\u{1f}') => literal.push_str("\\u001F"),
                (3, 'é') => literal.push_str("\\u00e9"),
                _ => {
                    let one = serde_json::to_string(&c.to_string()).unwrap_or_default();
                    literal.push_str(&one[1..one.len() - 1]);
                }
            }
        }
        literal.push('"');
        literal
    }

    #[test]
    fn an_upper_case_unicode_escape_hashes_as_its_character() {
        // `\u001F` is no serde_json spelling: read through the tree, not the text (the
        // scanner's arithmetic on its `F` overflowed).
        let upper = CallSignature::of("t", r#"{"k": "\u001F"}"#);
        let lower = CallSignature::of("t", r#"{"k": "\u001f"}"#);
        assert_eq!(upper, lower);
        assert_eq!(upper, CallSignature::of("t", &serde_json::json!({"k": "\u{1f}"}).to_string()));
    }

    proptest::proptest! {
        /// A string literal's signature is the same whether it is hashed from the text (when
        /// its escapes are canonical) or decoded and escaped again.
        #[test]
        fn literals_hash_as_their_decoded_text(
            s in "(\\PC|[\\x00-\\x1f\"\\\\\\x7f/é])*",
            spelled in proptest::collection::vec(0usize..4, 0..8),
        ) {
            // The literal as serde_json writes it, and variants other writers produce.
            let canonical = serde_json::to_string(&s).unwrap_or_default();
            let mut texts = vec![canonical];
            texts.extend(spelled.iter().map(|&choice| respelled(&s, choice)));
            let mut expected = Fnv64::default();
            write_json_string(&s, &mut expected);
            let expected = expected.finish();
            for text in texts {
                let mut h = Fnv64::default();
                proptest::prop_assert!(hash_raw(&text, &mut h), "{}", text);
                proptest::prop_assert_eq!(h.finish(), expected, "{}", text);
            }
        }

        /// Strings are escaped byte for byte as serde_json escapes them.
        #[test]
        fn strings_are_escaped_as_serde_json_escapes_them(s in "(\\PC|[\\x00-\\x1f\"\\\\\\x7f])*") {
            let mut ours = Vec::new();
            escape_json_string(&s, &mut ours);
            proptest::prop_assert_eq!(String::from_utf8(ours).ok(), serde_json::to_string(&s).ok());
        }
    }

    #[test]
    fn signatures_keep_their_values() {
        // Signatures are saved with runs: these values must not change between versions.
        // (Values computed by the version before escaped strings were hashed without a tree.)
        assert_eq!(
            CallSignature::of("grep", r#"{"pattern": "x", "path": "src"}"#).call,
            0x0162_dba2_2238_ff62
        );
        assert_eq!(
            CallSignature::of("edit", r#"{"text": "a\nb \"q\"", "path": "f"}"#).call,
            0xeb92_b4dc_f37a_41c5
        );
    }

    #[test]
    fn fast_and_allocating_paths_agree() {
        for args in [
            r#"{"b": [1, 2, {"z": "q", "a": null}], "a": "x"}"#,
            r#"{"k": "a\nb", "j": 1.5}"#,
            r#"{"k\"ey": ["tab\there", "\u0041\u00e9"], "a\u0041": {"x": "\\"}}"#,
            "not json",
        ] {
            let value: Option<Value> = serde_json::from_str(args).ok();
            let mut slow = Fnv64::default();
            slow.write(b"t");
            slow.write_byte(0);
            match &value {
                Some(v) => hash_canonical(v, &mut slow),
                None => slow.write(args.as_bytes()),
            }
            assert_eq!(CallSignature::of("t", args).call, slow.finish(), "{args}");
        }
    }

    #[test]
    fn long_outputs_compare_by_head_tail_and_size_class() {
        let body = |middle: &str, n: u32| {
            format!("{}{middle}{}", "header line 1\n".repeat(100), format!("exit code {n}\n").repeat(30))
        };
        let a = body(&"x".repeat(500), 1);
        let b = body(&"y".repeat(500), 2);
        assert_eq!(observation_fingerprint(&a), observation_fingerprint(&b), "same ends, same size");
        let c = body(&"y".repeat(900), 2);
        assert_ne!(observation_fingerprint(&a), observation_fingerprint(&c), "another size class");
        let d = format!("{}{}", "footer text\n".repeat(120), &a[1400..]);
        assert_ne!(observation_fingerprint(&a), observation_fingerprint(&d), "another head");
    }

    #[test]
    fn volatile_numbers_do_not_hide_a_repeated_observation() {
        let a = observation_fingerprint(
            "Error: line 42: syntax error near `fi' (pid 3121) at 2024-05-01T10:00:00",
        );
        let b =
            observation_fingerprint("Error: line 57: syntax error near `fi' (pid 9) at 2024-06-11T09:13:22");
        assert_eq!(a, b);
        assert_eq!(
            observation_fingerprint("commit 3f9a2c1d ok"),
            observation_fingerprint("commit 77e0b21 ok")
        );
        assert_ne!(observation_fingerprint("file not found"), observation_fingerprint("permission denied"));
        // Words with hex letters stay words.
        assert_ne!(observation_fingerprint("added 3 beds"), observation_fingerprint("added 3 faced"));
    }
}
