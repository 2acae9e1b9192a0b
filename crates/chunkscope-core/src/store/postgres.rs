//! `postgres://USER@HOST:PORT/DB?table=T&id=C&text=C&vector=C&metadata=C`: PostgreSQL with
//! pgvector. Columns not named are found by the names frameworks use (LlamaIndex's
//! `PGVectorStore`: `text`, `embedding`, `metadata_`; LangChain's `langchain_pg_embedding`:
//! `document`, `embedding`, `cmetadata`, picked by `collection=NAME`). The password comes from
//! PGPASSWORD or `[store] password_env` and is never printed. Read-only: one `READ ONLY`
//! transaction, a cursor fetched in pages, values read as text (a vector as `[1,2,...]`).

use postgres::{Client, NoTls, SimpleQueryMessage};
use serde_json::Value;

use super::{Meta, Sink, StoreError, StoreOptions, StoredChunk};

const TEXT: &[&str] = &["text", "document", "content", "page_content", "chunk"];
const VECTOR: &[&str] = &["embedding", "vector", "embeddings", "values"];
const ID: &[&str] = &["id", "node_id", "custom_id", "uuid", "_id"];
const METADATA: &[&str] = &["metadata", "metadata_", "cmetadata", "meta"];

/// What the URI and `[store]` say.
#[derive(Debug, Default, PartialEq)]
struct Target {
    user: String,
    host: String,
    port: u16,
    db: String,
    table: Option<String>,
    collection: Option<String>,
    id: Option<String>,
    text: Option<String>,
    vector: Option<String>,
    metadata: Option<String>,
    password: Option<String>,
}

/// The URI read, or why not (the error names the URI without its password).
fn parse(uri: &str, opts: &StoreOptions) -> Result<Target, StoreError> {
    let bad = |what: String| StoreError::read(&super::redact(uri), what);
    let rest = uri
        .strip_prefix("postgres://")
        .or_else(|| uri.strip_prefix("postgresql://"))
        .ok_or_else(|| bad("not a postgres:// URI".into()))?;
    let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (auth, hostdb) = main.rsplit_once('@').unwrap_or(("", main));
    let (user, password) = match auth.split_once(':') {
        Some((u, p)) => (u.to_string(), Some(p.to_string())),
        None => (auth.to_string(), None),
    };
    let (hostport, db) = hostdb.split_once('/').unwrap_or((hostdb, ""));
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse()
                .map_err(|_| bad(format!("port {p} is not a number")))?,
        ),
        None => (hostport, 5432),
    };
    if host.is_empty() || db.is_empty() {
        return Err(bad("expected postgres://USER@HOST:PORT/DB?table=T".into()));
    }
    let param = |k: &str| super::query_param(query, k);
    let pick = |k: &str, o: &Option<String>| param(k).or_else(|| o.clone());
    let env = opts.password_env.as_deref().unwrap_or("PGPASSWORD");
    Ok(Target {
        user: if user.is_empty() {
            std::env::var("PGUSER").unwrap_or_else(|_| "postgres".into())
        } else {
            user
        },
        host: host.to_string(),
        port,
        db: db.to_string(),
        table: pick("table", &opts.table),
        collection: pick("collection", &opts.collection),
        id: pick("id", &opts.id),
        text: pick("text", &opts.text),
        vector: pick("vector", &opts.vector),
        metadata: pick("metadata", &opts.metadata),
        password: password.or_else(|| std::env::var(env).ok()),
    })
}

