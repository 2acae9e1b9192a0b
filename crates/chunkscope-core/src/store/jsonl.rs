//! `jsonl:PATH`: one chunk per line, with the field names the ecosystems write: text in `text`,
//! `page_content` (LangChain's Document), `document` (Chroma) or `content` (Haystack); the
//! vector in `embedding`, `vector` or `values`; the id in `id`, `id_`, `_id` or `node_id`;
//! metadata in `metadata` or `meta`; offsets from `start_char_idx`/`end_char_idx` (LlamaIndex) or
//! `start_index` (LangChain), at the top or in the metadata. `[store]` names other fields.

use std::io::BufRead;
use std::path::Path;

use serde_json::{Map, Value};

use super::{floats, Meta, Progress, StoreError, StoreOptions, StoredChunk};

const TEXT: &[&str] = &["text", "page_content", "document", "content"];
const VECTOR: &[&str] = &["embedding", "vector", "values"];
const ID: &[&str] = &["id", "id_", "_id", "node_id"];
const METADATA: &[&str] = &["metadata", "meta"];

pub fn read(
    path: &Path,
    opts: &StoreOptions,
    progress: Progress,
) -> Result<Vec<StoredChunk>, StoreError> {
    let file = std::fs::File::open(path).map_err(|e| StoreError::Line {
        file: path.to_path_buf(),
        line: 0,
        what: format!("cannot open: {e}"),
    })?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let at = |what: String| StoreError::Line {
            file: path.to_path_buf(),
            line: i + 1,
            what,
        };
        let line = line.map_err(|e| at(format!("cannot read: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line).map_err(|e| at(format!("not JSON: {e}")))?;
        let Value::Object(obj) = v else {
            return Err(at("not a JSON object".into()));
        };
        out.push(chunk(&obj, opts, path, i + 1)?);
        if out.len() % 10_000 == 0 {
            progress(out.len(), None);
        }
    }
    progress(out.len(), Some(out.len()));
    Ok(out)
}

/// The first of `names` (or the configured one alone) that the object holds.
fn field<'a>(
    obj: &'a Map<String, Value>,
    configured: Option<&str>,
    names: &[&str],
) -> Option<(&'a str, &'a Value)> {
    match configured {
        Some(name) => obj.get_key_value(name).map(|(k, v)| (k.as_str(), v)),
        None => names
            .iter()
            .find_map(|n| obj.get_key_value(*n))
            .map(|(k, v)| (k.as_str(), v)),
    }
}

/// Line `line` of `path` as a chunk, or an error naming the file, the line and the field.
fn chunk(
    obj: &Map<String, Value>,
    opts: &StoreOptions,
    path: &Path,
    line: usize,
) -> Result<StoredChunk, StoreError> {
    let at = |what: String| StoreError::Line {
        file: path.to_path_buf(),
        line,
        what,
    };
    let wanted = |configured: &Option<String>, names: &[&str]| match configured {
        Some(n) => n.clone(),
        None => names.join(", "),
    };
    let text = match field(obj, opts.text.as_deref(), TEXT) {
        Some((_, Value::String(s))) => s.clone(),
        Some((k, Value::Null)) => {
            return Err(at(format!("{k} is null")));
        }
        Some((k, _)) => return Err(at(format!("{k} is not a string"))),
        None => {
            return Err(at(format!(
                "no text (looked for {})",
                wanted(&opts.text, TEXT)
            )))
        }
    };
    let id = match field(obj, opts.id.as_deref(), ID) {
        Some((_, Value::String(s))) => s.clone(),
        Some((_, Value::Number(n))) => n.to_string(),
        Some((k, _)) => return Err(at(format!("{k} is neither a string nor a number"))),
        None if opts.id.is_some() => return Err(at(format!("no {}", wanted(&opts.id, ID)))),
        None => format!("line {line}"),
    };
    let metadata = match field(obj, opts.metadata.as_deref(), METADATA) {
        Some((_, v @ Value::Object(_))) => Meta::from_object(v),
        Some((_, Value::Null)) | None => Meta::default(),
        Some((k, _)) => return Err(at(format!("{k} is not an object"))),
    };
    let vector = match field(obj, opts.vector.as_deref(), VECTOR) {
        Some((_, Value::Null)) | None => None,
        Some((k, v)) => Some(floats(v).map_err(|e| at(format!("{k}: {e}")))?),
    };
    let mut c = StoredChunk::plain(id, text).with_metadata(metadata, opts.source.as_deref());
    c.vector = vector;
    // Exports that keep the offsets and the source beside the metadata (LlamaIndex nodes).
    let top = |k: &str| obj.get(k).and_then(Value::as_u64).map(|n| n as usize);
    c.start_char = c.start_char.or_else(|| top("start_char_idx"));
    c.end_char = c.end_char.or_else(|| top("end_char_idx"));
    if c.source.is_none() {
        c.source = ["source", "file_path", "doc_id", "ref_doc_id"]
            .iter()
            .find_map(|k| obj.get(*k)?.as_str().map(str::to_string));
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str, opts: &StoreOptions) -> Result<Vec<StoredChunk>, StoreError> {
        let p = std::env::temp_dir().join(format!(
            "chunkscope-jsonl-{}-{}.jsonl",
            std::process::id(),
            text.len()
        ));
        std::fs::write(&p, text).unwrap();
        let r = read(&p, opts, &mut |_, _| {});
        let _ = std::fs::remove_file(&p);
        r
    }

    #[test]
    fn ecosystem_field_names() {
        let c = read_text(
            concat!(
                r#"{"page_content": "a b", "metadata": {"source": "x.md", "start_index": 4}, "id": "1", "embedding": [1, 0.5]}"#,
                "\n\n",
                r#"{"document": "c", "_id": 7}"#,
                "\n",
                r#"{"content": "d", "meta": {"file_path": "y"}, "vector": null}"#,
                "\n"
            ),
            &StoreOptions::default(),
        )
        .unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!((c[0].id.as_str(), c[0].text.as_str()), ("1", "a b"));
        assert_eq!(c[0].vector, Some(vec![1.0, 0.5]));
        assert_eq!(c[0].source.as_deref(), Some("x.md"));
        assert_eq!((c[0].start_char, c[0].end_char), (Some(4), Some(7)));
        assert_eq!(c[1].id, "7");
        assert_eq!(c[2].source.as_deref(), Some("y"));
        assert_eq!(c[2].vector, None);
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let e = read_text(
            "{\"text\": \"a\"}\n{\"body\": \"b\"}\n",
            &StoreOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(":2:") && e.contains("no text"), "{e}");
        let e = read_text("{\"text\": \"a\"}\n{oops\n", &StoreOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(":2:") && e.contains("not JSON"), "{e}");
        let e = read_text(
            "{\"text\": \"a\", \"embedding\": [\"x\"]}\n",
            &StoreOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(":1:") && e.contains("embedding"), "{e}");
        let opts = StoreOptions {
            text: Some("body".into()),
            ..StoreOptions::default()
        };
        assert_eq!(
            read_text("{\"body\": \"b\"}\n", &opts).unwrap()[0].text,
            "b"
        );
    }
}
