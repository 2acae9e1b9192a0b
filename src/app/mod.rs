//! The TUI's state and its update function (The Elm Architecture): messages in, state changed,
//! commands out. No terminal code and no threads here.

pub mod keymap;

use std::path::PathBuf;
use std::sync::Arc;

use ratatui::crossterm::event::{KeyEvent, KeyEventKind, MouseEvent, MouseEventKind};

use crate::core::chunk::{ChunkSettings, Preset, Strategy};
use crate::core::engine::{Chunking, Engine};
use crate::core::eval::Report;
use crate::core::search::Results;
use crate::core::tokenize::Unit;
use crate::core::window::{ModelWindows, Window, WindowSpec};
use crate::ui::theme::Theme;
use keymap::{Action, Keymap};

/// Everything that can happen to the app.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize,
    /// The corpus was read and tokenized.
    Loaded {
        generation: u64,
        result: Result<Arc<Engine>, String>,
        /// Files tokenized by this load (the others kept their tokens).
        tokenized: usize,
    },
    /// The corpus changed on disk (a debounced burst of `paths` events).
    FilesChanged {
        paths: usize,
    },
    /// A chunking finished.
    Chunked {
        generation: u64,
        /// The engine (corpus and tokens) the chunking was made from.
        engine: Arc<Engine>,
        result: Result<Arc<Chunking>, String>,
        millis: u64,
    },
    /// Max-Min chunking is embedding the sentences it needs (once; later turns reuse them).
    SentenceProgress {
        generation: u64,
        done: usize,
        total: usize,
    },
    /// Embedding progress of a chunking.
    EmbedProgress {
        generation: u64,
        done: usize,
        total: usize,
        embedded: usize,
        per_second: f64,
    },
    /// Every chunk of a chunking has its vector; the vector index is ready.
    Embedded {
        generation: u64,
        total: usize,
        embedded: usize,
        /// Vectors the index kept from the previous chunking (unchanged chunks).
        kept: usize,
        seconds: f64,
    },
    EmbedFailed(String),
    QueryDone {
        id: u64,
        generation: u64,
        result: Result<Results, String>,
    },
    ProbeDone {
        generation: u64,
        file_pos: usize,
        chunk: usize,
        cosine: f32,
        window: usize,
    },
    EvalDone {
        generation: u64,
        window: usize,
        result: Result<Arc<Report>, String>,
    },
}

/// Where the embedding of the current chunking stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EmbedStatus {
    pub generation: u64,
    pub window: usize,
    pub done: usize,
    pub total: usize,
    pub embedded: usize,
    pub per_second: f64,
    pub finished: bool,
    pub seconds: f64,
    /// Vectors kept from the previous chunking's index.
    pub kept: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Chunks,
    Query,
    Eval,
}

/// The evaluation pane: the latest report, a pinned configuration A, the selected case.
#[derive(Debug, Clone, Default)]
pub struct EvalState {
    pub report: Option<Arc<Report>>,
    /// (chunking generation, window) the report was made for.
    pub made_for: Option<(u64, usize)>,
    pub pinned: Option<Arc<Report>>,
    pub misses_only: bool,
    /// Only the cases whose hit/miss at k differs between A and B.
    pub flipped_only: bool,
    pub selected: usize,
    pub running: bool,
}

/// The query pane.
#[derive(Debug, Clone, Default)]
pub struct QueryState {
    pub input: String,
    pub editing: bool,
    pub results: Option<Results>,
    /// Id of the query in flight.
    pub pending: Option<u64>,
    pub next_id: u64,
    /// 0 = BM25, 1 = vector.
    pub column: usize,
    pub selected: usize,
    pub k: usize,
}

/// The last tail probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    pub file_pos: usize,
    pub chunk: usize,
    pub cosine: f32,
    pub window: usize,
}

