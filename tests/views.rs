//! The screen drawn into ratatui's TestBackend: text snapshots in each theme, and cell-style checks
//! that the invisible tail starts at exactly its first unread token.

mod common;
#[path = "views/eval.rs"]
mod eval;
#[path = "views/find.rs"]
mod find;
#[path = "views/hits.rs"]
mod hits;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use chunkscope::app::keymap::Keymap;
use chunkscope::app::Model;
use chunkscope::theme::Theme;
use chunkscope::ui;
use chunkscope_core::chunk::ChunkSettings;
use chunkscope_core::corpus::{Corpus, Document, Skipped};
use chunkscope_core::engine::Engine;
use chunkscope_core::tokenize::Unit;
use chunkscope_core::window::WindowSpec;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

const RUNBOOK: &str = "# Rotate keys\n\nKeys are rotated every ninety days by the platform team. \
Before you start, confirm that the deploy freeze is not in effect and that the on-call engineer \
knows. Open the vault console, pick the staging project, and create a new signing key with the \
default algorithm. Copy its identifier into the change ticket. Then update the gateway secret, \
wait for the sidecar to refresh its cache, and watch the error rate on the dashboard for fifteen \
minutes. If the error rate exceeds half a percent, roll back by restoring the previous key \
version. Finally run kubectl rollout restart deployment/payments-api -n staging and close the \
ticket.\n\n## Short note\n\nThis part fits.\n";

fn model(theme: Theme) -> Model {
    let info = common::model().clone();
    let tok = common::tokenizer();
    let corpus = Corpus {
        root: "corpus".into(),
        docs: vec![
            Document::plain("runbooks/rotate-keys.md".into(), RUNBOOK.into()),
            Document::plain(
                "notes/short.txt".into(),
                "A short note that fits any window.".into(),
            ),
        ],
        skipped: vec![Skipped {
            path: "logo.png.txt".into(),
            reason: "binary: contains NUL bytes".into(),
        }],
    };
    let engine = Arc::new(Engine::new(info.clone(), tok.clone(), corpus).unwrap());
    let settings = ChunkSettings {
        strategy: chunkscope_core::chunk::Strategy::Fixed,
        unit: Unit::Embed,
        size: 90,
        overlap: 10,
        ..ChunkSettings::default()
    };
    let chunking = engine
        .chunk_all(&settings, &AtomicBool::new(false))
        .unwrap();
    let mut m = Model::new(
        "corpus".into(),
        info.short_name(),
        info.windows,
        tok.specials(),
        settings,
        WindowSpec::Tokens(64),
        theme,
        Keymap::default(),
    );
    m.engine = Some(engine);
    m.chunking = Some(Arc::new(chunking));
    m.loading = false;
    m.last_chunk_millis = Some(3);
    m
}

fn render(m: &Model) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(120, 32)).unwrap();
    t.draw(|f| ui::draw(f, m)).unwrap();
    t
}

/// Between a knob turn and the embedding worker's first count, the status line says what the
/// worker is doing rather than "embedding 0/0 · 0 chunks/s"; once counted, the progress.
#[test]
fn status_line_says_indexing_before_the_first_count() {
    let mut m = model(Theme::built_in("dark").unwrap());
    let mut status = chunkscope::app::EmbedStatus::starting(1, 64);
    m.embed = Some(status);
    let screen = format!("{}", render(&m).backend());
    assert!(
        screen.contains("indexing the new chunks, then embedding"),
        "{screen}"
    );
    assert!(!screen.contains("0/0"), "{screen}");
    status.total = 40;
    status.done = 8;
    status.per_second = 4.0;
    m.embed = Some(status);
    let screen = format!("{}", render(&m).backend());
    assert!(
        screen.contains("embedding 8/40 · 4 chunks/s · ETA 8 s"),
        "{screen}"
    );
}

