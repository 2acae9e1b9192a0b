//! The files and chunks pane, and the global actions every pane shares (knobs, panes, theme).

use chunkscope_core::chunk::{ChunkSettings, Preset, Strategy};
use chunkscope_core::window::ModelWindows;
use ratatui::crossterm::event::{MouseEvent, MouseEventKind};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::keymap::Action;
use super::{Cmd, Model, Prompt, PromptKind, View};
use crate::theme::Theme;

/// How much one press of a size or overlap key changes it: about an eighth, at least 1.
fn step(v: usize) -> usize {
    (v / 8).max(1)
}

/// The turns of one knob, so that a press in the other direction retraces them exactly: + then
/// - returns to the same value (and to the vectors cached for it), however the steps rounded.
#[derive(Debug, Clone, Default)]
pub struct KnobTrail(Vec<(usize, usize)>);

impl KnobTrail {
    /// The value one press from `now` leads to: back along the trail when the last turn went the
    /// other way and ended at `now`, else a step of `delta`.
    fn next(&mut self, now: usize, up: bool, delta: usize) -> usize {
        match self.0.last() {
            Some(&(from, to)) if to == now && (from > now) == up => {
                self.0.pop();
                from
            }
            _ if up => now + delta,
            _ => now.saturating_sub(delta),
        }
    }

    /// Remember a turn that was not a step back.
    fn record(&mut self, from: usize, to: usize) {
        let stepped_back = self.0.last().is_some_and(|&(_, t)| t == to);
        if from != to && !stepped_back {
            self.0.push((from, to));
        }
    }
}

pub(super) fn mouse(m: &mut Model, ev: MouseEvent) {
    match ev.kind {
        MouseEventKind::ScrollDown => m.chunks.scroll_by(3),
        MouseEventKind::ScrollUp => m.chunks.scroll_by(-3),
        MouseEventKind::Down(_) => click(m, ev.column, ev.row),
        _ => {}
    }
}

/// A click in the files pane selects the file on that row (the pane scrolls as ratatui's list
/// does: just enough to keep the selection in view).
fn click(m: &mut Model, column: u16, row: u16) {
    let (w, h) = m.size;
    let files = crate::layout::areas(ratatui::layout::Rect::new(0, 0, w, h)).files;
    let inside = column > files.x
        && column < files.x + files.width.saturating_sub(1)
        && row > files.y
        && row < files.y + files.height.saturating_sub(1);
    if !inside {
        return;
    }
    let order = m.file_order();
    let visible = files.height.saturating_sub(2) as usize;
    let at = order
        .iter()
        .position(|&fp| fp == m.chunks.selected)
        .unwrap_or(0);
    let offset = at.saturating_sub(visible.saturating_sub(1));
    if let Some(&fp) = order.get(offset + (row - files.y - 1) as usize) {
        m.chunks.select_file(fp);
        m.view = View::Chunks;
    }
}

pub(super) fn act(m: &mut Model, a: Action) -> Vec<Cmd> {
    match a {
        Action::NextFile | Action::PrevFile => step_file(m, a == Action::NextFile),
        Action::FirstChunk | Action::LastChunk => {
            let last = m.chunks_in_selected().saturating_sub(1);
            m.chunks
                .focus_on(if a == Action::FirstChunk { 0 } else { last });
        }
        Action::SortFiles => m.chunks.file_sort = m.chunks.file_sort.next(),
        Action::Find => open_find(m),
        Action::TypeSize => open_prompt(m, PromptKind::Size),
        Action::TypeOverlap => open_prompt(m, PromptKind::Overlap),
        Action::GotoChunk => open_prompt(m, PromptKind::GotoChunk),
        Action::CopyCommand => return copy_command(m),
        Action::CopyAsCode => return copy_as_code(m),
        Action::SaveKnobs => return save_knobs(m),
        Action::Worst => {
            m.view = View::Worst;
            m.worst.selected = 0;
        }
        Action::ScrollDown => m.chunks.scroll_by(10),
        Action::ScrollUp if m.chunks.centre_on_match => m.chunks.scroll_by(-10),
        Action::ScrollUp => scroll_up(m),
        // With matches in the chunk, n and N move between them first.
        Action::NextChunk | Action::PrevChunk if m.chunks.step_match(a == Action::NextChunk) => {}
        Action::NextChunk => next_chunk(m),
        Action::PrevChunk => prev_chunk(m),
        Action::Expect => return toggle_expect(m),
        Action::Probe => return probe(m),
        Action::Theme => {
            if let Some(t) = Theme::built_in(m.theme.next_name()) {
                m.theme = t;
            }
        }
        Action::Rescan => return m.reload("rescan".into()),
        Action::NextModel => return m.next_model(),
        Action::NextPrecision => return m.next_precision(),
        Action::Window => return cycle_window(m),
        Action::Query => open_query(m),
        Action::Eval => return open_eval(m),
        knob => return turn_knob(m, knob),
    }
    Vec::new()
}

