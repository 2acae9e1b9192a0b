//! The three units and how each is counted.
//!
//! - `chars`: Unicode scalar values.
//! - `cl100k`: OpenAI's cl100k_base BPE (what Spring AI's TokenTextSplitter counts), via tiktoken-rs.
//! - `embed`: the embedding model's own tokenizer (tokenizer.json), truncation and padding off.
//!
//! Sizes in the `embed` unit count content tokens (no [CLS]/[SEP]); the window counts the specials.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;
use tokenizers::{PreTokenizerWrapper, Tokenizer};

mod bert_direct;
mod cl100k_direct;
pub(crate) mod cl100k_pieces;
mod cl100k_tokens;
mod embed_tokens;
mod memo;
mod piece_table;
mod slice_start;

pub(crate) use memo::Remembered;

pub use cl100k_tokens::Cl100kTokens;
pub use embed_tokens::EmbedTokens;
pub use slice_start::SliceStart;

/// Why a tokenizer could not be opened or could not tokenize a text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TokenizeError {
    /// tokenizer.json is missing, unreadable or not a tokenizer.
    #[error("{path}: cannot load tokenizer: {why}")]
    Load {
        path: std::path::PathBuf,
        why: String,
    },
    /// The tokenizer failed on a text (the tokenizers crate's own error).
    #[error("embed tokenization: tokenizer failed: {0}")]
    Encode(String),
}

/// The unit a splitter measures its chunks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Chars,
    Cl100k,
    Embed,
}

impl Unit {
    pub const ALL: [Unit; 3] = [Unit::Chars, Unit::Cl100k, Unit::Embed];

    pub fn name(self) -> &'static str {
        match self {
            Unit::Chars => "chars",
            Unit::Cl100k => "cl100k",
            Unit::Embed => "embed",
        }
    }

    pub fn next(self) -> Unit {
        match self {
            Unit::Chars => Unit::Cl100k,
            Unit::Cl100k => Unit::Embed,
            Unit::Embed => Unit::Chars,
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Unit {
    type Err = crate::names::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "chars" | "char" | "characters" => Ok(Unit::Chars),
            "cl100k" | "cl100k_base" | "tiktoken" => Ok(Unit::Cl100k),
            "embed" | "wordpiece" | "model" => Ok(Unit::Embed),
            other => Err(crate::names::UnknownName::new(
                "unit",
                other,
                "chars, cl100k or embed",
            )),
        }
    }
}

/// The cl100k_base encoder, built once (its ranks are compiled into tiktoken-rs).
pub fn cl100k() -> &'static CoreBPE {
    static BPE: OnceLock<CoreBPE> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().expect("cl100k_base ranks are bundled"))
}

/// Number of cl100k_base tokens in `text` (special-token strings count as plain text).
///
/// Short texts (the ends of slices that the chunkers count, single words and spaces) repeat
/// across a corpus, so their counts are remembered per thread; a table past its bound is
/// emptied rather than grown.
pub fn cl100k_count(text: &str) -> usize {
    const SHORT: usize = 32;
    thread_local! {
        static SEEN: std::cell::RefCell<Remembered<()>> = Default::default();
    }
    if text.len() > SHORT {
        return cl100k_direct::count(text);
    }
    SEEN.with_borrow_mut(|seen| seen.count_or((), text, || cl100k_direct::count(text)))
}

/// One embed token of a document: byte span in the document and the pre-tokenizer word it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenSpan {
    pub start: u32,
    pub end: u32,
    pub word: u32,
}

/// The embedding model's tokenizer, with truncation and padding turned off so lengths are never capped.
pub struct EmbedTokenizer {
    inner: Tokenizer,
    /// Tokens the post-processor adds to a single sequence ([CLS] and [SEP] for BERT).
    specials: usize,
    /// True when tokenizing a word-aligned slice alone gives exactly the document's tokens for that
    /// slice (BERT's pre-tokenizer splits on whitespace and punctuation and each word is encoded on
    /// its own). Other tokenizers are measured chunk by chunk.
    word_local: bool,
    /// True when U+FFFD is dropped before anything else reads the text (BERT's normalizer with
    /// `clean_text`, with BERT's pre-tokenizer): a text that is a document slice between
    /// replacement characters has the slice's tokens.
    drops_replacement: bool,
    /// `model_max_length` of the tokenizer_config.json beside tokenizer.json, as transformers
    /// reads it (None when absent or unset: transformers then uses a huge number).
    model_max_length: Option<usize>,
    /// This tokenizer among those loaded in the process: the key of its remembered fragments.
    id: u64,
    /// BERT's pipeline computed directly (same spans, a fraction of the time), for a
    /// tokenizer that is BERT's.
    direct: Option<bert_direct::BertDirect>,
}

