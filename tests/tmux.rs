//! End to end in a real terminal: the workbench opens in tmux, shows chunks and tails, answers
//! keys, and leaves the terminal restored on quit.

mod common;

#[test]
fn workbench_in_tmux() {
    if common::no_tmux() {
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
    common::escape(
        &session,
        |s| !s.contains("re-read the corpus from disk"),
        "help closed",
    );
    common::tmux(&["send-keys", "-t", &session, "q"]);
    let after = common::wait_for_screen(&session, |s| s.contains("EXITED-0"), "EXITED-0");
    assert!(
        !after.contains("┌ files"),
        "the screen was not restored:\n{after}"
    );
    let _ = common::tmux(&["kill-session", "-t", &session]);
}

/// Structure first in a real terminal: the maxmin preset from the command line, a threshold turn
/// that re-chunks with no sentence embedding on screen, the embedded heading shown above each
/// chunk, and parent mode.
#[test]
fn maxmin_metadata_and_parents_in_tmux() {
    if common::no_tmux() {
        return;
    }
    common::model();
    let session = format!("chunkscope-e2e-mm-{}", std::process::id());
    let examples = common::repo().join("examples");
    let cmd = format!(
        "HF_HUB_OFFLINE=1 {} {} --preset maxmin; echo EXITED-$?; sleep 60",
        env!("CARGO_BIN_EXE_chunkscope"),
        examples.display()
    );
    common::start_tmux(&session, 150, 40, &cmd);
    // The first maxmin chunking may embed sentences (once per machine); wait for the chunks.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    loop {
        let s = common::tmux(&["capture-pane", "-p", "-t", &session]);
        if s.contains("maxmin max 120 embed floor 0.60") && s.contains("chunked in") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no maxmin chunks:\n{s}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    common::tmux(&["send-keys", "-t", &session, "{"]);
    let mut seen_embedding = false;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let s = common::tmux(&["capture-pane", "-p", "-t", &session]);
        seen_embedding |= s.contains("embedding sentences");
        if s.contains("floor 0.55") && s.contains("chunked in") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "threshold turn:\n{s}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!seen_embedding, "a threshold turn must not embed sentences");
    common::tmux(&["send-keys", "-t", &session, "m"]);
    common::wait_for_screen(
        &session,
        |s| s.contains("+ section: ") && s.contains("tokens of the window"),
        "the embedded heading above the chunk",
    );
    common::tmux(&["send-keys", "-t", &session, "b"]);
    common::wait_for_screen(
        &session,
        |s| s.contains("a hit returns its parent"),
        "parent mode",
    );
    common::tmux(&["send-keys", "-t", &session, "q"]);
    common::wait_for_screen(&session, |s| s.contains("EXITED-0"), "EXITED-0");
    let _ = common::tmux(&["kill-session", "-t", &session]);
}

/// SIGTERM, SIGINT, SIGHUP and SIGQUIT each leave the terminal as it was: the workbench quits,
/// the main screen is back (no alternate screen) and the line discipline is sane (icanon, echo).
#[test]
fn signals_restore_the_terminal() {
    if common::no_tmux() {
        return;
    }
    common::model();
    let examples = common::repo().join("examples");
    for sig in ["TERM", "INT", "HUP", "QUIT"] {
        let session = format!("chunkscope-sig-{sig}-{}", std::process::id());
        let cmd = format!(
            "HF_HUB_OFFLINE=1 {} {}; echo EXITED-$?; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e echo -e -icanon -e -echo | tr '\\n' ' '; echo STTY-DONE; sleep 60",
            env!("CARGO_BIN_EXE_chunkscope"),
            examples.display()
        );
        common::start_tmux(&session, 140, 40, &cmd);
        common::wait_for_screen(&session, |s| s.contains("chunked in"), "chunked in");
        let shell = common::tmux(&["display", "-p", "-t", &session, "#{pane_pid}"]);
        let pid = std::process::Command::new("pgrep")
            .args(["-P", shell.trim(), "chunkscope"])
            .output()
            .expect("pgrep");
        let pid = String::from_utf8_lossy(&pid.stdout).trim().to_string();
        assert!(
            !pid.is_empty(),
            "no chunkscope under the pane's shell {shell}"
        );
        let killed = std::process::Command::new("kill")
            .args([&format!("-{sig}"), &pid])
            .status()
            .unwrap();
        assert!(killed.success());
        let after = common::wait_for_screen(&session, |s| s.contains("STTY-DONE"), "stty");
        assert!(after.contains("EXITED-"), "SIG{sig}: {after}");
        assert!(
            after.contains("icanon echo") && !after.contains("-icanon") && !after.contains("-echo"),
            "SIG{sig} left the terminal raw:\n{after}"
        );
        assert!(
            !after.contains("┌ files"),
            "SIG{sig}: still drawn:\n{after}"
        );
        let alt = common::tmux(&["display", "-p", "-t", &session, "#{alternate_on}"]);
        assert_eq!(
            alt.trim(),
            "0",
            "SIG{sig}: the alternate screen is still on"
        );
        let _ = common::tmux(&["kill-session", "-t", &session]);
    }
}

/// W lists the chunks past the window across the corpus in the order `audit` ranks them, and
/// Enter opens the first at its tail.
#[test]
fn worst_chunks_view_matches_audit() {
    if common::no_tmux() {
        return;
    }
    common::model();
    let examples = common::repo().join("examples");
    let audit = std::process::Command::new(env!("CARGO_BIN_EXE_chunkscope"))
        .env("HF_HUB_OFFLINE", "1")
        .args(["audit", examples.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(audit.status.success());
    let v: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    let worst: Vec<String> = v["worst"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| format!("{} #{}", w["file"].as_str().unwrap(), w["index"]))
        .collect();
    assert!(worst.len() >= 3, "the examples have chunks past the window");
    let session = format!("chunkscope-worst-{}", std::process::id());
    let cmd = format!(
        "HF_HUB_OFFLINE=1 {} {}; sleep 60",
        env!("CARGO_BIN_EXE_chunkscope"),
        examples.display()
    );
    common::start_tmux(&session, 160, 45, &cmd);
    common::wait_for_screen(&session, |s| s.contains("chunked in"), "chunked in");
    common::tmux(&["send-keys", "-t", &session, "W"]);
    let screen = common::wait_for_screen(&session, |s| s.contains("worst chunks"), "worst view");
    let rows: Vec<&str> = screen
        .lines()
        .filter_map(|l| {
            let at = worst
                .iter()
                .find_map(|w| l.find(&format!("{w} ")).map(|_| w))?;
            Some(at.as_str())
        })
        .collect();
    assert_eq!(rows, &worst[..rows.len()], "{screen}");
    assert!(rows.len() >= 3, "{screen}");
    common::tmux(&["send-keys", "-t", &session, "Enter"]);
    let first = worst[0].split(" #").next().unwrap();
    common::wait_for_screen(
        &session,
        |s| s.contains(&format!("{first} · chunk")),
        "the worst chunk opened",
    );
    let _ = common::tmux(&["kill-session", "-t", &session]);
}

/// `E` cycles through `[model] compare`: the top bar names the new model and its pooling, the
/// corpus is chunked again with its tokenizer, an eval report pinned as A stays beside the new
/// model's report, and `E` comes back to the first model.
#[test]
fn next_model_in_tmux() {
    if common::no_tmux() {
        return;
    }
    common::model();
    let session = format!("chunkscope-e2e-model-{}", std::process::id());
    let dir = std::env::temp_dir().join(format!("chunkscope-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tiny = common::repo().join("tests/fixtures/tiny/cls-normalized");
    let config = dir.join("workbench.toml");
    std::fs::write(
        &config,
        format!("[model]\ncompare = [\"{}\"]\n", tiny.display()),
    )
    .unwrap();
    let cmd = format!(
        "HF_HUB_OFFLINE=1 {} {} --config {}; echo EXITED-$?; sleep 60",
        env!("CARGO_BIN_EXE_chunkscope"),
        common::repo().join("examples").display(),
        config.display()
    );
    common::start_tmux(&session, 220, 40, &cmd);
    common::wait_for_screen(
        &session,
        |s| s.contains("chunked in") && s.contains("model all-MiniLM-L6-v2"),
        "the first model",
    );
    // Eval A/B by model: pin the first model's report, switch, and the pane compares the
    // second model's report with it, bucket by bucket.
    common::tmux(&["send-keys", "-t", &session, "e"]);
    common::wait_for_screen(
        &session,
        |s| s.contains("B (now): all-MiniLM-L6-v2 (native f32)") && !s.contains("re-evaluating"),
        "the first model's eval report",
    );
    common::tmux(&["send-keys", "-t", &session, "a"]);
    common::wait_for_screen(
        &session,
        |s| s.contains("A (pinned): all-MiniLM-L6-v2 (native f32)"),
        "the first model pinned as A",
    );
    common::tmux(&["send-keys", "-t", &session, "E"]);
    let screen = common::wait_for_screen(
        &session,
        |s| {
            s.contains("B (now): cls-normalized (native f32)")
                && s.contains("window 64")
                && !s.contains("re-evaluating")
        },
        "the second model's eval report beside A",
    );
    assert!(
        screen.contains("A (pinned): all-MiniLM-L6-v2 (native f32)"),
        "{screen}"
    );
    assert!(screen.contains("|  A: n  BM25  vector"), "{screen}");
    assert!(screen.contains("flipped A -> B at k"), "{screen}");
    let screen = common::escape(
        &session,
        |s| {
            s.contains("model cls-normalized (native f32 · cls, normalized)")
                && s.contains("tail from token 63")
        },
        "the second model, its window on the chunks",
    );
    assert!(screen.contains("window 64"), "{screen}");
    common::tmux(&["send-keys", "-t", &session, "E"]);
    common::wait_for_screen(
        &session,
        |s| s.contains("model all-MiniLM-L6-v2") && s.contains("tail from token 127"),
        "back to the first model",
    );
    common::tmux(&["send-keys", "-t", &session, "q"]);
    common::wait_for_screen(&session, |s| s.contains("EXITED-0"), "EXITED-0");
    let _ = common::tmux(&["kill-session", "-t", &session]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A store opened in the workbench: its chunks listed by id with the framework's text, the top
/// bar says they are stored chunks, a knob leaves them as they are, a query answers with them,
/// and the terminal is restored on quit.
#[test]
fn store_in_tmux() {
    if common::no_tmux() {
        return;
    }
    common::model();
    let dir = std::env::temp_dir().join(format!("chunkscope-tmux-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("chunks.jsonl");
    let long = "Refunds for annual plans are pro rata after thirty days. ".repeat(30);
    let texts = [
        "Rotate the signing keys every ninety days.",
        long.as_str(),
        "The incident commander owns the timeline.",
    ];
    // The stored vectors, as a pipeline stored them, but kb-1's and kb-3's swapped: the vector
    // column must search these, not vectors recomputed from the texts.
    let e = chunkscope_core::embed::Embedder::load(common::model()).unwrap();
    // Embedded at 256 (the long one is past 128): the screen takes the window from them.
    let v = e.embed(&texts, 256).unwrap();
    let lines = [
        serde_json::json!({"id": "kb-1", "page_content": texts[0], "metadata": {"source": "keys.md"}, "embedding": v[2]}),
        serde_json::json!({"id": "kb-2", "page_content": texts[1], "metadata": {"source": "refunds.md"}, "embedding": v[1]}),
        serde_json::json!({"id": "kb-3", "page_content": texts[2], "metadata": {"source": "incidents.md"}, "embedding": v[0]}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let session = format!("chunkscope-store-{}", std::process::id());
    let cmd = format!(
        "HF_HUB_OFFLINE=1 {} --store jsonl:{}; echo EXITED-$?; sleep 60",
        env!("CARGO_BIN_EXE_chunkscope"),
        file.display()
    );
    common::start_tmux(&session, 140, 40, &cmd);
    // OSC 52 copies land in tmux's paste buffer.
    common::tmux(&["set-option", "-g", "set-clipboard", "on"]);
    // The status line tells the detected window rather than "chunked in".
    let screen = common::wait_for_screen(
        &session,
        |s| s.contains("stored chunks of jsonl:") && s.contains("kb-3"),
        "the stored chunks",
    );
    common::wait_for_screen(
        &session,
        |s| s.contains("window 256 (detected: 1 of the 1 longest"),
        "the window detected from the stored vectors",
    );
    assert!(
        screen.contains("files 3") && screen.contains("kb-2"),
        "{screen}"
    );
    // A knob press re-chunks nothing: the three stored chunks stay.
    common::tmux(&["send-keys", "-t", &session, "+"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let screen = common::wait_for_screen(&session, |s| s.contains("chunked in"), "chunked again");
    assert!(
        screen.contains("files 3") && screen.contains("kb-3"),
        "{screen}"
    );
    common::tmux(&["send-keys", "-t", &session, "/"]);
    common::tmux(&["send-keys", "-t", &session, "-l", "signing keys"]);
    common::tmux(&["send-keys", "-t", &session, "Enter"]);
    let screen = common::wait_for_screen(
        &session,
        |s| s.contains("BM25") && s.contains("kb-1 #1"),
        "kb-1 among the hits",
    );
    // BM25 ranks kb-1 first on its words; the vector column ranks kb-3 first, whose stored
    // vector is kb-1's text's.
    let first_hits: Vec<&str> = screen.lines().filter(|l| l.contains(" 1 ")).collect();
    let row = first_hits
        .iter()
        .find(|l| l.matches("#1").count() >= 2)
        .unwrap_or_else(|| panic!("{screen}"));
    let (bm25, vector) = row.split_at(row.find("kb-").unwrap() + 6);
    assert!(bm25.contains("kb-1") && vector.contains("kb-3"), "{screen}");
    assert!(screen.contains("nothing embedded"), "{screen}");
    common::escape(&session, |s| !s.contains("BM25 (tantivy)"), "query closed");
    // Why not this chunk: kb-3 marked as expected, then a query it does not answer.
    common::tmux(&["send-keys", "-t", &session, "j"]);
    common::tmux(&["send-keys", "-t", &session, "j"]);
    common::tmux(&["send-keys", "-t", &session, "X"]);
    common::wait_for_screen(
        &session,
        |s| s.contains("expected chunk #1"),
        "expected chunk set",
    );
    common::tmux(&["send-keys", "-t", &session, "/"]);
    common::tmux(&["send-keys", "-t", &session, "-l", "refunds annual"]);
    common::tmux(&["send-keys", "-t", &session, "Enter"]);
    let screen = common::wait_for_screen(&session, |s| s.contains("why not kb-3 #1?"), "why not");
    assert!(screen.contains("bm25    not ranked"), "{screen}");
    assert!(screen.contains("last shown"), "{screen}");
    common::tmux(&["send-keys", "-t", &session, "C-y"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let copied = loop {
        let b = common::tmux(&["show-buffer"]);
        if b.contains("### chunkscope: query") || std::time::Instant::now() > deadline {
            break b;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(
        copied.contains(r#"### chunkscope: query "refunds annual""#),
        "{copied}"
    );
    assert!(
        copied.contains("chunkscope audit --store jsonl:"),
        "{copied}"
    );
    assert!(copied.contains("**expected: kb-3 #1**"), "{copied}");
    assert!(
        copied.contains("The incident commander owns the timeline."),
        "{copied}"
    );
    common::escape(&session, |s| !s.contains("why not kb-3"), "query closed");
    common::tmux(&["send-keys", "-t", &session, "q"]);
    common::wait_for_screen(&session, |s| s.contains("EXITED-0"), "EXITED-0");
    let _ = common::tmux(&["kill-session", "-t", &session]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// PDFs whose parser panics (tests/fixtures/broken: made by mutating an fpdf2 document) while
/// the workbench runs, at start and after it (through the watcher): each is a skip reason, and
/// the screen stays in the workbench, answering keys, whichever panic hook came first.
#[test]
fn parser_panics_leave_the_screen_alone() {
    if common::no_tmux() {
        return;
    }
    common::model();
    let dir = std::env::temp_dir().join(format!("chunkscope-tmux-panics-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let broken = common::repo().join("tests/fixtures/broken");
    std::fs::copy(broken.join("bad-operand.pdf"), dir.join("bad-operand.pdf")).unwrap();
    std::fs::write(
        dir.join("note.md"),
        "# Keys\n\nRotate the signing keys every ninety days.\n",
    )
    .unwrap();
    let session = format!("chunkscope-panics-{}", std::process::id());
    let cmd = format!(
        "HF_HUB_OFFLINE=1 {} {}; echo EXITED-$?; sleep 60",
        env!("CARGO_BIN_EXE_chunkscope"),
        dir.display()
    );
    common::start_tmux(&session, 140, 40, &cmd);
    common::wait_for_screen(&session, |s| s.contains("chunked in"), "chunked in");
    // A second broken document, converted while the screen is up.
    std::fs::copy(
        broken.join("missing-object.pdf"),
        dir.join("missing-object.pdf"),
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    common::tmux(&["send-keys", "-t", &session, "r"]);
    let screen = common::wait_for_screen(
        &session,
        |s| s.contains("chunked in") && s.contains("note.md"),
        "the workbench after the panics",
    );
    assert!(!screen.contains("panicked"), "{screen}");
    // Still in the workbench's alternate screen and answering: the help opens.
    common::tmux(&["send-keys", "-t", &session, "?"]);
    common::wait_for_screen(&session, |s| s.contains("help · chunks pane"), "help");
    common::tmux(&["send-keys", "-t", &session, "q"]);
    common::tmux(&["send-keys", "-t", &session, "q"]);
    common::wait_for_screen(&session, |s| s.contains("EXITED-0"), "EXITED-0");
    let _ = common::tmux(&["kill-session", "-t", &session]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reranker in the workbench: a query's first stage shows, then the fourth column fills with
/// the reranker's hits and says how it was made; tab reaches it and enter opens its hit; the
/// eval pane measures it as a fourth retriever with its time per query.
#[test]
fn rerank_column_in_tmux() {
    if common::no_tmux() {
        return;
    }
    common::model();
    let session = format!("chunkscope-e2e-rerank-{}", std::process::id());
    let reranker = common::repo().join("tests/fixtures/tiny-rerankers/bert-sigmoid");
    let cmd = format!(
        "HF_HUB_OFFLINE=1 {} {} --rerank {}; echo EXITED-$?; sleep 60",
        env!("CARGO_BIN_EXE_chunkscope"),
        common::repo().join("examples").display(),
        reranker.display()
    );
    common::start_tmux(&session, 220, 44, &cmd);
    common::wait_for_screen(&session, |s| s.contains("chunked in"), "the first chunking");
    common::tmux(&["send-keys", "-t", &session, "/"]);
    common::tmux(&["send-keys", "-t", &session, "-l", "signing keys"]);
    common::tmux(&["send-keys", "-t", &session, "Enter"]);
    let screen = common::wait_for_screen(
        &session,
        |s| s.contains("rerank (bert-sigmoid)") && s.contains(" scored · "),
        "the reranker's column",
    );
    assert!(screen.contains("BM25 (tantivy)"), "{screen}");
    assert!(screen.contains(" cut · "), "{screen}");
    for _ in 0..3 {
        common::tmux(&["send-keys", "-t", &session, "Tab"]);
    }
    common::tmux(&["send-keys", "-t", &session, "Enter"]);
    common::wait_for_screen(
        &session,
        |s| !s.contains("rerank (bert-sigmoid)") && !s.contains("BM25 (tantivy)"),
        "the reranked hit opened in the chunks pane",
    );
    common::tmux(&["send-keys", "-t", &session, "e"]);
    let screen = common::wait_for_screen(
        &session,
        |s| s.contains("rerank bert-sigmoid (pair window") && !s.contains("re-evaluating"),
        "the eval pane with the reranker",
    );
    assert!(screen.contains("ms/query"), "{screen}");
    assert!(screen.contains("  rerank "), "{screen}");
    common::escape(
        &session,
        |s| !s.contains("rerank bert-sigmoid (pair window"),
        "eval closed",
    );
    common::tmux(&["send-keys", "-t", &session, "q"]);
    common::wait_for_screen(&session, |s| s.contains("EXITED-0"), "EXITED-0");
    let _ = common::tmux(&["kill-session", "-t", &session]);
}
