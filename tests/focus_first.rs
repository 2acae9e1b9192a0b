//! The focused file first: a knob turn's chunks of the selected file (and the files on screen)
//! come from the pipeline before the rest of the corpus, equal to what the whole chunking gives
//! them, and a newer turn stops an older one between documents.

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::Duration;

use chunkscope_core::chunk::{ChunkSettings, Preset};
use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::engine::{Engine, FileChunks};
use chunkscope_core::jobs::pipeline::{Focus, Pipeline, Source};
use chunkscope_core::jobs::Event;

/// `copies` copies of the example corpus under a temporary folder, each copy's words varied so
/// that no two files are equal.
fn corpus(name: &str, copies: usize) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chunkscope-focus-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let seed = Corpus::load(&common::repo().join("examples"), &CorpusRules::default()).unwrap();
    for i in 0..copies {
        for doc in &seed.docs {
            let text = doc
                .text
                .replace("the ", &format!("the{} ", i % 89))
                .replace(". ", &format!(". Copy {i}. "));
            let path = d.join(format!("c{:03}/{}", i, doc.path.replace('/', "_")));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }
    d
}

fn spawn(dir: &std::path::Path) -> (Pipeline, Receiver<Event>) {
    let (tx, rx) = channel();
    let pipeline = Pipeline::spawn(
        Source {
            corpus: dir.to_path_buf(),
            rules: CorpusRules::default(),
            model: common::model().clone(),
            tok: common::tokenizer(),
            store: None,
        },
        chunkscope_core::embed::SharedEmbedder::new(common::model().clone()),
        tx,
    );
    (pipeline, rx)
}

fn next(rx: &Receiver<Event>) -> Event {
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the pipeline answers")
}

fn load(pipeline: &Pipeline, rx: &Receiver<Event>) -> Arc<Engine> {
    pipeline.load(1);
    loop {
        if let Event::Loaded { result, .. } = next(rx) {
            return result.expect("the corpus loads");
        }
    }
}

