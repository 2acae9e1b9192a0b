//! BM25 over chunk texts with tantivy, in RAM. Text, file and heading are indexed with their term
//! frequencies, not positions: BM25 reads none, and at 400,000 chunks positions were 18 MB of a
//! 100 MB index. A quoted phrase is therefore read as its words. Any user text is a valid query:
//! syntax errors fall back to plain terms.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use tantivy::collector::TopDocs;
use tantivy::query::doc_predicate_query::{DocPredicateQuery, FunctionPredicate};
use tantivy::query::QueryParser;
use tantivy::schema::{
    Document, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST,
};
use tantivy::snippet::SnippetGenerator;

use tantivy::indexer::{LogMergePolicy, NoMergePolicy};
use tantivy::{doc, DocId, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument};

/// Why the BM25 index failed: tantivy's own error (the index lives in memory, so this is rare:
/// an exhausted writer budget, a poisoned lock).
#[derive(Debug, thiserror::Error)]
pub enum Bm25Error {
    #[error(transparent)]
    Index(#[from] tantivy::TantivyError),
}

/// The writer's memory for documents not yet in a segment: each time it fills, a segment is
/// written.
const WRITER_BUDGET: usize = 25_000_000;

type Result<T> = std::result::Result<T, Bm25Error>;

/// One chunk to index.
#[derive(Debug, Clone, Copy)]
pub struct Bm25Doc<'a> {
    pub id: u64,
    pub text: &'a str,
    pub file: &'a str,
    pub heading: &'a str,
}

impl<'a> From<(u64, &'a str, &'a str, &'a str)> for Bm25Doc<'a> {
    fn from((id, text, file, heading): (u64, &'a str, &'a str, &'a str)) -> Self {
        Bm25Doc {
            id,
            text,
            file,
            heading,
        }
    }
}

pub struct Bm25 {
    reader: IndexReader,
    /// Kept open so that changed chunks can be deleted and added without a rebuild.
    writer: IndexWriter<Queued>,
    gate: Arc<Gate>,
    text: Field,
    file: Field,
    heading: Field,
    id: Field,
    parser: QueryParser,
}

/// Documents waiting for the writer's thread at most: its queue takes 10,000 and each holds a
/// copy of its chunk's text, 45 MB of 1024-token chunks queued while the writer indexed.
const MAX_QUEUED: usize = 256;

/// Counts the documents handed to the writer and not yet indexed: `enter` waits while
/// `MAX_QUEUED` are, a document leaves when the writer drops it, indexed.
#[derive(Default)]
struct Gate {
    queued: Mutex<usize>,
    left: Condvar,
}

impl Gate {
    fn enter(&self) {
        let Ok(queued) = self.queued.lock() else {
            return;
        };
        // Not forever: a writer that died drops nothing more, and add_document then says why.
        let waited = self
            .left
            .wait_timeout_while(queued, Duration::from_secs(1), |n| *n >= MAX_QUEUED);
        if let Ok((mut queued, _)) = waited {
            *queued += 1;
        }
    }

    fn leave(&self) {
        if let Ok(mut queued) = self.queued.lock() {
            *queued = queued.saturating_sub(1);
            self.left.notify_one();
        }
    }
}

/// A document on its way to the writer, counted by its gate until the writer drops it.
struct Queued {
    doc: TantivyDocument,
    gate: Arc<Gate>,
}

impl Document for Queued {
    type Value<'a> = <TantivyDocument as Document>::Value<'a>;
    type FieldsValuesIter<'a> = <TantivyDocument as Document>::FieldsValuesIter<'a>;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        self.doc.iter_fields_and_values()
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.gate.leave();
    }
}

/// A BM25 hit: the chunk id given at build time, its score, and the byte (in the chunk text) where
/// the first matched term starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Bm25Hit {
    pub id: u64,
    pub score: f32,
    pub first_match: Option<usize>,
}

