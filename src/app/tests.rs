use super::*;
use crate::theme::Theme;
use chunkscope_core::chunk::Strategy;
use chunkscope_core::tokenize::Unit;
use chunkscope_core::window::{ModelWindows, WindowSpec};
use keymap::Keymap;
use ratatui::crossterm::event::{KeyCode, KeyModifiers};

fn model() -> Model {
    Model::new(
        "examples".into(),
        "m".into(),
        ModelWindows {
            tokenizer_json: Some(128),
            sentence_transformers: Some(256),
            max_positions: Some(512),
            ..ModelWindows::default()
        },
        2,
        ChunkSettings::default(),
        WindowSpec::Auto,
        Theme::dark(),
        Keymap::default(),
    )
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

#[test]
fn knobs_before_load_change_settings_but_send_nothing() {
    let mut m = model();
    assert!(update(&mut m, key('+')).is_empty());
    assert_eq!(m.settings.size, 900);
}

#[test]
fn refused_knob_keeps_settings_and_names_the_setting() {
    let mut m = model();
    let before = m.settings.clone();
    update(&mut m, key(']'));
    assert_eq!(m.settings, before);
    assert!(m.error.as_deref().unwrap().contains("overlap"));
    update(&mut m, key('u'));
    assert!(m.error.as_deref().unwrap().contains("chunking.unit"));
}

#[test]
fn window_cycles_without_rechunking() {
    let mut m = model();
    assert_eq!(m.window().tokens, 128);
    assert!(update(&mut m, key('w')).is_empty());
    assert_eq!(m.window().tokens, 256);
    update(&mut m, key('w'));
    assert_eq!(m.window().tokens, 512);
}

#[test]
fn preset_cycles() {
    let mut m = model();
    update(&mut m, key('p'));
    assert_eq!(m.settings.strategy, Strategy::Langchain);
    assert_eq!(
        (m.settings.size, m.settings.overlap, m.settings.unit),
        (1500, 150, Unit::Chars)
    );
    update(&mut m, key('p'));
    assert_eq!(
        (m.settings.size, m.settings.overlap, m.settings.unit),
        (240, 32, Unit::Embed)
    );
    update(&mut m, key('p'));
    assert_eq!(m.settings.strategy, Strategy::Markdown);
    update(&mut m, key('p'));
    assert_eq!(m.settings.strategy, Strategy::MaxMin);
    assert_eq!(m.settings.overlap, 0);
    // Threshold keys turn the maxmin knobs, in steps of 0.05.
    update(&mut m, key('}'));
    assert_eq!(m.settings.maxmin.fixed_threshold, 0.65);
    update(&mut m, key('('));
    assert_eq!(m.settings.maxmin.c, 0.85);
    // Tuned since, the settings are no preset: the cycle goes on from the one they came from.
    update(&mut m, key('p'));
    assert_eq!(m.settings.strategy, Strategy::TextSplitter);
    // Outside maxmin the threshold keys say where they belong and change nothing.
    let before = m.settings.clone();
    update(&mut m, key('}'));
    assert_eq!(m.settings, before);
    assert!(m.error.as_deref().unwrap().contains("maxmin"));
    // A size turned on the first preset: the next is the second, not the first again.
    let mut m = model();
    update(&mut m, key('p'));
    update(&mut m, key('+'));
    assert_eq!(m.settings.unit, Unit::Chars);
    assert_ne!(m.settings.size, 1500);
    update(&mut m, key('p'));
    assert_eq!(
        (m.settings.size, m.settings.overlap, m.settings.unit),
        (240, 32, Unit::Embed)
    );
}

/// semchunk's automatic size is not stepped to 1: the keys say to type a size, and do nothing.
#[test]
fn size_keys_leave_semchunk_auto_alone() {
    let mut m = model();
    while m.settings.strategy != Strategy::Semchunk {
        update(&mut m, key('p'));
    }
    assert_eq!(m.settings.size, 0);
    let before = m.settings.clone();
    update(&mut m, key('+'));
    update(&mut m, key('-'));
    assert_eq!(m.settings, before);
    assert!(m.error.as_deref().unwrap().contains("auto"));
}

#[test]
fn metadata_and_parents_keys() {
    let mut m = model();
    update(&mut m, key('m'));
    assert_eq!(
        m.settings.metadata.heading,
        chunkscope_core::metadata::Use::Embed
    );
    update(&mut m, key('m'));
    assert_eq!(
        m.settings.metadata.file,
        chunkscope_core::metadata::Use::Embed
    );
    update(&mut m, key('m'));
    assert!(!m.settings.metadata.embeds_anything());
    update(&mut m, key('b'));
    assert!(m.settings.parents);
}

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

#[test]
fn quit_and_help() {
    let mut m = model();
    update(&mut m, key('?'));
    assert!(m.show_help);
    update(&mut m, key('s'));
    assert!(!m.show_help, "any key closes help");
    assert!(matches!(update(&mut m, key('q'))[..], [Cmd::Quit]));
}

fn code(c: ratatui::crossterm::event::KeyCode, mods: KeyModifiers) -> Msg {
    Msg::Key(KeyEvent::new(c, mods))
}

fn with_chunking(m: &mut Model) {
    m.chunking = Some(Arc::new(Chunking {
        settings: m.settings.clone(),
        files: Vec::new(),
        stored_vectors: None,
    }));
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

#[test]
fn terminate_quits_like_q() {
    let mut m = model();
    assert!(matches!(update(&mut m, Msg::Terminate)[..], [Cmd::Quit]));
    assert!(m.quit);
}

/// `E` asks for the next model of `[model] compare` off the UI thread; a model that cannot be
/// had leaves the previous one, read again; an answer for an older switch is dropped.
#[test]
fn next_model_switches_or_keeps_the_previous_one() {
    let mut m = model();
    assert!(
        update(&mut m, key('E')).is_empty(),
        "one model: nothing to switch to"
    );
    assert!(m
        .info
        .as_deref()
        .is_some_and(|i| i.contains("[model] compare")));
    m.models = vec!["a".into(), "b".into()];
    let cmds = update(&mut m, key('E'));
    let generation = m.generation;
    assert!(
        matches!(&cmds[..], [Cmd::SwitchModel { model, generation: g, .. }] if model == "b" && *g == generation)
    );
    let stale = Msg::ModelReady {
        generation: generation - 1,
        result: Err("late".into()),
    };
    assert!(update(&mut m, stale).is_empty());
    let failed = Msg::ModelReady {
        generation,
        result: Err("model b: not found".into()),
    };
    let cmds = update(&mut m, failed);
    assert!(matches!(cmds[..], [Cmd::Load { generation: g }] if g == generation));
    assert!(m
        .error
        .as_deref()
        .is_some_and(|e| e.contains("the previous model stays")));
}

/// `B` pressed before the session is configured (no model list yet) asks for nothing and
/// does not panic.
#[test]
fn precision_key_before_the_models_are_known() {
    let mut m = model();
    m.models.clear();
    let cmds = update(&mut m, key('B'));
    assert!(cmds.is_empty(), "{cmds:?}");
}

/// `B` cycles the native backend's precision on the same model (f32, bf16, int8, f32), through
/// the same switch as `E`, so a pinned eval A compares precisions; a server has none to cycle.
#[test]
fn next_precision_cycles_on_the_same_model() {
    use chunkscope_core::embed::lowp::Precision;
    let mut m = model();
    m.models = vec!["a".into(), "b".into()];
    m.model_index = 1;
    m.backend = "native f32 · mean".into();
    for want in [Precision::Bf16, Precision::Int8, Precision::F32] {
        let cmds = update(&mut m, key('B'));
        let generation = m.generation;
        assert!(
            matches!(&cmds[..], [Cmd::SwitchModel { model, precision, generation: g }]
                if model == "b" && *precision == want && *g == generation),
            "{cmds:?}"
        );
        assert_eq!(m.precision, want);
    }
    m.backend = "remote http://127.0.0.1:8080/v1 m".into();
    m.backend_kind = chunkscope_core::embed::BackendKind::Remote;
    assert!(update(&mut m, key('B')).is_empty());
    assert!(m
        .info
        .as_deref()
        .is_some_and(|i| i.contains("only the native backend")));
}

/// + then - (and - then +) come back to the same size and overlap, whatever the steps rounded.
#[test]
fn knob_turns_retrace() {
    let mut m = model();
    update(&mut m, key('p')); // langchain-chars 1500 / 150
    let start = (m.settings.size, m.settings.overlap);
    for keys in ["++--", "--++", "+-+-", "]][[", "[[]]", "+]-["] {
        for c in keys.chars() {
            update(&mut m, key(c));
        }
        assert_eq!((m.settings.size, m.settings.overlap), start, "after {keys}");
    }
    update(&mut m, key('+'));
    update(&mut m, key('+'));
    assert_ne!(m.settings.size, start.0);
}

/// y hands the terminal the headless command line of the knobs on screen.
#[test]
fn copy_gives_the_command_line() {
    let mut m = model();
    update(&mut m, key('p'));
    let cmds = update(&mut m, key('y'));
    let [Cmd::Copy { text }] = &cmds[..] else {
        panic!("{cmds:?}")
    };
    assert_eq!(
        text,
        "chunkscope audit examples --strategy langchain --unit chars --size 1500 --overlap 150 --window auto"
    );
    assert!(m.info.as_deref().unwrap().contains(text.as_str()));
}

/// Y hands the terminal the knobs as code for the strategy's framework: Java for spring-ai,
/// Python for langchain, workbench.toml for chunkscope's own strategies.
#[test]
fn copy_as_code_follows_the_strategy() {
    let mut m = model();
    let copied = |m: &mut Model| {
        let cmds = update(m, key('Y'));
        let [Cmd::Copy { text }] = &cmds[..] else {
            panic!("{cmds:?}")
        };
        (text.clone(), m.info.clone().unwrap_or_default())
    };
    let (java, info) = copied(&mut m);
    assert!(java.contains(".withChunkSize(800)"), "{java}");
    assert!(info.contains("Java for Spring AI"), "{info}");
    update(&mut m, key('p')); // langchain-chars 1500 / 150
    let (py, info) = copied(&mut m);
    assert!(py.contains("chunk_size=1500,"), "{py}");
    assert!(info.contains("Python for LangChain"), "{info}");
    update(&mut m, key('p')); // langchain-tokens
    update(&mut m, key('p')); // markdown
    let (toml, info) = copied(&mut m);
    assert!(toml.contains("strategy = \"markdown\""), "{toml}");
    assert!(info.contains("TOML for workbench.toml"), "{info}");
    // A store's chunks were made by the user's pipeline, not by these knobs.
    m.store = Some("jsonl:chunks.jsonl".into());
    assert!(update(&mut m, key('Y')).is_empty());
    assert!(m.error.as_deref().unwrap().contains("stored chunks"));
}

/// S, O and : open a number prompt: digits only, enter applies through the same rules as the
/// knob keys, esc cancels; ctrl-up / ctrl-down change k in the query pane and run the query again.
#[test]
fn typed_values_and_k() {
    let mut m = model();
    with_chunking(&mut m);
    update(&mut m, key('p')); // langchain-chars 1500 / 150
    update(&mut m, key('S'));
    for c in "12x30".chars() {
        update(&mut m, key(c));
    }
    assert!(
        !m.quit && m.settings.size == 1500,
        "letters do nothing in the prompt"
    );
    update(&mut m, code(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(m.settings.size, 1230);
    update(&mut m, key('O'));
    for c in "2000".chars() {
        update(&mut m, key(c));
    }
    update(&mut m, code(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(m.settings.overlap, 150, "overlap >= size is refused");
    assert!(m.error.as_deref().unwrap().contains("overlap"));
    update(&mut m, key('O'));
    update(&mut m, key('9'));
    update(&mut m, code(KeyCode::Esc, KeyModifiers::NONE));
    assert_eq!((m.settings.overlap, m.prompt.is_none()), (150, true));
    // k in the query pane.
    update(&mut m, key('/'));
    for c in "keys".chars() {
        update(&mut m, key(c));
    }
    update(&mut m, code(KeyCode::Enter, KeyModifiers::NONE));
    let cmds = update(&mut m, code(KeyCode::Up, KeyModifiers::CONTROL));
    assert!(matches!(&cmds[..], [Cmd::Query { k: 6, text, .. }] if text == "keys"));
}

/// The terminal side hands the session's setup, a started model and the watcher's mode to the
/// model as messages; update alone writes them.
#[test]
fn setup_model_and_watcher_arrive_as_messages() {
    let mut m = model();
    let cmds = update(
        &mut m,
        Msg::Configured(Box::new(Setup {
            notes: vec!["workbench.toml:3: bad key; using defaults".into()],
            store: Some("jsonl:chunks.jsonl".into()),
            search_k: 7,
            models: vec!["a".into(), "b".into()],
            ..Setup::default()
        })),
    );
    assert!(cmds.is_empty());
    assert_eq!(m.query.k, 7);
    assert_eq!(m.models, ["a", "b"]);
    assert_eq!(m.generation, 1);
    assert_eq!(
        m.error.as_deref(),
        Some("workbench.toml:3: bad key; using defaults")
    );
    assert!(m.notes.iter().any(|n| n.starts_with("stored chunks")));
    update(
        &mut m,
        Msg::Started(Box::new(ModelFacts {
            name: "tiny".into(),
            specials: 3,
            backend: "native bf16".into(),
            warning: Some("the server counts differently".into()),
            ..ModelFacts::default()
        })),
    );
    assert_eq!((m.model_name.as_str(), m.specials), ("tiny", 3));
    assert_eq!(m.error.as_deref(), Some("the server counts differently"));
    update(&mut m, Msg::Watching(Err("a store is not watched".into())));
    assert_eq!(m.watch, "not watching");
    assert!(m.notes.iter().any(|n| n == "a store is not watched"));
}

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
