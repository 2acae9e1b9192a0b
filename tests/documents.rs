//! PDF and DOCX read as Markdown: documents made from the example Markdown by real producers
//! (fpdf2 and python-docx, through Python-Markdown's HTML), checked against the Markdown they
//! were made from and against a reference PDF extractor (pypdf).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use chunkscope_core::chunk::{ChunkSettings, Preset};
use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::engine::Engine;
use proptest::prelude::*;

const SOURCES: &[&str] = &[
    "README.md",
    "guides/incident-handbook.md",
    "policy/refunds.md",
    "runbooks/rotate-keys.md",
];

struct Made {
    dir: PathBuf,
    /// Per source: its name (file stem) and pypdf's text of each page of its PDF.
    pdf_pages: Vec<(String, Vec<String>)>,
}

impl Drop for Made {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The example Markdown next to the PDF and DOCX made from it, in a fresh folder.
fn make_documents(test: &str) -> Option<Made> {
    if !common::python_module_or_skip(test, "markdown, fpdf, docx, pypdf") {
        return None;
    }
    let dir = std::env::temp_dir().join(format!("chunkscope-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ex = common::repo().join("examples");
    let docs: Vec<serde_json::Value> = SOURCES
        .iter()
        .map(|p| {
            let md = std::fs::read_to_string(ex.join(p)).unwrap();
            let name = Path::new(p).file_stem().unwrap().to_str().unwrap();
            std::fs::write(dir.join(format!("{name}.md")), &md).unwrap();
            serde_json::json!({ "name": name, "markdown": md })
        })
        .collect();
    let made = common::python(
        "md_to_docs.py",
        &serde_json::json!({ "out": dir, "docs": docs }),
    );
    let pdf_pages = made["docs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(SOURCES)
        .map(|(d, p)| {
            let name = Path::new(p).file_stem().unwrap().to_str().unwrap();
            let pages = d["pdf_pages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_string())
                .collect();
            (name.to_string(), pages)
        })
        .collect();
    Some(Made { dir, pdf_pages })
}

fn engine(dir: &Path) -> Engine {
    let corpus = Corpus::load(dir, &CorpusRules::default()).unwrap();
    assert!(corpus.skipped.is_empty(), "{:?}", corpus.skipped);
    Engine::new(common::model().clone(), common::tokenizer(), corpus).unwrap()
}

/// Words as the recall measure counts them: lowercase runs of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Share of the reference's words (with multiplicity) that our text has too.
fn recall(reference: &str, ours: &str) -> f64 {
    let mut have: HashMap<String, usize> = HashMap::new();
    for w in words(ours) {
        *have.entry(w).or_default() += 1;
    }
    let want = words(reference);
    let found = want
        .iter()
        .filter(|w| {
            let n = have.entry((*w).clone()).or_default();
            if *n > 0 {
                *n -= 1;
                true
            } else {
                false
            }
        })
        .count();
    found as f64 / want.len().max(1) as f64
}

#[test]
fn pdf_text_per_page_matches_a_reference_extractor() {
    let Some(made) = make_documents("pdf_text_per_page_matches_a_reference_extractor") else {
        return;
    };
    let engine = engine(&made.dir);
    for (name, pages) in &made.pdf_pages {
        let doc = engine
            .corpus
            .docs
            .iter()
            .find(|d| d.path == format!("{name}.pdf"))
            .unwrap();
        assert_eq!(doc.source_format, "pdf");
        assert_eq!(doc.pages.len(), pages.len(), "{name}: pages");
        for (i, reference) in pages.iter().enumerate() {
            let start = doc.pages[i];
            let end = doc.pages.get(i + 1).copied().unwrap_or(doc.text.len());
            let r = recall(reference, &doc.text[start..end]);
            assert!(r >= 0.97, "{name} page {}: word recall {r:.3}", i + 1);
        }
    }
}

/// A line of the reference's page found in our text lies on that page, and the chunk holding it
/// says so (page_start..=page_end).
#[test]
fn known_sentences_report_their_page() {
    let Some(made) = make_documents("known_sentences_report_their_page") else {
        return;
    };
    let engine = engine(&made.dir);
    let mut s = ChunkSettings::default();
    Preset::Markdown.apply(&mut s);
    let c = engine.chunk_all(&s, &AtomicBool::new(false)).unwrap();
    let mut checked = 0;
    for (name, pages) in &made.pdf_pages {
        let path = format!("{name}.pdf");
        let f = c
            .files
            .iter()
            .find(|f| engine.corpus.docs[f.doc].path == path)
            .unwrap();
        let doc = &engine.corpus.docs[f.doc];
        for (i, reference) in pages.iter().enumerate() {
            for line in reference.lines().filter(|l| l.len() >= 40) {
                let found: Vec<_> = doc.text.match_indices(line.trim()).collect();
                let [(at, _)] = found[..] else { continue };
                assert_eq!(
                    doc.page_span(at, at + line.trim().len()),
                    Some((i + 1, i + 1)),
                    "{path}: {line:?}"
                );
                let chunk = f
                    .chunks
                    .iter()
                    .find(|ch| ch.start() <= at && at < ch.end())
                    .unwrap();
                let (a, b) = doc.page_span(chunk.start(), chunk.end()).unwrap();
                let page = i + 1;
                assert!((a..=b).contains(&page), "{path}: chunk pages {a}-{b}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} reference lines were found");
}

/// Heading paths of the chunks of DOCX and PDF files equal those of the Markdown they were made
/// from, in the same order.
#[test]
fn docx_and_pdf_keep_the_markdown_headings() {
    let Some(made) = make_documents("docx_and_pdf_keep_the_markdown_headings") else {
        return;
    };
    let engine = engine(&made.dir);
    let mut s = ChunkSettings::default();
    Preset::Markdown.apply(&mut s);
    let c = engine.chunk_all(&s, &AtomicBool::new(false)).unwrap();
    let headings = |path: &str| common::heading_paths(&engine, &c, path);
    for (name, _) in &made.pdf_pages {
        let md = headings(&format!("{name}.md"));
        assert!(md.len() > 1, "{name} has sections");
        assert_eq!(headings(&format!("{name}.docx")), md, "{name}.docx");
        let ascii = |v: Vec<String>| -> Vec<String> {
            v.iter()
                .map(|h| h.chars().filter(char::is_ascii_alphanumeric).collect())
                .collect()
        };
        // The PDF's core fonts spell non-Latin-1 characters out (an em dash as "-").
        assert_eq!(
            ascii(headings(&format!("{name}.pdf"))),
            ascii(md),
            "{name}.pdf"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Chunk offsets of converted documents stay on character boundaries of the converted text,
    /// whatever the chunking.
    #[test]
    fn converted_chunks_stay_on_char_boundaries(size in 20usize..400, overlap in 0usize..19, strategy in 0usize..3) {
        // Without the producers, make_documents printed the SKIP line (a failure under CI).
        let Some(engine) = converted_engine() else { return Ok(()) };
        let mut s = ChunkSettings::default();
        match strategy {
            0 => Preset::Markdown.apply(&mut s),
            1 => Preset::LangchainChars.apply(&mut s),
            _ => Preset::LangchainTokens.apply(&mut s),
        }
        s.size = size;
        s.overlap = overlap.min(size / 2);
        let c = engine.chunk_all(&s, &AtomicBool::new(false)).unwrap();
        for f in &c.files {
            let doc = &engine.corpus.docs[f.doc];
            if doc.source_format == "text" {
                continue;
            }
            for ch in f.chunks.iter() {
                prop_assert!(doc.text.is_char_boundary(ch.start()), "{} {}", doc.path, ch.start());
                prop_assert!(doc.text.is_char_boundary(ch.end()), "{} {}", doc.path, ch.end());
                if let Some((a, b)) = doc.page_span(ch.start(), ch.end()) {
                    prop_assert!(1 <= a && a <= b && b <= doc.pages.len());
                }
            }
        }
    }
}

/// One engine over the made documents for every proptest case (made once).
fn converted_engine() -> Option<&'static Engine> {
    static ENGINE: std::sync::OnceLock<Option<Engine>> = std::sync::OnceLock::new();
    ENGINE
        .get_or_init(|| {
            make_documents("converted_chunks_stay_on_char_boundaries").map(|m| engine(&m.dir))
        })
        .as_ref()
}

/// The headless exports carry the format and pages: JSONL `source_format`, `page_start` and
/// `page_end` (null for unpaged documents), and `p. N` on query hits.
#[test]
fn exports_carry_format_and_pages() {
    let Some(made) = make_documents("exports_carry_format_and_pages") else {
        return;
    };
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_chunkscope"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let dir = made.dir.to_str().unwrap();
    let jsonl = run(&["chunks", dir, "--format", "jsonl", "--preset", "markdown"]);
    let mut seen = HashMap::<String, usize>::new();
    for line in jsonl.lines() {
        let c: serde_json::Value = serde_json::from_str(line).unwrap();
        let format = c["source_format"].as_str().unwrap().to_string();
        let file = c["file"].as_str().unwrap();
        match format.as_str() {
            "pdf" => {
                let (a, b) = (
                    c["page_start"].as_u64().unwrap(),
                    c["page_end"].as_u64().unwrap(),
                );
                assert!(1 <= a && a <= b, "{file}: pages {a}-{b}");
            }
            _ => assert!(
                c["page_start"].is_null() && c["page_end"].is_null(),
                "{file}"
            ),
        }
        assert!(file.ends_with(&format!(
            ".{}",
            if format == "text" { "md" } else { &format }
        )));
        *seen.entry(format).or_default() += 1;
    }
    for f in ["pdf", "docx", "text"] {
        assert!(seen.get(f).is_some_and(|&n| n > 0), "{f}: {seen:?}");
    }
    let hits = run(&["query", dir, "merchant webhook secrets", "--k", "10"]);
    assert!(
        hits.lines()
            .any(|l| l.contains(".pdf #") && l.contains(" p. ")),
        "{hits}"
    );
}