/// What update asks the outside world to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    /// Read and tokenize the corpus again.
    Load {
        generation: u64,
    },
    /// Chunk the loaded corpus with these settings (latest wins).
    Rechunk {
        generation: u64,
        settings: ChunkSettings,
    },
    /// Embed the current chunking at `window` and index it (latest wins).
    Embed {
        generation: u64,
        window: usize,
    },
    Query {
        id: u64,
        text: String,
        k: usize,
    },
    Probe {
        file_pos: usize,
        chunk: usize,
    },
    Eval,
    Quit,
}

pub struct Model {
    pub corpus_path: PathBuf,
    pub model_name: String,
    pub windows: ModelWindows,
    pub specials: usize,
    /// The knobs as the user set them.
    pub settings: ChunkSettings,
    pub window_spec: WindowSpec,
    /// The engine of the chunking on screen.
    pub engine: Option<Arc<Engine>>,
    /// The latest finished chunking (may be older than `settings` while a job runs).
    pub chunking: Option<Arc<Chunking>>,
    /// Generation of the latest request; results of older ones are dropped.
    pub generation: u64,
    pub loading: bool,
    pub selected: usize,
    /// The chunk the chunk pane is anchored on, and lines scrolled past its header.
    pub focus_chunk: usize,
    pub scroll: usize,
    pub show_help: bool,
    /// Lines the help overlay is scrolled by (short terminals).
    pub help_scroll: u16,
    pub theme: Theme,
    pub keymap: Keymap,
    /// Notes for the user (skipped files, config problems); the newest last.
    pub notes: Vec<String>,
    /// The last refused knob or failed job, shown in the status line until the next change.
    pub error: Option<String>,
    pub last_chunk_millis: Option<u64>,
    pub quit: bool,
    pub embed: Option<EmbedStatus>,
    pub view: View,
    pub query: QueryState,
    pub probe: Option<Probe>,
    /// A match to highlight in the chunk pane: (file position, chunk, byte in the chunk text).
    pub highlight: Option<(usize, usize, usize)>,
    /// Generation of the chunking on screen.
    pub chunked_at: u64,
    pub eval: EvalState,
    /// The watcher's mode ("watching", "watching (polling)") or why it is off.
    pub watch: String,
    /// What the last reload did, for the status line.
    pub last_reload: Option<String>,
    /// True when the corpus has evaluation cases (CORPUS/cases.tsv, --cases, or SQuAD JSON).
    pub has_cases: bool,
    /// Max-Min sentence embedding in progress: (done, total).
    pub sentences: Option<(usize, usize)>,
}