impl EmbedTokenizer {
    /// This tokenizer among those loaded in the process (a key for what is remembered of it).
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn from_file(path: &Path) -> Result<Self, TokenizeError> {
        let load = |why: String| TokenizeError::Load {
            path: path.to_path_buf(),
            why,
        };
        let mut inner = Tokenizer::from_file(path).map_err(|e| load(e.to_string()))?;
        // cl100k's tables too: a tokenizer is loaded before the corpus is tokenized on workers.
        cl100k_direct::prepare();
        inner
            .with_truncation(None)
            .map_err(|e| load(format!("cannot turn truncation off: {e}")))?;
        inner.with_padding(None);
        let specials = inner
            .get_post_processor()
            .map(|p| tokenizers::tokenizer::PostProcessor::added_tokens(p, false))
            .unwrap_or(0);
        let word_local = matches!(
            inner.get_pre_tokenizer(),
            Some(PreTokenizerWrapper::BertPreTokenizer(_))
        );
        let drops_replacement = word_local
            && matches!(
                inner.get_normalizer(),
                Some(tokenizers::NormalizerWrapper::BertNormalizer(n)) if n.clean_text
            );
        let model_max_length =
            std::fs::read_to_string(path.with_file_name("tokenizer_config.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| v.get("model_max_length")?.as_u64())
                .and_then(|n| usize::try_from(n).ok());
        static LOADED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Ok(EmbedTokenizer {
            specials,
            word_local,
            drops_replacement,
            model_max_length,
            id: LOADED.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            direct: bert_direct::BertDirect::for_tokenizer(&inner),
            inner,
        })
    }

    /// The tokenizer's `model_max_length` (tokenizer_config.json), when it declares one.
    pub fn model_max_length(&self) -> Option<usize> {
        self.model_max_length
    }

    /// Tokens the model adds around every input ([CLS] and [SEP]).
    pub fn specials(&self) -> usize {
        self.specials
    }

    pub fn is_word_local(&self) -> bool {
        self.word_local
    }

    /// See `drops_replacement`.
    pub fn drops_replacement(&self) -> bool {
        self.drops_replacement
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.inner
    }

    /// Content tokens of `text` (no specials) with byte offsets into `text`.
    pub fn spans(&self, text: &str) -> Result<Vec<TokenSpan>, TokenizeError> {
        match self.direct_spans(text) {
            Some(spans) => Ok(spans),
            None => self.encoded_spans(text),
        }
    }

    /// `spans` computed without the tokenizers crate, where this tokenizer is BERT's and the
    /// text allows it (see tokenize/bert_direct.rs); None where the crate must encode it.
    pub fn direct_spans(&self, text: &str) -> Option<Vec<TokenSpan>> {
        self.direct.as_ref()?.spans(text)
    }

    /// `spans` as the tokenizers crate computes them.
    fn encoded_spans(&self, text: &str) -> Result<Vec<TokenSpan>, TokenizeError> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| TokenizeError::Encode(e.to_string()))?;
        let words = enc.get_word_ids();
        Ok(enc
            .get_offsets()
            .iter()
            .enumerate()
            .map(|(i, &(s, e))| TokenSpan {
                start: s as u32,
                end: e as u32,
                word: words.get(i).copied().flatten().unwrap_or(i as u32),
            })
            .collect())
    }

    /// Tokens `prefix` adds ahead of a text: counted against a one-letter word, so that a
    /// trailing space a tokenizer folds into the next word (SentencePiece's `▁`) is not counted
    /// twice. For BERT's tokenizer this is the prefix's own count.
    pub fn prefix_count(&self, prefix: &str) -> usize {
        self.count(&format!("{prefix}a"))
            .saturating_sub(self.count("a"))
    }

    /// Number of content tokens (no specials) in `text`.
    pub fn count(&self, text: &str) -> usize {
        if let Some(spans) = self.direct_spans(text) {
            return spans.len();
        }
        self.inner
            .encode(text, false)
            .map(|e| e.len())
            .unwrap_or_else(|_| text.split_whitespace().count())
    }
}

/// A document tokenized once in the embed unit and in cl100k, so chunk counts can be derived from
/// offsets without re-tokenizing the corpus on every knob change.
#[derive(Debug, Clone, Default)]
pub struct DocTokens {
    pub embed: EmbedTokens,
    /// The whole document's cl100k tokens (they may start inside a multi-byte char).
    pub cl100k: Cl100kTokens,
}

impl DocTokens {
    pub fn new(text: &str, tok: &EmbedTokenizer) -> Result<Self, TokenizeError> {
        Ok(DocTokens {
            embed: EmbedTokens::new(&tok.spans(text)?),
            cl100k: Cl100kTokens::new(text),
        })
    }

