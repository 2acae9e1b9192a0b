//! Spring AI 2.0's TokenTextSplitter, reproduced chunk text for chunk text.
//!
//! It counts cl100k_base tokens: take a window of `size` tokens, decode it (a window cut inside a
//! multi-byte character decodes to U+FFFD), skip it if blank, back off to the last punctuation mark
//! only when more than `size` tokens remain and the mark lies past `min_chunk_size_chars` UTF-16
//! units, trim as Java does, keep the chunk if longer than `min_chunk_length_to_embed` UTF-16 units,
//! then advance by the number of tokens the *re-encoded* cut text has (so chunks can overlap or skip
//! a token where the re-encoding differs). There is no overlap otherwise. A window that is blank is
//! skipped without counting towards `max_num_chunks`; a dropped short chunk still counts.
//! One deliberate difference: text holding a special-token string such as `<|endoftext|>` makes the
//! Java throw; we encode it as ordinary text.

use std::borrow::Cow;

use super::{Chunk, Chunker, DocView};
use crate::text::{ceil_char, floor_char, is_java_trim, utf16_len};
use crate::tokenize::cl100k_pieces::forced_spots;
use crate::tokenize::{cl100k, Cl100kTokens};

#[derive(Debug, Clone, PartialEq)]
pub struct SpringAiParams {
    pub min_chunk_size_chars: usize,
    pub min_chunk_length_to_embed: usize,
    pub max_num_chunks: usize,
    pub keep_separator: bool,
    pub punctuation: Vec<char>,
}

impl Default for SpringAiParams {
    fn default() -> Self {
        SpringAiParams {
            min_chunk_size_chars: 350,
            min_chunk_length_to_embed: 5,
            max_num_chunks: 10_000,
            keep_separator: true,
            punctuation: vec!['.', '?', '!', '\n'],
        }
    }
}

pub struct SpringAi {
    pub size: usize,
    pub params: SpringAiParams,
}

impl Chunker for SpringAi {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        self.split(doc.text, &doc.tokens.cl100k, Advance::Fast)
    }

    /// Windows are cut one after another from the start: the first chunks need only theirs.
    fn chunk_first(&self, doc: &DocView, n: usize) -> Option<(Vec<Chunk>, bool)> {
        Some(self.split_up_to(doc.text, &doc.tokens.cl100k, Advance::Fast, n))
    }
}

/// How `split` finds the window text and how far each cut moves the cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Advance {
    /// Decode the window's token ids and re-encode every cut text in full (the reference).
    #[cfg_attr(not(test), allow(dead_code))]
    Full,
    /// Slice the window from the document and re-encode only the cut's ends (`cut_tokens`).
    Fast,
}

impl SpringAi {
    /// The splitter over a document's cl100k tokens.
    fn split(&self, text: &str, tokens: &Cl100kTokens, how: Advance) -> Vec<Chunk> {
        self.split_up_to(text, tokens, how, usize::MAX).0
    }

    /// `split`, stopping once `limit` chunks are out, and whether they are all of them.
    fn split_up_to(
        &self,
        text: &str,
        tokens: &Cl100kTokens,
        how: Advance,
        limit: usize,
    ) -> (Vec<Chunk>, bool) {
        let bpe = cl100k();
        // The reference decodes the window's ids, encoded afresh.
        let ids = match how {
            Advance::Full => bpe.encode_ordinary(text),
            Advance::Fast => Vec::new(),
        };
        let n = tokens.len();
        let byte_at = |i: usize| tokens.start(i).unwrap_or(text.len());
        // The tokens of a document spell it, so a window's bytes are a slice of the text.
        let window_of = |from: usize, to: usize| match how {
            Advance::Full => Cow::Owned(
                String::from_utf8_lossy(&bpe.decode_bytes(&ids[from..to]).unwrap_or_default())
                    .into_owned(),
            ),
            Advance::Fast => String::from_utf8_lossy(&text.as_bytes()[byte_at(from)..byte_at(to)]),
        };
        let p = &self.params;
        let mut out = Vec::new();
        let mut cur = 0usize;
        let mut made = 0usize;
        while cur < n && made < p.max_num_chunks {
            if out.len() >= limit {
                return (out, false);
            }
            let end = (cur + self.size).min(n);
            let window = window_of(cur, end);
            if window.trim_matches(is_java_trim).is_empty() {
                cur = end;
                continue;
            }
            let mut cut = window.len();
            if n - cur > self.size {
                if let Some(at) = window.rfind(|c| p.punctuation.contains(&c)) {
                    if utf16_len(&window[..at]) > p.min_chunk_size_chars {
                        cut = at + window[at..].chars().next().map_or(1, char::len_utf8);
                    }
                }
            }
            let cut_text = &window[..cut];
            let chunk = self.finish(text, byte_at(cur), cut_text, !p.keep_separator);
            if let Some(c) = chunk {
                out.push(c);
            }
            let advance = match how {
                Advance::Full => bpe.encode_ordinary(cut_text).len(),
                Advance::Fast => cut_tokens(text, tokens, (cur, end), &window, cut),
            };
            cur += advance.max(1);
            made += 1;
        }
        if cur < n {
            // What is left after max_num_chunks becomes one last chunk, newlines turned into spaces
            // whatever keep_separator says (as the Java does).
            let rest = window_of(cur, n);
            if let Some(c) = self.finish(text, byte_at(cur), &rest, true) {
                out.push(c);
            }
        }
        (out, true)
    }