impl Bm25 {
    /// Index every chunk.
    pub fn build<'a, D: Into<Bm25Doc<'a>>>(chunks: impl IntoIterator<Item = D>) -> Result<Bm25> {
        let mut sb = Schema::builder();
        let words = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("default")
                .set_index_option(IndexRecordOption::WithFreqs),
        );
        let text = sb.add_text_field("text", words.clone());
        let file = sb.add_text_field("file", words.clone());
        let heading = sb.add_text_field("heading", words);
        // A column only: hits read their id from it and deletes test it (a stored copy cost
        // 7 MB at 400,000 chunks, a term per id in the dictionary 7.6 MB more).
        let id = sb.add_u64_field("id", FAST);
        let index = Index::create_in_ram(sb.build());
        let writer: IndexWriter<Queued> = index.writer_with_num_threads(1, WRITER_BUDGET)?;
        // The build writes a segment each time the writer's budget fills and merges none: a merge
        // holds its segments and the merged one at once (and the reader holds the old ones until
        // it reloads), which put a hundred megabytes on top of a 400,000-chunk index.
        writer.set_merge_policy(Box::new(NoMergePolicy));
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let mut parser = QueryParser::for_index(&index, vec![text, heading, file]);
        parser.set_field_boost(heading, 0.5);
        parser.set_field_boost(file, 0.2);
        let mut bm25 = Bm25 {
            reader,
            writer,
            gate: Arc::new(Gate::default()),
            text,
            file,
            heading,
            id,
            parser,
        };
        bm25.update(&[], chunks)?;
        // Later updates (a file changed) add a small segment per commit: those are merged, the
        // build's large ones never are.
        let built = bm25.reader.searcher().num_docs();
        let mut merges = LogMergePolicy::default();
        merges
            .set_max_docs_before_merge(usize::try_from(built / 64).unwrap_or(usize::MAX).max(256));
        bm25.writer.set_merge_policy(Box::new(merges));
        Ok(bm25)
    }

    /// Delete the chunks with ids `removed` and add `added`, in one commit.
    pub fn update<'a>(
        &mut self,
        removed: &[u64],
        added: impl IntoIterator<Item = impl Into<Bm25Doc<'a>>>,
    ) -> Result<()> {
        if !removed.is_empty() {
            self.writer.delete_query(Box::new(ids_in(removed)))?;
        }
        let (text, file, heading, id) = (self.text, self.file, self.heading, self.id);
        for d in added {
            let d: Bm25Doc = d.into();
            self.gate.enter();
            self.writer.add_document(Queued {
                doc: doc!(text => d.text, file => d.file, heading => d.heading, id => d.id),
                gate: Arc::clone(&self.gate),
            })?;
        }
        self.writer.commit()?;
        self.reader.reload()?;
        Ok(())
    }

    /// Every indexed id, in no particular order.
    pub fn ids(&self) -> Result<Vec<u64>> {
        let searcher = self.reader.searcher();
        let mut out = Vec::new();
        for segment in searcher.segment_readers() {
            let column = segment.fast_fields().u64("id")?;
            let alive = segment.alive_bitset();
            for doc in 0..segment.max_doc() {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    out.extend(column.values_for_doc(doc));
                }
            }
        }
        Ok(out)
    }

    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Documents the segments still hold, deleted ones included (they go at a merge).
    pub fn held(&self) -> u64 {
        let searcher = self.reader.searcher();
        searcher
            .segment_readers()
            .iter()
            .map(|r| u64::from(r.max_doc()))
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Top `k` chunks for `query`; `text_of(id)` gives a chunk's text to place the first match.
    pub fn search<'t>(
        &self,
        query: &str,
        k: usize,
        text_of: impl Fn(u64) -> Option<&'t str>,
    ) -> Result<Vec<Bm25Hit>> {
        let searcher = self.reader.searcher();
        // Without positions a phrase cannot match: its words are searched instead.
        let (q, errors) = self.parser.parse_query_lenient(&query.replace('"', " "));
        if !errors.is_empty() {
            log::debug!("query {query:?} read leniently: {errors:?}");
        }
        let top = searcher.search(&q, &TopDocs::with_limit(k.max(1)).order_by_score())?;
        let mut snippets = SnippetGenerator::create(&searcher, &*q, self.text)?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let ids = searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("id")?;
            let Some(id) = ids.first(addr.doc_id) else {
                continue;
            };
            let first_match = text_of(id).and_then(|t| {
                snippets.set_max_num_chars(t.len().max(1));
                let s = snippets.snippet(t);
                let base = s.fragment_range().start;
                s.highlighted().iter().map(|r| base + r.start).min()
            });
            hits.push(Bm25Hit {
                id,
                score,
                first_match,
            });
        }
        Ok(hits)
    }
}

