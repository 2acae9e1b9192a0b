//! `chunkscope-bench maxmin`: sentences embedded once, then threshold turns timed.

use std::io::Write;
use std::time::Instant;

use anyhow::{Context, Result};

use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::embed::Embedder;
use chunkscope_core::model::ModelInfo;

use crate::common::{generate_corpus, report, TempDir};

/// `chunkscope bench maxmin`: on a generated corpus, embed every sentence once (timed), then time
/// threshold turns, which re-chunk from the stored sentence vectors.
pub fn maxmin(
    info: &ModelInfo,
    megabytes: usize,
    presses: usize,
    out: &mut dyn Write,
) -> Result<()> {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use chunkscope_core::chunk::{ChunkSettings, Preset};
    use chunkscope_core::engine::Engine;
    use chunkscope_core::sentences::SentenceStore;
    use chunkscope_core::tokenize::EmbedTokenizer;

    let tmp = TempDir::new("maxmin");
    let dir = tmp.0.clone();
    let (n, written) = generate_corpus(&dir, megabytes)?;
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path())?);
    let engine = Engine::new(
        info.clone(),
        tok,
        Corpus::load(&dir, &CorpusRules::default())?,
    )?;
    let embedder = Embedder::load(info)?;
    let mut store = SentenceStore::in_memory(&engine, embedder.dim());
    let mut settings = ChunkSettings::default();
    Preset::MaxMin.apply(&mut settings);
    let t = Instant::now();
    let (embedded, _) = store
        .embed_missing(&engine, &settings, &embedder, |_, _| true)
        .expect("sentences embedded");
    writeln!(
        out,
        "corpus: {n} files, {:.1} MB; {embedded} distinct sentences found and embedded once in {:.1} s",
        written as f64 / 1e6,
        t.elapsed().as_secs_f64()
    )?;
    let never = AtomicBool::new(false);
    let mut ms = Vec::new();
    for i in 0..presses {
        settings.maxmin.fixed_threshold = if i % 2 == 0 { 0.55 } else { 0.6 };
        let t = Instant::now();
        let c = engine
            .chunk_all_with(&settings, Some(&store), &never)
            .context("cancelled")?;
        let _ = c.stats(128, engine.specials());
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    report(out, "threshold turn -> chunks + stats", ms)?;
    let mut seg = Vec::new();
    for _ in 0..presses.min(5) {
        let t = Instant::now();
        let ids: Vec<usize> = (0..engine.corpus.docs.len()).collect();
        let _ = chunkscope_core::engine::parallel_map(&ids, |&d| {
            chunkscope_core::chunk::maxmin::sentences(&engine.view(d), settings.unit, settings.size)
                .len()
        });
        seg.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    report(out, "segmentation alone (done once)", seg)?;
    Ok(())
}
