//! From chunk ids to the hits a search shows: where the match lies in the model's input, the
//! parent section a hit returns, the pages it spans.

use std::collections::HashSet;

use super::{Hit, ParentHit, SearchIndex};
use crate::engine::{Chunking, Engine};

/// One search's view of the chunking: what turns its rankings into hits.
pub(super) struct HitMaker<'a> {
    pub index: &'a SearchIndex,
    pub engine: &'a Engine,
    pub chunking: &'a Chunking,
    pub window: usize,
}

impl HitMaker<'_> {
    fn parents(&self) -> bool {
        self.chunking.settings.parents
    }

    /// (file position, parent index) of the chunk `id`, if it has a parent.
    fn parent_of(&self, id: u64) -> Option<(usize, usize)> {
        let &(fp, c) = self.index.refs.get(id as usize)?;
        Some((fp, self.chunking.files[fp].chunks[c].parent()?))
    }

    /// What "the other retriever returned it too" compares: chunks, or parents in parent mode.
    pub fn same(&self, id: u64) -> (Option<(usize, usize)>, u64) {
        if self.parents() {
            (self.parent_of(id), 0)
        } else {
            (None, id)
        }
    }

    /// In parent mode, each parent once, at its best child; otherwise `items` as they are.
    pub fn one_per_parent<T>(&self, mut items: Vec<T>, id: impl Fn(&T) -> u64) -> Vec<T> {
        if self.parents() {
            let mut seen = HashSet::new();
            items.retain(|x| seen.insert(self.parent_of(id(x))));
        }
        items
    }

    /// The hit at `rank` for chunk `id`, its match (if any) at `match_byte` of the chunk's text.
    pub fn hit(
        &self,
        rank: usize,
        id: u64,
        score: f32,
        match_byte: Option<usize>,
        only_here: bool,
    ) -> Option<Hit> {
        let specials = self.engine.specials();
        let &(fp, c) = self.index.refs.get(id as usize)?;
        let (path, chunk, _) = self.index.chunk(self.engine, self.chunking, id)?;
        let token = match_byte.map(|b| chunk.token_starts.token_at_byte(b));
        let readable = chunk.readable(self.window, specials);
        let doc = &self.engine.corpus.docs[self.chunking.files[fp].doc];
        let pages = doc.page_span(chunk.start(), chunk.end());
        Some(Hit {
            rank,
            score,
            file: path.to_string(),
            id: None,
            file_pos: fp,
            chunk: c,
            heading: chunk.heading().map(str::to_owned),
            match_byte,
            token_offset: token.map(|t| chunk.input_position(t, specials)),
            in_tail: token.is_some_and(|t| t >= readable),
            only_here,
            parent: chunk.parent().and_then(|p| self.parent_hit(fp, p, path)),
            page_start: pages.map(|p| p.0),
            page_end: pages.map(|p| p.1),
        })
    }

    /// Parent `p` of file `fp`, as the section a hit returns.
    fn parent_hit(&self, fp: usize, p: usize, path: &str) -> Option<ParentHit> {
        let file = &self.chunking.files[fp];
        let p = file.parents.get(p)?;
        let text = &self.engine.corpus.docs[file.doc].text[p.start..p.end];
        Some(ParentHit {
            id: p.id(path),
            heading: p.heading.clone(),
            start_byte: p.start,
            end_byte: p.end,
            chars: text.chars().count(),
            cl100k_tokens: crate::tokenize::cl100k_count(text),
        })
    }
}
