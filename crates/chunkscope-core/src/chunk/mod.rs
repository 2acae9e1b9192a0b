//! Chunkers behind one trait. Each produces ordered chunks as byte ranges into the document; a
//! chunk whose text is not a verbatim slice (Spring AI decoding a window cut inside a character)
//! carries its own text as well.

mod chonkie;
mod counter;
mod fixed;
mod haystack;
pub mod haystack_recursive;
mod llamaindex;
mod markdown;
pub mod maxmin;
mod preset;
pub mod punkt;
mod recursive;
mod semchunk;
pub mod snippet;
mod spring_ai;
mod textsplit;

use std::fmt;
use std::str::FromStr;

pub use chonkie::{ChonkieRecursive, ChonkieTokens, CHONKIE_MIN_CHARS};
pub(crate) use counter::StartCounter;
pub use fixed::Fixed;
pub use haystack::Haystack;
pub use haystack_recursive::HaystackRecursive;
pub use llamaindex::{LlamaIndex, LlamaParser};
pub use markdown::{sections, Markdown, Section};
pub use maxmin::{MaxMin, MaxMinParams, SentenceVectors};
pub use preset::Preset;
pub use recursive::Recursive;
pub use semchunk::Semchunk;
pub use spring_ai::{SpringAi, SpringAiParams};
pub use textsplit::TextSplitterChunker;

use crate::metadata::MetadataPolicy;
use crate::tokenize::{DocTokens, EmbedTokenizer, Unit};

/// One chunk: a byte range into its document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub start: usize,
    pub end: usize,
    /// The splitter's text when it differs from `doc[start..end]`.
    pub text: Option<Box<str>>,
    /// The heading path governing the chunk ("Runbook > Rotate keys > Staging"), for splitters
    /// that know the document's structure; one string shared by the chunks of a section.
    pub heading: Option<Heading>,
}

/// A heading path shared by the chunks of a section: one pointer in each (an `Arc<str>` is two).
pub type Heading = std::sync::Arc<String>;

impl Chunk {
    pub fn slice(start: usize, end: usize) -> Chunk {
        Chunk {
            start,
            end,
            text: None,
            heading: None,
        }
    }

    pub fn text<'a>(&'a self, doc: &'a str) -> &'a str {
        self.text.as_deref().unwrap_or(&doc[self.start..self.end])
    }
}

/// A document with the tokens computed once for it.
pub struct DocView<'a> {
    pub text: &'a str,
    /// Shared: chunks that are runs of the document's tokens read their starts from them.
    pub tokens: &'a std::sync::Arc<DocTokens>,
    pub tok: &'a EmbedTokenizer,
    /// Where this document's structure outlives one chunking (None: found again each time).
    pub memo: Option<&'a DocMemo>,
}

/// What the chunkers find in one document that no knob changes, kept across chunkings: Punkt's
/// sentence spans of its slices (keyed by the slice's place in the document; the spans are
/// relative to the slice), its Markdown blocks and its ICU sentence boundaries.
#[derive(Default)]
pub struct DocMemo {
    sentences: std::sync::Mutex<std::collections::HashMap<(usize, usize), SpanList>>,
    blocks: std::sync::OnceLock<std::sync::Arc<[markdown::Block]>>,
    icu_sentences: std::sync::OnceLock<std::sync::Arc<[u32]>>,
}

/// Sentence spans as (start, end) byte offsets.
pub type SpanList = std::sync::Arc<[(u32, u32)]>;

/// `spans` held as a `SpanList` (offsets within a document, so they fit in u32).
pub(crate) fn span_list(spans: Vec<(usize, usize)>) -> SpanList {
    spans
        .into_iter()
        .map(|(s, e)| (s as u32, e as u32))
        .collect()
}

impl DocMemo {
    /// The spans of the slice `start..end`, from `split` the first time they are asked.
    pub fn get_or(
        &self,
        start: usize,
        end: usize,
        split: impl FnOnce() -> Vec<(usize, usize)>,
    ) -> SpanList {
        let mut kept = self.sentences.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(spans) = kept.get(&(start, end)) {
            return std::sync::Arc::clone(spans);
        }
        let spans = span_list(split());
        kept.insert((start, end), std::sync::Arc::clone(&spans));
        spans
    }

