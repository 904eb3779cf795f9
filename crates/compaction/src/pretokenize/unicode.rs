//! The pre-tokenizer's pattern character by character, for pieces that involve characters
//! outside ASCII. The character classes (`\p{L}`, `\p{N}`, `\s`) come from regex-syntax's
//! Unicode tables, the ones tiktoken's own regex is compiled from, so both agree on every
//! character.

use std::sync::OnceLock;

use regex_syntax::hir::{Class, HirKind};

/// What a character is, to the pattern.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    /// `\p{L}`.
    Letter,
    /// `\p{N}`.
    Number,
    /// `\r` or `\n`.
    Newline,
    /// `\s` other than `\r` and `\n`.
    Space,
    /// Anything else.
    Other,
}

/// The classes as sorted, disjoint ranges of code points.
struct Classes {
    ranges: Vec<(u32, u32, Kind)>,
}

fn ranges_of(pattern: &str) -> Vec<(u32, u32)> {
    let hir =
        regex_syntax::parse(pattern).unwrap_or_else(|e| unreachable!("{pattern} is a valid class: {e}"));
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => {
            class.ranges().iter().map(|r| (u32::from(r.start()), u32::from(r.end()))).collect()
        }
        _ => unreachable!("{pattern} is a Unicode class"),
    }
}

fn classes() -> &'static Classes {
    static CLASSES: OnceLock<Classes> = OnceLock::new();
    CLASSES.get_or_init(|| {
        // The classes are disjoint: letters and numbers are general categories, and no
        // whitespace character is either.
        let mut ranges = Vec::new();
        ranges.extend(ranges_of(r"\p{L}").into_iter().map(|(a, b)| (a, b, Kind::Letter)));
        ranges.extend(ranges_of(r"\p{N}").into_iter().map(|(a, b)| (a, b, Kind::Number)));
        ranges.extend(ranges_of(r"[\s&&[^\r\n]]").into_iter().map(|(a, b)| (a, b, Kind::Space)));
        ranges.extend([(0x0a, 0x0a, Kind::Newline), (0x0d, 0x0d, Kind::Newline)]);
        ranges.sort_unstable_by_key(|r| r.0);
        Classes { ranges }
    })
}

/// The class of `c`.
pub(super) fn kind(c: char) -> Kind {
    let c = u32::from(c);
    let ranges = &classes().ranges;
    let i = ranges.partition_point(|r| r.0 <= c);
    match i.checked_sub(1).map(|i| ranges[i]) {
        Some((_, end, kind)) if c <= end => kind,
        _ => Kind::Other,
    }
}

/// The length in bytes of the piece at the start of `text` (which is not empty).
pub(super) fn piece(text: &str) -> usize {
    let mut chars = text.char_indices().map(|(i, c)| (i, kind(c))).peekable();
    let Some(first) = text.chars().next() else { return 0 };
    let first_kind = kind(first);
    chars.next();
    // `(?i:'s|'t|'re|'ve|'m|'ll|'d)`, with Unicode case folding ('ſ' folds to 's').
    if first == '\'' {
        let mut rest = text[1..].chars().map(fold);
        match (rest.next(), rest.next()) {
            (Some('s' | 't' | 'm' | 'd'), _) => return 1 + len_of_chars(&text[1..], 1),
            (Some('r' | 'v'), Some('e')) | (Some('l'), Some('l')) => return 1 + len_of_chars(&text[1..], 2),
            _ => {}
        }
    }
    let second = chars.peek().map(|&(_, kind)| kind);
    let first_len = first.len_utf8();
    match (first_kind, second) {
        // `\p{L}+`.
        (Kind::Letter, _) => run_of(text, chars, |k| k == Kind::Letter),
        // `\p{N}{1,3}`.
        (Kind::Number, _) => {
            let numbers = text.char_indices().take(3).take_while(|&(_, c)| kind(c) == Kind::Number);
            numbers.last().map_or(first_len, |(i, c)| i + c.len_utf8())
        }
        // `[^\r\n\p{L}\p{N}]?\p{L}+`: one character that is not a line break before a word.
        (Kind::Space | Kind::Other, Some(Kind::Letter)) => {
            chars.next();
            run_of(text, chars, |k| k == Kind::Letter)
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n]*`.
        (Kind::Space, Some(Kind::Other)) if first == ' ' => {
            chars.next();
            punctuation(text, chars)
        }
        (Kind::Other, _) => punctuation(text, chars),
        // `\s*[\r\n]+ | \s+(?!\S) | \s+`.
        (Kind::Space | Kind::Newline, _) => whitespace(text),
    }
}

/// Where the run of characters of the kinds `wanted` that `chars` starts with ends.
fn run_of(
    text: &str,
    mut chars: impl Iterator<Item = (usize, Kind)>,
    wanted: impl Fn(Kind) -> bool,
) -> usize {
    chars.find(|&(_, k)| !wanted(k)).map_or(text.len(), |(i, _)| i)
}

/// Simple case folding, as far as the contractions need it.
fn fold(c: char) -> char {
    match c {
        'ſ' => 's',
        c => c.to_ascii_lowercase(),
    }
}

/// The length in bytes of the first `n` characters of `text`.
fn len_of_chars(text: &str, n: usize) -> usize {
    text.chars().take(n).map(char::len_utf8).sum()
}

/// The rest of `[^\s\p{L}\p{N}]+[\r\n]*` after its first character.
fn punctuation(text: &str, chars: impl Iterator<Item = (usize, Kind)>) -> usize {
    let mut in_breaks = false;
    for (i, kind) in chars {
        match kind {
            Kind::Other if !in_breaks => {}
            Kind::Newline => in_breaks = true,
            _ => return i,
        }
    }
    text.len()
}

/// `\s*[\r\n]+ | \s+(?!\S) | \s+` for a text that starts with whitespace.
fn whitespace(text: &str) -> usize {
    let mut end = text.len();
    let mut after_break = None;
    let mut last_start = 0;
    let mut count = 0;
    for (i, c) in text.char_indices() {
        match kind(c) {
            Kind::Newline => after_break = Some(i + c.len_utf8()),
            Kind::Space => {}
            _ => {
                end = i;
                break;
            }
        }
        last_start = i;
        count += 1;
    }
    if let Some(after) = after_break {
        return after;
    }
    if end == text.len() || count == 1 { end } else { last_start }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_unicodes() {
        assert_eq!(kind('a'), Kind::Letter);
        assert_eq!(kind('é'), Kind::Letter);
        assert_eq!(kind('中'), Kind::Letter);
        assert_eq!(kind('²'), Kind::Number);
        assert_eq!(kind('٣'), Kind::Number);
        assert_eq!(kind('\u{a0}'), Kind::Space);
        assert_eq!(kind('\u{85}'), Kind::Space);
        assert_eq!(kind('\n'), Kind::Newline);
        assert_eq!(kind('🎉'), Kind::Other);
        assert_eq!(kind('('), Kind::Other);
    }
}
