//! The keymap is data: every action has a layer, a name, a description and its keys, parsed once
//! into typed keys. A pane reads its own layer first, then the global one. Help and the hint line
//! are generated from it; workbench.toml's [keys] remaps every action of every layer.

use chunkscope_core::config::{ConfigError, ConfigProblem, KeyOverride};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    /// Every pane: knobs, panes, help, quit.
    Global,
    /// The files and chunks pane.
    Chunks,
    Query,
    Eval,
    /// The worst chunks across the corpus.
    Worst,
    Help,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::Global => "global",
            Layer::Chunks => "chunks",
            Layer::Query => "query",
            Layer::Eval => "eval",
            Layer::Worst => "worst",
            Layer::Help => "help",
        }
    }

    fn parse(s: &str) -> Option<Layer> {
        [
            Layer::Global,
            Layer::Chunks,
            Layer::Query,
            Layer::Eval,
            Layer::Worst,
            Layer::Help,
        ]
        .into_iter()
        .find(|l| l.name() == s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    // Global.
    NextModel,
    NextPrecision,
    Quit,
    Help,
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
    Eval,
    ThresholdUp,
    ThresholdDown,
    CUp,
    CDown,
    Metadata,
    Parents,
    Worst,
    SortFiles,
    CopyCommand,
    CopyAsCode,
    Expect,
    CopyCase,
    SaveKnobs,
    Find,
    TypeSize,
    TypeOverlap,
    // Chunks pane.
    GotoChunk,
    FirstChunk,
    LastChunk,
    NextFile,
    PrevFile,
    ScrollDown,
    ScrollUp,
    NextChunk,
    PrevChunk,
    Probe,
    // Query pane.
    MoreHits,
    FewerHits,
    NextRetriever,
    NextHit,
    PrevHit,
    OpenHit,
    CloseQuery,
    // Eval pane.
    NextCase,
    PrevCase,
    CasesDown,
    CasesUp,
    MissesOnly,
    FlippedOnly,
    PinA,
    Unpin,
    OpenCase,
    CloseEval,
    // Worst chunks.
    NextWorst,
    PrevWorst,
    OpenWorst,
    CloseWorst,
    // Help overlay.
    HelpDown,
    HelpUp,
}

/// (action, layer, config name, description, default keys, shown in the hint line)
type Row = (
    Action,
    Layer,
    &'static str,
    &'static str,
    &'static [&'static str],
    bool,
);