#[test]
fn snapshots_in_each_theme() {
    let mut styled = Vec::new();
    for name in ["dark", "light", "mono"] {
        let m = model(Theme::built_in(name).unwrap());
        let t = render(&m);
        let with_styles = format!("{}\n{}", t.backend(), style_runs(t.backend().buffer()));
        insta::assert_snapshot!(format!("chunks_{name}"), with_styles);
        styled.push(with_styles);
    }
    // The text is the same in every theme; the styles are what tell them apart.
    assert_ne!(styled[0], styled[1], "dark and light draw alike");
    assert_ne!(styled[0], styled[2], "dark and mono draw alike");
}

/// The styles of a drawn buffer, row by row: each run of cells with one style as
/// `column..column fg bg modifiers` (the text backend alone drops them).
fn style_runs(buf: &ratatui::buffer::Buffer) -> String {
    let mut out = String::new();
    let area = buf.area;
    for y in area.y..area.y + area.height {
        let mut runs: Vec<String> = Vec::new();
        let mut start = area.x;
        let style_at = |x: u16| {
            let c = &buf[(x, y)];
            (c.fg, c.bg, c.modifier)
        };
        for x in area.x..=area.x + area.width {
            let end = x == area.x + area.width;
            if end || (x > start && style_at(x) != style_at(start)) {
                let (fg, bg, md) = style_at(start);
                if (fg, bg, md) != (Default::default(), Default::default(), Default::default()) {
                    runs.push(format!("{start}..{} {fg:?} {bg:?} {md:?}", x - 1));
                }
                start = x;
            }
        }
        if !runs.is_empty() {
            out.push_str(&format!("row {y}: {}\n", runs.join(" | ")));
        }
    }
    out
}

#[test]
fn help_overlay_lists_every_binding() {
    let mut m = model(Theme::dark());
    m.show_help = true;
    // Tall enough for every binding of the chunks pane (shorter terminals scroll: see below).
    let mut t = Terminal::new(TestBackend::new(120, 45)).unwrap();
    t.draw(|f| ui::draw(f, &m)).unwrap();
    let screen = t.backend().to_string();
    for b in m.keymap.active(chunkscope::app::keymap::Layer::Chunks) {
        assert!(
            screen.contains(b.description),
            "help lacks {}",
            b.description
        );
    }
    insta::assert_snapshot!("help", t.backend());
}

/// The first cell drawn in the tail style holds the first character of the tail, and the cell
/// before it is drawn in the visible style.
#[test]
fn tail_style_starts_at_the_first_unread_token() {
    for name in ["dark", "light", "mono"] {
        let theme = Theme::built_in(name).unwrap();
        let m = model(theme.clone());
        let chunking = m.chunking.clone().unwrap();
        let first = &chunking.files[0].chunks[0];
        let tail = first
            .tail(64, m.specials)
            .expect("chunk 1 overflows a 64-token window");
        let tail_char = RUNBOOK[first.start() + tail.start_byte..]
            .chars()
            .next()
            .unwrap();
        let t = render(&m);
        let buf = t.backend().buffer();
        let area = buf.area;
        let mut found = None;
        'rows: for y in 0..area.height {
            for x in 41..area.width {
                let cell = &buf[(x, y)];
                if cell.style().add_modifier == theme.tail.add_modifier
                    && colour(cell.style().fg) == colour(theme.tail.fg)
                    && colour(cell.style().bg) == colour(theme.tail.bg)
                    && cell.symbol() != " "
                    && !matches!(cell.symbol(), "░" | "▌")
                {
                    found = Some((x, y));
                    break 'rows;
                }
            }
        }
        let (x, y) = found.unwrap_or_else(|| panic!("{name}: no cell in the tail style"));
        assert_eq!(buf[(x, y)].symbol(), tail_char.to_string(), "{name}");
        let before = buf[(x - 1, y)].style();
        assert!(
            before.add_modifier != theme.tail.add_modifier
                || colour(before.fg) != colour(theme.tail.fg)
                || colour(before.bg) != colour(theme.tail.bg),
            "{name}: the cell before the tail is already in the tail style"
        );
        // The gutter of a line holding tail text is the tail mark.
        let gutter = (41..area.width).find(|&gx| matches!(buf[(gx, y)].symbol(), "░" | "▌"));
        assert_eq!(
            gutter.map(|gx| buf[(gx, y)].symbol().to_string()),
            Some("░".into()),
            "{name}"
        );
    }
}

