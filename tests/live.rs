//! Live: the watcher reports changes, a reload tokenizes only what changed, and the workbench in
//! tmux follows files added and removed without a key press.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use chunkscope::app::Msg;
use chunkscope::core::corpus::{Corpus, CorpusRules};
use chunkscope::core::engine::Engine;

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
    )
    .unwrap();
    assert_eq!(n, 7);
    std::fs::write(d.join("policy/refunds.md"), "# Refunds\n\nChanged text.\n").unwrap();
    std::fs::write(d.join("added.md"), "A new file.\n").unwrap();
    std::fs::rename(d.join("runbooks"), d.join("playbooks")).unwrap();
    let (second, n) = Engine::refreshed(
        Some(&first),
        model.clone(),
        tok.clone(),
        Corpus::load(&d, &rules).unwrap(),
    )
    .unwrap();
    assert_eq!(
        n, 2,
        "the changed and the added file; renamed files keep their tokens"
    );
    assert_eq!(second.corpus.docs.len(), 8);
    // Equal to a fresh start on the same directory.
    let fresh = Engine::new(model, tok, Corpus::load(&d, &rules).unwrap()).unwrap();
    for (a, b) in second.tokens.iter().zip(&fresh.tokens) {
        assert_eq!(a.embed, b.embed);
        assert_eq!(a.cl100k_ids, b.cl100k_ids);
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn watcher_reports_a_burst_once() {
    let d = tmp("watch");
    std::fs::write(d.join("a.md"), "one").unwrap();
    let (tx, rx) = channel();
    let _w = chunkscope::work::watcher::watch(&d, tx).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    for i in 0..20 {
        std::fs::write(d.join(format!("f{i}.md")), "text").unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut bursts = 0;
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(Msg::FilesChanged { paths }) => {
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
    if Command::new("tmux").arg("-V").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "tmux is required in CI");
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
    common::wait_for_screen(&session, |s| s.contains("files 7 · watching"), "first load");
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
        |s| !s.contains("aaa-new.md") && s.contains("files 7"),
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
    use chunkscope::core::chunk::{ChunkSettings, Preset};
    use chunkscope::work::pipeline::{Pipeline, Source};
    use std::sync::atomic::AtomicBool;

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
        },
        tx.clone(),
    );
    let _w = chunkscope::work::watcher::watch(&d, tx).unwrap();
    let mut generation = 1;
    pipeline.load(generation);
    let started = Instant::now();
    let mut latest = None;
    let mut loads = 0;
    let mut drain =
        |generation: &mut u64, latest: &mut Option<std::sync::Arc<Engine>>, wait: Duration| {
            while let Ok(msg) = rx.recv_timeout(wait) {
                match msg {
                    Msg::FilesChanged { .. } => {
                        *generation += 1;
                        pipeline.load(*generation);
                    }
                    Msg::Loaded {
                        generation: g,
                        result,
                        ..
                    } if g == *generation => {
                        *latest = Some(result.expect("reload succeeds"));
                        loads += 1;
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
            drain(&mut generation, &mut latest, Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(8));
    }
    let churn = started.elapsed();
    // Quiet: let the last burst arrive and the last reload finish.
    drain(&mut generation, &mut latest, Duration::from_secs(3));
    let engine = latest.expect("at least one reload");
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
    let mut s = ChunkSettings::default();
    Preset::LangchainTokens.apply(&mut s);
    let never = AtomicBool::new(false);
    let a = engine.chunk_all(&s, &never).unwrap();
    let b = fresh.chunk_all(&s, &never).unwrap();
    assert_eq!(a.files, b.files, "chunks after churn equal a fresh start");
    assert_eq!(a.stats(128, 2), b.stats(128, 2));
    eprintln!(
        "1000 operations in {churn:?}, {loads} reloads, {} files at the end",
        fresh.corpus.docs.len()
    );
    let _ = std::fs::remove_dir_all(&d);
}
