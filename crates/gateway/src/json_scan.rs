//! The members of a JSON object found without parsing their values: each value's text as sent,
//! checked to be JSON, and the elements of the arrays asked for, in one pass.
//!
//! A coding agent's request is mostly strings (tool outputs, schemas, prompts): their bodies are
//! crossed 32 bytes at a time while no byte ends them (a quote, a backslash or a control
//! character), and no value is built. It is no faster than `serde_json` over a whole body; it
//! exists to resume where [`body_layout`](crate::body_layout) tells it to (after the messages
//! a body shares with one read before). What is accepted is exactly what `serde_json` accepts
//! when it reads the same text into raw values: the same grammar (escapes, numbers, literals, whitespace), escaped keys
//! decoded, trailing characters refused, a code point's surrogates not checked inside skipped
//! values (as `serde_json` does not check them there). The property tests hold it to that.

use std::borrow::Cow;

/// Why a text is not JSON, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {at}")]
pub(crate) struct ScanError {
    /// What was expected or found.
    what: &'static str,
    /// The offset in the text.
    at: usize,
}

fn error<T>(what: &'static str, at: usize) -> Result<T, ScanError> {
    Err(ScanError { what, at })
}

/// One member of the scanned object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member<'a> {
    /// The key, decoded.
    pub(crate) key: Cow<'a, str>,
    /// Where the member starts (its key's opening quote).
    pub(crate) at: usize,
    /// The value's text as sent.
    pub(crate) value: &'a str,
    /// The texts of the value's elements, when its key was asked for and it is an array.
    pub(crate) elements: Option<Vec<&'a str>>,
}

/// The members of the JSON object that `text` holds (whitespace around it allowed), in order;
/// the elements of an array value are listed too when `split(key)` says so.
pub(crate) fn object_members<'a>(
    text: &'a str,
    split: impl Fn(&str) -> bool,
) -> Result<Vec<Member<'a>>, ScanError> {
    let scan = Scan { bytes: text.as_bytes() };
    let at = scan.whitespace(0);
    if scan.byte(at) != Some(b'{') {
        return error("expected an object", at);
    }
    let at = scan.whitespace(at + 1);
    let mut members = Vec::new();
    if scan.byte(at) == Some(b'}') {
        scan.end(at + 1)?;
        return Ok(members);
    }
    scan.members(text, at, &split, &|_| false, &mut members)?;
    Ok(members)
}

/// The rest of the object in `text` after a member value that ends at `at`: the members that
/// follow, until the object's end (`None`) or until a member that starts where `stop` says
/// (`Some` of its offset, the members before it found). Arrays are not split.
pub(crate) fn object_rest<'a>(
    text: &'a str,
    at: usize,
    stop: impl Fn(usize) -> bool,
) -> Result<(Vec<Member<'a>>, Option<usize>), ScanError> {
    let scan = Scan { bytes: text.as_bytes() };
    let at = scan.whitespace(at);
    let mut members = Vec::new();
    match scan.byte(at) {
        Some(b'}') => {
            scan.end(at + 1)?;
            Ok((members, None))
        }
        Some(b',') => {
            let stopped = scan.members(text, scan.whitespace(at + 1), &|_| false, &stop, &mut members)?;
            Ok((members, stopped))
        }
        _ => error("expected `,` or `}`", at),
    }
}

/// The rest of an array in `text` after an element that ends at `at` (more elements, then
/// its `]`): the offset just past the `]`, and the texts of the elements found.
pub(crate) fn array_rest(text: &str, at: usize) -> Result<(usize, Vec<&str>), ScanError> {
    let scan = Scan { bytes: text.as_bytes() };
    let at = scan.whitespace(at);
    match scan.byte(at) {
        Some(b']') => Ok((at + 1, Vec::new())),
        Some(b',') => scan.elements(text, scan.whitespace(at + 1)),
        _ => error("expected `,` or `]`", at),
    }
}

/// A key as `serde_json` reads it: its text, escapes decoded (a lone surrogate refused).
fn decode_key(raw: &str, at: usize) -> Result<Cow<'_, str>, ScanError> {
    if !raw.contains('\\') {
        return Ok(Cow::Borrowed(&raw[1..raw.len() - 1]));
    }
    match serde_json::from_str::<String>(raw) {
        Ok(key) => Ok(Cow::Owned(key)),
        Err(_) => error("invalid escape in a key", at),
    }
}

