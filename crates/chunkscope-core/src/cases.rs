//! Evaluation cases: a TSV file (question, TAB, answer span, optionally TAB, file) located in the
//! corpus, or SQuAD-format JSON, from which the corpus itself is built (one document per article,
//! paragraphs in order) with each answer at its exact offset. Lines that cannot be used are listed
//! with their line numbers, never dropped silently.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::corpus::{Corpus, CorpusError, Document};
use super::judgments::JudgmentsError;

mod judged;
pub use judged::{JudgedCases, JudgedSource};

/// Why a cases file (or a corpus given as SQuAD JSON) could not be read. Each names the file;
/// a file that does not parse names the line and column too. Lines that are read but cannot
/// be used are not errors: they are listed in [`Cases::bad`].
#[derive(Debug, thiserror::Error)]
pub enum CasesError {
    #[error("cases file {}: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}:{line}:{column}: not valid JSON: {cause}", path.display())]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        cause: serde_json::Error,
    },
    #[error("{}: no \"data\" array (expected SQuAD format)", path.display())]
    NotSquad { path: PathBuf },
    /// Relevance judgments: a BEIR folder, a qrels file or a query log.
    #[error(transparent)]
    Judgments(#[from] JudgmentsError),
    /// The corpus named by [`load_corpus`].
    #[error(transparent)]
    Corpus(#[from] CorpusError),
}

type Result<T> = std::result::Result<T, CasesError>;

/// One question with the answer span it must retrieve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Case {
    /// Line in the cases file (TSV), or the question's position (SQuAD).
    pub line: usize,
    pub question: String,
    pub answer: String,
    /// Where the answer is: document index and byte range in it.
    pub doc: usize,
    pub start: usize,
    pub end: usize,
}

/// A line that could not become a case, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadLine {
    pub line: usize,
    pub reason: String,
}

#[derive(Debug, Clone, Default)]
pub struct Cases {
    pub file: String,
    pub cases: Vec<Case>,
    pub bad: Vec<BadLine>,
    /// Relevance judgments, when the cases came from a BEIR folder or a JSONL query log:
    /// evaluated at document level besides any span cases.
    pub judged: Option<JudgedCases>,
}

/// Lowercased text with whitespace runs collapsed to one space, and for each byte of it the byte of
/// the original text it came from (plus one past the end).
pub struct Normalized {
    pub text: String,
    pub origin: Vec<usize>,
}

pub fn normalize(s: &str) -> Normalized {
    let mut text = String::with_capacity(s.len());
    let mut origin = Vec::with_capacity(s.len() + 1);
    let mut in_space = false;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            if !in_space && !text.is_empty() {
                text.push(' ');
                origin.push(i);
            }
            in_space = true;
            continue;
        }
        in_space = false;
        for l in c.to_lowercase() {
            let before = text.len();
            text.push(l);
            origin.extend(std::iter::repeat_n(i, text.len() - before));
        }
    }
    if text.ends_with(' ') {
        text.pop();
        origin.pop();
    }
    origin.push(s.len());
    Normalized { text, origin }
}

/// The normalised form used to compare answers with chunk texts.
pub fn norm(s: &str) -> String {
    normalize(s).text
}

/// Byte range in `doc` of the first occurrence of `answer`, compared normalised.
pub fn locate(doc: &str, answer: &str) -> Option<(usize, usize)> {
    let n = normalize(doc);
    let a = norm(answer);
    if a.is_empty() {
        return None;
    }
    let at = n.text.find(&a)?;
    let start = n.origin[at];
    let last = at + a.len() - 1;
    let end_char = n.origin[last];
    let end = end_char + doc[end_char..].chars().next().map_or(0, char::len_utf8);
    Some((start, end))
}

impl Cases {
    /// The cases at `path`: relevance judgments (a BEIR folder, one of its qrels files, a `.jsonl`
    /// query log; `split` picks a BEIR folder's qrels, default `test`), SQuAD JSON (`.json`, its
    /// own questions), else a TSV file whose answers are located in `corpus`.
    pub fn load(path: &Path, split: Option<&str>, corpus: &Corpus) -> Result<Cases> {
        if let Some(source) = JudgedSource::of(path, split) {
            return Ok(Cases::from_judged(&source, corpus, None)?);
        }
        if path.extension().is_some_and(|e| e == "json") {
            return Ok(Cases::from_squad(path)?.1);
        }
        Cases::from_tsv(path, corpus)
    }

    /// Read a TSV cases file and locate every answer in `corpus`.
    pub fn from_tsv(path: &Path, corpus: &Corpus) -> Result<Cases> {
        Cases::from_tsv_matching(path, corpus, &|d, f| corpus.docs[d].path == f)
    }

