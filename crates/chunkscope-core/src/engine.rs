//! The engine: a corpus tokenized once, chunked and measured for any settings.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::chunk::maxmin::{self, Spans};
use super::chunk::{sections, span_list, ChunkSettings, DocMemo, DocView, Section, SpanList};
use super::corpus::Corpus;
use super::measure::MeasuredChunk;
use super::model::ModelInfo;
use super::stats::Stats;
use super::tokenize::{DocTokens, EmbedTokenizer, Unit};

mod chunking;

pub use chunking::HEAD_BYTES;

/// Chunks of one document.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChunks {
    /// Index into `Engine::corpus.docs`.
    pub doc: usize,
    /// Shared, so that a file left unchanged by a reload keeps its chunks without a copy.
    pub chunks: Arc<Vec<MeasuredChunk>>,
    /// Parent sections (embed small, return big); empty unless the settings ask for parents.
    pub parents: Arc<Vec<Parent>>,
}

/// The section a chunk's hit returns in embed-small-return-big mode: the run of heading sections
/// the chunk overlaps (one section unless the splitter crossed a heading).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    pub start: usize,
    pub end: usize,
    pub heading: Option<String>,
    /// First and last section index in the document.
    pub sections: (usize, usize),
}

impl Parent {
    /// Stable id: the file and the section numbers ("guide.md#s3", "guide.md#s3-4").
    pub fn id(&self, path: &str) -> String {
        match self.sections {
            (a, b) if a == b => format!("{path}#s{a}"),
            (a, b) => format!("{path}#s{a}-{b}"),
        }
    }
}

/// A whole corpus chunked with one setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunking {
    pub settings: ChunkSettings,
    pub files: Vec<FileChunks>,
    /// A store's chunks come with the vectors it stored, one per chunk in chunking order: the
    /// vector index takes them as they are instead of embedding.
    pub stored_vectors: Option<Arc<crate::index::vector::StoredVectors>>,
}

/// The memory of a large chunking goes back to the system once the knobs rest (`reclaim`).
impl Drop for Chunking {
    fn drop(&mut self) {
        const LARGE: usize = 10_000;
        if self.files.iter().map(|f| f.chunks.len()).sum::<usize>() >= LARGE {
            crate::reclaim::soon();
        }
    }
}

impl Chunking {
    /// Every chunk's embedded text (metadata prefix + text) in chunking order.
    pub fn embed_texts<'a>(&'a self, engine: &'a Engine) -> Vec<std::borrow::Cow<'a, str>> {
        self.files
            .iter()
            .flat_map(|f| {
                let doc = engine.corpus.docs[f.doc].text.as_str();
                f.chunks.iter().map(move |c| c.embed_text(doc))
            })
            .collect()
    }

    pub fn stats(&self, window: usize, specials: usize) -> Stats {
        Stats::of(
            self.files.iter().flat_map(|f| f.chunks.iter()),
            window,
            specials,
        )
    }

    /// The chunks that overflow `window`, worst first: most embed tokens (specials included),
    /// then by file path and chunk order. The audit's list and the workbench's view are this one.
    pub fn worst_chunks(&self, engine: &Engine, window: usize) -> Vec<WorstChunk> {
        let specials = engine.specials();
        let mut worst: Vec<WorstChunk> = self
            .files
            .iter()
            .enumerate()
            .flat_map(|(file_pos, f)| {
                f.chunks.iter().filter_map(move |c| {
                    c.tail(window, specials).map(|t| WorstChunk {
                        file_pos,
                        index: c.index as usize,
                        embed_tokens: c.embed_tokens(specials),
                        tail_tokens: t.tokens,
                    })
                })
            })
            .collect();
        let path = |w: &WorstChunk| engine.corpus.docs[self.files[w.file_pos].doc].path.as_str();
        worst.sort_by(|a, b| {
            b.embed_tokens
                .cmp(&a.embed_tokens)
                .then_with(|| path(a).cmp(path(b)))
                .then(a.index.cmp(&b.index))
        });
        worst
    }
}

