//! End to end in a real terminal: the workbench opens in tmux, shows chunks and tails, answers
//! keys, and leaves the terminal restored on quit.

mod common;

use std::process::Command;

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
    common::start_tmux(&session, 140, 40, &cmd);
    let screen = common::wait_for_screen(&session, |s| s.contains("chunked in"), "chunked in");
    assert!(
        screen.contains("window 128 (tokenizer.json truncation"),
        "{screen}"
    );
    assert!(screen.contains("over window"), "{screen}");
    assert!(screen.contains('░'), "no tail lines:\n{screen}");

    common::tmux(&["send-keys", "-t", &session, "w"]);
    common::wait_for_screen(&session, |s| s.contains("window 256"), "window 256");
    common::tmux(&["send-keys", "-t", &session, "p"]);
    common::wait_for_screen(
        &session,
        |s| s.contains("langchain 1500 chars overlap 150"),
        "langchain 1500 chars overlap 150",
    );
    common::tmux(&["send-keys", "-t", &session, "?"]);
    common::wait_for_screen(
        &session,
        |s| s.contains("re-read the corpus from disk"),
        "re-read the corpus from disk",
    );
    common::tmux(&["send-keys", "-t", &session, "Escape"]);
    common::tmux(&["send-keys", "-t", &session, "q"]);
    let after = common::wait_for_screen(&session, |s| s.contains("EXITED-0"), "EXITED-0");
    assert!(
        !after.contains("┌ files"),
        "the screen was not restored:\n{after}"
    );
    let _ = common::tmux(&["kill-session", "-t", &session]);
}