impl Model {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        corpus_path: PathBuf,
        model_name: String,
        windows: ModelWindows,
        specials: usize,
        settings: ChunkSettings,
        window_spec: WindowSpec,
        theme: Theme,
        keymap: Keymap,
    ) -> Model {
        Model {
            corpus_path,
            model_name,
            windows,
            specials,
            settings,
            window_spec,
            engine: None,
            chunking: None,
            generation: 0,
            loading: true,
            selected: 0,
            focus_chunk: 0,
            scroll: 0,
            show_help: false,
            help_scroll: 0,
            theme,
            keymap,
            notes: Vec::new(),
            error: None,
            last_chunk_millis: None,
            quit: false,
            embed: None,
            view: View::Chunks,
            query: QueryState {
                k: 5,
                ..QueryState::default()
            },
            probe: None,
            highlight: None,
            chunked_at: 0,
            eval: EvalState::default(),
            watch: String::new(),
            last_reload: None,
            has_cases: false,
            sentences: None,
        }
    }

    pub fn window(&self) -> Window {
        self.windows.resolve(self.window_spec)
    }

    /// True while what is on screen does not yet reflect the knobs.
    pub fn stale(&self) -> bool {
        self.loading
            || self
                .chunking
                .as_ref()
                .is_none_or(|c| c.settings != self.settings)
    }

    /// True while the vectors on hand do not match the chunks and window on screen.
    pub fn embeddings_stale(&self) -> bool {
        self.stale()
            || self.embed.is_none_or(|e| {
                !e.finished
                    || Some(e.generation) != self.chunked_generation()
                    || e.window != self.window().tokens
            })
    }

    fn chunked_generation(&self) -> Option<u64> {
        self.chunking.as_ref().map(|_| self.chunked_at)
    }

    fn embed_cmd(&mut self) -> Vec<Cmd> {
        if self.chunking.is_none() {
            return Vec::new();
        }
        let window = self.window().tokens;
        self.embed = Some(EmbedStatus {
            generation: self.chunked_at,
            window,
            done: 0,
            total: 0,
            embedded: 0,
            per_second: 0.0,
            finished: false,
            seconds: 0.0,
            kept: 0,
        });
        vec![Cmd::Embed {
            generation: self.chunked_at,
            window,
        }]
    }

    pub fn file_count(&self) -> usize {
        self.engine.as_ref().map_or(0, |e| e.corpus.docs.len())
    }

    fn rechunk(&mut self) -> Vec<Cmd> {
        // The pipeline chunks its own latest engine; `engine` is set from the first load on.
        if self.engine.is_none() {
            return Vec::new();
        }
        self.generation += 1;
        vec![Cmd::Rechunk {
            generation: self.generation,
            settings: self.settings.clone(),
        }]
    }

    /// Apply a knob change if the result is valid; otherwise keep the old knobs and say why.
    fn turn(&mut self, change: impl FnOnce(&mut ChunkSettings) -> Option<String>) -> Vec<Cmd> {
        let mut next = self.settings.clone();
        let note = change(&mut next);
        if let Err(e) = next.validate() {
            self.error = Some(e);
            return Vec::new();
        }
        self.error = note;
        if next == self.settings {
            return Vec::new();
        }
        self.settings = next;
        self.rechunk()
    }
}

/// Show `engine` (a reload's corpus): the selected file stays selected by its path.
fn adopt_engine(m: &mut Model, engine: Arc<Engine>) {
    let path = m
        .engine
        .as_ref()
        .and_then(|e| e.corpus.docs.get(m.selected))
        .map(|d| d.path.clone());
    let found = path.and_then(|p| engine.corpus.docs.iter().position(|d| d.path == p));
    if found != Some(m.selected) {
        m.focus_chunk = 0;
        m.scroll = 0;
    }
    m.selected = found
        .unwrap_or(m.selected)
        .min(engine.corpus.docs.len().saturating_sub(1));
    m.engine = Some(engine);
}

/// How much one press of a size or overlap key changes it: about an eighth, at least 1.
fn step(v: usize) -> usize {
    (v / 8).max(1)
}

