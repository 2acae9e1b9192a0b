//! NLTK's Punkt sentence tokenizer as LlamaIndex uses it: `PunktSentenceTokenizer()` with no
//! training, so no known abbreviations, collocations or sentence starters and every word's
//! orthographic history empty. What is left of the algorithm still decides a lot, and it is
//! reproduced rule for rule (nltk 3.9/3.10 `span_tokenize`, boundary realignment on):
//!
//! 1. Candidates: every `.`, `?` or `!` followed by one closing/opening mark
//!    (`)";}]*:@'({[‘’“”«»?!`) or by whitespace and a further non-space run (the next token).
//! 2. Each candidate is judged on a context: the word before it (back to the last ASCII
//!    whitespace, or an earlier candidate's word when that whitespace is the first character
//!    after the previous candidate: a quirk kept as is), the mark itself and what follows it. A
//!    candidate whose word overlaps the next candidate's is not judged on its own.
//! 3. The context is cut into Punkt's word tokens (line by line) and annotated: a lone `.` `?` `!`
//!    or a word ending in one period breaks; a run of periods (an ellipsis) never does; a single
//!    letter with a period (an initial) or a number ending in a period does not break when the
//!    next token is lower-case or one of `;:,.!?`, and an initial also not before an upper-case
//!    token. The candidate splits the text when some breaking token in the context has a token
//!    after it.
//! 4. A sentence runs to the candidate; the next starts at the following token (or right after
//!    the mark). The last one ends before the trailing whitespace. Closing quotes and brackets
//!    that open the next sentence, followed by whitespace, `--` or its end, move to the sentence
//!    before.
//!
//! Character classes are those of the engines NLTK uses: its patterns run on the third-party
//! `regex` module (`\s` is Unicode White_Space, so not U+001C..U+001F; `\w` is Alphabetic, marks,
//! decimal digits, connector punctuation and the joiners), while stripping and case tests are
//! Python's `str` methods (`isspace` does include U+001C..U+001F). Unicode versions can differ
//! (ours against `regex`'s and Python 3.11's 14.0) for characters assigned recently.

mod data;

use unicode_properties::{GeneralCategory, GeneralCategoryGroup, UnicodeGeneralCategory};

pub use data::{find_model, nltk_data_roots, Params, PunktDataError};

/// Which pattern finds candidate sentence ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// NLTK's own: the mark, then a non-word mark or whitespace and a token.
    Standard,
    /// Haystack's `keep_white_spaces` variant: the mark, closing marks and whitespace all belong
    /// to the sentence, which then runs up to the next one's first character.
    KeepSpace,
}

use crate::text::is_python_space;

/// Marks that may follow a sentence end directly (Punkt's non-word characters, with `?` `!`).
fn non_word(c: char) -> bool {
    matches!(
        c,
        ')' | '"'
            | ';'
            | '}'
            | ']'
            | '*'
            | ':'
            | '@'
            | '\''
            | '('
            | '{'
            | '['
            | '\u{2018}'
            | '\u{2019}'
            | '\u{201c}'
            | '\u{201d}'
            | '\u{ab}'
            | '\u{bb}'
            | '?'
            | '!'
    )
}

/// Characters that cannot open a word token.
fn not_word_start(c: char) -> bool {
    matches!(
        c,
        '(' | '"'
            | '`'
            | '{'
            | '['
            | ':'
            | ';'
            | '&'
            | '#'
            | '*'
            | '@'
            | ')'
            | '}'
            | ']'
            | '-'
            | ','
    )
}

/// Quotes and brackets moved back onto the sentence they close.
fn closing(c: char) -> bool {
    matches!(
        c,
        '"' | '\''
            | ')'
            | ']'
            | '}'
            | '\u{2018}'
            | '\u{2019}'
            | '\u{201c}'
            | '\u{201d}'
            | '\u{ab}'
            | '\u{bb}'
    )
}

/// Python's `string.whitespace` (ASCII only), which Punkt uses to find the word before a mark.
fn ascii_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