/// A cell's colour with "unset" read as the terminal's default.
fn colour(c: Option<ratatui::style::Color>) -> ratatui::style::Color {
    c.unwrap_or(ratatui::style::Color::Reset)
}

#[test]
fn mono_marks_the_tail_without_colour() {
    let theme = Theme::mono();
    let m = model(theme);
    let t = render(&m);
    let buf = t.backend().buffer();
    for cell in buf.content() {
        assert!(
            cell.style()
                .fg
                .is_none_or(|c| c == ratatui::style::Color::Reset),
            "colour in mono"
        );
        assert!(
            cell.style()
                .bg
                .is_none_or(|c| c == ratatui::style::Color::Reset),
            "colour in mono"
        );
    }
    assert!(t.backend().to_string().contains('░'));
}

#[test]
fn control_characters_never_reach_the_screen() {
    let t = Theme::dark();
    let lines = ui::chunks::wrap_styled("a\u{1b}[2Jb\tc\u{7}d", 0, Some(3), 40, &t);
    let text: String = lines[0].spans.iter().map(|s| s.content.as_ref()).collect();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(text.contains("b    c"));
}

/// Embedded metadata and parent sections on screen: the prefix above the text with its tokens, the
/// tail moved by them, the parent a hit returns; and the query pane showing child and parent.
#[test]
fn prefix_parent_and_query_panes() {
    use chunkscope::app::View;
    use chunkscope_core::chunk::{Preset, Strategy};
    use chunkscope_core::metadata::Use;
    use chunkscope_core::search::{Hit, ParentHit, Results};

    let mut m = model(Theme::mono());
    let engine = m.engine.clone().unwrap();
    let mut settings = ChunkSettings::default();
    Preset::Markdown.apply(&mut settings);
    settings.size = 60;
    settings.metadata.heading = Use::Embed;
    settings.parents = true;
    assert_eq!(settings.strategy, Strategy::Markdown);
    let chunking = engine
        .chunk_all(&settings, &AtomicBool::new(false))
        .unwrap();
    let first = &chunking.files[0].chunks[0];
    assert_eq!(first.prefix(), Some("section: Rotate keys\n\n"));
    m.settings = settings;
    m.chunking = Some(Arc::new(chunking.clone()));
    let t = render(&m);
    let screen = t.backend().to_string();
    assert!(screen.contains("+ section: Rotate keys"), "{screen}");
    assert!(screen.contains("a hit returns its parent runbooks/rotate-keys.md#s0"));
    insta::assert_snapshot!("chunks_prefix_parent", t.backend());

    let parent = &chunking.files[0].parents[0];
    let hit = Hit {
        rank: 1,
        score: 0.71,
        file: "runbooks/rotate-keys.md".into(),
        id: None,
        file_pos: 0,
        chunk: 1,
        heading: Some("Rotate keys".into()),
        match_byte: Some(12),
        token_offset: Some(first.input_position(3, 2)),
        in_tail: false,
        only_here: false,
        page_start: None,
        page_end: None,
        parent: Some(ParentHit {
            id: parent.id("runbooks/rotate-keys.md"),
            heading: parent.heading.clone(),
            start_byte: parent.start,
            end_byte: parent.end,
            chars: RUNBOOK[parent.start..parent.end].chars().count(),
            cl100k_tokens: chunkscope_core::tokenize::cl100k_count(
                &RUNBOOK[parent.start..parent.end],
            ),
        }),
    };
    m.view = View::Query;
    m.query.input.set("rollback key".into());
    m.query.results = Some(Results {
        query: "rollback key".into(),
        k: 5,
        window: 64,
        bm25: vec![hit.clone()],
        vector: vec![hit.clone()],
        hybrid: vec![hit],
        rrf_k: 60,
        embedder: "native f32".into(),
        vector_error: None,
        expect: None,
        approximate: None,
    });
    let t = render(&m);
    let screen = t.backend().to_string();
    // A query the server could not embed: the vector column says why instead of staying empty.
    let whole = m.query.results.clone();
    let mut failed = whole.clone().unwrap();
    failed.vector.clear();
    failed.vector_error =
        Some("vector search failed: http://127.0.0.1:9/v1/embeddings: connection refused".into());
    m.query.results = Some(failed);
    let broken = render(&m).backend().to_string();
    assert!(
        broken.contains("vector search failed: http://127.0.0.1"),
        "{broken}"
    );
    m.query.results = whole;
    // A reranker: its column while it scores, then its hits with the pair window and the time;
    // a hit whose match lies past the pair window is marked.
    m.query.reranker = Some("/models/ms-marco-MiniLM-L-6-v2".into());
    let scoring = render(&m).backend().to_string();
    assert!(
        scoring.contains("rerank (ms-marco-MiniLM-L-6-v2)"),
        "{scoring}"
    );
    assert!(scoring.contains("reranking…"), "{scoring}");
    let mut past = m.query.results.as_ref().unwrap().bm25[0].clone();
    past.token_offset = None;
    past.in_tail = true;
    m.query.reranked = Some(Ok(chunkscope_core::rerank::stage::Reranked {
        hits: vec![past],
        info: chunkscope_core::rerank::stage::RerankInfo {
            model: "/models/ms-marco-MiniLM-L-6-v2".into(),
            window: 512,
            candidates: 9,
            truncated: 2,
            millis: 41.0,
        },
    }));
    let reranked = render(&m).backend().to_string();
    assert!(
        reranked.contains("512 tok · 9 scored · 2 cut · 41 ms"),
        "{reranked}"
    );
    assert!(reranked.contains("TAIL past the pair window"), "{reranked}");
    m.query.reranked = Some(Err("reranker: /models/x: not a folder".into()));
    let failed = render(&m).backend().to_string();
    assert!(
        failed.contains("reranker: /models/x: not a folder"),
        "{failed}"
    );
    m.query.reranker = None;
    m.query.reranked = None;
    // Vectors from the approximate index: the vector column says so, with its recall@10.
    let exact = m.query.results.clone();
    m.query.results.as_mut().unwrap().approximate = Some(chunkscope_core::index::ann::AnnInfo {
        recall_at_10: 0.95,
        candidates: 100,
    });
    let approximate = render(&m).backend().to_string();
    assert!(
        approximate.contains("approximate (HNSW) · recall@10 0.95"),
        "{approximate}"
    );
    m.query.results = exact;
    // [CLS], then the prefix's tokens, then 3 tokens of the text.
    assert_eq!(first.prefix_tokens(), 4, "section : rotate keys");
    assert!(screen.contains("@tok 8 window"), "{screen}");
    assert!(screen.contains("↳ parent runbooks/rotate-keys.md#s0"));
    insta::assert_snapshot!("query_parent", t.backend());
}

