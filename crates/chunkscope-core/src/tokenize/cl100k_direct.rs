//! cl100k_base's token lengths computed directly: the pieces tiktoken-rs's regex finds, found by
//! hand, and each piece's tokens by byte-pair merging with cl100k's ranks (the adjacent pair that
//! makes the lowest-ranked token is merged first, the leftmost of equal ones, until no pair makes
//! a token), kept in one table shared by the threads for the pieces that repeat. The lengths are those of `encode_ordinary`'s tokens, at
//! several times its speed (its regex runs on a backtracking engine for one look-ahead).
//!
//! The regex, as tiktoken-rs writes it:
//! `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`.
//! At each place the first alternative that matches gives the piece; every character matches one
//! of them (a letter the second, a number the third, whitespace the last, anything else the
//! fourth), so the pieces cover the text. Letters, numbers and whitespace are the regex crate's
//! own classes (the engine tiktoken-rs's regex runs on), asked once per character outside ASCII.

use std::cell::RefCell;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use super::cl100k;
use super::memo::ByteMemo;
use super::piece_table::PieceTable;

/// Pieces of at least this many bytes are encoded by tiktoken-rs whole (merging is quadratic in
/// the piece's length here; a piece alone is one match of the regex, so the result is the same).
const LONG_PIECE: usize = 100;

/// The byte length of each of `text`'s cl100k tokens, in order.
pub(super) fn token_lens(text: &str, mut visit: impl FnMut(usize)) {
    let ranks = ranks();
    let mut at = 0;
    while at < text.len() {
        let end = piece_end(text, at);
        let piece = &text[at..end];
        if piece.len() == 1 || ranks.contains(piece.as_bytes()) {
            visit(piece.len());
        } else if piece.len() >= LONG_PIECE {
            let bpe = cl100k();
            for id in bpe.encode_ordinary(piece) {
                visit(bpe.decode_bytes(&[id]).map_or(0, |b| b.len()));
            }
        } else {
            merged(piece, ranks, &mut visit);
        }
        at = end;
    }
}

/// Shards of the table of merged pieces, shared by every thread (a piece's shard is its hash's).
const SHARDS: usize = 16;

/// Pieces a shard holds at most: it is emptied rather than grown (about 2 MB in all).
const SHARD_BOUND: usize = 2048;

/// Visit the token lengths of `piece` (not a token itself), merged once and kept for the pieces
/// that repeat: one table for all threads, so its memory does not grow with the thread count.
fn merged(piece: &str, ranks: &PieceTable, visit: &mut impl FnMut(usize)) {
    type Shard = std::sync::Mutex<ByteMemo>;
    static KEPT: OnceLock<Vec<Shard>> = OnceLock::new();
    let kept = KEPT.get_or_init(|| {
        (0..SHARDS)
            .map(|_| Shard::new(ByteMemo::new(SHARD_BOUND)))
            .collect()
    });
    let hash = std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, piece);
    let shard = &kept[(hash >> 60) as usize % SHARDS];
    let mut shard = shard.lock().unwrap_or_else(|p| p.into_inner());
    let lens = shard.get_or(piece.as_bytes(), |out| {
        out.extend_from_slice(&merged_lens(piece.as_bytes(), ranks))
    });
    lens.iter().for_each(|&n| visit(usize::from(n)));
}

/// Number of cl100k tokens in `text`.
pub(super) fn count(text: &str) -> usize {
    let mut n = 0;
    token_lens(text, |_| n += 1);
    n
}

/// Build the tables the direct path reads (once per process; later calls return at once): on
/// the thread that loads a tokenizer, before any worker tokenizes.
pub(super) fn prepare() {
    ranks();
}

/// cl100k's ordinary tokens by their bytes, with their ranks.
fn ranks() -> &'static PieceTable {
    static RANKS: OnceLock<PieceTable> = OnceLock::new();
    RANKS.get_or_init(|| {
        let bpe = cl100k();
        // cl100k's ordinary ids are 0..100256; its special tokens follow.
        let mut t = PieceTable::default();
        for id in 0..100_256 {
            if let Ok(bytes) = bpe.decode_bytes(&[id]) {
                t.push(&bytes, id);
            }
        }
        t.shrink();
        t
    })
}

