//! `llamaindex:DIR`: a folder written by LlamaIndex's `StorageContext.persist()`: docstore.json
//! (the nodes, under `docstore/data`), default__vector_store.json (their embeddings, under
//! `embedding_dict`) and index_store.json (which nodes each index holds).
//!
//! What LlamaIndex embeds is `node.get_content(MetadataMode.EMBED)`: the metadata not listed in
//! `excluded_embed_metadata_keys`, each as `metadata_template` (`{key}: {value}`, the value as
//! Python's `str()`) joined by `metadata_separator` (a newline), put into `text_template`
//! (`{metadata_str}\n\n{content}`), and the whole stripped; the text alone when no metadata is
//! left.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::json::NumbersSeed;
use super::{python_str, source_of, Meta, Sink, StoreError, StoredChunk};

#[derive(Deserialize)]
struct Docstore<'a> {
    #[serde(rename = "docstore/data", default, borrow)]
    data: HashMap<String, Entry<'a>>,
}

#[derive(Deserialize)]
struct Entry<'a> {
    /// Borrowed from the file's text: the nodes are parsed one at a time.
    #[serde(rename = "__data__", borrow)]
    data: &'a RawValue,
    #[serde(rename = "__type__", default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct Node {
    #[serde(default)]
    id_: Option<String>,
    #[serde(default)]
    text: Option<String>,
    /// Newer nodes keep the text in a media resource.
    #[serde(default)]
    text_resource: Option<TextResource>,
    #[serde(default)]
    embedding: Option<Vec<f32>>,
    #[serde(default)]
    metadata: Meta,
    #[serde(default)]
    excluded_embed_metadata_keys: Vec<String>,
    #[serde(default)]
    metadata_template: Option<String>,
    #[serde(default)]
    metadata_separator: Option<String>,
    #[serde(default)]
    text_template: Option<String>,
    #[serde(default)]
    start_char_idx: Option<usize>,
    #[serde(default)]
    end_char_idx: Option<usize>,
    #[serde(default)]
    relationships: HashMap<String, Value>,
}

#[derive(Deserialize)]
struct TextResource {
    #[serde(default)]
    text: Option<String>,
}

/// Why a LlamaIndex node cannot be read as a chunk (the store's error names the folder and the
/// node).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NodeError {
    /// Neither `text` nor `text_resource.text` is set.
    #[error("no text")]
    NoText,
    /// The node's `text_template` has nowhere to put the content.
    #[error("text_template has no {{content}}")]
    NoContentSlot { text_template: String },
}

/// The node types that carry text (TextNode "1"; Document "4" only when an index stores it).
const TEXT_TYPES: &[&str] = &["1", "4"];

pub fn read(dir: &Path, sink: &mut Sink) -> Result<(), StoreError> {
    let uri = format!("llamaindex:{}", dir.display());
    let unreadable =
        |name: &str, e: &std::io::Error| StoreError::read(&uri, format!("{name}: {e}"));
    let file = |name: &str| -> Result<Option<String>, StoreError> {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(unreadable(name, &e)),
        }
    };
    let parse_err = |name: &str, e: serde_json::Error| StoreError::Line {
        file: dir.join(name),
        line: e.line(),
        what: format!("not what LlamaIndex writes: {e}"),
    };
    let docstore_text = file("docstore.json")?.ok_or_else(|| {
        StoreError::read(
            &uri,
            "no docstore.json (a StorageContext.persist() folder holds docstore.json, default__vector_store.json and index_store.json)",
        )
    })?;
    let docstore: Docstore =
        serde_json::from_str(&docstore_text).map_err(|e| parse_err("docstore.json", e))?;
    let indexed = match file("index_store.json")? {
        Some(t) => Some(index_nodes(&t).map_err(|e| parse_err("index_store.json", e))?),
        None => None,
    };
    let mut ids: Vec<&String> = docstore.data.keys().collect();
    ids.sort();
    let mut row: HashMap<&str, usize> = HashMap::new();
    for id in ids {
        let entry = &docstore.data[id];
        let in_index = indexed.as_ref().is_none_or(|set| set.contains(id.as_str()));
        let text_type = entry
            .kind
            .as_deref()
            .is_none_or(|k| TEXT_TYPES.contains(&k));
        if !in_index || !text_type {
            continue;
        }
        let bad = |e: String| StoreError::read(&uri, format!("docstore.json: node {id}: {e}"));
        let mut node = node_of(entry.data).map_err(|e| bad(e.to_string()))?;
        let embedding = node.embedding.take();
        let chunk = chunk_of(id, node).map_err(|e| bad(e.to_string()))?;
        row.insert(id.as_str(), sink.len());
        sink.push(chunk, embedding.as_deref()).map_err(bad)?;
    }
    // The vectors, streamed into the store's block: a million of them never sit in memory as
    // JSON text or as one list each.
    let name = "default__vector_store.json";
    match std::fs::File::open(dir.join(name)) {
        Ok(f) => {
            let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(
                1 << 20,
                f,
            ));
            VectorStoreSeed {
                row: &row,
                sink,
                dict: false,
            }
            .deserialize(&mut de)
            .and_then(|()| de.end())
            .map_err(|e| parse_err(name, e))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(unreadable(name, &e)),
    }
    Ok(())
}

/// default__vector_store.json (`dict` false) or its `embedding_dict` (`dict` true): each vector
/// whose node is a chunk goes into that chunk's row; the rest of the file is skipped.
struct VectorStoreSeed<'a, 's> {
    row: &'a HashMap<&'a str, usize>,
    sink: &'a mut Sink<'s>,
    dict: bool,
}

