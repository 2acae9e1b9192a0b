#!/usr/bin/env python3
"""Reference chunks from LlamaIndex's node parsers behind the llamaindex, llamaindex-tokens and
llamaindex-markdown presets (tests/parity_llamaindex.rs). Runs in the interpreter named by
CHUNKSCOPE_REF_PYTHON (.venv-ref), which has llama-index-core==0.14.25 with its bundled NLTK punkt
data and tiktoken cache (nothing is downloaded).

Interface: JSON on stdin
  {"parser": "sentence" | "token" | "markdown" | "punkt",
   "texts": [str, ...],
   "chunk_size": int, "chunk_overlap": int}
JSON on stdout:
  {"chunks": [[[start, text], ...] per input text], "versions": {...}}
where start is the chunk's offset in the text in code points (Python string indices), or null.
"punkt" gives the sentence spans of the NLTK tokenizer LlamaIndex uses (span_tokenize).

Each text is one Document(text=...) without metadata, parsed as a user parses it:
SentenceSplitter / TokenTextSplitter `get_nodes_from_documents`, and for "markdown" the
transformations [MarkdownNodeParser(), SentenceSplitter(...)] in order (what an IngestionPipeline
runs). The default tokenizer (tiktoken cl100k_base) counts tokens.

Offsets: for "sentence" and "token" the nodes' own start_char_idx. For "markdown" LlamaIndex's
start_char_idx is relative to the section and, in this two-parser chain, unset past each first
section (its search position is kept per document but applied to each section), so the offset is
computed by the same rule against the document: the first occurrence of the chunk's text at or
after one character past the previous chunk's start; null when the text is not in the document.
"""

import contextlib
import json
import sys
from importlib.metadata import version


def chunks_of(text, parser, size, overlap):
    """[[start, text], ...] of one Document(text=text)."""
    from llama_index.core import Document
    from llama_index.core.node_parser import (
        MarkdownNodeParser,
        SentenceSplitter,
        TokenTextSplitter,
    )

    doc = Document(text=text)
    if parser == "sentence":
        nodes = SentenceSplitter(chunk_size=size, chunk_overlap=overlap)([doc])
        return [[n.start_char_idx, n.get_content()] for n in nodes]
    if parser == "token":
        nodes = TokenTextSplitter(chunk_size=size, chunk_overlap=overlap)([doc])
        return [[n.start_char_idx, n.get_content()] for n in nodes]
    if parser == "markdown":
        sections = MarkdownNodeParser()([doc])
        nodes = SentenceSplitter(chunk_size=size, chunk_overlap=overlap)(sections)
        chunks, pos = [], 0
        for n in nodes:
            t = n.get_content()
            at = text.find(t, pos)
            if at >= 0:
                pos = at + 1
            chunks.append([at if at >= 0 else None, t])
        return chunks
    if parser == "punkt":
        # The tokenizer instance SentenceSplitter uses, sentence spans as it returns them.
        from llama_index.core.utils import globals_helper

        spans = globals_helper.punkt_tokenizer.span_tokenize(text)
        return [[s, text[s:e]] for s, e in spans]
    raise SystemExit("unknown parser %r" % parser)


def main():
    req = json.load(sys.stdin)
    size, overlap = req["chunk_size"], req["chunk_overlap"]
    # LlamaIndex prints a warning on stdout when metadata leaves under 50 tokens: keep it off the
    # JSON.
    with contextlib.redirect_stdout(sys.stderr):
        out = [chunks_of(t, req["parser"], size, overlap) for t in req["texts"]]
    json.dump(
        {
            "chunks": out,
            "versions": {
                "llama-index-core": version("llama-index-core"),
                "nltk": version("nltk"),
                "tiktoken": version("tiktoken"),
            },
        },
        sys.stdout,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