#[rustfmt::skip]
const ACTIONS: &[Row] = &[
    (Action::Strategy, Layer::Global, "strategy", "next strategy (all of README's table)", &["s"], true),
    (Action::Preset, Layer::Global, "preset", "next preset (all of README's table)", &["p"], true),
    (Action::Unit, Layer::Global, "unit", "next unit (chars, cl100k, embed)", &["u"], true),
    (Action::SizeUp, Layer::Global, "size_up", "chunk size up", &["+", "="], true),
    (Action::SizeDown, Layer::Global, "size_down", "chunk size down", &["-"], true),
    (Action::OverlapUp, Layer::Global, "overlap_up", "overlap up", &["]"], true),
    (Action::OverlapDown, Layer::Global, "overlap_down", "overlap down", &["["], true),
    (Action::Window, Layer::Global, "window", "next window (auto, st, max)", &["w"], true),
    (Action::Query, Layer::Global, "query", "query pane: BM25 and vector hits side by side", &["/"], true),
    (Action::Eval, Layer::Global, "eval", "eval pane: recall by answer position, misses explained", &["e"], true),
    (Action::ThresholdUp, Layer::Global, "threshold_up", "maxmin: fixed threshold up 0.05 (fewer joins)", &["}"], false),
    (Action::ThresholdDown, Layer::Global, "threshold_down", "maxmin: fixed threshold down 0.05", &["{"], false),
    (Action::CUp, Layer::Global, "c_up", "maxmin: c up 0.05", &[")"], false),
    (Action::CDown, Layer::Global, "c_down", "maxmin: c down 0.05", &["("], false),
    (Action::Metadata, Layer::Global, "metadata", "embedded metadata: none, section, section + file", &["m"], false),
    (Action::Parents, Layer::Global, "parents", "embed small, return big: hits return their parent section", &["b"], false),
    (Action::Theme, Layer::Global, "theme", "next theme (dark, light, mono)", &["t"], false),
    (Action::Rescan, Layer::Global, "rescan", "re-read the corpus from disk", &["r", "f5"], false),
    (Action::Worst, Layer::Global, "worst", "worst chunks across the corpus, as audit ranks them", &["W"], true),
    (Action::CopyCommand, Layer::Global, "copy_command", "copy the headless command line of these knobs (OSC 52)", &["y"], false),
    (Action::SaveKnobs, Layer::Global, "save_knobs", "write these knobs into workbench.toml (comments kept)", &["ctrl-s"], false),
    (Action::TypeSize, Layer::Global, "type_size", "type an exact chunk size", &["S"], false),
    (Action::TypeOverlap, Layer::Global, "type_overlap", "type an exact overlap", &["O"], false),
    (Action::GotoChunk, Layer::Chunks, "goto_chunk", "go to chunk number N of the file", &[":"], false),
    (Action::MoreHits, Layer::Query, "more_hits", "one more hit per column (k + 1)", &["ctrl-up"], false),
    (Action::FewerHits, Layer::Query, "fewer_hits", "one hit fewer per column (k - 1)", &["ctrl-down"], false),
    (Action::Find, Layer::Global, "find", "find: files by name (fuzzy) and lines of the corpus", &["F"], false),
    (Action::SortFiles, Layer::Global, "sort_files", "sort files: name, tokens never embedded, chunks over the window", &["o"], false),
    (Action::FirstChunk, Layer::Chunks, "first_chunk", "first chunk of the file", &["home", "g"], false),
    (Action::LastChunk, Layer::Chunks, "last_chunk", "last chunk of the file", &["end", "G"], false),
    (Action::Probe, Layer::Chunks, "probe", "tail probe: does appended text reach this chunk's vector?", &["P"], true),
    (Action::CopyAsCode, Layer::Chunks, "copy_as_code", "copy the knobs as code for the strategy's framework (OSC 52)", &["Y"], false),
    (Action::Expect, Layer::Chunks, "expect", "expect this chunk: queries say where it ranks", &["X"], false),
    (Action::CopyCase, Layer::Query, "copy_case", "copy the query, knobs, hits and expected chunk as Markdown (OSC 52)", &["ctrl-y"], false),
    (Action::NextFile, Layer::Chunks, "next_file", "next file", &["down", "j"], false),
    (Action::PrevFile, Layer::Chunks, "prev_file", "previous file", &["up", "k"], false),
    (Action::NextChunk, Layer::Chunks, "next_chunk", "jump to the next chunk", &["n", "right", "l"], false),
    (Action::PrevChunk, Layer::Chunks, "prev_chunk", "jump to the previous chunk", &["N", "left", "h"], false),
    (Action::ScrollDown, Layer::Chunks, "scroll_down", "scroll the chunk pane down", &["pagedown", "J", "space"], false),
    (Action::ScrollUp, Layer::Chunks, "scroll_up", "scroll the chunk pane up", &["pageup", "K"], false),
    (Action::NextRetriever, Layer::Query, "next_retriever", "next column: BM25, vector, hybrid (rerank with a reranker)", &["tab", "backtab", "left", "right"], true),
    (Action::NextHit, Layer::Query, "next_hit", "next hit", &["down"], false),
    (Action::PrevHit, Layer::Query, "prev_hit", "previous hit", &["up"], false),
    (Action::OpenHit, Layer::Query, "open", "open the hit's chunk at the match", &["enter"], true),
    (Action::CloseQuery, Layer::Query, "close", "back to the chunks", &["esc"], true),
    (Action::NextCase, Layer::Eval, "next_case", "next case", &["down", "j"], false),
    (Action::PrevCase, Layer::Eval, "prev_case", "previous case", &["up", "k"], false),
    (Action::CasesDown, Layer::Eval, "page_down", "ten cases down", &["pagedown"], false),
    (Action::CasesUp, Layer::Eval, "page_up", "ten cases up", &["pageup"], false),
    (Action::MissesOnly, Layer::Eval, "misses", "only the misses at k", &["M"], true),
    (Action::FlippedOnly, Layer::Eval, "flipped", "only the cases that flipped against A", &["f"], true),
    (Action::PinA, Layer::Eval, "pin", "pin this report as A (B is the next one)", &["a"], true),
    (Action::Unpin, Layer::Eval, "unpin", "forget A", &["A"], false),
    (Action::OpenCase, Layer::Eval, "open", "open the chunk holding the answer", &["enter"], true),
    (Action::CloseEval, Layer::Eval, "close", "back to the chunks", &["esc"], true),
    (Action::NextWorst, Layer::Worst, "next", "next chunk in the list", &["down", "j"], false),
    (Action::PrevWorst, Layer::Worst, "prev", "previous chunk in the list", &["up", "k"], false),
    (Action::OpenWorst, Layer::Worst, "open", "open the chunk at its invisible tail", &["enter"], true),
    (Action::CloseWorst, Layer::Worst, "close", "back to the chunks", &["esc"], true),
    (Action::HelpDown, Layer::Help, "scroll_down", "scroll help down", &["down", "j", "pagedown", "J", "space"], false),
    (Action::HelpUp, Layer::Help, "scroll_up", "scroll help up", &["up", "k", "pageup", "K"], false),
    (Action::Help, Layer::Global, "help", "show or hide this help", &["?", "f1"], true),
    (Action::NextModel, Layer::Global, "next_model", "next model of [model] compare (eval A stays pinned)", &["E"], false),
    (Action::NextPrecision, Layer::Global, "next_precision", "next precision: f32, bf16, int8 (eval A stays pinned)", &["B"], false),
    (Action::Quit, Layer::Global, "quit", "quit", &["q", "ctrl-c"], true),
];