pub fn update(m: &mut Model, msg: Msg) -> Vec<Cmd> {
    match msg {
        Msg::Key(ev)
            if ev.kind != KeyEventKind::Release && m.view == View::Query && m.query.editing =>
        {
            edit_query(m, &ev)
        }
        Msg::Key(ev)
            if ev.kind != KeyEventKind::Release && m.view == View::Query && !m.show_help =>
        {
            match browse_query(m, &ev) {
                Some(cmds) => cmds,
                None => match m.keymap.action_for(&ev) {
                    Some(a) => act(m, a),
                    None => Vec::new(),
                },
            }
        }
        Msg::Key(ev)
            if ev.kind != KeyEventKind::Release && m.view == View::Eval && !m.show_help =>
        {
            match browse_eval(m, &ev) {
                Some(cmds) => cmds,
                None => match m.keymap.action_for(&ev) {
                    Some(a) => act(m, a),
                    None => Vec::new(),
                },
            }
        }
        Msg::Key(ev) if ev.kind != KeyEventKind::Release => match m.keymap.action_for(&ev) {
            Some(a) => act(m, a),
            None => {
                // Any key closes help, bound or not.
                m.show_help = false;
                Vec::new()
            }
        },
        Msg::Key(_) | Msg::Resize => Vec::new(),
        Msg::Mouse(ev) => {
            match ev.kind {
                MouseEventKind::ScrollDown => m.scroll += 3,
                MouseEventKind::ScrollUp => m.scroll = m.scroll.saturating_sub(3),
                _ => {}
            }
            Vec::new()
        }
        Msg::FilesChanged { paths } => {
            m.last_reload = Some(format!("{paths} file events"));
            m.generation += 1;
            m.loading = true;
            vec![Cmd::Load {
                generation: m.generation,
            }]
        }
        Msg::Loaded {
            generation,
            result,
            tokenized,
        } => {
            if generation != m.generation {
                return Vec::new();
            }
            m.loading = false;
            match result {
                Ok(engine) => {
                    m.notes.extend(engine.corpus.notes());
                    m.last_reload = m.last_reload.take().map(|w| {
                        format!(
                            "{w}: {} files, {tokenized} tokenized again",
                            engine.corpus.docs.len()
                        )
                    });
                    // The screen keeps the engine its chunking was made from until the new
                    // chunking arrives: chunk ranges are only valid against their own texts.
                    if m.chunking.is_none() {
                        adopt_engine(m, engine);
                    }
                    m.rechunk()
                }
                Err(e) => {
                    m.error = Some(e);
                    Vec::new()
                }
            }
        }
        Msg::Chunked {
            generation,
            engine,
            result,
            millis,
        } => {
            if generation != m.generation {
                return Vec::new();
            }
            m.sentences = None;
            match result {
                Ok(c) => {
                    if !m.engine.as_ref().is_some_and(|e| Arc::ptr_eq(e, &engine)) {
                        adopt_engine(m, engine);
                    }
                    m.chunking = Some(c);
                    m.chunked_at = generation;
                    m.last_chunk_millis = Some(millis);
                    m.highlight = None;
                    m.probe = None;
                    clamp_focus(m);
                    return m.embed_cmd();
                }
                Err(e) => m.error = Some(e),
            }
            Vec::new()
        }
        Msg::SentenceProgress {
            generation,
            done,
            total,
        } => {
            if generation == m.generation {
                m.sentences = (done < total).then_some((done, total));
            }
            Vec::new()
        }
        Msg::EmbedProgress {
            generation,
            done,
            total,
            embedded,
            per_second,
        } => {
            if let Some(e) = m.embed.as_mut().filter(|e| e.generation == generation) {
                e.done = done;
                e.total = total;
                e.embedded = embedded;
                e.per_second = per_second;
            }
            Vec::new()
        }
        Msg::Embedded {
            generation,
            total,
            embedded,
            kept,
            seconds,
        } => {
            if let Some(e) = m.embed.as_mut().filter(|e| e.generation == generation) {
                e.kept = kept;
                e.done = total;
                e.total = total;
                e.embedded = embedded;
                e.finished = true;
                e.seconds = seconds;
            }
            if m.view == View::Eval {
                return start_eval(m);
            }
            Vec::new()
        }
        Msg::EmbedFailed(e) => {
            m.error = Some(e);
            Vec::new()
        }
        Msg::QueryDone {
            id,
            generation,
            result,
        } => {
            if m.query.pending == Some(id) {
                m.query.pending = None;
                match result {
                    Ok(r) if generation == m.chunked_at => {
                        m.query.results = Some(r);
                        m.query.selected = 0;
                    }
                    Ok(_) => {}
                    Err(e) => m.error = Some(format!("query: {e}")),
                }
            }
            Vec::new()
        }
        Msg::EvalDone {
            generation,
            window,
            result,
        } => {
            m.eval.running = false;
            match result {
                Ok(r) if generation == m.chunked_at && window == m.window().tokens => {
                    m.eval.report = Some(r);
                    m.eval.made_for = Some((generation, window));
                    m.eval.selected = m.eval.selected.min(eval_rows(m).len().saturating_sub(1));
                }
                Ok(_) => {}
                Err(e) => m.error = Some(format!("eval: {e}")),
            }
            Vec::new()
        }
        Msg::ProbeDone {
            generation,
            file_pos,
            chunk,
            cosine,
            window,
        } => {
            if generation == m.chunked_at {
                m.probe = Some(Probe {
                    file_pos,
                    chunk,
                    cosine,
                    window,
                });
            }
            Vec::new()
        }
    }
}

