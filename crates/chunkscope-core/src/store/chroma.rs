//! `chroma://HOST:PORT/COLLECTION`: a Chroma server's HTTP API (v2). The collection's ids are
//! fetched first, in one request, then its records by those ids, a page at a time, with documents,
//! metadatas and embeddings: paging by `offset` would make the server skip all earlier rows for
//! every page (its SQL `OFFSET`), a cost that grows with the square of the collection. Tenant and
//! database default to Chroma's own (`default_tenant`, `default_database`); `?tenant=`/`&database=`
//! or `[store]` set others. Only reads: the collection is looked up and its records fetched,
//! nothing else is sent.

use std::time::Duration;

use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};

use super::json::{Numbers, NumbersSeed};
use super::{Meta, Sink, StoreError, StoreOptions, StoredChunk};
use crate::http::json_body;

struct Target {
    base: String,
    collection: String,
    tenant: String,
    database: String,
}

fn parse(uri: &str, opts: &StoreOptions) -> Result<Target, StoreError> {
    let rest = uri
        .strip_prefix("chroma://")
        .or_else(|| uri.strip_prefix("chroma+http://"))
        .ok_or_else(|| StoreError::Uri(uri.to_string()))?;
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (host, collection) = path
        .split_once('/')
        .filter(|(h, c)| !h.is_empty() && !c.is_empty())
        .ok_or_else(|| StoreError::read(uri, "no collection: chroma://HOST:PORT/COLLECTION"))?;
    let param = |k: &str| super::query_param(query, k);
    Ok(Target {
        base: format!("http://{host}/api/v2"),
        collection: collection.trim_end_matches('/').to_string(),
        tenant: param("tenant")
            .or_else(|| opts.tenant.clone())
            .unwrap_or_else(|| "default_tenant".into()),
        database: param("database")
            .or_else(|| opts.database.clone())
            .unwrap_or_else(|| "default_database".into()),
    })
}

/// The collection's ids, in the server's order.
#[derive(Deserialize)]
struct Ids {
    ids: Vec<String>,
}

#[derive(Deserialize)]
struct Page {
    ids: Vec<String>,
    #[serde(default)]
    documents: Option<Vec<Option<String>>>,
    #[serde(default)]
    metadatas: Option<Vec<Option<Value>>>,
    #[serde(default)]
    embeddings: Option<Vec<Embedding>>,
}

/// One record's embedding as it came: its numbers, or what stood there instead (read straight
/// into floats, not a JSON value per number).
struct Embedding(Vec<f32>, Numbers);

impl<'de> Deserialize<'de> for Embedding {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Embedding, D::Error> {
        use serde::de::DeserializeSeed;
        let mut v = Vec::new();
        let what = NumbersSeed(&mut v).deserialize(d)?;
        Ok(Embedding(v, what))
    }
}

pub fn read(uri: &str, opts: &StoreOptions, sink: &mut Sink) -> Result<(), StoreError> {
    let t = parse(uri, opts)?;
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(5))
        .timeout(Duration::from_secs(120))
        .build();
    let fail = |e: ureq::Error, what: &str| failure(uri, e, what);
    let coll_url = format!(
        "{}/tenants/{}/databases/{}/collections",
        t.base, t.tenant, t.database
    );
    let answer = agent
        .get(&format!("{coll_url}/{}", t.collection))
        .call()
        .map_err(|e| {
            fail(
                e,
                &format!(
                    "collection {} (tenant {}, database {})",
                    t.collection, t.tenant, t.database
                ),
            )
        })?;
    let coll: Value = json_body(answer)
        .map_err(|e| StoreError::read(uri, format!("collection: not Chroma's answer: {e}")))?;
    let id = coll
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| StoreError::read(uri, "collection: no id in Chroma's answer"))?
        .to_string();
    let get_url = format!("{coll_url}/{id}/get");
    let answer = agent
        .post(&get_url)
        .send_json(json!({ "include": [] }))
        .map_err(|e| fail(e, "ids"))?;
    let all: Ids = json_body(answer)
        .map_err(|e| StoreError::read(uri, format!("ids: not Chroma's answer: {e}")))?;
    let count = all.ids.len();
    sink.expect(count);
    for batch in all.ids.chunks(opts.page()) {
        let interrupted = |why: String| StoreError::Interrupted {
            uri: uri.to_string(),
            read: sink.len(),
            expected: count,
            why,
        };
        let answer = agent
            .post(&get_url)
            .send_json(json!({
                "ids": batch,
                "include": ["documents", "metadatas", "embeddings"],
            }))
            .map_err(|e| interrupted(fail(e, "get").to_string()))?;
        let got: Page = json_body(answer).map_err(|e| interrupted(format!("get: {e}")))?;
        if got.ids.len() < batch.len() {
            return Err(interrupted(format!(
                "{} of the {} records asked were gone: the collection changed while it was read",
                batch.len() - got.ids.len(),
                batch.len()
            )));
        }
        page_chunks(uri, got, opts, sink)?;
    }
    Ok(())
}

