//! Relevance judgments: which documents answer which query, and how well (an integer grade, 0 =
//! judged not relevant). Read from a BEIR folder (`corpus.jsonl`, `queries.jsonl`,
//! `qrels/<split>.tsv`) or from a JSONL query log (`{"query": ..., "relevant": [...]}` a line).
//! Files are read line by line (a corpus of half a million lines never sits in memory as text);
//! a line that cannot be read is an error naming the file and the line, never a panic.
//!
//! Grades are read as trec_eval reads them: an integer, and a negative grade counts as judged not
//! relevant (read as 0), which is what trec_eval's `ndcg_cut`, `map_cut`, `recall`, `P` and
//! `recip_rank` make of it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::corpus::Document;

/// The qrels split read when none is named.
pub const DEFAULT_SPLIT: &str = "test";

#[derive(Debug, thiserror::Error)]
pub enum JudgmentsError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {reason}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        reason: LineFault,
    },
    #[error("{}: no qrels/{split}.tsv (splits there: {})", dir.display(),
        if present.is_empty() { "none".to_string() } else { present.join(", ") })]
    NoSplit {
        dir: PathBuf,
        split: String,
        present: Vec<String>,
    },
}

/// What is wrong with one line of a judgments file ([`JudgmentsError::Line`] adds the file and
/// the line number). Fields are named as the file spells them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LineFault {
    #[error("not UTF-8 (byte {byte})")]
    NotUtf8 { byte: usize },
    /// serde's reason, without its "at line 1", and the column.
    #[error("{reason} (column {column})")]
    Json { reason: String, column: usize },
    #[error("expected a JSON object")]
    NotAnObject,
    #[error("missing \"{field}\"")]
    Missing { field: &'static str },
    #[error("\"{field}\" must be {expected}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
    },
    #[error("\"query\" is empty")]
    EmptyQuery,
    #[error("\"relevant\" lists {item}: expected a document id or path")]
    RelevantItem { item: String },
    #[error("grade of {id:?} is {grade}: expected an integer")]
    Grade { id: String, grade: String },
    #[error("\"relevant\" names no document")]
    NoRelevant,
    #[error("query id {id:?} repeated (first on line {first_line})")]
    RepeatedQuery { id: String, first_line: usize },
    /// A qrels line without exactly three tab-separated fields.
    #[error("expected query-id, corpus-id and score separated by tabs, found {found} field(s)")]
    QrelsFields { found: usize },
    #[error("score {score:?} is not an integer")]
    Score { score: String },
    #[error("empty query-id or corpus-id")]
    EmptyId,
    #[error("query {id:?} is not in queries.jsonl")]
    UnknownQuery { id: String },
}

/// One query with its judged documents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judged {
    /// The query's id (BEIR `_id`; in a query log its `id`, else its line number).
    pub id: String,
    pub query: String,
    /// Judged documents (id or file path) and grades, highest grade first, then by id. Grade 0
    /// entries (judged not relevant) are kept; measures count only grades above 0.
    pub relevant: Vec<(String, u32)>,
    /// The expected answer, when the query log gives one.
    pub answer: Option<String>,
}

/// Queries with judgments: the evaluation cases.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Judgments {
    pub cases: Vec<Judged>,
}

/// A BEIR corpus document.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BeirDoc {
    #[serde(rename = "_id", deserialize_with = "id_string")]
    pub id: String,
    #[serde(default, deserialize_with = "text_or_null")]
    pub title: String,
    pub text: String,
}

impl BeirDoc {
    /// The text a corpus document holds: `title`, a blank line, `text`; only `text` when the
    /// title is empty.
    pub fn corpus_text(&self) -> String {
        if self.title.is_empty() {
            self.text.clone()
        } else {
            format!("{}\n\n{}", self.title, self.text)
        }
    }

    /// The corpus document, named by its `_id`.
    pub fn into_document(self) -> Document {
        let text = self.corpus_text();
        Document::plain(self.id, text)
    }
}

/// A BEIR query.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Query {
    #[serde(rename = "_id", deserialize_with = "id_string")]
    pub id: String,
    pub text: String,
}

/// Per query id, per document id, the grade.
pub type Qrels = HashMap<String, HashMap<String, u32>>;

/// A whole BEIR folder: documents, queries and the qrels of one split.
#[derive(Debug, Clone)]
pub struct Beir {
    pub documents: Vec<BeirDoc>,
    pub queries: Vec<Query>,
    pub qrels: Qrels,
    pub split: String,
    /// The cases: the queries with qrels in the split.
    pub judgments: Judgments,
}

