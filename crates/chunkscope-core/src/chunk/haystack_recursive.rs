//! Haystack's `RecursiveDocumentSplitter` (haystack-ai 3.4.1) at its defaults, split by word:
//! separators `"\n\n"`, sentences, `"\n"`, `" "`, tried in that order on any text longer than
//! `length` words (a word: a non-empty piece between single spaces, U+0020 only).
//!
//! - A string separator cuts after each (non-overlapping) occurrence, the separator staying at the
//!   end of its piece; a separator that leaves one piece passes to the next separator.
//! - The sentence separator is Haystack's `SentenceSplitter(keep_white_spaces=True)`: NLTK's
//!   English Punkt model (punkt_tab, read at run time, never shipped) with Haystack's extra
//!   abbreviations, a period context that keeps closing marks and whitespace on the sentence, and
//!   Haystack's joining rules (a break inside or right after a quote, a cited question, a number
//!   like `3.` opening a line, a next sentence opening with `(` or `[`). Each piece runs from one
//!   sentence's start to the next one's; what follows the last sentence joins the last chunk.
//! - Pieces are merged greedily up to `length` words; a piece over it is split again from the
//!   first separator, or, at the last separator, cut every `length` words (whitespace runs kept,
//!   trailing whitespace joined to the chunk before).
//! - With overlap, each chunk after the first opens with the last `overlap` words of the chunk
//!   before (words as runs between spaces, counted per chunk); a chunk that then exceeds
//!   `length` words hands its remaining words on to the next one, and the last chunk is cut until
//!   it fits.
//!
//! The chunks are slices of the document, so offsets are exact.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::punkt::{self, Context, Params, PunktDataError};
use super::{Chunk, Chunker, DocView};
use crate::text::is_python_space;

pub struct HaystackRecursive {
    /// `split_length`, in words.
    pub length: usize,
    /// `split_overlap`, in words.
    pub overlap: usize,
    /// The English Punkt model with Haystack's abbreviations (`english_params`); `None` when it
    /// could not be loaded, which `ChunkSettings::validate` reports: then there are no chunks.
    pub params: Option<Arc<Params>>,
}

impl Chunker for HaystackRecursive {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        let Some(params) = &self.params else {
            return Vec::new();
        };
        split(doc.text, self.length, self.overlap, params)
            .into_iter()
            .map(|(s, e)| Chunk::slice(s, e))
            .collect()
    }
}

/// The roots searched and the model found under them.
type Loaded = (Vec<PathBuf>, Arc<Params>);

/// NLTK's English punkt_tab model, found where NLTK looks (`nltk_data` first when given), with
/// Haystack's extra abbreviations added; found and loaded once per list of roots (every
/// document's chunker asks, and looking at four files on disk each time was a fourteenth of a
/// knob turn).
pub fn english_params(nltk_data: Option<&Path>) -> Result<Arc<Params>, PunktDataError> {
    static CACHE: OnceLock<Mutex<Vec<Loaded>>> = OnceLock::new();
    let roots = punkt::nltk_data_roots(nltk_data);
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let known = cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(r, _)| *r == roots)
        .map(|(_, p)| Arc::clone(p));
    if let Some(params) = known {
        return Ok(params);
    }
    let dir = punkt::find_model(&roots, "english")?;
    let mut params = Params::load(&dir)?;
    // Haystack's list file ends with a newline, so its split adds the empty type too (it makes
    // a word ending in "-." an abbreviation).
    params.abbrev_types.extend(
        HAYSTACK_ABBREVIATIONS
            .split_whitespace()
            .map(str::to_string),
    );
    params.abbrev_types.insert(String::new());
    let params = Arc::new(params);
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((roots, Arc::clone(&params)));
    Ok(params)
}

/// Words as Haystack counts them: pieces between single spaces, empty ones not counted.
fn words(s: &str) -> usize {
    // Runs of bytes other than the space: a UTF-8 sequence never holds a 0x20 byte.
    let mut n = 0;
    let mut inside = false;
    for &b in s.as_bytes() {
        if b == b' ' {
            inside = false;
        } else if !inside {
            inside = true;
            n += 1;
        }
    }
    n
}

