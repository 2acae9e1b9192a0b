//! Live: the watcher reports changes, a reload tokenizes only what changed, and the workbench in
//! tmux follows files added and removed without a key press.

mod common;

use std::path::PathBuf;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::engine::Engine;
use chunkscope_core::jobs::Event;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chunkscope-live-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn copy_examples(to: &std::path::Path) {
    let src = common::repo().join("examples");
    for e in walk(&src) {
        let rel = e.strip_prefix(&src).unwrap();
        let dst = to.join(rel);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(&e, &dst).unwrap();
    }
}

fn walk(d: &std::path::Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v
}

#[test]
fn reload_tokenizes_only_changed_files() {
    let d = tmp("reload");
    copy_examples(&d);
    let rules = CorpusRules::default();
    let model = common::model().clone();
    let tok = common::tokenizer();
    let (first, n) = Engine::refreshed(
        None,
        model.clone(),
        tok.clone(),
        Corpus::load(&d, &rules).unwrap(),
    );
    assert_eq!(n, common::example_docs());
    std::fs::write(d.join("policy/refunds.md"), "# Refunds\n\nChanged text.\n").unwrap();
    std::fs::write(d.join("added.md"), "A new file.\n").unwrap();
    std::fs::rename(d.join("runbooks"), d.join("playbooks")).unwrap();
    let (second, n) = Engine::refreshed(
        Some(&first),
        model.clone(),
        tok.clone(),
        Corpus::load(&d, &rules).unwrap(),
    );
    assert_eq!(
        n, 2,
        "the changed and the added file; renamed files keep their tokens"
    );
    assert_eq!(second.corpus.docs.len(), 8);
    // Equal to a fresh start on the same directory.
    let fresh = Engine::new(model, tok, Corpus::load(&d, &rules).unwrap()).unwrap();
    for (a, b) in second.tokens.iter().zip(&fresh.tokens) {
        assert_eq!(a.embed, b.embed);
        assert_eq!(a.cl100k, b.cl100k);
    }
    // Chunking after the reload takes the unchanged files' chunks as they were (renamed files are
    // chunked again: their path is part of what a chunk carries) and equals a fresh chunking.
    use chunkscope_core::chunk::{ChunkSettings, Preset};
    let never = std::sync::atomic::AtomicBool::new(false);
    let mut s = ChunkSettings::default();
    Preset::Markdown.apply(&mut s);
    let (before, reused) = first.chunk_all_reusing(&s, None, None, &never).unwrap();
    assert_eq!(reused, 0);
    let (after, reused) = second
        .chunk_all_reusing(&s, None, Some((&first, &before)), &never)
        .unwrap();
    assert_eq!(
        reused, 4,
        "7 files less the changed one and the two renamed"
    );
    assert_eq!(after.files, fresh.chunk_all(&s, &never).unwrap().files);
    // Other settings: nothing to take.
    s.size = 60;
    let (_, reused) = second
        .chunk_all_reusing(&s, None, Some((&first, &before)), &never)
        .unwrap();
    assert_eq!(reused, 0);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn watcher_reports_a_burst_once() {
    let d = tmp("watch");
    std::fs::write(d.join("a.md"), "one").unwrap();
    let (tx, rx) = channel();
    let _w = chunkscope_core::jobs::watcher::watch(&d, tx).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    for i in 0..20 {
        std::fs::write(d.join(format!("f{i}.md")), "text").unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut bursts = 0;
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(Event::FilesChanged { paths }) => {
                assert!(paths >= 1);
                bursts += 1;
            }
            Ok(_) => {}
            Err(_) if bursts > 0 => break,
            Err(_) => {}
        }
    }
    assert!(
        (1..=3).contains(&bursts),
        "{bursts} bursts for one storm of writes"
    );
    // Hidden files (editor swap files) are ignored.
    std::fs::write(d.join(".a.md.swp"), "x").unwrap();
    assert!(rx.recv_timeout(Duration::from_millis(800)).is_err());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn workbench_follows_the_disk_in_tmux() {
    if common::no_tmux() {
        return;
    }
    common::model();
    let d = tmp("tmux");
    copy_examples(&d);
    let session = format!("chunkscope-live-{}", std::process::id());
    let cmd = format!(
        "HF_HUB_OFFLINE=1 {} {}; sleep 30",
        env!("CARGO_BIN_EXE_chunkscope"),
        d.display()
    );
    common::start_tmux(&session, 150, 40, &cmd);
    let files = format!("files {} · by name · watching", common::example_docs());
    common::wait_for_screen(&session, |s| s.contains(&files), "first load");
    std::fs::write(
        d.join("aaa-new.md"),
        "# Added\n\nWritten by another process.\n",
    )
    .unwrap();
    common::wait_for_screen(
        &session,
        |s| s.contains("aaa-new.md") && s.contains("files 8"),
        "the new file on screen",
    );
    std::fs::remove_file(d.join("aaa-new.md")).unwrap();
    common::wait_for_screen(
        &session,
        |s| !s.contains("aaa-new.md") && s.contains(&files),
        "the file leaving",
    );
    std::fs::rename(d.join("runbooks"), d.join("playbooks")).unwrap();
    common::wait_for_screen(
        &session,
        |s| s.contains("playbooks/rotate-keys.md"),
        "the renamed directory",
    );
    common::tmux(&["send-keys", "-t", &session, "q"]);
    let _ = common::tmux(&["kill-session", "-t", &session]);
    let _ = std::fs::remove_dir_all(&d);
}

/// 1,000 edits, creations, renames and deletions in about ten seconds while the watcher and the
/// pipeline run; afterwards the pipeline's corpus, tokens and chunks equal a fresh start.
#[test]
fn churn_without_loss() {
    use chunkscope_core::chunk::{ChunkSettings, Preset};
    use chunkscope_core::engine::Chunking;
    use chunkscope_core::jobs::pipeline::{Pipeline, Source};
    use chunkscope_core::search::SearchIndex;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    let d = tmp("churn");
    for i in 0..200 {
        std::fs::create_dir_all(d.join(format!("dir{}", i % 10))).unwrap();
        std::fs::write(
            d.join(format!("dir{}/f{i}.md", i % 10)),
            format!("# File {i}\n\nOriginal text number {i}.\n"),
        )
        .unwrap();
    }
    let (tx, rx) = channel();
    let rules = CorpusRules::default();
    let pipeline = Pipeline::spawn(
        Source {
            corpus: d.clone(),
            rules: rules.clone(),
            model: common::model().clone(),
            tok: common::tokenizer(),
            store: None,
        },
        chunkscope_core::embed::SharedEmbedder::new(common::model().clone()),
        tx.clone(),
    );
    let _w = chunkscope_core::jobs::watcher::watch(&d, tx).unwrap();
    let mut generation = 1;
    pipeline.load(generation);
    let started = Instant::now();
    let mut s = ChunkSettings::default();
    Preset::LangchainTokens.apply(&mut s);
    // As the workbench does: every reload is chunked again (files the reload left unchanged keep
    // their chunks), and the indexes follow each chunking by update, never by rebuild.
    struct Live {
        engine: Option<Arc<Engine>>,
        chunked: Option<(Arc<Engine>, Arc<Chunking>)>,
        index: Option<SearchIndex>,
        loads: usize,
        updates: usize,
    }
    let mut live = Live {
        engine: None,
        chunked: None,
        index: None,
        loads: 0,
        updates: 0,
    };
    let drain = |generation: &mut u64, live: &mut Live, wait: Duration| {
        while let Ok(msg) = rx.recv_timeout(wait) {
            match msg {
                Event::FilesChanged { .. } => {
                    *generation += 1;
                    pipeline.load(*generation);
                }
                Event::Loaded {
                    generation: g,
                    result,
                    ..
                } if g == *generation => {
                    live.engine = Some(result.expect("reload succeeds"));
                    live.loads += 1;
                    *generation += 1;
                    pipeline.rechunk(*generation, s.clone());
                }
                Event::Chunked {
                    generation: g,
                    result,
                    ..
                } if g == *generation => {
                    let c = result.expect("chunked");
                    let e = live.engine.clone().expect("loaded before chunked");
                    match live.index.as_mut() {
                        Some(ix) => {
                            ix.update(&e, &c).unwrap();
                            live.updates += 1;
                        }
                        None => live.index = Some(SearchIndex::build(&e, &c, None, 4).unwrap()),
                    }
                    // Stand-in vectors for the chunks that lack one, as the embedder would add.
                    let ix = live.index.as_mut().unwrap();
                    let todo = ix.missing_vectors();
                    let vs: Vec<Vec<f32>> = todo
                        .iter()
                        .map(|&id| vec![id as f32, 1.0, 0.0, 0.0])
                        .collect();
                    ix.add_vectors(&todo, &vs);
                    live.chunked = Some((e, c));
                }
                _ => {}
            }
        }
    };
    for op in 0..1000 {
        let i = (op * 7919) % 200;
        let path = d.join(format!("dir{}/f{i}.md", i % 10));
        match op % 4 {
            0 | 1 => {
                let _ = std::fs::write(&path, format!("# File {i}\n\nEdit {op} of file {i}.\n"));
            }
            2 => {
                let moved = d.join(format!("dir{}/g{i}.md", (i + 1) % 10));
                let _ = std::fs::rename(&path, &moved);
                let _ = std::fs::rename(&moved, &path);
            }
            _ => {
                let _ = std::fs::remove_file(&path);
                let _ = std::fs::write(
                    d.join(format!("new{op}.txt")),
                    format!("created at op {op}"),
                );
                let _ = std::fs::write(&path, format!("# File {i}\n\nRecreated at {op}.\n"));
            }
        }
        if op % 50 == 0 {
            drain(&mut generation, &mut live, Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(8));
    }
    let churn = started.elapsed();
    // Quiet: let the last burst arrive and the last reload finish.
    drain(&mut generation, &mut live, Duration::from_secs(3));
    let (engine, chunking) = live.chunked.clone().expect("at least one chunking");
    let fresh = Engine::new(
        common::model().clone(),
        common::tokenizer(),
        Corpus::load(&d, &rules).unwrap(),
    )
    .unwrap();
    let paths = |e: &Engine| {
        e.corpus
            .docs
            .iter()
            .map(|d| (d.path.clone(), d.text.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        paths(&engine),
        paths(&fresh),
        "corpus after churn equals a fresh read"
    );
    let never = AtomicBool::new(false);
    let b = fresh.chunk_all(&s, &never).unwrap();
    assert_eq!(
        chunking.files, b.files,
        "chunks after churn equal a fresh start"
    );
    assert_eq!(chunking.stats(128, 2), b.stats(128, 2));
    // The index updated through the whole churn holds what a fresh build holds.
    let ix = live.index.as_ref().unwrap();
    let n = b.files.iter().map(|f| f.chunks.len()).sum::<usize>();
    let mut fresh_ix = SearchIndex::build(&fresh, &b, None, 4).unwrap();
    fresh_ix.set_vectors(&vec![vec![0.0, 1.0, 0.0, 0.0]; n], 4);
    assert_eq!(ix.contents().unwrap(), fresh_ix.contents().unwrap());
    assert_eq!(ix.len(), n);
    assert!(ix.missing_vectors().is_empty());
    for q in ["file", "edit", "recreated", "original text"] {
        let mut got = ix.bm25_ranking(q).unwrap();
        let mut want = fresh_ix.bm25_ranking(q).unwrap();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "BM25 matches for {q:?}");
    }
    eprintln!(
        "1000 operations in {churn:?}, {} reloads, {} index updates, {} files at the end",
        live.loads,
        live.updates,
        fresh.corpus.docs.len()
    );
    assert!(live.updates > 0, "the index was updated, not only built");
    let _ = std::fs::remove_dir_all(&d);
}

/// The embedding worker after a file save: the index is updated in place, unchanged chunks keep
/// their vectors, only the saved file's new chunks are embedded, and a query finds the new text.
/// A window change keeps BM25 but no vector.
#[test]
fn embedding_worker_embeds_only_changed_chunks() {
    use chunkscope_core::chunk::{ChunkSettings, Preset};
    use chunkscope_core::jobs::embedder::EmbedWorker;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    let d = tmp("embedder");
    copy_examples(&d);
    let rules = CorpusRules::default();
    let never = AtomicBool::new(false);
    let mut s = ChunkSettings::default();
    Preset::Markdown.apply(&mut s);
    let e1 = Arc::new(
        Engine::new(
            common::model().clone(),
            common::tokenizer(),
            Corpus::load(&d, &rules).unwrap(),
        )
        .unwrap(),
    );
    let (c1, _) = e1.chunk_all_reusing(&s, None, None, &never).unwrap();
    let c1 = Arc::new(c1);
    let (tx, rx) = channel();
    let worker = EmbedWorker::spawn(
        chunkscope_core::embed::SharedEmbedder::new(common::model().clone()),
        tx,
    );
    let wait = |generation: u64| -> (usize, usize, usize) {
        loop {
            match rx
                .recv_timeout(Duration::from_secs(300))
                .expect("worker answers")
            {
                Event::Embedded {
                    generation: g,
                    total,
                    embedded,
                    kept,
                    ..
                } if g == generation => return (total, embedded, kept),
                Event::Failed(e) => panic!("{e}"),
                _ => {}
            }
        }
    };
    worker.embed(1, Arc::clone(&e1), Arc::clone(&c1), 128);
    let (total1, _, kept1) = wait(1);
    assert_eq!(kept1, 0, "a first index keeps nothing");
    let nonce = format!("quokka{}x{}", std::process::id(), total1);
    std::fs::write(
        d.join("policy/refunds.md"),
        format!("# Refunds\n\nRefunds now follow the {nonce} rule.\n\nSecond paragraph.\n"),
    )
    .unwrap();
    let (e2, _) = Engine::refreshed(
        Some(&e1),
        common::model().clone(),
        common::tokenizer(),
        Corpus::load(&d, &rules).unwrap(),
    );
    let e2 = Arc::new(e2);
    let (c2, reused) = e2
        .chunk_all_reusing(&s, None, Some((&e1, &c1)), &never)
        .unwrap();
    assert_eq!(reused, 6);
    let changed = c2
        .files
        .iter()
        .find(|f| e2.corpus.docs[f.doc].path == "policy/refunds.md")
        .unwrap()
        .chunks
        .len();
    let c2 = Arc::new(c2);
    worker.embed(2, Arc::clone(&e2), Arc::clone(&c2), 128);
    let (total2, embedded2, kept2) = wait(2);
    assert_eq!(
        kept2,
        total2 - changed,
        "every unchanged chunk keeps its vector"
    );
    assert!(
        embedded2 >= 1 && embedded2 <= changed,
        "{embedded2} of {changed}"
    );
    worker.query(7, nonce.clone(), 3, None);
    loop {
        if let Event::QueryDone { id: 7, result, .. } =
            rx.recv_timeout(Duration::from_secs(60)).unwrap()
        {
            let r = result.unwrap();
            assert_eq!(r.bm25[0].file, "policy/refunds.md");
            assert_eq!(r.vector.len(), 3, "the vector side is complete");
            break;
        }
    }
    worker.embed(3, Arc::clone(&e2), Arc::clone(&c2), 256);
    let (_, _, kept3) = wait(3);
    assert_eq!(kept3, 0, "a new window keeps no vector");
    let _ = std::fs::remove_dir_all(&d);
}

/// The file on screen first: with 300 one-chunk files and the last one in focus, the first
/// progress report (after one slice of 64) already says the focused file is fresh.
#[test]
fn focused_files_are_embedded_first() {
    use chunkscope_core::chunk::ChunkSettings;
    use chunkscope_core::jobs::embedder::EmbedWorker;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    let d = tmp("focus");
    let nonce = format!("{}-{}", std::process::id(), line!());
    for i in 0..300 {
        std::fs::write(
            d.join(format!("f{i:03}.txt")),
            format!("Note {i} of run {nonce}: the gateway restarts after the drain finishes."),
        )
        .unwrap();
    }
    let engine = Arc::new(
        Engine::new(
            common::model().clone(),
            common::tokenizer(),
            Corpus::load(&d, &CorpusRules::default()).unwrap(),
        )
        .unwrap(),
    );
    let chunking = Arc::new(
        engine
            .chunk_all(&ChunkSettings::default(), &AtomicBool::new(false))
            .unwrap(),
    );
    assert_eq!(chunking.files.len(), 300);
    let last = chunking.files.len() - 1;
    let (tx, rx) = channel();
    let worker = EmbedWorker::spawn(
        chunkscope_core::embed::SharedEmbedder::new(common::model().clone()),
        tx,
    );
    worker.focus(vec![last]);
    worker.embed(1, engine, chunking, 128);
    let mut reports = Vec::new();
    loop {
        match rx
            .recv_timeout(Duration::from_secs(300))
            .expect("worker answers")
        {
            Event::EmbedProgress {
                generation: 1,
                done,
                total,
                focus_fresh,
                ..
            } => reports.push((done, total, focus_fresh)),
            Event::Embedded { generation: 1, .. } => break,
            Event::Failed(e) => panic!("{e}"),
            _ => {}
        }
    }
    let (done, total, fresh) = reports[0];
    assert!(done < total, "{reports:?}");
    assert!(
        fresh,
        "the focused file was not among the first chunks: {reports:?}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
