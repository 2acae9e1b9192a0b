//! Reading stored vectors out of JSON as it streams by: a vector's numbers go into one reused
//! buffer (no `serde_json::Value` per number), and a value of the wrong type is reported by what
//! it was instead of failing the parse, so the reader can name the field.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What a vector field held (its numbers, when a list of them, are in the buffer).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Numbers {
    Vector,
    Null,
    NotList,
    Mixed,
}

impl Numbers {
    /// Whether the buffer holds a vector; what is wrong otherwise (`None`: no vector, null).
    pub(crate) fn vector(self) -> Result<bool, &'static str> {
        match self {
            Numbers::Vector => Ok(true),
            Numbers::Null => Ok(false),
            Numbers::NotList => Err("the vector is not a list of numbers"),
            Numbers::Mixed => Err("the vector holds something other than numbers"),
        }
    }
}

/// The visitor methods of the scalar types, each giving `$value` (the value consumed).
macro_rules! scalars_give {
    ($value:expr) => {
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}
pub(crate) use scalars_give;

/// Consume a list or an object nobody reads.
pub(crate) fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

pub(crate) fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A vector field's numbers appended to the buffer, or what it held instead.
pub(crate) struct NumbersSeed<'a>(pub &'a mut Vec<f32>);

impl<'de> DeserializeSeed<'de> for NumbersSeed<'_> {
    type Value = Numbers;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Numbers, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NumbersSeed<'_> {
    type Value = Numbers;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Numbers, A::Error> {
        let mut numbers = true;
        while let Some(x) = seq.next_element_seed(Element)? {
            match x {
                Some(x) if numbers => self.0.push(x),
                _ => numbers = false,
            }
        }
        Ok(if numbers {
            Numbers::Vector
        } else {
            Numbers::Mixed
        })
    }
    fn visit_unit<E>(self) -> Result<Numbers, E> {
        Ok(Numbers::Null)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Numbers, A::Error> {
        skip_map(map)?;
        Ok(Numbers::NotList)
    }
    scalars_give!(Numbers::NotList);
}

/// One element of a vector: a number, or `None` for anything else (consumed).
struct Element;

impl<'de> DeserializeSeed<'de> for Element {
    type Value = Option<f32>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<f32>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Element {
    type Value = Option<f32>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_f64<E>(self, x: f64) -> Result<Option<f32>, E> {
        Ok(Some(x as f32))
    }
    fn visit_i64<E>(self, x: i64) -> Result<Option<f32>, E> {
        Ok(Some(x as f32))
    }
    fn visit_u64<E>(self, x: u64) -> Result<Option<f32>, E> {
        Ok(Some(x as f32))
    }
    fn visit_str<E>(self, _: &str) -> Result<Option<f32>, E> {
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Option<f32>, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<f32>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<f32>, A::Error> {
        skip_seq(seq)?;
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<f32>, A::Error> {
        skip_map(map)?;
        Ok(None)
    }
}