#[derive(Clone, Copy, PartialEq)]
enum Sep {
    Str(&'static str),
    Sentence,
}

const SEPARATORS: [Sep; 4] = [
    Sep::Str("\n\n"),
    Sep::Sentence,
    Sep::Str("\n"),
    Sep::Str(" "),
];

/// Chunks of `text` as byte ranges that tile it.
pub fn split(text: &str, length: usize, overlap: usize, params: &Params) -> Vec<(usize, usize)> {
    if text.is_empty() || length == 0 || overlap >= length {
        return Vec::new();
    }
    let mut chunks = chunk_text(text, 0, text.len(), length, params);
    if chunks.last().is_some_and(|&(s, e)| s == e) {
        chunks.pop();
    }
    if overlap > 0 && !chunks.is_empty() {
        return word_overlap(text, &chunks, length, overlap);
    }
    chunks
}

fn chunk_text(
    text: &str,
    s: usize,
    e: usize,
    length: usize,
    params: &Params,
) -> Vec<(usize, usize)> {
    if words(&text[s..e]) <= length {
        return vec![(s, e)];
    }
    for sep in SEPARATORS {
        let mut trailing = false;
        let splits: Vec<(usize, usize)> = match sep {
            Sep::Str(sep) => {
                let mut out = Vec::new();
                let mut from = s;
                for (i, m) in text[s..e].match_indices(sep) {
                    out.push((from, s + i + m.len()));
                    from = s + i + m.len();
                }
                if from < e {
                    out.push((from, e));
                }
                out
            }
            Sep::Sentence => {
                let sents = sentences(&text[s..e], params);
                let mut out = Vec::new();
                if let Some(&(_, last_end)) = sents.last() {
                    let mut bounds: Vec<usize> = sents.iter().map(|&(a, _)| s + a).collect();
                    bounds.push(s + last_end);
                    out = bounds.windows(2).map(|w| (w[0], w[1])).collect();
                    trailing = true;
                }
                out
            }
        };
        if splits.len() == 1 {
            continue;
        }
        let mut chunks: Vec<(usize, usize)> = Vec::new();
        let mut current: Option<(usize, usize)> = None;
        let mut current_words = 0;
        for &(a, b) in &splits {
            let n = words(&text[a..b]);
            if current_words + n > length {
                if let Some(c) = current.take() {
                    chunks.push(c);
                    current_words = 0;
                }
                if n > length {
                    if sep == SEPARATORS[SEPARATORS.len() - 1] {
                        chunks.extend(fixed_words(text, a, b, length));
                    } else {
                        chunks.extend(chunk_text(text, a, b, length, params));
                    }
                    continue;
                }
            }
            current = Some(current.map_or((a, b), |(ca, _)| (ca, b)));
            current_words += n;
        }
        if let Some(c) = current {
            chunks.push(c);
        }
        if let Some(last) = chunks.last_mut() {
            if trailing {
                last.1 = e;
            }
            return chunks;
        }
    }
    fixed_words(text, s, e, length)
}

/// Haystack's fallback: every `length` words (runs of non-whitespace) a chunk; whitespace left
/// at the end joins the chunk before.
fn fixed_words(text: &str, s: usize, e: usize, length: usize) -> Vec<(usize, usize)> {
    let mut chunks: Vec<(usize, usize)> = Vec::new();
    let mut from = s;
    let mut count = 0;
    let mut in_word = false;
    for (i, ch) in text[s..e].char_indices() {
        let word = !is_python_space(ch);
        if word && !in_word {
            count += 1;
        }
        in_word = word;
        // A word ends before whitespace or at the end of the text.
        let next_is_space = text[s + i + ch.len_utf8()..e]
            .chars()
            .next()
            .is_none_or(is_python_space);
        if word && next_is_space && count == length {
            let end = s + i + ch.len_utf8();
            chunks.push((from, end));
            from = end;
            count = 0;
        }
    }
    if count > 0 {
        chunks.push((from, e));
    } else if from < e {
        match chunks.last_mut() {
            Some(last) => last.1 = e,
            None => chunks.push((from, e)),
        }
    }
    chunks
}

/// Haystack's overlap by words, on chunks that tile `text`.
fn word_overlap(
    text: &str,
    chunks: &[(usize, usize)],
    length: usize,
    overlap: usize,
) -> Vec<(usize, usize)> {
    let total = chunks.last().map_or(0, |c| c.1);
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut word_ends: Vec<usize> = Vec::new();
    let mut starts: Vec<usize> = Vec::new();
    for &(cs, ce) in chunks {
        let before = words.len();
        let mut at = cs;
        for piece in text[cs..ce].split(' ') {
            if !piece.is_empty() {
                words.push((at, at + piece.len()));
            }
            at += piece.len() + 1;
        }
        if words.len() > before {
            word_ends.push(words.len());
            starts.push(cs);
        }
    }
    if words.is_empty() {
        return vec![(0, total)];
    }
    let mut ends: Vec<usize> = starts[1..].to_vec();
    ends.push(total);
    let mut spans = vec![(0, ends[0])];
    let (mut first, mut end_word) = (0usize, word_ends[0]);
    for idx in 1..word_ends.len() {
        loop {
            first = first.max(end_word.saturating_sub(overlap));
            end_word = (first + length).min(word_ends[idx]);
            let end = if end_word == word_ends[idx] {
                ends[idx]
            } else {
                words[end_word - 1].1
            };
            spans.push((words[first].0, end));
            if idx < word_ends.len() - 1 || end_word == word_ends[idx] {
                break;
            }
        }
    }
    spans
}

/// Haystack's sentences of `piece` as byte ranges (`SentenceSplitter(keep_white_spaces=True)`):
/// Punkt's spans, then its joining rules.
pub fn sentences(piece: &str, params: &Params) -> Vec<(usize, usize)> {
    let c: Vec<char> = piece.chars().collect();
    let spans = join_rules(&c, punkt::span_chars_with(&c, params, Context::KeepSpace));
    let mut at: Vec<usize> = piece.char_indices().map(|(i, _)| i).collect();
    at.push(piece.len());
    spans
        .into_iter()
        .map(|(s, e)| (at[s.min(c.len())], at[e.min(c.len())]))
        .collect()
}

/// Spans of `"…"` and `'…'` (leftmost, not overlapping), in chars.
fn quote_spans(c: &[char]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let q = c[i];
        if q == '"' || q == '\'' {
            if let Some(j) = c[i + 1..].iter().position(|&x| x == q) {
                out.push((i, i + 1 + j + 1));
                i += j + 2;
                continue;
            }
        }
        i += 1;
    }
    out
}

