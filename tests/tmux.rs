//! End to end in a real terminal: the workbench opens in tmux, shows chunks and tails, answers
//! keys, and leaves the terminal restored on quit.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

fn tmux(args: &[&str]) -> String {
    let o = Command::new("tmux").args(args).output().expect("tmux");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn wait_for(session: &str, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let screen = tmux(&["capture-pane", "-p", "-t", session]);
        if screen.contains(needle) {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "'{needle}' never appeared; screen:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn workbench_in_tmux() {
    if Command::new("tmux").arg("-V").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "tmux is required in CI");
        eprintln!("tmux not installed: end-to-end test not run");
        return;
    }
    common::model();
    let session = format!("chunkscope-e2e-{}", std::process::id());
    let examples = common::repo().join("examples");
    let cmd = format!(
        "HF_HUB_OFFLINE=1 {} {}; echo EXITED-$?; sleep 60",
        env!("CARGO_BIN_EXE_chunkscope"),
        examples.display()
    );
    let _ = tmux(&["kill-session", "-t", &session]);
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "140",
        "-y",
        "40",
        &cmd,
    ]);
    let screen = wait_for(&session, "chunked in");
    assert!(
        screen.contains("window 128 (tokenizer.json truncation"),
        "{screen}"
    );
    assert!(screen.contains("over window"), "{screen}");
    assert!(screen.contains('░'), "no tail lines:\n{screen}");

    tmux(&["send-keys", "-t", &session, "w"]);
    wait_for(&session, "window 256");
    tmux(&["send-keys", "-t", &session, "p"]);
    wait_for(&session, "langchain 1500 chars overlap 150");
    tmux(&["send-keys", "-t", &session, "?"]);
    wait_for(&session, "re-read the corpus from disk");
    tmux(&["send-keys", "-t", &session, "Escape"]);
    tmux(&["send-keys", "-t", &session, "q"]);
    let after = wait_for(&session, "EXITED-0");
    assert!(
        !after.contains("┌ files"),
        "the screen was not restored:\n{after}"
    );
    let _ = tmux(&["kill-session", "-t", &session]);
}