    /// The document's ICU sentence boundaries (text-splitter's), from `find` the first time
    /// they are asked.
    pub(crate) fn icu_sentences(&self, find: impl FnOnce() -> Vec<u32>) -> std::sync::Arc<[u32]> {
        std::sync::Arc::clone(self.icu_sentences.get_or_init(|| find().into()))
    }

    /// The document's Markdown blocks, from `parse` the first time they are asked.
    pub(crate) fn blocks(
        &self,
        parse: impl FnOnce() -> Vec<markdown::Block>,
    ) -> std::sync::Arc<[markdown::Block]> {
        std::sync::Arc::clone(self.blocks.get_or_init(|| parse().into()))
    }
}

impl DocView<'_> {
    /// Length of `text[start..end]` in `unit`, as if the slice were measured on its own.
    pub fn count(&self, unit: Unit, start: usize, end: usize) -> usize {
        match unit {
            Unit::Chars => self.text[start..end].chars().count(),
            Unit::Cl100k => self.tokens.cl100k_count_in(self.text, start, end),
            Unit::Embed => self.tokens.embed_count_in(self.text, start, end, self.tok),
        }
    }
}

pub trait Chunker: Send + Sync {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk>;

    /// The first chunks of `chunk`, at least `n` of them unless there are fewer, found without
    /// chunking the rest of the document (what a large file on screen shows first), and whether
    /// they are all of them. None where the chunker cannot stop early (its first chunks depend
    /// on the whole text, or it is fast enough whole).
    fn chunk_first(&self, _doc: &DocView, _n: usize) -> Option<(Vec<Chunk>, bool)> {
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    Fixed,
    Recursive,
    SpringAi,
    Langchain,
    Markdown,
    MaxMin,
    /// benbrandt's text-splitter crate (TextSplitter; MarkdownSplitter for Markdown files).
    TextSplitter,
    /// semchunk's recursive splitter.
    Semchunk,
    /// Haystack's DocumentSplitter, split by word.
    Haystack,
    /// Haystack's RecursiveDocumentSplitter (paragraphs, NLTK sentences, lines, words).
    HaystackRecursive,
    /// chonkie's RecursiveChunker (characters).
    Chonkie,
    /// chonkie's TokenChunker (characters).
    ChonkieTokens,
    /// LlamaIndex's SentenceSplitter.
    LlamaIndex,
    /// LlamaIndex's TokenTextSplitter.
    LlamaIndexTokens,
    /// LlamaIndex's MarkdownNodeParser, then SentenceSplitter in each section.
    LlamaIndexMarkdown,
}

impl Strategy {
    pub const ALL: [Strategy; 15] = [
        Strategy::SpringAi,
        Strategy::Langchain,
        Strategy::Markdown,
        Strategy::MaxMin,
        Strategy::TextSplitter,
        Strategy::Semchunk,
        Strategy::Haystack,
        Strategy::HaystackRecursive,
        Strategy::Chonkie,
        Strategy::ChonkieTokens,
        Strategy::LlamaIndex,
        Strategy::LlamaIndexTokens,
        Strategy::LlamaIndexMarkdown,
        Strategy::Recursive,
        Strategy::Fixed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Fixed => "fixed",
            Strategy::Recursive => "recursive",
            Strategy::SpringAi => "spring-ai",
            Strategy::Langchain => "langchain",
            Strategy::Markdown => "markdown",
            Strategy::MaxMin => "maxmin",
            Strategy::TextSplitter => "text-splitter",
            Strategy::Semchunk => "semchunk",
            Strategy::Haystack => "haystack",
            Strategy::HaystackRecursive => "haystack-recursive",
            Strategy::Chonkie => "chonkie",
            Strategy::ChonkieTokens => "chonkie-tokens",
            Strategy::LlamaIndex => "llamaindex",
            Strategy::LlamaIndexTokens => "llamaindex-tokens",
            Strategy::LlamaIndexMarkdown => "llamaindex-markdown",
        }
    }