/// What the scan is inside of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Object,
    Array,
}

struct Scan<'a> {
    bytes: &'a [u8],
}

impl Scan<'_> {
    /// Members from `at`, where one starts, to the object's end (then the text's), pushed to
    /// `members`; or up to a member starting where `stop` says, whose offset is returned.
    fn members<'t>(
        &self,
        text: &'t str,
        mut at: usize,
        split: &dyn Fn(&str) -> bool,
        stop: &dyn Fn(usize) -> bool,
        members: &mut Vec<Member<'t>>,
    ) -> Result<Option<usize>, ScanError> {
        loop {
            if stop(at) {
                return Ok(Some(at));
            }
            let (key_end, start) = self.key(at)?;
            let key = decode_key(&text[at..key_end], at)?;
            let (end, elements) = if self.byte(start) == Some(b'[') && split(&key) {
                let (end, found) = self.array(text, start)?;
                (end, Some(found))
            } else {
                (self.value_end(start)?, None)
            };
            members.push(Member { key, at, value: &text[start..end], elements });
            at = self.whitespace(end);
            match self.byte(at) {
                Some(b',') => at = self.whitespace(at + 1),
                Some(b'}') => {
                    self.end(at + 1)?;
                    return Ok(None);
                }
                _ => return error("expected `,` or `}`", at),
            }
        }
    }

    /// Checks that only whitespace follows `at`.
    fn end(&self, at: usize) -> Result<(), ScanError> {
        let end = self.whitespace(at);
        if end == self.bytes.len() { Ok(()) } else { error("trailing characters", end) }
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.bytes.get(at).copied()
    }

    /// The first offset from `at` that is not JSON whitespace.
    fn whitespace(&self, mut at: usize) -> usize {
        while matches!(self.byte(at), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            at += 1;
        }
        at
    }

    /// The key starting at `at` and its colon: where the key ends and where the value starts.
    fn key(&self, at: usize) -> Result<(usize, usize), ScanError> {
        let key_end = self.string_end(at)?;
        let colon = self.whitespace(key_end);
        if self.byte(colon) != Some(b':') {
            return error("expected `:`", colon);
        }
        Ok((key_end, self.whitespace(colon + 1)))
    }

    /// The array starting at `at`: its end and the texts of its elements.
    fn array<'t>(&self, text: &'t str, mut at: usize) -> Result<(usize, Vec<&'t str>), ScanError> {
        at = self.whitespace(at + 1);
        if self.byte(at) == Some(b']') {
            return Ok((at + 1, Vec::new()));
        }
        self.elements(text, at)
    }

    /// The rest of an array from `at`, where an element starts: its end, and the texts of the
    /// elements found.
    fn elements<'t>(&self, text: &'t str, mut at: usize) -> Result<(usize, Vec<&'t str>), ScanError> {
        let mut elements = Vec::new();
        loop {
            let end = self.value_end(at)?;
            elements.push(&text[at..end]);
            at = self.whitespace(end);
            match self.byte(at) {
                Some(b',') => at = self.whitespace(at + 1),
                Some(b']') => return Ok((at + 1, elements)),
                _ => return error("expected `,` or `]`", at),
            }
        }
    }

    /// The end of the value starting at `at` (no whitespace before it), however deeply nested:
    /// the containers still open are kept on a stack, not in recursive calls.
    fn value_end(&self, mut at: usize) -> Result<usize, ScanError> {
        let mut open: Vec<Open> = Vec::new();
        loop {
            // A value starts at `at`.
            at = match self.byte(at) {
                Some(b'"') => self.string_end(at)?,
                Some(b @ (b'{' | b'[')) => {
                    let (inside, close) = if b == b'{' { (Open::Object, b'}') } else { (Open::Array, b']') };
                    at = self.whitespace(at + 1);
                    if self.byte(at) == Some(close) {
                        at + 1
                    } else {
                        open.push(inside);
                        if inside == Open::Object {
                            at = self.key(at)?.1;
                        }
                        continue;
                    }
                }
                Some(b't') => self.literal(at, b"true")?,
                Some(b'f') => self.literal(at, b"false")?,
                Some(b'n') => self.literal(at, b"null")?,
                Some(b'-' | b'0'..=b'9') => self.number_end(at)?,
                _ => return error("expected a value", at),
            };
            // A value ended at `at`: close what it ends, or go on to the next one.
            loop {
                let Some(&inside) = open.last() else { return Ok(at) };
                at = self.whitespace(at);
                match (inside, self.byte(at)) {
                    (_, Some(b',')) => {
                        at = self.whitespace(at + 1);
                        if inside == Open::Object {
                            at = self.key(at)?.1;
                        }
                        break;
                    }
                    (Open::Object, Some(b'}')) | (Open::Array, Some(b']')) => {
                        open.pop();
                        at += 1;
                    }
                    (Open::Object, _) => return error("expected `,` or `}`", at),
                    (Open::Array, _) => return error("expected `,` or `]`", at),
                }
            }
        }
    }

    fn literal(&self, at: usize, word: &[u8]) -> Result<usize, ScanError> {
        if self.bytes.get(at..at + word.len()) == Some(word) {
            Ok(at + word.len())
        } else {
            error("invalid literal", at)
        }
    }

    /// The end of the number starting at `at`: `-`? `0` or a digit run not starting with `0`,
    /// then `.` digits?, then an exponent?
    fn number_end(&self, mut at: usize) -> Result<usize, ScanError> {
        let digits = |from: usize| {
            let mut to = from;
            while self.byte(to).is_some_and(|b| b.is_ascii_digit()) {
                to += 1;
            }
            to
        };
        if self.byte(at) == Some(b'-') {
            at += 1;
        }
        match self.byte(at) {
            Some(b'0') => {
                at += 1;
                if self.byte(at).is_some_and(|b| b.is_ascii_digit()) {
                    return error("invalid number", at);
                }
            }
            Some(b'1'..=b'9') => at = digits(at),
            _ => return error("invalid number", at),
        }
        if self.byte(at) == Some(b'.') {
            let end = digits(at + 1);
            if end == at + 1 {
                return error("invalid number", end);
            }
            at = end;
        }
        if matches!(self.byte(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(self.byte(at), Some(b'+' | b'-')) {
                at += 1;
            }
            let end = digits(at);
            if end == at {
                return error("invalid number", end);
            }
            at = end;
        }
        Ok(at)
    }

    /// The end of the string whose opening quote is at `at` (just past its closing quote).
    fn string_end(&self, at: usize) -> Result<usize, ScanError> {
        if self.byte(at) != Some(b'"') {
            return error("expected a string", at);
        }
        let mut from = at + 1;
        loop {
            let Some(stop) = next_special(self.bytes, from) else {
                return error("unterminated string", at);
            };
            from = match self.bytes[stop] {
                b'"' => return Ok(stop + 1),
                b'\\' => match self.byte(stop + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => stop + 2,
                    Some(b'u') => {
                        let hex = self.bytes.get(stop + 2..stop + 6);
                        if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                            return error("invalid \\u escape", stop);
                        }
                        stop + 6
                    }
                    _ => return error("invalid escape", stop),
                },
                _ => return error("control character in a string", stop),
            };
        }
    }
}

/// Whether a string's byte ends its plain run: a quote, a backslash or a control character
/// (below 0x20, which a JSON string must escape).
fn special(b: u8) -> bool {
    (b == b'"') | (b == b'\\') | (b < 0x20)
}

/// The offset of the first special byte at or after `from`: blocks of 32 bytes are tested
/// whole first (the compiler makes that a few vector compares), then the block with one.
fn next_special(bytes: &[u8], mut from: usize) -> Option<usize> {
    const BLOCK: usize = 32;
    while let Some(block) = bytes.get(from..from + BLOCK) {
        if block.iter().fold(0u8, |any, &b| any | u8::from(special(b))) != 0 {
            break;
        }
        from += BLOCK;
    }
    bytes.get(from..)?.iter().position(|&b| special(b)).map(|i| from + i)
}

#[cfg(test)]
mod tests;
