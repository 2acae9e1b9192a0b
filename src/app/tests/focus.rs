//! The focused file ahead of the whole chunking.

use super::*;

/// A knob turn asks for the selected file first; its chunks arriving ahead of the whole chunking
/// replace the selected file's on screen at once, the stats say they are partial, and nothing
/// downstream (embedding, the finished chunking) sees them until the whole chunking comes.
#[test]
fn focused_file_ahead_of_the_whole_chunking() {
    use chunkscope_core::corpus::{Corpus, Document};
    use chunkscope_core::engine::Engine;
    use std::sync::atomic::AtomicBool;

    let info = chunkscope_core::model::locate(chunkscope_core::model::DEFAULT_MODEL, &mut |_| {})
        .expect("the real model (README: the test command fetches it)");
    let tok = Arc::new(
        chunkscope_core::tokenize::EmbedTokenizer::from_file(&info.tokenizer_path()).unwrap(),
    );
    let long = "Keys are rotated by the platform team every ninety days. ".repeat(200);
    let corpus = Corpus {
        root: "corpus".into(),
        docs: vec![
            Document::plain("a.md".into(), long.clone()),
            Document::plain("b.md".into(), format!("# B\n\n{long}")),
            Document::plain("c.md".into(), "A short note.".into()),
        ],
        skipped: Vec::new(),
    };
    let engine = Arc::new(Engine::new(info, tok, corpus).unwrap());
    let mut m = model();
    let never = AtomicBool::new(false);
    let old = Arc::new(engine.chunk_all(&m.settings, &never).unwrap());
    m.engine = Some(Arc::clone(&engine));
    m.chunking = Some(Arc::clone(&old));
    m.loading = false;
    m.generation = 4;
    m.chunked_generation = 4;
    m.chunks.selected = 1;
    m.size = (120, 40);

    let cmds = update(&mut m, key('-'));
    let [Cmd::Rechunk {
        generation,
        settings,
        focus,
    }] = &cmds[..]
    else {
        panic!("{cmds:?}")
    };
    assert_eq!(*generation, 5);
    assert_eq!(
        focus.files,
        vec![1, 0, 2],
        "the selected file, then the others on screen"
    );
    let rows = crate::layout::areas(ratatui::layout::Rect::new(0, 0, 120, 40))
        .main
        .height as usize;
    assert_eq!(
        focus.reach,
        rows + 1,
        "the focused chunk (the first) and at most one a row below it"
    );
    let settings = settings.clone();
    let ahead = engine.chunk_docs(&[1], &settings, None, None);
    assert_ne!(ahead[0].chunks, old.files[1].chunks, "smaller chunks");

    // An older generation's, or another engine's, files are not shown.
    for (generation, e) in [
        (4, Arc::clone(&engine)),
        (
            5,
            Arc::new(
                Engine::new(
                    engine.model.clone(),
                    Arc::clone(&engine.tok),
                    engine.corpus.clone(),
                )
                .unwrap(),
            ),
        ),
    ] {
        update(
            &mut m,
            Msg::Job(Event::FocusChunked {
                generation,
                engine: e,
                settings: settings.clone(),
                files: ahead.clone(),
                done: 1,
                total: 3,
                head: false,
            }),
        );
        assert!(m.partial.is_none());
    }

    // A large file's first chunks come before the rest of it: shown, and said to be the first.
    let mut first = ahead[0].clone();
    first.chunks = Arc::new(first.chunks[..1].to_vec());
    update(
        &mut m,
        Msg::Job(Event::FocusChunked {
            generation: 5,
            engine: Arc::clone(&engine),
            settings: settings.clone(),
            files: vec![first.clone()],
            done: 0,
            total: 3,
            head: true,
        }),
    );
    assert_eq!(m.file_chunks(1), Some(&first));
    assert!(m.head_only(1) && !m.head_only(0));
    let cmds = update(
        &mut m,
        Msg::Job(Event::FocusChunked {
            generation: 5,
            engine: Arc::clone(&engine),
            settings: settings.clone(),
            files: ahead.clone(),
            done: 1,
            total: 3,
            head: false,
        }),
    );
    assert!(!m.head_only(1), "the whole file replaced its first chunks");
    assert!(
        cmds.is_empty(),
        "nothing is embedded or indexed from a partial result"
    );
    assert_eq!(
        m.file_chunks(1),
        Some(&ahead[0]),
        "the selected file shows its new chunks"
    );
    assert_eq!(m.file_chunks(0), Some(&old.files[0]), "the others wait");
    assert!(
        Arc::ptr_eq(m.chunking.as_ref().unwrap(), &old),
        "the finished chunking stays"
    );
    assert_eq!(m.chunks_in_selected(), ahead[0].chunks.len());
    assert!(m.selected_ahead());
    assert!(m.stale(), "the corpus as a whole is not chunked yet");
    assert_eq!(
        crate::ui::partial_label(&m).as_deref(),
        Some("partial: 1/3 files")
    );
    update(
        &mut m,
        Msg::Job(Event::ChunkProgress {
            generation: 5,
            done: 2,
            total: 3,
        }),
    );
    assert_eq!(
        crate::ui::partial_label(&m).as_deref(),
        Some("partial: 2/3 files")
    );

    // The whole chunking clears the partial state and is what gets embedded.
    let whole = Arc::new(engine.chunk_all(&settings, &never).unwrap());
    let cmds = update(
        &mut m,
        Msg::Job(Event::Chunked {
            generation: 5,
            engine: Arc::clone(&engine),
            result: Ok(Arc::clone(&whole)),
            millis: 1,
        }),
    );
    assert!(m.partial.is_none());
    assert!(crate::ui::partial_label(&m).is_none());
    assert!(!m.stale());
    assert_eq!(m.file_chunks(1), Some(&whole.files[1]));
    assert!(
        matches!(&cmds[..], [Cmd::Embed { chunking, .. }] if Arc::ptr_eq(chunking, &whole)),
        "{cmds:?}"
    );
}
