//! Metadata prefixes and parent sections: an embedded prefix moves the tail start by exactly its own
//! tokens (checked against the tokenizer's encoding of prefix + text), cited fields reach the export
//! but not the vector, and every chunk's parent section holds the chunk.

mod common;

use std::sync::atomic::AtomicBool;

use chunkscope_core::chunk::{ChunkSettings, Preset, Strategy};
use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::engine::Engine;
use chunkscope_core::metadata::Use;
use chunkscope_core::tokenize::Unit;

fn engine_over(files: &[(&str, &str)]) -> Engine {
    let dir = std::env::temp_dir().join(format!(
        "chunkscope-structure-{}-{}",
        std::process::id(),
        files.len()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let corpus = Corpus::load(&dir, &CorpusRules::default()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Engine::new(common::model().clone(), common::tokenizer(), corpus).unwrap()
}

fn examples() -> Engine {
    let corpus = Corpus::load(&common::repo().join("examples"), &CorpusRules::default()).unwrap();
    Engine::new(common::model().clone(), common::tokenizer(), corpus).unwrap()
}

#[test]
fn an_embedded_prefix_moves_the_tail_by_its_tokens() {
    let engine = examples();
    let raw = engine.tok.tokenizer();
    let never = AtomicBool::new(false);
    // Large markdown chunks: they have headings and tails.
    let plain = ChunkSettings {
        strategy: Strategy::Markdown,
        unit: Unit::Cl100k,
        size: 400,
        ..ChunkSettings::default()
    };
    let mut titled = plain.clone();
    titled.metadata.heading = Use::Embed;
    titled.metadata.file = Use::Embed;
    let a = engine.chunk_all(&plain, &never).unwrap();
    let b = engine.chunk_all(&titled, &never).unwrap();
    let mut moved = 0;
    for (fa, fb) in a.files.iter().zip(&b.files) {
        let doc = &engine.corpus.docs[fa.doc];
        assert_eq!(fa.chunks.len(), fb.chunks.len());
        for (ca, cb) in fa.chunks.iter().zip(fb.chunks.iter()) {
            assert!(ca.prefix().is_none());
            let prefix = cb.prefix().expect("file is always embedded");
            assert!(prefix.starts_with(&format!("file: {}\n", doc.path)));
            if let Some(h) = cb.heading() {
                assert!(prefix.contains(&format!("section: {h}\n")), "{prefix:?}");
            }
            // The tokenizer's own encoding of what is embedded: prefix tokens, then the text's.
            let embedded = cb.embed_text(&doc.text);
            let enc = raw.encode(embedded.as_ref(), true).unwrap();
            assert_eq!(enc.len(), cb.embed_tokens(2), "{}", doc.path);
            let content: Vec<usize> = enc
                .get_offsets()
                .iter()
                .zip(enc.get_special_tokens_mask())
                .filter(|(_, &s)| s == 0)
                .map(|(o, _)| o.0)
                .collect();
            assert_eq!(content.len(), cb.prefix_tokens() + ca.token_starts.len());
            for window in [128usize, 256] {
                let (ta, tb) = (ca.tail(window, 2), cb.tail(window, 2));
                // Where the model stops reading, in the embedded string.
                let expect = content.get(window - 2).map(|&o| o - prefix.len());
                assert_eq!(
                    tb.map(|t| t.start_byte),
                    expect,
                    "{} window {window}",
                    doc.path
                );
                if let (Some(ta), Some(tb)) = (ta, tb) {
                    assert_eq!(ta.first_token - tb.first_token, cb.prefix_tokens());
                    assert_eq!(tb.tokens - ta.tokens, cb.prefix_tokens());
                    moved += 1;
                }
            }
        }
    }
    assert!(moved > 5, "only {moved} chunks had a tail both ways");
}

#[test]
fn cited_and_dropped_fields() {
    let text = "---\ntitle: Rotate keys\nowner: ops\nsecret: hunter2\n---\n# Runbook\n\n## Staging\n\nRotate the staging keys first.\n";
    let engine = engine_over(&[("rb.md", text)]);
    let mut s = ChunkSettings::default();
    Preset::Markdown.apply(&mut s);
    s.metadata.keys.insert("title".into(), Use::Embed);
    s.metadata.keys.insert("secret".into(), Use::Drop);
    let c = engine.chunk_all(&s, &AtomicBool::new(false)).unwrap();
    let last = c.files[0].chunks.last().unwrap();
    assert_eq!(last.heading(), Some("Runbook > Staging"));
    assert_eq!(last.prefix(), Some("title: Rotate keys\n\n"));
    assert_eq!(
        last.prefix_tokens(),
        engine.tok.count("title: Rotate keys\n\n")
    );
    // Front matter is metadata, not a heading.
    assert!(c.files[0]
        .chunks
        .iter()
        .all(|ch| !ch.heading().unwrap_or("").contains("title")));
}

#[test]
fn parents_hold_their_children() {
    let engine = examples();
    let never = AtomicBool::new(false);
    for strategy in [Strategy::Markdown, Strategy::Recursive, Strategy::SpringAi] {
        let mut s = ChunkSettings {
            strategy,
            unit: if strategy == Strategy::SpringAi {
                Unit::Cl100k
            } else {
                Unit::Embed
            },
            size: 60,
            parents: true,
            ..ChunkSettings::default()
        };
        if strategy == Strategy::SpringAi {
            s.size = 100;
        }
        let c = engine.chunk_all(&s, &never).unwrap();
        let mut bigger = 0;
        for f in &c.files {
            let doc = &engine.corpus.docs[f.doc];
            assert!(!f.parents.is_empty() || f.chunks.is_empty());
            for ch in f.chunks.iter() {
                let p = &f.parents[ch.parent().expect("every chunk has a parent")];
                assert!(p.start <= ch.start() && ch.end() <= p.end);
                assert!(p.id(&doc.path).starts_with(&format!("{}#s", doc.path)));
                if strategy == Strategy::Markdown && doc.path.ends_with(".md") {
                    // Markdown chunks never cross a heading: one section each, same heading.
                    assert_eq!(p.sections.0, p.sections.1);
                    assert_eq!(p.heading.as_deref(), ch.heading());
                }
                if doc.path.ends_with(".md") {
                    // Every strategy's chunk carries the path of the section it starts in.
                    assert_eq!(
                        ch.heading(),
                        engine.sections(f.doc)[p.sections.0]
                            .heading
                            .as_deref()
                            .map(String::as_str),
                        "{strategy} {}",
                        doc.path
                    );
                }
                bigger += usize::from(p.end - p.start > ch.end() - ch.start());
            }
        }
        assert!(
            bigger > 10,
            "{strategy}: parents are not bigger than children"
        );
    }
}

/// HTML pages made from the example Markdown by a real producer (Python-Markdown, wrapped in site
/// chrome): read as Markdown again, their chunks carry the same heading paths, in the same order,
/// as the Markdown's own, and no chrome reaches a chunk.
#[test]
fn html_made_from_markdown_keeps_its_headings() {
    if !common::python_module_or_skip("html_made_from_markdown_keeps_its_headings", "markdown") {
        return;
    }
    let ex = common::repo().join("examples");
    let mds: Vec<(String, String)> = [
        "README.md",
        "guides/incident-handbook.md",
        "policy/refunds.md",
        "runbooks/rotate-keys.md",
    ]
    .iter()
    .map(|p| (p.to_string(), std::fs::read_to_string(ex.join(p)).unwrap()))
    .collect();
    let texts: Vec<&str> = mds.iter().map(|(_, t)| t.as_str()).collect();
    let pages = common::python("md_to_html.py", &serde_json::json!({ "texts": texts }));
    let mut files: Vec<(String, String)> = mds.clone();
    for ((p, _), html) in mds.iter().zip(pages["pages"].as_array().unwrap()) {
        files.push((
            p.replace(".md", ".html"),
            html.as_str().unwrap().to_string(),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let engine = engine_over(&refs);
    let mut s = ChunkSettings::default();
    Preset::Markdown.apply(&mut s);
    let c = engine.chunk_all(&s, &AtomicBool::new(false)).unwrap();
    let headings = |path: &str| common::heading_paths(&engine, &c, path);
    for (md, _) in &mds {
        let html = md.replace(".md", ".html");
        let doc = engine.corpus.docs.iter().find(|d| d.path == html).unwrap();
        assert_eq!(doc.source_format, "html");
        for chrome in ["Home", "console.log", "(c) Northwind", "margin:0"] {
            assert!(!doc.text.contains(chrome), "{chrome} in {html}");
        }
        assert!(headings(md).len() > 1, "{md} has sections");
        assert_eq!(headings(&html), headings(md), "{html}");
    }
}
