//! The corpus: a directory walked read-only into documents, with a visible reason for every file
//! that is skipped or decoded lossily.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

pub mod convert;
mod decode;

use decode::utf16_units;
pub use decode::{decode, FileOffsets};
use globset::{Glob, GlobSet, GlobSetBuilder};
use ignore::WalkBuilder;
use serde::Serialize;

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

/// Extensions of formats that are never plain text and not converted (images, archives, office
/// documents other than DOCX, media, fonts, compiled code, model weights): listed as skipped
/// without being read.
const BINARY_EXTENSIONS: &[&str] = &[
    "png",
    "jpg",
    "jpeg",
    "gif",
    "bmp",
    "ico",
    "webp",
    "tif",
    "tiff",
    "heic",
    "doc",
    "xls",
    "xlsx",
    "ppt",
    "pptx",
    "odt",
    "ods",
    "odp",
    "epub",
    "zip",
    "gz",
    "tgz",
    "bz2",
    "xz",
    "zst",
    "7z",
    "rar",
    "tar",
    "jar",
    "war",
    "class",
    "so",
    "dll",
    "dylib",
    "exe",
    "bin",
    "o",
    "a",
    "obj",
    "wasm",
    "pyc",
    "woff",
    "woff2",
    "ttf",
    "otf",
    "eot",
    "mp3",
    "mp4",
    "wav",
    "ogg",
    "flac",
    "mov",
    "avi",
    "mkv",
    "webm",
    "sqlite",
    "db",
    "parquet",
    "npy",
    "npz",
    "pt",
    "safetensors",
    "onnx",
    "gguf",
];

/// Bytes sniffed to tell text from binary.
const SNIFF_BYTES: usize = 8192;

/// The folders chunkscope itself writes (its cache: embeddings, models, sentence vectors, the
/// log) that lie inside `root`, as paths under `root` as given: never read as corpus files, and
/// their changes are not corpus changes.
pub fn own_dirs_under(root: &Path) -> Vec<PathBuf> {
    let (Ok(root_c), Ok(cache)) = (
        std::fs::canonicalize(root),
        std::fs::canonicalize(crate::model::cache_root()),
    ) else {
        return Vec::new();
    };
    cache
        .strip_prefix(&root_c)
        .map(|rel| vec![root.join(rel)])
        .unwrap_or_default()
}

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
        let mut corpus = Corpus {
            root: root.to_path_buf(),
            ..Corpus::default()
        };
        if meta.is_dir() && crate::judgments::is_beir_folder(root) {
            return Corpus::load_beir(root, progress);
        }
        if meta.is_file() {
            let name = root
                .file_name()
                .map(name_of)
                .unwrap_or_else(|| root.display().to_string());
            corpus.read_one(root, name, rules);
            return Ok(corpus);
        }
        let include = glob_set(&rules.include, "corpus.include")?;
        let exclude = glob_set(&rules.exclude, "corpus.exclude")?;
        // Include/exclude are checked per file, after .gitignore: overrides in the walker would
        // take precedence over ignore files.
        let own = own_dirs_under(root);
        let walker = WalkBuilder::new(root)
            .filter_entry(move |e| !own.iter().any(|o| e.path().starts_with(o)))
            .git_ignore(rules.gitignore)
            .git_exclude(rules.gitignore)
            .git_global(false)
            .ignore(rules.gitignore)
            .require_git(false)
            .hidden(true)
            // Symlinks to files and folders are followed (inside or outside the root); a link
            // back up the tree is reported as a loop, not followed again.
            .follow_links(true)
            .sort_by_file_path(|a, b| a.cmp(b))
            .build();
        let mut converted = 0;
        let mut seen_docs = 0;
        for entry in walker {
            // Documents converted so far, tallied as they are read.
            converted += corpus.docs[seen_docs..]
                .iter()
                .filter(|d| d.source_format != "text")
                .count();
            seen_docs = corpus.docs.len();
            progress(ReadProgress {
                files: corpus.docs.len() + corpus.skipped.len(),
                converted,
            });
            match entry {
                Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => {
                    let rel = relative(root, e.path());
                    if exclude.is_match(&rel) {
                        continue;
                    }
                    if include.is_match(&rel) {
                        corpus.read_one(e.path(), rel, rules);
                    } else if rel == "cases.tsv" {
                        corpus.skip(rel, "evaluation cases (read by eval, not a document)");
                    } else {
                        // Not named by an include glob: read when its content is text
                        // (README, Makefile, LICENSE, ...), else say what it is.
                        match sniff(e.path()) {
                            Ok(()) => corpus.read_one(e.path(), rel, rules),
                            Err(reason) => corpus.skip(rel, &reason),
                        }
                    }
                }
                Ok(e) if e.file_type().is_some_and(|t| !t.is_dir()) => {
                    let rel = relative(root, e.path());
                    corpus.skip(rel, "special file (FIFO, socket or device): not read");
                }
                Ok(_) => {}
                Err(err) => {
                    let path = err_path(&err)
                        .map(|p| relative(root, &p))
                        .unwrap_or_default();
                    let reason = if is_loop(&err) {
                        format!("symlink loop, not followed again: {err}")
                    } else {
                        format!("unreadable: {err}")
                    };
                    corpus.skip(path, &reason);
                }
            }
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
        let document = |format: convert::Format, bytes: Vec<u8>| {
            // A converted document's offsets index its converted text.
            convert::convert(format, &bytes).map(|c| Document {
                path: rel.clone(),
                text: c.text.clone(),
                lossy: c.lossy,
                offsets: FileOffsets::default(),
                source_format: format.name(),
                pages: c.pages.clone(),
            })
        };
        let from_disk = |format: convert::Format| {
            read_bytes(path, rules.max_document_bytes, "max_document_bytes")
                .and_then(|bytes| document(format, bytes))
        };
        // The format by extension; else the file is read once and its first bytes say whether
        // it is a document after all (a PDF or DOCX without an extension).
        let read = match convert::format_of(path, &[]) {
            Some(format) => from_disk(format),
            None => match read_bytes(path, rules.max_file_bytes, "max_file_bytes") {
                Ok(bytes) => match convert::format_of(path, &bytes[..bytes.len().min(SNIFF_BYTES)])
                {
                    Some(format) => document(format, bytes),
                    None => text_document(&bytes).map(|(text, offsets, lossy)| Document {
                        offsets,
                        lossy,
                        ..Document::plain(rel.clone(), text)
                    }),
                },
                // Over the text limit: a document may still be within its own.
                Err(too_large) => match convert::format_of(path, &head_bytes(path)) {
                    Some(format) => from_disk(format),
                    None => Err(too_large),
                },
            },
        };
        match read {
            Ok(doc) => self.docs.push(doc),
            Err(reason) => self.skipped.push(Skipped { path: rel, reason }),
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

/// Read a file, refusing binary and oversized ones with a reason a user can act on.
pub fn read_document(path: &Path, max_bytes: u64) -> Result<(String, FileOffsets, bool), String> {
    text_document(&read_bytes(path, max_bytes, "max_file_bytes")?)
}

/// A file's bytes as text, refused as binary when its first bytes hold a NUL (UTF-16 aside).
fn text_document(bytes: &[u8]) -> Result<(String, FileOffsets, bool), String> {
    if utf16_units(bytes).is_none() && bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        return Err("binary: contains NUL bytes".into());
    }
    Ok(decode(bytes))
}

/// A file's bytes, up to `max_bytes` (the `corpus.KEY` limit named in the reason).
fn read_bytes(path: &Path, max_bytes: u64, key: &str) -> Result<Vec<u8>, String> {
    let mut file = fs::File::open(path).map_err(|e| format!("unreadable: {e}"))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > max_bytes {
        return Err(format!("too large: {len} bytes > corpus.{key} {max_bytes}"));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.by_ref()
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("unreadable: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("too large: over corpus.{key} {max_bytes}"));
    }
    Ok(bytes)
}

/// The first bytes of a file (empty when it cannot be read; reading it later says why).
fn head_bytes(path: &Path) -> Vec<u8> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    let _ = fs::File::open(path).and_then(|f| f.take(SNIFF_BYTES as u64).read_to_end(&mut head));
    head
}

/// Ok when a file not named by the include globs is a document format (by content) or looks
/// like text: not a known binary format and no NUL byte in its first bytes. Else the reason it
/// is skipped.
fn sniff(path: &Path) -> Result<(), String> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let head = head_bytes(path);
    if convert::format_of(path, &head).is_some() {
        return Ok(());
    }
    if let Some(ext) = ext.filter(|e| BINARY_EXTENSIONS.contains(&e.as_str())) {
        return Err(format!("binary format (.{ext}): not read"));
    }
    fs::File::open(path).map_err(|e| format!("unreadable: {e}"))?;
    if utf16_units(&head).is_none() && head.contains(&0) {
        return Err("binary: contains NUL bytes".into());
    }
    Ok(())
}

