//! The TUI's state and its update function (The Elm Architecture): messages in, state changed,
//! commands out. No terminal code and no threads here; one file per pane.

mod chunks;
mod eval;
mod events;
pub mod find;
pub mod keymap;
mod model;
mod panes;
mod query;
mod switch;
pub mod textbox;
mod worst;

use std::path::PathBuf;
use std::sync::Arc;

use chunkscope_core::chunk::ChunkSettings;
use chunkscope_core::engine::{Chunking, Engine};
use chunkscope_core::jobs::pipeline::Focus;
use chunkscope_core::jobs::Event;
use ratatui::crossterm::event::{KeyEvent, KeyEventKind, MouseEvent};

use keymap::{Action, Layer};
pub use model::{
    ChunksState, EmbedStatus, EvalState, FileSort, Highlight, Model, PartialChunks, Probe, Prompt,
    PromptKind, QueryState, Retriever, View, WorstState,
};

/// A model made ready off the UI thread: found (or downloaded), its tokenizer loaded, its
/// embedding server (if any) asked for its window.
pub struct LoadedModel {
    pub info: chunkscope_core::model::ModelInfo,
    pub tok: Arc<chunkscope_core::tokenize::EmbedTokenizer>,
    pub server: Option<chunkscope_core::embed::remote::ServerWindow>,
}

impl std::fmt::Debug for LoadedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LoadedModel({})", self.info.id)
    }
}

/// Everything that can happen to the app.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    /// The terminal's new size (columns, rows).
    Resize(u16, u16),
    /// Text pasted into the terminal (bracketed paste).
    Paste(String),
    /// SIGTERM, SIGINT, SIGHUP or SIGQUIT: quit as `q` does, so the terminal is restored.
    Terminate,
    /// What a command the terminal carried out did, for the status line.
    Info(String),
    /// A worker reported.
    Job(Event),
    /// The model asked for by `Cmd::SwitchModel` is ready (or could not be had).
    ModelReady {
        generation: u64,
        result: Result<Arc<LoadedModel>, String>,
    },
    /// What the session was configured with, once before the first frame.
    Configured(Box<Setup>),
    /// The workers of a model started: what the screen says about the model.
    Started(Box<ModelFacts>),
    /// The corpus watcher's mode, or why the corpus is not watched.
    Watching(Result<String, String>),
}

/// The session's configuration as the screen needs it (the terminal side reads the files).
#[derive(Debug, Clone, Default)]
pub struct Setup {
    pub config_path: Option<PathBuf>,
    /// Problems with the configuration, keymap or theme, shown once and kept in the notes.
    pub notes: Vec<String>,
    /// The store opened as the corpus, when one is.
    pub store: Option<String>,
    pub search_k: usize,
    pub precision: chunkscope_core::embed::lowp::Precision,
    /// The models `m` cycles through (the configured one first).
    pub models: Vec<String>,
    /// The evaluation cases of the eval pane.
    pub cases: Option<PathBuf>,
    /// The CrossEncoder folder that reranks each query (`[rerank] model`), when one is set.
    pub reranker: Option<String>,
}

/// A started model as the status line shows it.
#[derive(Debug, Clone, Default)]
pub struct ModelFacts {
    pub name: String,
    pub windows: chunkscope_core::window::ModelWindows,
    pub specials: usize,
    pub backend: String,
    pub backend_kind: chunkscope_core::embed::BackendKind,
    pub server: Option<chunkscope_core::embed::remote::ServerWindow>,
    /// Worth saying once (no modules.json, a server that counts differently); the last one is
    /// also shown as the error line.
    pub notes: Vec<String>,
    pub warning: Option<String>,
}

impl From<Event> for Msg {
    fn from(ev: Event) -> Msg {
        Msg::Job(ev)
    }
}

/// What update asks the outside world to do; each command carries what it needs.
#[derive(Debug, Clone)]
pub enum Cmd {
    /// Start the workers of a model made ready.
    StartModel(Arc<LoadedModel>),
    /// Make another model ready off the UI thread (`m.models[m.model_index]`); it answers
    /// with `Msg::ModelReady`.
    SwitchModel {
        model: String,
        precision: chunkscope_core::embed::lowp::Precision,
        generation: u64,
    },
    /// Read and tokenize the corpus again.
    Load {
        generation: u64,
    },
    /// Chunk the loaded corpus with these settings (latest wins), the files in `focus` (by
    /// position: the selected one, then the others on screen) ahead of the rest.
    Rechunk {
        generation: u64,
        settings: ChunkSettings,
        focus: Focus,
    },
    /// Embed this chunking at `window` and index it (latest wins).
    Embed {
        generation: u64,
        engine: Arc<Engine>,
        chunking: Arc<Chunking>,
        window: usize,
    },
    Query {
        id: u64,
        text: String,
        k: usize,
        /// The chunk that should have been found (file position, chunk index).
        expect: Option<(usize, usize)>,
    },
    Probe {
        file_pos: usize,
        chunk: usize,
    },
    Eval {
        cases: PathBuf,
    },
    /// Put `text` on the terminal's clipboard (OSC 52).
    Copy {
        text: String,
    },
    /// Write these knobs into the workbench.toml at `path` (comments kept, atomically), unless it
    /// lies inside `corpus` (never written).
    SaveKnobs {
        path: PathBuf,
        corpus: PathBuf,
        settings: ChunkSettings,
        window: chunkscope_core::window::WindowSpec,
    },
    Quit,
}