/// `\s` of the `regex` module: Unicode White_Space.
fn re_space(c: char) -> bool {
    c.is_whitespace()
}

/// `\d` of the `regex` module: decimal digits (Nd).
fn py_decimal(c: char) -> bool {
    c.general_category() == GeneralCategory::DecimalNumber
}

/// `[^\W\d]` of the `regex` module: a word character (Alphabetic, a mark, connector punctuation,
/// a joiner) that is not a decimal digit.
fn py_letterish(c: char) -> bool {
    if py_decimal(c) {
        return false;
    }
    c.is_alphabetic()
        || c.general_category_group() == GeneralCategoryGroup::Mark
        || c.general_category() == GeneralCategory::ConnectorPunctuation
        || matches!(c, '\u{200c}' | '\u{200d}')
}

/// Punkt's multi-character punctuation at `i`: `--…`, `..…` or `. . .`; its length in chars.
fn multi_char(c: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| c.get(k).copied();
    let run = |ch: char| c[i..].iter().take_while(|&&x| x == ch).count();
    if at(i) == Some('-') && at(i + 1) == Some('-') {
        return Some(run('-'));
    }
    if at(i) == Some('.') && at(i + 1) == Some('.') {
        return Some(run('.'));
    }
    // (". " with any whitespace) repeated at least twice, then "."
    let mut reps = 0;
    while at(i + 2 * reps) == Some('.') && at(i + 2 * reps + 1).is_some_and(re_space) {
        reps += 1;
    }
    if reps >= 2 && at(i + 2 * reps) == Some('.') {
        return Some(2 * reps + 1);
    }
    if reps >= 3 {
        return Some(2 * reps - 1);
    }
    None
}

/// Punkt's word tokens of one line (no newline inside), as char ranges of `c`.
fn line_tokens(c: &[char], out: &mut Vec<(usize, usize)>) {
    let n = c.len();
    let mut i = 0;
    while i < n {
        if re_space(c[i]) {
            i += 1;
            continue;
        }
        let len = if let Some(l) = multi_char(c, i) {
            l
        } else if !not_word_start(c[i]) {
            let mut j = i + 1;
            loop {
                if j >= n || re_space(c[j]) || non_word(c[j]) || multi_char(c, j).is_some() {
                    break;
                }
                if c[j] == ',' {
                    let k = j + 1;
                    if k >= n || re_space(c[k]) || non_word(c[k]) || multi_char(c, k).is_some() {
                        break;
                    }
                }
                j += 1;
            }
            j - i
        } else {
            1
        };
        out.push((i, i + len));
        i += len;
    }
}

/// Punkt's word tokens of a text: line by line, lines that are blank skipped.
fn tokens(c: &[char]) -> Vec<&[char]> {
    let mut out = Vec::new();
    for line in c.split(|&x| x == '\n') {
        if line.iter().all(|&x| is_python_space(x)) {
            continue;
        }
        let mut r = Vec::new();
        line_tokens(line, &mut r);
        out.extend(r.into_iter().map(|(s, e)| &line[s..e]));
    }
    out
}

/// NLTK's numeric token: `-?[.,]?\d[\d,.-]*\.?` over the whole token.
fn is_number(t: &[char]) -> bool {
    let mut i = 0;
    if t.first() == Some(&'-') {
        i += 1;
    }
    if matches!(t.get(i), Some('.') | Some(',')) {
        i += 1;
    }
    if !t.get(i).copied().is_some_and(py_decimal) {
        return false;
    }
    t[i + 1..]
        .iter()
        .all(|&x| py_decimal(x) || matches!(x, ',' | '.' | '-'))
}

/// Punkt's token type: lower case, a number as `##number##`.
fn tok_type(t: &[char]) -> String {
    if is_number(t) {
        "##number##".to_string()
    } else {
        t.iter().collect::<String>().to_lowercase()
    }
}