fn is_loop(err: &ignore::Error) -> bool {
    match err {
        ignore::Error::Loop { .. } => true,
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => is_loop(err),
        _ => false,
    }
}

fn glob_set(globs: &[String], key: &'static str) -> Result<GlobSet, CorpusError> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        b.add(Glob::new(g).map_err(|cause| CorpusError::Glob {
            key,
            glob: g.clone(),
            cause,
        })?);
    }
    b.build().map_err(|cause| CorpusError::Globs { key, cause })
}

fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| name_of(c.as_os_str()))
        .collect::<Vec<_>>()
        .join("/")
}

/// A file name as text. A name that is not UTF-8 is written with each byte that is not part of
/// a UTF-8 character as `\xNN` and each backslash doubled, so the text maps back to the bytes
/// ([`name_bytes`]); UTF-8 names are kept as they are.
pub fn name_of(name: &std::ffi::OsStr) -> String {
    if let Some(s) = name.to_str() {
        return s.to_string();
    }
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for chunk in name.as_bytes().utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// The bytes of a name written by [`name_of`] (escapes undone when it has any `\x`).
pub fn name_bytes(text: &str) -> Vec<u8> {
    if !text.contains("\\x") {
        return text.as_bytes().to_vec();
    }
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'\\', Some(b'\\')) => {
                out.push(b'\\');
                i += 2;
            }
            (b'\\', Some(b'x')) if i + 4 <= b.len() => {
                match u8::from_str_radix(&text[i + 2..i + 4], 16) {
                    Ok(v) => out.push(v),
                    Err(_) => out.extend_from_slice(&b[i..i + 4]),
                }
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

fn err_path(err: &ignore::Error) -> Option<PathBuf> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::Loop { child, .. } => Some(child.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            err_path(err)
        }
        _ => None,
    }
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
