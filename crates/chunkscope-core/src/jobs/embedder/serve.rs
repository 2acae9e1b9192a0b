//! Answers to the requests served between slices of the bulk job: queries (the reranker's column
//! after the first stage's), tail probes and evaluations.

use std::path::Path;
use std::sync::Arc;

use super::rerank_slot::RerankerSlot;
use super::{Current, Request, State, PROBE_SENTENCE};
use crate::embed::{cosine, EmbedCache, Embedder};
use crate::engine::Engine;
use crate::jobs::{Emitter, Event, JobError};
use crate::rerank::stage;
use crate::search::{Results, SearchIndex};

/// What answering a request borrows from the worker's state.
struct Answer<'a, M> {
    embedder: &'a Embedder,
    cache: &'a mut EmbedCache,
    cur: &'a Current,
    reranker: &'a mut RerankerSlot,
    out: &'a Emitter<M>,
}

/// Answer one request against the current chunking (nothing before the model and a chunking).
pub(super) fn serve<M: From<Event>>(st: &mut State<M>, request: Request) {
    let (Some(embedder), Some(cache), Some(cur)) =
        (st.embedder.as_ref(), st.cache.as_mut(), st.current.as_ref())
    else {
        return;
    };
    let mut answer = Answer {
        embedder,
        cache,
        cur,
        reranker: &mut st.reranker,
        out: &st.out,
    };
    match request {
        // Taken by `serve_urgent` before anything is served.
        Request::Focus { .. } => {}
        #[cfg(test)]
        Request::Crash => {}
        Request::Query {
            id,
            text,
            k,
            expect,
        } => answer.query(id, &text, k, expect),
        Request::Probe { file_pos, chunk } => answer.probe(file_pos, chunk),
        Request::Eval { cases } => answer.eval(&cases),
    }
}

impl<M: From<Event>> Answer<'_, M> {
    /// The first stage's results, then the reranker's column when there is a reranker.
    fn query(&mut self, id: u64, text: &str, k: usize, expect: Option<(usize, usize)>) {
        let cur = self.cur;
        let result = match &cur.index {
            Some(ix) => self.first_stage(ix, text, k, expect),
            None => Err(JobError::NoIndex),
        };
        let answered = result.is_ok();
        self.out.emit(Event::QueryDone {
            id,
            generation: cur.generation,
            result,
        });
        // The reranker's column follows the first stage's, so those show at once.
        let Some(ix) = cur.index.as_ref().filter(|_| answered) else {
            return;
        };
        let result = match self.reranker.ready() {
            Ok(None) => return,
            Ok(Some(stage)) => stage::rerank_query(
                stage,
                ix,
                (&cur.engine, &cur.chunking),
                self.embedder,
                self.cache,
                text,
                cur.window,
                k,
            )
            .map_err(|e| JobError::Rerank(format!("{e:#}"))),
            Err(e) => Err(e),
        };
        self.out.emit(Event::Reranked {
            id,
            generation: cur.generation,
            result,
        });
    }

    /// BM25, vectors and hybrid for `text`; with `expect`, where that chunk ranked and why.
    fn first_stage(
        &mut self,
        ix: &SearchIndex,
        text: &str,
        k: usize,
        expect: Option<(usize, usize)>,
    ) -> Result<Results, JobError> {
        let cur = self.cur;
        ix.search(
            &cur.engine,
            &cur.chunking,
            self.embedder,
            self.cache,
            text,
            k,
            cur.window,
        )
        .map_err(crate::explain::ExplainError::from)
        .and_then(|mut r| {
            let Some(id) = expect.and_then(|(f, c)| ix.id_of(f, c)) else {
                return Ok(r);
            };
            // A query that could not be embedded says so in `vector_error`; the explanation then
            // has no vector side.
            let qv = crate::explain::query_vector(ix, self.embedder, self.cache, text, cur.window)
                .unwrap_or_default();
            r.expect = Some(Box::new(crate::explain::why_not(
                ix,
                &cur.engine,
                &cur.chunking,
                &r,
                &qv,
                id,
                None,
            )?));
            Ok(r)
        })
        .map_err(|e| JobError::Search(format!("{e:#}")))
    }

    /// The cosine between a chunk's vector and that of the chunk with `PROBE_SENTENCE` appended.
    fn probe(&mut self, file_pos: usize, chunk: usize) {
        let cur = self.cur;
        let Some((file, c)) = cur
            .chunking
            .files
            .get(file_pos)
            .and_then(|f| f.chunks.get(chunk).map(|c| (f, c)))
        else {
            return;
        };
        let text = c.embed_text(&cur.engine.corpus.docs[file.doc].text);
        let probed = format!("{text}{PROBE_SENTENCE}");
        let vs = match self
            .embedder
            .embed(&[text.as_ref(), probed.as_str()], cur.window)
        {
            Ok(vs) => vs,
            Err(e) => {
                self.out.emit(Event::Failed(e.into()));
                return;
            }
        };
        let cos = vs.get(1).map_or(0.0, |b| cosine(&vs[0], b));
        self.out.emit(Event::ProbeDone {
            generation: cur.generation,
            file_pos,
            chunk,
            cosine: cos,
            window: cur.window,
        });
    }

    /// Evaluate the current chunking against the cases in `cases`.
    fn eval(&mut self, cases: &Path) {
        let cur = self.cur;
        // The reranker is a fourth retriever when one is set; one that cannot load is reported
        // and the first stage evaluated without it.
        let stage = self.reranker.ready().unwrap_or_else(|e| {
            self.out.emit(Event::Failed(e));
            None
        });
        let result = load_cases(cases, &cur.engine).and_then(|c| {
            let index = cur.index.as_ref().ok_or(JobError::NoIndex)?;
            crate::eval::evaluate_with(
                (&cur.engine, &cur.chunking, index),
                self.embedder,
                self.cache,
                &c,
                cur.window,
                (&[1, 3, 5, 10], 5),
                stage,
            )
            .map_err(|e| JobError::Eval(e.to_string()))
        });
        self.out.emit(Event::EvalDone {
            generation: cur.generation,
            window: cur.window,
            result: result.map(Arc::new),
        });
    }
}

fn load_cases(path: &Path, engine: &Engine) -> Result<crate::cases::Cases, JobError> {
    // TSV, SQuAD JSON, a JSONL query log, a BEIR folder or one of its qrels files.
    crate::cases::Cases::load(path, None, &engine.corpus).map_err(|e| JobError::Eval(e.to_string()))
}
