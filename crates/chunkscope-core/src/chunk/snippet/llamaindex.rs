//! LlamaIndex's SentenceSplitter, TokenTextSplitter and MarkdownNodeParser (the llamaindex,
//! llamaindex-tokens and llamaindex-markdown strategies).

use super::python::{tokenizer_lines, Py};
use crate::chunk::{ChunkSettings, Strategy};
use crate::tokenize::Unit;

pub(super) fn snippet(s: &ChunkSettings, model_id: &str) -> String {
    let (about, class) = match s.strategy {
        Strategy::LlamaIndexTokens => (
            "LlamaIndex's TokenTextSplitter (chunkscope's llamaindex-tokens strategy).",
            "TokenTextSplitter",
        ),
        Strategy::LlamaIndexMarkdown => (
            "LlamaIndex's MarkdownNodeParser, then SentenceSplitter in each section (chunkscope's llamaindex-markdown strategy).",
            "SentenceSplitter",
        ),
        _ => (
            "LlamaIndex's SentenceSplitter (chunkscope's llamaindex strategy).",
            "SentenceSplitter",
        ),
    };
    let mut py = Py {
        about: vec![
            about.into(),
            "Documents without metadata: metadata a reader attaches (file_path) comes off the size."
                .into(),
            match s.unit {
                Unit::Embed => "pip install llama-index-core==0.14.25 tokenizers",
                _ => "pip install llama-index-core==0.14.25",
            }
            .into(),
        ],
        stdlib: vec![],
        imports: vec![
            "from llama_index.core import Document".into(),
            format!("from llama_index.core.node_parser import {class}"),
        ],
        setup: vec![],
        split: String::new(),
        markdown: false,
    };
    let mut args = vec![
        format!("chunk_size={}", s.size),
        format!("chunk_overlap={}", s.overlap),
    ];
    match s.unit {
        // LlamaIndex's default tokenizer: tiktoken's gpt-3.5-turbo encoding, cl100k_base.
        Unit::Cl100k => {}
        Unit::Chars => args.push("tokenizer=list".into()),
        Unit::Embed => {
            py.imports.push("from tokenizers import Tokenizer".into());
            py.setup.extend(tokenizer_lines(model_id));
            py.setup.push("\n".into());
            py.setup.push("def tokens(text: str) -> list[int]:\n    return tokenizer.encode(text, add_special_tokens=False).ids".into());
            py.setup.push("\n".into());
            args.push("tokenizer=tokens".into());
        }
    }
    let splitter = format!("{class}({})", args.join(", "));
    if s.strategy == Strategy::LlamaIndexMarkdown {
        py.imports.push(
            "from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter".into(),
        );
        py.imports
            .retain(|l| l != "from llama_index.core.node_parser import SentenceSplitter");
        py.imports
            .push("from llama_index.core.ingestion import IngestionPipeline".into());
        py.setup.push(format!(
            "pipeline = IngestionPipeline(transformations=[MarkdownNodeParser(), {splitter}])"
        ));
        py.split = "def split(text: str) -> list[str]:\n    nodes = pipeline.run(documents=[Document(text=text)])\n    return [node.get_content() for node in nodes]".into();
    } else {
        py.setup.push(format!("splitter = {splitter}"));
        py.split = "def split(text: str) -> list[str]:\n    nodes = splitter.get_nodes_from_documents([Document(text=text)])\n    return [node.get_content() for node in nodes]".into();
    }
    py.render(s)
}
