//! `jsonl:PATH`: one chunk per line, with the field names the ecosystems write: text in `text`,
//! `page_content` (LangChain's Document), `document` (Chroma) or `content` (Haystack); the
//! vector in `embedding`, `vector` or `values`; the id in `id`, `id_`, `_id` or `node_id`;
//! metadata in `metadata` or `meta`; offsets from `start_char_idx`/`end_char_idx` (LlamaIndex) or
//! `start_index` (LangChain), at the top or in the metadata. `[store]` names other fields.
//!
//! A line is read field by field: the vector's numbers go straight into one reused buffer and
//! then into the store's block, fields nobody reads are skipped unparsed, and the metadata keeps
//! its stored order (a LlamaIndex node's header is rebuilt in that order).

use std::fmt;
use std::io::BufRead;
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::json::{scalars_give, skip_seq, Numbers, NumbersSeed};
use serde_json::Value;

use super::{Meta, Sink, StoreError, StoreOptions, StoredChunk};

const TEXT: &[&str] = &["text", "page_content", "document", "content"];
const VECTOR: &[&str] = &["embedding", "vector", "values"];
const ID: &[&str] = &["id", "id_", "_id", "node_id"];
const METADATA: &[&str] = &["metadata", "meta"];
/// Kept from the top level of a line: offsets and source beside the metadata (LlamaIndex nodes).
const TOP: &[&str] = &[
    "start_char_idx",
    "end_char_idx",
    "source",
    "file_path",
    "doc_id",
    "ref_doc_id",
];

pub fn read(path: &Path, opts: &StoreOptions, sink: &mut Sink) -> Result<(), StoreError> {
    let file = std::fs::File::open(path).map_err(|e| StoreError::Line {
        file: path.to_path_buf(),
        line: 0,
        what: format!("cannot open: {e}"),
    })?;
    let names = Names::new(opts);
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut line = String::new();
    let mut vector = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        number += 1;
        let at = |what: String| StoreError::Line {
            file: path.to_path_buf(),
            line: number,
            what,
        };
        let read = reader
            .read_line(&mut line)
            .map_err(|e| at(format!("cannot read: {e}")))?;
        if read == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        vector.clear();
        let mut de = serde_json::Deserializer::from_str(&line);
        let fields = LineSeed {
            names: &names,
            vector: &mut vector,
        }
        .deserialize(&mut de)
        .and_then(|f| de.end().map(|()| f))
        .map_err(|e| at(format!("not JSON: {e}")))?;
        let Some(fields) = fields else {
            return Err(at("not a JSON object".into()));
        };
        let (chunk, has_vector) = chunk(fields, &names, opts, number).map_err(at)?;
        sink.push(chunk, has_vector.then_some(vector.as_slice()))
            .map_err(at)?;
    }
    Ok(())
}

/// The field names looked for, the configured one alone where `[store]` names one.
struct Names {
    text: Vec<String>,
    vector: Vec<String>,
    id: Vec<String>,
    metadata: Vec<String>,
}

impl Names {
    fn new(opts: &StoreOptions) -> Names {
        let pick = |configured: &Option<String>, names: &[&str]| match configured {
            Some(n) => vec![n.clone()],
            None => names.iter().map(|n| n.to_string()).collect(),
        };
        Names {
            text: pick(&opts.text, TEXT),
            vector: pick(&opts.vector, VECTOR),
            id: pick(&opts.id, ID),
            metadata: pick(&opts.metadata, METADATA),
        }
    }
}

/// A field's value and the rank of the name it was found under (the first name wins).
struct Found<T> {
    rank: usize,
    key: String,
    value: T,
}

fn better<T>(slot: &Option<Found<T>>, rank: usize) -> bool {
    slot.as_ref().is_none_or(|f| rank < f.rank)
}

/// What a line holds of what is read.
#[derive(Default)]
struct Fields {
    text: Option<Found<Value>>,
    id: Option<Found<Value>>,
    metadata: Option<Found<MetaField>>,
    /// The vector's field and what its value was (the numbers are in the buffer).
    vector: Option<Found<Numbers>>,
    top: Vec<(String, Value)>,
}

