//! The find view: files and lines, clicks, and a reload under it.

use super::*;

/// F finds files by name (letters in order) and lines by text; typing never quits, Enter on a
/// line opens its chunk centred on the match.
#[test]
fn find_files_and_lines() {
    use chunkscope::app::find::{results, Found};
    use chunkscope::app::{update, Msg, View};
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    let mut m = model(Theme::dark());
    let key = |c: KeyCode| Msg::Key(KeyEvent::new(c, KeyModifiers::NONE));
    update(&mut m, key(KeyCode::Char('F')));
    assert_eq!(m.view, View::Find);
    for c in "qshort".chars() {
        update(&mut m, key(KeyCode::Char(c)));
    }
    assert!(!m.quit, "q is text here");
    assert!(results(&m).is_empty(), "no file has q before short");
    update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL)),
    );
    for c in "nshort".chars() {
        update(&mut m, key(KeyCode::Char(c)));
    }
    assert!(
        matches!(results(&m)[..], [Found::File { file_pos: 1 }]),
        "{:?}",
        results(&m)
    );
    update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL)),
    );
    for c in "KUBECTL rollout".chars() {
        update(&mut m, key(KeyCode::Char(c)));
    }
    let found = results(&m);
    let Some(Found::Line {
        file_pos: 0,
        line,
        span,
        chunk,
        ..
    }) = found.first().cloned()
    else {
        panic!("{found:?}")
    };
    assert_eq!(
        line, 3,
        "heading, blank line, then the paragraph: {found:?}"
    );
    let engine = m.engine.clone().unwrap();
    let chunking = m.chunking.clone().unwrap();
    let doc = &engine.corpus.docs[chunking.files[0].doc].text;
    let text = chunking.files[0].chunks[chunk].text(doc);
    assert_eq!(&text[span.0..span.1], "kubectl rollout");
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.view, View::Chunks);
    assert_eq!(m.chunks.focus_chunk, chunk);
    assert!(m.chunks.centre_on_match);
}

/// With the mouse on, a click on a row of the files pane selects that file.
#[test]
fn a_click_selects_a_file() {
    use chunkscope::app::{update, Msg};
    use ratatui::crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

    let mut m = model(Theme::dark());
    update(&mut m, Msg::Resize(120, 32));
    let click = |row: u16| {
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 5,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    // Row 0 is the top bar, row 1 the pane's border; files from row 2.
    update(&mut m, click(3));
    assert_eq!(m.chunks.selected, 1);
    update(&mut m, click(2));
    assert_eq!(m.chunks.selected, 0);
    update(&mut m, click(30));
    assert_eq!(
        m.chunks.selected, 0,
        "a click outside the files does nothing"
    );
}

/// A reload while the find view is open: the file its results pointed at is gone, the results
/// are found again in the new chunking, and drawing never indexes past the files.
#[test]
fn find_view_across_a_reload() {
    use chunkscope::app::find::Found;
    use chunkscope::app::{update, Msg, View};
    use chunkscope_core::jobs::Event;
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    let mut m = model(Theme::dark());
    let key = |c: KeyCode| Msg::Key(KeyEvent::new(c, KeyModifiers::NONE));
    update(&mut m, key(KeyCode::Char('F')));
    for c in "short".chars() {
        update(&mut m, key(KeyCode::Char(c)));
    }
    assert!(m
        .find
        .found
        .iter()
        .any(|f| matches!(f, Found::File { file_pos: 1 })));
    // notes/short.txt deleted: the new corpus holds the runbook alone.
    let corpus = Corpus {
        root: "corpus".into(),
        docs: vec![Document::plain(
            "runbooks/rotate-keys.md".into(),
            RUNBOOK.into(),
        )],
        skipped: Vec::new(),
    };
    let engine =
        Arc::new(Engine::new(common::model().clone(), common::tokenizer(), corpus).unwrap());
    let chunking = engine
        .chunk_all(&m.settings, &AtomicBool::new(false))
        .unwrap();
    let generation = m.generation;
    update(
        &mut m,
        Msg::Job(Event::Chunked {
            generation,
            engine,
            result: Ok(Arc::new(chunking)),
            millis: 1,
        }),
    );
    assert_eq!(m.view, View::Find);
    assert!(
        m.find.found.iter().all(|f| match f {
            Found::File { file_pos } | Found::Line { file_pos, .. } => *file_pos == 0,
        }),
        "{:?}",
        m.find.found
    );
    let screen = render(&m).backend().to_string();
    assert!(screen.contains("found"), "{screen}");
    update(&mut m, key(KeyCode::Enter));
}