/// The byte lengths of `piece`'s tokens (at least two bytes, fewer than 256): its bytes merged
/// pair by pair, the pair whose joined bytes have the lowest rank first (the leftmost of equal
/// ranks), until no adjacent pair joins into a token.
fn merged_lens(piece: &[u8], ranks: &PieceTable) -> Box<[u8]> {
    // Where each part starts; a part ends where the next starts.
    let mut starts: Vec<usize> = (0..=piece.len()).collect();
    // The rank of part i joined with part i + 1 (u32::MAX: not a token).
    let joined = |starts: &[usize], i: usize| -> u32 {
        match starts.get(i + 2) {
            Some(&end) => ranks.get(&piece[starts[i]..end]).unwrap_or(u32::MAX),
            None => u32::MAX,
        }
    };
    let mut pair: Vec<u32> = (0..piece.len()).map(|i| joined(&starts, i)).collect();
    while let Some((i, _)) = pair
        .iter()
        .enumerate()
        .filter(|(_, &r)| r != u32::MAX)
        .min_by_key(|&(i, &r)| (r, i))
    {
        starts.remove(i + 1);
        pair.remove(i + 1);
        pair[i] = joined(&starts, i);
        if i > 0 {
            pair[i - 1] = joined(&starts, i - 1);
        }
    }
    starts.windows(2).map(|w| (w[1] - w[0]) as u8).collect()
}

/// What the regex's classes say of a character.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// `\p{L}`
    Letter,
    /// `\p{N}`
    Number,
    /// `\s`
    Space,
    Other,
}

fn class(c: char) -> Class {
    match c {
        'a'..='z' | 'A'..='Z' => Class::Letter,
        '0'..='9' => Class::Number,
        // The regex crate's `\s` in ASCII: tab, line feed, vertical tab, form feed, return, space.
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' => Class::Space,
        c if c.is_ascii() => Class::Other,
        c => unicode_class(c),
    }
}

/// The class of a character outside ASCII, from the regex crate, remembered per thread.
fn unicode_class(c: char) -> Class {
    thread_local! {
        static KNOWN: RefCell<FxHashMap<char, Class>> = Default::default();
    }
    KNOWN.with_borrow_mut(|known| {
        *known.entry(c).or_insert_with(|| {
            static CLASSES: OnceLock<[regex::Regex; 3]> = OnceLock::new();
            let [letter, number, space] = CLASSES.get_or_init(|| {
                [r"\A\p{L}\z", r"\A\p{N}\z", r"\A\s\z"]
                    .map(|p| regex::Regex::new(p).expect("a valid class"))
            });
            let mut buf = [0u8; 4];
            let s = c.encode_utf8(&mut buf);
            if letter.is_match(s) {
                Class::Letter
            } else if number.is_match(s) {
                Class::Number
            } else if space.is_match(s) {
                Class::Space
            } else {
                Class::Other
            }
        })
    })
}

/// The characters of `text` from byte `at`, with their classes.
fn chars_from(text: &str, at: usize) -> impl Iterator<Item = (usize, char, Class)> + '_ {
    text[at..]
        .char_indices()
        .map(move |(i, c)| (at + i, c, class(c)))
}

/// The end of the first run of `class` characters from byte `at` (at itself if none).
fn run_end(text: &str, at: usize, keep: impl Fn(char, Class) -> bool) -> usize {
    chars_from(text, at)
        .find(|&(_, c, k)| !keep(c, k))
        .map_or(text.len(), |(i, _, _)| i)
}

