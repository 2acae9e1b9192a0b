//! `chunkscope-bench focus`: a knob turn through the real pipeline worker, timed from the request
//! to the selected file's new chunks, to the files on screen, and to the whole corpus, per preset.

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use chunkscope_core::chunk::{ChunkSettings, Preset};
use chunkscope_core::corpus::CorpusRules;
use chunkscope_core::jobs::pipeline::{Focus, Pipeline, Source};
use chunkscope_core::jobs::Event;
use chunkscope_core::model::ModelInfo;
use chunkscope_core::tokenize::EmbedTokenizer;

use crate::common::{generate_corpus, own_corpus_rules, report, TempDir, REACH};

/// Rows of a files pane on a 50-row terminal: the files on screen beside the selected one.
const ON_SCREEN: usize = 37;

/// On a generated corpus of about `megabytes` MB, or on the folder `own` as it is: for each of
/// `presets` but Max-Min (which embeds every sentence first), `presses` size turns (its own size,
/// then one eighth more, alternately), each timed to the selected file's chunks on screen (the
/// largest file, viewed from its start: its first chunks, where its chunker can stop early), to
/// the whole selected file, to the files on screen and to the whole corpus.
pub fn focus(
    info: &ModelInfo,
    megabytes: usize,
    own: Option<PathBuf>,
    presses: usize,
    presets: &[Preset],
    out: &mut dyn Write,
) -> Result<()> {
    let tmp = TempDir::new("focus");
    let (dir, rules) = match own {
        Some(dir) => {
            let rules = own_corpus_rules(&dir)?;
            (dir, rules)
        }
        None => {
            generate_corpus(&tmp.0, megabytes)?;
            (tmp.0.clone(), CorpusRules::default())
        }
    };
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path())?);
    let (tx, rx) = channel();
    let pipeline = Pipeline::spawn(
        Source {
            corpus: dir.clone(),
            rules,
            model: info.clone(),
            tok,
            store: None,
        },
        chunkscope_core::embed::SharedEmbedder::new(info.clone()),
        tx,
    );
    let t = Instant::now();
    pipeline.load(1);
    let engine = loop {
        if let Event::Loaded { result, .. } = next(&rx)? {
            break result.map_err(|e| anyhow::anyhow!("{e}"))?;
        }
    };
    let docs = engine.corpus.docs.len();
    let written: usize = engine.corpus.docs.iter().map(|d| d.text.len()).sum();
    let selected = (0..docs)
        .max_by_key(|&d| engine.corpus.docs[d].text.len())
        .context("no files")?;
    writeln!(
        out,
        "corpus: {docs} files, {:.1} MB of text, read and tokenized in {:.2} s; selected file {} ({} bytes) \
         and {ON_SCREEN} more on screen; {presses} presses per preset",
        written as f64 / 1e6,
        t.elapsed().as_secs_f64(),
        engine.corpus.docs[selected].path,
        engine.corpus.docs[selected].text.len(),
    )?;
    let mut files = vec![selected];
    files.extend((0..docs).filter(|&d| d != selected).take(ON_SCREEN));
    let focus = Focus {
        files,
        reach: REACH,
    };
    let mut generation = 1;
    for &preset in presets {
        if preset == Preset::MaxMin {
            continue;
        }
        let mut s = ChunkSettings::default();
        preset.apply(&mut s);
        if let Err(e) = s.validate() {
            writeln!(out, "{}: not measured: {e}", preset.name())?;
            continue;
        }
        // A preset whose size is 0 (semchunk: the model's window) is turned from 256.
        let own = if s.size == 0 { 256 } else { s.size };
        let (mut shown_ms, mut first_ms) = (Vec::new(), Vec::new());
        let (mut screen_ms, mut whole_ms) = (Vec::new(), Vec::new());
        // One unmeasured turn: the preset's first chunking (its per-file caches warm up).
        for i in 0..=presses {
            s.size = if i % 2 == 0 { own + own / 8 } else { own };
            generation += 1;
            let turn = turn(&pipeline, &rx, generation, &s, &focus)
                .with_context(|| preset.name().to_string())?;
            if i > 0 {
                shown_ms.push(turn.shown);
                first_ms.extend(turn.selected);
                screen_ms.extend(turn.on_screen);
                whole_ms.push(turn.whole);
            }
        }
        writeln!(out, "{}", preset.name())?;
        report(out, "  selected file on screen", shown_ms)?;
        report(out, "  selected file whole", first_ms)?;
        report(out, "  files on screen", screen_ms)?;
        report(out, "  whole corpus", whole_ms)?;
    }
    Ok(())
}

/// One knob turn's times from the request, in milliseconds.
struct Turn {
    /// To the selected file's chunks on screen: its head, or the whole file where none came.
    shown: f64,
    /// To the whole selected file.
    selected: Option<f64>,
    /// To the other files on screen.
    on_screen: Option<f64>,
    /// To the whole corpus.
    whole: f64,
}

/// Turn the knobs to `s` as generation `generation` and time what the pipeline answers.
fn turn(
    pipeline: &Pipeline,
    rx: &Receiver<Event>,
    generation: u64,
    s: &ChunkSettings,
    focus: &Focus,
) -> Result<Turn> {
    let t = Instant::now();
    let ms = || t.elapsed().as_secs_f64() * 1000.0;
    pipeline.rechunk_focused(generation, s.clone(), focus.clone());
    let (mut shown, mut selected, mut on_screen) = (None, None, None);
    loop {
        match next(rx)? {
            // The chunks on screen come first: the file's head, or the whole file where there
            // is none; then the whole file, then the others on screen.
            Event::FocusChunked {
                generation: g,
                head,
                ..
            } if g == generation => {
                let at = ms();
                shown.get_or_insert(at);
                if !head {
                    if selected.is_none() {
                        selected = Some(at);
                    } else {
                        on_screen = Some(at);
                    }
                }
            }
            Event::Chunked {
                generation: g,
                result,
                ..
            } if g == generation => {
                if let Err(e) = result {
                    bail!("{e}");
                }
                let whole = ms();
                return Ok(Turn {
                    shown: shown.unwrap_or(whole),
                    selected,
                    on_screen,
                    whole,
                });
            }
            _ => {}
        }
    }
}

fn next(rx: &Receiver<Event>) -> Result<Event> {
    rx.recv_timeout(Duration::from_secs(600))
        .context("the pipeline stopped answering")
}