/// The next or previous file along the files pane's order.
fn step_file(m: &mut Model, next: bool) {
    let order = m.file_order();
    if let Some(at) = order.iter().position(|&fp| fp == m.chunks.selected) {
        let to = if next {
            (at + 1).min(order.len() - 1)
        } else {
            at.saturating_sub(1)
        };
        m.chunks.select_file(order[to]);
    }
}

fn open_find(m: &mut Model) {
    m.view = View::Find;
    let input = &mut m.find.input;
    input.select_all = !input.text.is_empty();
    input.cursor = input.text.len();
    // The corpus may have changed since the last search.
    m.find.found = super::find::results(m);
}

fn open_prompt(m: &mut Model, kind: PromptKind) {
    m.prompt = Some(Prompt {
        kind,
        input: String::new(),
    });
}

fn copy_command(m: &mut Model) -> Vec<Cmd> {
    let text = command_line(m);
    m.info = Some(format!("copied (OSC 52): {text}"));
    vec![Cmd::Copy { text }]
}

/// Write the knobs into the workbench.toml they came from, else ./workbench.toml.
fn save_knobs(m: &Model) -> Vec<Cmd> {
    let path = m
        .config_path
        .clone()
        .unwrap_or_else(|| "workbench.toml".into());
    vec![Cmd::SaveKnobs {
        path,
        corpus: m.corpus_path.clone(),
        settings: m.settings.clone(),
        window: m.window_spec,
    }]
}

/// Up ten lines in the focused chunk; at its top, to the chunk before.
fn scroll_up(m: &mut Model) {
    if m.chunks.scroll >= 10 {
        m.chunks.scroll -= 10;
    } else if m.chunks.focus_chunk > 0 && m.chunks.scroll == 0 {
        m.chunks.focus_chunk -= 1;
    } else {
        m.chunks.scroll = 0;
    }
}

fn next_chunk(m: &mut Model) {
    if m.chunks.focus_chunk + 1 < m.chunks_in_selected() {
        m.chunks.focus_chunk += 1;
    }
    m.chunks.scroll = 0;
    m.chunks.uncentre();
}

/// Back to the top of the focused chunk, or to the chunk before when already there.
fn prev_chunk(m: &mut Model) {
    if m.chunks.scroll == 0 && !m.chunks.centre_on_match {
        m.chunks.focus_chunk = m.chunks.focus_chunk.saturating_sub(1);
    }
    m.chunks.scroll = 0;
    m.chunks.uncentre();
}

/// Mark the focused chunk as the one the next queries should find (again: forget it).
fn toggle_expect(m: &mut Model) -> Vec<Cmd> {
    let here = (m.chunks.selected, m.chunks.focus_chunk);
    if m.chunks.focus_chunk >= m.chunks_in_selected() {
        return Vec::new();
    }
    m.query.expect = (m.query.expect != Some(here)).then_some(here);
    m.info = Some(match m.query.expect {
        Some(_) => format!(
            "expected chunk #{}: the query pane says where it ranks and why",
            m.chunks.focus_chunk + 1
        ),
        None => "expected chunk forgotten".into(),
    });
    Vec::new()
}

