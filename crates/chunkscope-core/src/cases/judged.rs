//! Relevance judgments as evaluation cases: a BEIR folder's qrels or a JSONL query log, each judged
//! name resolved to the id of a corpus document, and the query log's answers located in their
//! documents as span cases (so the answer-position buckets and miss reasons apply to them too).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{locate, BadLine, Case, Cases};
use crate::corpus::Corpus;
use crate::judgments::{self, Judgments, JudgmentsError, DEFAULT_SPLIT};

/// Where relevance judgments are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JudgedSource {
    /// A BEIR folder: the queries of `queries.jsonl` judged in `qrels/<split>.tsv`.
    Beir { dir: PathBuf, split: String },
    /// A JSONL query log: `{"query": ..., "relevant": [...], "answer": ...}` a line.
    Log(PathBuf),
}

impl JudgedSource {
    /// `path` read as judgments: a BEIR folder (its `split`, default `test`), a `.tsv` in a BEIR
    /// folder's `qrels/` (the split its name says), or a `.jsonl` query log. `None` for anything
    /// else (TSV cases, SQuAD JSON).
    pub fn of(path: &Path, split: Option<&str>) -> Option<JudgedSource> {
        if path.is_dir() {
            return judgments::is_beir_folder(path).then(|| JudgedSource::Beir {
                dir: path.to_path_buf(),
                split: split.unwrap_or(DEFAULT_SPLIT).to_string(),
            });
        }
        let ext = path.extension().and_then(|e| e.to_str());
        let in_qrels = path
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == "qrels"));
        if let (Some("tsv"), Some(qrels)) = (ext, in_qrels) {
            // "qrels/test.tsv" given relative to the BEIR folder itself: its parent is "".
            let dir = qrels.parent().unwrap_or(Path::new(""));
            let probe = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if judgments::is_beir_folder(probe) {
                return Some(JudgedSource::Beir {
                    dir: probe.to_path_buf(),
                    split: path.file_stem()?.to_string_lossy().into_owned(),
                });
            }
        }
        (ext == Some("jsonl")).then(|| JudgedSource::Log(path.to_path_buf()))
    }

    /// The judgments as written (names not yet resolved against a corpus).
    pub fn read(&self) -> Result<Judgments, JudgmentsError> {
        match self {
            JudgedSource::Beir { dir, split } => judgments::read_beir_judgments(dir, split),
            JudgedSource::Log(p) => judgments::read_query_log(p),
        }
    }

    /// The file the cases come from, as messages name it: the qrels file, or the log.
    pub fn file(&self) -> PathBuf {
        match self {
            JudgedSource::Beir { dir, split } => dir.join("qrels").join(format!("{split}.tsv")),
            JudgedSource::Log(p) => p.clone(),
        }
    }
}

/// Relevance judgments whose names are the corpus's document ids.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JudgedCases {
    /// The qrels file or the query log.
    pub source: String,
    /// Every query, its judged names resolved to document ids (highest grade first, then by id;
    /// two names of one document keep its highest grade).
    pub judgments: Judgments,
    /// The document id of each corpus document (by index): its path (a BEIR document's `_id`),
    /// or for a store's chunk its source document.
    pub doc_ids: Vec<String>,
    /// Judged names that match no document, as judged: they count as relevant and never
    /// retrieved, as trec_eval counts a relevant document missing from the run.
    pub not_in_corpus: Vec<String>,
}

impl JudgedCases {
    /// Resolve each judged name of `raw` against `doc_ids`: the id itself; else the same path
    /// once `./`, `\` and doubled `/` are normalised; else the one document whose path ends with
    /// the name (or the name with the path) at a `/`. A name matching none, or several by suffix,
    /// stays as judged and is listed in `not_in_corpus`.
    pub fn new(source: String, raw: &Judgments, doc_ids: Vec<String>) -> JudgedCases {
        let names = Names::new(&doc_ids);
        let mut memo: HashMap<&str, Option<String>> = HashMap::new();
        let mut not_in_corpus: Vec<String> = Vec::new();
        let mut cases = Vec::with_capacity(raw.cases.len());
        for q in &raw.cases {
            let mut grades: HashMap<String, u32> = HashMap::new();
            for (name, grade) in &q.relevant {
                let found = memo
                    .entry(name.as_str())
                    .or_insert_with(|| names.resolve(name));
                let id = match found {
                    Some(id) => id.clone(),
                    None => {
                        if !not_in_corpus.contains(name) {
                            not_in_corpus.push(name.clone());
                        }
                        name.clone()
                    }
                };
                let g = grades.entry(id).or_insert(*grade);
                *g = (*g).max(*grade);
            }
            let mut relevant: Vec<(String, u32)> = grades.into_iter().collect();
            relevant.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            cases.push(judgments::Judged {
                relevant,
                ..q.clone()
            });
        }
        JudgedCases {
            source,
            judgments: Judgments { cases },
            doc_ids,
            not_in_corpus,
        }
    }
}

/// A document name as a path: `\` as `/`, no leading `./`, no doubled or trailing `/`.
fn path_key(name: &str) -> String {
    let mut s = name.replace('\\', "/");
    while s.contains("//") {
        s = s.replace("//", "/");
    }
    while let Some(rest) = s.strip_prefix("./") {
        s = rest.to_string();
    }
    s.trim_end_matches('/').to_string()
}

/// The corpus's document ids, looked up by a judged name.
struct Names<'a> {
    exact: HashMap<&'a str, ()>,
    /// Path key -> id.
    by_key: HashMap<String, &'a str>,
}

