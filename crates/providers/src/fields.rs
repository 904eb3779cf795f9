//! Reading JSON straight from its text, without a `Value` tree: the pieces typed reads of an
//! API's messages and events are made of (the stream parsers here, the gateway's request
//! reader). Such a read takes only the shapes an API sends and gives way to a `Value` read for
//! anything else, so these read each leaf exactly as a [`Value`] would: a field of another kind
//! than expected is a [`Field::Json`], not an error, and an array is never taken for an object.
//!
//! ```
//! use looprail_providers::fields::{Field, Maybe, Object};
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! struct Delta<'a> {
//!     #[serde(borrow, default)]
//!     text: Option<Field<'a>>,
//!     #[serde(borrow, default)]
//!     usage: Maybe<Field<'a>>,
//! }
//!
//! let Object(delta) = serde_json::from_str::<Object<Delta>>(r#"{"text":"hi","usage":null}"#)?;
//! assert_eq!(delta.text.and_then(Field::text).as_deref(), Some("hi"));
//! assert!(matches!(delta.usage, Maybe::Present(Field::Json(serde_json::Value::Null))));
//! assert!(serde_json::from_str::<Object<Delta>>(r#"["hi"]"#).is_err());
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A value of a JSON object only, read as `T`: an array (which a derived struct would also
/// take, field by field) or any other kind fails.
pub struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Only<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Only<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<T, M::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(Only(std::marker::PhantomData)).map(Object)
    }
}

/// Any JSON value: text borrowed where it holds no escape, any other kind as its `Value`, so
/// it reads as a `Value` would (`as_str`, `as_u64`, `as_bool`).
pub enum Field<'a> {
    /// A string.
    Text(Cow<'a, str>),
    /// Any other kind of value.
    Json(Value),
}

impl<'a> Field<'a> {
    /// The text, when it is a string.
    pub fn text(self) -> Option<Cow<'a, str>> {
        match self {
            Field::Text(text) => Some(text),
            Field::Json(_) => None,
        }
    }

    /// The number, when it is one `Value::as_u64` reads.
    pub fn number(self) -> Option<u64> {
        match self {
            Field::Json(value) => value.as_u64(),
            Field::Text(_) => None,
        }
    }

    /// The boolean, when it is one.
    pub fn boolean(self) -> Option<bool> {
        match self {
            Field::Json(value) => value.as_bool(),
            Field::Text(_) => None,
        }
    }

    /// Whether it is an object.
    pub fn is_object(&self) -> bool {
        matches!(self, Field::Json(Value::Object(_)))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Field<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Any<'a>(std::marker::PhantomData<Field<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for Any<'a> {
            type Value = Field<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Field<'a>, E> {
                Ok(Field::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Field<'a>, E> {
                Ok(Field::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Field<'a>, E> {
                Ok(Field::Text(Cow::Owned(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Field<'a>, E> {
                Ok(Field::Json(v.into()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Field<'a>, E> {
                Ok(Field::Json(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Field<'a>, E> {
                Ok(Field::Json(v.into()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Field<'a>, E> {
                Ok(Field::Json(v.into()))
            }
            fn visit_unit<E>(self) -> Result<Field<'a>, E> {
                Ok(Field::Json(Value::Null))
            }
            fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<Field<'a>, S::Error> {
                Value::deserialize(SeqAccessDeserializer::new(seq)).map(Field::Json)
            }
            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Field<'a>, M::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(Field::Json)
            }
        }
        deserializer.deserialize_any(Any(std::marker::PhantomData))
    }
}

/// A field whose `null` is not its absence (`Option` reads `null` as `None`): `Absent` when the
/// key is missing, else the value as `T` reads it, `null` included.
#[derive(Default)]
pub enum Maybe<T> {
    /// The key is missing.
    #[default]
    Absent,
    /// The key's value.
    Present(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Maybe<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Maybe::Present)
    }
}
