//! The corpus: a directory walked read-only into documents, with a visible reason for every file
//! that is skipped or decoded lossily.

use std::fs;
use std::path::{Path, PathBuf};

pub mod convert;
mod decode;
mod names;
mod read;
mod read_error;
mod walk;

pub use decode::{decode, FileOffsets};
pub use names::{name_bytes, name_of};
pub use read::read_document;
pub use read_error::ReadError;
use serde::Serialize;
pub use walk::own_dirs_under;

/// Default include globs: prose and markup, common source and config files.
pub const DEFAULT_INCLUDE: &[&str] = &[
    "*.md",
    "*.markdown",
    "*.mdx",
    "*.txt",
    "*.text",
    "*.rst",
    "*.adoc",
    "*.asciidoc",
    "*.org",
    "*.rs",
    "*.py",
    "*.js",
    "*.jsx",
    "*.ts",
    "*.tsx",
    "*.go",
    "*.java",
    "*.kt",
    "*.scala",
    "*.c",
    "*.h",
    "*.cc",
    "*.cpp",
    "*.hpp",
    "*.cs",
    "*.rb",
    "*.php",
    "*.swift",
    "*.sh",
    "*.sql",
    "*.toml",
    "*.yaml",
    "*.yml",
    "*.json",
    "*.ini",
    "*.cfg",
    "*.conf",
    "*.html",
    "*.htm",
    "*.xhtml",
    "*.xml",
    "*.pdf",
    "*.docx",
];

/// How to walk a corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusRules {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub max_file_bytes: u64,
    /// The limit for documents read by conversion (PDF, DOCX, HTML), whose files are larger
    /// than their text.
    pub max_document_bytes: u64,
    pub gitignore: bool,
}

impl Default for CorpusRules {
    fn default() -> Self {
        CorpusRules {
            include: DEFAULT_INCLUDE.iter().map(|s| s.to_string()).collect(),
            exclude: Vec::new(),
            max_file_bytes: 4 * 1024 * 1024,
            max_document_bytes: 64 * 1024 * 1024,
            gitignore: true,
        }
    }
}

/// One readable file of the corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Path relative to the corpus root, with '/' separators.
    pub path: String,
    pub text: String,
    /// True when invalid UTF-8 was replaced by U+FFFD.
    pub lossy: bool,
    /// Where bytes of `text` lie in the file (a BOM stripped, UTF-16 decoded, invalid UTF-8
    /// replaced); identity for plain UTF-8 and for converted documents (whose offsets index the
    /// converted text).
    pub offsets: FileOffsets,
    /// "text", or the format the text was converted from ("html", "pdf", "docx").
    pub source_format: &'static str,
    /// For paged formats (PDF): the byte offset in `text` where each page starts, page 1 first.
    pub pages: Vec<usize>,
}

impl Document {
    /// A plain text document whose offsets are its own.
    pub fn plain(path: String, text: String) -> Document {
        Document {
            path,
            text,
            lossy: false,
            offsets: FileOffsets::default(),
            source_format: "text",
            pages: Vec::new(),
        }
    }

    /// The pages (1-based, first and last) that the bytes `start..end` of the text lie on, for
    /// paged formats.
    pub fn page_span(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        if self.pages.is_empty() {
            return None;
        }
        let page_of = |b: usize| self.pages.partition_point(|&s| s <= b).max(1);
        Some((page_of(start), page_of(end.saturating_sub(1).max(start))))
    }

    /// True when the text is Markdown: a Markdown file, or a document converted to Markdown.
    pub fn is_markdown(&self) -> bool {
        self.source_format != "text"
            || std::path::Path::new(&self.path)
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| {
                    ["md", "markdown", "mdx"]
                        .iter()
                        .any(|m| e.eq_ignore_ascii_case(m))
                })
    }
}

/// How far a corpus read has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadProgress {
    /// Files read or skipped so far.
    pub files: usize,
    /// Of those, documents converted (PDF, DOCX, HTML).
    pub converted: usize,
}

