//! Haystack's DocumentSplitter and RecursiveDocumentSplitter by word (the haystack and
//! haystack-recursive strategies).

use super::python::Py;
use crate::chunk::{ChunkSettings, Strategy};

pub(super) fn snippet(s: &ChunkSettings) -> String {
    if s.strategy == Strategy::HaystackRecursive {
        return recursive(s);
    }
    Py {
        about: vec![
            "Haystack's DocumentSplitter by word (chunkscope's haystack strategy).".into(),
            "pip install haystack-ai==3.4.1".into(),
        ],
        stdlib: vec![],
        imports: vec![
            "from haystack import Document".into(),
            "from haystack.components.preprocessors import DocumentSplitter".into(),
        ],
        setup: vec![
            "splitter = DocumentSplitter(".into(),
            "    split_by=\"word\",".into(),
            format!("    split_length={},", s.size),
            format!("    split_overlap={},", s.overlap),
            "    split_threshold=0,".into(),
            ")".into(),
        ],
        split: "def split(text: str) -> list[str]:\n    documents = splitter.run(documents=[Document(content=text)])[\"documents\"]\n    return [d.content for d in documents]".into(),
        markdown: false,
    }
    .render(s)
}

fn recursive(s: &ChunkSettings) -> String {
    Py {
        about: vec![
            "Haystack's RecursiveDocumentSplitter by word (chunkscope's haystack-recursive strategy).".into(),
            "pip install haystack-ai==3.4.1 nltk==3.10.4".into(),
            "Its sentence level needs NLTK's punkt_tab data (python -m nltk.downloader punkt_tab).".into(),
        ],
        stdlib: vec![],
        imports: vec![
            "from haystack import Document".into(),
            "from haystack.components.preprocessors import RecursiveDocumentSplitter".into(),
        ],
        setup: vec![
            "splitter = RecursiveDocumentSplitter(".into(),
            format!("    split_length={},", s.size),
            format!("    split_overlap={},", s.overlap),
            "    split_unit=\"word\",".into(),
            "    separators=[\"\\n\\n\", \"sentence\", \"\\n\", \" \"],".into(),
            ")".into(),
            "splitter.warm_up()".into(),
        ],
        split: "def split(text: str) -> list[str]:\n    documents = splitter.run(documents=[Document(content=text)])[\"documents\"]\n    return [d.content for d in documents]".into(),
        markdown: false,
    }
    .render(s)
}