    /// Heap bytes these tokens hold, by part: embed tokens, cl100k tokens.
    pub fn heap_bytes(&self) -> [usize; 2] {
        [self.embed.heap_bytes(), self.cl100k.heap_bytes()]
    }

    /// Content embed tokens of `text[start..end]` as if that slice were tokenized on its own, as
    /// absolute byte spans. Whole words are taken from the document's tokens; a word cut by a
    /// boundary is tokenized alone from its cut fragment, which is what the slice's own encoding does
    /// for a word-local (BERT) tokenizer. Other tokenizers encode the slice directly.
    pub fn embed_spans_in(
        &self,
        text: &str,
        start: usize,
        end: usize,
        tok: &EmbedTokenizer,
    ) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        self.each_embed_span(text, start, end, tok, |s, e| out.push((s, e)));
        out
    }

    /// `embed_spans_in`'s spans handed to `visit` in order, without gathering them.
    pub fn each_embed_span(
        &self,
        text: &str,
        start: usize,
        end: usize,
        tok: &EmbedTokenizer,
        mut visit: impl FnMut(usize, usize),
    ) {
        if start >= end {
            return;
        }
        let t = &self.embed;
        let cut = |a: usize, b: usize, visit: &mut dyn FnMut(usize, usize)| {
            fragment(text, a, b, tok, visit)
        };
        if !tok.is_word_local() || !t.words_in_order() {
            return cut(start, end, &mut visit);
        }
        let (s, e) = (start as u32, end as u32);
        let straddles = |w: (u32, u32), at: u32| w.0 < at && at < w.1;
        let mut i = t.first_ending_after(s);
        // A word cut by the left boundary (and maybe the right one too).
        if i < t.len() {
            let w = t.word_span(i);
            if straddles(w, s) {
                cut(start, w.1.min(e) as usize, &mut visit);
                i = t.word_end(i);
            }
        }
        // Word by word: the tokens of a word inside the slice are handed over as they are.
        while i < t.len() {
            let next = t.word_end(i);
            let w = (t.start(t.word_first(i)), t.end(next - 1));
            if w.0 >= e {
                break;
            }
            if straddles(w, e) {
                cut(w.0.max(s) as usize, end, &mut visit);
                break;
            }
            for k in i..next {
                let (a, b) = t.span(k);
                visit(a, b);
            }
            i = next;
        }
    }

    /// `embed_spans_in`'s tokens of `text[start..end]` as the document's run of whole-word
    /// tokens and the starts (absolute) of the tokens of the words the boundaries cut, tokenized
    /// alone; None for a tokenizer that is not word-local or words out of order (the slice is
    /// then tokenized on its own). A chunk keeps this instead of every token's start.
    pub fn embed_slice(
        &self,
        text: &str,
        start: usize,
        end: usize,
        tok: &EmbedTokenizer,
    ) -> Option<SliceTokens> {
        let (mut head, mut tail) = (Vec::new(), Vec::new());
        let run = self.walk_slice(text, start, end, tok, |cut, a| match cut {
            Cut::Head => head.push(a as u32),
            Cut::Tail => tail.push(a as u32),
        })?;
        Some(SliceTokens { head, run, tail })
    }

    /// As `embed_spans_in` for a word-local tokenizer with words in order, without listing the
    /// tokens: the whole words inside the slice are a run of the document's tokens (first, count),
    /// found by a binary search for its first token and a galloping one from there for its end;
    /// the tokens of a word cut by a boundary are handed to `cut` (which end, absolute start).
    /// None for other tokenizers.
    fn walk_slice(
        &self,
        text: &str,
        start: usize,
        end: usize,
        tok: &EmbedTokenizer,
        mut cut: impl FnMut(Cut, usize),
    ) -> Option<(usize, usize)> {
        let t = &self.embed;
        if !tok.is_word_local() || !t.words_in_order() {
            return None;
        }
        if start >= end {
            return Some((0, 0));
        }
        let (s, e) = (start as u32, end as u32);
        let mut i = t.first_ending_after(s);
        if let Some(w) = self.word_cut_at(i, s) {
            fragment(text, start, w.1.min(e) as usize, tok, |a, _| {
                cut(Cut::Head, a)
            });
            i = t.word_end(i);
        }
        let k = self.run_end(i, e);
        self.tail_fragment(text, k, (start, end), tok, |a| cut(Cut::Tail, a));
        Some((i, k - i))
    }

    /// The span of token `i`'s word when byte `at` falls strictly inside it (a slice boundary
    /// there cuts the word, whose tokens are then encoded again).
    fn word_cut_at(&self, i: usize, at: u32) -> Option<(u32, u32)> {
        let t = &self.embed;
        (i < t.len())
            .then(|| t.word_span(i))
            .filter(|w| w.0 < at && at < w.1)
    }

    /// Where a run of whole words from token `i` ends for a slice ending at byte `e`: with words
    /// in order, the walk of `embed_spans_in` stops at the first token whose word ends past `e`
    /// (the one cut by the boundary, or one wholly after it).
    fn run_end(&self, i: usize, e: u32) -> usize {
        let t = &self.embed;
        t.gallop_from(i, |j| t.end(t.word_end(j) - 1) <= e)
    }

    /// The tokens of the word that the end of `text[start..end]` cuts, if it cuts one (`k` is
    /// `run_end`'s token), encoded alone: their absolute starts handed to `visit`.
    fn tail_fragment(
        &self,
        text: &str,
        k: usize,
        (start, end): (usize, usize),
        tok: &EmbedTokenizer,
        mut visit: impl FnMut(usize),
    ) {
        if let Some(w) = self.word_cut_at(k, end as u32) {
            let at = w.0.max(start as u32) as usize;
            fragment(text, at, end, tok, |a, _| visit(a));
        }
    }

    /// Number of cl100k tokens in `text[start..end]` encoded alone (`text` is the document these
    /// tokens were made from): the document's tokens between the slice's first and last forced
    /// piece boundaries, and only its two ends encoded again.
    pub fn cl100k_count_in(&self, text: &str, start: usize, end: usize) -> usize {
        if start >= end {
            return 0;
        }
        cl100k_pieces::slice_count(text, &self.cl100k, start, end)
            .unwrap_or_else(|| cl100k_count(&text[start..end]))
    }

    /// Number of content embed tokens in `text[start..end]` tokenized alone.
    pub fn embed_count_in(
        &self,
        text: &str,
        start: usize,
        end: usize,
        tok: &EmbedTokenizer,
    ) -> usize {
        if start >= end {
            return 0;
        }
        let mut fragments = 0;
        match self.walk_slice(text, start, end, tok, |_, _| fragments += 1) {
            Some((_, run)) => fragments + run,
            None => self.embed_spans_in(text, start, end, tok).len(),
        }
    }
}