/// Probe the focused chunk's tail against its window.
fn probe(m: &mut Model) -> Vec<Cmd> {
    // The embedder probes the whole chunking, which a file chunked ahead of it is not.
    if m.partial
        .as_ref()
        .is_some_and(|p| p.files.contains_key(&m.chunks.selected))
    {
        m.info = Some("tail probe: the rest of the corpus is still being chunked".into());
        return Vec::new();
    }
    if m.chunks.focus_chunk < m.chunks_in_selected() {
        return vec![Cmd::Probe {
            file_pos: m.chunks.selected,
            chunk: m.chunks.focus_chunk,
        }];
    }
    Vec::new()
}

/// The next window; the chunking stays, its vectors are made again at the new window.
fn cycle_window(m: &mut Model) -> Vec<Cmd> {
    m.window_spec = ModelWindows::cycle(m.window_spec);
    m.error = None;
    m.chunks.probe = None;
    m.embed_cmd()
}

fn open_query(m: &mut Model) {
    m.view = View::Query;
    m.query.editing = true;
    // The previous query is selected: typing replaces it, arrows keep it.
    let input = &mut m.query.input;
    input.select_all = !input.text.is_empty();
    input.cursor = input.text.len();
}

fn open_eval(m: &mut Model) -> Vec<Cmd> {
    if m.cases.is_none() {
        m.error = Some(
            "no evaluation cases: put cases.tsv in the corpus, open a BEIR folder, or pass --cases FILE (TSV, SQuAD JSON, a JSONL query log)".into(),
        );
        return Vec::new();
    }
    m.view = View::Eval;
    m.start_eval()
}

/// Keys while a number is typed: digits, backspace, enter applies it, esc cancels.
pub(super) fn prompt_key(m: &mut Model, ev: &KeyEvent) -> Vec<Cmd> {
    if ev.modifiers.contains(KeyModifiers::CONTROL) && ev.code == KeyCode::Char('c') {
        m.quit = true;
        return vec![Cmd::Quit];
    }
    let Some(p) = m.prompt.as_mut() else {
        return Vec::new();
    };
    match ev.code {
        KeyCode::Char(c) if c.is_ascii_digit() && p.input.len() < 9 => p.input.push(c),
        KeyCode::Backspace => {
            p.input.pop();
        }
        KeyCode::Esc => m.prompt = None,
        KeyCode::Enter => {
            let Some(Prompt { kind, input }) = m.prompt.take() else {
                return Vec::new();
            };
            let Ok(n) = input.parse::<usize>() else {
                m.error = Some(format!("{}: type a number, then enter", kind.label()));
                return Vec::new();
            };
            return match kind {
                PromptKind::GotoChunk => {
                    let count = m.chunks_in_selected();
                    if n == 0 || n > count {
                        m.error =
                            Some(format!("this file has chunks 1 to {count}; {n} is not one"));
                    } else {
                        m.chunks.focus_on(n - 1);
                    }
                    Vec::new()
                }
                PromptKind::Size => m.turn(|s| {
                    s.size = n;
                    None
                }),
                PromptKind::Overlap => m.turn(|s| {
                    s.overlap = n;
                    None
                }),
            };
        }
        _ => {}
    }
    Vec::new()
}

/// The knobs as code for the strategy's framework (workbench.toml for chunkscope's own
/// strategies), sized by the model in use: what `chunkscope knobs --as` prints.
fn copy_as_code(m: &mut Model) -> Vec<Cmd> {
    use chunkscope_core::chunk::snippet::{snippet, Framework};
    if m.store.is_some() {
        m.error = Some(
            "stored chunks come from your own pipeline: no knobs made them, so there is no code to copy (chunkscope knobs --as prints the knobs' code)".into(),
        );
        return Vec::new();
    }
    let framework = Framework::for_strategy(m.settings.strategy);
    let model_id = match &m.engine {
        Some(e) => e.model.id.clone(),
        None => m
            .models
            .get(m.model_index)
            .cloned()
            .unwrap_or_else(|| m.model_name.clone()),
    };
    match snippet(&m.settings, m.window_spec, &model_id, framework) {
        Ok(text) => {
            m.info = Some(format!(
                "copied (OSC 52): the knobs as {} for {} ({} lines; chunkscope knobs --as {} prints it)",
                framework.language(),
                framework.title(),
                text.lines().count(),
                framework.name()
            ));
            vec![Cmd::Copy { text }]
        }
        Err(e) => {
            m.error = Some(e.to_string());
            Vec::new()
        }
    }
}

