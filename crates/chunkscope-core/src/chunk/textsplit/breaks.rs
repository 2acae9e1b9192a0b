//! ICU's grapheme, word and sentence boundaries as the crate sees them: it segments the text from
//! each chunk's cursor on, again for every chunk and level. An iteration is a function of where it
//! stands once it has stopped at a boundary (ICU4X's rule iterator starts afresh from the
//! character there), so an iteration from an earlier boundary agrees with one from the cursor
//! once it has reached the cursor. The boundaries found from the last place a level was
//! segmented from are kept, with the iteration itself, and a later cursor among them goes on from
//! there instead of segmenting again; a cursor elsewhere starts a new iteration (never more ICU
//! work than the crate's).
//!
//! That holds for words too: inside a run of a complex script (Chinese, Japanese, Thai) the
//! dictionary segmenter takes the longest word from where it stands, so from a common boundary
//! on the run's words are the same whichever boundary the run was started from (the test below
//! checks every boundary of texts in those scripts).

use std::sync::LazyLock;

use icu_segmenter::options::{SentenceBreakInvariantOptions, WordBreakInvariantOptions};
use icu_segmenter::{
    GraphemeClusterSegmenter, GraphemeClusterSegmenterBorrowed, SentenceSegmenter,
    SentenceSegmenterBorrowed, WordSegmenter, WordSegmenterBorrowed,
};

/// The segmenters the crate builds (compiled data; the dictionary word segmenter).
const GRAPHEMES: GraphemeClusterSegmenterBorrowed<'static> = GraphemeClusterSegmenter::new();
static WORDS: LazyLock<WordSegmenterBorrowed<'static>> =
    LazyLock::new(|| WordSegmenter::new_dictionary(WordBreakInvariantOptions::default()));
static SENTENCES: LazyLock<SentenceSegmenterBorrowed<'static>> =
    LazyLock::new(|| SentenceSegmenter::new(SentenceBreakInvariantOptions::default()));

/// The crate's fallback levels below its semantic ones, finest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Fallback {
    Char,
    Grapheme,
    Word,
    Sentence,
}

impl Fallback {
    pub(super) const ALL: [Fallback; 4] = [
        Fallback::Char,
        Fallback::Grapheme,
        Fallback::Word,
        Fallback::Sentence,
    ];

    /// The level whose boundaries the crate probes a too-long section of this one at.
    pub(super) fn probed_at(self) -> Option<Fallback> {
        (self == Fallback::Sentence).then_some(Fallback::Word)
    }
}

type Boundaries<'t> = Box<dyn Iterator<Item = usize> + 't>;

/// The boundaries of `text[from..]` as the level's segmenter gives them for that slice, as
/// offsets in `text`: `from` first, the end last.
fn segment(level: Fallback, text: &str, from: usize) -> Boundaries<'_> {
    let rest = &text[from..];
    let moved = move |b: usize| b + from;
    match level {
        Fallback::Grapheme => Box::new(GRAPHEMES.segment_str(rest).map(moved)),
        Fallback::Word => Box::new(WORDS.segment_str(rest).map(moved)),
        Fallback::Sentence => Box::new(SENTENCES.segment_str(rest).map(moved)),
        // Every character boundary (the crate's Char level is `char_indices`).
        Fallback::Char => Box::new(
            rest.char_indices()
                .map(move |(i, _)| i + from)
                .chain(std::iter::once(text.len())),
        ),
    }
}

/// The level's boundaries of the whole text, as offsets (a document is under 4 GiB).
pub(super) fn whole(text: &str, level: Fallback) -> Vec<u32> {
    segment(level, text, 0).map(|b| b as u32).collect()
}

/// One level's boundaries from the place it was last segmented from, as far as asked for.
pub(super) struct DocBreaks<'t> {
    text: &'t str,
    level: Fallback,
    found: Vec<usize>,
    rest: Option<Boundaries<'t>>,
    /// The whole text's boundaries when known beforehand (`whole`, kept with the document), else
    /// empty: an iteration from a cursor among them reads on from there without segmenting.
    known: &'t [u32],
}