#[test]
fn focused_files_come_first_and_equal_the_whole_chunking() {
    let dir = corpus("first", 12);
    let (pipeline, rx) = spawn(&dir);
    let engine = load(&pipeline, &rx);
    let n = engine.corpus.docs.len();
    assert!(n >= 80, "{n} files");
    let never = AtomicBool::new(false);
    let mut generation = 1;
    for preset in [Preset::SpringAi, Preset::LangchainChars, Preset::Markdown] {
        let mut s = ChunkSettings::default();
        preset.apply(&mut s);
        generation += 1;
        // The selected file, then the others on screen (a repeat and a position past the end
        // are ignored).
        let focus = Focus {
            files: vec![40, 3, 41, 40, 3, n + 5],
            reach: 48,
        };
        pipeline.rechunk_focused(generation, s.clone(), focus);
        let mut ahead: Vec<Vec<FileChunks>> = Vec::new();
        let whole = loop {
            match next(&rx) {
                Event::FocusChunked {
                    generation: g,
                    engine: e,
                    settings,
                    files,
                    done,
                    total,
                    head,
                } => {
                    assert_eq!(g, generation);
                    assert!(!head, "small files are chunked whole at once");
                    assert!(Arc::ptr_eq(&e, &engine), "chunked from the loaded texts");
                    assert_eq!(settings, s);
                    assert_eq!(total, n);
                    assert_eq!(
                        done,
                        ahead.iter().map(Vec::len).sum::<usize>() + files.len()
                    );
                    ahead.push(files);
                }
                Event::ChunkProgress {
                    generation: g,
                    done,
                    total,
                } => {
                    assert_eq!(g, generation);
                    assert_eq!(ahead.len(), 2, "progress only after the files in focus");
                    assert!(done <= total && total == n);
                }
                Event::Chunked {
                    generation: g,
                    result,
                    ..
                } => {
                    assert_eq!(g, generation);
                    break result.expect("chunked");
                }
                other => panic!("unexpected {other:?}"),
            }
        };
        let docs: Vec<Vec<usize>> = ahead
            .iter()
            .map(|step| step.iter().map(|f| f.doc).collect())
            .collect();
        assert_eq!(
            docs,
            vec![vec![40], vec![3, 41]],
            "{preset:?}: the selected file alone, then the others on screen, before the whole"
        );
        let fresh = engine.chunk_all(&s, &never).unwrap();
        assert_eq!(whole.files, fresh.files, "{preset:?}: the whole chunking");
        for f in ahead.iter().flatten() {
            assert!(!f.chunks.is_empty());
            assert_eq!(
                f, &whole.files[f.doc],
                "{preset:?}: file {} ahead equals its chunks in the whole",
                f.doc
            );
        }
    }
    drop(pipeline);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_newer_turn_cancels_the_older_between_documents() {
    let dir = corpus("cancel", 220);
    let (pipeline, rx) = spawn(&dir);
    let engine = load(&pipeline, &rx);
    let mut s = ChunkSettings::default();
    Preset::SpringAi.apply(&mut s);
    let only = |d: usize| Focus {
        files: vec![d],
        reach: 0,
    };
    pipeline.rechunk_focused(2, s.clone(), only(0));
    // As soon as the first file is on screen, the knob turns again: generation 2 stops part-way
    // (its whole chunking never comes) and generation 3 comes whole.
    loop {
        match next(&rx) {
            Event::FocusChunked { generation: 2, .. } => break,
            Event::Chunked { generation: 2, .. } => panic!("generation 2 finished first"),
            _ => {}
        }
    }
    s.size += 40;
    pipeline.rechunk_focused(3, s.clone(), only(1));
    let mut seen_3 = false;
    let whole = loop {
        match next(&rx) {
            Event::Chunked { generation: 2, .. } => {
                panic!("the cancelled generation finished its whole chunking")
            }
            Event::FocusChunked {
                generation: 3,
                files,
                ..
            } => {
                assert_eq!(files[0].doc, 1);
                seen_3 = true;
            }
            Event::Chunked {
                generation: 3,
                result,
                ..
            } => break result.unwrap(),
            _ => {}
        }
    };
    assert!(seen_3, "the newer turn's file came first");
    assert_eq!(whole.settings, s);
    assert_eq!(whole.files.len(), engine.corpus.docs.len());

    // The engine stops between documents once the flag is raised.
    let cancel = AtomicBool::new(false);
    let chunked = std::sync::atomic::AtomicUsize::new(0);
    let stop_after_first = |_done: usize| {
        chunked.fetch_add(1, Ordering::Relaxed);
        cancel.store(true, Ordering::Relaxed);
    };
    s.size += 40;
    let r = engine.chunk_rest(&s, None, None, &[], &cancel, &stop_after_first);
    assert!(r.is_none(), "cancelled part-way");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(
        chunked.load(Ordering::Relaxed) <= threads,
        "at most one file per thread after the flag: {}",
        chunked.load(Ordering::Relaxed)
    );
    drop(pipeline);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A corpus with two large files (the example corpus's Markdown, each copy varied, past 300 KB:
/// once as Markdown, once as plain text) and the varied texts as Markdown.
fn large_corpus(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chunkscope-head-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let seed = Corpus::load(&common::repo().join("examples"), &CorpusRules::default()).unwrap();
    let mut big = String::new();
    let mut copy = 0;
    while big.len() < 300_000 {
        for doc in seed.docs.iter().filter(|d| d.path.ends_with(".md")) {
            big.push_str(&doc.text.replace(". ", &format!(". Copy {copy}. ")));
            big.push_str("\n\n");
        }
        copy += 1;
    }
    std::fs::write(d.join("big.md"), &big).unwrap();
    std::fs::write(d.join("big.txt"), &big).unwrap();
    for (i, (_, text)) in common::varied_texts().into_iter().enumerate() {
        std::fs::write(d.join(format!("v{i:03}.md")), text).unwrap();
    }
    d
}

/// Where a chunker can stop early, its first chunks are the whole chunking's first ones, at
/// least as many as asked unless the file has fewer, and "all of them" only when they are: for
/// every preset (and a larger size with overlap), on large and small files, for several counts.
#[test]
fn first_chunks_begin_the_whole_chunking() {
    let dir = large_corpus("first");
    let corpus = Corpus::load(&dir, &CorpusRules::default()).unwrap();
    let engine = Engine::new(common::model().clone(), common::tokenizer(), corpus).unwrap();
    let mut answered = std::collections::BTreeSet::new();
    for preset in Preset::ALL {
        if preset == Preset::MaxMin {
            continue;
        }
        let mut base = ChunkSettings::default();
        preset.apply(&mut base);
        let mut turned = base.clone();
        turned.size = if base.size == 0 { 200 } else { base.size + 37 };
        turned.overlap = turned.size / 5;
        for s in [base, turned] {
            for d in 0..engine.corpus.docs.len() {
                let whole = engine.chunk_doc_with(d, &s, None);
                for n in [1, 7, 48, whole.chunks.len(), whole.chunks.len() + 1] {
                    let Some((head, all)) = engine.chunk_doc_first(d, &s, None, n) else {
                        continue;
                    };
                    answered.insert(preset.name());
                    let what = format!(
                        "{} size {} overlap {} on {}, n {n}",
                        preset.name(),
                        s.size,
                        s.overlap,
                        engine.corpus.docs[d].path
                    );
                    let k = head.chunks.len();
                    assert!(
                        k <= whole.chunks.len(),
                        "{what}: more chunks than the whole"
                    );
                    assert_eq!(head.chunks[..], whole.chunks[..k], "{what}");
                    assert_eq!(
                        head.parents[..],
                        whole.parents[..head.parents.len()],
                        "{what}"
                    );
                    assert!(k >= n.min(whole.chunks.len()), "{what}: {k} chunks");
                    if all {
                        assert_eq!(k, whole.chunks.len(), "{what}: said whole");
                    }
                }
            }
        }
    }
    assert_eq!(
        answered.into_iter().collect::<Vec<_>>(),
        [
            "langchain-chars",
            "langchain-tokens",
            "llamaindex-tokens",
            "markdown",
            "semchunk",
            "spring-ai",
            "text-splitter"
        ],
        "the chunkers that stop early"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A large selected file shows its chunks on screen first (`head`), then comes whole, then the
/// files on screen; its chunker's whole chunking equals the engine's. A chunker that cannot stop
/// early sends the file whole at once.
#[test]
fn a_large_selected_file_sends_its_chunks_on_screen_first() {
    let dir = large_corpus("pipeline");
    let (pipeline, rx) = spawn(&dir);
    let engine = load(&pipeline, &rx);
    let big = engine
        .corpus
        .docs
        .iter()
        .position(|d| d.path == "big.md")
        .unwrap();
    let other = engine.corpus.docs.len() - 1;
    let never = AtomicBool::new(false);
    let mut generation = 1;
    for (preset, stops_early) in [
        (Preset::TextSplitter, true),
        (Preset::Semchunk, true),
        (Preset::SpringAi, true),
        (Preset::Haystack, false),
    ] {
        let mut s = ChunkSettings::default();
        preset.apply(&mut s);
        generation += 1;
        let focus = Focus {
            files: vec![big, other],
            reach: 30,
        };
        pipeline.rechunk_focused(generation, s.clone(), focus);
        let mut steps: Vec<(bool, Vec<FileChunks>, usize)> = Vec::new();
        let whole = loop {
            match next(&rx) {
                Event::FocusChunked {
                    generation: g,
                    files,
                    done,
                    head,
                    ..
                } if g == generation => steps.push((head, files, done)),
                Event::Chunked {
                    generation: g,
                    result,
                    ..
                } if g == generation => break result.expect("chunked"),
                Event::ChunkProgress { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        };
        assert_eq!(whole.files, engine.chunk_all(&s, &never).unwrap().files);
        let heads: Vec<bool> = steps.iter().map(|s| s.0).collect();
        if stops_early {
            assert_eq!(heads, [true, false, false], "{preset:?}");
            let (_, files, done) = &steps[0];
            assert_eq!(
                (files.len(), files[0].doc, *done),
                (1, big, 0),
                "{preset:?}"
            );
            let k = files[0].chunks.len();
            assert!(
                k >= 30 && k < whole.files[big].chunks.len(),
                "{preset:?}: {k}"
            );
            assert_eq!(files[0].chunks[..], whole.files[big].chunks[..k]);
        } else {
            assert_eq!(heads, [false, false], "{preset:?}");
        }
        assert_eq!(steps[steps.len() - 2].1, vec![whole.files[big].clone()]);
        assert_eq!(steps[steps.len() - 2].2, 1);
        assert_eq!(steps[steps.len() - 1].1, vec![whole.files[other].clone()]);
    }
    drop(pipeline);
    let _ = std::fs::remove_dir_all(&dir);
}