    /// Trim and filter one cut window that began at document byte `at`.
    fn finish(
        &self,
        doc: &str,
        at: usize,
        cut_text: &str,
        newlines_to_spaces: bool,
    ) -> Option<Chunk> {
        let replaced;
        let shaped: &str = if !newlines_to_spaces {
            cut_text
        } else {
            replaced = cut_text.replace('\n', " ");
            &replaced
        };
        let trimmed = shaped.trim_matches(is_java_trim);
        if utf16_len(trimmed) <= self.params.min_chunk_length_to_embed {
            return None;
        }
        let lead = shaped.len() - shaped.trim_start_matches(is_java_trim).len();
        let start = at + lead;
        let end = start + trimmed.len();
        let verbatim = end <= doc.len()
            && doc.is_char_boundary(start)
            && doc.is_char_boundary(end)
            && &doc[start..end] == trimmed;
        Some(if verbatim {
            Chunk::slice(start, end)
        } else {
            let s = floor_char(doc, start.min(doc.len()));
            Chunk {
                start: s,
                end: ceil_char(doc, end.min(doc.len())).max(s),
                text: Some(trimmed.into()),
                heading: None,
            }
        })
    }
}

// Counting a cut without re-encoding all of it: the cut text agrees with the document between
// the U+FFFDs a window cut inside characters decodes to, so `tokenize::cl100k_pieces` counts it
// from the document's tokens and the cut's two ends (see there why that is exact). Where no
// forced piece boundaries exist, or a window decoded inside a character does not have the
// expected shape, the cut is encoded in full.

/// `encode_ordinary(&window[..cut]).len()` for the window of tokens `cur..end` of `text`.
fn cut_tokens(
    text: &str,
    tokens: &Cl100kTokens,
    (cur, end): (usize, usize),
    window: &str,
    cut: usize,
) -> usize {
    fast_cut_tokens(text, tokens, (cur, end), window, cut)
        .unwrap_or_else(|| cl100k().encode_ordinary(&window[..cut]).len())
}