fn start_eval(m: &mut Model) -> Vec<Cmd> {
    if !m.has_cases || m.chunking.is_none() {
        return Vec::new();
    }
    if m.eval.made_for == Some((m.chunked_at, m.window().tokens)) {
        return Vec::new();
    }
    m.eval.running = true;
    vec![Cmd::Eval]
}

/// The cases listed in the eval pane (all, the misses at k, or those that flipped against A).
pub fn eval_rows(m: &Model) -> Vec<&crate::core::eval::CaseResult> {
    m.eval.report.as_ref().map_or(Vec::new(), |r| {
        let flipped = |c: &crate::core::eval::CaseResult| {
            m.eval.pinned.as_ref().is_some_and(|a| {
                a.results
                    .iter()
                    .find(|x| x.line == c.line && x.question == c.question)
                    .is_some_and(|x| {
                        (x.bm25_miss.is_none() != c.bm25_miss.is_none())
                            || (x.vector_miss.is_none() != c.vector_miss.is_none())
                    })
            })
        };
        r.results
            .iter()
            .filter(|c| !m.eval.misses_only || c.bm25_miss.is_some() || c.vector_miss.is_some())
            .filter(|c| !m.eval.flipped_only || flipped(c))
            .collect()
    })
}

/// Keys in the eval pane.
fn browse_eval(m: &mut Model, ev: &KeyEvent) -> Option<Vec<Cmd>> {
    use ratatui::crossterm::event::KeyCode;
    let n = eval_rows(m).len();
    match ev.code {
        KeyCode::Down | KeyCode::Char('j') => {
            m.eval.selected = (m.eval.selected + 1).min(n.saturating_sub(1))
        }
        KeyCode::Up | KeyCode::Char('k') => m.eval.selected = m.eval.selected.saturating_sub(1),
        KeyCode::PageDown => m.eval.selected = (m.eval.selected + 10).min(n.saturating_sub(1)),
        KeyCode::PageUp => m.eval.selected = m.eval.selected.saturating_sub(10),
        KeyCode::Char('m') => {
            m.eval.misses_only = !m.eval.misses_only;
            m.eval.selected = 0;
        }
        KeyCode::Char('f') => {
            m.eval.flipped_only = !m.eval.flipped_only && m.eval.pinned.is_some();
            m.eval.selected = 0;
        }
        KeyCode::Char('a') => {
            m.eval.pinned = m.eval.report.clone();
        }
        KeyCode::Char('A') => {
            m.eval.pinned = None;
            m.eval.flipped_only = false;
        }
        KeyCode::Esc => m.view = View::Chunks,
        KeyCode::Enter => {
            let rows = eval_rows(m);
            let c = rows.get(m.eval.selected)?;
            let (fp, ci) = c.holding?;
            let chunking = m.chunking.as_ref()?;
            let engine = m.engine.as_ref()?;
            let f = chunking.files.get(fp)?;
            let ch = f.chunks.get(ci)?;
            // The answer's byte in the chunk text, found again by its normalised text.
            let text = ch.text(&engine.corpus.docs[f.doc].text);
            let at = crate::core::cases::locate(text, &c.answer).map(|(s, _)| s);
            m.selected = fp;
            m.focus_chunk = ci;
            m.scroll = 0;
            m.highlight = at.map(|b| (fp, ci, b));
            m.view = View::Chunks;
        }
        _ => return None,
    }
    Some(Vec::new())
}

