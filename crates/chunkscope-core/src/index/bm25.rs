//! BM25 over chunk texts with tantivy, in RAM. The text is indexed with positions; file and heading
//! are indexed too. Any user text is a valid query: syntax errors fall back to plain terms.

use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{Field, Schema, Value, FAST, INDEXED, STORED, STRING, TEXT};
use tantivy::snippet::SnippetGenerator;
use tantivy::{doc, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

/// Why the BM25 index failed: tantivy's own error (the index lives in memory, so this is rare:
/// an exhausted writer budget, a poisoned lock).
#[derive(Debug, thiserror::Error)]
pub enum Bm25Error {
    #[error(transparent)]
    Index(#[from] tantivy::TantivyError),
}

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
    writer: IndexWriter,
    text: Field,
    file: Field,
    heading: Field,
    id: Field,
    parser: QueryParser,
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
        let text = sb.add_text_field("text", TEXT);
        let file = sb.add_text_field("file", TEXT);
        let heading = sb.add_text_field("heading", TEXT);
        let _path = sb.add_text_field("path", STRING);
        let id = sb.add_u64_field("id", STORED | FAST | INDEXED);
        let index = Index::create_in_ram(sb.build());
        let writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000)?;
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
            text,
            file,
            heading,
            id,
            parser,
        };
        bm25.update(&[], chunks)?;
        Ok(bm25)
    }

    /// Delete the chunks with ids `removed` and add `added`, in one commit.
    pub fn update<'a>(
        &mut self,
        removed: &[u64],
        added: impl IntoIterator<Item = impl Into<Bm25Doc<'a>>>,
    ) -> Result<()> {
        for &cid in removed {
            self.writer.delete_term(Term::from_field_u64(self.id, cid));
        }
        let (text, file, heading, id) = (self.text, self.file, self.heading, self.id);
        for d in added {
            let d: Bm25Doc = d.into();
            self.writer.add_document(
                doc!(text => d.text, file => d.file, heading => d.heading, id => d.id),
            )?;
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
        let (q, errors) = self.parser.parse_query_lenient(query);
        if !errors.is_empty() {
            log::debug!("query {query:?} read leniently: {errors:?}");
        }
        let top = searcher.search(&q, &TopDocs::with_limit(k.max(1)).order_by_score())?;
        let mut snippets = SnippetGenerator::create(&searcher, &*q, self.text)?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let d: TantivyDocument = searcher.doc(addr)?;
            let Some(id) = d.get_first(self.id).and_then(|v| v.as_u64()) else {
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
    fn tantivy_errors_keep_their_kind_and_message() {
        let e: Bm25Error = tantivy::TantivyError::InvalidArgument("budget".into()).into();
        assert!(matches!(
            &e,
            Bm25Error::Index(tantivy::TantivyError::InvalidArgument(a)) if a == "budget"
        ));
        assert!(e.to_string().contains("budget"), "{e}");
    }
}
