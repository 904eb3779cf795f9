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
    use crate::testkit::strategies::json_value;
    use proptest::prelude::*;

    proptest! {
        /// Stored documents are matched by their text, rows written by earlier versions
        /// (through `Display`) among them: the text is `Display`'s, byte for byte.
        #[test]
        fn the_text_is_what_display_writes(value in json_value(), float in any::<f64>()) {
            prop_assert_eq!(json_text(&value), value.to_string());
            let float = Value::from(float);
            prop_assert_eq!(json_text(&float), float.to_string());
        }
    }
}
