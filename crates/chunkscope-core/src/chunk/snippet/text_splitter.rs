//! semantic-text-splitter's TextSplitter and MarkdownSplitter (the text-splitter strategy).

use super::python::{tokenizer_lines, Py};
use crate::chunk::ChunkSettings;
use crate::tokenize::Unit;

pub(super) fn snippet(s: &ChunkSettings, model_id: &str) -> String {
    let mut py = Py {
        about: vec![
            "semantic-text-splitter, the Python binding of the text-splitter crate chunkscope links:"
                .into(),
            "TextSplitter, and MarkdownSplitter for Markdown files.".into(),
            match s.unit {
                Unit::Embed => "pip install semantic-text-splitter==0.33.1 tokenizers",
                _ => "pip install semantic-text-splitter==0.33.1",
            }
            .into(),
        ],
        stdlib: vec![],
        imports: vec!["from semantic_text_splitter import MarkdownSplitter, TextSplitter".into()],
        setup: vec![],
        split: "def split(text: str, markdown: bool = False) -> list[str]:\n    return (markdown_splitter if markdown else text_splitter).chunks(text)".into(),
        markdown: true,
    };
    let (ctor, first) = match s.unit {
        Unit::Chars => ("", String::new()),
        Unit::Cl100k => (".from_tiktoken_model", "\"gpt-4\", ".to_string()),
        Unit::Embed => {
            py.imports.push("from tokenizers import Tokenizer".into());
            py.setup.extend(tokenizer_lines(model_id));
            py.setup.push(String::new());
            (".from_huggingface_tokenizer", "tokenizer, ".to_string())
        }
    };
    for (var, class) in [
        ("text_splitter", "TextSplitter"),
        ("markdown_splitter", "MarkdownSplitter"),
    ] {
        py.setup.push(format!(
            "{var} = {class}{ctor}({first}{}, overlap={})",
            s.size, s.overlap
        ));
    }
    py.render(s)
}
