//! A store measured and checked: its chunks as an engine and a chunking (one document and one
//! chunk per stored chunk, so search, tails and stats work on it as on a folder), what the
//! embedder saw, duplicates and empty chunks, and every stored vector against the vector
//! recomputed from the reconstructed text, with the usual causes tried where they differ.

use std::collections::HashMap;
use std::sync::Arc;

use crate::chunk::{Chunk, ChunkSettings};
use crate::corpus::{Corpus, Document};
use crate::embed::cosine;
use crate::engine::{Chunking, Engine, FileChunks};
use crate::measure::MeasuredChunk;
use crate::model::ModelInfo;
use crate::tokenize::EmbedTokenizer;

use super::{Store, StoreError};

/// Embeds texts at a window: the model, a server, or a cache in front of either.
pub type EmbedFn<'a> =
    dyn FnMut(&[&str], usize) -> Result<Vec<Vec<f32>>, crate::embed::EmbedError> + 'a;

/// A variant of the differing chunks' texts: the cause it would name, its window and its texts.
type Variant = (Cause, usize, Vec<(usize, String)>);

/// A stored vector agrees with the recomputed one at this cosine or above.
pub const AGREE: f32 = 0.999;

/// The store as an engine over one document per chunk (named by the chunk's id) and a chunking
/// of one chunk each, covering the embedded part of the text, with the model's document prompt
/// and the framework's header ahead of it as the prefix. The texts move into the engine's
/// documents, so a store's texts are held once (a second copy is most of a gigabyte at 10^6
/// chunks): afterwards `store.chunks[i].text` is empty and the text is
/// `engine.corpus.docs[i].text`, which the checks below read.
pub fn engine_for(
    store: &mut Store,
    model: ModelInfo,
    tok: Arc<EmbedTokenizer>,
    settings: &ChunkSettings,
) -> Result<(Engine, Chunking), std::convert::Infallible> {
    let corpus = Corpus {
        root: std::path::PathBuf::from(&store.uri),
        docs: store
            .chunks
            .iter_mut()
            .map(|c| Document::plain(c.id.clone(), std::mem::take(&mut c.text)))
            .collect(),
        skipped: Vec::new(),
    };
    let engine = Engine::new(model, tok, corpus)?;
    let prompt = engine.model.modules.document_prompt().to_string();
    let files = store
        .chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let prefix = format!("{prompt}{}", c.header);
            let prefix = (!prefix.is_empty()).then(|| {
                let n = engine.tok.prefix_count(&prefix);
                (prefix, n)
            });
            let view = engine.view(i);
            let m =
                MeasuredChunk::measure(&view, 0, Chunk::slice(0, c.embedded_len), settings.unit)
                    .with_prefix(prefix);
            FileChunks {
                doc: i,
                chunks: Arc::new(vec![m]),
                parents: Arc::new(Vec::new()),
            }
        })
        .collect();
    Ok((
        engine,
        Chunking {
            settings: settings.clone(),
            files,
            stored_vectors: Some(Arc::clone(&store.vectors)),
        },
    ))
}

/// Where a chunk's invisible tail begins in the stored text (bytes), and whether the window
/// ends inside what was put ahead of the text (the prompt and the framework's header).
pub fn tail_of(m: &MeasuredChunk, window: usize, specials: usize) -> (Option<usize>, bool) {
    let in_header = specials + m.prefix_tokens() > window;
    (m.tail(window, specials).map(|t| t.start_byte), in_header)
}

/// Chunks with the same text once whitespace runs are made one space: for each chunk, the index
/// of the first chunk with its text (`None` for the first itself). Empty chunks are not
/// duplicates of each other; they are counted apart. The normalised texts are kept as hashes,
/// each match confirmed word by word (a store's texts are not held a second time).
pub fn duplicates(docs: &[Document]) -> Vec<Option<usize>> {
    use std::hash::{BuildHasher, Hasher};
    let words = |i: usize| docs[i].text.split_whitespace();
    let hasher = std::collections::hash_map::RandomState::new();
    let mut firsts: HashMap<u64, Vec<usize>> = HashMap::new();
    (0..docs.len())
        .map(|i| {
            words(i).next()?;
            let mut h = hasher.build_hasher();
            for w in words(i) {
                h.write(w.as_bytes());
                h.write_u8(0xff);
            }
            let same = firsts.entry(h.finish()).or_default();
            match same.iter().find(|&&j| words(j).eq(words(i))) {
                Some(&j) => Some(j),
                None => {
                    same.push(i);
                    None
                }
            }
        })
        .collect()
}

