//! Spring AI 2.0's TokenTextSplitter, reproduced chunk text for chunk text.
//!
//! It counts cl100k_base tokens: take a window of `size` tokens, decode it (a window cut inside a
//! multi-byte character decodes to U+FFFD), skip it if blank, back off to the last punctuation mark
//! only when more than `size` tokens remain and the mark lies past `min_chunk_size_chars` UTF-16
//! units, trim as Java does, keep the chunk if longer than `min_chunk_length_to_embed` UTF-16 units,
//! then advance by the number of tokens the *re-encoded* cut text has (so chunks can overlap or skip
//! a token where the re-encoding differs). There is no overlap otherwise. A window that is blank is
//! skipped without counting towards `max_num_chunks`; a dropped short chunk still counts.
//! One deliberate difference: text holding a special-token string such as `<|endoftext|>` makes the
//! Java throw; we encode it as ordinary text.

use super::{Chunk, Chunker, DocView};
use crate::text::{ceil_char, floor_char, is_java_trim, utf16_len};
use crate::tokenize::cl100k;

#[derive(Debug, Clone, PartialEq)]
pub struct SpringAiParams {
    pub min_chunk_size_chars: usize,
    pub min_chunk_length_to_embed: usize,
    pub max_num_chunks: usize,
    pub keep_separator: bool,
    pub punctuation: Vec<char>,
}

impl Default for SpringAiParams {
    fn default() -> Self {
        SpringAiParams {
            min_chunk_size_chars: 350,
            min_chunk_length_to_embed: 5,
            max_num_chunks: 10_000,
            keep_separator: true,
            punctuation: vec!['.', '?', '!', '\n'],
        }
    }
}

pub struct SpringAi {
    pub size: usize,
    pub params: SpringAiParams,
}

impl Chunker for SpringAi {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        let bpe = cl100k();
        let ids = &doc.tokens.cl100k_ids;
        let starts = &doc.tokens.cl100k_starts;
        let byte_at = |i: usize| starts.get(i).map_or(doc.text.len(), |&b| b as usize);
        let p = &self.params;
        let mut out = Vec::new();
        let mut cur = 0usize;
        let mut made = 0usize;
        while cur < ids.len() && made < p.max_num_chunks {
            let end = (cur + self.size).min(ids.len());
            let bytes = bpe.decode_bytes(&ids[cur..end]).unwrap_or_default();
            let window = String::from_utf8_lossy(&bytes);
            if window.trim_matches(is_java_trim).is_empty() {
                cur = end;
                continue;
            }
            let mut cut = window.len();
            if ids.len() - cur > self.size {
                if let Some(at) = window.rfind(|c| p.punctuation.contains(&c)) {
                    if utf16_len(&window[..at]) > p.min_chunk_size_chars {
                        cut = at + window[at..].chars().next().map_or(1, char::len_utf8);
                    }
                }
            }
            let cut_text = &window[..cut];
            let chunk = self.finish(doc.text, byte_at(cur), cut_text, !p.keep_separator);
            if let Some(c) = chunk {
                out.push(c);
            }
            cur += bpe.encode_ordinary(cut_text).len().max(1);
            made += 1;
        }
        if cur < ids.len() {
            // What is left after max_num_chunks becomes one last chunk, newlines turned into spaces
            // whatever keep_separator says (as the Java does).
            let bytes = bpe.decode_bytes(&ids[cur..]).unwrap_or_default();
            let rest = String::from_utf8_lossy(&bytes);
            if let Some(c) = self.finish(doc.text, byte_at(cur), &rest, true) {
                out.push(c);
            }
        }
        out
    }
}

impl SpringAi {
    /// Trim and filter one cut window that began at document byte `at`.
    fn finish(
        &self,
        doc: &str,
        at: usize,
        cut_text: &str,
        newlines_to_spaces: bool,
    ) -> Option<Chunk> {
        let replaced;
        let shaped: &str = if !newlines_to_spaces {
            cut_text
        } else {
            replaced = cut_text.replace('\n', " ");
            &replaced
        };
        let trimmed = shaped.trim_matches(is_java_trim);
        if utf16_len(trimmed) <= self.params.min_chunk_length_to_embed {
            return None;
        }
        let lead = shaped.len() - shaped.trim_start_matches(is_java_trim).len();
        let start = at + lead;
        let end = start + trimmed.len();
        let verbatim = end <= doc.len()
            && doc.is_char_boundary(start)
            && doc.is_char_boundary(end)
            && &doc[start..end] == trimmed;
        Some(if verbatim {
            Chunk::slice(start, end)
        } else {
            let s = floor_char(doc, start.min(doc.len()));
            Chunk {
                start: s,
                end: ceil_char(doc, end.min(doc.len())).max(s),
                text: Some(trimmed.to_string()),
                heading: None,
            }
        })
    }
}