/// A key as typed: code and the modifiers that matter (Shift is in the character itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    code: KeyCode,
    mods: KeyModifiers,
}

impl Key {
    /// A key as written in workbench.toml: "q", "Q", "ctrl-c", "alt-b", "enter", "f5", "+", ...
    pub fn parse(s: &str) -> Option<Key> {
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
        Some(Key { code, mods })
    }

    /// A key that types text in a text box (a character without ctrl or alt).
    pub fn is_text(self) -> bool {
        matches!(self.code, KeyCode::Char(_)) && self.mods == KeyModifiers::NONE
    }

    fn matches(self, ev: &KeyEvent) -> bool {
        let mods = ev.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT);
        self.code == ev.code && self.mods == mods
    }
}

#[derive(Debug, Clone)]
pub struct Binding {
    pub action: Action,
    pub layer: Layer,
    pub name: &'static str,
    pub description: &'static str,
    /// The keys as written (for help and hints) and as parsed (for matching).
    pub keys: Vec<String>,
    parsed: Vec<Key>,
    pub hint: bool,
}

impl Binding {
    /// The key to show in a hint: the first one, or in a text box (where printable keys are
    /// text) the first that is not text; none when every key is text there.
    pub fn hint_key(&self, text_box: bool) -> Option<&str> {
        self.keys
            .iter()
            .zip(&self.parsed)
            .find(|(_, p)| !text_box || !p.is_text())
            .map(|(k, _)| k.as_str())
    }
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
                .map(|&(action, layer, name, description, keys, hint)| Binding {
                    action,
                    layer,
                    name,
                    description,
                    keys: keys.iter().map(|k| k.to_string()).collect(),
                    parsed: keys.iter().filter_map(|k| Key::parse(k)).collect(),
                    hint,
                })
                .collect(),
        }
    }
}

