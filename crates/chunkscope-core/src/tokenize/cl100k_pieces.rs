//! Counting the cl100k tokens of a slice of a document from the document's own tokens.
//!
//! cl100k splits text into pieces with its regex and encodes each piece on its own, so the tokens
//! of a slice are the document's own tokens wherever the two texts split into the same pieces.
//! Some neighbouring characters never share a piece whatever surrounds them (`splits`); such a
//! spot is a piece boundary of the document and of any text containing both characters. A text
//! that agrees with the document on `text[a..b]` then counts: its head up to the first such spot
//! `g1` encoded alone, the document's tokens from `g1` to a later such spot `g2`, and its tail
//! from `g2` encoded alone.
//!
//! Why the three parts are exact:
//! - tail: the regex has no look-behind and no `^`, so the pieces after a boundary depend only on
//!   the text after it.
//! - middle: a piece is decided by its own text plus the next character, or, for a piece of
//!   whitespace (`\s++$`, `\s+(?!\S)`), by its whole run of whitespace plus the character after
//!   it. Of the two characters at a spot where `splits` holds, at least one is not whitespace, so
//!   every piece before `g2` is decided by text up to and including the character at `g2`, which
//!   the text shares with the document: those pieces are the document's.
//! - head: the character before `g1` is not whitespace, so every piece before `g1` is decided
//!   inside the head, except the last one, which then stands alone; a lone piece encodes to
//!   itself.
//!
//! Where no such spots exist the caller encodes the text in full.

use super::{cl100k_count, Cl100kTokens};

/// Character classes of the cl100k regex, for characters whose class is certain; others are None.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// `\p{L}`
    Letter,
    /// `\p{N}`
    Number,
    /// Neither whitespace nor letter nor number.
    Other,
    /// Space or tab.
    Blank,
    /// `\r` or `\n`.
    Newline,
}

fn class(c: char) -> Option<Class> {
    use Class::*;
    Some(match c {
        'a'..='z' | 'A'..='Z' => Letter,
        '0'..='9' | '\u{FF10}'..='\u{FF19}' => Number,
        ' ' | '\t' => Blank,
        '\r' | '\n' => Newline,
        '!'..='/' | ':'..='@' | '['..='`' | '{'..='~' => Other,
        // Latin-1 and Latin Extended-A letters, Greek and Cyrillic letters, kana, CJK, Hangul.
        '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}' | '\u{F8}'..='\u{17F}' => Letter,
        '\u{391}'..='\u{3A1}' | '\u{3A3}'..='\u{3A9}' | '\u{3B1}'..='\u{3C9}' => Letter,
        '\u{400}'..='\u{481}' => Letter,
        '\u{3041}'..='\u{3096}' | '\u{30A1}'..='\u{30FA}' => Letter,
        '\u{4E00}'..='\u{9FA5}' | '\u{AC00}'..='\u{D7A3}' => Letter,
        // Dashes, quotes, ellipsis; CJK and full-width punctuation; emoji faces; U+FFFD.
        '\u{2010}'..='\u{2027}' | '\u{3001}'..='\u{3003}' | '\u{3008}'..='\u{3011}' => Other,
        '\u{FF01}'..='\u{FF0F}' | '\u{FF1A}'..='\u{FF20}' => Other,
        '\u{1F600}'..='\u{1F64F}' | '\u{FFFD}' => Other,
        _ => return None,
    })
}

/// True when no piece of the cl100k regex can hold `l` followed by `r`. The pairs a piece can
/// hold: `'s` and letters after an optional non-newline, non-alphanumeric prefix (other-letter,
/// blank-letter, letter-letter), up to three digits, an optional space, a run of others and a run
/// of newlines (blank-other, other-other, other-newline, newline-newline), and whitespace runs.
fn splits(l: Class, r: Class) -> bool {
    use Class::*;
    matches!(
        (l, r),
        (Letter, Number | Other | Blank | Newline)
            | (Number, Letter | Other | Blank | Newline)
            | (Other, Number | Blank)
            | (Blank, Number)
            | (Newline, Letter | Number | Other)
    )
}

/// In `text[a..b]`: `g1`, the first spot after a non-space character where every text holding
/// both neighbours breaks a piece, and `g2`, the last such spot whatever the character before it
/// (`g1` is one); None when there is none. Both lie strictly inside `a..b`.
pub(crate) fn forced_spots(text: &str, a: usize, b: usize) -> Option<(usize, usize)> {
    let g1 = first_spot(text.get(a..b)?, a)?;
    Some((g1, last_spot(text, g1, b).unwrap_or(g1)))
}

