#!/usr/bin/env python3
"""Reference chunks from chonkie 1.7.0 (RecursiveChunker, TokenChunker) and haystack-ai 3.4.1's
RecursiveDocumentSplitter, behind the chonkie, chonkie-tokens and haystack-recursive presets
(tests/parity_chonkie.rs, tests/parity_haystack_recursive.rs), and the sentences of Haystack's
SentenceSplitter under that splitter ("haystack-sentences": each [start, sentence]) and of nltk's
trained English Punkt alone ("punkt-english"). Runs in the interpreter named by CHUNKSCOPE_SPLITTERS_PYTHON (see
scripts/test.sh for the pins).

Interface: JSON on stdin
  {"library": "chonkie" | "chonkie-tokens" | "haystack-recursive" | "haystack-sentences"
               | "punkt-english",
   "texts": [str, ...],
   "chunk_size": int | null,       (null: the library's default)
   "overlap": int | null,          (chonkie-tokens, haystack-recursive; null: the default)
   "nltk_data": str | null}        (haystack-*: a folder holding tokenizers/punkt_tab)
JSON on stdout:
  {"chunks": [[[start, text], ...] per input text], "chunk_size": int, "versions": {...}}
where start is the chunk's offset in the text in code points (Python string indices), as the
library reports it (chonkie's start_index, Haystack's split_idx_start).

chonkie runs at its defaults (the "character" tokenizer, RecursiveRules(), 24 characters per chunk
at least), only chunk_size and chunk_overlap set when given. Haystack runs with its default
separators ["\\n\\n", "sentence", "\\n", " "], split_unit "word" and sentence_splitter_params
(keep_white_spaces=True); its NLTK punkt_tab data come from `nltk_data` (nltk would otherwise
download them).
"""

import json
import os
import sys
from importlib.metadata import version

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


def kwargs(req, size_name, overlap_name=None):
    out = {}
    if req.get("chunk_size") is not None:
        out[size_name] = req["chunk_size"]
    if overlap_name and req.get("overlap") is not None:
        out[overlap_name] = req["overlap"]
    return out


def chonkie_(req):
    from chonkie import RecursiveChunker

    chunker = RecursiveChunker(**kwargs(req, "chunk_size"))
    return run_chonkie(req, chunker), chunker.chunk_size, "chonkie"


def chonkie_tokens(req):
    from chonkie import TokenChunker

    chunker = TokenChunker(**kwargs(req, "chunk_size", "chunk_overlap"))
    return run_chonkie(req, chunker), chunker.chunk_size, "chonkie"


def run_chonkie(req, chunker):
    out = []
    for text in req["texts"]:
        chunks = chunker.chunk(text)
        for c in chunks:
            assert text[c.start_index : c.end_index] == c.text, (c.start_index, c.text)
        out.append([[c.start_index, c.text] for c in chunks])
    return out


def haystack_recursive(req):
    if req.get("nltk_data"):
        import nltk

        nltk.data.path.insert(0, req["nltk_data"])
    from haystack import Document
    from haystack.components.preprocessors import RecursiveDocumentSplitter

    splitter = RecursiveDocumentSplitter(**kwargs(req, "split_length", "split_overlap"))
    splitter.warm_up()
    out = []
    for text in req["texts"]:
        docs = splitter.run(documents=[Document(content=text)])["documents"]
        out.append([[d.meta["split_idx_start"], d.content] for d in docs])
    return out, splitter.split_length, "haystack-ai"


def haystack_sentences(req):
    """The sentences the "sentence" separator cuts at: Haystack's SentenceSplitter as
    RecursiveDocumentSplitter builds it by default (keep_white_spaces=True)."""
    if req.get("nltk_data"):
        import nltk

        nltk.data.path.insert(0, req["nltk_data"])
    from haystack.components.preprocessors.sentence_tokenizer import SentenceSplitter

    splitter = SentenceSplitter(keep_white_spaces=True)
    out = []
    for text in req["texts"]:
        out.append([[s["start"], s["sentence"]] for s in splitter.split_sentences(text)])
    return out, None, "haystack-ai"


def punkt_english(req):
    """nltk's own trained English Punkt (PunktTokenizer("english")), no Haystack rules."""
    import nltk

    if req.get("nltk_data"):
        nltk.data.path.insert(0, req["nltk_data"])
    tokenizer = nltk.tokenize.PunktTokenizer("english")
    out = []
    for text in req["texts"]:
        out.append([[s, text[s:e]] for s, e in tokenizer.span_tokenize(text)])
    return out, None, "nltk"


def main():
    req = json.load(sys.stdin)
    run = {
        "chonkie": chonkie_,
        "chonkie-tokens": chonkie_tokens,
        "haystack-recursive": haystack_recursive,
        "haystack-sentences": haystack_sentences,
        "punkt-english": punkt_english,
    }[req["library"]]
    chunks, size, package = run(req)
    json.dump(
        {"chunks": chunks, "chunk_size": size, "versions": {package: version(package)}},
        sys.stdout,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
