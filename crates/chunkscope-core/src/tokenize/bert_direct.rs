//! BERT's tokenizer (BertNormalizer, BertPreTokenizer, WordPiece) computed directly: the spans
//! and word numbers the tokenizers crate gives for a whole document, at a fraction of its cost
//! (the crate builds a normalized copy with an alignment per byte, a string per split and per
//! token, and looks every character up in its Unicode tables; here printable ASCII, most of most
//! corpora, is read byte by byte, and only other characters go through the tables).
//!
//! The normalizer works character by character: each character of the document becomes zero or
//! more normalized characters (control characters dropped, whitespace made a space, Chinese
//! characters set apart by spaces, NFD with the nonspacing marks dropped, lowercase), each aligned
//! to the character it came from. The pre-tokenizer then splits the normalized text at whitespace
//! and sets each punctuation character apart, and WordPiece pieces each word; a token's span is
//! its first normalized character's source start to its last one's source end. The character
//! classes are the crate's own (the same `unicode_categories` and NFD tables), so the result is
//! the crate's. An added token's text (`[CLS]` in a document about BERT) is matched first, as the
//! crate matches it: on the text as it is, leftmost and longest, a token and a word of its own,
//! the text on either side read apart. Left to the crate, for the whole document: a mark that
//! NFD could reorder and that is kept (a combining class other than 0 outside the nonspacing
//! marks), and an added token that strips the whitespace around it or must be a word alone.

use tokenizers::{ModelWrapper, NormalizerWrapper, PreTokenizerWrapper, Tokenizer};
use unicode_categories::UnicodeCategories;
use unicode_normalization_alignments::char::{canonical_combining_class, decompose_canonical};

use super::piece_table::PieceTable;
use super::TokenSpan;

/// A BERT tokenizer's settings and vocabulary, as the direct path reads them.
pub(super) struct BertDirect {
    /// Pieces that may start a word (every piece of the vocabulary).
    heads: PieceTable,
    /// Pieces that continue a word, without their prefix ("##").
    tails: PieceTable,
    /// The longest piece of either set, in bytes: no match is tried beyond it.
    longest: usize,
    clean_text: bool,
    chinese: bool,
    strip_accents: bool,
    lowercase: bool,
    /// A word of more characters is one unknown token (WordPiece's `max_input_chars_per_word`).
    max_word: usize,
    /// The added tokens' texts, and whether the crate matches each where it is (without
    /// stripping the whitespace around it, or asking for a word alone).
    added: Vec<(Box<[u8]>, bool)>,
}

/// What the normalizer makes of one character.
enum Norm {
    /// Dropped by the cleaning (a control character, U+FFFD).
    Dropped,
    /// Decomposed into a kept mark that NFD could reorder with its neighbours' marks.
    Moved,
    /// These characters, set apart by spaces when `apart` (a Chinese character).
    Chars {
        apart: bool,
        out: Box<[(char, Kind)]>,
    },
}

/// How the pre-tokenizer reads a normalized character.
#[derive(Clone, Copy)]
enum Kind {
    Space,
    Punct,
    Word,
}

/// The word being read: its normalized bytes, and for each byte the source character's span.
#[derive(Default)]
struct Word {
    bytes: Vec<u8>,
    align: Vec<(u32, u32)>,
}

impl BertDirect {
    /// The direct path for `tok`, when it is BERT's pipeline (BertNormalizer or none,
    /// BertPreTokenizer, WordPiece with its unknown token in the vocabulary) and its added tokens
    /// are printable ASCII matched on the text as it is; None otherwise.
    pub(super) fn for_tokenizer(tok: &Tokenizer) -> Option<BertDirect> {
        let (clean_text, chinese, strip_accents, lowercase) = match tok.get_normalizer() {
            None => (false, false, false, false),
            Some(NormalizerWrapper::BertNormalizer(n)) => (
                n.clean_text,
                n.handle_chinese_chars,
                n.strip_accents.unwrap_or(n.lowercase),
                n.lowercase,
            ),
            Some(_) => return None,
        };
        if !matches!(
            tok.get_pre_tokenizer(),
            Some(PreTokenizerWrapper::BertPreTokenizer(_))
        ) {
            return None;
        }
        let ModelWrapper::WordPiece(wp) = tok.get_model() else {
            return None;
        };
        let vocab = tokenizers::Model::get_vocab(wp);
        if !vocab.contains_key(&wp.unk_token) {
            // The crate fails on a word it cannot piece: leave that error to it.
            return None;
        }
        let prefix = wp.continuing_subword_prefix.as_bytes();
        let heads = PieceTable::new(vocab.keys().map(|p| (p.as_bytes(), 0)));
        let tails = PieceTable::new(vocab.keys().filter_map(|p| {
            let rest = p.as_bytes().strip_prefix(prefix)?;
            (!rest.is_empty()).then_some((rest, 0))
        }));
        let longest = heads.longest();
        let mut added = Vec::new();
        for t in tok.get_added_tokens_decoder().values() {
            let text = t.content.as_bytes();
            if t.normalized || text.is_empty() || !text.iter().all(|b| (0x21..=0x7e).contains(b)) {
                return None;
            }
            added.push((text.into(), !(t.lstrip || t.rstrip || t.single_word)));
        }
        Some(BertDirect {
            heads,
            tails,
            longest,
            clean_text,
            chinese,
            strip_accents,
            lowercase,
            max_word: wp.max_input_chars_per_word,
            added,
        })
    }