/// The first forced spot of `shared` (which starts at `a` in the document) after a non-space
/// character, as an offset in the document.
fn first_spot(shared: &str, a: usize) -> Option<usize> {
    let mut prev: Option<Class> = None;
    for (i, c) in shared.char_indices() {
        let now = class(c);
        if let (Some(l), Some(r)) = (prev, now) {
            if !is_space(l) && splits(l, r) {
                return Some(a + i);
            }
        }
        prev = now;
    }
    None
}

/// The last forced spot strictly inside `from..b`, whatever the character before it.
fn last_spot(text: &str, from: usize, b: usize) -> Option<usize> {
    let mut next: Option<(usize, Class)> = None;
    for (i, c) in text[from..b].char_indices().rev() {
        let now = class(c);
        if let (Some(l), Some((at, r))) = (now, next) {
            if splits(l, r) {
                return Some(at);
            }
        }
        next = now.map(|k| (from + i, k));
    }
    None
}

fn is_space(c: Class) -> bool {
    matches!(c, Class::Blank | Class::Newline)
}

/// The class of the character before `at` when no piece can hold it together with the character
/// at `at`; None at either end of `text`, for uncertain classes, or where a piece may span `at`.
fn forced_edge(text: &str, at: usize) -> Option<Class> {
    let l = class(text[..at].chars().next_back()?)?;
    let r = class(text[at..].chars().next()?)?;
    splits(l, r).then_some(l)
}

/// `g1..g2` inside `text[a..b]` whose pieces are the document's. An end of the slice serves
/// itself where the document's pieces break there anyway:
/// - the start, when it is the document's start or a forced spot: the pieces after a piece
///   boundary depend on the text after it alone;
/// - the end, when it is the document's end, or a forced spot after a non-space character: the
///   last piece before it is then a run of letters, digits or other characters that stops there
///   in the document because the next character cannot join it, and stops there in the slice
///   because the text ends; the pieces before it are decided inside the slice.
///
/// Elsewhere `g1` and `g2` are the forced spots of `forced_spots`. None when there is no spot.
fn shared_part(text: &str, a: usize, b: usize) -> Option<(usize, usize)> {
    let opens = a == 0 || forced_edge(text, a).is_some();
    let closes = b == text.len() || forced_edge(text, b).is_some_and(|l| !is_space(l));
    match (opens, closes) {
        (true, true) => Some((a, b)),
        (true, false) => last_spot(text, a, b).map(|g2| (a, g2)),
        (false, true) => Some((first_spot(text.get(a..b)?, a)?, b)),
        (false, false) => forced_spots(text, a, b),
    }
}

/// `cl100k_count(&text[start..end])` from the document's token starts, or None where the slice
/// has no part whose pieces are surely the document's (the caller then encodes it).
pub(crate) fn slice_count(
    text: &str,
    tokens: &Cl100kTokens,
    start: usize,
    end: usize,
) -> Option<usize> {
    if let Some(n) = word_piece(text, tokens, start, end) {
        return Some(n);
    }
    let (g1, g2) = shared_part(text, start, end)?;
    let n = tokens.len();
    let token = |g: usize| {
        if g == text.len() {
            Some(n)
        } else {
            tokens.token_at(g, 0, n)
        }
    };
    let (t1, t2) = (token(g1)?, token(g2)?);
    let encoded = |a: usize, b: usize| match a == b {
        true => 0,
        false => word_piece(text, tokens, a, b).unwrap_or_else(|| cl100k_count(&text[a..b])),
    };
    Some(encoded(start, g1) + (t2 - t1) + encoded(g2, end))
}