/// Chunks whose text is empty or whitespace only.
pub fn empties(docs: &[Document]) -> usize {
    docs.iter().filter(|d| d.text.trim().is_empty()).count()
}

/// What a differing stored vector matches instead of the text as reconstructed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The text embedded without the model's document prompt.
    NoPrompt,
    /// The text embedded without the framework's metadata header.
    NoHeader,
    /// Neither prompt nor header.
    NoPromptNoHeader,
    /// The same text, embedded at another window (tokens).
    Window(usize),
    /// None of those: stale text, another model, or another embedder setting.
    Unexplained,
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::NoPrompt => f.write_str("embedded without the document prompt"),
            Cause::NoHeader => f.write_str("embedded without the metadata header"),
            Cause::NoPromptNoHeader => f.write_str("embedded without prompt or metadata header"),
            Cause::Window(w) => write!(f, "embedded at a window of {w} tokens"),
            Cause::Unexplained => f.write_str(
                "matches no variant tried: stale text, another model or another setting",
            ),
        }
    }
}

/// Each stored vector against the one recomputed from the reconstructed text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VectorCheck {
    /// Per chunk: the cosine (`None` without a stored vector).
    pub cos: Vec<Option<f32>>,
    /// Per chunk: why it differs, for those below [`AGREE`].
    pub cause: Vec<Option<Cause>>,
}

impl VectorCheck {
    /// Nothing checked: `n` chunks without stored vectors.
    pub fn none(n: usize) -> VectorCheck {
        VectorCheck {
            cos: vec![None; n],
            cause: vec![None; n],
        }
    }

    pub fn differ(&self) -> usize {
        self.cause.iter().filter(|c| c.is_some()).count()
    }

    pub fn checked(&self) -> usize {
        self.cos.iter().filter(|c| c.is_some()).count()
    }
}

/// Compare every stored vector with `recomputed` (one per chunk, from the reconstructed text at
/// `window`); for those that differ, embed the usual variants with `embed` (texts, window) and
/// name the first that matches. `other_windows` are tried last.
pub fn check_vectors(
    store: &Store,
    engine: &Engine,
    recomputed: &[Vec<f32>],
    window: usize,
    other_windows: &[usize],
    embed: &mut EmbedFn,
) -> Result<VectorCheck, StoreError> {
    let prompt = engine.model.modules.document_prompt();
    if let Some(stored) = store.dim() {
        let ours = recomputed
            .iter()
            .map(Vec::len)
            .find(|&n| n > 0)
            .unwrap_or(stored);
        if stored != ours {
            return Err(StoreError::Dimension {
                stored,
                ours,
                model: engine.model.id.clone(),
            });
        }
    }
    let cos: Vec<Option<f32>> = store
        .chunks
        .iter()
        .zip(recomputed)
        .enumerate()
        .map(|(i, (_, r))| store.vector(i).map(|v| cosine(v, r)))
        .collect();
    let differing: Vec<usize> = (0..cos.len())
        .filter(|&i| cos[i].is_some_and(|c| c < AGREE))
        .collect();
    let mut cause: Vec<Option<Cause>> = vec![None; cos.len()];
    for &i in &differing {
        cause[i] = Some(Cause::Unexplained);
    }
    if differing.is_empty() {
        return Ok(VectorCheck { cos, cause });
    }
    let text = |i: usize| &engine.corpus.docs[i].text[..store.chunks[i].embedded_len];
    let header = |i: usize| store.chunks[i].header.as_str();
    let mut tries: Vec<Variant> = Vec::new();
    let with = |f: &dyn Fn(usize) -> Option<String>| -> Vec<(usize, String)> {
        differing
            .iter()
            .filter_map(|&i| f(i).map(|t| (i, t)))
            .collect()
    };
    if !prompt.is_empty() {
        tries.push((
            Cause::NoPrompt,
            window,
            with(&|i| Some(format!("{}{}", header(i), text(i)))),
        ));
    }
    tries.push((
        Cause::NoHeader,
        window,
        with(&|i| (!header(i).is_empty()).then(|| format!("{prompt}{}", text(i)))),
    ));
    if !prompt.is_empty() {
        tries.push((
            Cause::NoPromptNoHeader,
            window,
            with(&|i| (!header(i).is_empty()).then(|| text(i).to_string())),
        ));
    }
    for &w in other_windows.iter().filter(|&&w| w != window) {
        tries.push((
            Cause::Window(w),
            w,
            with(&|i| Some(format!("{prompt}{}{}", header(i), text(i)))),
        ));
    }
    for (why, w, texts) in tries {
        let open: Vec<&(usize, String)> = texts
            .iter()
            .filter(|(i, _)| cause[*i] == Some(Cause::Unexplained))
            .collect();
        if open.is_empty() {
            continue;
        }
        let refs: Vec<&str> = open.iter().map(|(_, t)| t.as_str()).collect();
        let vs = embed(&refs, w)?;
        for ((i, _), v) in open.iter().zip(vs) {
            let stored = store.vector(*i).expect("differing chunks have vectors");
            if cosine(stored, &v) >= AGREE {
                cause[*i] = Some(why.clone());
            }
        }
    }
    Ok(VectorCheck { cos, cause })
}

