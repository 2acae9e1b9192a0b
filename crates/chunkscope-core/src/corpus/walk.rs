//! Walking a corpus folder: .gitignore honoured, include and exclude globs, chunkscope's own
//! folders left out, every file read or skipped with a reason.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use ignore::WalkBuilder;

use super::names::relative;
use super::read::sniff;
use super::{Corpus, CorpusError, CorpusRules, ReadProgress};

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

impl Corpus {
    /// Walk the folder `root`, reading every included file (and every other file whose content
    /// is text) in path order.
    pub(super) fn walk(
        &mut self,
        root: &Path,
        rules: &CorpusRules,
        progress: &mut dyn FnMut(ReadProgress),
    ) -> Result<(), CorpusError> {
        let globs = Globs {
            include: glob_set(&rules.include, "corpus.include")?,
            exclude: glob_set(&rules.exclude, "corpus.exclude")?,
        };
        let mut converted = 0;
        let mut seen_docs = 0;
        for entry in walker(root, rules) {
            // Documents converted so far, tallied as they are read.
            converted += self.docs[seen_docs..]
                .iter()
                .filter(|d| d.source_format != "text")
                .count();
            seen_docs = self.docs.len();
            progress(ReadProgress {
                files: self.docs.len() + self.skipped.len(),
                converted,
            });
            match entry {
                Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => {
                    self.take_file(root, e.path(), &globs, rules)
                }
                Ok(e) if e.file_type().is_some_and(|t| !t.is_dir()) => {
                    let rel = relative(root, e.path());
                    self.skip(rel, "special file (FIFO, socket or device): not read");
                }
                Ok(_) => {}
                Err(err) => self.skip_unwalkable(root, &err),
            }
        }
        Ok(())
    }

    /// A regular file met by the walk: left out when excluded, read when included, else read
    /// only when its content is text.
    fn take_file(&mut self, root: &Path, path: &Path, globs: &Globs, rules: &CorpusRules) {
        let rel = relative(root, path);
        if globs.exclude.is_match(&rel) {
            return;
        }
        if globs.include.is_match(&rel) {
            self.read_one(path, rel, rules);
        } else if rel == "cases.tsv" {
            self.skip(rel, "evaluation cases (read by eval, not a document)");
        } else {
            // Not named by an include glob: read when its content is text
            // (README, Makefile, LICENSE, ...), else say what it is.
            match sniff(path) {
                Ok(()) => self.read_one(path, rel, rules),
                Err(reason) => self.skip(rel, &reason.to_string()),
            }
        }
    }

    /// An entry the walk could not read (or a symlink loop), skipped with the reason.
    fn skip_unwalkable(&mut self, root: &Path, err: &ignore::Error) {
        let path = err_path(err)
            .map(|p| relative(root, &p))
            .unwrap_or_default();
        let reason = if is_loop(err) {
            format!("symlink loop, not followed again: {err}")
        } else {
            format!("unreadable: {err}")
        };
        self.skip(path, &reason);
    }
}

/// The include and exclude globs of a walk.
struct Globs {
    include: GlobSet,
    exclude: GlobSet,
}

/// The walker over `root` in path order. Include/exclude are checked per file, after
/// .gitignore: overrides in the walker would take precedence over ignore files.
fn walker(root: &Path, rules: &CorpusRules) -> ignore::Walk {
    let own = own_dirs_under(root);
    WalkBuilder::new(root)
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
        .build()
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
