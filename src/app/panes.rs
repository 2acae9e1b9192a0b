//! The state of each pane: what it shows and where the user is in it. `Model` holds one of each;
//! the pane's update (chunks.rs, query.rs, ...) changes it, the views read it.

use std::sync::Arc;

use chunkscope_core::eval::Report;
use chunkscope_core::rerank::stage::Reranked;
use chunkscope_core::search::{Hit, Results};

/// The files pane and the chunk pane: the selected file, the chunk in focus and how the pane
/// is scrolled, the matches highlighted, the last tail probe, the knob trails.
#[derive(Debug, Clone, Default)]
pub struct ChunksState {
    /// The selected file, by position in the chunking.
    pub selected: usize,
    /// The chunk the chunk pane is anchored on, and lines scrolled past its header.
    pub focus_chunk: usize,
    pub scroll: usize,
    pub probe: Option<Probe>,
    pub highlight: Option<Highlight>,
    /// The chunk pane is centred on the current match (then `match_scroll` lines past it) rather
    /// than scrolled `scroll` lines from the top of the focused chunk.
    pub centre_on_match: bool,
    pub match_scroll: isize,
    pub file_sort: FileSort,
    /// The size and overlap turns, retraced by the opposite key.
    pub steps: KnobSteps,
}

impl ChunksState {
    /// Select file `file_pos` and show its first chunk from the top.
    pub(super) fn select_file(&mut self, file_pos: usize) {
        self.selected = file_pos;
        self.focus_on(0);
    }

    /// Show chunk `chunk` of the selected file from its top.
    pub(super) fn focus_on(&mut self, chunk: usize) {
        self.focus_chunk = chunk;
        self.scroll = 0;
        self.uncentre();
    }

    /// Keep the focus on one of the selected file's `chunks`.
    pub(super) fn clamp_focus(&mut self, chunks: usize) {
        if self.focus_chunk >= chunks {
            self.focus_chunk = chunks.saturating_sub(1);
            self.scroll = 0;
        }
    }

    /// Show `chunk` of file `file_pos`, centred on the first of `spans` (byte ranges of its
    /// text; `current` is the one centred), all of them highlighted.
    pub(super) fn open(
        &mut self,
        file_pos: usize,
        chunk: usize,
        spans: Vec<(usize, usize)>,
        current: usize,
    ) {
        self.selected = file_pos;
        self.focus_chunk = chunk;
        self.scroll = 0;
        self.match_scroll = 0;
        self.centre_on_match = !spans.is_empty();
        self.highlight = (!spans.is_empty()).then_some(Highlight {
            file_pos,
            chunk,
            current: current.min(spans.len().saturating_sub(1)),
            spans,
        });
    }

    /// Leave the centred view (a move to another chunk or file, or a scroll from its top).
    pub(super) fn uncentre(&mut self) {
        self.centre_on_match = false;
        self.match_scroll = 0;
    }

    /// Scroll by `lines`: from the match the pane is centred on, or from the chunk's top.
    pub(super) fn scroll_by(&mut self, lines: isize) {
        if self.centre_on_match {
            self.match_scroll += lines;
        } else {
            self.scroll = self.scroll.saturating_add_signed(lines);
        }
    }

    /// Centre on the next (or previous) match in the focused chunk, if there is one that way.
    pub(super) fn step_match(&mut self, forward: bool) -> bool {
        let (selected, focus) = (self.selected, self.focus_chunk);
        let Some(h) = self
            .highlight
            .as_mut()
            .filter(|h| h.file_pos == selected && h.chunk == focus)
        else {
            return false;
        };
        let next = if forward {
            h.current + 1
        } else {
            h.current.wrapping_sub(1)
        };
        if next >= h.spans.len() {
            return false;
        }
        h.current = next;
        self.centre_on_match = true;
        self.match_scroll = 0;
        true
    }
}

/// The worst-chunks view.
#[derive(Debug, Clone, Default)]
pub struct WorstState {
    /// The selected row.
    pub selected: usize,
}

/// The order of the files pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileSort {
    #[default]
    Name,
    /// Most embed tokens past the window first.
    Unseen,
    /// Most chunks over the window first.
    OverWindow,
}