fn join_rules(c: &[char], spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let quotes = quote_spans(c);
    let mut out = Vec::new();
    let mut i = 0;
    while i < spans.len() {
        let mut span = spans[i];
        i += 1;
        while i < spans.len() && needs_join(c, span, spans[i], &quotes) {
            span = (span.0, spans[i].1);
            i += 1;
        }
        out.push(span);
    }
    out
}

fn needs_join(
    c: &[char],
    span: (usize, usize),
    next: (usize, usize),
    quotes: &[(usize, usize)],
) -> bool {
    let start = span.0;
    let end = start
        + c[start..span.1]
            .iter()
            .rposition(|&x| !is_python_space(x))
            .map_or(0, |k| k + 1);
    // The one quote that can hold or close at `end` (quotes do not overlap).
    let k = quotes.partition_point(|q| q.1 < end);
    if let Some(&(qs, qe)) = quotes.get(k) {
        if qs < end && end < qe {
            return true;
        }
        if qs < end && end == qe && (c[qe - 2] == '?' || (qe < c.len() && !is_python_space(c[qe])))
        {
            return true;
        }
    }
    if numbered(&c[start..end]) {
        return true;
    }
    c[next.0..next.1]
        .iter()
        .find(|&&x| !is_python_space(x))
        .is_some_and(|&x| x == '(' || x == '[')
}

/// Whether `s` ends in a list number like `3.` or `12.` alone at the start of a line.
fn numbered(s: &[char]) -> bool {
    let Some((&'.', before)) = s.split_last() else {
        return false;
    };
    let digits = before.iter().rev().take_while(|&&x| is_decimal(x)).count();
    if !(1..=2).contains(&digits) {
        return false;
    }
    let k = before.len() - digits;
    let spaces = before[..k]
        .iter()
        .rev()
        .take_while(|&&x| is_python_space(x))
        .count();
    let ws = &before[k - spaces..k];
    k == spaces || ws.contains(&'\n')
}

/// `\d` of Python's `re`: a decimal digit (Nd).
fn is_decimal(c: char) -> bool {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    c.general_category() == GeneralCategory::DecimalNumber
}

