//! Property tests of the chunkers on arbitrary strings: ordered chunks, byte ranges on character
//! boundaries, every non-space character covered, sizes within the limit where the text allows,
//! and no panic.

mod common;

use chunkscope_core::chunk::{ChunkSettings, Chunker, DocMemo, DocView, Strategy as Splitter};
use chunkscope_core::tokenize::{DocTokens, Unit};
use proptest::prelude::*;

fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,400}",
        "[a-zA-Z .,!?\\n]{0,600}",
        "([a-z]{1,12}[ \\n.]{1,3}){0,120}",
        "[\u{4e00}-\u{4e2f}😀é\u{1f} \\n\\t.]{0,300}",
        "(# [a-z]{1,8}\\n\\n|[a-z ]{1,40}\\n\\n|\\| a \\| b \\|\\n\\|---\\|---\\|\\n\\| [a-z]{1,5} \\| [a-z]{1,5} \\|\\n\\n|```\\n[a-z ]{0,30}\\n```\\n){0,12}",
    ]
}

fn settings_strategy() -> impl Strategy<Value = ChunkSettings> {
    (0usize..14, 0usize..3, 1usize..120, 0usize..100).prop_map(|(s, u, size, ov)| {
        let strategy = [
            Splitter::Fixed,
            Splitter::Recursive,
            Splitter::Langchain,
            Splitter::SpringAi,
            Splitter::Markdown,
            Splitter::TextSplitter,
            Splitter::Semchunk,
            Splitter::Haystack,
            Splitter::HaystackRecursive,
            Splitter::Chonkie,
            Splitter::ChonkieTokens,
            Splitter::LlamaIndex,
            Splitter::LlamaIndexTokens,
            Splitter::LlamaIndexMarkdown,
        ][s];
        let unit = if strategy == Splitter::SpringAi {
            Unit::Cl100k
        } else {
            Unit::ALL[u]
        };
        let overlap = if matches!(strategy, Splitter::SpringAi | Splitter::Chonkie) {
            0
        } else {
            ov % size
        };
        ChunkSettings {
            strategy,
            unit,
            size,
            overlap,
            ..ChunkSettings::default()
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn chunkers_hold_their_invariants(text in text_strategy(), s in settings_strategy()) {
        let tok = common::tokenizer();
        let tokens = std::sync::Arc::new(DocTokens::new(&text, &tok).unwrap());
        // One memo across every setting, as the engine keeps it across knob turns.
        let memo = DocMemo::default();
        let view = DocView { text: &text, tokens: &tokens, tok: &tok, memo: Some(&memo) };
        // haystack-recursive reads NLTK's punkt_tab at run time (scripts/test.sh sets NLTK_DATA).
        if s.strategy == Splitter::HaystackRecursive {
            let valid = s.validate();
            prop_assert!(valid.is_ok(), "{}", valid.unwrap_err());
        }
        let chunks = s.chunker().chunk(&view);
        let mut last_start = 0;
        let mut covered = vec![false; text.len()];
        for c in &chunks {
            prop_assert!(c.start <= c.end && c.end <= text.len());
            prop_assert!(text.is_char_boundary(c.start) && text.is_char_boundary(c.end));
            prop_assert!(c.start >= last_start, "chunks out of order");
            last_start = c.start;
            covered[c.start..c.end].iter_mut().for_each(|b| *b = true);
            // A Markdown table row written with its column names may exceed the size on its own;
            // text-splitter never cuts a grapheme (a base and its combining marks); haystack
            // counts words; semchunk's overlapped chunks also span the whitespace it dropped
            // between their sub-chunks (as semchunk 4.1 does).
            let overlapped_semchunk = s.strategy == Splitter::Semchunk && s.overlap > 0;
            let sized = !(matches!(
                s.strategy,
                Splitter::SpringAi
                    | Splitter::TextSplitter
                    | Splitter::Haystack
                    | Splitter::HaystackRecursive
            ) || overlapped_semchunk);
            // chonkie counts characters whatever the unit.
            let chars = s.unit == Unit::Chars
                || matches!(s.strategy, Splitter::Chonkie | Splitter::ChonkieTokens);
            if chars && sized && c.text.is_none() {
                prop_assert!(c.text(&text).chars().count() <= s.size, "chunk over {} chars", s.size);
            }
        }
        // Spring AI may skip text where re-encoding a cut differs (as the Java does); the others
        // must cover every non-space character. Fixed windows over tokens skip what the
        // tokenizer drops (control characters).
        // LlamaIndex's offsets are where it finds each chunk's text (the first occurrence past
        // the previous chunk's start): an identical earlier passage takes the offset and the
        // chunk's own passage may stay uncovered; a Markdown heading LlamaIndex rebuilt
        // ("#\tTitle" as "# Title") has no offset at all.
        let must_cover = match s.strategy {
            Splitter::SpringAi
            | Splitter::LlamaIndex
            | Splitter::LlamaIndexTokens
            | Splitter::LlamaIndexMarkdown => false,
            Splitter::Fixed => s.unit != Unit::Embed,
            _ => true,
        };
        if must_cover {
            for (i, ch) in text.char_indices() {
                if !chunkscope_core::text::is_python_space(ch) {
                    prop_assert!(covered[i], "char {ch:?} at byte {i} in no chunk ({})", s.label());
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// The offset shortcut: tokens of any slice, derived from the document's tokens, equal the
    /// tokenizer's own encoding of that slice alone.
    #[test]
    fn slice_tokens_equal_own_encoding(text in text_strategy(), a in 0usize..10_000, b in 0usize..10_000) {
        let tok = common::tokenizer();
        let tokens = std::sync::Arc::new(DocTokens::new(&text, &tok).unwrap());
        let (mut s, mut e) = (a % (text.len() + 1), b % (text.len() + 1));
        if s > e { std::mem::swap(&mut s, &mut e); }
        let s = chunkscope_core::text::floor_char(&text, s);
        let e = chunkscope_core::text::ceil_char(&text, e);
        let derived = tokens.embed_spans_in(&text, s, e, &tok);
        let own = common::own_spans(&tok, &text, s, e);
        // The counts skip over whole words (embed) and pieces (cl100k) without listing them.
        prop_assert_eq!(tokens.embed_count_in(&text, s, e, &tok), own.len());
        // Several ends from one start, the start found once (text-splitter's sizes).
        if let Some(from) = tokens.embed_start(&text, s, &tok) {
            prop_assert_eq!(tokens.embed_count_from(&text, &from, e, &tok), own.len());
            let m = chunkscope_core::text::ceil_char(&text, s + (e - s) / 2);
            prop_assert_eq!(
                tokens.embed_count_from(&text, &from, m, &tok),
                common::own_spans(&tok, &text, s, m).len()
            );
        }
        prop_assert_eq!(
            tokens.cl100k_count_in(&text, s, e),
            common::tiktoken_count(&text[s..e])
        );
        prop_assert_eq!(derived, own, "slice {:?}", &text[s..e]);
    }
}

/// The crate as it is: trimming each candidate inside, sized by counting the candidate alone.
fn text_splitter_as_is(
    text: &str,
    unit: Unit,
    size: usize,
    overlap: usize,
    markdown: bool,
) -> Vec<(usize, usize)> {
    use text_splitter::{ChunkConfig, ChunkSizer, MarkdownSplitter, TextSplitter};
    struct Alone(Unit);
    impl ChunkSizer for Alone {
        fn size(&self, chunk: &str) -> usize {
            chunkscope_core::tokenize::count(self.0, chunk, &common::tokenizer())
        }
    }
    let config = ChunkConfig::new(size)
        .with_sizer(Alone(unit))
        .with_overlap(overlap)
        .unwrap();
    let ends = |(at, s): (usize, &str)| (at, at + s.len());
    if markdown {
        MarkdownSplitter::new(config)
            .chunk_indices(text)
            .map(ends)
            .collect()
    } else {
        TextSplitter::new(config)
            .chunk_indices(text)
            .map(ends)
            .collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The text-splitter preset trims outside the crate (faster) and counts slices from the
    /// document's tokens: its chunks equal the crate's own, trimming inside, in every unit.
    #[test]
    fn text_splitter_trims_as_the_crate_does(
        text in prop_oneof![
            text_strategy(),
            "([ \t]{0,3}[a-z]{1,8}[ \t]{0,2}(\r?\n){0,3}){0,80}",
            "(\n{0,2}    [a-z =();]{1,30}\n|- [a-z ]{1,20}\n|[a-z .]{1,60}\r\n){0,30}",
        ],
        unit in 0usize..3,
        size in 1usize..80,
        overlap in 0usize..40,
        markdown in any::<bool>(),
        kept in any::<bool>(),
    ) {
        let unit = Unit::ALL[unit];
        let overlap = overlap % size;
        let tok = common::tokenizer();
        let tokens = std::sync::Arc::new(DocTokens::new(&text, &tok).unwrap());
        // With and without what the engine keeps per document (the sentence boundaries).
        let memo = DocMemo::default();
        let view = DocView { text: &text, tokens: &tokens, tok: &tok, memo: kept.then_some(&memo) };
        let ours: Vec<(usize, usize)> = chunkscope_core::chunk::TextSplitterChunker {
            unit,
            size,
            overlap,
            markdown,
        }
        .chunk(&view)
        .iter()
        .map(|c| (c.start, c.end))
        .collect();
        prop_assert_eq!(ours, text_splitter_as_is(&text, unit, size, overlap, markdown));
    }
}

/// A character that alone counts more tokens than semchunk's size is a chunk of its own (found by
/// the property test: semchunk recursed on it until the stack overflowed).
#[test]
fn semchunk_keeps_a_character_over_the_size_whole() {
    let tok = common::tokenizer();
    let text = "a\u{b27fd}\u{1b}b 湑 c";
    let tokens = std::sync::Arc::new(DocTokens::new(text, &tok).unwrap());
    let view = DocView {
        text,
        tokens: &tokens,
        tok: &tok,
        memo: None,
    };
    for overlap in [0, 1] {
        let s = ChunkSettings {
            strategy: Splitter::Semchunk,
            unit: Unit::Cl100k,
            size: 2,
            overlap,
            ..ChunkSettings::default()
        };
        let chunks = s.chunker().chunk(&view);
        let odd = text.find('\u{b27fd}').unwrap();
        let alone = chunks.iter().any(|c| c.start == odd && c.end == odd + 4);
        let covered = chunks.iter().any(|c| c.start <= odd && c.end >= odd + 4);
        assert!(covered && (alone || overlap > 0), "{chunks:?}");
    }
}

/// The text-splitter preset is our reimplementation of the crate: on real documents in several
/// languages and scripts (the word segmenter's dictionary runs for Chinese, Japanese and Thai
/// among ASCII), in every unit, with and without overlap, its chunks are the crate's.
#[test]
fn text_splitter_equals_the_crate_on_varied_texts() {
    let tok = common::tokenizer();
    let mut texts = common::varied_texts();
    let mixed = "RAG は検索拡張生成です。ภาษาไทยเป็นภาษาที่มีวรรณยุกต์ the index (索引) holds 向量 and text. \
                 Chunk 800 tokens; 模型只读前 128 个。\n\n## Tail\nภาษาลาวແລະ ខ្មែរ mixed with words.\r\n\r\n";
    texts.push(("mixed scripts".into(), mixed.repeat(40)));
    let settings = [
        (Unit::Embed, 120, 0),
        (Unit::Embed, 24, 7),
        (Unit::Chars, 300, 50),
        (Unit::Chars, 9, 0),
        (Unit::Cl100k, 64, 0),
    ];
    for (name, text) in &texts {
        let tokens = std::sync::Arc::new(DocTokens::new(text, &tok).unwrap());
        // Without what the engine keeps per document, and with it, kept across the settings as
        // the engine keeps it across knob turns.
        let memo = DocMemo::default();
        let views = [None, Some(&memo)].map(|memo| DocView {
            text,
            tokens: &tokens,
            tok: &tok,
            memo,
        });
        for ((unit, size, overlap), view) in settings
            .into_iter()
            .flat_map(|s| views.iter().map(move |v| (s, v)))
        {
            for markdown in [false, true] {
                let ours: Vec<(usize, usize)> = chunkscope_core::chunk::TextSplitterChunker {
                    unit,
                    size,
                    overlap,
                    markdown,
                }
                .chunk(view)
                .iter()
                .map(|c| (c.start, c.end))
                .collect();
                let theirs = text_splitter_as_is(text, unit, size, overlap, markdown);
                let kept = view.memo.is_some();
                assert!(
                    ours == theirs,
                    "{name}: {unit} {size}/{overlap} markdown {markdown} kept {kept}: {} chunks, the crate {}; first differing: {:?}",
                    ours.len(),
                    theirs.len(),
                    ours.iter().zip(&theirs).find(|(a, b)| a != b)
                );
            }
        }
    }
}