/// Why a corpus could not be read at all (a file that cannot be read is skipped with its
/// reason instead, in [`Corpus::skipped`]).
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("corpus {}: no such file or folder", path.display())]
    Missing { path: PathBuf },
    #[error("corpus {}: {cause}", path.display())]
    Unreadable {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("corpus {}: not a directory or a regular file (a FIFO, socket or device cannot be read as a corpus)", path.display())]
    NotAFileOrFolder { path: PathBuf },
    /// An include or exclude glob (`key` is `corpus.include` or `corpus.exclude`).
    #[error("{key}: bad glob '{glob}': {cause}")]
    Glob {
        key: &'static str,
        glob: String,
        cause: globset::Error,
    },
    #[error("{key}: {cause}")]
    Globs {
        key: &'static str,
        cause: globset::Error,
    },
    /// A BEIR folder's corpus.jsonl (the error names its line).
    #[error(transparent)]
    Beir(#[from] crate::judgments::JudgmentsError),
}

/// Why a file was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default)]
pub struct Corpus {
    pub root: PathBuf,
    pub docs: Vec<Document>,
    pub skipped: Vec<Skipped>,
}

impl Corpus {
    /// Walk `root` (a directory, or a single file) and read every included file.
    pub fn load(root: &Path, rules: &CorpusRules) -> Result<Corpus, CorpusError> {
        Corpus::load_reporting(root, rules, &mut |_| {})
    }

    /// [`Corpus::load`], telling `progress` after each file read.
    pub fn load_reporting(
        root: &Path,
        rules: &CorpusRules,
        progress: &mut dyn FnMut(ReadProgress),
    ) -> Result<Corpus, CorpusError> {
        let meta = root_metadata(root)?;
        if meta.is_dir() && crate::judgments::is_beir_folder(root) {
            return Corpus::load_beir(root, progress);
        }
        let mut corpus = Corpus {
            root: root.to_path_buf(),
            ..Corpus::default()
        };
        if meta.is_file() {
            let name = root
                .file_name()
                .map(name_of)
                .unwrap_or_else(|| root.display().to_string());
            corpus.read_one(root, name, rules);
        } else {
            corpus.walk(root, rules, progress)?;
        }
        Ok(corpus)
    }

    /// A BEIR folder's `corpus.jsonl`: one plain document per line, named by its `_id`, its text
    /// the title, a blank line and the text (the include, exclude and size rules are for walked
    /// folders and do not apply). A line that cannot be read is an error naming it.
    fn load_beir(
        root: &Path,
        progress: &mut dyn FnMut(ReadProgress),
    ) -> Result<Corpus, CorpusError> {
        let mut docs = Vec::new();
        crate::judgments::each_document(&root.join("corpus.jsonl"), |d| {
            docs.push(d.into_document());
            if docs.len() % 1000 == 0 {
                progress(ReadProgress {
                    files: docs.len(),
                    converted: 0,
                });
            }
        })?;
        Ok(Corpus {
            root: root.to_path_buf(),
            docs,
            skipped: Vec::new(),
        })
    }

    fn skip(&mut self, path: String, reason: &str) {
        self.skipped.push(Skipped {
            path,
            reason: reason.to_string(),
        });
    }

    fn read_one(&mut self, path: &Path, rel: String, rules: &CorpusRules) {
        match read::read_file(path, &rel, rules) {
            Ok(doc) => self.docs.push(doc),
            Err(reason) => self.skipped.push(Skipped {
                path: rel,
                reason: reason.to_string(),
            }),
        }
    }

    /// Files decoded lossily, as notes for the user.
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .skipped
            .iter()
            .map(|s| format!("skipped {}: {}", s.path, s.reason))
            .collect();
        notes.extend(
            self.docs
                .iter()
                .filter(|d| d.lossy)
                .map(|d| format!("{}: invalid UTF-8 replaced by U+FFFD", d.path)),
        );
        notes
    }
}