/// A reload whose file shrank arrives before its chunking: the screen keeps drawing the chunks
/// with the texts they were made from (no slice past the new, shorter text), then shows the new
/// chunking with the new engine; results of an older generation are dropped.
#[test]
fn a_reload_never_pairs_old_chunks_with_new_text() {
    use chunkscope::app::{update, Msg};
    use chunkscope_core::jobs::Event;

    let mut m = model(Theme::dark());
    let old = m.engine.clone().unwrap();
    let settings = m.settings.clone();
    let mut corpus = old.corpus.clone();
    corpus.docs[0].text = "# Rotate keys\n\nShort now.\n".into();
    let shrunk = Arc::new(Engine::new(old.model.clone(), old.tok.clone(), corpus).unwrap());
    m.generation = 7;
    let cmds = update(
        &mut m,
        Msg::Job(Event::Loaded {
            generation: 7,
            result: Ok(Arc::clone(&shrunk)),
            tokenized: 1,
        }),
    );
    assert_eq!(cmds.len(), 1, "a rechunk is requested");
    assert!(Arc::ptr_eq(m.engine.as_ref().unwrap(), &old));
    let screen = render(&m).backend().to_string();
    assert!(
        screen.contains("Keys are rotated every ninety days"),
        "{screen}"
    );
    // An older generation's chunking is dropped.
    let fresh = shrunk
        .chunk_all(&settings, &AtomicBool::new(false))
        .unwrap();
    let fresh = Arc::new(fresh);
    update(
        &mut m,
        Msg::Job(Event::Chunked {
            generation: 3,
            engine: Arc::clone(&shrunk),
            result: Ok(Arc::clone(&fresh)),
            millis: 1,
        }),
    );
    assert!(Arc::ptr_eq(m.engine.as_ref().unwrap(), &old));
    let gen = m.generation;
    update(
        &mut m,
        Msg::Job(Event::Chunked {
            generation: gen,
            engine: Arc::clone(&shrunk),
            result: Ok(fresh),
            millis: 1,
        }),
    );
    assert!(Arc::ptr_eq(m.engine.as_ref().unwrap(), &shrunk));
    let screen = render(&m).backend().to_string();
    assert!(screen.contains("Short now."), "{screen}");
    assert_eq!(m.chunks.selected, 0, "the file stays selected by its path");
}

