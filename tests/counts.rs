//! Exact counts: for every chunk of every strategy and unit, the embed tokens, the tail start and
//! the tail length derived from the document's tokens equal the tokenizer's own encoding of the
//! chunk text (truncation and padding off, specials included), at windows 128 and 256.

mod common;

use chunkscope_core::chunk::{ChunkSettings, DocMemo, DocView, Strategy};
use chunkscope_core::measure::MeasuredChunk;
use chunkscope_core::tokenize::{DocTokens, Unit};
use common::{tokenizer, varied_texts};

fn settings_grid() -> Vec<ChunkSettings> {
    let mut v = Vec::new();
    for (strategy, units) in [
        (
            Strategy::Fixed,
            vec![Unit::Chars, Unit::Cl100k, Unit::Embed],
        ),
        (
            Strategy::Recursive,
            vec![Unit::Chars, Unit::Cl100k, Unit::Embed],
        ),
        (Strategy::Langchain, vec![Unit::Chars, Unit::Embed]),
        (Strategy::SpringAi, vec![Unit::Cl100k]),
        (Strategy::Markdown, vec![Unit::Chars, Unit::Embed]),
        (Strategy::TextSplitter, vec![Unit::Chars, Unit::Embed]),
        (Strategy::Semchunk, vec![Unit::Chars, Unit::Embed]),
        (Strategy::Haystack, vec![Unit::Embed]),
        (Strategy::HaystackRecursive, vec![Unit::Embed]),
        (Strategy::Chonkie, vec![Unit::Chars]),
        (Strategy::ChonkieTokens, vec![Unit::Chars]),
        (Strategy::LlamaIndex, vec![Unit::Cl100k]),
        (Strategy::LlamaIndexTokens, vec![Unit::Cl100k]),
        (Strategy::LlamaIndexMarkdown, vec![Unit::Cl100k]),
    ] {
        for unit in units {
            for (size, overlap) in [(97, 13), (300, 0), (800, 0)] {
                let overlap = if matches!(strategy, Strategy::SpringAi | Strategy::Chonkie) {
                    0
                } else {
                    overlap
                };
                v.push(ChunkSettings {
                    strategy,
                    unit,
                    size,
                    overlap,
                    ..ChunkSettings::default()
                });
            }
        }
    }
    v
}

#[test]
fn derived_counts_equal_the_tokenizers_own() {
    let tok = tokenizer();
    let raw = tok.tokenizer();
    let mut checked = 0usize;
    let mut with_tail = 0usize;
    let mut replaced = 0usize;
    let mut runs = 0usize;
    for (name, text) in varied_texts() {
        let tokens = std::sync::Arc::new(DocTokens::new(&text, &tok).unwrap());
        let memo = DocMemo::default();
        let view = DocView {
            text: &text,
            tokens: &tokens,
            tok: &tok,
            memo: Some(&memo),
        };
        for s in settings_grid() {
            // haystack-recursive reads NLTK's punkt_tab at run time (scripts/test.sh sets NLTK_DATA).
            if let Err(e) = s.validate() {
                panic!("{}: {e}", s.label());
            }
            for (i, c) in s.chunker().chunk(&view).into_iter().enumerate() {
                let m = MeasuredChunk::measure(&view, i, c, s.unit);
                let chunk_text = m.text(&text).to_string();
                let own = raw.encode(chunk_text.as_str(), true).unwrap();
                let starts: Vec<usize> = own
                    .get_offsets()
                    .iter()
                    .zip(own.get_special_tokens_mask())
                    .filter(|(_, &sp)| sp == 0)
                    .map(|(o, _)| o.0)
                    .collect();
                assert_eq!(
                    m.embed_tokens(tok.specials()),
                    own.len(),
                    "{name} {} chunk {i}: {chunk_text:?}",
                    s.label()
                );
                // Every token's start, not only the window's edge (a chunk whose own text holds
                // replacement characters is measured from the document's tokens too).
                let derived: Vec<usize> = m.token_starts.iter().map(|s| s as usize).collect();
                assert_eq!(derived, starts, "{name} {} chunk {i} starts", s.label());
                replaced += usize::from(m.own_text().is_some() && chunk_text.contains('\u{fffd}'));
                // A slice keeps a run of the document's tokens, not a start per token.
                runs += usize::from(m.token_starts.reads_document());
                for k in [0, starts.len() / 2, starts.len().saturating_sub(1)] {
                    let b = starts.get(k).copied().unwrap_or(0);
                    let want = starts
                        .iter()
                        .take_while(|&&s| s <= b)
                        .count()
                        .saturating_sub(1);
                    assert_eq!(
                        m.token_starts.token_at_byte(b),
                        want,
                        "{name} chunk {i} byte {b}"
                    );
                }
                for window in [128usize, 256] {
                    let expect = (starts.len() > window - 2).then(|| starts[window - 2]);
                    let tail = m.tail(window, tok.specials());
                    assert_eq!(
                        tail.map(|t| t.start_byte),
                        expect,
                        "{name} {} chunk {i} window {window}",
                        s.label()
                    );
                    assert_eq!(
                        tail.map_or(0, |t| t.tokens),
                        starts.len().saturating_sub(window - 2)
                    );
                    with_tail += usize::from(tail.is_some());
                }
                checked += 1;
            }
        }
    }
    assert!(
        checked > 1000 && with_tail > 100 && replaced > 0 && runs > checked / 2,
        "checked {checked}, with tail {with_tail}, with replacement characters {replaced}, \
         runs of the document's tokens {runs}"
    );
    eprintln!("{checked} chunks checked, {with_tail} tails, {replaced} with U+FFFD, {runs} runs");
}

