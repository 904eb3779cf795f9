//! Canonical JSON (object keys sorted, no whitespace) of tool arguments, written out or hashed
//! straight from the raw text without building a tree.

use serde_json::Value;

use super::Fnv64;

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
pub(super) fn hash_raw(raw: &str, h: &mut Fnv64) -> bool {
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
pub(super) fn hash_canonical(value: &Value, h: &mut Fnv64) {
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
pub(super) fn write_json_string(s: &str, h: &mut Fnv64) {
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
pub(super) fn escape_json_string(s: &str, out: &mut Vec<u8>) {
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