impl Keymap {
    /// The default keymap with `overrides` applied. An unknown action or an unreadable key is
    /// reported and that override ignored; a key bound to two actions in one pane is reported and
    /// every override dropped, so `q` and ctrl-c always quit. Errors name `file` and the line.
    pub fn with_overrides(overrides: &[KeyOverride], file: &str) -> (Keymap, Vec<ConfigError>) {
        let mut map = Keymap::default();
        let mut errors = Vec::new();
        let err = |o: &KeyOverride, message: String| ConfigError {
            file: file.to_string(),
            line: o.line,
            problem: ConfigProblem::Keys(message),
        };
        for o in overrides {
            let layer = match o.pane.as_deref().map(Layer::parse) {
                Some(None) => {
                    let pane = o.pane.as_deref().unwrap_or_default();
                    errors.push(err(
                        o,
                        format!("[keys.{pane}]: no such pane (global, chunks, query, eval, help)"),
                    ));
                    continue;
                }
                Some(l) => l,
                None => None,
            };
            let Some(b) = map.bindings.iter_mut().find(|b| {
                b.name == o.action
                    && layer.map_or(matches!(b.layer, Layer::Global | Layer::Chunks), |l| {
                        l == b.layer
                    })
            }) else {
                errors.push(err(
                    o,
                    format!(
                        "[keys] {}: no such action{}",
                        o.action,
                        o.pane
                            .as_ref()
                            .map(|p| format!(" in pane {p}"))
                            .unwrap_or_default()
                    ),
                ));
                continue;
            };
            let mut keys = Vec::new();
            for k in &o.keys {
                match Key::parse(k) {
                    Some(p) => keys.push((k.clone(), p)),
                    None => errors.push(err(
                        o,
                        format!("[keys] {}: cannot read key '{k}'", o.action),
                    )),
                }
            }
            if !keys.is_empty() {
                b.keys = keys.iter().map(|k| k.0.clone()).collect();
                b.parsed = keys.iter().map(|k| k.1).collect();
            }
        }
        let conflicts = map.conflicts();
        if !conflicts.is_empty() {
            for (key, a, b) in conflicts {
                let line = overrides
                    .iter()
                    .find(|o| o.keys.contains(&key) && (o.action == a.name || o.action == b.name))
                    .and_then(|o| o.line);
                errors.push(ConfigError {
                    file: file.to_string(),
                    line,
                    problem: ConfigProblem::Keys(format!(
                        "[keys] '{key}' is bound to both {} and {} in the {} pane; using the default keys",
                        a.name,
                        b.name,
                        if a.layer == Layer::Global { b.layer.name() } else { a.layer.name() }
                    )),
                });
            }
            map = Keymap::default();
        }
        (map, errors)
    }

    /// Pairs of bindings that share a key within one pane (a pane's layer plus the global one).
    fn conflicts(&self) -> Vec<(String, &Binding, &Binding)> {
        let mut found: Vec<(String, &Binding, &Binding)> = Vec::new();
        for pane in [
            Layer::Chunks,
            Layer::Query,
            Layer::Eval,
            Layer::Worst,
            Layer::Help,
        ] {
            // (binding, key as written, key) in force in this pane; in the query pane printable
            // keys are text, so only the global bindings' other keys count there.
            let keys: Vec<(&Binding, &String, Key)> = self
                .active(pane)
                .flat_map(|b| b.keys.iter().zip(&b.parsed).map(move |(k, &p)| (b, k, p)))
                .filter(|(b, _, p)| pane != Layer::Query || b.layer == pane || !p.is_text())
                .collect();
            for (i, &(a, k, pa)) in keys.iter().enumerate() {
                for &(b, _, pb) in &keys[i + 1..] {
                    let known = found
                        .iter()
                        .any(|(_, x, y)| x.action == a.action && y.action == b.action);
                    if pa == pb && a.action != b.action && !known {
                        found.push((k.clone(), a, b));
                    }
                }
            }
        }
        found
    }

    /// The bindings in force in `pane`: its own layer, then the global one.
    pub fn active(&self, pane: Layer) -> impl Iterator<Item = &Binding> {
        let own = self.bindings.iter().filter(move |b| b.layer == pane);
        let global = self
            .bindings
            .iter()
            .filter(move |b| b.layer == Layer::Global && pane != Layer::Global);
        own.chain(global)
    }