/// A slice's embed tokens as `DocTokens::embed_slice` finds them: the starts of the tokens of
/// the word cut by its left boundary (`head`), the document's tokens `run.0..run.0 + run.1`,
/// then the starts of the tokens of the word cut by its right boundary (`tail`). Starts are
/// absolute bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SliceTokens {
    pub head: Vec<u32>,
    pub run: (usize, usize),
    pub tail: Vec<u32>,
}

impl SliceTokens {
    /// The slice's content tokens.
    pub fn len(&self) -> usize {
        self.head.len() + self.run.1 + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Which boundary of a slice cut a word (`DocTokens::walk_slice`).
enum Cut {
    Head,
    Tail,
}

/// Tokenize `text[start..end]` alone and hand `visit` each token's absolute span, in order.
///
/// Fragments (a word cut by a slice's boundary: the head of a number in a run of Chinese text,
/// a character of a long identifier) are short and repeat across a corpus, so the spans of those
/// of up to 32 bytes are remembered per thread, for one tokenizer at a time; a table past its
/// bound is emptied rather than grown.
fn fragment(
    text: &str,
    start: usize,
    end: usize,
    tok: &EmbedTokenizer,
    mut visit: impl FnMut(usize, usize),
) {
    const SHORT: usize = 32;
    thread_local! {
        static SEEN: std::cell::RefCell<Remembered<u64>> = Default::default();
    }
    let piece = &text[start..end];
    let spans = || tok.spans(piece).unwrap_or_default();
    if piece.len() > SHORT {
        return spans()
            .into_iter()
            .for_each(|t| visit(start + t.start as usize, start + t.end as usize));
    }
    SEEN.with_borrow_mut(|seen| {
        // Offsets into a piece of at most 32 bytes fit a byte: each span is two bytes.
        let rel = seen.get_or(tok.id, piece, |out| {
            spans()
                .iter()
                .for_each(|t| out.extend([t.start as u8, t.end as u8]))
        });
        rel.chunks_exact(2)
            .for_each(|ab| visit(start + ab[0] as usize, start + ab[1] as usize));
    })
}

/// Count `text` in `unit`; for `embed`, content tokens without the specials.
pub fn count(unit: Unit, text: &str, tok: &EmbedTokenizer) -> usize {
    match unit {
        Unit::Chars => text.chars().count(),
        Unit::Cl100k => cl100k_count(text),
        Unit::Embed => tok.count(text),
    }
}