impl<'de> DeserializeSeed<'de> for VectorStoreSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for VectorStoreSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self.dict {
            false => "a SimpleVectorStore object",
            true => "embedding_dict: node ids and their vectors",
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut buf = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if !self.dict {
                match key.as_str() {
                    "embedding_dict" => map.next_value_seed(VectorStoreSeed {
                        row: self.row,
                        sink: &mut *self.sink,
                        dict: true,
                    })?,
                    _ => map.next_value::<IgnoredAny>().map(drop)?,
                }
                continue;
            }
            let Some(&i) = self.row.get(key.as_str()) else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            buf.clear();
            let held = map.next_value_seed(NumbersSeed(&mut buf))?;
            let bad = |e: &str| A::Error::custom(format!("{key}: {e}"));
            if held.vector().map_err(bad)? {
                self.sink.set_vector(i, &buf).map_err(|e| bad(&e))?;
            }
        }
        Ok(())
    }
}

/// A node's data: an object, or (older versions) a JSON string holding one.
fn node_of(raw: &RawValue) -> Result<Node, serde_json::Error> {
    match serde_json::from_str::<String>(raw.get()) {
        Ok(inner) => serde_json::from_str(&inner),
        Err(_) => serde_json::from_str(raw.get()),
    }
}

/// Every node id any index of index_store.json holds.
fn index_nodes(text: &str) -> Result<HashSet<String>, serde_json::Error> {
    #[derive(Deserialize)]
    struct IndexStore<'a> {
        #[serde(rename = "index_store/data", default, borrow)]
        data: HashMap<String, Entry<'a>>,
    }
    #[derive(Deserialize)]
    struct Index {
        #[serde(default)]
        nodes_dict: HashMap<String, String>,
    }
    let store: IndexStore = serde_json::from_str(text)?;
    let mut out = HashSet::new();
    for entry in store.data.values() {
        let index: Index = match serde_json::from_str::<String>(entry.data.get()) {
            Ok(inner) => serde_json::from_str(&inner)?,
            Err(_) => serde_json::from_str(entry.data.get())?,
        };
        out.extend(index.nodes_dict.into_keys());
    }
    Ok(out)
}

fn chunk_of(id: &str, node: Node) -> Result<StoredChunk, NodeError> {
    let text = node
        .text
        .or_else(|| node.text_resource.and_then(|r| r.text))
        .ok_or(NodeError::NoText)?;
    let header = embed_header(
        &node.metadata,
        &node.excluded_embed_metadata_keys,
        node.metadata_template
            .as_deref()
            .unwrap_or("{key}: {value}"),
        node.metadata_separator.as_deref().unwrap_or("\n"),
        node.text_template
            .as_deref()
            .unwrap_or("{metadata_str}\n\n{content}"),
    )?;
    // The source document: the metadata's file path, else the SOURCE relationship ("1").
    let source = source_of(&node.metadata, None).or_else(|| {
        node.relationships
            .get("1")?
            .get("node_id")?
            .as_str()
            .map(str::to_string)
    });
    let mut chunk = StoredChunk::plain(node.id_.unwrap_or_else(|| id.to_string()), text);
    if let Some(h) = header {
        // get_content strips the whole embedded string: the text's end, and the header's start.
        chunk.embedded_len = chunk.text.trim_end().len();
        chunk.header = h;
    }
    chunk.metadata = node.metadata;
    chunk.source = source;
    chunk.start_char = node.start_char_idx;
    chunk.end_char = node.end_char_idx;
    Ok(chunk)
}

/// What LlamaIndex puts ahead of the text: the embedded metadata lines inside the text template,
/// up to where the content goes; `None` when no metadata is embedded (the text goes alone).
pub fn embed_header(
    meta: &Meta,
    excluded: &[String],
    metadata_template: &str,
    separator: &str,
    text_template: &str,
) -> Result<Option<String>, NodeError> {
    let lines: Vec<String> = meta
        .0
        .iter()
        .filter(|(k, _)| !excluded.iter().any(|x| x == k))
        .map(|(k, v)| {
            metadata_template
                .replace("{key}", k)
                .replace("{value}", &python_str(v))
        })
        .collect();
    let metadata_str = lines.join(separator);
    let metadata_str = metadata_str.trim();
    if metadata_str.is_empty() {
        return Ok(None);
    }
    let (before, _) =
        text_template
            .split_once("{content}")
            .ok_or_else(|| NodeError::NoContentSlot {
                text_template: text_template.to_string(),
            })?;
    let header = before.replace("{metadata_str}", metadata_str);
    Ok(Some(header.trim_start().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_as_llamaindex_writes_it() {
        let meta: Meta =
            serde_json::from_str(r#"{"file_path": "/a/b.md", "file_size": 12, "page": 3}"#)
                .unwrap();
        let h = embed_header(
            &meta,
            &["file_size".to_string()],
            "{key}: {value}",
            "\n",
            "{metadata_str}\n\n{content}",
        )
        .unwrap();
        assert_eq!(h.as_deref(), Some("file_path: /a/b.md\npage: 3\n\n"));
        let none = embed_header(
            &meta,
            &["file_path".into(), "file_size".into(), "page".into()],
            "{key}: {value}",
            "\n",
            "{metadata_str}\n\n{content}",
        )
        .unwrap();
        assert_eq!(none, None);
        let e = embed_header(&meta, &[], "{key}: {value}", "\n", "{metadata_str}").unwrap_err();
        assert!(matches!(e, NodeError::NoContentSlot { .. }), "{e:?}");
        assert_eq!(e.to_string(), "text_template has no {content}");
    }
}
