//! The worst-chunks view: every chunk past the window across the corpus, ranked as `audit` ranks
//! them; Enter opens one at the first token the model never reads.

use super::keymap::Action;
use super::{Model, View};

/// The view's own actions; false when `a` is not one of them.
pub(super) fn act(m: &mut Model, a: Action) -> bool {
    match a {
        Action::NextWorst => {
            let last = m.worst_chunks().len().saturating_sub(1);
            m.worst.selected = (m.worst.selected + 1).min(last);
        }
        Action::PrevWorst => m.worst.selected = m.worst.selected.saturating_sub(1),
        Action::CloseWorst => m.view = View::Chunks,
        Action::OpenWorst => {
            let window = m.window().tokens;
            let Some(w) = m.worst_chunks().get(m.worst.selected).copied() else {
                return true;
            };
            // Centred on the tail's first token.
            let tail = m
                .chunking
                .as_ref()
                .and_then(|c| c.files.get(w.file_pos)?.chunks.get(w.index))
                .and_then(|c| c.tail(window, m.specials));
            let spans = tail
                .map(|t| vec![(t.start_byte, t.start_byte)])
                .unwrap_or_default();
            m.open_chunk(w.file_pos, w.index, spans, 0);
        }
        _ => return false,
    }
    true
}