impl<'t> DocBreaks<'t> {
    pub(super) fn new(text: &'t str, level: Fallback, known: &'t [u32]) -> DocBreaks<'t> {
        DocBreaks {
            text,
            level,
            found: Vec::new(),
            rest: None,
            known,
        }
    }

    fn get(&mut self, i: usize) -> Option<usize> {
        while self.found.len() <= i {
            let b = self.rest.as_mut()?.next()?;
            self.found.push(b);
        }
        Some(self.found[i])
    }

    /// Whether an iteration that stopped at a boundary goes on as one started there would:
    /// always, but Char boundaries are every character's and never kept.
    fn keeps(&self) -> bool {
        self.level != Fallback::Char
    }

    /// The index of `cursor` among the boundaries found so far, if it is one. They are not
    /// searched further: segmenting up to a far cursor costs more than starting there.
    fn taken_up_at(&self, cursor: usize) -> Option<usize> {
        if !self.keeps() || self.found.last().is_none_or(|&b| b < cursor) {
            return None;
        }
        self.found.binary_search(&cursor).ok()
    }

    /// The boundaries of `text[cursor..]` as the segmenter gives them for that slice alone,
    /// as document offsets: `cursor` first. Nothing is segmented until the first is asked for.
    pub(super) fn from<'b>(&'b mut self, cursor: usize) -> FromCursor<'b, 't> {
        FromCursor {
            doc: self,
            next: None,
            cursor,
        }
    }

    /// The end of the first section of `text[cursor..]`.
    pub(super) fn first_end(&mut self, cursor: usize) -> Option<usize> {
        self.from(cursor).nth(1)
    }
}

pub(super) struct FromCursor<'b, 't> {
    doc: &'b mut DocBreaks<'t>,
    /// The next boundary's index among the kept ones, or among the known ones, once started.
    next: Option<Next>,
    cursor: usize,
}

#[derive(Clone, Copy)]
enum Next {
    Found(usize),
    Known(usize),
}

impl FromCursor<'_, '_> {
    /// Where the iteration starts: among the known boundaries, among the kept ones, or a new
    /// segmentation from the cursor.
    fn start(&mut self) -> Next {
        let cursor = u32::try_from(self.cursor).unwrap_or(u32::MAX);
        if let Ok(i) = self.doc.known.binary_search(&cursor) {
            return Next::Known(i);
        }
        if let Some(i) = self.doc.taken_up_at(self.cursor) {
            return Next::Found(i);
        }
        let doc = &mut *self.doc;
        doc.found.clear();
        doc.rest = Some(segment(doc.level, doc.text, self.cursor));
        Next::Found(0)
    }
}

impl Iterator for FromCursor<'_, '_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let next = match self.next {
            Some(n) => n,
            None => self.start(),
        };
        match next {
            Next::Known(i) => {
                let b = *self.doc.known.get(i)?;
                self.next = Some(Next::Known(i + 1));
                Some(b as usize)
            }
            Next::Found(i) => {
                let b = self.doc.get(i)?;
                self.next = Some(Next::Found(i + 1));
                Some(b)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// From every boundary a whole-text iteration stops at, an iteration started there gives the
    /// same boundaries: what taking a kept iteration up at a cursor relies on.
    #[test]
    fn an_iteration_from_any_boundary_goes_on_as_the_whole_one() {
        let texts = [
            "检索增强生成的质量在切分时就已决定。模型只读前128个词元，其余部分从未被检索到！RAG系统",
            "日本語の文章は単語の間に空白がありません。ひらがなとカタカナと漢字が混ざっています。",
            "ภาษาไทยเป็นภาษาที่มีวรรณยุกต์ และไม่มีการเว้นวรรคระหว่างคำ ภาษาลาวແລະພາສາຂະແມร์ ខ្មែរ",
            "Mixed 中文和English词语, ตัวอักษรไทย and 日本語テキスト. Dr. Smith said: \"Yes.\" Then left.\r\n\r\nNew paragraph 😀👩‍🔬 e\u{301} end",
        ];
        for text in texts {
            for level in [Fallback::Grapheme, Fallback::Word, Fallback::Sentence] {
                let whole: Vec<usize> = segment(level, text, 0).collect();
                for (i, &at) in whole.iter().enumerate() {
                    let from: Vec<usize> = segment(level, text, at).collect();
                    assert_eq!(from, whole[i..], "{level:?} from {at} in {text:?}");
                }
            }
        }
    }
}
