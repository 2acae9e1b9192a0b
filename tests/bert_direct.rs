//! BERT's tokenizer computed directly (tokenize/bert_direct.rs) gives the tokenizers crate's own
//! spans and word numbers: on the real model's tokenizer and on variants of its normalizer
//! (cased, accents kept or stripped alone, no cleaning, no Chinese padding, no normalizer), over
//! the varied texts and over generated strings built from the characters each step of the
//! pipeline treats apart.

mod common;

use chunkscope_core::tokenize::EmbedTokenizer;
use proptest::prelude::*;

/// The real tokenizer with its normalizer replaced by `normalizer` (JSON), written to a scratch
/// folder and loaded as any model's.
fn variant(name: &str, normalizer: serde_json::Value) -> EmbedTokenizer {
    let path = common::model().tokenizer_path();
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    json["normalizer"] = normalizer;
    // One folder per call: the tests run in parallel.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "chunkscope-bert-direct-{}-{name}-{call}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tokenizer.json");
    std::fs::write(&file, serde_json::to_string(&json).unwrap()).unwrap();
    let tok = EmbedTokenizer::from_file(&file).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    tok
}

fn bert(clean: bool, chinese: bool, strip: Option<bool>, lower: bool) -> serde_json::Value {
    serde_json::json!({
        "type": "BertNormalizer",
        "clean_text": clean,
        "handle_chinese_chars": chinese,
        "strip_accents": strip,
        "lowercase": lower,
    })
}

fn tokenizers() -> Vec<(&'static str, EmbedTokenizer)> {
    vec![
        (
            "real",
            EmbedTokenizer::from_file(&common::model().tokenizer_path()).unwrap(),
        ),
        ("cased", variant("cased", bert(true, true, None, false))),
        (
            "strip-only",
            variant("strip-only", bert(true, true, Some(true), false)),
        ),
        (
            "lower-keep-accents",
            variant("lower-keep", bert(true, true, Some(false), true)),
        ),
        (
            "no-clean",
            variant("no-clean", bert(false, false, None, true)),
        ),
        ("none", variant("none", serde_json::Value::Null)),
    ]
}

/// Fragments that each step of the pipeline treats apart.
const FRAGMENTS: &[&str] = &[
    // words, numbers, ASCII punctuation and whitespace
    "Retrieval",
    "chunk",
    "tokenization",
    "embeddings",
    "RAG",
    "2026",
    "x86_64",
    "l33t",
    "a",
    "don't",
    "e.g.",
    "(k=10)",
    "##",
    "#",
    "$",
    "+",
    "<",
    "=",
    "^",
    "`",
    "|",
    "~",
    "\\",
    "@",
    "_",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    // controls and formats: dropped by the cleaning, or kept without it
    "\0",
    "\u{1}",
    "\u{b}",
    "\u{c}",
    "\u{1f}",
    "\u{7f}",
    "\u{85}",
    "\u{ad}",
    "\u{200b}",
    "\u{200d}",
    "\u{feff}",
    "\u{fffd}",
    "\u{e000}",
    // Unicode whitespace
    "\u{a0}",
    "\u{2002}",
    "\u{2009}",
    "\u{3000}",
    "\u{2028}",
    "\u{1680}",
    // accents, precomposed and combining, and letters NFD leaves alone
    "é",
    "É",
    "Ñ",
    "ł",
    "Ż",
    "Å",
    "ǅ",
    "e\u{301}",
    "\u{301}",
    "\u{323}",
    "\u{308}",
    "a\u{323}\u{302}",
    "ệ",
    "ΐ",
    "Σ",
    "ς",
    "İ",
    "ß",
    "ẞ",
    "\u{212a}",
    "ﬁ",
    "Ω",
    "\u{2126}",
    "ÿ",
    // scripts
    "Привет",
    "Ελληνικά",
    "한국어",
    "ｶﾀｶﾅ",
    "ひらがな",
    "中文",
    "检索",
    "\u{f900}",
    "\u{2f800}",
    "\u{20000}",
    "ไทย",
    "العربية",
    "क़",
    "\u{93c}",
    "עִבְרִית",
    // punctuation and symbols outside ASCII
    "’",
    "“",
    "”",
    "—",
    "–",
    "…",
    "«",
    "»",
    "¿",
    "¡",
    "·",
    "\u{37e}",
    "\u{387}",
    "©",
    "€",
    "°",
    "→",
    "½",
    "²",
    "™",
    // emoji and sequences
    "👍",
    "🧪",
    "👩‍🔬",
    "🇵🇱",
    "❤\u{fe0f}",
    // a kept mark NFD may reorder (musical symbol combining stem: Mc, class 216)
    "\u{1d165}",
    "\u{1d16d}",
    // added tokens, as the crate matches them and as it does not
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "[UNK]",
    "[PAD]",
    "[cls]",
    "[Sep]",
    "[CLS",
    "CLS]",
    "[[CLS]]",
    // words past WordPiece's 100 characters, and pieces the vocabulary lacks
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "\u{10fffd}",
    "\u{1f9ff}\u{1f9fe}",
    "ꙮ",
];

