//! The query pane: editing, running, opening hits and the reranker's column.

use super::*;

#[test]
fn query_mode_edits_runs_and_opens_a_hit() {
    use chunkscope_core::jobs::Event;
    use chunkscope_core::search::{Hit, Results};
    let mut m = model();
    m.chunking = Some(Arc::new(Chunking {
        settings: m.settings.clone(),
        files: Vec::new(),
        stored_vectors: None,
    }));
    update(&mut m, key('/'));
    assert_eq!(m.view, View::Query);
    for c in "q w?".chars() {
        assert!(
            update(&mut m, key(c)).is_empty(),
            "typing is text, not actions"
        );
    }
    assert_eq!(m.query.input.text, "q w?");
    assert!(!m.quit);
    let cmds = update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
    );
    assert!(matches!(&cmds[..], [Cmd::Query { text, k: 5, .. }] if text == "q w?"));
    let hit = Hit {
        rank: 1,
        score: 1.0,
        file: "a.md".into(),
        id: None,
        file_pos: 2,
        chunk: 3,
        heading: None,
        match_byte: Some(40),
        token_offset: Some(9),
        in_tail: false,
        only_here: true,
        parent: None,
        page_start: None,
        page_end: None,
    };
    let id = m.query.pending.unwrap();
    let generation = m.chunked_generation;
    update(
        &mut m,
        Msg::Job(Event::QueryDone {
            id,
            generation,
            result: Ok(Results {
                bm25: vec![hit],
                ..Results::default()
            }),
        }),
    );
    assert!(m.query.results.is_some());
    update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
    );
    assert_eq!(m.view, View::Chunks);
    assert_eq!((m.chunks.selected, m.chunks.focus_chunk), (2, 3));
    assert_eq!(
        m.chunks
            .highlight
            .as_ref()
            .map(|h| (h.file_pos, h.chunk, h.current_span().map(|s| s.0))),
        Some((2, 3, Some(40)))
    );
}