    /// The same, with `in_file(doc, file)` saying which documents a case's file column names (a
    /// store's chunks name their source document). A path that holds relevance judgments (see
    /// [`JudgedSource::of`]) is read as such, the corpus's paths as document ids.
    pub fn from_tsv_matching(
        path: &Path,
        corpus: &Corpus,
        in_file: &dyn Fn(usize, &str) -> bool,
    ) -> Result<Cases> {
        if let Some(source) = JudgedSource::of(path, None) {
            return Ok(Cases::from_judged(&source, corpus, None)?);
        }
        let bytes = std::fs::read(path).map_err(|cause| CasesError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let name = path.display().to_string();
        let mut out = Cases {
            file: name.clone(),
            ..Cases::default()
        };
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let raw = raw.trim_end_matches('\r');
            if raw.trim().is_empty() || raw.starts_with('#') {
                continue;
            }
            let bad = |reason: String| BadLine { line, reason };
            let fields: Vec<&str> = raw.split('\t').collect();
            if fields.len() < 2 {
                out.bad
                    .push(bad("no TAB between question and answer".into()));
                continue;
            }
            if fields.len() > 3 {
                out.bad.push(bad(format!(
                    "{} fields; expected question, answer and an optional file",
                    fields.len()
                )));
                continue;
            }
            let (question, answer) = (fields[0].trim(), fields[1].trim());
            if question.is_empty() {
                out.bad.push(bad("empty question".into()));
                continue;
            }
            if answer.is_empty() {
                out.bad.push(bad("empty answer span".into()));
                continue;
            }
            let file = fields.get(2).map(|f| f.trim()).filter(|f| !f.is_empty());
            let candidates: Vec<usize> = match file {
                Some(f) => {
                    let named: Vec<usize> =
                        (0..corpus.docs.len()).filter(|&d| in_file(d, f)).collect();
                    if named.is_empty() {
                        out.bad
                            .push(bad(format!("file '{f}' is not in the corpus")));
                        continue;
                    }
                    named
                }
                None => (0..corpus.docs.len()).collect(),
            };
            let found = candidates
                .iter()
                .find_map(|&d| locate(&corpus.docs[d].text, answer).map(|(s, e)| (d, s, e)));
            match found {
                Some((doc, start, end)) => out.cases.push(Case {
                    line,
                    question: question.to_string(),
                    answer: answer.to_string(),
                    doc,
                    start,
                    end,
                }),
                None => out.bad.push(bad(match file {
                    Some(f) => format!("answer span not found in {f}"),
                    None => "answer span found nowhere in the corpus".into(),
                })),
            }
        }
        Ok(out)
    }

    /// Read SQuAD-format JSON: the corpus (one document per article, paragraphs joined by a blank
    /// line) and one case per question, its first answer at its exact offset.
    pub fn from_squad(path: &Path) -> Result<(Corpus, Cases)> {
        let v = read_json(path)?;
        let Some(data) = v.get("data").and_then(|d| d.as_array()) else {
            return Err(CasesError::NotSquad {
                path: path.to_path_buf(),
            });
        };
        let mut corpus = Corpus {
            root: path.to_path_buf(),
            ..Corpus::default()
        };
        let mut cases = Cases {
            file: path.display().to_string(),
            ..Cases::default()
        };
        let mut number = 0;
        for (a, art) in data.iter().enumerate() {
            let mut text = String::new();
            for p in json_array(art, "paragraphs") {
                let context = p.get("context").and_then(|c| c.as_str()).unwrap_or("");
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                let base = text.len();
                text.push_str(context);
                for q in json_array(p, "qas") {
                    number += 1;
                    match squad_case(q, context) {
                        Ok((question, answer, s)) => cases.cases.push(Case {
                            line: number,
                            question: question.to_string(),
                            answer: answer.to_string(),
                            doc: a,
                            start: base + s,
                            end: base + s + answer.len(),
                        }),
                        Err(reason) => cases.bad.push(BadLine {
                            line: number,
                            reason: reason.into(),
                        }),
                    }
                }
            }
            let title = art
                .get("title")
                .and_then(|t| t.as_str())
                .unwrap_or("article");
            corpus
                .docs
                .push(Document::plain(squad_doc_name(a, title), text));
        }
        Ok((corpus, cases))
    }
}

/// A JSON file parsed; an error names the file, and the line and column where it does not parse.
fn read_json(path: &Path) -> Result<serde_json::Value> {
    let raw = std::fs::read_to_string(path).map_err(|cause| CasesError::Read {
        path: path.to_path_buf(),
        cause,
    })?;
    serde_json::from_str(&raw).map_err(|cause| CasesError::Json {
        path: path.to_path_buf(),
        line: cause.line(),
        column: cause.column(),
        cause,
    })
}