pub fn update(m: &mut Model, msg: Msg) -> Vec<Cmd> {
    match msg {
        Msg::Key(ev) if ev.kind == KeyEventKind::Release => Vec::new(),
        Msg::Key(ev) => {
            // A key press answers the last message: a new refusal replaces it, and nothing old
            // stays in front of what this key does.
            m.error = None;
            m.info = None;
            on_key(m, &ev)
        }
        Msg::Mouse(ev) => {
            chunks::mouse(m, ev);
            Vec::new()
        }
        Msg::Configured(setup) => {
            m.config_path = setup.config_path;
            m.error = setup.notes.first().cloned();
            m.notes = setup.notes;
            if setup.store.is_some() {
                m.notes.push(
                    "stored chunks: the chunking knobs do not change them; the vector column searches the stored vectors (`chunkscope audit --store` checks them against the text)".into(),
                );
            }
            m.store = setup.store;
            m.query.k = setup.search_k;
            m.precision = setup.precision;
            m.models = setup.models;
            m.cases = setup.cases;
            m.query.reranker = setup.reranker;
            m.generation = m.generation.max(1);
            Vec::new()
        }
        Msg::Started(f) => {
            m.model_name = f.name;
            m.windows = f.windows;
            m.specials = f.specials;
            m.backend = f.backend;
            m.backend_kind = f.backend_kind;
            m.server = f.server;
            m.notes.extend(f.notes);
            if f.warning.is_some() {
                m.error = f.warning;
            }
            Vec::new()
        }
        Msg::Watching(mode) => {
            match mode {
                Ok(mode) => m.watch = mode,
                Err(e) => {
                    m.watch = "not watching".into();
                    m.notes.push(e);
                }
            }
            Vec::new()
        }
        Msg::Resize(w, h) => {
            m.size = (w, h);
            Vec::new()
        }
        Msg::Paste(text) => {
            query::paste(m, &text);
            Vec::new()
        }
        Msg::Terminate => {
            m.quit = true;
            vec![Cmd::Quit]
        }
        Msg::Info(text) => {
            m.info = Some(text);
            Vec::new()
        }
        Msg::Job(ev) => events::on_event(m, ev),
        Msg::ModelReady { generation, result } => {
            if generation != m.generation {
                return Vec::new();
            }
            match result {
                Ok(model) => vec![Cmd::StartModel(model)],
                Err(e) => {
                    // The previous model's workers are still there: read the corpus again.
                    m.error = Some(format!("{e}; the previous model stays"));
                    vec![Cmd::Load { generation }]
                }
            }
        }
    }
}

fn on_key(m: &mut Model, ev: &KeyEvent) -> Vec<Cmd> {
    if m.prompt.is_some() {
        return chunks::prompt_key(m, ev);
    }
    if m.view == View::Query && !m.show_help {
        return query::key(m, ev);
    }
    if m.view == View::Find && !m.show_help {
        return find::key(m, ev);
    }
    let layer = m.layer();
    match m.keymap.action_for(layer, ev) {
        Some(a) => act(m, layer, a),
        None => {
            // Any key closes help, bound or not.
            m.show_help = false;
            Vec::new()
        }
    }
}

/// Run `a`, found in `layer`'s bindings.
pub(super) fn act(m: &mut Model, layer: Layer, a: Action) -> Vec<Cmd> {
    match (layer, a) {
        (_, Action::Quit) => {
            m.quit = true;
            vec![Cmd::Quit]
        }
        (_, Action::Help) => {
            m.show_help = !m.show_help;
            m.help_scroll = 0;
            Vec::new()
        }
        (Layer::Help, Action::HelpDown) => {
            m.help_scroll += 1;
            Vec::new()
        }
        (Layer::Help, Action::HelpUp) => {
            m.help_scroll = m.help_scroll.saturating_sub(1);
            Vec::new()
        }
        // Help scrolls when the terminal is too short for it; any other key closes it.
        (Layer::Help, _) => {
            m.show_help = false;
            Vec::new()
        }
        (Layer::Eval, _) if eval::act(m, a) => Vec::new(),
        (Layer::Worst, _) if worst::act(m, a) => Vec::new(),
        _ => chunks::act(m, a),
    }
}

#[cfg(test)]
mod tests;
