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
use chunkscope_core::jobs::pipeline::{Pipeline, Source};
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
        let focus = vec![40, 3, 41, 40, 3, n + 5];
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
                } => {
                    assert_eq!(g, generation);
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
    pipeline.rechunk_focused(2, s.clone(), vec![0]);
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
    pipeline.rechunk_focused(3, s.clone(), vec![1]);
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