/// The corpus root's metadata: an error when it is missing, unreadable, or neither a file nor
/// a folder.
fn root_metadata(root: &Path) -> Result<fs::Metadata, CorpusError> {
    let path = root.to_path_buf();
    let meta = match fs::metadata(root) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CorpusError::Missing { path })
        }
        Err(cause) => return Err(CorpusError::Unreadable { path, cause }),
    };
    if !meta.is_file() && !meta.is_dir() {
        return Err(CorpusError::NotAFileOrFolder { path });
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("chunkscope-corpus-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn walks_with_reasons() {
        let d = tmpdir("walk");
        fs::write(d.join("a.md"), "# A\nhello").unwrap();
        fs::write(d.join("b.bin.txt"), b"ab\0cd").unwrap();
        fs::write(d.join("c.txt"), b"caf\xe9 ok").unwrap();
        fs::write(d.join("big.md"), "x".repeat(2000)).unwrap();
        fs::write(d.join("skip.png"), "not included").unwrap();
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("sub/d.rst"), "Title\n=====\n").unwrap();
        fs::write(d.join(".gitignore"), "ignored.md\n").unwrap();
        fs::write(d.join("ignored.md"), "never read").unwrap();
        let rules = CorpusRules {
            max_file_bytes: 1000,
            ..CorpusRules::default()
        };
        let c = Corpus::load(&d, &rules).unwrap();
        let paths: Vec<_> = c.docs.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, vec!["a.md", "c.txt", "sub/d.rst"]);
        assert!(c.docs[1].lossy);
        assert_eq!(c.docs[1].text, "caf\u{fffd} ok");
        let reasons: Vec<_> = c
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), &s.reason[..6]))
            .collect();
        // Every file is accounted for: the .png (not named by the include globs) is listed too.
        assert_eq!(
            reasons,
            vec![
                ("b.bin.txt", "binary"),
                ("big.md", "too la"),
                ("skip.png", "binary")
            ]
        );
        let _ = fs::remove_dir_all(&d);
    }

    /// Files without an extension are read when their content is text; symlinks are followed
    /// (a loop is reported once), special files and binaries are listed with their reason.
    #[cfg(unix)]
    #[test]
    fn every_file_accounted_for() {
        let d = tmpdir("every");
        let outside = tmpdir("every-outside");
        fs::write(d.join("README"), "# Read me\nplain text").unwrap();
        fs::write(d.join("Makefile"), "all:\n\techo hi\n").unwrap();
        fs::write(d.join("cases.tsv"), "q\ta\n").unwrap();
        fs::write(d.join("blob"), b"\x00\x01\x02").unwrap();
        fs::write(outside.join("linked.md"), "# Linked\nfrom outside").unwrap();
        std::os::unix::fs::symlink(outside.join("linked.md"), d.join("link.md")).unwrap();
        fs::create_dir_all(d.join("sub")).unwrap();
        std::os::unix::fs::symlink(&d, d.join("sub/up")).unwrap();
        let fifo = d.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        let c = Corpus::load(&d, &CorpusRules::default()).unwrap();
        let paths: Vec<_> = c.docs.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, vec!["Makefile", "README", "link.md"]);
        let skipped: Vec<(&str, &str)> = c
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), s.reason.split([' ', ':']).next().unwrap()))
            .collect();
        assert!(skipped.contains(&("blob", "binary")), "{skipped:?}");
        assert!(
            skipped.contains(&("cases.tsv", "evaluation")),
            "{skipped:?}"
        );
        assert!(skipped.contains(&("sub/up", "symlink")), "{skipped:?}");
        if made.is_ok_and(|s| s.success()) {
            assert!(skipped.contains(&("pipe", "special")), "{skipped:?}");
            let err = Corpus::load(&fifo, &CorpusRules::default()).unwrap_err();
            assert!(
                err.to_string()
                    .contains("not a directory or a regular file"),
                "{err}"
            );
        }
        let _ = fs::remove_dir_all(&d);
        let _ = fs::remove_dir_all(&outside);
    }

    #[test]
    fn names_that_are_not_utf8_are_escaped_and_map_back() {
        use std::os::unix::ffi::OsStrExt;
        let d = tmpdir("names");
        let raw: &[u8] = b"caf\xe9 a\\b.txt";
        let name = std::ffi::OsStr::from_bytes(raw);
        fs::write(d.join(name), "un caf\u{e9}").unwrap();
        fs::write(d.join("caf\u{e9}.txt"), "utf-8 name").unwrap();
        let c = Corpus::load(&d, &CorpusRules::default()).unwrap();
        let paths: Vec<_> = c.docs.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, vec!["caf\u{e9}.txt", "caf\\xE9 a\\\\b.txt"]);
        assert_eq!(name_bytes(paths[1]), raw);
        assert!(d
            .join(std::ffi::OsStr::from_bytes(&name_bytes(paths[1])))
            .is_file());
        assert_eq!(name_bytes(paths[0]), "caf\u{e9}.txt".as_bytes());
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_document_without_an_extension_is_found_by_its_bytes() {
        let d = tmpdir("doc-by-bytes");
        fs::write(d.join("manual"), b"%PDF-1.4\nnot really a PDF").unwrap();
        fs::write(d.join("notes"), "plain text").unwrap();
        let c = Corpus::load(&d, &CorpusRules::default()).unwrap();
        let paths: Vec<_> = c.docs.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, vec!["notes"]);
        assert_eq!(c.skipped.len(), 1, "{:?}", c.skipped);
        assert_eq!(c.skipped[0].path, "manual");
        assert!(c.skipped[0].reason.contains("PDF"), "{:?}", c.skipped);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_beir_folder_is_read_from_its_corpus_jsonl() {
        let d = tmpdir("beir");
        fs::create_dir_all(d.join("qrels")).unwrap();
        fs::write(
            d.join("queries.jsonl"),
            "{\"_id\": \"q1\", \"text\": \"q\"}\n",
        )
        .unwrap();
        fs::write(
            d.join("corpus.jsonl"),
            "{\"_id\": \"d1\", \"title\": \"Keys\", \"text\": \"Rotate them.\"}\n\
             {\"_id\": 7, \"title\": \"\", \"text\": \"No title.\"}\n",
        )
        .unwrap();
        fs::write(d.join("notes.md"), "not read: the folder is a BEIR folder").unwrap();
        let c = Corpus::load(&d, &CorpusRules::default()).unwrap();
        let docs: Vec<(&str, &str)> = c
            .docs
            .iter()
            .map(|d| (d.path.as_str(), d.text.as_str()))
            .collect();
        assert_eq!(docs, [("d1", "Keys\n\nRotate them."), ("7", "No title.")]);
        assert!(c.skipped.is_empty());
        fs::write(d.join("corpus.jsonl"), "{\"_id\": \"d1\"}\n").unwrap();
        let err = format!(
            "{:#}",
            Corpus::load(&d, &CorpusRules::default()).unwrap_err()
        );
        assert!(
            err.contains("corpus.jsonl:1: missing field `text`"),
            "{err}"
        );
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn missing_root_is_an_error_naming_it() {
        let err =
            Corpus::load(Path::new("/nonexistent/corpus"), &CorpusRules::default()).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/corpus"));
        assert!(
            matches!(&err, CorpusError::Missing { path } if path == Path::new("/nonexistent/corpus")),
            "{err:?}"
        );
    }

    #[test]
    fn a_bad_glob_names_its_key() {
        let d = tmpdir("bad-glob");
        let rules = CorpusRules {
            exclude: vec!["a[".into()],
            ..CorpusRules::default()
        };
        let err = Corpus::load(&d, &rules).unwrap_err();
        assert!(
            matches!(&err, CorpusError::Glob { key: "corpus.exclude", glob, .. } if glob == "a["),
            "{err:?}"
        );
        assert!(
            err.to_string().starts_with("corpus.exclude: bad glob 'a['"),
            "{err}"
        );
        // A BEIR line that cannot be read keeps the judgments reader's own error.
        fs::create_dir_all(d.join("qrels")).unwrap();
        fs::write(d.join("queries.jsonl"), "").unwrap();
        fs::write(d.join("corpus.jsonl"), "{").unwrap();
        let err = Corpus::load(&d, &CorpusRules::default()).unwrap_err();
        assert!(matches!(err, CorpusError::Beir(_)), "{err:?}");
        let _ = fs::remove_dir_all(&d);
    }
}
