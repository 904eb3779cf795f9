//! A JSON value's compact text, as looprail sends, stores and records it.
//!
//! The same bytes `Value`'s `Display` (`value.to_string()`) writes, written straight into one
//! buffer: `Display` goes through a formatter call per token and grows its string as it goes,
//! about twice the time. It matters where values are large or many: a request body the gateway
//! changed (often tens of kilobytes), a conversation's state encoded with every save, a stored
//! document compared by its text.
//!
//! ```
//! use looprail_loop_core::json_text::json_text;
//!
//! let value = serde_json::json!({"b": [1, 2.5, null], "a": "line\nbreak"});
//! assert_eq!(json_text(&value), r#"{"a":"line\nbreak","b":[1,2.5,null]}"#);
//! assert_eq!(json_text(&value), value.to_string());
//! ```

use serde_json::Value;

/// The compact JSON text of `value` (what `value.to_string()` gives, sooner).
pub fn json_text(value: &Value) -> String {
    // Writing a `Value` into memory cannot fail (its keys are strings); kept total all the same.
    serde_json::to_string(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// JSON values: nested arrays and objects of strings (escapes, non-ASCII), integers,
    /// floats, booleans and nulls.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(".{0,8}", inner, 0..6)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Stored documents are matched by their text, rows written by earlier versions
        /// (through `Display`) among them: the text is `Display`'s, byte for byte.
        #[test]
        fn the_text_is_what_display_writes(value in value()) {
            prop_assert_eq!(json_text(&value), value.to_string());
        }
    }
}