    /// The action `ev` triggers in `pane`.
    pub fn action_for(&self, pane: Layer, ev: &KeyEvent) -> Option<Action> {
        self.active(pane)
            .find(|b| b.parsed.iter().any(|k| k.matches(ev)))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(c, m)
    }

    fn o(pane: Option<&str>, action: &str, keys: &[&str], line: usize) -> KeyOverride {
        KeyOverride {
            pane: pane.map(str::to_string),
            action: action.to_string(),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            line: Some(line),
        }
    }

    #[test]
    fn defaults_and_overrides() {
        let km = Keymap::default();
        let chunks = Layer::Chunks;
        assert_eq!(
            km.action_for(chunks, &key(KeyCode::Char('q'), KeyModifiers::NONE)),
            Some(Action::Quit)
        );
        assert_eq!(
            km.action_for(chunks, &key(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            km.action_for(chunks, &key(KeyCode::Char('N'), KeyModifiers::SHIFT)),
            Some(Action::PrevChunk)
        );
        assert_eq!(
            km.action_for(chunks, &key(KeyCode::Char('c'), KeyModifiers::NONE)),
            None
        );
        let overrides = [
            o(None, "quit", &["x"], 2),
            o(None, "nope", &["y"], 3),
            o(None, "help", &["ctrl-"], 4),
        ];
        let (km, errs) = Keymap::with_overrides(&overrides, "w.toml");
        assert_eq!(
            km.action_for(chunks, &key(KeyCode::Char('x'), KeyModifiers::NONE)),
            Some(Action::Quit)
        );
        assert_eq!(
            km.action_for(chunks, &key(KeyCode::Char('q'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(errs[0].to_string(), "w.toml:3: [keys] nope: no such action");
        assert_eq!(km.keys_of(Action::Help), ["?", "f1"]);
    }

    #[test]
    fn every_default_key_parses_and_no_pane_has_a_conflict() {
        let km = Keymap::default();
        for b in &km.bindings {
            assert_eq!(b.keys.len(), b.parsed.len(), "{}", b.name);
        }
        assert!(km.conflicts().is_empty());
    }

    #[test]
    fn pane_layers_are_remappable_and_read_first() {
        let km = Keymap::default();
        let j = key(KeyCode::Char('j'), KeyModifiers::NONE);
        assert_eq!(km.action_for(Layer::Eval, &j), Some(Action::NextCase));
        let down = key(KeyCode::Down, KeyModifiers::NONE);
        assert_eq!(km.action_for(Layer::Query, &down), Some(Action::NextHit));
        let m = key(KeyCode::Char('m'), KeyModifiers::NONE);
        assert_eq!(
            km.action_for(Layer::Eval, &m),
            Some(Action::Metadata),
            "m is metadata everywhere"
        );
        let (km, errs) = Keymap::with_overrides(
            &[
                o(Some("eval"), "misses", &["X"], 5),
                o(Some("query"), "open", &["o"], 6),
            ],
            "w.toml",
        );
        assert!(errs.is_empty(), "{errs:?}");
        let shift_m = key(KeyCode::Char('X'), KeyModifiers::SHIFT);
        assert_eq!(
            km.action_for(Layer::Eval, &shift_m),
            Some(Action::MissesOnly)
        );
        let o_key = key(KeyCode::Char('o'), KeyModifiers::NONE);
        assert_eq!(km.action_for(Layer::Query, &o_key), Some(Action::OpenHit));
    }

    #[test]
    fn a_key_bound_twice_in_a_pane_names_the_line_and_keeps_quit() {
        let (km, errs) = Keymap::with_overrides(&[o(Some("eval"), "misses", &["q"], 7)], "w.toml");
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0]
                .to_string()
                .starts_with("w.toml:7: [keys] 'q' is bound to both"),
            "{}",
            errs[0]
        );
        let q = key(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(km.action_for(Layer::Eval, &q), Some(Action::Quit));
    }
}
