//! The answer-span cases: where each answer sits in the chunking, and where each retriever
//! ranked the first chunk that contains it.

use std::collections::HashSet;

use super::{Bucket, CaseResult, EvalError, MissReason, RerankMeter, Third};
use crate::cases::{norm, Case};
use crate::engine::{Chunking, Engine};
use crate::search::SearchIndex;

/// What a hit returns, by chunk id, normalised for "the retrieved text contains the answer":
/// the chunk, or in parent mode its parent section (and then each parent counts once in a
/// ranking, at its best child).
pub(super) struct HitTexts {
    parents: bool,
    normed: Vec<String>,
    parent_of: Vec<Option<(usize, usize)>>,
}

impl HitTexts {
    pub fn new(engine: &Engine, chunking: &Chunking, index: &SearchIndex) -> HitTexts {
        let parents = chunking.settings.parents;
        let mut normed: Vec<String> = Vec::with_capacity(index.len());
        let mut parent_of: Vec<Option<(usize, usize)>> = Vec::with_capacity(index.len());
        for id in 0..index.len() as u64 {
            let (fp, ci) = index.chunk_ref(id).expect("id in range");
            let f = &chunking.files[fp];
            let doc = &engine.corpus.docs[f.doc].text;
            let c = &f.chunks[ci];
            match c.parent().and_then(|p| f.parents.get(p).map(|x| (p, x))) {
                Some((p, parent)) if parents => {
                    normed.push(norm(&doc[parent.start..parent.end]));
                    parent_of.push(Some((fp, p)));
                }
                _ => {
                    normed.push(norm(c.text(doc)));
                    parent_of.push(None);
                }
            }
        }
        HitTexts {
            parents,
            normed,
            parent_of,
        }
    }

    /// In parent mode, each parent once, at its best child.
    fn dedup(&self, ranking: Vec<u64>) -> Vec<u64> {
        if !self.parents {
            return ranking;
        }
        let mut seen = HashSet::new();
        ranking
            .into_iter()
            .filter(|&id| self.parent_of[id as usize].is_none_or(|p| seen.insert(p)))
            .collect()
    }

    /// 1-based rank of the first hit whose text contains `answer` (normalised).
    fn first_hit(&self, ranking: &[u64], answer: &str) -> Option<usize> {
        ranking
            .iter()
            .position(|&id| self.normed[id as usize].contains(answer))
            .map(|p| p + 1)
    }
}

/// One chunking searched for the span cases, misses explained at `k`.
pub(super) struct SpanScorer<'a> {
    pub engine: &'a Engine,
    pub chunking: &'a Chunking,
    pub index: &'a SearchIndex,
    pub texts: HitTexts,
    pub window: usize,
    pub k: usize,
}

impl SpanScorer<'_> {
    /// Where each retriever ranked `case`'s answer (`qv` its question's vector, if any), and
    /// why it missed at k.
    pub fn score(
        &self,
        case: &Case,
        qv: Option<&Vec<f32>>,
        meter: Option<&mut RerankMeter>,
    ) -> Result<CaseResult, EvalError> {
        let (engine, index, texts) = (self.engine, self.index, &self.texts);
        let answer = norm(&case.answer);
        let qv = qv.filter(|_| index.has_vectors());
        let bm = texts.dedup(index.bm25_ranking(&case.question)?);
        let vr = qv.map_or_else(Vec::new, |qv| texts.dedup(index.vector_ranking(qv)));
        let fused: Vec<u64> = crate::search::rrf(&[&bm, &vr], index.rrf_k)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let reranked = meter.is_some();
        let rerank_rank = match meter {
            Some(m) => {
                let qv = qv.map_or(&[][..], |v| v.as_slice());
                let ids = m.ranking(index, (engine, self.chunking), &case.question, qv)?;
                texts.first_hit(&texts.dedup(ids), &answer)
            }
            None => None,
        };
        let (bm25_rank, vector_rank, hybrid_rank) = (
            texts.first_hit(&bm, &answer),
            texts.first_hit(&vr, &answer),
            texts.first_hit(&fused, &answer),
        );
        let (bucket, holding, answer_token) = place(engine, self.chunking, case, self.window);
        let miss = |rank: Option<usize>, vector: bool| explain(bucket, rank, self.k, vector);
        let doc = &engine.corpus.docs[case.doc];
        Ok(CaseResult {
            line: case.line,
            question: case.question.clone(),
            answer: case.answer.clone(),
            file: doc.path.clone(),
            bucket,
            third: third(case, doc.text.len()),
            holding,
            answer_token,
            bm25_rank,
            vector_rank,
            hybrid_rank,
            bm25_miss: miss(bm25_rank, false),
            vector_miss: miss(vector_rank, true),
            hybrid_miss: miss(hybrid_rank, false),
            rerank_rank,
            rerank_miss: reranked.then(|| miss(rerank_rank, false)).flatten(),
        })
    }
}

/// Why an answer at `rank` (None: not retrieved) missed the top `k`; None when it did not.
fn explain(bucket: Bucket, rank: Option<usize>, k: usize, vector: bool) -> Option<MissReason> {
    if rank.is_some_and(|r| r <= k) {
        return None;
    }
    Some(match (bucket, rank) {
        (Bucket::InNoChunk, None) => MissReason::AnswerInNoChunk,
        (Bucket::SplitAcrossChunks, None) => MissReason::SplitAcrossChunks,
        (Bucket::InTheTail, _) if vector => MissReason::AnswerInTheTail,
        (_, Some(r)) => MissReason::RankedBelowK { rank: r },
        (_, None) => MissReason::NotRetrieved,
    })
}

/// Where a case's answer sits in the chunking: bucket, holding chunk, answer token.
pub(super) fn place(
    engine: &Engine,
    chunking: &Chunking,
    case: &Case,
    window: usize,
) -> (Bucket, Option<(usize, usize)>, Option<usize>) {
    let specials = engine.specials();
    let Some(fp) = chunking.files.iter().position(|f| f.doc == case.doc) else {
        return (Bucket::InNoChunk, None, None);
    };
    let doc = &engine.corpus.docs[case.doc].text;
    let answer = norm(&case.answer);
    let mut tail_holder = None;
    let mut overlaps = false;
    for c in chunking.files[fp].chunks.iter() {
        let (cs, ce) = (c.start(), c.end());
        overlaps |= cs < case.end && case.start < ce;
        let holds = match c.own_text() {
            None => cs <= case.start && case.end <= ce,
            Some(t) => cs <= case.start && case.end <= ce && norm(t).contains(&answer),
        };
        if !holds {
            continue;
        }
        let rel_start = case.start - cs;
        let rel_end = case.end - cs;
        let token = c.input_position(c.token_starts.token_at_byte(rel_start), specials);
        match c.tail(window, specials) {
            Some(t) if rel_end > t.start_byte => {
                tail_holder.get_or_insert((c.index as usize, token));
            }
            _ => {
                return (
                    Bucket::InsideWindow,
                    Some((fp, c.index as usize)),
                    Some(token),
                )
            }
        }
    }
    let _ = doc;
    match tail_holder {
        Some((ci, tok)) => (Bucket::InTheTail, Some((fp, ci)), Some(tok)),
        None if overlaps => (Bucket::SplitAcrossChunks, None, None),
        None => (Bucket::InNoChunk, None, None),
    }
}

fn third(case: &Case, len: usize) -> Third {
    let pos = case.start as f64 / len.max(1) as f64;
    if pos < 1.0 / 3.0 {
        Third::First
    } else if pos < 2.0 / 3.0 {
        Third::Middle
    } else {
        Third::Last
    }
}