/// Keys while the query line is being edited: text goes into the line.
fn edit_query(m: &mut Model, ev: &KeyEvent) -> Vec<Cmd> {
    use ratatui::crossterm::event::{KeyCode, KeyModifiers};
    match ev.code {
        KeyCode::Char('c') if ev.modifiers.contains(KeyModifiers::CONTROL) => {
            m.quit = true;
            return vec![Cmd::Quit];
        }
        KeyCode::Char(c) => m.query.input.push(c),
        KeyCode::Backspace => {
            m.query.input.pop();
        }
        KeyCode::Esc => {
            m.query.editing = false;
            if m.query.input.is_empty() && m.query.results.is_none() {
                m.view = View::Chunks;
            }
        }
        KeyCode::Enter => {
            m.query.editing = false;
            return run_query(m);
        }
        _ => {}
    }
    Vec::new()
}

fn run_query(m: &mut Model) -> Vec<Cmd> {
    if m.query.input.trim().is_empty() || m.chunking.is_none() {
        return Vec::new();
    }
    m.query.next_id += 1;
    m.query.pending = Some(m.query.next_id);
    vec![Cmd::Query {
        id: m.query.next_id,
        text: m.query.input.clone(),
        k: m.query.k,
    }]
}

/// Keys in the query view when not editing: move among hits, open one.
fn browse_query(m: &mut Model, ev: &KeyEvent) -> Option<Vec<Cmd>> {
    use ratatui::crossterm::event::KeyCode;
    let hits = m.query.results.as_ref().map_or(0, |r| {
        if m.query.column == 0 {
            r.bm25.len()
        } else {
            r.vector.len()
        }
    });
    match ev.code {
        KeyCode::Tab | KeyCode::BackTab | KeyCode::Left | KeyCode::Right => {
            m.query.column = 1 - m.query.column;
            m.query.selected = 0;
        }
        KeyCode::Down | KeyCode::Char('j') => {
            m.query.selected = (m.query.selected + 1).min(hits.saturating_sub(1))
        }
        KeyCode::Up | KeyCode::Char('k') => m.query.selected = m.query.selected.saturating_sub(1),
        KeyCode::Esc => m.view = View::Chunks,
        KeyCode::Enter => {
            let r = m.query.results.as_ref()?;
            let list = if m.query.column == 0 {
                &r.bm25
            } else {
                &r.vector
            };
            let h = list.get(m.query.selected)?;
            m.selected = h.file_pos;
            m.focus_chunk = h.chunk;
            m.scroll = 0;
            m.highlight = h.match_byte.map(|b| (h.file_pos, h.chunk, b));
            m.view = View::Chunks;
        }
        _ => return None,
    }
    Some(Vec::new())
}

fn chunks_in_selected(m: &Model) -> usize {
    m.chunking
        .as_ref()
        .and_then(|c| c.files.get(m.selected))
        .map_or(0, |f| f.chunks.len())
}

fn clamp_focus(m: &mut Model) {
    let n = chunks_in_selected(m);
    if m.focus_chunk >= n {
        m.focus_chunk = n.saturating_sub(1);
        m.scroll = 0;
    }
}

