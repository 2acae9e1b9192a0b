//! The app's state: what the screen shows and what the user set.

use std::path::PathBuf;
use std::sync::Arc;

use chunkscope_core::chunk::ChunkSettings;
use chunkscope_core::embed::lowp::Precision;
use chunkscope_core::engine::{Chunking, Engine, FileChunks};
use chunkscope_core::eval::judged::{JudgedQuery, Ranker};
use chunkscope_core::eval::CaseResult;
use chunkscope_core::jobs::pipeline::Focus;
use chunkscope_core::window::{ModelWindows, Window, WindowSpec};

use super::keymap::{Keymap, Layer};
pub use super::panes::{
    ChunksState, EvalState, FileSort, Highlight, Probe, QueryState, Retriever, WorstState,
};
use super::Cmd;
use crate::theme::Theme;

/// Where the embedding of the current chunking stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EmbedStatus {
    pub generation: u64,
    pub window: usize,
    pub done: usize,
    pub total: usize,
    pub embedded: usize,
    pub per_second: f64,
    /// With an embedding server: requests in flight and retries so far.
    pub requests: Option<(usize, usize)>,
    /// The files in focus (on screen, touched by the latest query) have all their vectors.
    pub focus_fresh: bool,
    pub finished: bool,
    pub seconds: f64,
    /// Vectors kept from the previous chunking's index.
    pub kept: usize,
}

impl EmbedStatus {
    /// A run just asked for: nothing counted yet.
    pub fn starting(generation: u64, window: usize) -> EmbedStatus {
        EmbedStatus {
            generation,
            window,
            done: 0,
            total: 0,
            embedded: 0,
            per_second: 0.0,
            requests: None,
            focus_fresh: false,
            finished: false,
            seconds: 0.0,
            kept: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Chunks,
    Query,
    Eval,
    /// The worst chunks across the corpus.
    Worst,
    /// Files and lines found by typed text.
    Find,
}

/// A number being typed in the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub input: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// Chunk number (1-based) of the file on screen.
    GotoChunk,
    Size,
    Overlap,
}

impl PromptKind {
    pub fn label(self) -> &'static str {
        match self {
            PromptKind::GotoChunk => "go to chunk",
            PromptKind::Size => "chunk size",
            PromptKind::Overlap => "overlap",
        }
    }
}

/// The files re-chunked ahead of the rest of the corpus (the selected one, those on screen),
/// shown in their panes at once while the worker chunks the rest; corpus-wide panes say they are
/// partial until the whole chunking arrives. Nothing downstream (indexes, vectors, searches)
/// reads them.
#[derive(Debug, Clone)]
pub struct PartialChunks {
    pub generation: u64,
    pub settings: ChunkSettings,
    /// The new chunks by file position.
    pub files: std::collections::HashMap<usize, FileChunks>,
    /// The file (a large selected one) of which `files` holds only the first chunks, those on
    /// screen, until the rest of it arrives.
    pub head: Option<usize>,
    /// Files re-chunked so far, of `total`.
    pub done: usize,
    pub total: usize,
}

