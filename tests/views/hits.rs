//! What the chunk pane shows of a hit opened from the query pane, and of a corpus still partly chunked.

use super::*;

/// Enter on a hit whose match sits deep in its chunk: on a short terminal the chunk pane is
/// centred on the match, every matched term is marked, and n moves to the next match.
#[test]
fn enter_on_a_hit_shows_the_match() {
    use chunkscope::app::{update, Msg};
    use chunkscope_core::jobs::Event;
    use chunkscope_core::search::{Hit, Results};
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    let mut m = model(Theme::dark());
    let (engine, chunking) = (m.engine.clone().unwrap(), m.chunking.clone().unwrap());
    let doc = &engine.corpus.docs[chunking.files[0].doc].text;
    let (ci, at) = chunking.files[0]
        .chunks
        .iter()
        .rev()
        .find_map(|c| c.text(doc).find("kubectl").map(|at| (c.index as usize, at)))
        .expect("a chunk holds kubectl");
    let key = |c: KeyCode| Msg::Key(KeyEvent::new(c, KeyModifiers::NONE));
    update(&mut m, key(KeyCode::Char('/')));
    for c in "restart kubectl".chars() {
        update(&mut m, key(KeyCode::Char(c)));
    }
    let id = match &update(&mut m, key(KeyCode::Enter))[..] {
        [chunkscope::app::Cmd::Query { id, .. }] => *id,
        other => panic!("{other:?}"),
    };
    let hit = Hit {
        rank: 1,
        score: 1.0,
        file: "runbooks/rotate-keys.md".into(),
        id: None,
        file_pos: 0,
        chunk: ci,
        heading: None,
        match_byte: Some(at),
        token_offset: Some(60),
        in_tail: true,
        only_here: false,
        parent: None,
        page_start: None,
        page_end: None,
    };
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
    update(&mut m, key(KeyCode::Enter));
    let h = m.chunks.highlight.clone().expect("a highlight");
    assert!(h.spans.len() >= 2, "both terms are marked: {:?}", h.spans);
    let draw = |m: &Model| {
        let mut t = Terminal::new(TestBackend::new(90, 8)).unwrap();
        t.draw(|f| ui::draw(f, m)).unwrap();
        t
    };
    let t = draw(&m);
    let screen = t.backend().to_string();
    assert!(screen.contains("kubectl"), "{screen}");
    let buf = t.backend().buffer();
    let marked = (0..buf.area.height).any(|y| {
        (0..buf.area.width)
            .any(|x| buf[(x, y)].symbol() == "k" && buf[(x, y)].style().bg == m.theme.selected.bg)
    });
    assert!(marked, "the match is drawn in the selected style");
    let mut from_top = draw(&{
        let mut top = model(Theme::dark());
        top.chunks.focus_chunk = ci;
        top
    });
    assert!(
        !from_top.backend_mut().to_string().contains("kubectl"),
        "at this height the match is out of view from the chunk's top"
    );
    // n goes to the next match in the chunk, not to the next chunk.
    let before = (m.chunks.focus_chunk, h.current);
    update(&mut m, key(KeyCode::Char('n')));
    let after = m.chunks.highlight.as_ref().unwrap().current;
    assert_eq!(m.chunks.focus_chunk, before.0);
    assert_eq!(after, (before.1 + 1).min(h.spans.len() - 1));
}

/// A knob turn's selected file chunked ahead of the rest: the chunks pane shows its new chunks
/// and is not marked stale, the stats and the status line say the corpus is partly re-chunked.
#[test]
fn the_selected_file_ahead_of_a_partial_corpus() {
    let mut m = model(Theme::dark());
    let engine = m.engine.clone().unwrap();
    let before = render(&m).backend().to_string();
    assert!(before.contains("chunk 1/"), "{before}");
    let mut next = m.settings.clone();
    next.size = 30;
    next.overlap = 0;
    let ahead = engine.chunk_docs(&[0], &next, None, None);
    let n_new = ahead[0].chunks.len();
    assert_ne!(n_new, m.chunking.as_ref().unwrap().files[0].chunks.len());
    m.settings = next.clone();
    m.generation += 1;
    m.partial = Some(chunkscope::app::PartialChunks {
        generation: m.generation,
        settings: next,
        files: ahead.iter().cloned().map(|f| (f.doc, f)).collect(),
        head: None,
        done: 1,
        total: 2,
    });
    let screen = render(&m).backend().to_string();
    let title = screen
        .lines()
        .find(|l| l.contains("runbooks/rotate-keys.md · chunk"))
        .unwrap_or_default();
    assert!(title.contains(&format!("chunk 1/{n_new}")), "{screen}");
    assert!(
        !title.contains("stale"),
        "the selected file is fresh: {title}"
    );
    assert!(screen.contains("stats · partial: 1/2 files"), "{screen}");
    assert!(
        screen.contains("chunking… 1 of 2 files (the files on screen first)"),
        "{screen}"
    );

    // A large file's first chunks only, the rest of it still being chunked: "+" after the count
    // in the chunk pane's title and in the files pane.
    let mut first = ahead[0].clone();
    first.chunks = std::sync::Arc::new(first.chunks[..3].to_vec());
    let p = m.partial.as_mut().unwrap();
    p.files.insert(0, first);
    p.head = Some(0);
    p.done = 0;
    let screen = render(&m).backend().to_string();
    let title = screen
        .lines()
        .find(|l| l.contains("runbooks/rotate-keys.md · chunk"))
        .unwrap_or_default();
    assert!(title.contains("chunk 1/3+ "), "{screen}");
    assert!(screen.contains("─── chunk 1/3+ · "), "{screen}");
    let row = screen
        .lines()
        .find(|l| l.contains("│runbooks/rotate-keys.md "))
        .unwrap_or_default();
    assert!(row.contains(" 3+│"), "{screen}");
}
