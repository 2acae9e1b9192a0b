//! A wiki-sized corpus for `chunkscope-bench scale`: many Markdown and text files of unique prose,
//! made deterministically (seeded) from the example corpus, the seed articles and XQuAD's
//! Wikipedia contexts (in English, Spanish and Chinese, when the shared data is there). Each file
//! is a title and a few sections, each section a run of paragraphs from one source with about a
//! tenth of its words swapped for other words of the sources, so no two files are alike and no
//! cache can shortcut them.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use chunkscope_core::cases::Cases;
use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::index::ann::XorShift;

/// Files average about this many bytes (about 10,000 files at 100 MB, like a wiki).
const MEAN_FILE_BYTES: usize = 10_000;

/// What was written.
pub struct WikiCorpus {
    pub files: usize,
    pub bytes: usize,
    /// The sources, in words ("examples (8 files), seeds (4), XQuAD en/es/zh (144 articles)").
    pub sources: String,
}

/// The shared data folder (seed articles, XQuAD): `CHUNKSCOPE_SHARED`, else ../shared beside the
/// repository, as the tests find it.
pub fn default_shared() -> PathBuf {
    std::env::var_os("CHUNKSCOPE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::common::examples().join("../../shared"))
}

/// A source document as paragraphs.
struct Source {
    paragraphs: Vec<String>,
}

fn paragraphs(text: &str) -> Vec<String> {
    text.split("\n\n")
        .map(str::trim)
        // Prose only: a paragraph cut out of a code fence would leave the fence open.
        .filter(|p| p.chars().count() >= 40 && !p.contains("```"))
        .map(String::from)
        .collect()
}

/// The example corpus, and the seed articles and XQuAD contexts under `shared` where present.
fn sources(shared: Option<&Path>) -> Result<(Vec<Source>, String)> {
    let mut out = Vec::new();
    let mut said = Vec::new();
    let mut add = |docs: Vec<String>, what: &str| {
        let before = out.len();
        out.extend(
            docs.iter()
                .map(|t| Source {
                    paragraphs: paragraphs(t),
                })
                .filter(|s| !s.paragraphs.is_empty()),
        );
        if out.len() > before {
            said.push(format!("{what} ({})", out.len() - before));
        }
    };
    let examples = Corpus::load(&crate::common::examples(), &CorpusRules::default())?;
    add(
        examples.docs.into_iter().map(|d| d.text).collect(),
        "examples",
    );
    if let Some(shared) = shared {
        if let Ok(seeds) = Corpus::load(&shared.join("seeds"), &CorpusRules::default()) {
            add(
                seeds.docs.into_iter().map(|d| d.text).collect(),
                "seed articles",
            );
        }
        for lang in ["en", "es", "zh"] {
            let p = shared.join(format!("data/xquad/xquad.{lang}.json"));
            if let Ok((corpus, _)) = Cases::from_squad(&p) {
                add(
                    corpus.docs.into_iter().map(|d| d.text).collect(),
                    &format!("XQuAD {lang} articles"),
                );
            }
        }
    }
    if out.is_empty() {
        bail!("no source paragraphs to build a corpus from");
    }
    Ok((out, said.join(", ")))
}

/// Words of the sources that can stand in for others: letters only, 3 to 15 of them.
fn vocabulary(sources: &[Source]) -> Vec<String> {
    let mut words: Vec<String> = sources
        .iter()
        .flat_map(|s| s.paragraphs.iter())
        .flat_map(|p| p.split_whitespace())
        .filter(|w| (3..=15).contains(&w.chars().count()) && w.chars().all(char::is_alphabetic))
        .map(String::from)
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

fn pick(rng: &mut XorShift, n: usize) -> usize {
    (rng.next_u64() % n.max(1) as u64) as usize
}

/// `p` with about one word in ten swapped for a word of `vocab`; line breaks are kept.
fn vary(p: &str, vocab: &[String], rng: &mut XorShift, out: &mut String) {
    for (l, line) in p.lines().enumerate() {
        if l > 0 {
            out.push('\n');
        }
        for (i, w) in line.split(' ').enumerate() {
            if i > 0 {
                out.push(' ');
            }
            if !vocab.is_empty() && pick(rng, 10) == 0 && w.chars().all(char::is_alphabetic) {
                out.push_str(&vocab[pick(rng, vocab.len())]);
            } else {
                out.push_str(w);
            }
        }
    }
}

/// The first words of a paragraph, as a title or heading.
fn heading(p: &str, words: usize) -> String {
    let h: Vec<&str> = p.split_whitespace().take(words).collect();
    let h = h.join(" ");
    // CJK text has no spaces: bound the heading by characters too.
    h.chars()
        .take(60)
        .collect::<String>()
        .trim_start_matches('#')
        .trim()
        .to_string()
}

/// File `i`: a title, then sections of varied paragraphs until about its drawn size.
fn file_text(i: usize, sources: &[Source], vocab: &[String], rng: &mut XorShift) -> String {
    let target = 2_000 + pick(rng, 2 * (MEAN_FILE_BYTES - 2_000));
    let first = &sources[pick(rng, sources.len())];
    let mut text = format!(
        "# {} ({i})\n\n",
        heading(&first.paragraphs[pick(rng, first.paragraphs.len())], 6)
    );
    while text.len() < target {
        let s = &sources[pick(rng, sources.len())];
        let start = pick(rng, s.paragraphs.len());
        let run = 1 + pick(rng, 5);
        text.push_str(&format!("## {}\n\n", heading(&s.paragraphs[start], 5)));
        for p in s.paragraphs.iter().skip(start).take(run) {
            vary(p, vocab, rng, &mut text);
            text.push_str("\n\n");
        }
    }
    text
}

/// Write a corpus of about `megabytes` MB into `dir` (emptied first), drawn with `seed`.
pub fn generate(
    dir: &Path,
    megabytes: usize,
    shared: Option<&Path>,
    seed: u64,
) -> Result<WikiCorpus> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let (sources, said) = sources(shared)?;
    let vocab = vocabulary(&sources);
    let target = megabytes.max(1) * 1024 * 1024;
    let (mut bytes, mut files) = (0usize, 0usize);
    while bytes < target {
        let mut rng = XorShift::new(seed ^ (files as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let text = file_text(files, &sources, &vocab, &mut rng);
        // One in five a plain text file, the rest Markdown; a hundred files a folder.
        let ext = if pick(&mut rng, 5) == 0 { "txt" } else { "md" };
        let folder = dir.join(format!("topic{:03}", files / 100));
        if files % 100 == 0 {
            std::fs::create_dir_all(&folder)?;
        }
        std::fs::write(folder.join(format!("page{files:05}.{ext}")), &text)?;
        bytes += text.len();
        files += 1;
    }
    Ok(WikiCorpus {
        files,
        bytes,
        sources: said,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_unique_and_the_same_every_run() {
        let a = crate::common::TempDir::new("wiki-test-a");
        let b = crate::common::TempDir::new("wiki-test-b");
        let made = generate(&a.0, 1, None, 7).unwrap();
        generate(&b.0, 1, None, 7).unwrap();
        assert!(made.files > 50, "{} files", made.files);
        assert!(made.bytes >= 1024 * 1024);
        let corpus = Corpus::load(&a.0, &CorpusRules::default()).unwrap();
        assert_eq!(corpus.docs.len(), made.files);
        let mut texts: Vec<&str> = corpus.docs.iter().map(|d| d.text.as_str()).collect();
        let again = Corpus::load(&b.0, &CorpusRules::default()).unwrap();
        assert!(corpus
            .docs
            .iter()
            .zip(&again.docs)
            .all(|(x, y)| x.text == y.text));
        texts.sort_unstable();
        texts.dedup();
        assert_eq!(texts.len(), made.files, "every file differs");
    }
}
