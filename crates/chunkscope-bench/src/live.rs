//! `chunkscope-bench live`: a file save to its new text on the workbench's screen.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Result;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use chunkscope::app::keymap::Keymap;
use chunkscope::app::{Model, Msg};
use chunkscope::theme::Theme;
use chunkscope_core::chunk::{ChunkSettings, Preset};
use chunkscope_core::corpus::CorpusRules;
use chunkscope_core::jobs::pipeline::{Pipeline, Source};
use chunkscope_core::model::ModelInfo;
use chunkscope_core::tokenize::EmbedTokenizer;
use chunkscope_core::window::WindowSpec;

use crate::common::{generate_corpus, report, TempDir};

/// `chunkscope bench live`: a file saved on disk to its new text on the workbench's screen,
/// through the real watcher, pipeline, update function, views and event loop, drawn into an
/// in-memory terminal (no embedding worker, so nothing else competes for the cores).
pub fn live(info: &ModelInfo, megabytes: usize, saves: usize, out: &mut dyn Write) -> Result<()> {
    let tmp = TempDir::new("live");
    let dir = tmp.0.clone();
    let (n, written) = generate_corpus(&dir, megabytes)?;
    writeln!(
        out,
        "corpus: {n} files, {:.1} MB; preset langchain-tokens; {saves} saves",
        written as f64 / 1e6
    )?;
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path())?);
    let (tx, rx) = channel();
    let pipeline = Pipeline::spawn(
        Source {
            corpus: dir.clone(),
            rules: CorpusRules::default(),
            model: info.clone(),
            tok: Arc::clone(&tok),
            store: None,
        },
        chunkscope_core::embed::SharedEmbedder::new(info.clone()),
        tx.clone(),
    );
    let watcher =
        chunkscope_core::jobs::watcher::watch(&dir, tx).map_err(|e| anyhow::anyhow!(e))?;
    let mut settings = ChunkSettings::default();
    Preset::LangchainTokens.apply(&mut settings);
    let mut m = Model::new(
        dir.clone(),
        info.short_name(),
        info.windows,
        tok.specials(),
        settings,
        WindowSpec::Auto,
        Theme::dark(),
        Keymap::default(),
    );
    m.watch = watcher.mode().to_string();
    m.generation = 1;
    pipeline.load(1);
    let (first_screen, ms) = time_saves(&mut m, &rx, &pipeline, &dir, saves)?;
    if let Some(s) = first_screen {
        writeln!(
            out,
            "corpus read, tokenized, chunked and on screen in {s:.2} s"
        )?;
    }
    report(out, "file save -> new text on screen", ms)?;
    writeln!(
        out,
        "(includes the watcher's 200 ms quiet period; the rest is re-read, re-tokenize the file, \
         re-chunk (other files keep their chunks), stats and the draw)"
    )?;
    Ok(())
}

/// The event loop drawing into an in-memory terminal while a saver thread writes the selected
/// file of the corpus in `dir` once the screen shows the previous save; returns the seconds to
/// the first ready screen and the milliseconds from each save to its text on screen.
fn time_saves(
    m: &mut Model,
    rx: &Receiver<Msg>,
    pipeline: &Pipeline,
    dir: &Path,
    saves: usize,
) -> Result<(Option<f64>, Vec<f64>)> {
    let mut terminal = Terminal::new(TestBackend::new(140, 40))?;
    let (go_tx, go_rx) = channel::<(usize, PathBuf)>();
    let saved_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let stamp = Arc::clone(&saved_at);
    let saver = std::thread::spawn(move || {
        while let Ok((i, path)) = go_rx.recv() {
            // Let the watcher go quiet after the previous save.
            std::thread::sleep(std::time::Duration::from_millis(400));
            let text = format!("# Saved {i}\n\nsaved-{i}-marker: the file was saved again.\n");
            *stamp.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            if std::fs::write(&path, text).is_err() {
                return;
            }
        }
    });
    let started = Instant::now();
    let mut ms: Vec<f64> = Vec::new();
    let mut waiting: Option<usize> = None;
    let mut first_screen: Option<f64> = None;
    let screen_text = |b: &ratatui::buffer::Buffer| -> String {
        b.content().iter().map(|c| c.symbol()).collect::<String>()
    };
    // The selected file's path on disk, once the workbench has loaded.
    let selected = |m: &Model| {
        m.engine
            .as_ref()
            .and_then(|e| e.corpus.docs.get(m.chunks.selected))
            .map(|d| dir.join(&d.path))
    };
    chunkscope::tui::event_loop(&mut terminal, m, rx, pipeline, None, |m, buffer| {
        let ready = m.chunking.is_some() && !m.stale();
        match waiting {
            None if ready => {
                first_screen = Some(started.elapsed().as_secs_f64());
                let Some(path) = selected(m) else {
                    return true;
                };
                let _ = go_tx.send((0, path));
                waiting = Some(0);
            }
            Some(i) if screen_text(buffer).contains(&format!("saved-{i}-marker")) => {
                if let Some(t) = *saved_at.lock().unwrap_or_else(|p| p.into_inner()) {
                    ms.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                if i + 1 >= saves {
                    return true;
                }
                match selected(m) {
                    Some(p) => {
                        let _ = go_tx.send((i + 1, p));
                        waiting = Some(i + 1);
                    }
                    None => return true,
                }
            }
            _ => {}
        }
        started.elapsed().as_secs() > 600
    })?;
    drop(go_tx);
    let _ = saver.join();
    Ok((first_screen, ms))
}
