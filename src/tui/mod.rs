//! The workbench in the terminal: workers started, the input and signal threads, and the event
//! loop that drains messages and draws only when something changed, at most ~60 times a second.

pub mod logfile;
mod terminal;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event};
use ratatui::Terminal;

use crate::app::keymap::Keymap;
use crate::app::{update, Cmd, LoadedModel, Model, ModelFacts, Msg, Setup};
use crate::theme::Theme;
use crate::ui;
use chunkscope_core::config::Config;
use chunkscope_core::embed::SharedEmbedder;
use chunkscope_core::jobs::embedder::{EmbedWorker, Options, RerankSetup};
use chunkscope_core::jobs::pipeline::{Pipeline, Source};
use chunkscope_core::model;
use chunkscope_core::tokenize::EmbedTokenizer;

const FRAME: Duration = Duration::from_millis(16);

/// Open the workbench on `corpus`. The model is located (and downloaded, with progress on stderr)
/// before the screen opens.
pub fn run(
    corpus: &Path,
    cases: Option<PathBuf>,
    mut config: Config,
    config_error: Option<String>,
    mono: bool,
    log_level: log::Level,
) -> Result<()> {
    let log_path = logfile::init(config.log_file.as_deref(), log_level);
    let store = config
        .store
        .uri
        .as_deref()
        .map(chunkscope_core::store::redact);
    if store.is_none() && !corpus.exists() {
        anyhow::bail!("corpus {}: no such file or directory", corpus.display());
    }
    let first = load_model(&config.model, &config, &mut |l| eprintln!("{l}"))?;
    let mut notes: Vec<String> = Vec::new();
    if let Some(e) = config_error {
        notes.push(format!("{e}; using defaults"));
    }
    let shown_corpus = store
        .as_ref()
        .map_or_else(|| corpus.to_path_buf(), PathBuf::from);
    let mut m = new_model(shown_corpus, &config, &first, mono, &mut notes);
    for n in &notes {
        log::warn!("{n}");
    }
    let (tx, rx) = channel::<Msg>();
    let setup = setup(&config, corpus, cases, store.clone(), notes);
    update(&mut m, Msg::Configured(Box::new(setup)));
    let mut session = Session::start(&mut m, &config, corpus, &first, &tx);
    let watched = match store {
        Some(_) => Err("a store is not watched (F5 reads it again)".to_string()),
        None => {
            chunkscope_core::jobs::watcher::watch(corpus, tx.clone()).map_err(|e| e.to_string())
        }
    };
    update(
        &mut m,
        Msg::Watching(
            watched
                .as_ref()
                .map(|w| w.mode().to_string())
                .map_err(Clone::clone),
        ),
    );
    let _watcher = watched.ok();

    let mouse = config.mouse;
    restore_terminal_on_panic(mouse);
    let stop = tx.clone();
    terminal::on_termination(mouse, move || {
        let _ = stop.send(Msg::Terminate);
    })?;
    let guard = terminal::Guard::enter(mouse)?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    terminal.clear()?;
    if let Ok(size) = terminal.size() {
        update(&mut m, Msg::Resize(size.width, size.height));
    }
    // Only now: the input thread holds crossterm's event reader, which clear() also needs.
    spawn_input(tx.clone());
    let result = loop {
        let exit = event_loop(
            &mut terminal,
            &mut m,
            &rx,
            &session.pipeline,
            Some(&session.embedder),
            |_, _| false,
        );
        match exit {
            Ok(Some(Cmd::SwitchModel {
                model,
                precision,
                generation,
            })) => {
                config.precision = precision;
                load_model_aside(model, generation, &config, &tx)?;
            }
            Ok(Some(Cmd::StartModel(loaded))) => {
                // The new model's workers replace the old ones (whose late messages carry older
                // generations and are dropped).
                drop(session);
                session = Session::start(&mut m, &config, corpus, &loaded, &tx);
            }
            other => break other.map(|_| ()),
        }
    };
    drop(guard);
    if let Some(p) = log_path {
        log::info!("exit; log at {}", p.display());
    }
    result
}

/// The model before anything is read: the first model's facts, the knobs, the theme and the
/// keymap. A theme or key binding that cannot be had adds a note.
fn new_model(
    corpus: PathBuf,
    config: &Config,
    first: &LoadedModel,
    mono: bool,
    notes: &mut Vec<String>,
) -> Model {
    let theme = if mono {
        Theme::mono()
    } else {
        Theme::load(&config.theme).unwrap_or_else(|e| {
            notes.push(e);
            Theme::dark()
        })
    };
    let (keymap, key_errors) = Keymap::with_overrides(&config.keys, &config.source_name());
    notes.extend(key_errors.iter().map(ToString::to_string));
    Model::new(
        corpus,
        first.info.short_name(),
        first.info.windows,
        first.tok.specials(),
        config.chunking.clone(),
        config.window,
        theme,
        keymap,
    )
}

