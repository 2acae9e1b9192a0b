//! Preset parity with haystack-ai 3.4.1's RecursiveDocumentSplitter (separators "\n\n",
//! sentence, "\n", " "; split by word) and its NLTK sentence splitter (nltk 3.10.4, the English
//! punkt_tab model), run for real in the Python environment named by CHUNKSCOPE_SPLITTERS_PYTHON
//! (tests/reference/chonkie_ref.py; scripts/test.sh sets it up with the pinned versions). Both
//! sides read the same punkt_tab folder: the one llama-index-core ships, found through
//! CHUNKSCOPE_REF_PYTHON. Chunk texts and start offsets (in code points) must be identical on the
//! examples, the shared seed articles and XQuAD contexts, and hard cases (abbreviations and
//! decimals, quotes and numbered lists, CJK punctuation, long words, empty lines, tables, code
//! fences, text without separators), at the defaults and at two other sizes and overlaps.

mod common;

use std::path::PathBuf;

use chunkscope_core::chunk::haystack_recursive::{self, english_params, HaystackRecursive};
use chunkscope_core::chunk::punkt;
use common::parity::{self, Doc, Tally};
use common::python_with;
use serde_json::json;

/// The pinned reference packages, as scripts/test.sh installs them.
const PINS: &[(&str, &str)] = &[("haystack-ai", "3.4.1"), ("nltk", "3.10.4")];

const TEST: &str = "parity: haystack-recursive";

/// The interpreter of CHUNKSCOPE_SPLITTERS_PYTHON when it has the pinned packages; otherwise the
/// test is reported as skipped (a failure under CI=true).
fn splitters_python() -> Option<PathBuf> {
    parity::splitters_python(TEST, "haystack, nltk", PINS)
}

/// The nltk_data folder llama-index-core ships (it holds tokenizers/punkt_tab/english), found
/// through CHUNKSCOPE_REF_PYTHON.
fn nltk_data() -> Option<PathBuf> {
    let Some(exe) = std::env::var_os("CHUNKSCOPE_REF_PYTHON").map(PathBuf::from) else {
        common::skip(
            TEST,
            "CHUNKSCOPE_REF_PYTHON is not set; run scripts/test.sh (its .venv-ref has llama-index-core, which ships NLTK's punkt_tab data)",
        );
        return None;
    };
    let script = "import os, llama_index.core as c\n\
                  print(os.path.join(os.path.dirname(c.__file__), '_static', 'nltk_cache'))";
    let out = std::process::Command::new(&exe)
        .args(["-c", script])
        .output();
    let dir = match out {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        _ => {
            common::skip(
                TEST,
                &format!(
                    "{} has no llama-index-core (and so no punkt_tab data); run scripts/test.sh",
                    exe.display()
                ),
            );
            return None;
        }
    };
    if !dir
        .join("tokenizers/punkt_tab/english/abbrev_types.txt")
        .is_file()
    {
        common::skip(
            TEST,
            &format!("{} holds no tokenizers/punkt_tab/english", dir.display()),
        );
        return None;
    }
    Some(dir)
}

/// The recursive splitters' hard cases, and quotes and lists that trained Punkt decides on.
fn hard_cases() -> Vec<(String, String)> {
    let mut v = parity::recursive_hard_cases();
    let mut add = |n: &str, t: String| v.push((n.to_string(), t));
    add(
        "punkt quotes and lists.txt",
        "He said \"Stop. Now.\" Then left. She asked \"Why?\" and waited. \"Done.\", he said. \
         (Aside.) Next one. [Note.] Ok.\n1. First item here. 2. Second item.\n 12. Twelfth. \
         It's 'quoted. inside' text. Mr. Brown met Mrs. Green at St. Paul's, approx. 3 p.m. \
         Fig. 3 shows it. See ch. 4, sec. 2. The co. ltd. was sold. Gen. Lee vs. Gen. Grant. \
         Inc. Corp. (cf. above) e.g. this... And that!) Right?' Sure.» Fine.’ Yes.” No.\n\n"
            .repeat(20),
    );
    v
}

