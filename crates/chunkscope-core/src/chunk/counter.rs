//! Counting many slices of one document that share a start.

use super::DocView;
use crate::tokenize::{SliceStart, Unit};

/// Counts slices of one document, keeping the last slice start's place among its embed tokens:
/// a chunker that grows a chunk from one start asks its size again and again, and only the end
/// is searched for then (`DocTokens::embed_count_from`). Other units count as `DocView::count`.
pub(crate) struct StartCounter<'a> {
    doc: &'a DocView<'a>,
    from: std::cell::Cell<Option<SliceStart>>,
}

impl<'a> StartCounter<'a> {
    pub(crate) fn new(doc: &'a DocView<'a>) -> StartCounter<'a> {
        StartCounter {
            doc,
            from: std::cell::Cell::new(None),
        }
    }

    /// `DocView::count`.
    pub(crate) fn count(&self, unit: Unit, start: usize, end: usize) -> usize {
        let d = self.doc;
        if unit != Unit::Embed || start >= end {
            return d.count(unit, start, end);
        }
        let from = match self.from.get() {
            Some(f) if f.start == start => Some(f),
            _ => {
                let f = d.tokens.embed_start(d.text, start, d.tok);
                self.from.set(f);
                f
            }
        };
        match from {
            Some(f) => d.tokens.embed_count_from(d.text, &f, end, d.tok),
            None => d.count(unit, start, end),
        }
    }
}