pub struct Model {
    pub corpus_path: PathBuf,
    pub model_name: String,
    /// The models `E` cycles through: the configured one, then `[model] compare`.
    pub models: Vec<String>,
    pub model_index: usize,
    /// The native backend's arithmetic (`B` cycles it).
    pub precision: Precision,
    /// Where vectors come from, in words ("native f32", or the server and its model).
    pub backend: String,
    /// The same as a type: only the native backend has bf16 and int8.
    pub backend_kind: chunkscope_core::embed::BackendKind,
    /// The embedding server's window, when vectors come from one.
    pub server: Option<chunkscope_core::embed::remote::ServerWindow>,
    pub windows: ModelWindows,
    pub specials: usize,
    /// The knobs as the user set them.
    pub settings: ChunkSettings,
    pub window_spec: WindowSpec,
    /// The engine of the chunking on screen.
    pub engine: Option<Arc<Engine>>,
    /// The latest finished chunking (may be older than `settings` while a job runs).
    pub chunking: Option<Arc<Chunking>>,
    /// The files in focus re-chunked ahead of the rest while the whole chunking runs.
    pub partial: Option<PartialChunks>,
    /// Generation of the latest request; results of older ones are dropped.
    pub generation: u64,
    /// Generation of the chunking on screen.
    pub chunked_generation: u64,
    pub loading: bool,
    /// Files read so far, and documents converted, while the corpus is read.
    pub reading: Option<(usize, usize)>,
    /// The files pane and the chunk pane.
    pub chunks: ChunksState,
    pub show_help: bool,
    /// Lines the help overlay is scrolled by (short terminals).
    pub help_scroll: u16,
    pub theme: Theme,
    pub keymap: Keymap,
    /// Notes for the user (skipped files, config problems); the newest last.
    pub notes: Vec<String>,
    /// The last refused knob or failed job, shown in the status line until the next key.
    pub error: Option<String>,
    /// What the last key did when it says so itself (copied, saved), until the next key.
    pub info: Option<String>,
    /// The workbench.toml the knobs came from (where `save_knobs` writes), if any.
    pub config_path: Option<PathBuf>,
    pub last_chunk_millis: Option<u64>,
    pub quit: bool,
    pub embed: Option<EmbedStatus>,
    pub view: View,
    pub query: QueryState,
    pub eval: EvalState,
    /// The watcher's mode ("watching", "watching (polling)") or why it is off.
    pub watch: String,
    /// The store opened as the corpus (its URI, password taken out), if any: its chunks are
    /// the chunking, whatever the knobs say.
    pub store: Option<String>,
    /// The window a store's vectors were made at, when it is not auto's: in force while the
    /// window is left to auto.
    pub detected_window: Option<(usize, String)>,
    /// What the last reload did, for the status line.
    pub last_reload: Option<String>,
    /// Evaluation cases (CORPUS/cases.tsv, --cases, or SQuAD JSON), if the corpus has some.
    pub cases: Option<PathBuf>,
    /// Max-Min sentence embedding in progress: (done, total).
    pub sentences: Option<(usize, usize)>,
    /// A number being typed (chunk to go to, exact size or overlap); keys go to it while open.
    pub prompt: Option<Prompt>,
    /// The terminal's size (columns, rows), for mouse clicks.
    pub size: (u16, u16),
    pub find: super::find::FindState,
    pub worst: WorstState,
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
            models: Vec::new(),
            model_index: 0,
            precision: Precision::F32,
            model_name,
            backend: "native f32".into(),
            backend_kind: Default::default(),
            server: None,
            windows,
            specials,
            settings,
            window_spec,
            engine: None,
            chunking: None,
            partial: None,
            generation: 0,
            chunked_generation: 0,
            loading: true,
            reading: None,
            chunks: ChunksState::default(),
            show_help: false,
            help_scroll: 0,
            theme,
            keymap,
            notes: Vec::new(),
            error: None,
            info: None,
            config_path: None,
            last_chunk_millis: None,
            quit: false,
            embed: None,
            view: View::Chunks,
            query: QueryState {
                k: 5,
                ..QueryState::default()
            },
            eval: EvalState::default(),
            watch: String::new(),
            store: None,
            detected_window: None,
            last_reload: None,
            cases: None,
            sentences: None,
            prompt: None,
            size: (0, 0),
            find: Default::default(),
            worst: WorstState::default(),
        }
    }

    /// The files the user looks at, by position in the chunking on screen: the selected file,
    /// then the files of the latest query's hits. Their chunks are embedded first.
    pub fn focus_files(&self) -> Vec<usize> {
        let mut files = vec![self.chunks.selected];
        if let Some(r) = &self.query.results {
            for h in r.bm25.iter().chain(&r.vector).chain(&r.hybrid) {
                if !files.contains(&h.file_pos) {
                    files.push(h.file_pos);
                }
            }
        }
        files
    }

    pub fn window(&self) -> Window {
        if let (WindowSpec::Auto, Some((tokens, source))) =
            (self.window_spec, &self.detected_window)
        {
            return Window {
                tokens: *tokens,
                source: source.clone(),
                rejects: false,
            };
        }
        let w = self.windows.resolve(self.window_spec);
        match &self.server {
            Some(s) => s.apply(self.window_spec, w),
            None => w,
        }
    }

    /// Whether a text box has the keys (the query pane, the find view): printable keys are text.
    pub fn text_box_focused(&self) -> bool {
        !self.show_help && matches!(self.view, View::Query | View::Find)
    }

    /// The keymap layer in force: the help overlay's, else the pane's.
    pub fn layer(&self) -> Layer {
        match (self.show_help, self.view) {
            (true, _) => Layer::Help,
            (false, View::Chunks) => Layer::Chunks,
            (false, View::Query) => Layer::Query,
            (false, View::Eval) => Layer::Eval,
            (false, View::Worst) => Layer::Worst,
            // The find view's keys are its text box's; the global ones beyond text still work.
            (false, View::Find) => Layer::Global,
        }
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
                    || self.chunking.is_none()
                    || e.generation != self.chunked_generation
                    || e.window != self.window().tokens
            })
    }

    /// File positions in the order of the files pane.
    pub fn file_order(&self) -> Vec<usize> {
        let n = self.file_count();
        let mut order: Vec<usize> = (0..n).collect();
        let Some(chunking) = self.chunking.as_ref().filter(|c| c.files.len() == n) else {
            return order;
        };
        let window = self.window().tokens;
        let key = |fp: usize| -> usize {
            let tails = chunking.files[fp]
                .chunks
                .iter()
                .filter_map(|c| c.tail(window, self.specials));
            match self.chunks.file_sort {
                FileSort::Name => 0,
                FileSort::Unseen => tails.map(|t| t.tokens).sum(),
                FileSort::OverWindow => tails.count(),
            }
        };
        order.sort_by_key(|&fp| std::cmp::Reverse(key(fp)));
        order
    }

    /// The chunks past the window, worst first (the audit's ranking).
    pub fn worst_chunks(&self) -> Vec<chunkscope_core::engine::WorstChunk> {
        match (&self.engine, &self.chunking) {
            (Some(e), Some(c)) => c.worst_chunks(e, self.window().tokens),
            _ => Vec::new(),
        }
    }

    pub fn file_count(&self) -> usize {
        self.engine.as_ref().map_or(0, |e| e.corpus.docs.len())
    }

    pub(super) fn chunks_in_selected(&self) -> usize {
        self.file_chunks(self.chunks.selected)
            .map_or(0, |f| f.chunks.len())
    }

    /// The chunks shown for the file at `file_pos`: re-chunked ahead of the rest if it was,
    /// else the finished chunking's.
    pub fn file_chunks(&self, file_pos: usize) -> Option<&FileChunks> {
        self.partial
            .as_ref()
            .and_then(|p| p.files.get(&file_pos))
            .or_else(|| self.chunking.as_ref()?.files.get(file_pos))
    }

    /// True when the chunks shown for `file_pos` are its first ones only: the rest of the file
    /// is still being chunked.
    pub fn head_only(&self, file_pos: usize) -> bool {
        self.partial
            .as_ref()
            .is_some_and(|p| p.head == Some(file_pos))
    }

    /// The settings the chunks shown for `file_pos` were made with.
    pub fn settings_of(&self, file_pos: usize) -> Option<&ChunkSettings> {
        match &self.partial {
            Some(p) if p.files.contains_key(&file_pos) => Some(&p.settings),
            _ => self.chunking.as_ref().map(|c| &c.settings),
        }
    }

    /// Every file's shown chunks, in corpus order: the finished chunking with the files
    /// re-chunked ahead of the rest in place of theirs.
    pub fn shown_files(&self) -> Vec<&FileChunks> {
        let n = match (&self.chunking, &self.partial) {
            (Some(c), _) => c.files.len(),
            (None, Some(p)) => p.files.keys().max().map_or(0, |m| m + 1),
            (None, None) => 0,
        };
        (0..n).filter_map(|fp| self.file_chunks(fp)).collect()
    }

    /// True while the selected file shows chunks made with the knobs as they are, ahead of the
    /// rest of the corpus.
    pub fn selected_ahead(&self) -> bool {
        !self.loading
            && self.partial.as_ref().is_some_and(|p| {
                p.settings == self.settings && p.files.contains_key(&self.chunks.selected)
            })
    }

    /// The files rows in the files pane shows now, top to bottom (it scrolls as ratatui's list
    /// does: just enough to keep the selection in view); none before the terminal's size is known.
    pub fn files_on_screen(&self) -> Vec<usize> {
        let (w, h) = self.size;
        let area = crate::layout::areas(ratatui::layout::Rect::new(0, 0, w, h)).files;
        let rows = area.height.saturating_sub(2) as usize;
        let order = self.file_order();
        let at = order
            .iter()
            .position(|&fp| fp == self.chunks.selected)
            .unwrap_or(0);
        let offset = at.saturating_sub(rows.saturating_sub(1));
        order.into_iter().skip(offset).take(rows).collect()
    }

    /// What a knob turn chunks first: the selected file, then the other files on screen; and
    /// how many of the selected file's chunks the chunk pane can reach (its focused chunk, then
    /// at most a chunk a row below it, whatever the new chunks' sizes).
    pub fn rechunk_focus(&self) -> Focus {
        let mut files = vec![self.chunks.selected];
        files.extend(
            self.files_on_screen()
                .into_iter()
                .filter(|&fp| fp != self.chunks.selected),
        );
        let (w, h) = self.size;
        let rows = crate::layout::areas(ratatui::layout::Rect::new(0, 0, w, h))
            .main
            .height as usize;
        Focus {
            files,
            reach: self.chunks.focus_chunk + rows.max(1) + 1,
        }
    }

    pub(super) fn clamp_focus(&mut self) {
        let n = self.chunks_in_selected();
        self.chunks.clamp_focus(n);
    }

    /// Show `chunk` of file `file_pos` in the chunk pane, centred on the first of `spans` (byte
    /// ranges of its text; `current` is the one centred), all of them highlighted.
    pub(super) fn open_chunk(
        &mut self,
        file_pos: usize,
        chunk: usize,
        spans: Vec<(usize, usize)>,
        current: usize,
    ) {
        self.chunks.open(file_pos, chunk, spans, current);
        self.view = View::Chunks;
    }

    /// The text of chunk `chunk` of file `file_pos`, if it is on screen.
    pub(super) fn chunk_text(&self, file_pos: usize, chunk: usize) -> Option<&str> {
        let (engine, chunking) = (self.engine.as_ref()?, self.chunking.as_ref()?);
        let f = chunking.files.get(file_pos)?;
        Some(
            f.chunks
                .get(chunk)?
                .text(&engine.corpus.docs.get(f.doc)?.text),
        )
    }

    /// Embed the chunking on screen at the window in force.
    pub(super) fn embed_cmd(&mut self) -> Vec<Cmd> {
        let (Some(engine), Some(chunking)) = (&self.engine, &self.chunking) else {
            return Vec::new();
        };
        let window = self.window().tokens;
        self.embed = Some(EmbedStatus::starting(self.chunked_generation, window));
        vec![Cmd::Embed {
            generation: self.chunked_generation,
            engine: Arc::clone(engine),
            chunking: Arc::clone(chunking),
            window,
        }]
    }

    pub(super) fn rechunk(&mut self) -> Vec<Cmd> {
        // The pipeline chunks its own latest engine; `engine` is set from the first load on.
        if self.engine.is_none() {
            return Vec::new();
        }
        self.generation += 1;
        vec![Cmd::Rechunk {
            generation: self.generation,
            settings: self.settings.clone(),
            focus: self.rechunk_focus(),
        }]
    }

    /// Read the corpus again (a rescan key or the watcher).
    pub(super) fn reload(&mut self, why: String) -> Vec<Cmd> {
        self.last_reload = Some(why);
        self.generation += 1;
        self.loading = true;
        vec![Cmd::Load {
            generation: self.generation,
        }]
    }

    /// Apply a knob change if the result is valid; otherwise keep the old knobs and say why.
    pub(super) fn turn(
        &mut self,
        change: impl FnOnce(&mut ChunkSettings) -> Option<String>,
    ) -> Vec<Cmd> {
        let mut next = self.settings.clone();
        let note = change(&mut next);
        if let Err(e) = next.validate() {
            self.error = Some(format!("refused, the knobs stay as they were: {e}"));
            return Vec::new();
        }
        self.error = note;
        if next == self.settings {
            return Vec::new();
        }
        self.settings = next;
        self.rechunk()
    }

    /// Evaluate the chunking on screen, unless its report is already here.
    pub(super) fn start_eval(&mut self) -> Vec<Cmd> {
        let Some(cases) = self.cases.clone().filter(|_| self.chunking.is_some()) else {
            return Vec::new();
        };
        if self.eval.made_for == Some((self.chunked_generation, self.window().tokens)) {
            return Vec::new();
        }
        self.eval.running = true;
        vec![Cmd::Eval { cases }]
    }

    /// The judged queries listed in the eval pane when the report has no span cases (a BEIR
    /// folder's): all, or with misses only those with a relevant document past k in BM25 or
    /// vectors.
    pub fn judged_rows(&self) -> Vec<&JudgedQuery> {
        let e = &self.eval;
        let Some(r) = &e.report else {
            return Vec::new();
        };
        let Some(j) = r.judged.as_ref().filter(|_| r.results.is_empty()) else {
            return Vec::new();
        };
        let missed =
            |q: &JudgedQuery| !q.found_at(Ranker::Bm25, r.k) || !q.found_at(Ranker::Vector, r.k);
        j.per_query
            .iter()
            .filter(|q| !e.misses_only || missed(q))
            .collect()
    }

    /// How many rows the eval pane lists: its cases, or its judged queries.
    pub fn eval_len(&self) -> usize {
        self.eval_rows().len().max(self.judged_rows().len())
    }

    /// The cases listed in the eval pane (all, the misses at k, or those that flipped against A).
    pub fn eval_rows(&self) -> Vec<&CaseResult> {
        let e = &self.eval;
        let Some(r) = &e.report else {
            return Vec::new();
        };
        let flipped = |c: &CaseResult| {
            e.pinned.as_ref().is_some_and(|a| {
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
            .filter(|c| !e.misses_only || c.bm25_miss.is_some() || c.vector_miss.is_some())
            .filter(|c| !e.flipped_only || flipped(c))
            .collect()
    }
}