    /// The spans of `text` as the crate encodes it whole, or None where the crate must encode it
    /// (see the module's note).
    pub(super) fn spans(&self, text: &str) -> Option<Vec<TokenSpan>> {
        let hay = text.as_bytes();
        let mut added = self.added_tokens(hay)?.into_iter().peekable();
        let mut out = Vec::with_capacity(text.len() / 4 + 1);
        let mut word = Word::default();
        let mut words = 0u32;
        let mut i = 0;
        while i < hay.len() {
            if let Some(&(start, end)) = added.peek().filter(|(start, _)| *start == i) {
                added.next();
                self.flush(&mut word, &mut words, &mut out);
                out.push(TokenSpan {
                    start: start as u32,
                    end: end as u32,
                    word: words,
                });
                words += 1;
                i = end;
                continue;
            }
            let b = hay[i];
            if (0x21..=0x7e).contains(&b) {
                let at = (i as u32, i as u32 + 1);
                if b.is_ascii_punctuation() {
                    self.flush(&mut word, &mut words, &mut out);
                    word.push(b, at);
                    self.flush(&mut word, &mut words, &mut out);
                } else {
                    word.push(
                        if self.lowercase {
                            b.to_ascii_lowercase()
                        } else {
                            b
                        },
                        at,
                    );
                }
                i += 1;
                continue;
            }
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.flush(&mut word, &mut words, &mut out);
                i += 1;
                continue;
            }
            let c = text[i..].chars().next()?;
            let end = i + c.len_utf8();
            self.other_char(c, (i as u32, end as u32), &mut word, &mut words, &mut out)?;
            i = end;
        }
        self.flush(&mut word, &mut words, &mut out);
        Some(out)
    }

    /// Where the crate finds added tokens in `hay`: every occurrence, leftmost first, the longest
    /// of those starting at one place, none inside another. None when one of them is not matched
    /// where it is.
    fn added_tokens(&self, hay: &[u8]) -> Option<Vec<(usize, usize)>> {
        let mut found = Vec::new();
        for (text, plain) in &self.added {
            for at in memchr::memmem::find_iter(hay, &text[..]) {
                if !plain {
                    return None;
                }
                found.push((at, at + text.len()));
            }
        }
        found.sort_by_key(|&(start, end)| (start, std::cmp::Reverse(end)));
        let mut kept: Vec<(usize, usize)> = Vec::with_capacity(found.len());
        for (start, end) in found {
            if kept.last().is_none_or(|&(_, last)| start >= last) {
                kept.push((start, end));
            }
        }
        Some(kept)
    }

    /// Any character but printable ASCII and ASCII whitespace, through the normalizer and the
    /// pre-tokenizer. None when NFD could move a mark that is kept.
    fn other_char(
        &self,
        c: char,
        at: (u32, u32),
        word: &mut Word,
        words: &mut u32,
        out: &mut Vec<TokenSpan>,
    ) -> Option<()> {
        thread_local! {
            static KNOWN: std::cell::RefCell<rustc_hash::FxHashMap<(u8, char), Norm>> =
                Default::default();
        }
        KNOWN.with_borrow_mut(|known| {
            let norm = known
                .entry((self.flags(), c))
                .or_insert_with(|| self.normalize(c));
            let Norm::Chars { apart, out: chars } = norm else {
                return match norm {
                    Norm::Dropped => Some(()),
                    _ => None,
                };
            };
            if *apart {
                self.flush(word, words, out);
            }
            for &(n, kind) in chars.iter() {
                match kind {
                    Kind::Space => self.flush(word, words, out),
                    Kind::Punct => {
                        self.flush(word, words, out);
                        word.push_char(n, at);
                        self.flush(word, words, out);
                    }
                    Kind::Word => word.push_char(n, at),
                }
            }
            if *apart {
                self.flush(word, words, out);
            }
            Some(())
        })
    }

    /// The normalizer's settings in one byte: the key of what `normalize` found per character.
    fn flags(&self) -> u8 {
        u8::from(self.clean_text)
            | u8::from(self.chinese) << 1
            | u8::from(self.strip_accents) << 2
            | u8::from(self.lowercase) << 3
    }

    /// What the normalizer makes of `c`, each character it becomes classed as the pre-tokenizer
    /// reads it.
    fn normalize(&self, c: char) -> Norm {
        if self.clean_text && (c == '\0' || c == '\u{fffd}' || is_control(c)) {
            return Norm::Dropped;
        }
        let c = if self.clean_text && is_whitespace(c) {
            ' '
        } else {
            c
        };
        let mut chars = Vec::new();
        let mut emit = |n: char| {
            let mut push = |l: char| {
                let kind = if l.is_whitespace() {
                    Kind::Space
                } else if l.is_ascii_punctuation() || l.is_punctuation() {
                    Kind::Punct
                } else {
                    Kind::Word
                };
                chars.push((l, kind));
            };
            if self.lowercase {
                n.to_lowercase().for_each(&mut push);
            } else {
                push(n);
            }
        };
        if self.strip_accents {
            let mut moved = false;
            decompose_canonical(c, |d| {
                if d.is_mark_nonspacing() {
                    return;
                }
                moved |= canonical_combining_class(d) != 0;
                emit(d);
            });
            if moved {
                return Norm::Moved;
            }
        } else {
            emit(c);
        }
        Norm::Chars {
            apart: self.chinese && is_chinese_char(c),
            out: chars.into(),
        }
    }

    /// The word read so far, pieced into `out` as word number `words` (then the next).
    fn flush(&self, word: &mut Word, words: &mut u32, out: &mut Vec<TokenSpan>) {
        if word.bytes.is_empty() {
            return;
        }
        self.pieces(word, *words, out);
        *words += 1;
        word.bytes.clear();
        word.align.clear();
    }

    /// WordPiece on one word: the longest known piece from the left, again and again; a word
    /// with a part no piece matches, or of more than `max_word` characters, is one token.
    fn pieces(&self, word: &Word, id: u32, out: &mut Vec<TokenSpan>) {
        let (bytes, align) = (&word.bytes[..], &word.align[..]);
        let span = |s: usize, e: usize| TokenSpan {
            start: align[s].0,
            end: align[e - 1].1,
            word: id,
        };
        let whole = span(0, bytes.len());
        let chars = bytes.iter().filter(|&&b| b & 0xc0 != 0x80).count();
        if chars > self.max_word {
            out.push(whole);
            return;
        }
        let first = out.len();
        let mut start = 0;
        while start < bytes.len() {
            let set = if start == 0 { &self.heads } else { &self.tails };
            let mut end = bytes.len().min(start + self.longest);
            loop {
                // Only whole characters: back off a character's continuation bytes.
                while end > start && end < bytes.len() && bytes[end] & 0xc0 == 0x80 {
                    end -= 1;
                }
                if end == start || set.contains(&bytes[start..end]) {
                    break;
                }
                end -= 1;
            }
            if end == start {
                out.truncate(first);
                out.push(whole);
                return;
            }
            out.push(span(start, end));
            start = end;
        }
    }
}

impl Word {
    fn push(&mut self, b: u8, at: (u32, u32)) {
        self.bytes.push(b);
        self.align.push(at);
    }

    fn push_char(&mut self, c: char, at: (u32, u32)) {
        let mut buf = [0u8; 4];
        for &b in c.encode_utf8(&mut buf).as_bytes() {
            self.push(b, at);
        }
    }
}

/// The normalizer's control characters: Unicode's "other" categories, but tab and line ends.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// The normalizer's whitespace: tab, line ends and Unicode's white space.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// The CJK blocks BERT's normalizer sets apart (its list, by code point).
fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}
