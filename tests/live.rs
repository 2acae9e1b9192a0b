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

fn tmux(args: &[&str]) -> String {
    let o = Command::new("tmux").args(args).output().expect("tmux");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn wait_for(session: &str, pred: impl Fn(&str) -> bool, what: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let screen = tmux(&["capture-pane", "-p", "-t", session]);
        if pred(&screen) {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "{what} never happened; screen:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
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
    let _ = tmux(&["kill-session", "-t", &session]);
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "150",
        "-y",
        "40",
        &cmd,
    ]);
    wait_for(&session, |s| s.contains("files 7 · watching"), "first load");
    std::fs::write(
        d.join("aaa-new.md"),
        "# Added\n\nWritten by another process.\n",
    )
    .unwrap();
    wait_for(
        &session,
        |s| s.contains("aaa-new.md") && s.contains("files 8"),
        "the new file on screen",
    );
    std::fs::remove_file(d.join("aaa-new.md")).unwrap();
    wait_for(
        &session,
        |s| !s.contains("aaa-new.md") && s.contains("files 7"),
        "the file leaving",
    );
    std::fs::rename(d.join("runbooks"), d.join("playbooks")).unwrap();
    wait_for(
        &session,
        |s| s.contains("playbooks/rotate-keys.md"),
        "the renamed directory",
    );
    tmux(&["send-keys", "-t", &session, "q"]);
    let _ = tmux(&["kill-session", "-t", &session]);
    let _ = std::fs::remove_dir_all(&d);
}