impl Beir {
    /// Read `dir`'s corpus, queries and `qrels/<split>.tsv`.
    pub fn load(dir: &Path, split: &str) -> Result<Beir, JudgmentsError> {
        let (queries, qrels, judgments) = read_beir_parts(dir, split)?;
        let documents = read_corpus(&dir.join("corpus.jsonl"))?;
        Ok(Beir {
            documents,
            queries,
            qrels,
            split: split.to_string(),
            judgments,
        })
    }
}

/// True when `dir` is a BEIR folder: `corpus.jsonl` and `queries.jsonl` files and a `qrels/`
/// folder. Every command then reads `corpus.jsonl` as the corpus (each document named by its
/// `_id`) and eval its qrels as cases.
pub fn is_beir_folder(dir: &Path) -> bool {
    dir.join("corpus.jsonl").is_file()
        && dir.join("queries.jsonl").is_file()
        && dir.join("qrels").is_dir()
}

/// The splits `dir/qrels/` has (`test` for `qrels/test.tsv`), sorted.
pub fn list_splits(dir: &Path) -> Result<Vec<String>, JudgmentsError> {
    let qrels = dir.join("qrels");
    let rd = std::fs::read_dir(&qrels).map_err(|source| JudgmentsError::Io {
        path: qrels.clone(),
        source,
    })?;
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|source| JudgmentsError::Io {
            path: qrels.clone(),
            source,
        })?;
        let p = e.path();
        if p.is_file() && p.extension().is_some_and(|x| x == "tsv") {
            if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                out.push(stem.to_string());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The cases of a BEIR folder's split (queries and qrels only; the corpus is not read): every
/// query of `queries.jsonl` with qrels in the split, in file order. A qrels query missing from
/// `queries.jsonl` is an error at its qrels line.
pub fn read_beir_judgments(dir: &Path, split: &str) -> Result<Judgments, JudgmentsError> {
    Ok(read_beir_parts(dir, split)?.2)
}

fn read_beir_parts(
    dir: &Path,
    split: &str,
) -> Result<(Vec<Query>, Qrels, Judgments), JudgmentsError> {
    let qrels_path = dir.join("qrels").join(format!("{split}.tsv"));
    if !qrels_path.is_file() {
        return Err(JudgmentsError::NoSplit {
            dir: dir.to_path_buf(),
            split: split.to_string(),
            present: list_splits(dir).unwrap_or_default(),
        });
    }
    let queries = read_queries(&dir.join("queries.jsonl"))?;
    let (qrels, first_line) = read_qrels_lines(&qrels_path)?;
    let known: HashMap<&str, &Query> = queries.iter().map(|q| (q.id.as_str(), q)).collect();
    // The first qrels line naming an unknown query, if any.
    if let Some((id, line)) = first_line
        .iter()
        .filter(|(id, _)| !known.contains_key(id.as_str()))
        .min_by_key(|(_, line)| **line)
    {
        return Err(JudgmentsError::Line {
            path: qrels_path,
            line: *line,
            reason: LineFault::UnknownQuery { id: id.clone() },
        });
    }
    let cases = queries
        .iter()
        .filter_map(|q| {
            let judged = qrels.get(&q.id)?;
            Some(Judged {
                id: q.id.clone(),
                query: q.text.clone(),
                relevant: sorted(judged.iter().map(|(d, g)| (d.clone(), *g)).collect()),
                answer: None,
            })
        })
        .collect();
    Ok((queries, qrels, Judgments { cases }))
}

/// Highest grade first, then by id.
fn sorted(mut v: Vec<(String, u32)>) -> Vec<(String, u32)> {
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// Each document of a BEIR `corpus.jsonl`, in order, handed to `f` as it is read. Returns how
/// many there were.
pub fn each_document(path: &Path, mut f: impl FnMut(BeirDoc)) -> Result<usize, JudgmentsError> {
    let mut n = 0;
    each_line(path, |_, line| {
        f(json_line::<BeirDoc>(line)?);
        n += 1;
        Ok(())
    })?;
    Ok(n)
}

/// All documents of a BEIR `corpus.jsonl`.
pub fn read_corpus(path: &Path) -> Result<Vec<BeirDoc>, JudgmentsError> {
    let mut docs = Vec::new();
    each_document(path, |d| docs.push(d))?;
    Ok(docs)
}

/// The queries of a BEIR `queries.jsonl`, in order; an id repeated is an error.
pub fn read_queries(path: &Path) -> Result<Vec<Query>, JudgmentsError> {
    let mut out = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    each_line(path, |n, line| {
        let q = json_line::<Query>(line)?;
        if let Some(first) = seen.insert(q.id.clone(), n) {
            return Err(LineFault::RepeatedQuery {
                id: q.id.clone(),
                first_line: first,
            });
        }
        out.push(q);
        Ok(())
    })?;
    Ok(out)
}

/// A BEIR qrels file: `query-id TAB corpus-id TAB score` lines after a header line. A pair
/// judged twice keeps its last grade.
pub fn read_qrels(path: &Path) -> Result<Qrels, JudgmentsError> {
    Ok(read_qrels_lines(path)?.0)
}

/// The qrels and, per query, the line it first appears on.
fn read_qrels_lines(path: &Path) -> Result<(Qrels, HashMap<String, usize>), JudgmentsError> {
    let mut qrels = Qrels::new();
    let mut first_line = HashMap::new();
    let mut first = true;
    each_line(path, |n, line| {
        let header = std::mem::take(&mut first);
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != 3 {
            return Err(LineFault::QrelsFields {
                found: fields.len(),
            });
        }
        let grade = match parse_grade(fields[2].trim()) {
            Some(g) => g,
            // The header line (BEIR writes `query-id  corpus-id  score`).
            None if header => return Ok(()),
            None => {
                return Err(LineFault::Score {
                    score: fields[2].to_string(),
                })
            }
        };
        let (q, d) = (fields[0], fields[1]);
        if q.is_empty() || d.is_empty() {
            return Err(LineFault::EmptyId);
        }
        first_line.entry(q.to_string()).or_insert(n);
        qrels
            .entry(q.to_string())
            .or_default()
            .insert(d.to_string(), grade);
        Ok(())
    })?;
    Ok((qrels, first_line))
}

/// An integer grade; a negative one is 0 (judged not relevant, as trec_eval counts it).
fn parse_grade(s: &str) -> Option<u32> {
    let g: i64 = s.parse().ok()?;
    Some(g.clamp(0, u32::MAX as i64) as u32)
}

/// A JSONL query log: a line `{"query": "...", "relevant": ["doc id or path", ...]}`, or
/// `"relevant": {"id": grade, ...}`; optionally `"answer"` and `"id"` (else the line number).
/// Listed documents have grade 1. Blank lines are skipped.
pub fn read_query_log(path: &Path) -> Result<Judgments, JudgmentsError> {
    let mut cases = Vec::new();
    each_line(path, |n, line| {
        cases.push(log_line(n, line)?);
        Ok(())
    })?;
    Ok(Judgments { cases })
}

fn log_line(n: usize, line: &str) -> Result<Judged, LineFault> {
    let wrong = |field, expected| LineFault::WrongType { field, expected };
    let v: Value = json_line(line)?;
    let obj = v.as_object().ok_or(LineFault::NotAnObject)?;
    let query = match obj.get("query") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) => return Err(LineFault::EmptyQuery),
        Some(_) => return Err(wrong("query", "a string")),
        None => return Err(LineFault::Missing { field: "query" }),
    };
    let mut relevant: HashMap<String, u32> = HashMap::new();
    match obj.get("relevant") {
        Some(Value::Array(items)) => {
            for item in items {
                let id = id_value(item).ok_or_else(|| LineFault::RelevantItem {
                    item: item.to_string(),
                })?;
                relevant.insert(id, 1);
            }
        }
        Some(Value::Object(grades)) => {
            for (id, g) in grades {
                let grade = g
                    .as_i64()
                    .map(|g| g.clamp(0, u32::MAX as i64) as u32)
                    .ok_or_else(|| LineFault::Grade {
                        id: id.clone(),
                        grade: g.to_string(),
                    })?;
                relevant.insert(id.clone(), grade);
            }
        }
        Some(_) => {
            return Err(wrong(
                "relevant",
                "a list of document ids or an object {id: grade}",
            ))
        }
        None => return Err(LineFault::Missing { field: "relevant" }),
    }
    if relevant.is_empty() {
        return Err(LineFault::NoRelevant);
    }
    let answer = match obj.get("answer") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(wrong("answer", "a string")),
    };
    let id = match obj.get("id") {
        None | Some(Value::Null) => n.to_string(),
        Some(v) => id_value(v).ok_or_else(|| wrong("id", "a string or a number"))?,
    };
    Ok(Judged {
        id,
        query,
        relevant: sorted(relevant.into_iter().collect()),
        answer,
    })
}

