//! The eval pane: cases to browse, filters, A/B pinning, and the chunk holding an answer.

use super::keymap::Action;
use super::{Model, View};

/// The eval pane's own actions; false when `a` is not one of them.
pub(super) fn act(m: &mut Model, a: Action) -> bool {
    let last = m.eval_len().saturating_sub(1);
    let e = &mut m.eval;
    match a {
        Action::NextCase => e.selected = (e.selected + 1).min(last),
        Action::PrevCase => e.selected = e.selected.saturating_sub(1),
        Action::CasesDown => e.selected = (e.selected + 10).min(last),
        Action::CasesUp => e.selected = e.selected.saturating_sub(10),
        Action::MissesOnly => {
            e.misses_only = !e.misses_only;
            e.selected = 0;
        }
        Action::FlippedOnly => {
            e.flipped_only = !e.flipped_only && e.pinned.is_some();
            e.selected = 0;
        }
        Action::PinA => e.pinned = e.report.clone(),
        Action::Unpin => {
            e.pinned = None;
            e.flipped_only = false;
        }
        Action::CloseEval => m.view = View::Chunks,
        Action::OpenCase => open_case(m),
        _ => return false,
    }
    true
}

/// Open the chunk that holds the selected case's answer, the answer highlighted; for a judged
/// query, the chunk its first relevant document ranks at (vectors, else BM25, else hybrid).
fn open_case(m: &mut Model) {
    let judged_at = m
        .judged_rows()
        .get(m.eval.selected)
        .map(|q| q.best_place().map(|p| p.at));
    if let Some(at) = judged_at {
        if let Some((fp, ci)) = at {
            m.open_chunk(fp, ci, Vec::new(), 0);
        }
        return;
    }
    let rows = m.eval_rows();
    let Some(c) = rows.get(m.eval.selected) else {
        return;
    };
    let Some((fp, ci)) = c.holding else {
        return;
    };
    let (Some(chunking), Some(engine)) = (&m.chunking, &m.engine) else {
        return;
    };
    let Some((f, ch)) = chunking
        .files
        .get(fp)
        .and_then(|f| f.chunks.get(ci).map(|ch| (f, ch)))
    else {
        return;
    };
    // The whole answer in the chunk text, found again by its normalised text.
    let text = ch.text(&engine.corpus.docs[f.doc].text);
    let answer = chunkscope_core::cases::locate(text, &c.answer);
    m.open_chunk(fp, ci, answer.into_iter().collect(), 0);
}
