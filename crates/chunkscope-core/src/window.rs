//! What the embedder reads: the window in force and where each chunk's invisible tail begins.

use std::fmt;
use std::str::FromStr;

/// How the user asked for the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSpec {
    /// tokenizer.json's truncation length (128 for all-MiniLM-L6-v2).
    Auto,
    /// sentence_bert_config.json's max_seq_length (256).
    St,
    /// config.json's max_position_embeddings (512).
    Max,
    /// An explicit number of tokens, specials included.
    Tokens(usize),
}

/// Why a window setting was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowSpecError {
    /// A number of tokens that the special tokens alone fill.
    #[error("window {tokens} leaves no room for content: it must be > 2 ([CLS] and [SEP] count)")]
    TooSmall { tokens: usize },
    #[error(transparent)]
    Unknown(#[from] crate::names::UnknownName),
}

impl FromStr for WindowSpec {
    type Err = WindowSpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "auto" => Ok(WindowSpec::Auto),
            "st" | "sentence-transformers" => Ok(WindowSpec::St),
            "max" => Ok(WindowSpec::Max),
            n => match n.parse::<usize>() {
                Ok(tokens @ 0..=2) => Err(WindowSpecError::TooSmall { tokens }),
                Ok(v) => Ok(WindowSpec::Tokens(v)),
                Err(_) => Err(crate::names::UnknownName::new(
                    "window",
                    n,
                    "auto, st, max or a number of tokens",
                )
                .into()),
            },
        }
    }
}

impl fmt::Display for WindowSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WindowSpec::Auto => f.write_str("auto"),
            WindowSpec::St => f.write_str("st"),
            WindowSpec::Max => f.write_str("max"),
            WindowSpec::Tokens(n) => write!(f, "{n}"),
        }
    }
}

/// The three windows a model folder declares (any may be missing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelWindows {
    pub tokenizer_json: Option<usize>,
    /// The window sentence-transformers reads, and which file gave it.
    pub sentence_transformers: Option<usize>,
    pub st_source: StWindowSource,
    pub max_positions: Option<usize>,
}

/// Where sentence-transformers takes its window from: `max_seq_length` in
/// sentence_bert_config.json when the folder has it (sentence-transformers 2-3 wrote it), else
/// the tokenizer's `model_max_length` (tokenizer_config.json, where 5.x and 6.x keep it) capped
/// at config.json's positions, else those positions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StWindowSource {
    #[default]
    SentenceBertConfig,
    TokenizerConfig,
    Positions,
}

impl fmt::Display for StWindowSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StWindowSource::SentenceBertConfig => "sentence_bert_config max_seq_length",
            StWindowSource::TokenizerConfig => "tokenizer_config model_max_length",
            StWindowSource::Positions => "config.json positions (sentence-transformers' cap)",
        })
    }
}

/// The window in force and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Tokens the model reads, specials included.
    pub tokens: usize,
    pub source: String,
    /// True when the embedder refuses a longer input instead of truncating it (an embedding
    /// server without truncation): an overflowing chunk is rejected, not given a tail.
    pub rejects: bool,
}

impl ModelWindows {
    /// Resolve a spec against what the model declares. Falls back along auto -> st -> max -> 512
    /// when a file is missing, and says so in `source`. A window past the model's positions is
    /// clamped to them (the network reads no further), with a note in `source`: the screen, the
    /// headless commands and the embedder all take their window from here.
    pub fn resolve(&self, spec: WindowSpec) -> Window {
        let w = self.resolve_unclamped(spec);
        match self.max_positions {
            Some(max) if w.tokens > max => Window {
                rejects: false,
                tokens: max,
                source: format!(
                    "{} asked {}, clamped to the model's {max} positions",
                    w.source, w.tokens
                ),
            },
            _ => w,
        }
    }

