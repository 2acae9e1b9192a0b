//! Tokenizing a corpus, one thread, each unit two ways in one run: through its crate
//! (tokenizers' `encode`, tiktoken-rs's `encode_ordinary`) and as chunkscope computes a
//! document's tokens (`EmbedTokenizer::spans`, `Cl100kTokens::new`), with the token counts
//! compared and the documents the direct BERT path left to the crate counted.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{ensure, Result};

use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::model::ModelInfo;
use chunkscope_core::tokenize::{cl100k, Cl100kTokens, EmbedTokenizer};

pub fn tokenize(model: &ModelInfo, corpus: &Path, out: &mut dyn Write) -> Result<()> {
    let corpus = Corpus::load(corpus, &CorpusRules::default())?;
    let tok = EmbedTokenizer::from_file(&model.tokenizer_path())?;
    let texts: Vec<&str> = corpus.docs.iter().map(|d| d.text.as_str()).collect();
    let mb = texts.iter().map(|t| t.len()).sum::<usize>() as f64 / 1e6;
    // The direct paths' tables (vocabulary sets, cl100k ranks) are built on first use: not timed.
    let _ = (tok.spans("warm up"), Cl100kTokens::new("warm up"));
    let left = texts
        .iter()
        .filter(|t| tok.direct_spans(t).is_none())
        .count();
    writeln!(
        out,
        "tokenize: {} documents, {mb:.1} MB, one thread, model {}; {left} documents left to the tokenizers crate by the direct path",
        texts.len(),
        model.id
    )?;
    let time = |f: &dyn Fn(&str) -> Result<usize>| -> Result<(usize, f64)> {
        let t = Instant::now();
        let mut n = 0;
        for text in &texts {
            n += f(text)?;
        }
        Ok((n, t.elapsed().as_secs_f64()))
    };
    writeln!(
        out,
        "{:<8} {:>12} {:>10} {:>10} {:>12} {:>10} {:>8}",
        "unit", "tokens", "crate s", "crate MB/s", "chunkscope s", "MB/s", "speedup"
    )?;
    let embed_crate = time(&|t| {
        Ok(tok
            .tokenizer()
            .encode(t, false)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .len())
    })?;
    let embed_ours = time(&|t| Ok(tok.spans(t)?.len()))?;
    let cl_crate = time(&|t| Ok(cl100k().encode_ordinary(t).len()))?;
    let cl_ours = time(&|t| Ok(Cl100kTokens::new(t).len()))?;
    for (unit, (n, crate_s), (m, ours_s)) in [
        ("embed", embed_crate, embed_ours),
        ("cl100k", cl_crate, cl_ours),
    ] {
        ensure!(n == m, "{unit}: the crate gives {n} tokens, chunkscope {m}");
        writeln!(
            out,
            "{unit:<8} {n:>12} {crate_s:>10.2} {:>10.1} {ours_s:>12.2} {:>10.1} {:>7.1}x",
            mb / crate_s,
            mb / ours_s,
            crate_s / ours_s
        )?;
    }
    Ok(())
}