    pub fn next(self) -> Strategy {
        let i = Strategy::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Strategy::ALL[(i + 1) % Strategy::ALL.len()]
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = crate::names::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fixed" => Ok(Strategy::Fixed),
            "recursive" => Ok(Strategy::Recursive),
            "spring-ai" | "spring_ai" | "springai" => Ok(Strategy::SpringAi),
            "langchain" => Ok(Strategy::Langchain),
            "markdown" => Ok(Strategy::Markdown),
            "maxmin" | "max-min" => Ok(Strategy::MaxMin),
            "text-splitter" | "text_splitter" | "textsplitter" => Ok(Strategy::TextSplitter),
            "semchunk" => Ok(Strategy::Semchunk),
            "haystack" => Ok(Strategy::Haystack),
            "haystack-recursive" | "haystack_recursive" => Ok(Strategy::HaystackRecursive),
            "chonkie" => Ok(Strategy::Chonkie),
            "chonkie-tokens" | "chonkie_tokens" => Ok(Strategy::ChonkieTokens),
            "llamaindex" | "llama-index" | "llama_index" => Ok(Strategy::LlamaIndex),
            "llamaindex-tokens" | "llamaindex_tokens" => Ok(Strategy::LlamaIndexTokens),
            "llamaindex-markdown" | "llamaindex_markdown" => Ok(Strategy::LlamaIndexMarkdown),
            other => Err(crate::names::UnknownName::new(
                "strategy",
                other,
                "fixed, recursive, spring-ai, langchain, markdown, maxmin, text-splitter, semchunk, haystack, haystack-recursive, chonkie, chonkie-tokens, llamaindex, llamaindex-tokens or llamaindex-markdown",
            )),
        }
    }
}

/// LangChain's RecursiveCharacterTextSplitter default separators.
pub const LANGCHAIN_SEPARATORS: &[&str] = &["\n\n", "\n", " ", ""];
/// Our recursive default: paragraphs, lines, sentences, words, characters.
pub const RECURSIVE_SEPARATORS: &[&str] = &["\n\n", "\n", ". ", " ", ""];

/// Settings that cannot work together, each naming the setting to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    #[error("chunking.overlap must be 0 for strategy maxmin (chunks are sentence groups)")]
    MaxMinOverlap,
    #[error("maxmin.fixed_threshold, c and init_constant must be numbers")]
    MaxMinNotANumber,
    #[error("chunking.size must be at least 1")]
    ZeroSize,
    #[error("chunking.overlap ({overlap}) must be smaller than chunking.size ({size})")]
    OverlapNotBelowSize { overlap: usize, size: usize },
    #[error("chunking.unit {unit} does not go with strategy spring-ai, which counts cl100k tokens: keep unit = \"cl100k\", or pick another strategy")]
    SpringAiUnit { unit: Unit },
    #[error("chunking.overlap must be 0 for strategy spring-ai (it has no overlap)")]
    SpringAiOverlap,
    #[error("chunking.separators must not be empty for strategy recursive")]
    NoSeparators,
    #[error("chunking.overlap must be 0 for strategy chonkie (RecursiveChunker has no overlap; chonkie-tokens has)")]
    ChonkieOverlap,
    #[error("chunking.size 0 (semchunk's own size: model_max_length - specials) counts the model's tokens: keep unit = \"embed\", or set a size")]
    SemchunkAutoUnit { unit: Unit },
    /// haystack-recursive splits sentences with NLTK's English punkt_tab model, read at run time.
    #[error("chunking.strategy haystack-recursive: {0}")]
    PunktData(#[from] punkt::PunktDataError),
}

impl SettingsError {
    /// The workbench.toml (section, key) to change.
    pub fn field(&self) -> (&'static str, &'static str) {
        match self {
            SettingsError::MaxMinOverlap
            | SettingsError::OverlapNotBelowSize { .. }
            | SettingsError::SpringAiOverlap
            | SettingsError::ChonkieOverlap => ("chunking", "overlap"),
            SettingsError::MaxMinNotANumber => ("maxmin", "fixed_threshold"),
            SettingsError::ZeroSize => ("chunking", "size"),
            SettingsError::SpringAiUnit { .. } | SettingsError::SemchunkAutoUnit { .. } => {
                ("chunking", "unit")
            }
            SettingsError::NoSeparators => ("chunking", "separators"),
            SettingsError::PunktData(_) => ("chunking", "strategy"),
        }
    }
}

/// Every knob of the chunking stage.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkSettings {
    pub strategy: Strategy,
    pub unit: Unit,
    pub size: usize,
    pub overlap: usize,
    /// Separators for `recursive` (LangChain uses its own list).
    pub separators: Vec<String>,
    pub spring_ai: SpringAiParams,
    /// Max-Min semantic chunking's thresholds (`size` is its optional maximum; 0 = none).
    pub maxmin: MaxMinParams,
    /// Which metadata fields are embedded ahead of each chunk, cited, or dropped.
    pub metadata: MetadataPolicy,
    /// Embed small, return big: every chunk knows its parent section, and a hit returns it.
    pub parents: bool,
}