/// A chunk past the window, as ranked by [`Chunking::worst_chunks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorstChunk {
    /// Position of the file in the chunking, and the chunk's index in it.
    pub file_pos: usize,
    pub index: usize,
    pub embed_tokens: usize,
    /// Tokens past the window, never embedded.
    pub tail_tokens: usize,
}

pub struct Engine {
    /// Unique in the process: tells two loads apart even when they hold the same files.
    pub id: u64,
    pub model: ModelInfo,
    pub tok: Arc<EmbedTokenizer>,
    pub corpus: Corpus,
    /// One per document, computed once at load and shared with later loads while the file is
    /// unchanged.
    pub tokens: Vec<Arc<DocTokens>>,
    /// What is derived from each file (heading sections, sentence spans), computed on first use
    /// and shared with later loads while the file's path and text are unchanged.
    derived: Vec<Arc<Derived>>,
}

/// Per-file results that depend on its path and text only.
#[derive(Default)]
struct Derived {
    sections: std::sync::OnceLock<Arc<Vec<Section>>>,
    /// Max-Min's sentence spans for the last (unit, maximum size) asked.
    sentences: std::sync::Mutex<Option<(Unit, usize, Spans)>>,
    /// Max-Min's sentences before any maximum size (the segmenter runs once per file).
    uax_sentences: std::sync::OnceLock<SpanList>,
    /// What the chunkers find in the file that no knob changes (Punkt sentences, Markdown blocks).
    memo: DocMemo,
}

static NEXT_ENGINE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("model", &self.model.id)
            .field("docs", &self.corpus.docs.len())
            .finish()
    }
}

impl Engine {
    /// Tokenize every document once, spread over the available cores. It cannot fail: a
    /// document the tokenizer fails on is moved to `corpus.skipped` with the reason (the
    /// `Result` stays so that callers written with `?` need no change).
    pub fn new(
        model: ModelInfo,
        tok: Arc<EmbedTokenizer>,
        corpus: Corpus,
    ) -> Result<Engine, std::convert::Infallible> {
        Ok(Engine::refreshed(None, model, tok, corpus).0)
    }

    /// Like `new`, but documents whose path and text equal one of `prev` keep its tokens: after a
    /// change only the changed files are tokenized again. Returns how many were tokenized.
    pub fn refreshed(
        prev: Option<&Engine>,
        model: ModelInfo,
        tok: Arc<EmbedTokenizer>,
        mut corpus: Corpus,
    ) -> (Engine, usize) {
        // A document keeps the tokens of the previous one with its path and text, or, renamed or
        // moved, of one with its text. What is derived per file (sections depend on the file's
        // extension too) is kept only with the same path and text.
        let known: std::collections::HashMap<&str, (&str, usize)> = prev
            .map(|p| {
                p.corpus
                    .docs
                    .iter()
                    .enumerate()
                    .map(|(i, d)| (d.path.as_str(), (d.text.as_str(), i)))
                    .collect()
            })
            .unwrap_or_default();
        let by_text: std::collections::HashMap<&str, usize> = prev
            .map(|p| {
                p.corpus
                    .docs
                    .iter()
                    .enumerate()
                    .map(|(i, d)| (d.text.as_str(), i))
                    .collect()
            })
            .unwrap_or_default();
        let same_file: Vec<Option<usize>> = corpus
            .docs
            .iter()
            .map(|d| {
                known
                    .get(d.path.as_str())
                    .filter(|(text, _)| *text == d.text)
                    .map(|(_, i)| *i)
            })
            .collect();
        let from_prev: Vec<Option<usize>> = corpus
            .docs
            .iter()
            .zip(&same_file)
            .map(|(d, same)| same.or_else(|| by_text.get(d.text.as_str()).copied()))
            .collect();
        let jobs: Vec<(&str, Option<Arc<DocTokens>>)> = corpus
            .docs
            .iter()
            .zip(&from_prev)
            .map(|(d, i)| {
                let reuse = i.and_then(|i| prev.map(|p| Arc::clone(&p.tokens[i])));
                (d.text.as_str(), reuse)
            })
            .collect();
        let tokenized = jobs.iter().filter(|j| j.1.is_none()).count();
        let results = parallel_map(&jobs, |(t, reuse)| match reuse {
            Some(r) => Ok(Arc::clone(r)),
            None => DocTokens::new(t, &tok).map(Arc::new),
        });
        let mut tokens = Vec::with_capacity(results.len());
        let mut derived = Vec::with_capacity(results.len());
        let mut failed = Vec::new();
        for (i, r) in results.into_iter().enumerate() {
            match r {
                Ok(t) => {
                    tokens.push(t);
                    let cached = same_file[i]
                        .and_then(|j| prev.map(|p| Arc::clone(&p.derived[j])))
                        .unwrap_or_default();
                    derived.push(cached);
                }
                Err(e) => failed.push((i, e)),
            }
        }
        for (i, e) in failed.into_iter().rev() {
            let doc = corpus.docs.remove(i);
            corpus.skipped.push(super::corpus::Skipped {
                path: doc.path,
                reason: format!("tokenizer failed: {e:#}"),
            });
        }
        (
            Engine {
                id: NEXT_ENGINE_ID.fetch_add(1, Ordering::Relaxed),
                model,
                tok,
                corpus,
                tokens,
                derived,
            },
            tokenized,
        )
    }