/// Haystack's extra English abbreviations (haystack/data/abbreviations/en.txt of haystack-ai
/// 3.4.1), lower case, without their periods.
const HAYSTACK_ABBREVIATIONS: &str = "
abbrev abd aberd aberdeensh abl abol aborig abp abr abridg abridgem absol abst abstr acad acc
accomm accompl accs acct accts accus achievem add addit addr adj adjs adm admir admon admonit
adv advancem advb advert advoc advs advt advts aerodynam aeronaut aff afr agric agst al alch alg
alleg allit alm alph alt amer analyt anat anc anecd ang angl anglo-ind anim ann anniv annot anon
answ anthrop anthropol antiq aphet apoc apol appl appl'n applic appos apr arb archaeol archit
argt arith arithm arrangem arrv artic artific artill ashm assemb assoc assyriol astr astrol
astron att attrib aug austral auth autobiog autobiogr ave ayrsh bacteriol bedfordsh bef belg
berks berksh berw berwicksh betw bibliogr biochem biog biogr biol bk bks blvd bord bp braz bros
bur cal calc calend calif calligr camb cambr campanol canad canterb capt cartogr catal catech
cath ceram cert certif cf ch chamb char charac chas chem chesh chr chron chronol chrons
cinematogr circ cl classif climatol clin co col coll colloq com comm commandm commend commerc
commiss commonw communic comp compan compar compend compl compos conc conch concl concr conf
confid confl confut congr congreg conj conn cons consc consecr consid consol const constit
constr contemp contempl contempt contend contin contr contrib controv conv conversat convoc cor
cornw coron corp corr corresp counc courtsh cpd craniol craniom crim crit crt crts cryptogr
crystallogr ct cumb cumberld cumbld cycl cytol dat dau deb dec declar ded def deliv dem demonstr
dep depred depredat dept derbysh deriv derog descr deut devel devonsh dict diffic dim dis
discipl discov discrim diss dist distemp distill distrib div divers dk doc doct domest dr drs
durh dyslog eccl eccles ecclus ecol econ ed edin edinb educ edw egypt egyptol electr electro-
magn electro-physiol elem eliz elizab ellipt emb embryol emph encl encycl eng engin englishw enq
ent enthus entom entomol enzymol ep eph ephes epil episc epist epit equip erron esd esp ess
essent establ esth etc ethnol etym etymol euphem eval evang evid evol exalt exc exch exec exerc
exhib exod exped exper explan explic explor expos ext ezek fab fam famil farew feb fem ff fifesh
fig fl footpr forfarsh fortif fortn found fr fragm fratern freq fri friendsh ft furnit fut gal
gard gastron gaz gd gen geo geog geogr geol geom geomorphol ger glac glasg glos gloss glouc
gloucestersh gosp gov govt gr gram gt gynaecol hab haematol hag hampsh handbk hants heb hebr hen
herb heref herefordsh hertfordsh hierogl hist histol hom horol hort hos hosp househ housek husb
hydraul hydrol ichth icthyol ideol idol illustr imag imit immunol imp imperf impers impf impr
improp inaug inc inclos ind indef indic indir industr infin infl innoc inorg inq inst instr int
intell interc interj interl internat interpr interrog intr intrans intro introd inv invertebr
investig investm invoc ir irel iron irreg isa ital jahrb jam jan jap jas jer joc josh jr jrnl
jrnls jud judg jul jun jurisd jurisdict jurispr justif justific kgs kingd knowl kpr lam lanc
lancash lancs lang langs lat lb ld lds lect leechd leicest leicestersh leics let lett lev lex
libr limnol lincolnsh lincs ling linn lit lithogr lithol liturg ll lond lt ltd macc mach mag
magn mal managem manch manip manuf mar masc matt meas measurem mech med medit mem merc merch
metall metallif metallogr metamorph metaph metaphor meteorol metrop mex mic mich microbiol
microsc midl mil milit min mineral misc miscell mispr mon monum morphol mr mrs ms msc mss mt mtg
mts munic munif munim mus myst mythol nah narr narrat nat naut nav navig neh neighb nerv neurol
neurosurg newc newspr nom non-conf nonce-wd nonconf norf northamptonsh northants northumb
northumbld northumbr norw norweg notts nov ns nucl num numism obad obed obj obl obs observ
obstet obstetr occas occup occurr oceanogr oct offic okla ont ophthalm ophthalmol opp oppress
opt orac ord org orig orkn ornith ornithol orthogr outl oxf oxfordsh oxon oz pa palaeobot
palaeogr palaeont palaeontol paraphr parasitol parl parnass pathol peculat penins perf perh
periodontol pers persec personif perthsh petrogr pf pharm pharmaceut pharmacol phd phil philad
philem philipp philol philos phoen phonet phonol photog photogr phr phrenol phys physiogr
physiol pict pl plur pol polit polytechn porc poss posth postm ppl pple pples pract prec pred
predic predict pref preh prehist prep prerog pres presb preserv prim princ priv prob probab
probl proc prod prof prol pron pronunc prop propr pros prov provid provinc provis ps pseudo-arch
pseudo-dial pseudo-sc psych psychoanal psychoanalyt psychol psychopathol pt publ purg qld quot
quots radiol reas reb rec reclam recoll redempt redupl ref refash refl refus refut reg regic
regist regr rel relig reminisc remonstr renfrewsh rep repr reprod reps rept repub res resid ret
retrosp rev revol rhet rich ross-sh roxb roy rudim russ sam sask sat sc scand sch sci scot scotl
script sculpt seismol sel sen sep sept ser serm sess settlem sev shakes shaks sheph shetl
shropsh soc sociol som sonn sp spec specif specim spectrosc spp sq sr ss st staffordsh staffs
stat statist ste str stratigr struct sts stud subj subjunct subord subscr subscript subseq subst
suff superl suppl supplic suppress surg surv sus syll symmetr symp syst taxon techn technol tel
telecomm telegr teleph teratol terminol terrestr textbk theat theatr theol theoret thermonucl
thes thess thur topogr tr trad trag trans transf transl transubstant trav treas treatm trib trig
trigonom trop troub troubl tue typog typogr ult univ unkn unnat unoffic unstr usu utilit va vac
valedict var varr vars vb vbl vbs veg venet vertebr vet vic vict vind vindic virg virol viz voc
vocab vol vols voy vs vulg warwicksh wd wed westm westmld westmorld westmrld wilts wiltsh wis
wisd wk wkly wks wonderf worc worcestersh worcs writ yearbk yng yorks yorksh yr yrs zech
zeitschr zeph zoogeogr zool
";