/// Reads one line: `None` when it is JSON but not an object.
struct LineSeed<'a> {
    names: &'a Names,
    vector: &'a mut Vec<f32>,
}

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = Option<Fields>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Fields>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LineSeed<'_> {
    type Value = Option<Fields>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Fields>, A::Error> {
        let mut f = Fields::default();
        let rank = |names: &[String], key: &str| names.iter().position(|n| n == key);
        while let Some(key) = map.next_key::<String>()? {
            if let Some(r) = rank(&self.names.vector, &key).filter(|&r| better(&f.vector, r)) {
                self.vector.clear();
                f.vector = Some(Found {
                    rank: r,
                    key,
                    value: map.next_value_seed(NumbersSeed(self.vector))?,
                });
            } else if let Some(r) = rank(&self.names.text, &key).filter(|&r| better(&f.text, r)) {
                f.text = Some(Found {
                    rank: r,
                    key,
                    value: map.next_value()?,
                });
            } else if let Some(r) = rank(&self.names.id, &key).filter(|&r| better(&f.id, r)) {
                f.id = Some(Found {
                    rank: r,
                    key,
                    value: map.next_value()?,
                });
            } else if let Some(r) =
                rank(&self.names.metadata, &key).filter(|&r| better(&f.metadata, r))
            {
                f.metadata = Some(Found {
                    rank: r,
                    key,
                    value: map.next_value_seed(MetaSeed)?,
                });
            } else if TOP.contains(&key.as_str()) {
                let value = map.next_value()?;
                f.top.push((key, value));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Some(f))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<Fields>, A::Error> {
        skip_seq(seq)?;
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<Fields>, E> {
        Ok(None)
    }
    scalars_give!(None);
}

/// A metadata field: an object (its keys in stored order: serde_json's map sorts them), null, or
/// something else.
enum MetaField {
    Object(Meta),
    Null,
    Other,
}

struct MetaSeed;

impl<'de> DeserializeSeed<'de> for MetaSeed {
    type Value = MetaField;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<MetaField, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed {
    type Value = MetaField;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a metadata object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MetaField, A::Error> {
        let mut out = Vec::new();
        while let Some(entry) = map.next_entry::<String, Value>()? {
            out.push(entry);
        }
        Ok(MetaField::Object(Meta(out)))
    }
    fn visit_unit<E>(self) -> Result<MetaField, E> {
        Ok(MetaField::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MetaField, A::Error> {
        skip_seq(seq)?;
        Ok(MetaField::Other)
    }
    scalars_give!(MetaField::Other);
}

/// Line `line` as a chunk (and whether the buffer holds its vector), or what is wrong with it.
fn chunk(
    f: Fields,
    names: &Names,
    opts: &StoreOptions,
    line: usize,
) -> Result<(StoredChunk, bool), String> {
    let looked = |names: &[String]| names.join(", ");
    let text = match f.text {
        Some(Found {
            value: Value::String(s),
            ..
        }) => s,
        Some(Found {
            key,
            value: Value::Null,
            ..
        }) => return Err(format!("{key} is null")),
        Some(Found { key, .. }) => return Err(format!("{key} is not a string")),
        None => return Err(format!("no text (looked for {})", looked(&names.text))),
    };
    let id = match f.id {
        Some(Found {
            value: Value::String(s),
            ..
        }) => s,
        Some(Found {
            value: Value::Number(n),
            ..
        }) => n.to_string(),
        Some(Found { key, .. }) => return Err(format!("{key} is neither a string nor a number")),
        None if opts.id.is_some() => return Err(format!("no {}", looked(&names.id))),
        None => format!("line {line}"),
    };
    let metadata = match f.metadata {
        Some(Found {
            value: MetaField::Object(m),
            ..
        }) => m,
        Some(Found {
            value: MetaField::Null,
            ..
        })
        | None => Meta::default(),
        Some(Found { key, .. }) => return Err(format!("{key} is not an object")),
    };
    let has_vector = match f.vector {
        None => false,
        Some(Found { key, value, .. }) => value.vector().map_err(|e| format!("{key}: {e}"))?,
    };
    let mut c = StoredChunk::plain(id, text).with_metadata(metadata, opts.source.as_deref());
    let top = |k: &str| f.top.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let offset = |k: &str| top(k).and_then(Value::as_u64).map(|n| n as usize);
    c.start_char = c.start_char.or_else(|| offset("start_char_idx"));
    c.end_char = c.end_char.or_else(|| offset("end_char_idx"));
    if c.source.is_none() {
        c.source = ["source", "file_path", "doc_id", "ref_doc_id"]
            .iter()
            .find_map(|k| top(k)?.as_str().map(str::to_string));
    }
    Ok((c, has_vector))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn read_text(text: &str, opts: &StoreOptions) -> Result<Store, StoreError> {
        let p = std::env::temp_dir().join(format!(
            "chunkscope-jsonl-{}-{}.jsonl",
            std::process::id(),
            text.len()
        ));
        std::fs::write(&p, text).unwrap();
        let r = crate::store::open(&format!("jsonl:{}", p.display()), opts, &mut |_, _| {});
        let _ = std::fs::remove_file(&p);
        r
    }

    #[test]
    fn ecosystem_field_names() {
        let s = read_text(
            concat!(
                r#"{"page_content": "a b", "metadata": {"source": "x.md", "start_index": 4}, "id": "1", "embedding": [0.6, 0.8]}"#,
                "\n\n",
                r#"{"document": "c", "_id": 7}"#,
                "\n",
                r#"{"content": "d", "meta": {"file_path": "y"}, "vector": null}"#,
                "\n"
            ),
            &StoreOptions::default(),
        )
        .unwrap();
        let c = &s.chunks;
        assert_eq!(c.len(), 3);
        assert_eq!((c[0].id.as_str(), c[0].text.as_str()), ("1", "a b"));
        assert_eq!(s.vector(0), Some(&[0.6, 0.8][..]));
        assert_eq!(c[0].source.as_deref(), Some("x.md"));
        assert_eq!((c[0].start_char, c[0].end_char), (Some(4), Some(7)));
        assert_eq!(c[1].id, "7");
        assert_eq!(c[2].source.as_deref(), Some("y"));
        assert_eq!(s.vector(2), None);
        assert_eq!((s.vectors(), s.dim()), (1, Some(2)));
    }

    #[test]
    fn first_name_wins_metadata_keeps_its_order_and_the_rest_is_skipped() {
        let s = read_text(
            concat!(
                r#"{"content": "late", "extra": {"deep": [1, [2, {"x": null}]]}, "text": "first", "#,
                r#""values": [9, 9], "embedding": [3, 4], "metadata": {"zeta": 1, "alpha": "b"}, "#,
                r#""file_path": "top.md", "start_char_idx": 5, "end_char_idx": 9}"#,
                "\n"
            ),
            &StoreOptions::default(),
        )
        .unwrap();
        let c = &s.chunks[0];
        assert_eq!(c.text, "first");
        assert_eq!(
            s.vector(0),
            Some(&[0.6, 0.8][..]),
            "embedding before values, as unit"
        );
        let keys: Vec<&str> = c.metadata.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["zeta", "alpha"], "stored order");
        assert_eq!(c.source.as_deref(), Some("top.md"));
        assert_eq!((c.start_char, c.end_char), (Some(5), Some(9)));
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let err = |text: &str| {
            read_text(text, &StoreOptions::default())
                .unwrap_err()
                .to_string()
        };
        let e = err("{\"text\": \"a\"}\n{\"body\": \"b\"}\n");
        assert!(e.contains(":2:") && e.contains("no text"), "{e}");
        let e = err("{\"text\": \"a\"}\n{oops\n");
        assert!(e.contains(":2:") && e.contains("not JSON"), "{e}");
        let e = err("{\"text\": \"a\", \"embedding\": [\"x\"]}\n");
        assert!(e.contains(":1:") && e.contains("embedding"), "{e}");
        let e = err("{\"text\": \"a\", \"vector\": {\"a\": 1}}\n");
        assert!(e.contains("vector: the vector is not a list"), "{e}");
        let e = err("[1, 2]\n");
        assert!(e.contains(":1:") && e.contains("not a JSON object"), "{e}");
        let e = err("{\"text\": \"a\"} {\"text\": \"b\"}\n");
        assert!(e.contains(":1:") && e.contains("not JSON"), "{e}");
        let e = err("{\"text\": 3}\n");
        assert!(e.contains("text is not a string"), "{e}");
        let e = err("{\"text\": \"a\", \"metadata\": [1]}\n");
        assert!(e.contains("metadata is not an object"), "{e}");
        let e = err(concat!(
            r#"{"text": "a", "id": "x", "embedding": [1, 0]}"#,
            "\n",
            r#"{"text": "b", "id": "y", "embedding": [1, 0, 0]}"#,
            "\n"
        ));
        assert!(
            e.contains(":2:")
                && e.contains("chunk y: a vector of 3 dimensions where the others have 2"),
            "{e}"
        );
        let opts = StoreOptions {
            text: Some("body".into()),
            ..StoreOptions::default()
        };
        assert_eq!(
            read_text("{\"body\": \"b\", \"text\": \"t\"}\n", &opts)
                .unwrap()
                .chunks[0]
                .text,
            "b"
        );
    }
}
