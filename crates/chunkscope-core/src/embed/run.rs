//! An embedding run: the texts' ids grouped into forward passes (or sent to the server), the
//! caller asked between passes whether to go on, and what the run measured.

use std::time::Instant;

use super::{remote, Backend, EmbedError, Embedder};

/// Sequences are grouped into forward passes of about this many tokens.
const TOKENS_PER_PASS: usize = 4096;
/// The same for candle's padded batches, padding counted. Measured on all-MiniLM-L6-v2 at
/// windows 128 and 256 (2 threads), against 1 (a sequence alone), 512, 1,024 and 4,096: the
/// fastest at 128 and within 2 % of the fastest (1,024) at 256, 1.1-1.2x a sequence alone, with
/// a process peak of 267 MB against 4,096's 440 MB.
const PADDED_TOKENS_PER_PASS: usize = 2048;

/// The vectors of one run, in the order of its texts, and how it ended. When `error` is set,
/// the texts it failed on have an empty vector and the others are kept (a server's batches that
/// arrived before it failed).
#[derive(Debug, Clone, Default)]
pub struct Embedded {
    pub vectors: Vec<Vec<f32>>,
    pub run: EmbedRun,
    pub error: Option<EmbedError>,
}

/// What an embedding run measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EmbedRun {
    pub texts: usize,
    pub tokens: usize,
    pub seconds: f64,
}

impl Embedder {
    /// Embed `texts` at `window`. `keep_going` is called between forward passes with the number
    /// done so far; returning false stops early (the result is then `None`).
    pub fn embed_with(
        &self,
        texts: &[&str],
        window: usize,
        keep_going: impl FnMut(usize) -> bool,
    ) -> Option<Embedded> {
        self.embed_pausing(texts, window, keep_going, &|| true)
    }

    /// `embed_with`, calling `pause()` before each layer of the native backend's passes (see
    /// `Bert::hidden_states_pausing`); candle and servers never pause. A pause that answers
    /// false gives the pass up and the run stops (None), as when `keep_going` says so.
    pub fn embed_pausing(
        &self,
        texts: &[&str],
        window: usize,
        mut keep_going: impl FnMut(usize) -> bool,
        pause: &dyn Fn() -> bool,
    ) -> Option<Embedded> {
        // The native path packs a pass's sequences end to end; candle pads them to the longest,
        // so there the pass's budget counts the padding too.
        // A pass's states, or why it failed; None: given up at a pause.
        type Pass<'a> =
            Box<dyn Fn(&[Vec<u32>]) -> Option<Result<(Vec<f32>, Vec<usize>), String>> + 'a>;
        let (hidden, padded, pass): (usize, bool, Pass) = match &self.backend {
            Backend::Native(b) => (
                b.config.hidden,
                false,
                Box::new(move |batch| b.hidden_states_pausing(batch, pause).map(Ok)),
            ),
            Backend::Candle(c) => (
                c.hidden,
                true,
                Box::new(|batch| {
                    Some(
                        c.hidden_states(batch)
                            .map_err(|e| format!("candle {}: {e:#}", c.model_type)),
                    )
                }),
            ),
            Backend::Remote(r) => return self.embed_remote(r, texts, window, keep_going),
        };
        let started = Instant::now();
        let ids: Vec<Vec<u32>> = {
            use rayon::prelude::*;
            texts.par_iter().map(|t| self.ids(t, window)).collect()
        };
        let tokens = ids.iter().map(Vec::len).sum();
        // Longest first, so passes hold sequences of similar length.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));
        let cap = if padded {
            PADDED_TOKENS_PER_PASS
        } else {
            TOKENS_PER_PASS
        };
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); ids.len()];
        let mut error = None;
        let mut done = 0;
        let mut at = 0;
        while at < order.len() {
            if !keep_going(done) {
                return None;
            }
            let longest = ids[order[at]].len();
            let mut budget = 0;
            let mut end = at;
            while end < order.len() {
                let cost = if padded {
                    longest
                } else {
                    ids[order[end]].len()
                };
                if end > at && budget + cost > cap {
                    break;
                }
                budget += cost;
                end += 1;
            }
            let batch: Vec<Vec<u32>> = order[at..end].iter().map(|&i| ids[i].clone()).collect();
            // None: given up at a pause.
            match pass(&batch)? {
                Ok((states, starts)) => {
                    for ((seq, &row), &i) in batch.iter().zip(&starts).zip(&order[at..end]) {
                        out[i] = if seq.is_empty() {
                            vec![0.0; self.dim()]
                        } else {
                            let skip = self.prompt_skip(texts[i]);
                            self.modules.pool(
                                &states[row * hidden..(row + seq.len()) * hidden],
                                hidden,
                                skip,
                            )
                        };
                    }
                }
                // The failed texts keep no vector; the run says why.
                Err(why) => error = Some(EmbedError::Forward(why)),
            }
            done += end - at;
            at = end;
        }
        keep_going(done);
        Some(Embedded {
            vectors: out,
            run: EmbedRun {
                texts: texts.len(),
                tokens,
                seconds: started.elapsed().as_secs_f64(),
            },
            error,
        })
    }

    /// The server's vectors for `texts`, sent whole (the server truncates at its window). A
    /// server that refuses long inputs is not sent the texts over `window`: they get a zero
    /// vector, which no search ranks.
    fn embed_remote(
        &self,
        server: &remote::Remote,
        texts: &[&str],
        window: usize,
        mut keep_going: impl FnMut(usize) -> bool,
    ) -> Option<Embedded> {
        let started = Instant::now();
        let dim = server.dim;
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        let mut send: Vec<usize> = Vec::new();
        let mut tokens = 0;
        for (i, t) in texts.iter().enumerate() {
            let n = self.input_tokens(t);
            if server.overflow() == remote::Overflow::Reject && n > window {
                out[i] = vec![0.0; dim];
            } else {
                tokens += n.min(window);
                send.push(i);
            }
        }
        let inputs: Vec<&str> = send.iter().map(|&i| texts[i]).collect();
        let mut done = texts.len() - send.len();
        if !keep_going(done) {
            return None;
        }
        let result = server.embed(&inputs, |positions, vectors| {
            for (&p, mut v) in positions.iter().zip(vectors) {
                // Searches rank by dot product: a server's vectors are normalised as ours are.
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                if norm > 0.0 {
                    v.iter_mut().for_each(|x| *x /= norm);
                }
                out[send[p]] = v;
            }
            done += positions.len();
            keep_going(done)
        });
        let run = EmbedRun {
            texts: texts.len(),
            tokens,
            seconds: started.elapsed().as_secs_f64(),
        };
        match result {
            Ok(true) => Some(Embedded {
                vectors: out,
                run,
                error: None,
            }),
            Ok(false) => None,
            // What arrived is kept (empty vectors where nothing did), so the caller can store it
            // before reporting the error.
            Err(e) => Some(Embedded {
                vectors: out,
                run,
                error: Some(EmbedError::Server(e.to_string())),
            }),
        }
    }

    /// The vectors of `texts` at `window`, or why not all of them could be made.
    pub fn embed(&self, texts: &[&str], window: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let done = self
            .embed_with(texts, window, |_| true)
            .ok_or(EmbedError::Cancelled)?;
        match done.error {
            Some(e) => Err(e),
            None => Ok(done.vectors),
        }
    }
}