/// `chunkscope audit CORPUS` with the flags that reproduce the knobs on screen.
pub(super) fn command_line(m: &Model) -> String {
    let quote = |s: &str| {
        if !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./,:=".contains(c))
        {
            s.to_string()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    let mut words = vec!["chunkscope".to_string(), "audit".into()];
    match &m.store {
        Some(uri) => words.extend(["--store".into(), quote(uri)]),
        None => words.push(quote(&m.corpus_path.display().to_string())),
    }
    if let Some(c) = &m.config_path {
        words.push("--config".into());
        words.push(quote(&c.display().to_string()));
    }
    let flags = chunkscope_core::config::save::command_flags(&m.settings, m.window_spec);
    if m.store.is_some() {
        // A store's chunks are as stored: only the window applies.
        let at = flags.iter().position(|f| f == "--window");
        words.extend(
            at.into_iter()
                .flat_map(|i| flags[i..].iter().take(2).map(|w| quote(w))),
        );
    } else {
        words.extend(flags.iter().map(|w| quote(w)));
    }
    words.join(" ")
}

/// One press of a size or overlap key: along its trail (back where it came from) or by `delta`,
/// through the settings' rules; the turn joins the trail when it was taken.
fn step_knob(
    m: &mut Model,
    up: bool,
    delta: usize,
    knob: fn(&mut chunkscope_core::chunk::ChunkSettings) -> &mut usize,
    trail: fn(&mut super::panes::KnobSteps) -> &mut KnobTrail,
) -> Vec<Cmd> {
    let now = *knob(&mut m.settings);
    let next = trail(&mut m.chunks.steps).next(now, up, delta);
    let cmds = m.turn(|s| {
        *knob(s) = next;
        None
    });
    if *knob(&mut m.settings) == next {
        trail(&mut m.chunks.steps).record(now, next);
    }
    cmds
}

/// The knob keys: each turn goes through the settings' own rules (validation, set_strategy).
fn turn_knob(m: &mut Model, a: Action) -> Vec<Cmd> {
    match a {
        Action::Strategy => m.turn(|s| s.set_strategy(s.strategy.next()).map(str::to_string)),
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
            // The preset these settings are, or were tuned from (a size or overlap turned since):
            // the cycle goes on from there instead of starting over.
            let like = |same: &dyn Fn(&ChunkSettings) -> bool| {
                Preset::ALL.iter().position(|p| {
                    let mut probe = s.clone();
                    p.apply(&mut probe);
                    same(&probe)
                })
            };
            let now = like(&|p| p == s)
                .or_else(|| like(&|p| (p.strategy, p.unit) == (s.strategy, s.unit)))
                .or_else(|| like(&|p| p.strategy == s.strategy));
            let next = Preset::ALL[now.map_or(0, |i| (i + 1) % Preset::ALL.len())];
            next.apply(s);
            Some(format!("preset {}", next.name()))
        }),
        Action::Unit => m.turn(|s| {
            s.unit = s.unit.next();
            None
        }),
        // semchunk's automatic size (0) is the tokenizer's own; a step from 0 would make it 1.
        Action::SizeUp | Action::SizeDown
            if m.settings.strategy == Strategy::Semchunk && m.settings.size == 0 =>
        {
            m.error = Some(
                "semchunk's size is auto (model_max_length - specials): S types a size to turn from"
                    .into(),
            );
            Vec::new()
        }
        Action::SizeUp | Action::SizeDown => step_knob(
            m,
            a == Action::SizeUp,
            step(m.settings.size),
            |s| &mut s.size,
            |t| &mut t.size,
        ),
        Action::OverlapUp | Action::OverlapDown => step_knob(
            m,
            a == Action::OverlapUp,
            step(m.settings.size / 4),
            |s| &mut s.overlap,
            |t| &mut t.overlap,
        ),
        // Pane actions never reach here (each pane handles its own).
        _ => Vec::new(),
    }
}