/// What the app learns from the configuration: the models to compare, the evaluation cases.
fn setup(
    config: &Config,
    corpus: &Path,
    cases: Option<PathBuf>,
    store: Option<String>,
    notes: Vec<String>,
) -> Setup {
    let mut models: Vec<String> = Vec::new();
    for id in std::iter::once(&config.model).chain(&config.compare) {
        if !models.contains(id) {
            models.push(id.clone());
        }
    }
    // Evaluation cases: --cases, else CORPUS/cases.tsv, else the SQuAD JSON the corpus came from.
    let cases = cases.or_else(|| {
        let tsv = corpus.join("cases.tsv");
        if tsv.is_file() {
            Some(tsv)
        } else if corpus.extension().is_some_and(|e| e == "json") {
            Some(corpus.to_path_buf())
        } else {
            None
        }
    });
    Setup {
        config_path: config.source.clone(),
        notes,
        store,
        search_k: config.search_k,
        precision: config.precision,
        models,
        cases,
        reranker: config.rerank_model.clone(),
    }
}

/// A panic restores the terminal before its message is printed.
fn restore_terminal_on_panic(mouse: bool) {
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |p| {
        // A parser panic the converter catches is no reason to leave the screen (the
        // converter's quiet hook may sit inside this one when a document converted first).
        if chunkscope_core::panics::contained() {
            return;
        }
        terminal::restore_terminal(mouse);
        previous_hook(p);
    }));
}

/// Find (maybe download) `model`, read its tokenizer and ask its server, on a thread of its own:
/// the screen keeps going and hears back through Msg::ModelReady.
fn load_model_aside(
    model: String,
    generation: u64,
    config: &Config,
    tx: &Sender<Msg>,
) -> Result<()> {
    let (tx, config) = (tx.clone(), config.clone());
    std::thread::Builder::new()
        .name("model".into())
        .spawn(move || {
            let result = load_model(&model, &config, &mut |l| log::info!("{l}"))
                .map(Arc::new)
                .map_err(|e| format!("model {model}: {e:#}"));
            let _ = tx.send(Msg::ModelReady { generation, result });
        })?;
    Ok(())
}

/// Find `model` (a folder or hub id, downloading it if need be), load its tokenizer, and ask
/// the configured embedding server for its window. Progress goes to `say`.
fn load_model(model: &str, config: &Config, say: &mut dyn FnMut(&str)) -> Result<LoadedModel> {
    let info = model::locate(model, say)?;
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path())?);
    let server = config.remote().map(|r| {
        let count = |t: &str| tok.tokenizer().encode(t, true).map_or(0, |e| e.len());
        chunkscope_core::embed::remote::ServerWindow::probe(&r, &count)
    });
    Ok(LoadedModel { info, tok, server })
}

/// The workers of one model: the pipeline (corpus, tokens, chunks) and the embedder.
struct Session {
    pipeline: Pipeline,
    embedder: EmbedWorker,
}

impl Session {
    /// Start the workers for `info` and ask for the corpus at `m.generation`; the model's
    /// name, windows, specials, backend and server go into `m`.
    fn start(
        m: &mut Model,
        config: &Config,
        corpus: &Path,
        loaded: &LoadedModel,
        tx: &Sender<Msg>,
    ) -> Session {
        let (info, tok) = (&loaded.info, &loaded.tok);
        log::info!(
            "model {} from {} ({})",
            info.id,
            info.dir.display(),
            info.found_in
        );
        let mut facts = ModelFacts {
            name: info.short_name(),
            windows: info.windows,
            specials: tok.specials(),
            backend: format!(
                "{} · {}",
                chunkscope_core::embed::backend_label(info, &config.embed_spec()),
                info.modules.describe()
            ),
            backend_kind: chunkscope_core::embed::backend_kind(info, &config.embed_spec()),
            server: loaded.server.clone(),
            ..Default::default()
        };
        if !info.modules.declared {
            facts.notes.push(format!(
                "{}: no modules.json: mean pooling without normalisation, as sentence-transformers does for a plain transformers folder",
                info.id
            ));
        }
        if let Some(r) = config.remote() {
            facts.backend = format!("remote {} {}", r.endpoint, r.model);
        }
        if let Some(note) = facts
            .server
            .as_ref()
            .and_then(|s| s.tokenizer_mismatch.clone())
        {
            log::warn!("{note}");
            facts.notes.push(note.clone());
            facts.warning = Some(note);
        }
        update(m, Msg::Started(Box::new(facts)));
        let spec = config.embed_spec();
        // One model per session, shared by Max-Min's sentences and the chunks' vectors.
        let shared = SharedEmbedder::with_spec(info.clone(), spec);
        let embedder = EmbedWorker::spawn_with(shared.clone(), worker_options(config), tx.clone());
        let pipeline = Pipeline::spawn(
            Source {
                corpus: corpus.to_path_buf(),
                rules: config.corpus.clone(),
                model: info.clone(),
                tok: Arc::clone(tok),
                store: config.store.uri.is_some().then(|| config.store.clone()),
            },
            shared,
            tx.clone(),
        );
        pipeline.load(m.generation);
        Session { pipeline, embedder }
    }
}