/// A failed request in words: not found, the server's answer, or an unreachable server.
fn failure(uri: &str, e: ureq::Error, what: &str) -> StoreError {
    match e {
        ureq::Error::Status(404, _) => StoreError::read(uri, format!("{what}: not found")),
        ureq::Error::Status(code, r) => StoreError::read(
            uri,
            format!(
                "{what}: the server answered {code}: {}",
                r.into_string().unwrap_or_default().trim()
            ),
        ),
        ureq::Error::Transport(e) => StoreError::Unreachable {
            uri: uri.to_string(),
            why: e.to_string(),
        },
    }
}

/// One page of records as stored chunks.
fn page_chunks(
    uri: &str,
    got: Page,
    opts: &StoreOptions,
    sink: &mut Sink,
) -> Result<(), StoreError> {
    let docs = got.documents.unwrap_or_default();
    let metas = got.metadatas.unwrap_or_default();
    let vecs = got.embeddings.unwrap_or_default();
    for (i, cid) in got.ids.into_iter().enumerate() {
        let text = docs.get(i).cloned().flatten().ok_or_else(|| {
            StoreError::read(
                uri,
                format!("record {cid} has no document (chunkscope reads the text Chroma stores)"),
            )
        })?;
        let metadata = metas
            .get(i)
            .and_then(Option::as_ref)
            .map(Meta::from_object)
            .unwrap_or_default();
        let vector = match vecs.get(i) {
            Some(Embedding(v, what)) => what
                .vector()
                .map_err(|e| StoreError::read(uri, format!("{cid}: {e}")))?
                .then_some(v.as_slice()),
            None => None,
        };
        let c = StoredChunk::plain(cid, text).with_metadata(metadata, opts.source.as_deref());
        sink.push(c, vector).map_err(|e| StoreError::read(uri, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        let t = parse(
            "chroma://127.0.0.1:8000/docs?tenant=t1",
            &StoreOptions::default(),
        )
        .unwrap();
        assert_eq!(t.base, "http://127.0.0.1:8000/api/v2");
        assert_eq!((t.collection.as_str(), t.tenant.as_str()), ("docs", "t1"));
        assert_eq!(t.database, "default_database");
        assert!(parse("chroma://127.0.0.1:8000", &StoreOptions::default()).is_err());
    }

    #[test]
    fn page_vectors_read_as_floats_and_a_wrong_one_named() {
        let page: Page = serde_json::from_str(
            r#"{"ids": ["a", "b", "c"], "documents": ["x", "y", "z"],
                "metadatas": [{"source": "s.md"}, null, null],
                "embeddings": [[3, 4], null, [0.0, 1.5]]}"#,
        )
        .unwrap();
        let mut progress = |_, _| {};
        let mut sink = Sink::new(&mut progress);
        page_chunks("chroma://h/c", page, &StoreOptions::default(), &mut sink).unwrap();
        assert_eq!(sink.len(), 3);
        assert_eq!(sink.chunks[0].source.as_deref(), Some("s.md"));
        assert_eq!(sink.vectors.get(0), Some(&[0.6, 0.8][..]), "unit length");
        assert_eq!(sink.vectors.get(1), None, "null: no vector");
        assert_eq!(sink.vectors.get(2), Some(&[0.0, 1.0][..]));
        for (vector, why) in [
            (r#""nope""#, "the vector is not a list of numbers"),
            (
                r#"[1, "2"]"#,
                "the vector holds something other than numbers",
            ),
        ] {
            let page: Page = serde_json::from_str(&format!(
                r#"{{"ids": ["d"], "documents": ["w"], "embeddings": [{vector}]}}"#
            ))
            .unwrap();
            let e = page_chunks("chroma://h/c", page, &StoreOptions::default(), &mut sink)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("chroma://h/c") && e.contains(&format!("d: {why}")),
                "{e}"
            );
        }
    }

    #[test]
    fn unreachable_server_is_named() {
        // Port 9 (discard) on the loopback: nothing listens there.
        let e = crate::store::open(
            "chroma://127.0.0.1:9/docs",
            &StoreOptions::default(),
            &mut |_, _| {},
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("chroma://127.0.0.1:9/docs") && e.contains("cannot reach"),
            "{e}"
        );
    }
}
