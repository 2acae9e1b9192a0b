//! update() with messages in, model and commands out: the helpers here, the tests by pane.

use super::*;
use crate::theme::Theme;
use chunkscope_core::chunk::Strategy;
use chunkscope_core::tokenize::Unit;
use chunkscope_core::window::{ModelWindows, WindowSpec};
use keymap::Keymap;
use ratatui::crossterm::event::{KeyCode, KeyModifiers};

mod focus;
mod knobs;
mod query;
mod session;

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
