use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::Value;
use serde_json::value::RawValue;

use looprail_loop_core::testkit::strategies::json_value;

use super::*;

/// Any JSON value (the workspace's strategy, strings with brackets and quotes in them), or a
/// string of any characters, control characters and escapes among them.
fn value() -> impl Strategy<Value = Value> {
    prop_oneof![json_value(), "(\\PC|[\"\\\\\n\t\u{1}\u{7f}é😀]){0,40}".prop_map(Value::String)]
}

/// What `serde_json` accepts where the scan is used: an object of raw values.
fn serde_accepts(text: &str) -> bool {
    serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(text).is_ok()
}

/// The scan's members and serde_json's reading of `text` (unique keys) agree (both read
/// numbers with serde_json, whose float reading need not give back the float written).
fn agrees_with_serde(text: &str) {
    let object: serde_json::Map<String, Value> = serde_json::from_str(text).unwrap();
    let members = object_members(text, |key| key.starts_with('a')).unwrap();
    assert_eq!(members.len(), object.len());
    for member in &members {
        let expected = &object[member.key.as_ref()];
        let read: Value = serde_json::from_str(member.value).unwrap();
        assert_eq!(&read, expected, "member {:?}", member.key);
        match (&member.elements, expected) {
            (Some(elements), Value::Array(items)) => {
                assert!(member.key.starts_with('a'));
                let read: Vec<Value> = elements.iter().map(|e| serde_json::from_str(e).unwrap()).collect();
                assert_eq!(&read, items);
            }
            (Some(_), other) => panic!("elements listed for {other}"),
            (None, Value::Array(_)) => assert!(!member.key.starts_with('a')),
            (None, _) => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn members_are_the_values_serde_json_reads(
        object in prop::collection::btree_map("[a-z\"\\\\é]{0,6}", value(), 0..8),
        pretty in any::<bool>(),
    ) {
        let object: serde_json::Map<String, Value> = object.into_iter().collect();
        let text = if pretty {
            serde_json::to_string_pretty(&object).unwrap()
        } else {
            serde_json::to_string(&object).unwrap()
        };
        agrees_with_serde(&text);
    }

    /// A text damaged anywhere is accepted by the scan exactly when serde_json accepts it.
    #[test]
    fn damaged_texts_are_refused_exactly_when_serde_json_refuses_them(
        object in prop::collection::btree_map("[a-z]{0,4}", value(), 1..6),
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), 0..3u8, prop::sample::select(
                "{}[],:\"\\ u0123456789abcdefABCDEF-+.eEtrunls\u{1}\n\té".chars().collect::<Vec<_>>())),
            1..4,
        ),
    ) {
        let mut chars: Vec<char> = serde_json::to_string(&object).unwrap().chars().collect();
        for (at, kind, c) in edits {
            let i = at.index(chars.len() + 1);
            match kind {
                0 => chars.insert(i, c),
                1 if i < chars.len() => { chars.remove(i); }
                _ if i < chars.len() => chars[i] = c,
                _ => chars.push(c),
            }
        }
        let text: String = chars.into_iter().collect();
        prop_assert_eq!(object_members(&text, |_| true).is_ok(), serde_accepts(&text), "{}", text);
    }
}

#[test]
fn escaped_keys_are_decoded_and_trailing_text_refused() {
    let members =
        object_members(r#" {"mes\u0073ages": [1, {"a": [2]}], "x": "\"}"} "#, |k| k == "messages").unwrap();
    assert_eq!(members[0].key, "messages");
    assert_eq!(members[0].elements.as_deref(), Some(&["1", r#"{"a": [2]}"#][..]));
    assert_eq!(members[1].value, r#""\"}""#);
    assert_eq!(
        object_members(r#"{"a": 1} x"#, |_| false).unwrap_err().to_string(),
        "trailing characters at byte 9"
    );
    assert!(object_members(r#"{"a": "tab	here"}"#, |_| false).is_err(), "a raw control character");
    assert!(object_members("[1]", |_| false).is_err(), "not an object");
}

#[test]
fn deep_nesting_needs_no_stack() {
    let depth = 200_000;
    let text = format!(r#"{{"a": {}{}}}"#, "[".repeat(depth), "]".repeat(depth));
    let members = object_members(&text, |_| false).unwrap();
    assert_eq!(members[0].value.len(), 2 * depth);
    assert!(object_members(&text[..text.len() - 2], |_| false).is_err());
}
