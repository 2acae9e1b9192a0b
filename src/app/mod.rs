//! The TUI's state and its update function (The Elm Architecture): messages in, state changed,
//! commands out. No terminal code and no threads here.

pub mod keymap;

use std::path::PathBuf;
use std::sync::Arc;

use ratatui::crossterm::event::{KeyEvent, KeyEventKind, MouseEvent, MouseEventKind};

use crate::core::chunk::{ChunkSettings, Preset, Strategy};
use crate::core::engine::{Chunking, Engine};
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
    },
    /// A chunking finished.
    Chunked {
        generation: u64,
        result: Result<Arc<Chunking>, String>,
        millis: u64,
    },
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
    pub theme: Theme,
    pub keymap: Keymap,
    /// Notes for the user (skipped files, config problems); the newest last.
    pub notes: Vec<String>,
    /// The last refused knob or failed job, shown in the status line until the next change.
    pub error: Option<String>,
    pub last_chunk_millis: Option<u64>,
    pub quit: bool,
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
            theme,
            keymap,
            notes: Vec::new(),
            error: None,
            last_chunk_millis: None,
            quit: false,
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

    pub fn file_count(&self) -> usize {
        self.engine.as_ref().map_or(0, |e| e.corpus.docs.len())
    }

    fn rechunk(&mut self) -> Vec<Cmd> {
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

/// How much one press of a size or overlap key changes it: about an eighth, at least 1.
fn step(v: usize) -> usize {
    (v / 8).max(1)
}

pub fn update(m: &mut Model, msg: Msg) -> Vec<Cmd> {
    match msg {
        Msg::Key(ev) if ev.kind != KeyEventKind::Release => match m.keymap.action_for(&ev) {
            Some(a) => act(m, a),
            None => {
                if m.show_help && ev.code == ratatui::crossterm::event::KeyCode::Esc {
                    m.show_help = false;
                }
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
        Msg::Loaded { generation, result } => {
            if generation != m.generation {
                return Vec::new();
            }
            m.loading = false;
            match result {
                Ok(engine) => {
                    m.notes.extend(engine.corpus.notes());
                    m.selected = m.selected.min(engine.corpus.docs.len().saturating_sub(1));
                    m.engine = Some(engine);
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
            result,
            millis,
        } => {
            if generation != m.generation {
                return Vec::new();
            }
            match result {
                Ok(c) => {
                    m.chunking = Some(c);
                    m.last_chunk_millis = Some(millis);
                    clamp_focus(m);
                }
                Err(e) => m.error = Some(e),
            }
            Vec::new()
        }
    }
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
        m.show_help = false;
        return Vec::new();
    }
    match a {
        Action::Quit => {
            m.quit = true;
            vec![Cmd::Quit]
        }
        Action::Help => {
            m.show_help = !m.show_help;
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
            (s.strategy == Strategy::SpringAi).then(|| {
                s.unit = Unit::Cl100k;
                s.overlap = 0;
                "spring-ai counts cl100k tokens without overlap".to_string()
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
            Vec::new()
        }
        Action::Theme => {
            if let Some(t) = Theme::built_in(m.theme.next_name()) {
                m.theme = t;
            }
            Vec::new()
        }
        Action::Rescan => {
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
    fn stale_results_are_dropped() {
        let mut m = model();
        m.generation = 5;
        update(
            &mut m,
            Msg::Chunked {
                generation: 4,
                result: Err("old".into()),
                millis: 1,
            },
        );
        assert!(m.error.is_none());
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
        assert_eq!(m.settings.strategy, Strategy::SpringAi);
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