/// The type without its final period (when it is longer than the period).
fn no_period(typ: &str) -> &str {
    if typ.chars().count() > 1 && typ.ends_with('.') {
        &typ[..typ.len() - 1]
    } else {
        typ
    }
}

/// The first annotation pass: (sentence break, abbreviation, ellipsis).
fn first_pass(t: &[char], params: &Params) -> (bool, bool, bool) {
    if t.len() == 1 && matches!(t[0], '.' | '?' | '!') {
        return (true, false, false);
    }
    if t.len() >= 2 && t.iter().all(|&x| x == '.') {
        return (false, false, true);
    }
    if t.last() == Some(&'.') && !(t.len() >= 2 && t[t.len() - 2] == '.') {
        let stem = t[..t.len() - 1].iter().collect::<String>().to_lowercase();
        let last_part = stem.rsplit('-').next().unwrap_or("");
        let abbr = params.abbrev_types.contains(&stem) || params.abbrev_types.contains(last_part);
        return (!abbr, abbr, false);
    }
    (false, false, false)
}

/// Orthographic context flags (NLTK's `_ORTHO_*`).
const BEG_UC: u32 = 1 << 1;
const MID_UC: u32 = 1 << 2;
const UNK_UC: u32 = 1 << 3;
const BEG_LC: u32 = 1 << 4;
const MID_LC: u32 = 1 << 5;
const UNK_LC: u32 = 1 << 6;
const UC: u32 = BEG_UC | MID_UC | UNK_UC;
const LC: u32 = BEG_LC | MID_LC | UNK_LC;

/// Punkt's orthographic heuristic on the token after a period: whether it starts a sentence
/// (`Some(true)`), does not (`Some(false)`) or cannot be told (`None`).
fn ortho_heuristic(next: &[char], next_typ: &str, params: &Params) -> Option<bool> {
    if next.len() == 1 && matches!(next[0], ';' | ':' | ',' | '.' | '!' | '?') {
        return Some(false);
    }
    let ctx = params.ortho_context.get(next_typ).copied().unwrap_or(0);
    let first = next[0];
    if first.is_uppercase() && ctx & LC != 0 && ctx & MID_UC == 0 {
        return Some(true);
    }
    if first.is_lowercase() && (ctx & UC != 0 || ctx & BEG_LC == 0) {
        return Some(false);
    }
    None
}

/// Whether token `t` ends a sentence, given the token after it (Punkt's two annotation passes).
fn breaks(t: &[char], next: Option<&[char]>, params: &Params) -> bool {
    let (mut sentbreak, abbr, ellipsis) = first_pass(t, params);
    let Some(next) = next else {
        return sentbreak;
    };
    if t.last() != Some(&'.') {
        return sentbreak;
    }
    let own_type = tok_type(t);
    let typ = no_period(&own_type);
    let next_type = tok_type(next);
    let next_typ = if first_pass(next, params).0 {
        no_period(&next_type)
    } else {
        next_type.as_str()
    };
    let initial = t.len() == 2 && py_letterish(t[0]);
    if params
        .collocations
        .contains(&(typ.to_string(), next_typ.to_string()))
    {
        return false;
    }
    if (abbr || ellipsis) && !initial {
        if ortho_heuristic(next, next_typ, params) == Some(true) {
            return true;
        }
        if next[0].is_uppercase() && params.sent_starters.contains(next_typ) {
            return true;
        }
    }
    if initial || typ == "##number##" {
        match ortho_heuristic(next, next_typ, params) {
            Some(false) => sentbreak = false,
            None if initial
                && next[0].is_uppercase()
                && params.ortho_context.get(next_typ).copied().unwrap_or(0) & LC == 0 =>
            {
                sentbreak = false
            }
            _ => {}
        }
    }
    sentbreak
}

/// Whether the context holds a break with a token after it.
fn contains_break(c: &[char], params: &Params) -> bool {
    let toks = tokens(c);
    toks.iter()
        .enumerate()
        .any(|(i, t)| i + 1 < toks.len() && breaks(t, toks.get(i + 1).copied(), params))
}