    /// The heading sections of a document, parsed once and kept: Markdown files (.md, .markdown,
    /// .mdx) by their headings; any other file is one section without a heading.
    pub fn sections(&self, doc: usize) -> Arc<Vec<Section>> {
        Arc::clone(self.derived[doc].sections.get_or_init(|| {
            let d = &self.corpus.docs[doc];
            Arc::new(if d.is_markdown() {
                sections(&d.text)
            } else {
                vec![Section {
                    start: 0,
                    end: d.text.len(),
                    heading: None,
                }]
            })
        }))
    }

    pub fn specials(&self) -> usize {
        self.tok.specials()
    }

    pub fn view(&self, doc: usize) -> DocView<'_> {
        DocView {
            text: &self.corpus.docs[doc].text,
            tokens: &self.tokens[doc],
            tok: &self.tok,
            memo: Some(&self.derived[doc].memo),
        }
    }

    /// Max-Min's sentence spans of a document for `unit` and maximum size `max` (0 = none),
    /// kept until other values are asked, so threshold turns do not segment again; the
    /// segmentation before any maximum is kept for the file's life, so size turns do not either.
    pub fn sentence_spans(&self, doc: usize, unit: Unit, max: usize) -> Spans {
        let mut slot = self.derived[doc]
            .sentences
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some((u, m, spans)) = slot.as_ref() {
            if *u == unit && *m == max {
                return Arc::clone(spans);
            }
        }
        let bounds = self.derived[doc]
            .uax_sentences
            .get_or_init(|| span_list(maxmin::bounds(&self.corpus.docs[doc].text)));
        let bounds = bounds.iter().map(|&(s, e)| (s as usize, e as usize));
        let spans = span_list(maxmin::fit(&self.view(doc), bounds, unit, max));
        *slot = Some((unit, max, Arc::clone(&spans)));
        spans
    }

    /// How many Max-Min sentences the document has for `unit` and `max`, if already segmented
    /// (never segments: safe to ask from a view).
    pub fn cached_sentence_count(&self, doc: usize, unit: Unit, max: usize) -> Option<usize> {
        let slot = self.derived.get(doc)?.sentences.try_lock().ok()?;
        match slot.as_ref() {
            Some((u, m, spans)) if *u == unit && *m == max => Some(spans.len()),
            _ => None,
        }
    }
}

/// Map `f` over `items` on up to `available_parallelism` scoped threads, keeping order.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(items.len().max(1));
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    let results = std::sync::Mutex::new(&mut slots);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() {
                    break;
                }
                let r = f(&items[i]);
                results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
            });
        }
    });
    slots
        .into_iter()
        .map(|r| r.expect("every slot filled"))
        .collect()
}