/// The embedding worker's search options from the configuration: the fusion constant and the
/// reranker (`[rerank]`, `--rerank`).
fn worker_options(config: &Config) -> Options {
    Options {
        rrf_k: config.search_rrf_k,
        rerank: config.rerank_model.as_ref().map(|model| RerankSetup {
            model: model.clone(),
            precision: config.precision,
            candidates: config.rerank_candidates,
        }),
    }
}

fn spawn_input(tx: Sender<Msg>) {
    std::thread::Builder::new()
        .name("input".into())
        .spawn(move || loop {
            let msg = match event::read() {
                Ok(Event::Key(k)) => Msg::Key(k),
                Ok(Event::Mouse(mm)) => Msg::Mouse(mm),
                Ok(Event::Resize(w, h)) => Msg::Resize(w, h),
                Ok(Event::Paste(text)) => Msg::Paste(text),
                Ok(_) => continue,
                Err(e) => {
                    log::error!("terminal input: {e}");
                    return;
                }
            };
            if tx.send(msg).is_err() {
                return;
            }
        })
        .expect("spawn input thread");
}

/// The workbench's loop over any ratatui backend: drain messages, update the model, run the
/// commands, draw when something changed (at most one frame per FRAME). `drawn` sees every frame
/// drawn and ends the loop by returning true (the benchmark watches the screen this way). Without
/// an embedding worker, embedding commands are ignored.
pub fn event_loop<B: ratatui::backend::Backend>(
    terminal: &mut Terminal<B>,
    m: &mut Model,
    rx: &Receiver<Msg>,
    pipeline: &Pipeline,
    embedder: Option<&EmbedWorker>,
    mut drawn: impl FnMut(&Model, &ratatui::buffer::Buffer) -> bool,
) -> Result<Option<Cmd>>
where
    B::Error: Send + Sync + 'static,
{
    let mut dirty = true;
    let mut last_draw = Instant::now() - FRAME;
    let mut focus: Vec<usize> = Vec::new();
    loop {
        // What the user looks at is embedded first: tell the worker when that changes.
        if let Some(w) = embedder {
            let now = m.focus_files();
            if now != focus {
                w.focus(now.clone());
                focus = now;
            }
        }
        if dirty && last_draw.elapsed() >= FRAME {
            let frame = terminal.draw(|f| ui::draw(f, m))?;
            if drawn(m, frame.buffer) {
                return Ok(None);
            }
            last_draw = Instant::now();
            dirty = false;
        }
        // Idle: block until something happens. Dirty but throttled: wait out the frame.
        let wait = dirty.then(|| FRAME.saturating_sub(last_draw.elapsed()));
        let Some(pending) = next_messages(rx, wait) else {
            return Ok(None);
        };
        for msg in pending {
            dirty = true;
            for cmd in update(m, msg) {
                match carry_out(cmd, m, pipeline, embedder) {
                    Carried::Done => {}
                    Carried::Quit => return Ok(None),
                    Carried::ForCaller(c) => return Ok(Some(*c)),
                }
            }
        }
    }
}

/// The messages waiting, after the first to come within `wait` (None: as long as it takes);
/// None when every sender is gone.
fn next_messages(rx: &Receiver<Msg>, wait: Option<Duration>) -> Option<Vec<Msg>> {
    let first = match wait {
        Some(wait) => match rx.recv_timeout(wait) {
            Ok(msg) => Some(msg),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => return None,
        },
        None => Some(rx.recv().ok()?),
    };
    let mut pending: Vec<Msg> = first.into_iter().collect();
    pending.extend(rx.try_iter());
    Some(pending)
}