/// A candidate sentence end: the mark at `at`; the match ends at `end` (right after the mark,
/// or in Haystack's variant after the closing marks and whitespace that follow it); what follows
/// it ends at `after_end`; the next token starts at `next_tok` when one follows.
struct Candidate {
    at: usize,
    end: usize,
    after_end: usize,
    next_tok: Option<usize>,
}

/// Closing marks Haystack lets trail a sentence end before the whitespace.
fn trailing_close(c: char) -> bool {
    matches!(
        c,
        ')' | ']' | '}' | '"' | '\'' | '\u{2019}' | '\u{201d}' | '\u{bb}'
    )
}

fn candidates(c: &[char], mode: Context) -> Vec<Candidate> {
    let n = c.len();
    let mut out = Vec::new();
    for i in 0..n {
        if !matches!(c[i], '.' | '?' | '!') {
            continue;
        }
        if mode == Context::KeepSpace {
            // Haystack's pattern (stdlib `re`, so `\s` is `str.isspace`): the mark, closing
            // marks, whitespace, then a non-space character ahead.
            let q = c[i + 1..]
                .iter()
                .take_while(|&&x| trailing_close(x))
                .count();
            let w = c[i + 1 + q..]
                .iter()
                .take_while(|&&x| is_python_space(x))
                .count();
            let p = i + 1 + q + w;
            if p < n {
                if non_word(c[p]) {
                    out.push(Candidate {
                        at: i,
                        end: p,
                        after_end: p + 1,
                        next_tok: None,
                    });
                } else {
                    let run = c[p..].iter().take_while(|&&x| !is_python_space(x)).count();
                    out.push(Candidate {
                        at: i,
                        end: p,
                        after_end: p + run,
                        next_tok: Some(p),
                    });
                }
            } else if q > 0 {
                // Backtracking leaves the last closing mark as what follows.
                out.push(Candidate {
                    at: i,
                    end: i + q,
                    after_end: i + q + 1,
                    next_tok: None,
                });
            }
            continue;
        }
        if i + 1 >= n {
            continue;
        }
        if non_word(c[i + 1]) {
            out.push(Candidate {
                at: i,
                end: i + 1,
                after_end: i + 2,
                next_tok: None,
            });
        } else if re_space(c[i + 1]) {
            let mut k = i + 1;
            while k < n && re_space(c[k]) {
                k += 1;
            }
            if k < n {
                let mut m = k;
                while m < n && !re_space(c[m]) {
                    m += 1;
                }
                out.push(Candidate {
                    at: i,
                    end: i + 1,
                    after_end: m,
                    next_tok: Some(k),
                });
            }
        }
    }
    out
}

/// The candidates that are judged, each with the start of its context (Punkt's
/// `_match_potential_end_contexts`).
fn judged(c: &[char], cands: &[Candidate]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut prev_start, mut prev_stop) = (0usize, 0usize);
    let mut prev: Option<usize> = None;
    for (k, m) in cands.iter().enumerate() {
        let before = &c[prev_stop..m.at];
        let last_space = before.iter().rposition(|&x| ascii_space(x)).unwrap_or(0);
        let word_start = if last_space > 0 {
            last_space + prev_stop + 1
        } else {
            prev_start
        };
        if let Some(p) = prev {
            if prev_stop <= word_start {
                out.push((p, prev_start));
            }
        }
        prev = Some(k);
        prev_start = word_start;
        prev_stop = m.at;
    }
    if let Some(p) = prev {
        out.push((p, prev_start));
    }
    out
}

/// Python's `len(text.rstrip())`.
fn rstrip_len(c: &[char]) -> usize {
    c.iter()
        .rposition(|&x| !is_python_space(x))
        .map_or(0, |i| i + 1)
}

/// Sentence spans of `c` in chars, as `PunktSentenceTokenizer().span_tokenize` gives them.
pub fn span_chars(c: &[char]) -> Vec<(usize, usize)> {
    span_chars_with(c, &Params::default(), Context::Standard)
}