/// On a short terminal the help overlay scrolls (j/k) to reach every binding.
#[test]
fn help_scrolls_on_a_short_terminal() {
    use chunkscope::app::{update, Msg};
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    let mut m = model(Theme::dark());
    m.show_help = true;
    let draw = |m: &Model| {
        let mut t = Terminal::new(TestBackend::new(100, 24)).unwrap();
        t.draw(|f| ui::draw(f, m)).unwrap();
        t.backend().to_string()
    };
    let top = draw(&m);
    assert!(top.contains("j/k scroll"), "{top}");
    assert!(!top.contains("quit"), "the last binding is below the fold");
    for _ in 0..40 {
        update(
            &mut m,
            Msg::Key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE)),
        );
    }
    assert!(m.show_help, "scroll keys keep help open");
    let bottom = draw(&m);
    assert!(bottom.contains("quit"), "{bottom}");
    update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)),
    );
    assert!(!m.show_help, "any other key closes help");
}

/// With maxmin the stats pane says how many sentences the chunks group; without sentence vectors
/// every sentence stands alone: 1.0 per chunk.
#[test]
fn maxmin_stats_show_sentences_per_chunk() {
    use chunkscope_core::chunk::Preset;

    let mut m = model(Theme::mono());
    let engine = m.engine.clone().unwrap();
    let mut settings = ChunkSettings::default();
    Preset::MaxMin.apply(&mut settings);
    let chunking = engine
        .chunk_all(&settings, &AtomicBool::new(false))
        .unwrap();
    let n: usize = chunking.files.iter().map(|f| f.chunks.len()).sum();
    m.settings = settings;
    m.chunking = Some(Arc::new(chunking));
    let screen = render(&m).backend().to_string();
    assert!(
        screen.contains(&format!("sentences {n}  1.0 per chunk")),
        "{screen}"
    );
}

/// The screen at a small, a common and a very wide terminal: nothing panics, the key hints of the
/// focused pane are always on the last line, long names are shortened in the middle, and the
/// files pane grows with the width.
#[test]
fn layouts_for_any_width() {
    let mut m = model(Theme::mono());
    for (w, h) in [(60u16, 15u16), (160, 45), (300, 80)] {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| ui::draw(f, &m)).unwrap();
        let screen = t.backend().to_string();
        let last = screen.lines().last().unwrap().to_string();
        assert!(
            last.contains("strategy"),
            "{w}x{h}: no key hints:\n{screen}"
        );
        insta::assert_snapshot!(format!("layout_{w}x{h}"), t.backend());
    }
    // In the query pane the hint line names the query keys.
    m.view = chunkscope::app::View::Query;
    m.query.editing = false;
    let mut t = Terminal::new(TestBackend::new(160, 45)).unwrap();
    t.draw(|f| ui::draw(f, &m)).unwrap();
    let screen = t.backend().to_string();
    assert!(
        screen.lines().last().unwrap().contains("next_retriever"),
        "{screen}"
    );
}