/// The array under `key` of a JSON object (empty when there is none).
fn json_array<'a>(v: &'a serde_json::Value, key: &str) -> &'a [serde_json::Value] {
    v.get(key)
        .and_then(|x| x.as_array())
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// One SQuAD question of a paragraph: (question, first answer, the answer's byte offset in
/// `context`), or why it cannot be used.
fn squad_case<'a>(
    q: &'a serde_json::Value,
    context: &str,
) -> std::result::Result<(&'a str, &'a str, usize), &'static str> {
    let question = q
        .get("question")
        .and_then(|x| x.as_str())
        .unwrap_or("")
        .trim();
    let ans = q.get("answers").and_then(|x| x.get(0));
    let answer = ans
        .and_then(|x| x.get("text"))
        .and_then(|x| x.as_str())
        .unwrap_or("");
    // answer_start counts characters in the paragraph.
    let start_chars = ans
        .and_then(|x| x.get("answer_start"))
        .and_then(|x| x.as_u64());
    let located = start_chars.and_then(|c| {
        let s = context.char_indices().nth(c as usize).map(|(b, _)| b)?;
        context[s..].starts_with(answer).then_some(s)
    });
    match (question.is_empty(), answer.is_empty(), located) {
        (true, _, _) => Err("empty question"),
        (_, true, _) => Err("no answer text"),
        (_, _, None) => Err("answer_start does not point at the answer text"),
        (_, _, Some(s)) => Ok((question, answer, s)),
    }
}

/// The file name of SQuAD article `a`: its number and its title with every character that is
/// not alphanumeric or '-' as '_'.
fn squad_doc_name(a: usize, title: &str) -> String {
    let safe: String = title
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{a:02}-{safe}.txt")
}

/// A corpus directory (or file), a BEIR folder (its corpus.jsonl), or SQuAD-format JSON read as
/// one document per article;
/// `progress` hears of each file read.
pub fn load_corpus(
    path: &Path,
    rules: &super::corpus::CorpusRules,
    progress: &mut dyn FnMut(super::corpus::ReadProgress),
) -> Result<Corpus> {
    // A JSON file given as the corpus is SQuAD: one that does not parse is an error with its
    // line and column, never read as a plain document instead.
    if path.is_file() && path.extension().is_some_and(|e| e == "json") {
        return Cases::from_squad(path).map(|(corpus, _)| corpus);
    }
    Ok(Corpus::load_reporting(path, rules, progress)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_squad_file_is_an_error_with_its_line() {
        let dir = std::env::temp_dir().join(format!("chunkscope-squad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("broken.json");
        std::fs::write(&f, "{\"data\": [\n  {\"title\": \"x\", \"paragraphs\": [\n").unwrap();
        let err = load_corpus(&f, &Default::default(), &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("{}:3:", f.display())), "{err}");
        std::fs::write(&f, "{\"version\": 1}").unwrap();
        let err = load_corpus(&f, &Default::default(), &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(err.contains("no \"data\" array"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn errors_are_matched_by_kind() {
        let dir = std::env::temp_dir().join(format!("chunkscope-cases-err-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("broken.json");
        std::fs::write(&f, "{\"data\": [\n  {\"title\": \"x\", \"paragraphs\": [\n").unwrap();
        assert!(matches!(
            Cases::from_squad(&f),
            Err(CasesError::Json { path, line: 3, .. }) if path == f
        ));
        std::fs::write(&f, "{\"version\": 1}").unwrap();
        assert!(matches!(
            Cases::from_squad(&f),
            Err(CasesError::NotSquad { .. })
        ));
        let missing = dir.join("missing.tsv");
        let err = Cases::from_tsv(&missing, &Corpus::default()).unwrap_err();
        assert!(
            matches!(&err, CasesError::Read { path, .. } if path == &missing),
            "{err:?}"
        );
        assert!(err.to_string().starts_with("cases file "), "{err}");
        let err = load_corpus(&dir.join("nothing"), &Default::default(), &mut |_| {}).unwrap_err();
        assert!(
            matches!(err, CasesError::Corpus(CorpusError::Missing { .. })),
            "{err:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn normalised_location_maps_back_to_bytes() {
        let doc = "Keys are   rotated\nevery NINETY days. Café au lait.";
        let (s, e) = locate(doc, "rotated every ninety").unwrap();
        assert_eq!(&doc[s..e], "rotated\nevery NINETY");
        let (s, e) = locate(doc, "café").unwrap();
        assert_eq!(&doc[s..e], "Café");
        assert!(locate(doc, "missing").is_none());
        assert!(locate(doc, "   ").is_none());
    }

    #[test]
    fn tsv_lines_are_checked_with_line_numbers() {
        let dir = std::env::temp_dir().join(format!("chunkscope-cases-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cases.tsv");
        std::fs::write(
            &path,
            "Q1?\tninety days\n\nno tab here\nQ3?\t\nQ4?\tnot there\nQ5?\tninety days\tb.md\nQ6?\tpro rata\tb.md\n",
        )
        .unwrap();
        let corpus = Corpus {
            docs: vec![
                Document::plain("a.md".into(), "every ninety days".into()),
                Document::plain("b.md".into(), "refunds are pro rata".into()),
            ],
            ..Corpus::default()
        };
        let c = Cases::from_tsv(&path, &corpus).unwrap();
        assert_eq!(
            c.cases.iter().map(|c| c.line).collect::<Vec<_>>(),
            vec![1, 7]
        );
        let bad: Vec<(usize, &str)> = c.bad.iter().map(|b| (b.line, b.reason.as_str())).collect();
        assert_eq!(
            bad,
            vec![
                (3, "no TAB between question and answer"),
                (4, "empty answer span"),
                (5, "answer span found nowhere in the corpus"),
                (6, "answer span not found in b.md"),
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
