//! Metadata in the order it was stored (LlamaIndex embeds it in that order), and Python's `str()`
//! of a JSON value, which is how LlamaIndex writes a value into the embedded text.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// A JSON object's entries in stored order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Meta(pub Vec<(String, Value)>);

impl Meta {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// As a JSON object (keys sorted: for output only).
    pub fn to_json(&self) -> Value {
        Value::Object(self.0.iter().cloned().collect())
    }

    pub fn from_object(v: &Value) -> Meta {
        match v {
            Value::Object(m) => Meta(m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            _ => Meta::default(),
        }
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Meta, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = Meta;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a metadata object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Meta, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(Meta(out))
            }
            fn visit_unit<E>(self) -> Result<Meta, E> {
                Ok(Meta::default())
            }
        }
        d.deserialize_any(Ordered)
    }
}

/// Python's `str(value)` for a value read from JSON: strings as they are, `True`/`False`/`None`,
/// integers as digits, floats as Python's shortest repr, lists and dicts with `repr` inside.
pub fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => python_repr(other),
    }
}

fn python_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) if n.is_f64() => python_float(n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::String(s) => python_quote(s),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(python_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", python_quote(k), python_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Python's float repr: the shortest round-trip digits, `.0` on integral values, exponent form
/// below 1e-4 and from 1e16.
fn python_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let a = f.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        // Rust writes 1e-5 and 1.5e16; Python writes 1e-05 and 1.5e+16.
        let s = format!("{f:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exp),
        };
        return format!("{mantissa}e{sign}{digits:0>2}");
    }
    let s = format!("{f}");
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

/// Python's repr of a string: single quotes unless the text holds one and no double quote.
fn python_quote(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_as_python_writes_them() {
        assert_eq!(python_str(&json!("a b")), "a b");
        assert_eq!(python_str(&json!(3)), "3");
        assert_eq!(python_str(&json!(2.0)), "2.0");
        assert_eq!(python_str(&json!(0.1)), "0.1");
        assert_eq!(python_str(&json!(1e-5)), "1e-05");
        assert_eq!(python_str(&json!(1.5e16)), "1.5e+16");
        assert_eq!(python_str(&json!(true)), "True");
        assert_eq!(python_str(&json!(null)), "None");
        assert_eq!(python_str(&json!(["a", 1, "it's"])), r#"['a', 1, "it's"]"#);
        assert_eq!(python_str(&json!({"k": "v"})), "{'k': 'v'}");
    }

    #[test]
    fn order_is_kept() {
        let m: Meta = serde_json::from_str(r#"{"z": 1, "a": 2, "m": 3}"#).unwrap();
        let keys: Vec<&str> = m.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["z", "a", "m"]);
    }
}