#[test]
fn special_tokens_are_counted() {
    let tok = tokenizer();
    assert_eq!(tok.specials(), 2, "all-MiniLM-L6-v2 adds [CLS] and [SEP]");
    assert_eq!(
        tok.count(&"word ".repeat(600)),
        600,
        "truncation must be off"
    );
}

/// What a document's memo keeps (Punkt's sentences, Markdown blocks) changes no chunk: one memo
/// shared by every setting of the grid, in order and again in reverse (so each setting finds it
/// filled by others), gives the chunks a fresh chunking without a memo gives.
#[test]
fn a_shared_memo_changes_no_chunk() {
    let tok = tokenizer();
    let grid = settings_grid();
    for (name, text) in varied_texts() {
        let tokens = std::sync::Arc::new(DocTokens::new(&text, &tok).unwrap());
        let memo = DocMemo::default();
        let view = |memo| DocView {
            text: &text,
            tokens: &tokens,
            tok: &tok,
            memo,
        };
        for s in grid.iter().chain(grid.iter().rev()) {
            let kept = s.chunker().chunk(&view(Some(&memo)));
            let fresh = s.chunker().chunk(&view(None));
            assert_eq!(kept, fresh, "{name} {}", s.label());
        }
    }
}

/// A document past 64 KiB (its token starts held in several runs): slices across the runs'
/// seams count and list the same tokens as the slice encoded alone, in both units.
#[test]
fn counts_past_64_kib_equal_the_slices_own() {
    let tok = tokenizer();
    let text: String = varied_texts()
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join("\n\n")
        .repeat(4);
    let text = text.repeat((200_000 / text.len().max(1)).max(1) + 1);
    assert!(text.len() > 3 * 65_536, "{} bytes", text.len());
    let tokens = std::sync::Arc::new(DocTokens::new(&text, &tok).unwrap());
    let mut checked = 0;
    for seam in [65_536usize, 131_072, 196_608] {
        for (back, ahead) in [(10, 10), (700, 3), (3, 2_000), (5_000, 5_000)] {
            let s = chunkscope_core::text::floor_char(&text, seam - back);
            let e = chunkscope_core::text::ceil_char(&text, seam + ahead);
            let own = common::own_spans(&tok, &text, s, e);
            assert_eq!(tokens.embed_spans_in(&text, s, e, &tok), own, "{s}..{e}");
            assert_eq!(tokens.embed_count_in(&text, s, e, &tok), own.len());
            assert_eq!(
                tokens.cl100k_count_in(&text, s, e),
                common::tiktoken_count(&text[s..e])
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 12);
}

/// Fragments (words cut by a slice's boundary) are remembered per tokenizer: with two vocabularies
/// in one thread, every slice of a text counts and lists what each tokenizer gives the slice
/// encoded alone.
#[test]
fn remembered_fragments_belong_to_their_tokenizer() {
    let minilm = tokenizer();
    let tiny = chunkscope_core::tokenize::EmbedTokenizer::from_file(
        &common::repo().join("tests/fixtures/tiny/bert-relu/tokenizer.json"),
    )
    .unwrap();
    let text = "unbelievably, tokenization of 2010年的 embeddings";
    let bounds: Vec<usize> = (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    let mut differ = 0;
    for tok in [&*minilm, &tiny, &*minilm, &tiny] {
        let tokens = std::sync::Arc::new(DocTokens::new(text, tok).unwrap());
        for (k, &s) in bounds.iter().enumerate() {
            // Every end from one start, the start found once (text-splitter's sizes).
            let from = tokens
                .embed_start(text, s, tok)
                .expect("WordPiece is word-local");
            for &e in &bounds[k + 1..] {
                let own = common::own_spans(tok, text, s, e);
                assert_eq!(tokens.embed_spans_in(text, s, e, tok), own, "{s}..{e}");
                assert_eq!(
                    tokens.embed_count_in(text, s, e, tok),
                    own.len(),
                    "{s}..{e}"
                );
                assert_eq!(
                    tokens.embed_count_from(text, &from, e, tok),
                    own.len(),
                    "{s}..{e} from its start"
                );
                if tok.spans(&text[s..e]).unwrap().len() != minilm.spans(&text[s..e]).unwrap().len()
                {
                    differ += 1;
                }
            }
        }
    }
    assert!(
        differ > 100,
        "the two vocabularies differ on {differ} slices only"
    );
}
