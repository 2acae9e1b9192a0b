//! chonkie's RecursiveChunker and TokenChunker with its character tokenizer (the chonkie and
//! chonkie-tokens strategies).

use super::python::Py;
use crate::chunk::{ChunkSettings, Strategy, CHONKIE_MIN_CHARS};

pub(super) fn snippet(s: &ChunkSettings) -> String {
    let (about, class, args) = if s.strategy == Strategy::ChonkieTokens {
        (
            "chonkie's TokenChunker with its character tokenizer (chunkscope's chonkie-tokens strategy).",
            "TokenChunker",
            vec![
                format!("    chunk_size={},", s.size),
                format!("    chunk_overlap={},", s.overlap),
            ],
        )
    } else {
        (
            "chonkie's RecursiveChunker with its default rules and character tokenizer (chunkscope's chonkie strategy).",
            "RecursiveChunker",
            vec![
                format!("    chunk_size={},", s.size),
                format!(
                    "    min_characters_per_chunk={},",
                    CHONKIE_MIN_CHARS
                ),
            ],
        )
    };
    let mut setup = vec![
        format!("chunker = {class}("),
        "    tokenizer=\"character\",".into(),
    ];
    setup.extend(args);
    setup.push(")".into());
    Py {
        about: vec![about.into(), "pip install chonkie==1.7.0".into()],
        stdlib: vec![],
        imports: vec![format!("from chonkie import {class}")],
        setup,
        split: "def split(text: str) -> list[str]:\n    return [chunk.text for chunk in chunker.chunk(text)]".into(),
        markdown: false,
    }
    .render(s)
}