/// Texts that make every trained-Punkt rule decide: words drawn from the model's own
/// abbreviations, sentence starters, collocations and orthographic history (read from the
/// punkt_tab folder at run time), Haystack's extra abbreviations, initials, numbers, ellipses and
/// quotes, each often followed by a period and a capitalized or lower-case word.
fn punkt_stress(data: &std::path::Path) -> Vec<(String, String)> {
    let dir = data.join("tokenizers/punkt_tab/english");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let mut pool: Vec<String> = Vec::new();
    pool.extend(read("abbrev_types.txt").lines().map(str::to_string));
    pool.extend(read("sent_starters.txt").lines().map(str::to_string));
    for line in read("collocations.tab").lines() {
        pool.extend(line.split('\t').map(str::to_string));
    }
    pool.extend(
        read("ortho_context.tab")
            .lines()
            .step_by(97)
            .filter_map(|l| l.split('\t').next().map(str::to_string)),
    );
    for w in [
        "cf",
        "esp",
        "viz",
        "fig",
        "vol",
        "univ",
        "dept",
        "corp",
        "gen",
        "anglo-ind",
        "appl'n",
        "approx",
        "etc",
        "vs",
        "inc",
        "ltd",
        "jan",
        "feb",
        "mr",
        "mrs",
        "dr",
        "st",
        "co-op",
        "x-",
        "J",
        "a",
        "Q",
        "3",
        "12",
        "1999",
        "4.5",
        "...",
        "..",
        "U.S",
        "e.g",
        "i.e",
        "ph.d",
        "##number##",
    ] {
        pool.push(w.to_string());
    }
    pool.retain(|w| !w.is_empty());
    let marks = [
        ". ", ". ", ". ", "? ", "! ", ".\n", ".\" ", ".) ", "., ", ".' ", " ", " ", ", ", ".\n\n",
        "... ", ".” ",
    ];
    let mut next = parity::sequence(0x9e37_79b9_7f4a_7c15);
    (0..8)
        .map(|i| {
            let mut t = String::new();
            for _ in 0..(600 + 300 * i) {
                let w = &pool[next() % pool.len()];
                let w = match next() % 3 {
                    0 => {
                        let mut c = w.chars();
                        c.next()
                            .map(|f| f.to_uppercase().chain(c).collect())
                            .unwrap_or_default()
                    }
                    _ => w.clone(),
                };
                t.push_str(&w);
                t.push_str(marks[next() % marks.len()]);
                match next() % 23 {
                    0 => t.push('"'),
                    1 => t.push('('),
                    2 => t.push_str("\n1. "),
                    _ => {}
                }
            }
            (format!("punkt stress {i}.txt"), t)
        })
        .collect()
}

fn docs(data: &std::path::Path) -> Vec<Doc> {
    let mut extra = hard_cases();
    extra.extend(punkt_stress(data));
    parity::docs(extra)
}

/// Ours at `length`/`overlap` words against Haystack at the same settings, or at its defaults
/// when `defaults` (then it must report our length).
fn check(length: usize, overlap: usize, defaults: bool) {
    let Some(py) = splitters_python() else {
        return;
    };
    let Some(data) = nltk_data() else {
        return;
    };
    let docs = docs(&data);
    let (req_size, req_overlap) = if defaults {
        (json!(null), json!(null))
    } else {
        (json!(length), json!(overlap))
    };
    let reference = python_with(
        &py,
        "chonkie_ref.py",
        &json!({
            "library": "haystack-recursive",
            "texts": parity::texts(&docs),
            "chunk_size": req_size,
            "overlap": req_overlap,
            "nltk_data": data,
        }),
    );
    assert_eq!(
        reference["chunk_size"].as_u64(),
        Some(length as u64),
        "split_length"
    );
    let chunker = HaystackRecursive {
        length,
        overlap,
        params: Some(english_params(Some(&data)).unwrap()),
    };
    parity::compare(
        &format!("haystack-recursive {length}/{overlap}"),
        &docs,
        &reference,
        |d| parity::ours(d, &chunker),
    );
}

/// Sentences of every text, ours against `library` of chonkie_ref.py (start in code points,
/// text); panics with the first difference of each differing text.
fn check_sentences(library: &str, ours: impl Fn(&str) -> Vec<(usize, usize)>) {
    let Some(py) = splitters_python() else {
        return;
    };
    let Some(data) = nltk_data() else {
        return;
    };
    let docs = docs(&data);
    let reference = python_with(
        &py,
        "chonkie_ref.py",
        &json!({
            "library": library,
            "texts": parity::texts(&docs),
            "nltk_data": data,
        }),
    );
    let expected = parity::expected(&reference, docs.len(), |v| v.as_u64().unwrap());
    let mut tally = Tally::new("sentence");
    for (doc, exp) in docs.iter().zip(&expected) {
        tally.add(&doc.name, &parity::spans(&doc.text, ours(&doc.text)), exp);
    }
    tally.finish(library, &reference);
}

/// The sentence level alone: our trained Punkt with Haystack's rules against Haystack's
/// SentenceSplitter, sentence for sentence.
#[test]
fn haystack_sentences_match() {
    let Some(data) = nltk_data() else {
        return;
    };
    let params = english_params(Some(&data)).unwrap();
    check_sentences("haystack-sentences", |t| {
        haystack_recursive::sentences(t, &params)
    });
}

/// The trained Punkt extension on its own: nltk's PunktTokenizer("english") (its own period
/// context, no Haystack abbreviations or rules).
#[test]
fn trained_punkt_matches_nltk() {
    let Some(data) = nltk_data() else {
        return;
    };
    let dir = punkt::find_model(&[data], "english").unwrap();
    let params = punkt::Params::load(&dir).unwrap();
    check_sentences("punkt-english", |t| {
        let c: Vec<char> = t.chars().collect();
        let mut at: Vec<usize> = t.char_indices().map(|(i, _)| i).collect();
        at.push(t.len());
        punkt::span_chars_with(&c, &params, punkt::Context::Standard)
            .into_iter()
            .map(|(s, e)| (at[s], at[e]))
            .collect()
    });
}

#[test]
fn haystack_recursive_matches_defaults() {
    check(200, 0, true);
}

#[test]
fn haystack_recursive_other_sizes_and_overlaps_match() {
    check(50, 10, false);
    check(12, 3, false);
}