impl FileSort {
    pub fn label(self) -> &'static str {
        match self {
            FileSort::Name => "by name",
            FileSort::Unseen => "by tokens never embedded",
            FileSort::OverWindow => "by chunks over the window",
        }
    }

    pub fn next(self) -> FileSort {
        match self {
            FileSort::Name => FileSort::Unseen,
            FileSort::Unseen => FileSort::OverWindow,
            FileSort::OverWindow => FileSort::Name,
        }
    }
}

/// The evaluation pane: the latest report, a pinned configuration A, the selected case.
#[derive(Debug, Clone, Default)]
pub struct EvalState {
    pub report: Option<Arc<Report>>,
    /// (chunking generation, window) the report was made for.
    pub made_for: Option<(u64, usize)>,
    pub pinned: Option<Arc<Report>>,
    pub misses_only: bool,
    /// Only the cases whose hit/miss at k differs between A and B.
    pub flipped_only: bool,
    pub selected: usize,
    pub running: bool,
}

/// The two retrievers shown side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retriever {
    #[default]
    Bm25,
    Vector,
    /// BM25 and vector fused by reciprocal rank fusion.
    Hybrid,
    /// The reranker's order of their candidates (only with `[rerank] model`).
    Rerank,
}

/// The query pane.
#[derive(Debug, Clone, Default)]
pub struct QueryState {
    pub input: super::textbox::TextBox,
    /// The text box has the focus (else the results do).
    pub editing: bool,
    /// Queries run so far, oldest first, and the one recalled (Up/Down in the box).
    pub history: Vec<String>,
    pub history_pos: Option<usize>,
    pub results: Option<Results>,
    /// Id of the query in flight.
    pub pending: Option<u64>,
    pub next_id: u64,
    /// The column whose hits are browsed.
    pub column: Retriever,
    pub selected: usize,
    pub k: usize,
    /// The chunk that should have been found (`x` in the chunks pane): (file position, chunk
    /// index) in the chunking on screen; every query explains where it ranked.
    pub expect: Option<(usize, usize)>,
    /// The reranker's folder (`[rerank] model`): a fourth column follows each query's first
    /// stage.
    pub reranker: Option<String>,
    /// The reranker's column for the results on screen, or why it failed; None while it runs.
    pub reranked: Option<Result<Reranked, String>>,
    /// The query whose first stage is on screen (its reranked column is awaited).
    pub rerank_for: Option<u64>,
}

impl QueryState {
    /// The hits of the browsed column.
    pub fn hits(&self) -> &[Hit] {
        match (&self.results, self.column) {
            (Some(r), Retriever::Bm25) => &r.bm25,
            (Some(r), Retriever::Vector) => &r.vector,
            (Some(r), Retriever::Hybrid) => &r.hybrid,
            (Some(_), Retriever::Rerank) => match &self.reranked {
                Some(Ok(r)) => &r.hits,
                _ => &[],
            },
            (None, _) => &[],
        }
    }

    /// The columns browsed in turn: the reranker's only when one is configured.
    pub fn next_column(&self) -> Retriever {
        match self.column {
            Retriever::Bm25 => Retriever::Vector,
            Retriever::Vector => Retriever::Hybrid,
            Retriever::Hybrid if self.reranker.is_some() => Retriever::Rerank,
            Retriever::Hybrid | Retriever::Rerank => Retriever::Bm25,
        }
    }

    /// The reranker's column is still being scored for the results on screen.
    pub fn reranking(&self) -> bool {
        self.reranker.is_some() && self.results.is_some() && self.reranked.is_none()
    }
}

/// The last tail probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    pub file_pos: usize,
    pub chunk: usize,
    pub cosine: f32,
    pub window: usize,
}

/// The matches to highlight in a chunk: byte ranges of its text (BM25: every matched term;
/// vector: the best sentence; eval: the answer), and the one the pane is centred on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Highlight {
    pub file_pos: usize,
    pub chunk: usize,
    pub spans: Vec<(usize, usize)>,
    pub current: usize,
}

impl Highlight {
    /// The range the pane centres on.
    pub fn current_span(&self) -> Option<(usize, usize)> {
        self.spans.get(self.current).copied()
    }
}

/// The trails of the size and overlap knobs.
#[derive(Debug, Clone, Default)]
pub struct KnobSteps {
    pub size: super::chunks::KnobTrail,
    pub overlap: super::chunks::KnobTrail,
}