/// The count of `cut_tokens` from the document's tokens, or None where it cannot be shown exact.
fn fast_cut_tokens(
    text: &str,
    tokens: &Cl100kTokens,
    (cur, end): (usize, usize),
    window: &str,
    cut: usize,
) -> Option<usize> {
    let byte_at = |i: usize| tokens.start(i).unwrap_or(text.len());
    let (b0, b1) = (byte_at(cur), byte_at(end));
    // The window is text[a..b] between the U+FFFDs that stray bytes at either end decode to: one
    // per continuation byte in front, one for a truncated character at the back.
    let (a, b) = (ceil_char(text, b0), floor_char(text, b1));
    if a >= b {
        return None;
    }
    let pre = 3 * (a - b0);
    let post = if b < b1 { 3 } else { 0 };
    if window.len() != pre + (b - a) + post
        || window.as_bytes().get(pre..pre + (b - a))? != &text.as_bytes()[a..b]
        || cut <= pre
    {
        return None;
    }
    // The cut text agrees with the document on text[a..agreed].
    let agreed = a + (cut.min(pre + (b - a)) - pre);
    let (g1, g2) = forced_spots(text, a, agreed)?;
    let token_at = |g: usize| tokens.token_at(g, cur, end);
    let (t1, t2) = (token_at(g1)?, token_at(g2)?);
    let bpe = cl100k();
    let (c1, c2) = (pre + (g1 - a), pre + (g2 - a));
    let head = bpe.encode_ordinary(&window[..c1]).len();
    let tail = bpe.encode_ordinary(&window[c2..cut]).len();
    Some(head + (t2 - t1) + tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// cl100k tokens of `text`, as `DocTokens` holds them.
    fn tokens(text: &str) -> Cl100kTokens {
        Cl100kTokens::new(text)
    }

    /// Pieces where the regex, the cut and the window decoding disagree most easily.
    const PIECES: &[&str] = &[
        " ",
        "  ",
        "   ",
        "\t",
        " \t ",
        "\n",
        "\n\n",
        "\r\n",
        "\r",
        " \n",
        "\n ",
        "  \n\n  ",
        "\u{a0}",
        "\u{3000}",
        "\u{2028}",
        "\u{b}",
        "\u{c}",
        "\u{85}",
        "'s",
        "'S",
        "'ll",
        "'LL",
        "'ve",
        "'re",
        "'d",
        "'m",
        "'t",
        "'",
        "\"",
        "1",
        "12",
        "123",
        "1234",
        "12345",
        "\u{663}",
        "\u{216B}",
        "\u{BD}",
        "\u{FF11}",
        "a",
        "an",
        "Word",
        "hello",
        "\u{17F}",
        "\u{E9}",
        "e\u{301}",
        "\u{DF}",
        "\u{3A9}\u{3BC}\u{3AD}\u{3B3}\u{3B1}",
        "\u{43F}\u{440}\u{438}",
        "\u{4E2D}",
        "\u{4E2D}\u{6587}\u{5B57}",
        "\u{3072}\u{3089}",
        "\u{D55C}\u{AD6D}",
        "\u{1F600}",
        "\u{1F44D}\u{1F3FD}",
        "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}",
        "\u{1F1EB}\u{1F1F7}",
        "\u{FFFD}",
        ".",
        "..",
        "...",
        "?",
        "!",
        "?!",
        ",",
        ";",
        "\u{2014}",
        "\u{2026}",
        "\u{FF0C}",
        "\u{3002}",
        "\u{300C}",
        "#",
        "##",
        "```",
        "->",
        "$",
        "%",
        "\u{1f}",
        "\u{0}",
        "\u{7f}",
        "<|endoftext|>",
        "_",
        "__init__",
        "x1",
        "1x",
        "a.b",
        " .",
        ". ",
        "!\n",
        ".\n\n",
        " 's",
        " 123",
        "\t!",
        " !!",
        "!!\r\n",
    ];

    fn hard_text() -> impl Strategy<Value = String> {
        let part = prop_oneof![
            6 => prop::sample::select(PIECES).prop_map(str::to_string),
            2 => "[a-z]{1,8}",
            1 => any::<char>().prop_map(String::from),
        ];
        prop::collection::vec(part, 0..160).prop_map(|v| v.concat())
    }

    fn params() -> impl Strategy<Value = SpringAiParams> {
        let punct: Vec<Vec<char>> = vec![
            SpringAiParams::default().punctuation,
            vec!['.'],
            vec![' '],
            vec!['\n', '\r'],
            vec!['\u{FFFD}', '.'],
            vec!['\'', '1', '\t'],
            vec!['\u{4E2D}', '\u{3002}', '\u{1F600}'],
        ];
        (
            0usize..40,
            0usize..8,
            prop_oneof![1usize..6, Just(10_000usize)],
            any::<bool>(),
            prop::sample::select(punct),
        )
            .prop_map(|(chars, embed, max, keep, punctuation)| SpringAiParams {
                min_chunk_size_chars: chars,
                min_chunk_length_to_embed: embed,
                max_num_chunks: max,
                keep_separator: keep,
                punctuation,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(600))]

        #[test]
        fn spring_fast_chunks_equal_full_chunks(
            text in hard_text(),
            size in 1usize..64,
            params in params(),
        ) {
            let toks = tokens(&text);
            let s = SpringAi { size, params };
            let full = s.split(&text, &toks, Advance::Full);
            let fast = s.split(&text, &toks, Advance::Fast);
            prop_assert_eq!(fast, full);
        }

        #[test]
        fn spring_cut_count_equals_reencode(
            text in hard_text(),
            size in 1usize..64,
            picks in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>()), 1..12),
        ) {
            let toks = tokens(&text);
            let ids = cl100k().encode_ordinary(&text);
            prop_assume!(!ids.is_empty());
            for (w, c) in picks {
                let cur = w.index(ids.len());
                let end = (cur + size).min(ids.len());
                let bytes = cl100k().decode_bytes(&ids[cur..end]).unwrap();
                let window = String::from_utf8_lossy(&bytes);
                let cuts: Vec<usize> = window.char_indices().map(|(i, ch)| i + ch.len_utf8()).collect();
                let cut = cuts[c.index(cuts.len())];
                prop_assert_eq!(
                    cut_tokens(&text, &toks, (cur, end), &window, cut),
                    cl100k().encode_ordinary(&window[..cut]).len(),
                    "window {}..{} cut {} of {:?}", cur, end, cut, window
                );
            }
        }
    }

    /// Every window and every cut of texts built around the hard cases.
    #[test]
    fn spring_cut_count_equals_reencode_everywhere() {
        let texts = [
            "It's the cat's toy; they'll say we've 1234567 items.\n\n  Next   line\r\n\tx",
            "a  1 b   \n\n  c!!\n\n\n d...  ?!  'LL 'S\u{a0}\u{a0}word  \u{3000}x 12 345",
            "\u{4E2D}\u{6587}\u{FF0C}\u{5B57}\u{3002}\u{1F600}\u{1F600} emoji \u{1F44D}\u{1F3FD}! \
             caf\u{E9} na\u{EF}ve \u{3A9}\u{3BC}\u{3AD}\u{3B3}\u{3B1} \u{43F}\u{440}\u{438} 3.14",
            "end with spaces    ",
            "end with newlines\n\n\n",
            "x\u{FFFD}y \u{FFFD}\u{FFFD} 'sx 've1 're. 123abc abc123 _x_ $5.00 -> a->b",
        ];
        let bpe = cl100k();
        let mut fast = 0usize;
        let mut total = 0usize;
        for text in texts {
            let toks = tokens(text);
            let ids = bpe.encode_ordinary(text);
            for size in [1, 2, 3, 5, 8, 13, 40] {
                for cur in 0..ids.len() {
                    let end = (cur + size).min(ids.len());
                    let bytes = bpe.decode_bytes(&ids[cur..end]).unwrap();
                    let window = String::from_utf8_lossy(&bytes);
                    for (i, ch) in window.char_indices() {
                        let cut = i + ch.len_utf8();
                        let want = bpe.encode_ordinary(&window[..cut]).len();
                        let got = cut_tokens(text, &toks, (cur, end), &window, cut);
                        assert_eq!(got, want, "{text:?} window {cur}..{end} cut {cut}");
                        total += 1;
                        fast += fast_cut_tokens(text, &toks, (cur, end), &window, cut).is_some()
                            as usize;
                    }
                }
            }
        }
        // The fast count must apply to most cuts, or the splitter is slow again.
        assert!(
            fast * 2 > total,
            "fast count used for {fast} of {total} cuts"
        );
    }

    /// The per-chunk advance of the splitter is the re-encoded cut text's length.
    #[test]
    fn spring_advance_is_reencoded_length() {
        let text = "The cat's toy. It'll be fine!  Really?\n\n\
                    Numbers 12345 and \u{4E2D}\u{6587}\u{3002} and \u{1F600}\u{1F600}\u{1F600}.\r\n"
            .repeat(20);
        let toks = tokens(&text);
        let bpe = cl100k();
        let ids = bpe.encode_ordinary(&text);
        for size in [1, 4, 7, 16, 33, 64] {
            let s = SpringAi {
                size,
                params: SpringAiParams {
                    min_chunk_size_chars: 10,
                    ..SpringAiParams::default()
                },
            };
            let mut cur = 0;
            let mut chunks = 0;
            while cur < ids.len() {
                let end = (cur + size).min(ids.len());
                let bytes = bpe.decode_bytes(&ids[cur..end]).unwrap();
                let window = String::from_utf8_lossy(&bytes);
                let mut cut = window.len();
                if ids.len() - cur > size {
                    if let Some(at) = window.rfind(|c| s.params.punctuation.contains(&c)) {
                        if utf16_len(&window[..at]) > s.params.min_chunk_size_chars {
                            cut = at + window[at..].chars().next().map_or(1, char::len_utf8);
                        }
                    }
                }
                let want = bpe.encode_ordinary(&window[..cut]).len();
                assert_eq!(cut_tokens(&text, &toks, (cur, end), &window, cut), want);
                cur += want.max(1);
                chunks += 1;
            }
            assert!(chunks > 0);
            assert_eq!(
                s.split(&text, &toks, Advance::Fast),
                s.split(&text, &toks, Advance::Full)
            );
        }
    }

    /// The first chunks, stopped early, begin the whole split, the one past `max_num_chunks` (the
    /// rest as one chunk) included; "all of them" only when they are.
    #[test]
    fn first_chunks_begin_the_split() {
        let text =
            "Alpha beta gamma. Delta epsilon zeta! Eta theta? Iota kappa\nlambda mu. ".repeat(40);
        let toks = Cl100kTokens::new(&text);
        for max_num_chunks in [3, 10_000] {
            let s = SpringAi {
                size: 16,
                params: SpringAiParams {
                    min_chunk_size_chars: 10,
                    max_num_chunks,
                    ..SpringAiParams::default()
                },
            };
            let whole = s.split(&text, &toks, Advance::Fast);
            assert!(whole.len() > 3, "{}", whole.len());
            for n in [1, 2, 3, 4, whole.len() - 1, whole.len(), whole.len() + 1] {
                let (first, all) = s.split_up_to(&text, &toks, Advance::Fast, n);
                assert_eq!(
                    first[..],
                    whole[..first.len()],
                    "max {max_num_chunks}, n {n}"
                );
                assert!(
                    first.len() >= n.min(whole.len()),
                    "max {max_num_chunks}, n {n}"
                );
                assert!(
                    !all || first.len() == whole.len(),
                    "max {max_num_chunks}, n {n}"
                );
            }
        }
    }

    /// Timing on about `CHUNKSCOPE_SPRING_MB` (default 20) MB of the examples and seed articles:
    /// `cargo test --release -p chunkscope-core --lib spring_timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn spring_timing() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        let mut dirs = vec![root.join("examples"), root.join("../shared/seeds")];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if let Ok(t) = std::fs::read_to_string(&p) {
                    files.push(t);
                }
            }
        }
        files.sort();
        let mb: usize = std::env::var("CHUNKSCOPE_SPRING_MB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20);
        let one: usize = files.iter().map(String::len).sum();
        assert!(one > 0, "no example files");
        let copies = (mb << 20).div_ceil(one);
        // One document per file copy, as a corpus would hold them.
        let docs: Vec<(String, Cl100kTokens)> = (0..copies)
            .flat_map(|_| files.iter())
            .map(|t| (t.clone(), tokens(t)))
            .collect();
        let bytes: usize = docs.iter().map(|d| d.0.len()).sum();
        for size in [800, 128] {
            let s = SpringAi {
                size,
                params: SpringAiParams::default(),
            };
            let mut runs = Vec::new();
            for how in [Advance::Fast, Advance::Full] {
                let t = std::time::Instant::now();
                let n: usize = docs
                    .iter()
                    .map(|(text, toks)| s.split(text, toks, how).len())
                    .sum();
                runs.push((how, n, t.elapsed().as_secs_f64()));
            }
            for (how, n, secs) in &runs {
                eprintln!(
                    "spring-ai size {size}, {:.1} MB in {} docs, {how:?}: {n} chunks in {secs:.3} s (one core)",
                    bytes as f64 / 1e6,
                    docs.len()
                );
            }
            assert_eq!(runs[0].1, runs[1].1);
        }
    }
}