    fn resolve_unclamped(&self, spec: WindowSpec) -> Window {
        let pick = |v: Option<usize>, name: &str| v.map(|t| (t, name.to_string()));
        let chain = [
            pick(self.tokenizer_json, "tokenizer.json truncation"),
            pick(self.sentence_transformers, &self.st_source.to_string()),
            pick(self.max_positions, "config.json max_position_embeddings"),
        ];
        let from = match spec {
            WindowSpec::Tokens(n) => {
                return Window {
                    tokens: n,
                    source: "set by user".into(),
                    rejects: false,
                }
            }
            WindowSpec::Auto => 0,
            WindowSpec::St => 1,
            WindowSpec::Max => 2,
        };
        for (i, c) in chain.iter().enumerate().skip(from) {
            if let Some((t, name)) = c {
                let source = if i == from {
                    name.clone()
                } else {
                    format!("{name}, as the asked-for file is missing")
                };
                return Window {
                    tokens: *t,
                    source,
                    rejects: false,
                };
            }
        }
        Window {
            tokens: 512,
            source: "BERT default, the model declares none".into(),
            rejects: false,
        }
    }

    /// The next window in the w-key cycle: auto, st, max, then back.
    pub fn cycle(spec: WindowSpec) -> WindowSpec {
        match spec {
            WindowSpec::Auto => WindowSpec::St,
            WindowSpec::St => WindowSpec::Max,
            WindowSpec::Max | WindowSpec::Tokens(_) => WindowSpec::Auto,
        }
    }
}

/// The invisible tail of one chunk: what lies past the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvisibleTail {
    /// Index of the first content token the model never reads.
    pub first_token: usize,
    /// Byte offset, relative to the chunk text, where that token starts.
    pub start_byte: usize,
    /// Content tokens past the window.
    pub tokens: usize,
}

/// Where the tail of a chunk begins, given the start byte (relative to the chunk) of each content
/// token, the window in force and the specials the model adds. `None` when the model reads it all.
pub fn invisible_tail(
    token_starts: &crate::measure::TokenStarts,
    window: usize,
    specials: usize,
) -> Option<InvisibleTail> {
    let readable = window.saturating_sub(specials);
    Some(InvisibleTail {
        first_token: readable,
        start_byte: token_starts.get(readable)? as usize,
        tokens: token_starts.len() - readable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specials_count_against_the_window() {
        let starts = |n: u32| {
            (0..n)
                .map(|i| i * 2)
                .collect::<crate::measure::TokenStarts>()
        };
        let t = invisible_tail(&starts(130), 128, 2).unwrap();
        assert_eq!(t.first_token, 126);
        assert_eq!(t.start_byte, 252);
        assert_eq!(t.tokens, 4);
        assert!(invisible_tail(&starts(126), 128, 2).is_none());
        assert!(invisible_tail(&starts(127), 128, 2).is_some());
    }

    #[test]
    fn resolve_windows() {
        let w = ModelWindows {
            tokenizer_json: Some(128),
            sentence_transformers: Some(256),
            st_source: StWindowSource::SentenceBertConfig,
            max_positions: Some(512),
        };
        assert_eq!(w.resolve(WindowSpec::Auto).tokens, 128);
        assert_eq!(w.resolve(WindowSpec::St).tokens, 256);
        assert_eq!(w.resolve(WindowSpec::Max).tokens, 512);
        assert_eq!(w.resolve(WindowSpec::Tokens(300)).tokens, 300);
        let partial = ModelWindows {
            tokenizer_json: None,
            ..w
        };
        assert_eq!(partial.resolve(WindowSpec::Auto).tokens, 256);
        assert!(partial.resolve(WindowSpec::Auto).source.contains("missing"));
        // Past the positions the network reads no further: clamped, and said.
        let huge = w.resolve(WindowSpec::Tokens(100_000));
        assert_eq!(huge.tokens, 512);
        assert!(huge.source.contains("clamped"), "{}", huge.source);
        let st_past = ModelWindows {
            sentence_transformers: Some(1024),
            ..w
        };
        assert_eq!(st_past.resolve(WindowSpec::St).tokens, 512);
    }

    #[test]
    fn parse_specs() {
        assert_eq!("auto".parse::<WindowSpec>(), Ok(WindowSpec::Auto));
        assert_eq!("256".parse::<WindowSpec>(), Ok(WindowSpec::Tokens(256)));
        assert_eq!(
            "2".parse::<WindowSpec>(),
            Err(WindowSpecError::TooSmall { tokens: 2 })
        );
        assert!(matches!(
            "huge".parse::<WindowSpec>(),
            Err(WindowSpecError::Unknown(crate::names::UnknownName {
                what: "window",
                ..
            }))
        ));
        assert!("huge"
            .parse::<WindowSpec>()
            .unwrap_err()
            .to_string()
            .contains("huge"));
    }
}