fn text_strategy() -> impl Strategy<Value = String> {
    // Words of exactly 100 and 101 characters, each side of WordPiece's limit.
    let limit: &[String] = Box::leak(Box::new([
        "q".repeat(100),
        "q".repeat(101),
        "é".repeat(101),
    ]));
    let fragments: Vec<&'static str> = FRAGMENTS
        .iter()
        .copied()
        .chain(limit.iter().map(String::as_str))
        .collect();
    prop::collection::vec(prop::sample::select(fragments), 0..40).prop_map(|v| v.concat())
}

#[test]
fn direct_spans_equal_the_crate_on_varied_texts() {
    let texts = common::varied_texts();
    for (name, tok) in tokenizers_once() {
        let mut direct = 0;
        for (what, text) in &texts {
            assert_eq!(
                tok.spans(text).unwrap(),
                common::crate_spans(tok, text),
                "{name} tokenizer, {what}"
            );
            direct += usize::from(tok.direct_spans(text).is_some());
        }
        // The direct path must be the one taken, or this test compares the crate with itself.
        assert!(
            direct * 10 >= texts.len() * 9,
            "{name}: only {direct} of {} texts computed directly",
            texts.len()
        );
    }
}

#[test]
fn direct_spans_on_added_tokens_and_reordered_marks() {
    let tok = EmbedTokenizer::from_file(&common::model().tokenizer_path()).unwrap();
    // Added tokens are matched where they stand, case and all, a word of their own.
    let text = "Input: [CLS] query [SEP] passage[SEP]x [cls] [MASK][MASK].";
    let direct = tok
        .direct_spans(text)
        .expect("added tokens are matched directly");
    assert_eq!(direct, common::crate_spans(&tok, text));
    let at = text.find("[CLS]").unwrap() as u32;
    assert!(direct.iter().any(|s| s.start == at && s.end == at + 5));
    // A kept mark that NFD could move is left to the crate, whole.
    let text = "stem \u{1d165} here";
    assert!(tok.direct_spans(text).is_none());
    assert_eq!(tok.spans(text).unwrap(), common::crate_spans(&tok, text));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn direct_spans_equal_the_crate_on_generated_text(text in text_strategy()) {
        for (name, tok) in tokenizers_once() {
            prop_assert_eq!(tok.spans(&text).unwrap(), common::crate_spans(tok, &text), "{} tokenizer", name);
        }
    }
}

fn tokenizers_once() -> &'static [(&'static str, EmbedTokenizer)] {
    static T: std::sync::OnceLock<Vec<(&'static str, EmbedTokenizer)>> = std::sync::OnceLock::new();
    T.get_or_init(tokenizers)
}
