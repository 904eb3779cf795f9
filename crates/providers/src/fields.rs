//! Reading a provider's JSON event straight from its text, without a `Value` tree: the
//! pieces the stream readers' typed shapes are made of. A typed read takes only the shapes an
//! API sends and gives way (`None`) to the `Value` path for anything else, so these read a
//! leaf exactly as a `Value` would.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A value of a JSON object only: an array (which a derived struct would also take, field by
/// field) or any other kind fails.
pub(crate) struct Object<T>(pub(crate) T);

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
/// it reads as a `Value` would (`as_str`, `as_u64`, `arguments_text`).
pub(crate) enum Field<'a> {
    /// A string.
    Text(Cow<'a, str>),
    /// Any other kind of value.
    Json(Value),
}

impl<'a> Field<'a> {
    /// The text, when it is a string.
    pub(crate) fn text(self) -> Option<Cow<'a, str>> {
        match self {
            Field::Text(text) => Some(text),
            Field::Json(_) => None,
        }
    }

    /// The number, when it is one `Value::as_u64` reads.
    pub(crate) fn number(self) -> Option<u64> {
        match self {
            Field::Json(value) => value.as_u64(),
            Field::Text(_) => None,
        }
    }

    /// Whether it is an object.
    pub(crate) fn is_object(&self) -> bool {
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
pub(crate) enum Maybe<T> {
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
