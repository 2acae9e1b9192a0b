//! The keymap is data: every action has a name, a description and its keys. Help and the hint line
//! are generated from it; workbench.toml's [keys] remaps it.

use std::collections::BTreeMap;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Quit,
    Help,
    NextFile,
    PrevFile,
    ScrollDown,
    ScrollUp,
    NextChunk,
    PrevChunk,
    Strategy,
    Preset,
    Unit,
    SizeUp,
    SizeDown,
    OverlapUp,
    OverlapDown,
    Window,
    Theme,
    Rescan,
    Query,
    Probe,
    Eval,
    ThresholdUp,
    ThresholdDown,
    CUp,
    CDown,
    Metadata,
    Parents,
}

/// (action, config name, description, default keys, shown in the hint line)
const ACTIONS: &[(Action, &str, &str, &[&str], bool)] = &[
    (
        Action::Strategy,
        "strategy",
        "next strategy: spring-ai langchain markdown maxmin recursive fixed",
        &["s"],
        true,
    ),
    (
        Action::Preset,
        "preset",
        "next preset: spring-ai langchain-chars/-tokens markdown maxmin",
        &["p"],
        true,
    ),
    (
        Action::Unit,
        "unit",
        "next unit (chars, cl100k, embed)",
        &["u"],
        true,
    ),
    (
        Action::SizeUp,
        "size_up",
        "chunk size up",
        &["+", "="],
        true,
    ),
    (
        Action::SizeDown,
        "size_down",
        "chunk size down",
        &["-"],
        true,
    ),
    (Action::OverlapUp, "overlap_up", "overlap up", &["]"], true),
    (
        Action::OverlapDown,
        "overlap_down",
        "overlap down",
        &["["],
        true,
    ),
    (
        Action::Window,
        "window",
        "next window (auto, st, max)",
        &["w"],
        true,
    ),
    (
        Action::Query,
        "query",
        "query pane: BM25 and vector hits side by side",
        &["/"],
        true,
    ),
    (
        Action::Eval,
        "eval",
        "eval pane: recall by answer position, misses explained",
        &["e"],
        true,
    ),
    (
        Action::Probe,
        "probe",
        "tail probe: does appended text reach this chunk's vector?",
        &["P"],
        true,
    ),
    (
        Action::ThresholdUp,
        "threshold_up",
        "maxmin: fixed threshold up 0.05 (fewer joins)",
        &["}"],
        false,
    ),
    (
        Action::ThresholdDown,
        "threshold_down",
        "maxmin: fixed threshold down 0.05",
        &["{"],
        false,
    ),
    (Action::CUp, "c_up", "maxmin: c up 0.05", &[")"], false),
    (
        Action::CDown,
        "c_down",
        "maxmin: c down 0.05",
        &["("],
        false,
    ),
    (
        Action::Metadata,
        "metadata",
        "embedded metadata: none, section, section + file",
        &["m"],
        false,
    ),
    (
        Action::Parents,
        "parents",
        "embed small, return big: hits return their parent section",
        &["b"],
        false,
    ),
    (
        Action::NextFile,
        "next_file",
        "next file",
        &["down", "j"],
        false,
    ),
    (
        Action::PrevFile,
        "prev_file",
        "previous file",
        &["up", "k"],
        false,
    ),
    (
        Action::NextChunk,
        "next_chunk",
        "jump to the next chunk",
        &["n", "right", "l"],
        false,
    ),
    (
        Action::PrevChunk,
        "prev_chunk",
        "jump to the previous chunk",
        &["N", "left", "h"],
        false,
    ),
    (
        Action::ScrollDown,
        "scroll_down",
        "scroll the chunk pane down",
        &["pagedown", "J", "space"],
        false,
    ),
    (
        Action::ScrollUp,
        "scroll_up",
        "scroll the chunk pane up",
        &["pageup", "K"],
        false,
    ),
    (
        Action::Theme,
        "theme",
        "next theme (dark, light, mono)",
        &["t"],
        false,
    ),
    (
        Action::Rescan,
        "rescan",
        "re-read the corpus from disk",
        &["r", "f5"],
        false,
    ),
    (Action::Help, "help", "show or hide this help", &["?"], true),
    (Action::Quit, "quit", "quit", &["q", "ctrl-c"], true),
];

#[derive(Debug, Clone)]
pub struct Binding {
    pub action: Action,
    pub name: &'static str,
    pub description: &'static str,
    pub keys: Vec<String>,
    pub hint: bool,
}