/// The end of the piece that starts at byte `at` (< text.len()).
fn piece_end(text: &str, at: usize) -> usize {
    let mut it = chars_from(text, at);
    let (_, c0, k0) = it.next().expect("a character at `at`");
    let next = it.next();
    // '(?i:[sdmt]|ll|ve|re)
    if c0 == '\'' {
        if let Some((i1, c1, _)) = next {
            if matches!(c1.to_ascii_lowercase(), 's' | 'd' | 'm' | 't') || c1 == '\u{17f}' {
                return i1 + c1.len_utf8();
            }
            let mut rest = text[i1 + c1.len_utf8()..].chars();
            if let Some(c2) = rest.next() {
                let pair = (c1.to_ascii_lowercase(), c2.to_ascii_lowercase());
                if matches!(pair, ('l', 'l') | ('v', 'e') | ('r', 'e')) {
                    return i1 + c1.len_utf8() + c2.len_utf8();
                }
            }
        }
    }
    // [^\r\n\p{L}\p{N}]?+\p{L}++
    let letters = |from: usize| run_end(text, from, |_, k| k == Class::Letter);
    if k0 == Class::Letter {
        return letters(at);
    }
    let prefix = k0 != Class::Number && c0 != '\r' && c0 != '\n';
    if let Some((i1, _, Class::Letter)) = next.filter(|_| prefix) {
        return letters(i1);
    }
    // \p{N}{1,3}+
    if k0 == Class::Number {
        return chars_from(text, at)
            .take(3)
            .take_while(|&(_, _, k)| k == Class::Number)
            .last()
            .map_or(at, |(i, c, _)| i + c.len_utf8());
    }
    //  ?[^\s\p{L}\p{N}]++[\r\n]*+
    let others_from = match (c0, next) {
        (' ', Some((i1, _, Class::Other))) => Some(i1),
        _ if k0 == Class::Other => Some(at),
        _ => None,
    };
    if let Some(from) = others_from {
        let end = run_end(text, from, |_, k| k == Class::Other);
        return run_end(text, end, |c, _| c == '\r' || c == '\n');
    }
    // Whitespace from here on: \s++$ | \s*[\r\n] | \s+(?!\S) | \s
    debug_assert!(k0 == Class::Space);
    let end = run_end(text, at, |_, k| k == Class::Space);
    if end == text.len() {
        return end;
    }
    let run = &text[at..end];
    if let Some(nl) = run.rfind(['\r', '\n']) {
        return at + nl + 1;
    }
    let last = run.char_indices().last().map_or(0, |(i, _)| i);
    if last > 0 {
        return at + last;
    }
    at + c0.len_utf8()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The lengths of `encode_ordinary`'s tokens.
    fn tiktoken_lens(text: &str) -> Vec<usize> {
        let bpe = cl100k();
        bpe.encode_ordinary(text)
            .into_iter()
            .map(|id| bpe.decode_bytes(&[id]).unwrap().len())
            .collect()
    }

    fn direct_lens(text: &str) -> Vec<usize> {
        let mut v = Vec::new();
        token_lens(text, |n| v.push(n));
        v
    }

    /// Fragments each alternative of the regex treats apart.
    const FRAGMENTS: &[&str] = &[
        "'s",
        "'S",
        "'\u{17f}",
        "'t",
        "'D",
        "'m",
        "'ll",
        "'LL",
        "'lL",
        "'ve",
        "'VE",
        "'re",
        "'Re",
        "'x",
        "'",
        "''",
        "don",
        "The",
        "retrieval",
        "x",
        "Zürich",
        "naïve",
        "e\u{301}",
        "\u{301}",
        "Ωμέγα",
        "Привет",
        "中文",
        "检索",
        "한국어",
        "ｶﾀｶﾅ",
        "ไทย",
        "العربية",
        "क़",
        "0",
        "7",
        "42",
        "2026",
        "1234567",
        "٣",
        "①",
        "Ⅻ",
        "½",
        "²",
        "１２",
        " ",
        "  ",
        "   ",
        "\t",
        "\n",
        "\r\n",
        "\r",
        "\n\n",
        " \n",
        "\u{b}",
        "\u{c}",
        "\u{1c}",
        "\u{85}",
        "\u{a0}",
        "\u{2003}",
        "\u{3000}",
        "\u{2028}",
        "\u{200b}",
        "\u{feff}",
        ".",
        ",",
        "!?",
        "...",
        "--",
        "—",
        "’",
        "“",
        "”",
        "(",
        ")",
        "#",
        "##",
        "```",
        "|",
        "=",
        "$",
        "€",
        "©",
        "👍",
        "🧪",
        "👩‍🔬",
        "🇵🇱",
        "\u{fffd}",
        "<|endoftext|>",
        "_",
        "x86_64",
        "a1b2",
        "\u{0}",
    ];

    fn text_strategy() -> impl Strategy<Value = String> {
        let long: &[String] = Box::leak(Box::new([
            "a".repeat(150),
            "=".repeat(120),
            " ".repeat(130),
            "ab1".repeat(60),
            "é".repeat(70),
        ]));
        let fragments: Vec<&'static str> = FRAGMENTS
            .iter()
            .copied()
            .chain(long.iter().map(String::as_str))
            .collect();
        prop::collection::vec(prop::sample::select(fragments), 0..40).prop_map(|v| v.concat())
    }

    #[test]
    fn lengths_equal_tiktoken_on_the_examples() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut seen = 0;
        let mut folders = vec![root];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    folders.push(path);
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                assert_eq!(
                    direct_lens(&text),
                    tiktoken_lens(&text),
                    "{}",
                    path.display()
                );
                assert_eq!(count(&text), tiktoken_lens(&text).len());
                seen += 1;
            }
        }
        assert!(seen >= 5, "examples/ holds {seen} texts");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn lengths_equal_tiktoken_on_generated_text(text in text_strategy()) {
            prop_assert_eq!(direct_lens(&text), tiktoken_lens(&text));
        }
    }
}