/// What became of a command.
enum Carried {
    Done,
    Quit,
    /// Only the caller can carry it out (threads, new workers); it comes back.
    ForCaller(Box<Cmd>),
}

/// Hand a command to the worker it is for (embedding commands are dropped without one).
fn carry_out(
    cmd: Cmd,
    m: &mut Model,
    pipeline: &Pipeline,
    embedder: Option<&EmbedWorker>,
) -> Carried {
    match cmd {
        Cmd::Quit => return Carried::Quit,
        c @ (Cmd::SwitchModel { .. } | Cmd::StartModel(_)) => {
            return Carried::ForCaller(Box::new(c))
        }
        Cmd::Load { generation } => pipeline.load(generation),
        Cmd::Rechunk {
            generation,
            settings,
            focus,
        } => pipeline.rechunk_focused(generation, settings, focus),
        Cmd::Embed {
            generation,
            engine,
            chunking,
            window,
        } => {
            if let Some(w) = embedder {
                w.embed(generation, engine, chunking, window);
            }
        }
        Cmd::Query {
            id,
            text,
            k,
            expect,
        } => {
            if let Some(w) = embedder {
                w.query(id, text, k, expect);
            }
        }
        Cmd::Probe { file_pos, chunk } => {
            if let Some(w) = embedder {
                w.probe(file_pos, chunk);
            }
        }
        Cmd::Eval { cases } => {
            if let Some(w) = embedder {
                w.eval(cases);
            }
        }
        Cmd::Copy { text } => copy_to_clipboard(&text),
        Cmd::SaveKnobs {
            path,
            corpus,
            settings,
            window,
        } => {
            let said = match save_knobs(&path, &corpus, &settings, window) {
                Ok(()) => format!("knobs written to {}", path.display()),
                Err(e) => format!("not saved: {e:#}"),
            };
            update(m, Msg::Info(said));
        }
    }
    Carried::Done
}

/// Put `text` on the clipboard of the terminal (and of the machine the terminal runs on, over
/// SSH too) with the OSC 52 escape.
fn copy_to_clipboard(text: &str) {
    use base64::Engine;
    use std::io::Write;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let mut out = io::stdout();
    let _ = write!(out, "\x1b]52;c;{encoded}\x07");
    let _ = out.flush();
}

/// Write the knobs into the workbench.toml at `path` (the shipped defaults, comments included,
/// when there is none yet), keeping everything else, atomically.
fn save_knobs(
    path: &Path,
    corpus: &Path,
    settings: &chunkscope_core::chunk::ChunkSettings,
    window: chunkscope_core::window::WindowSpec,
) -> Result<()> {
    use chunkscope_core::config::{save, DEFAULT_TOML};
    // The corpus is read-only to us: its own workbench.toml is not rewritten.
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let inside = std::fs::canonicalize(dir)
        .ok()
        .zip(std::fs::canonicalize(corpus).ok())
        .is_some_and(|(dir, corpus)| corpus.is_dir() && dir.starts_with(&corpus));
    if inside {
        anyhow::bail!(
            "{} lies inside the corpus, which chunkscope never writes; copy the command line (y) \
             instead",
            path.display()
        );
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => DEFAULT_TOML.to_string(),
        Err(e) => return Err(e.into()),
    };
    let new = save::with_knobs(&text, settings, window)?;
    Ok(save::write_atomically(path, &new)?)
}

#[cfg(test)]
mod tests {
    use chunkscope_core::window::WindowSpec;

    /// The workbench never writes into the corpus: a workbench.toml there is refused, and nothing
    /// is created.
    #[test]
    fn knobs_are_never_written_inside_the_corpus() {
        let corpus = std::env::temp_dir().join(format!("chunkscope-knobs-{}", std::process::id()));
        std::fs::create_dir_all(corpus.join("docs")).unwrap();
        let settings = chunkscope_core::chunk::ChunkSettings::default();
        for path in [corpus.join("workbench.toml"), corpus.join("docs/w.toml")] {
            let err = super::save_knobs(&path, &corpus, &settings, WindowSpec::Auto).unwrap_err();
            assert!(err.to_string().contains("inside the corpus"), "{err}");
            assert!(!path.exists());
        }
        let outside = corpus.with_extension("toml");
        super::save_knobs(&outside, &corpus, &settings, WindowSpec::Auto).unwrap();
        assert!(std::fs::read_to_string(&outside)
            .unwrap()
            .contains("window"));
        let _ = std::fs::remove_file(outside);
        let _ = std::fs::remove_dir_all(corpus);
    }
}
