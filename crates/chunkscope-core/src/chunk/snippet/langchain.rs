//! LangChain's RecursiveCharacterTextSplitter (the langchain strategy).

use super::python::{count_tokens_setup, py_str, Py};
use crate::chunk::{ChunkSettings, LANGCHAIN_SEPARATORS};
use crate::tokenize::Unit;

pub(super) fn snippet(s: &ChunkSettings, model_id: &str) -> String {
    let mut py = Py {
        about: vec![
            "LangChain's RecursiveCharacterTextSplitter (chunkscope's langchain strategy).".into(),
            match s.unit {
                Unit::Chars => "pip install langchain-text-splitters==1.1.3",
                Unit::Cl100k => "pip install langchain-text-splitters==1.1.3 tiktoken",
                Unit::Embed => "pip install langchain-text-splitters==1.1.3 tokenizers",
            }
            .into(),
        ],
        stdlib: vec![],
        imports: vec!["from langchain_text_splitters import RecursiveCharacterTextSplitter".into()],
        setup: vec![],
        split: "def split(text: str) -> list[str]:\n    return splitter.split_text(text)".into(),
        markdown: false,
    };
    let separators = LANGCHAIN_SEPARATORS
        .iter()
        .map(|x| py_str(x))
        .collect::<Vec<_>>()
        .join(", ");
    let mut args = vec![
        format!("chunk_size={}", s.size),
        format!("chunk_overlap={}", s.overlap),
        format!("separators=[{separators}]"),
    ];
    let ctor = match s.unit {
        Unit::Chars => "RecursiveCharacterTextSplitter(",
        Unit::Cl100k => {
            // Special-token text ("<|endoftext|>") counts as ordinary text, as in chunkscope.
            args.insert(0, "encoding_name=\"cl100k_base\"".into());
            args.insert(1, "disallowed_special=()".into());
            "RecursiveCharacterTextSplitter.from_tiktoken_encoder("
        }
        Unit::Embed => {
            count_tokens_setup(&mut py, model_id);
            args.push("length_function=count_tokens".into());
            "RecursiveCharacterTextSplitter("
        }
    };
    py.setup.push(format!("splitter = {ctor}"));
    for a in args {
        py.setup.push(format!("    {a},"));
    }
    py.setup.push(")".into());
    py.render(s)
}
