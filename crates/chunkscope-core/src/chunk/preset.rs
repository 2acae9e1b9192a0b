//! Presets: named settings that users run today, each a strategy with its unit, size and overlap
//! (mostly the library's own defaults).

use std::str::FromStr;

use super::{ChunkSettings, MaxMinParams, SpringAiParams, Strategy};
use crate::tokenize::Unit;

/// Named settings that users run today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    SpringAi,
    LangchainChars,
    LangchainTokens,
    Markdown,
    MaxMin,
    TextSplitter,
    Semchunk,
    Haystack,
    HaystackRecursive,
    Chonkie,
    ChonkieTokens,
    LlamaIndex,
    LlamaIndexTokens,
    LlamaIndexMarkdown,
}

impl Preset {
    pub const ALL: [Preset; 14] = [
        Preset::SpringAi,
        Preset::LangchainChars,
        Preset::LangchainTokens,
        Preset::Markdown,
        Preset::MaxMin,
        Preset::TextSplitter,
        Preset::Semchunk,
        Preset::Haystack,
        Preset::HaystackRecursive,
        Preset::Chonkie,
        Preset::ChonkieTokens,
        Preset::LlamaIndex,
        Preset::LlamaIndexTokens,
        Preset::LlamaIndexMarkdown,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::SpringAi => "spring-ai",
            Preset::LangchainChars => "langchain-chars",
            Preset::LangchainTokens => "langchain-tokens",
            Preset::Markdown => "markdown",
            Preset::MaxMin => "maxmin",
            Preset::TextSplitter => "text-splitter",
            Preset::Semchunk => "semchunk",
            Preset::Haystack => "haystack",
            Preset::HaystackRecursive => "haystack-recursive",
            Preset::Chonkie => "chonkie",
            Preset::ChonkieTokens => "chonkie-tokens",
            Preset::LlamaIndex => "llamaindex",
            Preset::LlamaIndexTokens => "llamaindex-tokens",
            Preset::LlamaIndexMarkdown => "llamaindex-markdown",
        }
    }

    pub fn apply(self, s: &mut ChunkSettings) {
        let (strategy, unit, size, overlap) = match self {
            Preset::SpringAi => (Strategy::SpringAi, Unit::Cl100k, 800, 0),
            Preset::LangchainChars => (Strategy::Langchain, Unit::Chars, 1500, 150),
            Preset::LangchainTokens => (Strategy::Langchain, Unit::Embed, 240, 32),
            // Structure first, sized to fit all-MiniLM-L6-v2's 128-token window (126 content).
            Preset::Markdown => (Strategy::Markdown, Unit::Embed, 120, 0),
            // The authors' rule and defaults, capped so that every chunk fits the 128 window.
            Preset::MaxMin => (Strategy::MaxMin, Unit::Embed, 120, 0),
            // The library has no default capacity: sized by the embedder's tokenizer like the
            // markdown preset, to fit all-MiniLM-L6-v2's 128-token window.
            Preset::TextSplitter => (Strategy::TextSplitter, Unit::Embed, 120, 0),
            // chunkerify's own size for the model's tokenizer (0 = model_max_length - specials:
            // 510 for all-MiniLM-L6-v2), no overlap (semchunk's default).
            Preset::Semchunk => (Strategy::Semchunk, Unit::Embed, 0, 0),
            // DocumentSplitter's defaults: 200 words, no overlap, threshold 0. The unit only
            // changes what the panes measure.
            Preset::Haystack => (Strategy::Haystack, Unit::Embed, 200, 0),
            // RecursiveDocumentSplitter's defaults: 200 words, no overlap.
            Preset::HaystackRecursive => (Strategy::HaystackRecursive, Unit::Embed, 200, 0),
            // chonkie 1.7's defaults: 2048 characters (its "character" tokenizer), no overlap.
            Preset::Chonkie => (Strategy::Chonkie, Unit::Chars, 2048, 0),
            Preset::ChonkieTokens => (Strategy::ChonkieTokens, Unit::Chars, 2048, 0),
            // llama-index-core 0.14.25's defaults, in its default tokenizer's tokens (cl100k_base):
            // SentenceSplitter 1024/200, TokenTextSplitter 1024/20.
            Preset::LlamaIndex => (Strategy::LlamaIndex, Unit::Cl100k, 1024, 200),
            Preset::LlamaIndexTokens => (Strategy::LlamaIndexTokens, Unit::Cl100k, 1024, 20),
            Preset::LlamaIndexMarkdown => (Strategy::LlamaIndexMarkdown, Unit::Cl100k, 1024, 200),
        };
        s.strategy = strategy;
        s.unit = unit;
        s.size = size;
        s.overlap = overlap;
        if self == Preset::SpringAi {
            s.spring_ai = SpringAiParams::default();
        }
        if self == Preset::MaxMin {
            s.maxmin = MaxMinParams::default();
        }
    }
}

impl FromStr for Preset {
    type Err = crate::names::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                crate::names::UnknownName::new("preset", s, "spring-ai, langchain-chars, langchain-tokens, markdown, maxmin, text-splitter, semchunk, haystack, haystack-recursive, chonkie, chonkie-tokens, llamaindex, llamaindex-tokens or llamaindex-markdown")
            })
    }
}
