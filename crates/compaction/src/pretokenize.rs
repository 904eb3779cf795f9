//! cl100k's pre-tokenization (the split of a text into the pieces BPE encodes one by one),
//! written out for ASCII: the regex engine is most of what counting costs, and most of what
//! agents log is ASCII. A piece is cut here when every character it depends on (the piece and
//! the one after it) is ASCII; otherwise the piece comes from the tokenizer's own regex. The
//! pattern, alternatives tried in order, the first that matches winning:
//!
//! ```text
//! (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n]*
//!   | \s*[\r\n]+ | \s+(?!\S) | \s+
//! ```
//!
//! On ASCII, `\p{L}` is `[A-Za-z]`, `\p{N}` is `[0-9]` and `\s` is `[\t\n\x0b\x0c\r ]`.

/// What an ASCII byte is, to the pattern.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Digit,
    /// `\r` or `\n`.
    Newline,
    /// Whitespace other than `\r` and `\n`.
    Space,
    /// Anything else ASCII.
    Other,
    /// Not ASCII: the regex decides.
    Wide,
}

/// Every byte's class, looked up rather than matched: this runs once per byte counted.
static CLASSES: [Class; 256] = {
    let mut table = [Class::Other; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = class(byte as u8);
        byte += 1;
    }
    table
};

const fn class(byte: u8) -> Class {
    match byte {
        b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
        b'0'..=b'9' => Class::Digit,
        b'\r' | b'\n' => Class::Newline,
        b'\t' | 0x0b | 0x0c | b' ' => Class::Space,
        0x80.. => Class::Wide,
        _ => Class::Other,
    }
}

/// The class of `bytes[at]`, `None` past the end.
fn at(bytes: &[u8], at: usize) -> Option<Class> {
    bytes.get(at).map(|b| CLASSES[usize::from(*b)])
}

/// The end of the run of `wanted` bytes from `from`, or `None` when the run stops at a byte
/// that is not ASCII (it might continue the run).
fn run(bytes: &[u8], from: usize, wanted: impl Fn(Class) -> bool) -> Option<usize> {
    let mut end = from;
    loop {
        match at(bytes, end) {
            Some(Class::Wide) => return None,
            Some(c) if wanted(c) => end += 1,
            _ => return Some(end),
        }
    }
}

/// The length of the piece at the start of `bytes`, when the ASCII rules decide it.
fn piece(bytes: &[u8]) -> Option<usize> {
    let first = at(bytes, 0)?;
    let letters = |from: usize| run(bytes, from, |c| c == Class::Letter);
    match first {
        Class::Wide => None,
        Class::Letter => letters(1),
        Class::Digit => {
            let mut end = 1;
            while end < 3 {
                match at(bytes, end) {
                    Some(Class::Digit) => end += 1,
                    Some(Class::Wide) => return None,
                    _ => break,
                }
            }
            Some(end)
        }
        Class::Other => {
            if bytes[0] == b'\'' {
                let lower = |i: usize| bytes.get(i).map(u8::to_ascii_lowercase);
                match (lower(1), lower(2)) {
                    (Some(b'\x80'..), _) => return None,
                    (Some(b's' | b't' | b'm' | b'd'), _) => return Some(2),
                    (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => return Some(3),
                    (Some(b'r' | b'v' | b'l'), Some(b'\x80'..)) => return None,
                    _ => {}
                }
            }
            match at(bytes, 1) {
                Some(Class::Letter) => letters(2),
                Some(Class::Wide) => None,
                _ => punctuation(bytes, 0),
            }
        }
        Class::Space | Class::Newline => whitespace(bytes, first),
    }
}

/// ` ?[^\s\p{L}\p{N}]+[\r\n]*` from `from` (after the optional space).
fn punctuation(bytes: &[u8], from: usize) -> Option<usize> {
    let end = run(bytes, from, |c| c == Class::Other)?;
    Some(end + bytes[end..].iter().take_while(|b| matches!(b, b'\r' | b'\n')).count())
}

/// A piece starting with whitespace.
fn whitespace(bytes: &[u8], first: Class) -> Option<usize> {
    if first == Class::Space {
        // `[^\r\n\p{L}\p{N}]?\p{L}+`: a space or tab before a word.
        match at(bytes, 1) {
            Some(Class::Letter) => return run(bytes, 2, |c| c == Class::Letter),
            Some(Class::Wide) => return None,
            Some(Class::Other) if bytes[0] == b' ' => return punctuation(bytes, 1),
            _ => {}
        }
    }
    let end = run(bytes, 0, |c| matches!(c, Class::Space | Class::Newline))?;
    // `\s*[\r\n]+`: up to the run's last line break.
    if let Some(last) = bytes[..end].iter().rposition(|b| matches!(b, b'\r' | b'\n')) {
        return Some(last + 1);
    }
    // `\s+(?!\S)`: the run, but the last space goes with the next piece unless the text ends.
    if end == bytes.len() || end == 1 { Some(end) } else { Some(end - 1) }
}

/// Splits `text` as cl100k's pre-tokenizer does: pieces cut by the ASCII rules, the others by
/// `fallback` (the first piece of the text it is given).
pub fn split_cl100k<'a>(
    text: &'a str,
    fallback: impl Fn(&'a str) -> Option<&'a str>,
) -> impl Iterator<Item = &'a str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let len = match piece(rest.as_bytes()) {
            Some(len) => len,
            // The pattern matches every character: an empty piece cannot come back, but if it
            // did, the rest is one piece rather than a loop.
            None => Some(fallback(rest)?.len()).filter(|len| *len > 0).unwrap_or(rest.len()),
        };
        let (head, tail) = rest.split_at(len);
        rest = tail;
        Some(head)
    })
}

#[cfg(test)]
mod tests;