impl<'a> Names<'a> {
    fn new(doc_ids: &'a [String]) -> Names<'a> {
        let mut by_key = HashMap::new();
        for id in doc_ids {
            by_key.entry(path_key(id)).or_insert(id.as_str());
        }
        Names {
            exact: doc_ids.iter().map(|d| (d.as_str(), ())).collect(),
            by_key,
        }
    }

    fn resolve(&self, name: &str) -> Option<String> {
        if self.exact.contains_key(name) {
            return Some(name.to_string());
        }
        let key = path_key(name);
        if key.is_empty() {
            return None;
        }
        if let Some(id) = self.by_key.get(&key) {
            return Some(id.to_string());
        }
        let at_slash =
            |long: &str, short: &str| long.strip_suffix(short).is_some_and(|p| p.ends_with('/'));
        let mut found = self
            .by_key
            .iter()
            .filter(|(k, _)| at_slash(k, &key) || at_slash(&key, k));
        match (found.next(), found.next()) {
            (Some((_, id)), None) => Some(id.to_string()),
            _ => None,
        }
    }
}

impl Cases {
    /// Cases from relevance judgments: the judged queries (with names resolved against
    /// `doc_ids`, by default the corpus's paths) and, for each query-log line with an `answer`,
    /// a span case locating it in the first relevant document that holds it (grade order). An
    /// answer none holds is listed as a bad line (its query still counts in the judged measures),
    /// numbered by the query's position.
    pub fn from_judged(
        source: &JudgedSource,
        corpus: &Corpus,
        doc_ids: Option<Vec<String>>,
    ) -> Result<Cases, JudgmentsError> {
        let raw = source.read()?;
        let doc_ids =
            doc_ids.unwrap_or_else(|| corpus.docs.iter().map(|d| d.path.clone()).collect());
        debug_assert_eq!(doc_ids.len(), corpus.docs.len());
        let file = source.file().display().to_string();
        let judged = JudgedCases::new(file.clone(), &raw, doc_ids);
        let mut out = Cases {
            file,
            ..Cases::default()
        };
        for (i, q) in judged.judgments.cases.iter().enumerate() {
            let Some(answer) = q.answer.as_deref().filter(|a| !a.trim().is_empty()) else {
                continue;
            };
            let found = q
                .relevant
                .iter()
                .filter(|(_, g)| *g > 0)
                .flat_map(|(id, _)| {
                    judged
                        .doc_ids
                        .iter()
                        .enumerate()
                        .filter(move |(_, d)| *d == id)
                        .map(|(d, _)| d)
                })
                .find_map(|d| locate(&corpus.docs[d].text, answer).map(|(s, e)| (d, s, e)));
            match found {
                Some((doc, start, end)) => out.cases.push(Case {
                    line: i + 1,
                    question: q.query.clone(),
                    answer: answer.to_string(),
                    doc,
                    start,
                    end,
                }),
                None => out.bad.push(BadLine {
                    line: i + 1,
                    reason: format!(
                        "query {:?}: answer not found in its relevant documents (it counts in the judged measures only)",
                        q.id
                    ),
                }),
            }
        }
        out.judged = Some(judged);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judgments::Judged;

    fn judged(relevant: &[(&str, u32)]) -> Judgments {
        Judgments {
            cases: vec![Judged {
                id: "1".into(),
                query: "q".into(),
                relevant: relevant.iter().map(|(d, g)| (d.to_string(), *g)).collect(),
                answer: None,
            }],
        }
    }

    #[test]
    fn names_resolve_to_document_ids() {
        let ids: Vec<String> = ["runbooks/rotate-keys.md", "README.md", "a/x.md", "b/x.md"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let raw = judged(&[
            ("./runbooks//rotate-keys.md", 1),
            ("runbooks/rotate-keys.md", 2),
            ("/home/me/examples/README.md", 1),
            ("x.md", 1),
            ("gone.md", 1),
        ]);
        let j = JudgedCases::new("log".into(), &raw, ids);
        assert_eq!(
            j.judgments.cases[0].relevant,
            [
                ("runbooks/rotate-keys.md".to_string(), 2),
                ("README.md".into(), 1),
                ("gone.md".into(), 1),
                ("x.md".into(), 1),
            ]
        );
        // "x.md" ends two paths: ambiguous, so it matches none.
        assert_eq!(j.not_in_corpus, ["x.md", "gone.md"]);
    }

    #[test]
    fn sources_by_path() {
        let d = std::env::temp_dir().join(format!("chunkscope-judged-{}", std::process::id()));
        std::fs::create_dir_all(d.join("qrels")).unwrap();
        std::fs::write(d.join("corpus.jsonl"), "").unwrap();
        std::fs::write(d.join("queries.jsonl"), "").unwrap();
        let beir = |split: &str| JudgedSource::Beir {
            dir: d.clone(),
            split: split.into(),
        };
        assert_eq!(JudgedSource::of(&d, None), Some(beir("test")));
        assert_eq!(JudgedSource::of(&d, Some("dev")), Some(beir("dev")));
        assert_eq!(
            JudgedSource::of(&d.join("qrels/train.tsv"), Some("dev")),
            Some(beir("train"))
        );
        assert_eq!(beir("dev").file(), d.join("qrels/dev.tsv"));
        let log = d.join("log.jsonl");
        assert_eq!(JudgedSource::of(&log, None), Some(JudgedSource::Log(log)));
        assert_eq!(JudgedSource::of(&d.join("cases.tsv"), None), None);
        assert_eq!(JudgedSource::of(&d.join("qrels"), None), None);
        let _ = std::fs::remove_dir_all(&d);
    }
}