#[derive(Debug, Clone)]
pub struct Keymap {
    pub bindings: Vec<Binding>,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap {
            bindings: ACTIONS
                .iter()
                .map(|&(action, name, description, keys, hint)| Binding {
                    action,
                    name,
                    description,
                    keys: keys.iter().map(|k| k.to_string()).collect(),
                    hint,
                })
                .collect(),
        }
    }
}

impl Keymap {
    /// The default keymap with `overrides` (action name -> keys) applied. Unknown actions or keys
    /// are reported and ignored.
    pub fn with_overrides(overrides: &BTreeMap<String, Vec<String>>) -> (Keymap, Vec<String>) {
        let mut map = Keymap::default();
        let mut errors = Vec::new();
        for (name, keys) in overrides {
            let Some(b) = map.bindings.iter_mut().find(|b| b.name == name) else {
                errors.push(format!("[keys] {name}: no such action"));
                continue;
            };
            let good: Vec<String> = keys
                .iter()
                .filter(|k| {
                    let ok = parse_key(k).is_some();
                    if !ok {
                        errors.push(format!("[keys] {name}: cannot read key '{k}'"));
                    }
                    ok
                })
                .cloned()
                .collect();
            if !good.is_empty() {
                b.keys = good;
            }
        }
        (map, errors)
    }

    pub fn action_for(&self, ev: &KeyEvent) -> Option<Action> {
        self.bindings
            .iter()
            .find(|b| {
                b.keys
                    .iter()
                    .any(|k| parse_key(k).is_some_and(|p| matches(p, ev)))
            })
            .map(|b| b.action)
    }

    pub fn keys_of(&self, action: Action) -> &[String] {
        self.bindings
            .iter()
            .find(|b| b.action == action)
            .map(|b| b.keys.as_slice())
            .unwrap_or(&[])
    }
}

/// A key as written in workbench.toml: "q", "Q", "ctrl-c", "enter", "f5", "+", ...
pub fn parse_key(s: &str) -> Option<(KeyCode, KeyModifiers)> {
    let (mods, key) = match s.strip_prefix("ctrl-") {
        Some(rest) => (KeyModifiers::CONTROL, rest),
        None => match s.strip_prefix("alt-") {
            Some(rest) => (KeyModifiers::ALT, rest),
            None => (KeyModifiers::NONE, s),
        },
    };
    let code = match key {
        "enter" => KeyCode::Enter,
        "esc" => KeyCode::Esc,
        "tab" => KeyCode::Tab,
        "backtab" => KeyCode::BackTab,
        "space" => KeyCode::Char(' '),
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "pageup" => KeyCode::PageUp,
        "pagedown" => KeyCode::PageDown,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "backspace" => KeyCode::Backspace,
        f if f.len() >= 2 && f.starts_with('f') && f[1..].parse::<u8>().is_ok() => {
            KeyCode::F(f[1..].parse().ok()?)
        }
        c if c.chars().count() == 1 => KeyCode::Char(c.chars().next()?),
        _ => return None,
    };
    Some((code, mods))
}

fn matches((code, mods): (KeyCode, KeyModifiers), ev: &KeyEvent) -> bool {
    let relevant = ev.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT);
    match (code, ev.code) {
        // Shift is implied by the character itself ("N", "+").
        (KeyCode::Char(a), KeyCode::Char(b)) => a == b && relevant == mods,
        (a, b) => a == b && relevant == mods,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(c, m)
    }

    #[test]
    fn defaults_and_overrides() {
        let km = Keymap::default();
        assert_eq!(
            km.action_for(&key(KeyCode::Char('q'), KeyModifiers::NONE)),
            Some(Action::Quit)
        );
        assert_eq!(
            km.action_for(&key(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            km.action_for(&key(KeyCode::Char('N'), KeyModifiers::SHIFT)),
            Some(Action::PrevChunk)
        );
        assert_eq!(
            km.action_for(&key(KeyCode::Char('c'), KeyModifiers::NONE)),
            None
        );
        let mut o = BTreeMap::new();
        o.insert("quit".to_string(), vec!["x".to_string()]);
        o.insert("nope".to_string(), vec!["y".to_string()]);
        o.insert("help".to_string(), vec!["ctrl-".to_string()]);
        let (km, errs) = Keymap::with_overrides(&o);
        assert_eq!(
            km.action_for(&key(KeyCode::Char('x'), KeyModifiers::NONE)),
            Some(Action::Quit)
        );
        assert_eq!(
            km.action_for(&key(KeyCode::Char('q'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(km.keys_of(Action::Help), ["?"]);
    }

    #[test]
    fn every_default_key_parses() {
        for b in Keymap::default().bindings {
            for k in &b.keys {
                assert!(parse_key(k).is_some(), "{k}");
            }
        }
    }
}