/// An identifier quoted for SQL (`schema.table` quoted part by part).
fn ident(name: &str) -> String {
    name.split('.')
        .map(|p| format!("\"{}\"", p.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(".")
}

fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The rows of a query, each value as text (NULL as `None`).
fn rows(client: &mut Client, sql: &str) -> Result<Vec<Vec<Option<String>>>, postgres::Error> {
    Ok(client
        .simple_query(sql)?
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect())
}

pub fn read(uri: &str, opts: &StoreOptions, sink: &mut Sink) -> Result<(), StoreError> {
    let shown = super::redact(uri);
    let t = parse(uri, opts)?;
    let mut client = postgres::Config::new()
        .user(&t.user)
        .host(&t.host)
        .port(t.port)
        .dbname(&t.db)
        .password(t.password.clone().unwrap_or_default())
        .connect_timeout(std::time::Duration::from_secs(5))
        .application_name("chunkscope (read-only)")
        .connect(NoTls)
        .map_err(|e| StoreError::Unreachable {
            uri: shown.clone(),
            why: e.to_string(),
        })?;
    let fail = |e: postgres::Error| StoreError::read(&shown, e.to_string());
    rows(&mut client, "BEGIN TRANSACTION READ ONLY").map_err(fail)?;
    let select = select_for(&mut client, &t).map_err(|e| match e {
        Fault::Db(e) => fail(e),
        Fault::Says(s) => StoreError::read(&shown, s),
    })?;
    let expected: usize = rows(
        &mut client,
        &format!("SELECT count(*) FROM ({select}) AS q"),
    )
    .map_err(fail)?
    .first()
    .and_then(|r| r.first().cloned().flatten())
    .and_then(|n| n.parse().ok())
    .unwrap_or(0);
    rows(
        &mut client,
        &format!("DECLARE chunkscope_read NO SCROLL CURSOR FOR {select}"),
    )
    .map_err(fail)?;
    sink.expect(expected);
    loop {
        let page = rows(
            &mut client,
            &format!("FETCH FORWARD {} FROM chunkscope_read", opts.page()),
        )
        .map_err(|e| StoreError::Interrupted {
            uri: shown.clone(),
            read: sink.len(),
            expected,
            why: e.to_string(),
        })?;
        if page.is_empty() {
            break;
        }
        for row in page {
            let (chunk, vector) = chunk_of(row, opts, &shown)?;
            sink.push(chunk, vector.as_deref())
                .map_err(|e| StoreError::read(&shown, e))?;
        }
    }
    // Ends the read-only transaction (nothing was written to keep).
    let _ = rows(&mut client, "ROLLBACK");
    if sink.len() != expected {
        return Err(StoreError::Interrupted {
            uri: shown,
            read: sink.len(),
            expected,
            why: "the table changed while it was read".into(),
        });
    }
    Ok(())
}

enum Fault {
    Db(postgres::Error),
    Says(String),
}

impl From<postgres::Error> for Fault {
    fn from(e: postgres::Error) -> Fault {
        Fault::Db(e)
    }
}

/// The SELECT that yields id, text, vector and metadata as text, for a plain table or
/// LangChain's PGVector collection.
fn select_for(client: &mut Client, t: &Target) -> Result<String, Fault> {
    let langchain = t.table.is_none() || t.table.as_deref() == Some("langchain_pg_embedding");
    if langchain && t.collection.is_none() {
        return Err(Fault::Says(
            "no table: add ?table=T (or ?collection=NAME for LangChain's PGVector tables)".into(),
        ));
    }
    let table = t
        .table
        .clone()
        .unwrap_or_else(|| "langchain_pg_embedding".into());
    let (schema, name) = match table.rsplit_once('.') {
        Some((s, n)) => (Some(s.to_string()), n.to_string()),
        None => (None, table.clone()),
    };
    let columns: Vec<String> = rows(
        client,
        &format!(
            "SELECT column_name FROM information_schema.columns WHERE table_name = {}{} ORDER BY ordinal_position",
            literal(&name),
            schema.map(|s| format!(" AND table_schema = {}", literal(&s))).unwrap_or_default()
        ),
    )?
    .into_iter()
    .filter_map(|r| r.into_iter().next().flatten())
    .collect();
    if columns.is_empty() {
        return Err(Fault::Says(format!(
            "table {table} not found (or not readable by this user)"
        )));
    }
    let col = |given: &Option<String>, names: &[&str], what: &str| -> Result<String, Fault> {
        match given {
            Some(c) if columns.contains(c) => Ok(c.clone()),
            Some(c) => Err(Fault::Says(format!(
                "table {table} has no column {c} (it has {})",
                columns.join(", ")
            ))),
            None => names
                .iter()
                .find(|n| columns.iter().any(|c| c == *n))
                .map(|n| n.to_string())
                .ok_or_else(|| {
                    Fault::Says(format!(
                        "table {table}: no {what} column (looked for {}; it has {}); name it with ?{what}=COLUMN",
                        names.join(", "),
                        columns.join(", ")
                    ))
                }),
        }
    };
    let id = col(&t.id, ID, "id")?;
    let text = col(&t.text, TEXT, "text")?;
    let vector = col(&t.vector, VECTOR, "vector").ok();
    let metadata = col(&t.metadata, METADATA, "metadata").ok();
    let opt = |c: &Option<String>, cast: &str| {
        c.as_ref()
            .map_or("NULL".to_string(), |c| format!("e.{}::{cast}", ident(c)))
    };
    let mut sql = format!(
        "SELECT e.{}::text, e.{}::text, {}, {} FROM {} AS e",
        ident(&id),
        ident(&text),
        opt(&vector, "text"),
        opt(&metadata, "text"),
        ident(&table)
    );
    if langchain {
        let name = t.collection.as_deref().unwrap_or("");
        let found = rows(
            client,
            &format!(
                "SELECT uuid::text FROM langchain_pg_collection WHERE name = {}",
                literal(name)
            ),
        )?;
        let Some(uuid) = found.first().and_then(|r| r.first().cloned().flatten()) else {
            return Err(Fault::Says(format!(
                "no collection {name} in langchain_pg_collection"
            )));
        };
        sql.push_str(&format!(
            " WHERE e.collection_id = {}::uuid",
            literal(&uuid)
        ));
    }
    sql.push_str(&format!(" ORDER BY e.{}", ident(&id)));
    Ok(sql)
}

/// One row as a chunk and its vector; `shown` is the store's URI without its password, for the
/// error.
fn chunk_of(
    row: Vec<Option<String>>,
    opts: &StoreOptions,
    shown: &str,
) -> Result<(StoredChunk, Option<Vec<f32>>), StoreError> {
    let bad = |what: String| StoreError::read(shown, what);
    let mut it = row.into_iter();
    let id = it
        .next()
        .flatten()
        .ok_or_else(|| bad("a row with a NULL id".into()))?;
    let text = it
        .next()
        .flatten()
        .ok_or_else(|| bad(format!("row {id}: the text is NULL")))?;
    let vector = match it.next().flatten() {
        Some(v) => Some(parse_vector(&v).map_err(|e| bad(format!("row {id}: {e}")))?),
        None => None,
    };
    let metadata = match it.next().flatten() {
        Some(m) => {
            let v: Value = serde_json::from_str(&m)
                .map_err(|e| bad(format!("row {id}: metadata is not JSON: {e}")))?;
            Meta::from_object(&v)
        }
        None => Meta::default(),
    };
    let c = StoredChunk::plain(id, text).with_metadata(metadata, opts.source.as_deref());
    Ok((c, vector))
}

/// pgvector's text form, `[0.1,0.2,...]` (also a Postgres array's `{...}`).
fn parse_vector(s: &str) -> Result<Vec<f32>, String> {
    let inner = s
        .trim()
        .trim_start_matches(['[', '{'])
        .trim_end_matches([']', '}']);
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    inner
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<f32>()
                .map_err(|_| format!("vector value {x:?} is not a number"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        let t = parse(
            "postgres://app:pw@127.0.0.1:5433/rag?table=chunks&text=body",
            &StoreOptions {
                vector: Some("emb".into()),
                ..StoreOptions::default()
            },
        )
        .unwrap();
        assert_eq!(
            (t.user.as_str(), t.host.as_str(), t.port),
            ("app", "127.0.0.1", 5433)
        );
        assert_eq!(t.db, "rag");
        assert_eq!(t.table.as_deref(), Some("chunks"));
        assert_eq!(t.text.as_deref(), Some("body"));
        assert_eq!(t.vector.as_deref(), Some("emb"));
        assert_eq!(t.password.as_deref(), Some("pw"));
        assert!(parse("postgres://app@/rag", &StoreOptions::default()).is_err());
        let e = parse("postgres://app:pw@h:x/rag", &StoreOptions::default()).unwrap_err();
        assert!(
            matches!(&e, StoreError::Read { uri, what } if uri == "postgres://app@h:x/rag" && what == "port x is not a number"),
            "{e:?}"
        );
        let e = chunk_of(vec![None], &StoreOptions::default(), "postgres://app@h/db").unwrap_err();
        assert_eq!(e.to_string(), "postgres://app@h/db: a row with a NULL id");
        assert_eq!(ident("public.x\"y"), "\"public\".\"x\"\"y\"");
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(
            parse_vector("[1,-0.5,2e-3]").unwrap(),
            vec![1.0, -0.5, 0.002]
        );
        assert!(parse_vector("[1,x]").is_err());
    }
}
