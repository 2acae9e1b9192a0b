//! Fixed windows of N units with overlap O.

use super::{Chunk, Chunker, DocView};
use crate::text::{ceil_char, floor_char};
use crate::tokenize::Unit;

pub struct Fixed {
    pub unit: Unit,
    pub size: usize,
    pub overlap: usize,
}

impl Chunker for Fixed {
    fn chunk(&self, doc: &DocView) -> Vec<Chunk> {
        // Each unit i is the byte span [starts[i], ends[i]).
        let (starts, ends): (Vec<usize>, Vec<usize>) = match self.unit {
            Unit::Chars => doc
                .text
                .char_indices()
                .map(|(i, c)| (i, i + c.len_utf8()))
                .unzip(),
            Unit::Cl100k => {
                let s: Vec<usize> = doc.tokens.cl100k.starts().collect();
                (0..s.len())
                    .map(|i| {
                        let end = s.get(i + 1).copied().unwrap_or(doc.text.len());
                        (floor_char(doc.text, s[i]), ceil_char(doc.text, end))
                    })
                    .unzip()
            }
            Unit::Embed => doc.tokens.embed.spans().unzip(),
        };
        let n = starts.len();
        let step = self.size.saturating_sub(self.overlap).max(1);
        let mut out = Vec::new();
        let mut i = 0;
        while i < n {
            let j = (i + self.size).min(n);
            out.push(Chunk::slice(starts[i], ends[j - 1]));
            if j >= n {
                break;
            }
            i += step;
        }
        out
    }
}