/// The documents whose id (read from its column) is one of `ids`: what `update` deletes. Every
/// document of a segment is tested, a hash lookup each (a few milliseconds at 400,000 chunks).
fn ids_in(ids: &[u64]) -> DocPredicateQuery {
    let ids: Arc<std::collections::HashSet<u64>> = Arc::new(ids.iter().copied().collect());
    DocPredicateQuery::from(FunctionPredicate::from(
        move |segment: &tantivy::SegmentReader| {
            let column = segment.fast_fields().u64("id")?;
            let ids = Arc::clone(&ids);
            Ok(move |doc: DocId| column.values_for_doc(doc).any(|id| ids.contains(&id)))
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_places_terms_and_survives_bad_syntax() {
        let texts = [
            "Keys are rotated every ninety days.",
            "Restart the payments API with kubectl rollout restart.",
            "Refunds are pro rata for annual plans.",
        ];
        let idx = Bm25::build(
            texts
                .iter()
                .enumerate()
                .map(|(i, t)| (i as u64, *t, "f.md", "")),
        )
        .unwrap();
        assert_eq!(idx.len(), 3);
        let text_of = |id: u64| texts.get(id as usize).copied();
        let hits = idx.search("kubectl restart", 5, text_of).unwrap();
        assert_eq!(hits[0].id, 1);
        assert_eq!(hits[0].first_match, Some(0), "'Restart' opens the text");
        let hits = idx.search("kubectl", 5, text_of).unwrap();
        assert_eq!(hits[0].first_match, Some(30));
        for q in ["AND OR (", "\"unclosed", "title:", "((", "", "+-"] {
            assert!(idx.search(q, 5, text_of).is_ok(), "{q}");
        }
        let hits = idx.search("refunds (annual", 5, text_of).unwrap();
        assert_eq!(hits[0].id, 2);
        // No positions are indexed: a quoted phrase is searched as its words.
        let hits = idx.search("\"restart kubectl\"", 5, text_of).unwrap();
        assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), vec![1]);
        assert_eq!(hits[0].first_match, Some(0));
    }

    #[test]
    fn updates_in_place() {
        let mut idx = Bm25::build([
            (10, "alpha beta", "a.md", ""),
            (11, "gamma delta", "a.md", ""),
        ])
        .unwrap();
        idx.update(&[10], [(12, "alpha epsilon", "b.md", "")])
            .unwrap();
        let mut ids = idx.ids().unwrap();
        ids.sort();
        assert_eq!(ids, vec![11, 12]);
        assert_eq!(idx.len(), 2);
        let hits = idx.search("alpha", 5, |_| None).unwrap();
        assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), vec![12]);
    }

    #[test]
    fn a_build_past_the_writer_budget_keeps_its_segments_and_drains_its_queue() {
        // Words of many kinds in every text: the writer's budget fills more than once, so the
        // build writes several segments, and the queue's gate is passed thousands of times.
        let texts: Vec<String> = (0..30_000)
            .map(|i| {
                let words: Vec<String> = (0..100)
                    .map(|j| format!("w{}", (i * 7 + j * 131) % 50_000))
                    .collect();
                format!("marker{i} {}", words.join(" "))
            })
            .collect();
        let idx = Bm25::build(
            texts
                .iter()
                .enumerate()
                .map(|(i, t)| (i as u64, t.as_str(), "f.md", "")),
        )
        .unwrap();
        assert_eq!(idx.len(), 30_000);
        assert_eq!(idx.held(), 30_000, "nothing deleted, nothing copied");
        assert!(idx.reader.searcher().segment_readers().len() > 1);
        assert_eq!(
            *idx.gate.queued.lock().unwrap(),
            0,
            "every document indexed"
        );
        for i in [0, 9_999, 19_999] {
            let hits = idx.search(&format!("marker{i}"), 1, |_| None).unwrap();
            assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), vec![i]);
        }
    }

    #[test]
    fn tantivy_errors_keep_their_kind_and_message() {
        let e: Bm25Error = tantivy::TantivyError::InvalidArgument("budget".into()).into();
        assert!(matches!(
            &e,
            Bm25Error::Index(tantivy::TantivyError::InvalidArgument(a)) if a == "budget"
        ));
        assert!(e.to_string().contains("budget"), "{e}");
    }
}
