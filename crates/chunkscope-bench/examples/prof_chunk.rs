//! Throwaway profiling harness (to be removed): chunk a folder with one preset, N times.
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use chunkscope_core::chunk::{ChunkSettings, Preset};
use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::engine::Engine;
use chunkscope_core::model::{self, DEFAULT_MODEL};
use chunkscope_core::tokenize::EmbedTokenizer;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(&args[1]);
    let presets: Vec<Preset> = args[2].split(',').map(|p| p.parse().unwrap()).collect();
    let n: usize = args.get(3).map_or(3, |a| a.parse().unwrap());
    let info = model::locate(DEFAULT_MODEL, &mut |l| eprintln!("{l}")).unwrap();
    let tok = Arc::new(EmbedTokenizer::from_file(&info.tokenizer_path()).unwrap());
    let t = Instant::now();
    let corpus = Corpus::load(&dir, &CorpusRules::default()).unwrap();
    let engine = Engine::new(info, tok, corpus).unwrap();
    eprintln!("loaded {} docs in {:.2}s", engine.corpus.docs.len(), t.elapsed().as_secs_f64());
    let never = AtomicBool::new(false);
    {
        let t = Instant::now();
        let mut n = 0;
        for i in 0..10000 {
            n += engine.tok.count(&format!("Plan: Annual{i} · Refund: pro rata"));
        }
        eprintln!("10000 counts in {:.3}s ({n})", t.elapsed().as_secs_f64());
        let long = engine.corpus.docs[0].text[..2000].to_string();
        let t = Instant::now();
        for _ in 0..1000 {
            n += engine.tok.count(&long);
        }
        eprintln!("1000 counts of 2000 bytes in {:.3}s ({n})", t.elapsed().as_secs_f64());
    }
    for p in presets {
        let mut s = ChunkSettings::default();
        p.apply(&mut s);
        let mut times = Vec::new();
        let mut cpus = Vec::new();
        let mut chunks = 0;
        let mut sum = 0usize;
        for i in 0..n {
            if s.size > 0 {
                s.size = if i % 2 == 0 { s.size + 1 } else { s.size - 1 };
            }
            let t = Instant::now();
            let c0 = cpu();
            let c = engine.chunk_all(&s, &never).unwrap();
            times.push(t.elapsed().as_secs_f64());
            cpus.push(cpu() - c0);
            chunks = c.files.iter().map(|f| f.chunks.len()).sum::<usize>();
            sum = c.files.iter().flat_map(|f| f.chunks.iter()).map(|c| c.chunk.start ^ c.chunk.end ^ c.unit_len ^ c.token_starts.len()).fold(0, |a, b| a.wrapping_mul(31).wrapping_add(b));
        }
        let own = engine_own(&engine, &s);
        eprintln!("{}: own-text {own}, {chunks} chunks (hash {sum}) wall {:?} cpu {:?}", p.name(), times.iter().map(|t| format!("{t:.3}")).collect::<Vec<_>>(), cpus.iter().map(|t| format!("{t:.2}")).collect::<Vec<_>>());
    }
}

fn engine_own(engine: &Engine, s: &ChunkSettings) -> usize {
    let never = AtomicBool::new(false);
    let c = engine.chunk_all(s, &never).unwrap();
    c.files.iter().flat_map(|f| f.chunks.iter()).filter(|c| c.chunk.text.is_some()).count()
}

/// Process CPU seconds (user + system, all threads).
fn cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}