/// The tokens of `text[a..b]` when it is a space and a run of ASCII letters that the document
/// ends where the slice does (a non-letter, or the end, follows): the regex makes one piece of
/// it, alone or in the document (a space before a letter always begins a piece), so the
/// document's tokens over it are its own. None otherwise.
fn word_piece(text: &str, tokens: &Cl100kTokens, a: usize, b: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let word = bytes.get(a + 1..b)?;
    let ends = bytes
        .get(b)
        .is_none_or(|c| c.is_ascii() && !c.is_ascii_alphabetic());
    if bytes[a] != b' ' || word.is_empty() || !word.iter().all(u8::is_ascii_alphabetic) || !ends {
        return None;
    }
    let n = tokens.len();
    let t1 = tokens.token_at(a, 0, n)?;
    let t2 = if b == text.len() {
        n
    } else {
        tokens.token_at(b, 0, n)?
    };
    Some(t2 - t1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::{cl100k, DocTokens};

    /// The reference: tiktoken-rs itself.
    fn cl100k_count(text: &str) -> usize {
        cl100k().encode_ordinary(text).len()
    }
    use proptest::prelude::*;

    fn count_in(text: &str, tokens: &Cl100kTokens, s: usize, e: usize) -> usize {
        DocTokens {
            cl100k: tokens.clone(),
            ..DocTokens::default()
        }
        .cl100k_count_in(text, s, e)
    }

    /// A space and a word the document ends there is counted from the document's tokens alone.
    #[test]
    fn word_pieces_come_from_the_document() {
        let text = "plain words  here, unbelievably. And\nthen caf\u{E9}";
        let t = Cl100kTokens::new(text);
        let at = |w: &str| text.find(w).unwrap();
        for w in [" words", " here", " unbelievably", " And"] {
            let (a, b) = (at(w), at(w) + w.len());
            assert_eq!(word_piece(text, &t, a, b), Some(cl100k_count(w)), "{w:?}");
        }
        // Not one piece in the document: the letters go on, or no space leads.
        let a = at(" unbelievably");
        assert_eq!(word_piece(text, &t, a, a + 4), None);
        assert_eq!(word_piece(text, &t, at("then"), at("then") + 4), None);
        assert_eq!(word_piece(text, &t, at(" caf"), at(" caf") + 4), None);
    }

    /// Every slice of texts built around the hard cases counts as its own encoding.
    #[test]
    fn slice_count_equals_reencode_everywhere() {
        let texts = [
            "It's the cat's toy; they'll say we've 1234567 items.\n\n  Next   line\r\n\tx",
            "a  1 b   \n\n  c!!\n\n\n d...  ?!  'LL 'S\u{a0}\u{a0}word  \u{3000}x 12 345",
            "\u{4E2D}\u{6587}\u{FF0C}\u{5B57}\u{3002}\u{1F600} emoji \u{1F44D}\u{1F3FD}! \
             caf\u{E9} na\u{EF}ve \u{3A9}\u{3BC}\u{3AD}\u{3B3}\u{3B1} \u{43F}\u{440}\u{438} 3.14",
            "| Plan | Refund |\n|---|---|\n| Annual | pro rata |\n\n```sh\necho $HOME\n```\n",
            "end with spaces    ",
            " plain words  and more, then Words\n  after a break\r\n word caf\u{E9} x1 y_ end",
            "x\u{FFFD}y 'sx 've1 're. 123abc abc123 _x_ $5.00 -> a->b <|endoftext|>",
        ];
        let (mut fast, mut total) = (0, 0);
        for text in texts {
            let st = Cl100kTokens::new(text);
            let bounds: Vec<usize> = (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .collect();
            for (k, &s) in bounds.iter().enumerate() {
                for &e in &bounds[k..] {
                    let want = cl100k_count(&text[s..e]);
                    assert_eq!(count_in(text, &st, s, e), want, "{:?}", &text[s..e]);
                    total += 1;
                    fast += slice_count(text, &st, s, e).is_some() as usize;
                }
            }
        }
        // The shortcut must apply to most slices, or counting is slow again.
        assert!(
            fast * 2 > total,
            "shortcut used for {fast} of {total} slices"
        );
    }

    fn text() -> impl Strategy<Value = String> {
        let part = prop_oneof![
            4 => prop::sample::select(&[
                " ", "  ", "\n", "\n\n", "\r\n", "\t", "'s", "'ll", "1", "123", "12345", ".",
                "...", "?!", "\u{a0}", "\u{3000}", "\u{4E2D}", "\u{1F600}", "\u{FFFD}", "#",
                "```", "|", "\u{E9}", "e\u{301}", "\u{43F}",
            ][..]).prop_map(str::to_string),
            3 => "[a-zA-Z]{1,8}",
            1 => any::<char>().prop_map(String::from),
        ];
        prop::collection::vec(part, 0..120).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn slice_count_equals_reencode(
            text in text(),
            picks in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>()), 1..16),
        ) {
            let st = Cl100kTokens::new(&text);
            let bounds: Vec<usize> = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
            for (a, b) in picks {
                let (mut s, mut e) = (bounds[a.index(bounds.len())], bounds[b.index(bounds.len())]);
                if s > e {
                    std::mem::swap(&mut s, &mut e);
                }
                prop_assert_eq!(
                    count_in(&text, &st, s, e),
                    cl100k_count(&text[s..e]),
                    "slice {:?} of {:?}", &text[s..e], text
                );
            }
        }
    }
}