/// Which of the model's windows (`auto`'s, sentence-transformers', the positions) a store's
/// vectors were embedded at, when it is not `auto`'s: the window and, in words, how it was found.
pub fn store_window(
    store: &Store,
    engine: &Engine,
    chunking: &Chunking,
    auto: usize,
    embed: &mut EmbedFn,
) -> Result<Option<(usize, String)>, StoreError> {
    use crate::window::WindowSpec;
    let windows = &engine.model.windows;
    let mut candidates = vec![auto];
    candidates.extend([WindowSpec::St, WindowSpec::Max].map(|s| windows.resolve(s).tokens));
    let found = detect_window(store, engine, chunking, &candidates, 16, embed)?;
    Ok(found.filter(|&(w, ..)| w != auto).map(|(w, agree, sampled)| {
        (
            w,
            format!(
                "detected: {agree} of the {sampled} longest stored vectors agree at {w} (auto is {auto})"
            ),
        )
    }))
}

/// The window the stored vectors were embedded at, when it is not the one asked for: the longest
/// chunks with a stored vector (at most `sample`; short ones agree at any window) embedded at each
/// candidate window. Returns (window, agreeing, sampled) for the candidate most of them agree
/// with, or `None` when the sample cannot tell (no long chunk, or no candidate does better).
pub fn detect_window(
    store: &Store,
    engine: &Engine,
    chunking: &Chunking,
    candidates: &[usize],
    sample: usize,
    embed: &mut EmbedFn,
) -> Result<Option<(usize, usize, usize)>, StoreError> {
    let (prompt, specials) = (engine.model.modules.document_prompt(), engine.specials());
    let smallest = candidates.iter().copied().min().unwrap_or(0);
    let mut long: Vec<usize> = (0..store.chunks.len())
        .filter(|&i| store.vector(i).is_some())
        .filter(|&i| chunking.files[i].chunks[0].embed_tokens(specials) > smallest)
        .collect();
    long.sort_by_key(|&i| std::cmp::Reverse(chunking.files[i].chunks[0].embed_tokens(specials)));
    long.truncate(sample);
    if long.is_empty() {
        return Ok(None);
    }
    let texts: Vec<String> = long
        .iter()
        .map(|&i| {
            let text = &engine.corpus.docs[i].text;
            format!("{prompt}{}", store.chunks[i].embedded(text))
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut best: Option<(usize, usize)> = None;
    let mut seen = Vec::new();
    for &w in candidates {
        if seen.contains(&w) {
            continue;
        }
        seen.push(w);
        let vs = embed(&refs, w)?;
        let agree = long
            .iter()
            .zip(&vs)
            .filter(|(&i, v)| {
                store
                    .vector(i)
                    .is_some_and(|s| s.len() == v.len() && cosine(s, v) >= AGREE)
            })
            .count();
        if best.is_none_or(|(_, a)| agree > a) {
            best = Some((w, agree));
        }
    }
    Ok(best
        .filter(|&(_, a)| a > 0)
        .map(|(w, a)| (w, a, long.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_by_words_and_empties_apart() {
        let texts = ["a  b", "a b", "", " \n", "a b c", "a\nb", "b a", "a b c"];
        let docs: Vec<Document> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Document::plain(i.to_string(), t.to_string()))
            .collect();
        assert_eq!(
            duplicates(&docs),
            [None, Some(0), None, None, None, Some(0), None, Some(4)]
        );
        assert_eq!(empties(&docs), 2);
    }
}