#[cfg(test)]
mod tests {
    use super::*;

    /// Words counted byte by byte are Haystack's pieces between single spaces, empty ones not
    /// counted (tabs, newlines and no-break spaces are inside words).
    #[test]
    fn words_are_pieces_between_spaces() {
        for t in [
            "",
            " ",
            "a",
            "  a  b ",
            "one two\tthree\nfour",
            "\u{a0}x y\u{3000}z  \u{4e2d}\u{6587} \u{e9}",
        ] {
            let pieces = t.split(' ').filter(|w| !w.is_empty()).count();
            assert_eq!(words(t), pieces, "{t:?}");
        }
    }

    fn texts(t: &str, l: usize, o: usize) -> Vec<&str> {
        split(t, l, o, &Params::default())
            .into_iter()
            .map(|(s, e)| &t[s..e])
            .collect()
    }

    #[test]
    fn paragraphs_then_words() {
        assert_eq!(texts("a b\n\nc d e", 2, 0), ["a b\n\n", "c d ", "e"]);
        // As haystack-ai 3.4.1 gives them: an overlapped chunk ends after its last word.
        assert_eq!(texts("a b c d e", 2, 1), ["a b ", "b c", "c d", "d e"]);
        assert_eq!(
            texts("a b\n\nc d e", 2, 1),
            ["a b\n\n", "b\n\nc", "c d", "d e"]
        );
        assert!(texts("", 2, 0).is_empty());
    }

    #[test]
    fn list_numbers_and_brackets_join() {
        assert!(numbered(&"x\n 3.".chars().collect::<Vec<_>>()));
        assert!(numbered(&"12.".chars().collect::<Vec<_>>()));
        assert!(!numbered(&"x 3.".chars().collect::<Vec<_>>()));
        assert!(!numbered(&"123.".chars().collect::<Vec<_>>()));
    }
}