/// Sentence spans of `c` in chars with trained parameters and the given context pattern.
pub fn span_chars_with(c: &[char], params: &Params, mode: Context) -> Vec<(usize, usize)> {
    let cands = candidates(c, mode);
    let mut slices = Vec::new();
    let mut last_break = 0;
    for (k, ctx_start) in judged(c, &cands) {
        let m = &cands[k];
        if contains_break(&c[ctx_start..m.after_end], params) {
            slices.push((last_break, m.end));
            last_break = m.next_tok.unwrap_or(m.end);
        }
    }
    slices.push((last_break, rstrip_len(c)));
    realign(c, &slices)
}

/// Move closing quotes and brackets that open a sentence onto the sentence before.
fn realign(c: &[char], slices: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let nonempty = |s: usize, e: usize| s < e.min(c.len());
    let mut out = Vec::new();
    let mut shift = 0;
    for (i, &(s1, e1)) in slices.iter().enumerate() {
        let s1 = s1 + shift;
        let Some(&(s2, e2)) = slices.get(i + 1) else {
            if nonempty(s1, e1) {
                out.push((s1, e1));
            }
            continue;
        };
        let e2 = e2.min(c.len());
        let next = if s2 < e2 { &c[s2..e2] } else { &[][..] };
        let quotes = next.iter().take_while(|&&x| closing(x)).count();
        let rest = &next[quotes..];
        let fits = quotes > 0
            && (rest.is_empty()
                || re_space(rest[0])
                || (rest.len() >= 2 && rest[0] == '-' && rest[1] == '-'));
        if fits {
            let spaces = rest.iter().take_while(|&&x| re_space(x)).count();
            out.push((s1, s2 + quotes));
            shift = quotes + spaces;
        } else {
            shift = 0;
            if nonempty(s1, e1) {
                out.push((s1, e1));
            }
        }
    }
    out
}

/// Sentence spans of `text` as byte ranges.
pub fn spans(text: &str) -> Vec<(usize, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut at: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    at.push(text.len());
    span_chars(&chars)
        .into_iter()
        .map(|(s, e)| (at[s.min(chars.len())], at[e.min(chars.len())]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sents(t: &str) -> Vec<&str> {
        spans(t).into_iter().map(|(s, e)| &t[s..e]).collect()
    }

    #[test]
    fn untrained_rules() {
        assert_eq!(
            sents("Hello world. This is it."),
            ["Hello world.", "This is it."]
        );
        // An initial before an upper-case word does not end a sentence.
        assert_eq!(
            sents("J. R. R. Tolkien wrote."),
            ["J. R. R. Tolkien wrote."]
        );
        // A number with a period before a lower-case word does not either.
        assert_eq!(sents("In 1999. he left."), ["In 1999. he left."]);
        assert_eq!(
            sents("Very bad acting!!! I promise."),
            ["Very bad acting!!!", "I promise."]
        );
        assert_eq!(sents("(Sent1.) Sent2."), ["(Sent1.)", "Sent2."]);
        assert!(sents("  \n ").is_empty());
    }

    #[test]
    fn trained_parameters_decide() {
        let mut p = Params::default();
        let sents = |t: &str, p: &Params| -> Vec<String> {
            let c: Vec<char> = t.chars().collect();
            span_chars_with(&c, p, Context::Standard)
                .into_iter()
                .map(|(s, e)| c[s..e].iter().collect())
                .collect()
        };
        assert_eq!(sents("Ask Dr. Who now.", &p).len(), 2);
        p.abbrev_types.insert("dr".into());
        assert_eq!(sents("Ask Dr. Who now.", &p), ["Ask Dr. Who now."]);
        // Haystack's period context keeps the closing quote and the space on the sentence.
        let c: Vec<char> = "He said \"Go.\" Then left.".chars().collect();
        let spans = span_chars_with(&c, &p, Context::KeepSpace);
        assert_eq!(spans, [(0, 14), (14, 24)]);
    }
}
