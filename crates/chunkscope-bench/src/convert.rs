//! Document conversion: MB/s per format on documents made from the example Markdown by real
//! producers, and for PDF the reference extractor's (pypdf) speed and our per-page word recall
//! against it, in one run.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};

use chunkscope_core::corpus::convert::{convert_uncached, Format};
use chunkscope_core::corpus::{Corpus, CorpusRules};

use crate::common::{python_json, Script, TempDir};

const MD_TO_DOCS: Script = Script {
    name: "md_to_docs.py",
    source: include_str!("../../../tests/reference/md_to_docs.py"),
};

const PDF_REFERENCE: Script = Script {
    name: "pdf_reference.py",
    source: include_str!("../../../tests/reference/pdf_reference.py"),
};

pub fn convert(py: &str, copies: usize, out: &mut dyn Write) -> Result<()> {
    let hint = "the Python needs markdown, fpdf2, python-docx and pypdf (scripts/test.sh installs them into .venv)";
    let dir = TempDir::new("bench-convert");
    std::fs::create_dir_all(&dir.0)?;
    let examples = Corpus::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples"),
        &CorpusRules::default(),
    )?;
    // One long document per Markdown example: the example repeated, so pages are many.
    let docs: Vec<serde_json::Value> = examples
        .docs
        .iter()
        .filter(|d| d.path.ends_with(".md"))
        .enumerate()
        .map(|(i, d)| {
            serde_json::json!({
                "name": format!("doc{i}"),
                "markdown": vec![d.text.as_str(); copies.max(1)].join("\n\n"),
            })
        })
        .collect();
    let made = python_json(
        py,
        &MD_TO_DOCS,
        &serde_json::json!({ "out": dir.0, "docs": docs, "html": true }),
        hint,
    )?;
    let made = made["docs"].as_array().context("docs")?;
    writeln!(
        out,
        "{} documents per format, each an example repeated {copies} times",
        made.len()
    )?;
    for (format, key) in [
        (Format::Pdf, "pdf"),
        (Format::Docx, "docx"),
        (Format::Html, "html"),
    ] {
        let paths: Vec<PathBuf> = made
            .iter()
            .filter_map(|d| d[key].as_str().map(PathBuf::from))
            .collect();
        let files: Vec<Vec<u8>> = paths.iter().map(std::fs::read).collect::<Result<_, _>>()?;
        let bytes: usize = files.iter().map(Vec::len).sum();
        let t = Instant::now();
        let texts = files
            .iter()
            .map(|f| convert_uncached(format, f))
            .collect::<Result<Vec<_>, _>>()
            .map_err(anyhow::Error::msg)?;
        let secs = t.elapsed().as_secs_f64();
        let mb = bytes as f64 / 1e6;
        writeln!(
            out,
            "{:<5} ours   {:>8.2} MB in {:>7.3} s  {:>7.2} MB/s  {:>6} pages",
            format.name(),
            mb,
            secs,
            mb / secs,
            texts.iter().map(|c| c.pages.len()).sum::<usize>()
        )?;
        if format == Format::Pdf {
            let reference = python_json(
                py,
                &PDF_REFERENCE,
                &serde_json::json!({ "paths": paths }),
                hint,
            )?;
            let rsecs = reference["seconds"].as_f64().unwrap_or(f64::NAN);
            writeln!(
                out,
                "pdf   pypdf  {:>8.2} MB in {:>7.3} s  {:>7.2} MB/s  (reference)",
                mb,
                rsecs,
                mb / rsecs
            )?;
            let mut recalls = Vec::new();
            for (c, r) in texts
                .iter()
                .zip(reference["docs"].as_array().context("docs")?)
            {
                for (i, page) in r["pages"].as_array().context("pages")?.iter().enumerate() {
                    let start = c.pages.get(i).copied().unwrap_or(c.text.len());
                    let end = c.pages.get(i + 1).copied().unwrap_or(c.text.len());
                    recalls.push(recall(page.as_str().unwrap_or(""), &c.text[start..end]));
                }
            }
            recalls.sort_by(f64::total_cmp);
            writeln!(
                out,
                "pdf   word recall per page against pypdf: min {:.4}  median {:.4}  ({} pages)",
                recalls.first().copied().unwrap_or(f64::NAN),
                recalls.get(recalls.len() / 2).copied().unwrap_or(f64::NAN),
                recalls.len()
            )?;
        }
    }
    Ok(())
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Share of the reference's words (with multiplicity) found in ours.
fn recall(reference: &str, ours: &str) -> f64 {
    let mut have: HashMap<String, usize> = HashMap::new();
    for w in words(ours) {
        *have.entry(w).or_default() += 1;
    }
    let (mut found, mut total) = (0usize, 0usize);
    for w in words(reference) {
        total += 1;
        if let Some(n) = have.get_mut(&w).filter(|n| **n > 0) {
            *n -= 1;
            found += 1;
        }
    }
    found as f64 / total.max(1) as f64
}
