//! semchunk's chunkerify (the semchunk strategy).

use super::python::{count_tokens_setup, Py};
use crate::chunk::ChunkSettings;
use crate::tokenize::Unit;

pub(super) fn snippet(s: &ChunkSettings, model_id: &str) -> String {
    let mut py = Py {
        about: vec![
            "semchunk's chunker (chunkscope's semchunk strategy).".into(),
            match (s.unit, s.size) {
                (Unit::Embed, 0) => "pip install semchunk==4.1.1 tokenizers transformers",
                (Unit::Embed, _) => "pip install semchunk==4.1.1 tokenizers",
                (Unit::Cl100k, _) => "pip install semchunk==4.1.1 tiktoken",
                (Unit::Chars, _) => "pip install semchunk==4.1.1",
            }
            .into(),
        ],
        stdlib: vec![],
        imports: vec!["import semchunk".into()],
        setup: vec![],
        split: if s.overlap > 0 {
            format!(
                "def split(text: str) -> list[str]:\n    return chunker(text, overlap={})",
                s.overlap
            )
        } else {
            "def split(text: str) -> list[str]:\n    return chunker(text)".into()
        },
        markdown: false,
    };
    let counter = match s.unit {
        Unit::Chars => "len",
        Unit::Cl100k => {
            py.imports.push("import tiktoken".into());
            py.setup
                .push("encoding = tiktoken.get_encoding(\"cl100k_base\")".into());
            py.setup.push("\n".into());
            py.setup.push(
                "def count_tokens(text: str) -> int:\n    return len(encoding.encode_ordinary(text))"
                    .into(),
            );
            py.setup.push("\n".into());
            "count_tokens"
        }
        Unit::Embed => {
            count_tokens_setup(&mut py, model_id);
            "count_tokens"
        }
    };
    let size = if s.size == 0 {
        // validate() allows size 0 only with the embed unit.
        py.imports
            .push("from transformers import AutoTokenizer".into());
        py.setup.push(
            "# chunkerify's own size for the model: model_max_length less the special tokens."
                .into(),
        );
        py.setup.push(
            "chunk_size = semchunk.chunkerify(AutoTokenizer.from_pretrained(MODEL)).chunk_size"
                .into(),
        );
        "chunk_size".to_string()
    } else {
        s.size.to_string()
    };
    py.setup
        .push(format!("chunker = semchunk.chunkerify({counter}, {size})"));
    py.render(s)
}