/// A string id, or a number written as its digits.
fn id_value(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `_id`: a string, or a number (some BEIR exports write numeric ids).
fn id_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let v = Value::deserialize(d)?;
    id_value(&v).ok_or_else(|| serde::de::Error::custom(format!("_id is {v}: expected a string")))
}

/// A string field that may be null.
fn text_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// One JSON line parsed as `T`; the reason names the column, not serde's "line 1".
fn json_line<T: serde::de::DeserializeOwned>(line: &str) -> Result<T, LineFault> {
    serde_json::from_str(line).map_err(|e| {
        let msg = e.to_string();
        let msg = msg.rfind(" at line ").map_or(&msg[..], |i| &msg[..i]);
        LineFault::Json {
            reason: msg.to_string(),
            column: e.column(),
        }
    })
}

/// Call `f` with each non-blank line (1-based number, text without its line ending or a leading
/// BOM), read one at a time; an `Err` reason from `f` becomes an error at that line.
fn each_line(
    path: &Path,
    mut f: impl FnMut(usize, &str) -> Result<(), LineFault>,
) -> Result<(), JudgmentsError> {
    let io = |source| JudgmentsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = BufReader::with_capacity(1 << 16, File::open(path).map_err(io)?);
    let mut buf = Vec::new();
    let mut n = 0;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf).map_err(io)? == 0 {
            return Ok(());
        }
        n += 1;
        let at = |reason: LineFault| JudgmentsError::Line {
            path: path.to_path_buf(),
            line: n,
            reason,
        };
        let mut text = std::str::from_utf8(&buf).map_err(|e| {
            at(LineFault::NotUtf8 {
                byte: e.valid_up_to() + 1,
            })
        })?;
        text = text.trim_end_matches(['\n', '\r']);
        if n == 1 {
            text = text.strip_prefix('\u{feff}').unwrap_or(text);
        }
        if text.trim().is_empty() {
            continue;
        }
        f(n, text).map_err(at)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder with a `qrels/` folder, removed when dropped.
    struct Scratch(PathBuf);

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn folder(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!(
            "chunkscope-judgments-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("qrels")).unwrap();
        Scratch(d)
    }

    fn write(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
    }

    fn beir(name: &str, corpus: &str, queries: &str, qrels: &str) -> Scratch {
        let d = folder(name);
        write(&d.join("corpus.jsonl"), corpus);
        write(&d.join("queries.jsonl"), queries);
        write(&d.join("qrels/test.tsv"), qrels);
        d
    }

    fn err_text(e: JudgmentsError) -> String {
        e.to_string()
    }

    const CORPUS: &str = concat!(
        r#"{"_id": "d1", "title": "Keys", "text": "Rotate keys.", "metadata": {"url": "x"}}"#,
        "\n",
        r#"{"_id": "d2", "title": "", "text": "No title."}"#,
        "\r\n\n",
        r#"{"_id": 3, "text": "Numeric id, no title.", "title": null}"#,
        "\n"
    );
    const QUERIES: &str = concat!(
        "\u{feff}",
        r#"{"_id": "q1", "text": "how are keys rotated?", "metadata": {}}"#,
        "\n",
        r#"{"_id": "q2", "text": "unjudged in test"}"#,
        "\n",
        r#"{"_id": "q3", "text": "only non-relevant"}"#,
        "\n"
    );
    const QRELS: &str = "query-id\tcorpus-id\tscore\nq1\td2\t1\nq1\td1\t2\nq3\td1\t0\nq1\t3\t-1\n";

    #[test]
    fn reads_a_beir_folder() {
        let d = beir("ok", CORPUS, QUERIES, QRELS);
        write(&d.join("qrels/dev.tsv"), "query-id\tcorpus-id\tscore\n");
        assert_eq!(list_splits(&d).unwrap(), ["dev", "test"]);
        let b = Beir::load(&d, DEFAULT_SPLIT).unwrap();
        let texts: Vec<String> = b.documents.iter().map(BeirDoc::corpus_text).collect();
        assert_eq!(
            texts,
            ["Keys\n\nRotate keys.", "No title.", "Numeric id, no title."]
        );
        assert_eq!(b.documents[2].id, "3");
        let doc = b.documents[0].clone().into_document();
        assert_eq!(
            (doc.path.as_str(), doc.text.as_str()),
            ("d1", "Keys\n\nRotate keys.")
        );
        assert_eq!(b.queries.len(), 3);
        assert_eq!(b.qrels["q1"]["3"], 0, "a negative grade reads as 0");
        let cases = &b.judgments.cases;
        assert_eq!(cases.len(), 2, "q2 has no qrels in the split");
        assert_eq!(
            cases[0],
            Judged {
                id: "q1".into(),
                query: "how are keys rotated?".into(),
                relevant: vec![("d1".into(), 2), ("d2".into(), 1), ("3".into(), 0)],
                answer: None,
            }
        );
        assert_eq!(cases[1].id, "q3");
        assert_eq!(read_beir_judgments(&d, "test").unwrap(), b.judgments);
        let dev = read_beir_judgments(&d, "dev").unwrap();
        assert!(dev.cases.is_empty());
        let mut ids = Vec::new();
        assert_eq!(
            each_document(&d.join("corpus.jsonl"), |doc| ids.push(doc.id)).unwrap(),
            3
        );
        assert_eq!(ids, ["d1", "d2", "3"]);
        let e = err_text(read_beir_judgments(&d, "train").unwrap_err());
        assert!(
            e.ends_with("no qrels/train.tsv (splits there: dev, test)"),
            "{e}"
        );
    }

    #[test]
    fn beir_errors_name_file_and_line() {
        let bad_corpus = format!("{CORPUS}{{\"_id\": \"d4\", \"title\": \"t\"}}\n");
        let d = beir("corpus", &bad_corpus, QUERIES, QRELS);
        let e = err_text(Beir::load(&d, "test").unwrap_err());
        assert!(
            e.contains("corpus.jsonl:5: missing field `text` (column"),
            "{e}"
        );

        let d = beir(
            "json",
            "{\"_id\": \"d1\", \"text\": \"x\"\n",
            QUERIES,
            QRELS,
        );
        let e = err_text(read_corpus(&d.join("corpus.jsonl")).unwrap_err());
        assert!(
            e.contains("corpus.jsonl:1: EOF while parsing an object"),
            "{e}"
        );

        let d = beir("id", "{\"_id\": [1], \"text\": \"x\"}\n", QUERIES, QRELS);
        let e = err_text(read_corpus(&d.join("corpus.jsonl")).unwrap_err());
        assert!(
            e.contains("corpus.jsonl:1: _id is [1]: expected a string"),
            "{e}"
        );

        let d = beir("utf8", CORPUS, QUERIES, QRELS);
        let mut bytes = CORPUS.as_bytes().to_vec();
        bytes.extend_from_slice(b"{\"_id\": \"d9\", \"text\": \"\xff\"}\n");
        std::fs::write(d.join("corpus.jsonl"), bytes).unwrap();
        let e = err_text(read_corpus(&d.join("corpus.jsonl")).unwrap_err());
        assert!(e.contains("corpus.jsonl:5: not UTF-8"), "{e}");

        let q = format!("{QUERIES}{{\"_id\": \"q1\", \"text\": \"again\"}}\n");
        let d = beir("dup", CORPUS, &q, QRELS);
        let e = err_text(read_beir_judgments(&d, "test").unwrap_err());
        assert!(
            e.contains("queries.jsonl:4: query id \"q1\" repeated (first on line 1)"),
            "{e}"
        );

        let d = beir(
            "score",
            CORPUS,
            QUERIES,
            "query-id\tcorpus-id\tscore\nq1\td1\t1.5\n",
        );
        let e = err_text(read_beir_judgments(&d, "test").unwrap_err());
        assert!(
            e.contains("test.tsv:2: score \"1.5\" is not an integer"),
            "{e}"
        );

        let d = beir("fields", CORPUS, QUERIES, "q1\td1\t1\nq1 d2 1\n");
        let e = err_text(read_beir_judgments(&d, "test").unwrap_err());
        assert!(
            e.contains("test.tsv:2: expected query-id, corpus-id and score"),
            "{e}"
        );

        let d = beir(
            "unknown",
            CORPUS,
            QUERIES,
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq9\td1\t1\nq8\td1\t1\n",
        );
        let e = err_text(read_beir_judgments(&d, "test").unwrap_err());
        assert!(
            e.contains("test.tsv:3: query \"q9\" is not in queries.jsonl"),
            "{e}"
        );

        let d = folder("missing");
        write(&d.join("qrels/test.tsv"), QRELS);
        let e = err_text(read_beir_judgments(&d, "test").unwrap_err());
        assert!(e.contains("queries.jsonl: "), "{e}");
        let e = err_text(list_splits(&d.join("nowhere")).unwrap_err());
        assert!(e.contains("nowhere/qrels: "), "{e}");
    }

    #[test]
    fn qrels_without_header_and_last_grade_wins() {
        let d = folder("noheader");
        write(&d.join("qrels/test.tsv"), "q1\td1\t1\r\nq1\td1\t3\r\n");
        let q = read_qrels(&d.join("qrels/test.tsv")).unwrap();
        assert_eq!(q["q1"]["d1"], 3);
    }

    #[test]
    fn reads_a_query_log() {
        let d = folder("log");
        let p = d.join("log.jsonl");
        write(
            &p,
            concat!(
                r#"{"query": "rotate keys?", "relevant": ["docs/keys.md", "b.md", "b.md"], "answer": "every 90 days"}"#,
                "\n\n",
                r#"{"id": "x7", "query": "graded", "relevant": {"a.md": 2, "b.md": 0, "c.md": -1}, "answer": null}"#,
                "\n",
                r#"{"query": "numeric ids", "relevant": [17]}"#,
                "\n"
            ),
        );
        let j = read_query_log(&p).unwrap();
        assert_eq!(j.cases.len(), 3);
        assert_eq!(
            j.cases[0],
            Judged {
                id: "1".into(),
                query: "rotate keys?".into(),
                relevant: vec![("b.md".into(), 1), ("docs/keys.md".into(), 1)],
                answer: Some("every 90 days".into()),
            }
        );
        assert_eq!(j.cases[1].id, "x7");
        assert_eq!(
            j.cases[1].relevant,
            [
                ("a.md".to_string(), 2),
                ("b.md".into(), 0),
                ("c.md".into(), 0)
            ]
        );
        assert_eq!(j.cases[1].answer, None);
        assert_eq!(j.cases[2].relevant, [("17".to_string(), 1)]);
    }

    #[test]
    fn query_log_errors_name_file_and_line() {
        let d = folder("logerr");
        let p = d.join("log.jsonl");
        let ok = r#"{"query": "q", "relevant": ["a"]}"#;
        for (bad, want) in [
            (r#"{"query": "q", "relevant": ["a"]"#, "EOF while parsing"),
            (r#"["q", "a"]"#, "expected a JSON object"),
            (r#"{"relevant": ["a"]}"#, "missing \"query\""),
            (r#"{"query": " ", "relevant": ["a"]}"#, "\"query\" is empty"),
            (
                r#"{"query": 3, "relevant": ["a"]}"#,
                "\"query\" must be a string",
            ),
            (r#"{"query": "q"}"#, "missing \"relevant\""),
            (
                r#"{"query": "q", "relevant": "a"}"#,
                "\"relevant\" must be a list",
            ),
            (
                r#"{"query": "q", "relevant": []}"#,
                "\"relevant\" names no document",
            ),
            (
                r#"{"query": "q", "relevant": [null]}"#,
                "\"relevant\" lists null",
            ),
            (
                r#"{"query": "q", "relevant": {"a": 1.5}}"#,
                "grade of \"a\" is 1.5: expected an integer",
            ),
            (
                r#"{"query": "q", "relevant": ["a"], "answer": 1}"#,
                "\"answer\" must be a string",
            ),
            (
                r#"{"query": "q", "relevant": ["a"], "id": []}"#,
                "\"id\" must be a string or a number",
            ),
        ] {
            write(&p, &format!("{ok}\n\n{bad}\n{ok}\n"));
            let e = err_text(read_query_log(&p).unwrap_err());
            assert!(e.contains(&format!("log.jsonl:3: {want}")), "{bad}: {e}");
        }
        let e = err_text(read_query_log(&d.join("absent.jsonl")).unwrap_err());
        assert!(e.contains("absent.jsonl: "), "{e}");
        // The fault is a value a caller can match, with the field it concerns.
        write(
            &p,
            &format!(
                "{ok}\n{}\n",
                r#"{"query": "q", "relevant": ["a"], "id": []}"#
            ),
        );
        let e = read_query_log(&p).unwrap_err();
        assert!(
            matches!(
                &e,
                JudgmentsError::Line {
                    line: 2,
                    reason: LineFault::WrongType { field: "id", .. },
                    ..
                }
            ),
            "{e:?}"
        );
    }
}