impl Default for ChunkSettings {
    fn default() -> Self {
        ChunkSettings {
            strategy: Strategy::SpringAi,
            unit: Unit::Cl100k,
            size: 800,
            overlap: 0,
            separators: RECURSIVE_SEPARATORS.iter().map(|s| s.to_string()).collect(),
            spring_ai: SpringAiParams::default(),
            maxmin: MaxMinParams::default(),
            metadata: MetadataPolicy::default(),
            parents: false,
        }
    }
}

impl ChunkSettings {
    /// Switch strategy and apply what it implies: spring-ai counts cl100k tokens without
    /// overlap, maxmin groups whole sentences (no overlap). Returns a note saying what changed
    /// besides the strategy, if anything did.
    pub fn set_strategy(&mut self, strategy: Strategy) -> Option<&'static str> {
        self.strategy = strategy;
        match strategy {
            Strategy::SpringAi if (self.unit, self.overlap) != (Unit::Cl100k, 0) => {
                self.unit = Unit::Cl100k;
                self.overlap = 0;
                Some("spring-ai counts cl100k tokens without overlap")
            }
            Strategy::MaxMin if self.overlap != 0 => {
                self.overlap = 0;
                Some("maxmin groups whole sentences: no overlap")
            }
            Strategy::Chonkie if self.overlap != 0 => {
                self.overlap = 0;
                Some("chonkie's RecursiveChunker has no overlap")
            }
            _ => None,
        }
    }

    /// Refuse settings that cannot work, naming the setting; `validate_knobs`, and for
    /// `haystack-recursive` also NLTK's English punkt_tab data, which it reads at run time.
    pub fn validate(&self) -> Result<(), SettingsError> {
        self.validate_knobs()?;
        if self.strategy == Strategy::HaystackRecursive {
            haystack_recursive::english_params(None)?;
        }
        Ok(())
    }

    /// The knobs alone, whatever data files this machine has.
    pub fn validate_knobs(&self) -> Result<(), SettingsError> {
        if self.strategy == Strategy::MaxMin {
            if self.overlap != 0 {
                return Err(SettingsError::MaxMinOverlap);
            }
            let p = &self.maxmin;
            if !(p.fixed_threshold.is_finite() && p.c.is_finite() && p.init_constant.is_finite()) {
                return Err(SettingsError::MaxMinNotANumber);
            }
            return Ok(());
        }
        if self.strategy == Strategy::Semchunk && self.size == 0 {
            // chunkerify's size; semchunk caps the overlap below it itself.
            if self.unit != Unit::Embed {
                return Err(SettingsError::SemchunkAutoUnit { unit: self.unit });
            }
            return Ok(());
        }
        if self.size == 0 {
            return Err(SettingsError::ZeroSize);
        }
        if self.overlap >= self.size {
            return Err(SettingsError::OverlapNotBelowSize {
                overlap: self.overlap,
                size: self.size,
            });
        }
        if self.strategy == Strategy::SpringAi {
            if self.unit != Unit::Cl100k {
                return Err(SettingsError::SpringAiUnit { unit: self.unit });
            }
            if self.overlap != 0 {
                return Err(SettingsError::SpringAiOverlap);
            }
        }
        if self.strategy == Strategy::Chonkie && self.overlap != 0 {
            return Err(SettingsError::ChonkieOverlap);
        }
        if self.strategy == Strategy::Recursive && self.separators.is_empty() {
            return Err(SettingsError::NoSeparators);
        }
        Ok(())
    }

    /// The chunker these settings describe (call `validate` first). Max-Min without sentence
    /// vectors cuts at every sentence; use `chunker_with`.
    pub fn chunker(&self) -> Box<dyn Chunker> {
        self.chunker_with(None, None)
    }

    /// The chunker, with the sentence vectors Max-Min reads and, when known, the document's
    /// sentence spans for this unit and size (so Max-Min need not segment again).
    pub fn chunker_with<'a>(
        &self,
        vectors: Option<&'a dyn SentenceVectors>,
        spans: Option<maxmin::Spans>,
    ) -> Box<dyn Chunker + 'a> {
        self.chunker_for(vectors, spans, false)
    }

    /// `chunker_with` for a document that is Markdown or not (`text-splitter` then uses its
    /// MarkdownSplitter).
    pub fn chunker_for<'a>(
        &self,
        vectors: Option<&'a dyn SentenceVectors>,
        spans: Option<maxmin::Spans>,
        markdown: bool,
    ) -> Box<dyn Chunker + 'a> {
        match self.strategy {
            Strategy::MaxMin => Box::new(MaxMin {
                unit: self.unit,
                max: self.size,
                params: self.maxmin,
                vectors,
                spans,
            }),
            Strategy::Fixed => Box::new(Fixed {
                unit: self.unit,
                size: self.size,
                overlap: self.overlap,
            }),
            Strategy::Recursive => Box::new(Recursive {
                unit: self.unit,
                size: self.size,
                overlap: self.overlap,
                separators: self.separators.clone(),
                keep_at_end: true,
            }),
            Strategy::Langchain => Box::new(Recursive {
                unit: self.unit,
                size: self.size,
                overlap: self.overlap,
                separators: LANGCHAIN_SEPARATORS.iter().map(|s| s.to_string()).collect(),
                keep_at_end: false,
            }),
            Strategy::Markdown => Box::new(Markdown {
                unit: self.unit,
                size: self.size,
                overlap: self.overlap,
            }),
            Strategy::SpringAi => Box::new(SpringAi {
                size: self.size,
                params: self.spring_ai.clone(),
            }),
            Strategy::TextSplitter => Box::new(TextSplitterChunker {
                unit: self.unit,
                size: self.size,
                overlap: self.overlap,
                markdown,
            }),
            Strategy::Semchunk => Box::new(Semchunk {
                unit: self.unit,
                size: self.size,
                overlap: self.overlap,
            }),
            Strategy::HaystackRecursive => Box::new(HaystackRecursive {
                length: self.size,
                overlap: self.overlap,
                params: haystack_recursive::english_params(None).ok(),
            }),
            Strategy::Haystack => Box::new(Haystack {
                length: self.size,
                overlap: self.overlap,
                threshold: 0,
            }),
            Strategy::Chonkie => Box::new(ChonkieRecursive {
                size: self.size,
                min_chars: CHONKIE_MIN_CHARS,
            }),
            Strategy::ChonkieTokens => Box::new(ChonkieTokens {
                size: self.size,
                overlap: self.overlap,
            }),
            Strategy::LlamaIndex | Strategy::LlamaIndexTokens | Strategy::LlamaIndexMarkdown => {
                Box::new(LlamaIndex {
                    parser: match self.strategy {
                        Strategy::LlamaIndexTokens => LlamaParser::Token,
                        Strategy::LlamaIndexMarkdown => LlamaParser::Markdown,
                        _ => LlamaParser::Sentence,
                    },
                    unit: self.unit,
                    size: self.size,
                    overlap: self.overlap,
                })
            }
        }
    }

    /// One line naming the settings, e.g. "spring-ai 800 cl100k overlap 0", with the metadata
    /// embedded and parent mode when they are on.
    pub fn label(&self) -> String {
        let mut l = self.knobs_label();
        if self.metadata.embeds_anything() {
            l.push_str(&format!(" · metadata {}", self.metadata.label()));
        }
        if self.parents {
            l.push_str(" · return parents");
        }
        l
    }

    fn knobs_label(&self) -> String {
        if self.strategy == Strategy::MaxMin {
            let p = &self.maxmin;
            let max = if self.size == 0 {
                "no max".to_string()
            } else {
                format!("max {} {}", self.size, self.unit)
            };
            return format!(
                "maxmin {max} floor {:.2} c {:.2} init {:.2}",
                p.fixed_threshold, p.c, p.init_constant
            );
        }
        if self.strategy == Strategy::Haystack {
            return format!("haystack {} words overlap {}", self.size, self.overlap);
        }
        if self.strategy == Strategy::HaystackRecursive {
            return format!(
                "haystack-recursive {} words overlap {}",
                self.size, self.overlap
            );
        }
        if self.strategy == Strategy::Chonkie {
            return format!("chonkie {} chars", self.size);
        }
        if self.strategy == Strategy::ChonkieTokens {
            return format!(
                "chonkie-tokens {} chars overlap {}",
                self.size, self.overlap
            );
        }
        if self.strategy == Strategy::Semchunk && self.size == 0 {
            return format!("semchunk auto {} overlap {}", self.unit, self.overlap);
        }
        format!(
            "{} {} {} overlap {}",
            self.strategy, self.size, self.unit, self.overlap
        )
    }
}