/// In the query pane a typed word is text wherever the focus is: "quota" never quits and "s" never
/// switches the strategy, before or after Enter.
#[test]
fn typing_in_the_query_pane_is_never_a_command() {
    let mut m = model();
    with_chunking(&mut m);
    let before = m.settings.clone();
    update(&mut m, key('/'));
    for c in "quota s".chars() {
        assert!(update(&mut m, key(c)).is_empty());
    }
    let cmds = update(&mut m, code(KeyCode::Enter, KeyModifiers::NONE));
    assert!(matches!(&cmds[..], [Cmd::Query { text, .. }] if text == "quota s"));
    assert!(!m.query.editing, "the results have the focus after Enter");
    for c in "quit pw+".chars() {
        assert!(update(&mut m, key(c)).is_empty(), "{c} acted");
    }
    assert!(!m.quit);
    assert_eq!(m.settings, before);
    assert_eq!(m.view, View::Query);
    assert!(m.query.editing, "typing brings the focus back to the box");
    assert_eq!(m.query.input.text, "quota squit pw+");
    // `?` is text too; F1 opens the help from inside the box, and closes it.
    update(&mut m, key('?'));
    assert_eq!(m.query.input.text, "quota squit pw+?");
    update(&mut m, code(KeyCode::F(1), KeyModifiers::NONE));
    assert!(m.show_help);
    update(&mut m, code(KeyCode::F(1), KeyModifiers::NONE));
    assert!(!m.show_help);
    assert_eq!(
        (m.view, m.query.input.text.as_str()),
        (View::Query, "quota squit pw+?")
    );
    // ctrl-c still quits.
    let cmds = update(&mut m, code(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(matches!(cmds[..], [Cmd::Quit]));
}

#[test]
fn readline_keys_paste_and_history() {
    let mut m = model();
    with_chunking(&mut m);
    update(&mut m, key('/'));
    for c in "rotate the keys".chars() {
        update(&mut m, key(c));
    }
    update(&mut m, code(KeyCode::Char('w'), KeyModifiers::CONTROL));
    assert_eq!(m.query.input.text, "rotate the ");
    update(&mut m, code(KeyCode::Char('a'), KeyModifiers::CONTROL));
    update(&mut m, code(KeyCode::Char('f'), KeyModifiers::ALT));
    assert_eq!(m.query.input.cursor, "rotate".len());
    update(&mut m, code(KeyCode::Char('k'), KeyModifiers::CONTROL));
    assert_eq!(m.query.input.text, "rotate");
    update(&mut m, Msg::Paste(" signing\nkeys".into()));
    assert_eq!(m.query.input.text, "rotate signing keys");
    update(&mut m, code(KeyCode::Left, KeyModifiers::NONE));
    update(&mut m, code(KeyCode::Char('u'), KeyModifiers::CONTROL));
    assert_eq!(m.query.input.text, "s");
    update(&mut m, code(KeyCode::End, KeyModifiers::NONE));
    update(&mut m, code(KeyCode::Backspace, KeyModifiers::NONE));
    for c in "first".chars() {
        update(&mut m, key(c));
    }
    update(&mut m, code(KeyCode::Enter, KeyModifiers::NONE));
    update(&mut m, key('/'));
    assert!(m.query.input.select_all, "/ selects the previous query");
    for c in "second".chars() {
        update(&mut m, key(c));
    }
    assert_eq!(
        m.query.input.text, "second",
        "typing replaced the selection"
    );
    update(&mut m, code(KeyCode::Enter, KeyModifiers::NONE));
    update(&mut m, key('/'));
    update(&mut m, code(KeyCode::Up, KeyModifiers::NONE));
    assert_eq!(m.query.input.text, "second");
    update(&mut m, code(KeyCode::Up, KeyModifiers::NONE));
    assert_eq!(m.query.input.text, "first");
    update(&mut m, code(KeyCode::Down, KeyModifiers::NONE));
    update(&mut m, code(KeyCode::Down, KeyModifiers::NONE));
    assert_eq!(m.query.input.text, "", "past the newest: an empty box");
}

/// With a reranker configured, the query's first stage shows at once and the reranker's column
/// follows as its own event; tab reaches that fourth column only when a reranker is set, and a
/// reranking for an older query is dropped.
#[test]
fn the_rerank_column_follows_the_first_stage() {
    use chunkscope_core::jobs::{Event, JobError};
    use chunkscope_core::rerank::stage::{RerankInfo, Reranked};
    use chunkscope_core::search::{Hit, Results};
    let mut m = model();
    m.chunking = Some(Arc::new(Chunking {
        settings: m.settings.clone(),
        files: Vec::new(),
        stored_vectors: None,
    }));
    let tab = || Msg::Key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    // Without a reranker, tab cycles the three first-stage columns.
    m.query.column = Retriever::Hybrid;
    assert_eq!(m.query.next_column(), Retriever::Bm25);
    update(
        &mut m,
        Msg::Configured(Box::new(Setup {
            reranker: Some("/models/ms-marco-MiniLM-L-6-v2".into()),
            ..Setup::default()
        })),
    );
    update(&mut m, key('/'));
    for c in "rotate".chars() {
        update(&mut m, key(c));
    }
    update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
    );
    let id = m.query.pending.unwrap();
    let generation = m.chunked_generation;
    let hit = |file: &str| Hit {
        rank: 1,
        score: 0.9,
        file: file.into(),
        id: None,
        file_pos: 0,
        chunk: 0,
        heading: None,
        match_byte: None,
        token_offset: None,
        in_tail: false,
        only_here: false,
        parent: None,
        page_start: None,
        page_end: None,
    };
    update(
        &mut m,
        Msg::Job(Event::QueryDone {
            id,
            generation,
            result: Ok(Results {
                bm25: vec![hit("a.md")],
                ..Results::default()
            }),
        }),
    );
    assert!(m.query.results.is_some() && m.query.reranking());
    let reranked = Reranked {
        hits: vec![hit("b.md")],
        info: RerankInfo {
            model: "/models/ms-marco-MiniLM-L-6-v2".into(),
            window: 512,
            candidates: 7,
            truncated: 1,
            millis: 12.5,
        },
    };
    // A reranking of an older query is not this one's.
    update(
        &mut m,
        Msg::Job(Event::Reranked {
            id: id - 1,
            generation,
            result: Ok(reranked.clone()),
        }),
    );
    assert!(m.query.reranking());
    update(
        &mut m,
        Msg::Job(Event::Reranked {
            id,
            generation,
            result: Ok(reranked),
        }),
    );
    assert!(!m.query.reranking());
    m.query.editing = false;
    m.query.column = Retriever::Bm25;
    for want in [Retriever::Vector, Retriever::Hybrid, Retriever::Rerank] {
        update(&mut m, tab());
        assert_eq!(m.query.column, want);
    }
    assert_eq!(m.query.hits()[0].file, "b.md");
    update(&mut m, tab());
    assert_eq!(m.query.column, Retriever::Bm25);
    // A reranker that failed says why in its column.
    update(
        &mut m,
        Msg::Job(Event::Reranked {
            id,
            generation,
            result: Err(JobError::Rerank("/models/x: not a folder".into())),
        }),
    );
    assert_eq!(
        m.query.reranked.as_ref().unwrap().as_ref().unwrap_err(),
        "reranker: /models/x: not a folder"
    );
}
