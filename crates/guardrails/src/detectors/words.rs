//! A detector's remembered fingerprints in its saved state: a flat list of 64-bit words written
//! as one hexadecimal string (16 digits a word). A gateway loads and saves a conversation's state
//! on every request, and a string of a few kilobytes reads and writes many times faster than
//! the same words as JSON arrays of numbers. States saved as arrays (before) still load.

use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// 64-bit words, saved as one hex string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Words(pub(crate) Vec<u64>);

impl Serialize for Words {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = Vec::with_capacity(self.0.len() * 16);
        for word in &self.0 {
            for shift in (0..16).rev() {
                text.push(DIGITS[((word >> (shift * 4)) & 0xf) as usize]);
            }
        }
        serializer.serialize_str(std::str::from_utf8(&text).map_err(serde::ser::Error::custom)?)
    }
}

impl<'de> Deserialize<'de> for Words {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WordsVisitor)
    }
}

struct WordsVisitor;

impl<'de> Visitor<'de> for WordsVisitor {
    type Value = Words;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a hex string of 16 digits a word, or arrays of numbers")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Words, E> {
        if !text.len().is_multiple_of(16) {
            return Err(E::custom("the hex string's length is not a multiple of 16"));
        }
        text.as_bytes()
            .chunks_exact(16)
            .map(|chunk| {
                let digits = std::str::from_utf8(chunk).map_err(E::custom)?;
                u64::from_str_radix(digits, 16).map_err(E::custom)
            })
            .collect::<Result<_, _>>()
            .map(Words)
    }

    /// The earlier form: an array of arrays of numbers (pairs or triples), flattened.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Words, A::Error> {
        let mut words = Vec::new();
        while let Some(group) = seq.next_element::<Vec<u64>>()? {
            words.extend(group);
        }
        Ok(Words(words))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn words_come_back_as_they_were_saved(words in prop::collection::vec(any::<u64>(), 0..64)) {
            let saved = serde_json::to_string(&Words(words.clone())).unwrap();
            prop_assert_eq!(serde_json::from_str::<Words>(&saved).unwrap(), Words(words));
        }
    }

    #[test]
    fn the_earlier_arrays_still_load_and_bad_strings_are_refused() {
        let old: Words = serde_json::from_str("[[1, 2, 3], [18446744073709551615, 0, 7]]").unwrap();
        assert_eq!(old.0, [1, 2, 3, u64::MAX, 0, 7]);
        assert!(serde_json::from_str::<Words>(r#""abc""#).is_err());
        assert!(serde_json::from_str::<Words>(r#""zzzzzzzzzzzzzzzz""#).is_err());
        assert_eq!(serde_json::to_string(&Words(vec![255])).unwrap(), r#""00000000000000ff""#);
    }
}