fn act(m: &mut Model, a: Action) -> Vec<Cmd> {
    if m.show_help && !matches!(a, Action::Help | Action::Quit) {
        // Help scrolls when the terminal is too short for it; any other key closes it.
        match a {
            Action::ScrollDown | Action::NextFile => m.help_scroll += 1,
            Action::ScrollUp | Action::PrevFile => m.help_scroll = m.help_scroll.saturating_sub(1),
            _ => m.show_help = false,
        }
        return Vec::new();
    }
    match a {
        Action::Quit => {
            m.quit = true;
            vec![Cmd::Quit]
        }
        Action::Help => {
            m.show_help = !m.show_help;
            m.help_scroll = 0;
            Vec::new()
        }
        Action::NextFile | Action::PrevFile => {
            let n = m.file_count();
            if n > 0 {
                m.selected = if a == Action::NextFile {
                    (m.selected + 1).min(n - 1)
                } else {
                    m.selected.saturating_sub(1)
                };
                m.focus_chunk = 0;
                m.scroll = 0;
            }
            Vec::new()
        }
        Action::ScrollDown => {
            m.scroll += 10;
            Vec::new()
        }
        Action::ScrollUp => {
            if m.scroll >= 10 {
                m.scroll -= 10;
            } else if m.focus_chunk > 0 && m.scroll == 0 {
                m.focus_chunk -= 1;
            } else {
                m.scroll = 0;
            }
            Vec::new()
        }
        Action::NextChunk => {
            if m.focus_chunk + 1 < chunks_in_selected(m) {
                m.focus_chunk += 1;
            }
            m.scroll = 0;
            Vec::new()
        }
        Action::PrevChunk => {
            if m.scroll == 0 {
                m.focus_chunk = m.focus_chunk.saturating_sub(1);
            }
            m.scroll = 0;
            Vec::new()
        }
        Action::Strategy => m.turn(|s| {
            s.strategy = s.strategy.next();
            match s.strategy {
                Strategy::SpringAi => {
                    s.unit = Unit::Cl100k;
                    s.overlap = 0;
                    Some("spring-ai counts cl100k tokens without overlap".to_string())
                }
                Strategy::MaxMin if s.overlap != 0 => {
                    s.overlap = 0;
                    Some("maxmin groups whole sentences: no overlap".to_string())
                }
                _ => None,
            }
        }),
        Action::ThresholdUp | Action::ThresholdDown | Action::CUp | Action::CDown => {
            if m.settings.strategy != Strategy::MaxMin {
                m.error =
                    Some("thresholds belong to the maxmin strategy (s or p to reach it)".into());
                return Vec::new();
            }
            m.turn(|s| {
                let p = &mut s.maxmin;
                let (slot, delta) = match a {
                    Action::ThresholdUp => (&mut p.fixed_threshold, 0.05),
                    Action::ThresholdDown => (&mut p.fixed_threshold, -0.05),
                    Action::CUp => (&mut p.c, 0.05),
                    _ => (&mut p.c, -0.05),
                };
                *slot = ((*slot + delta) * 100.0).round() / 100.0;
                None
            })
        }
        Action::Metadata => m.turn(|s| {
            s.metadata.cycle();
            Some(format!("metadata: {}", s.metadata.label()))
        }),
        Action::Parents => m.turn(|s| {
            s.parents = !s.parents;
            Some(if s.parents {
                "embed small, return big: hits return their parent section".to_string()
            } else {
                "hits return the chunk itself".to_string()
            })
        }),
        Action::Preset => m.turn(|s| {
            let now = Preset::ALL.iter().position(|p| {
                let mut probe = s.clone();
                p.apply(&mut probe);
                probe == *s
            });
            let next = Preset::ALL[now.map_or(0, |i| (i + 1) % Preset::ALL.len())];
            next.apply(s);
            Some(format!("preset {}", next.name()))
        }),
        Action::Unit => m.turn(|s| {
            s.unit = s.unit.next();
            None
        }),
        Action::SizeUp => m.turn(|s| {
            s.size += step(s.size);
            None
        }),
        Action::SizeDown => m.turn(|s| {
            s.size = s.size.saturating_sub(step(s.size));
            None
        }),
        Action::OverlapUp => m.turn(|s| {
            s.overlap += step(s.size / 4);
            None
        }),
        Action::OverlapDown => m.turn(|s| {
            s.overlap = s.overlap.saturating_sub(step(s.size / 4));
            None
        }),
        Action::Window => {
            m.window_spec = ModelWindows::cycle(m.window_spec);
            m.error = None;
            m.probe = None;
            m.embed_cmd()
        }
        Action::Query => {
            m.view = View::Query;
            m.query.editing = true;
            Vec::new()
        }
        Action::Eval => {
            if !m.has_cases {
                m.error = Some(
                    "no evaluation cases: put cases.tsv in the corpus or pass --cases FILE".into(),
                );
                return Vec::new();
            }
            m.view = View::Eval;
            start_eval(m)
        }
        Action::Probe => match m.chunking.as_ref().and_then(|c| c.files.get(m.selected)) {
            Some(f) if m.focus_chunk < f.chunks.len() => vec![Cmd::Probe {
                file_pos: m.selected,
                chunk: m.focus_chunk,
            }],
            _ => Vec::new(),
        },
        Action::Theme => {
            if let Some(t) = Theme::built_in(m.theme.next_name()) {
                m.theme = t;
            }
            Vec::new()
        }
        Action::Rescan => {
            m.last_reload = Some("rescan".into());
            m.generation += 1;
            m.loading = true;
            vec![Cmd::Load {
                generation: m.generation,
            }]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::{KeyCode, KeyModifiers};

    fn model() -> Model {
        Model::new(
            "examples".into(),
            "m".into(),
            ModelWindows {
                tokenizer_json: Some(128),
                sentence_transformers: Some(256),
                max_positions: Some(512),
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
        update(&mut m, key('p'));
        assert_eq!(m.settings.strategy, Strategy::SpringAi);
        // Outside maxmin the threshold keys say where they belong and change nothing.
        let before = m.settings.clone();
        update(&mut m, key('}'));
        assert_eq!(m.settings, before);
        assert!(m.error.as_deref().unwrap().contains("maxmin"));
    }

    #[test]
    fn metadata_and_parents_keys() {
        let mut m = model();
        update(&mut m, key('m'));
        assert_eq!(
            m.settings.metadata.heading,
            crate::core::metadata::Use::Embed
        );
        update(&mut m, key('m'));
        assert_eq!(m.settings.metadata.file, crate::core::metadata::Use::Embed);
        update(&mut m, key('m'));
        assert!(!m.settings.metadata.embeds_anything());
        update(&mut m, key('b'));
        assert!(m.settings.parents);
    }

    #[test]
    fn query_mode_edits_runs_and_opens_a_hit() {
        use crate::core::search::{Hit, Results};
        let mut m = model();
        m.chunking = Some(Arc::new(Chunking {
            settings: m.settings.clone(),
            files: Vec::new(),
        }));
        update(&mut m, key('/'));
        assert_eq!(m.view, View::Query);
        for c in "q w?".chars() {
            assert!(
                update(&mut m, key(c)).is_empty(),
                "typing is text, not actions"
            );
        }
        assert_eq!(m.query.input, "q w?");
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
            file_pos: 2,
            chunk: 3,
            heading: None,
            match_byte: Some(40),
            token_offset: Some(9),
            in_tail: false,
            only_here: true,
            parent: None,
        };
        let id = m.query.pending.unwrap();
        let generation = m.chunked_at;
        update(
            &mut m,
            Msg::QueryDone {
                id,
                generation,
                result: Ok(Results {
                    bm25: vec![hit],
                    ..Results::default()
                }),
            },
        );
        assert!(m.query.results.is_some());
        update(
            &mut m,
            Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
        );
        assert_eq!(m.view, View::Chunks);
        assert_eq!((m.selected, m.focus_chunk), (2, 3));
        assert_eq!(m.highlight, Some((2, 3, 40)));
    }

    #[test]
    fn quit_and_help() {
        let mut m = model();
        update(&mut m, key('?'));
        assert!(m.show_help);
        update(&mut m, key('s'));
        assert!(!m.show_help, "any key closes help");
        assert_eq!(update(&mut m, key('q')), vec![Cmd::Quit]);
    }
}
