#!/usr/bin/env python3
"""Reference chunks from the real splitter libraries behind the text-splitter, semchunk and
haystack presets (tests/parity_splitters.rs). Runs in the interpreter named by
CHUNKSCOPE_SPLITTERS_PYTHON, a virtual environment with these pins (see scripts/test.sh):
semantic-text-splitter==0.33.1 (the Python binding of the text-splitter 0.33.1 crate),
semchunk==4.1.1, haystack-ai==3.4.1, tokenizers==0.23.3, transformers==5.25.0 (only for
chunkerify's default size).

Interface: JSON on stdin
  {"library": "text-splitter" | "semchunk" | "haystack",
   "texts": [str, ...],
   "markdown": [bool, ...]          (text-splitter: MarkdownSplitter for these texts)
   "unit": "chars" | "embed" | "cl100k",
   "tokenizer_json": path,          (the embedder's tokenizer.json; its folder for chunkerify)
   "chunk_size": int | null,        (semchunk: null = chunkerify's default for the tokenizer)
   "overlap": int | float,          (semchunk: a float below 1 is a fraction of the size)
   "split_threshold": int}          (haystack)
JSON on stdout:
  {"chunks": [[[start, text], ...] per input text], "chunk_size": int, "versions": {...}}
where start is the chunk's offset in the text in code points (Python string indices).

The embed unit counts the embedder's tokenizer as the libraries do for a tokenizers.Tokenizer:
content tokens (add_special_tokens=False) with truncation and padding turned off, which is what
chunkscope's engine counts. text-splitter gets the Tokenizer object
(from_huggingface_tokenizer); semchunk gets a tokenizers-based token counter, as
`semchunk.chunkerify(counter, chunk_size)`; chunkerify's default size is taken from
`semchunk.chunkerify(AutoTokenizer.from_pretrained(folder)).chunk_size`
(model_max_length - len(encode(""))).
"""

import json
import os
import sys
from importlib.metadata import version

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


def embed_tokenizer(path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    return tok


def text_splitter(req):
    from semantic_text_splitter import MarkdownSplitter, TextSplitter

    unit = req["unit"]
    size, overlap = req["chunk_size"], int(req.get("overlap") or 0)

    def make(cls):
        if unit == "chars":
            return cls(size, overlap=overlap)
        if unit == "embed":
            return cls.from_huggingface_tokenizer(
                embed_tokenizer(req["tokenizer_json"]), size, overlap=overlap
            )
        if unit == "cl100k":
            return cls.from_tiktoken_model("gpt-4", size, overlap=overlap)
        raise SystemExit("unknown unit %r" % unit)

    plain, md = make(TextSplitter), make(MarkdownSplitter)
    marks = req.get("markdown") or [False] * len(req["texts"])
    out = []
    for text, is_md in zip(req["texts"], marks):
        splitter = md if is_md else plain
        out.append([[start, chunk] for start, chunk in splitter.chunk_indices(text)])
    return out, size


def semchunk_(req):
    import semchunk

    unit = req["unit"]
    if unit == "chars":
        counter = len
    elif unit == "embed":
        tok = embed_tokenizer(req["tokenizer_json"])

        def counter(text):
            return len(tok.encode(text, add_special_tokens=False).ids)

    else:
        raise SystemExit("unknown unit %r" % unit)
    size = req.get("chunk_size")
    if size is None:
        from transformers import AutoTokenizer

        folder = os.path.dirname(req["tokenizer_json"])
        size = semchunk.chunkerify(AutoTokenizer.from_pretrained(folder)).chunk_size
    chunker = semchunk.chunkerify(counter, size)
    overlap = req.get("overlap") or None
    out = []
    for text in req["texts"]:
        chunks, offsets = chunker(text, offsets=True, overlap=overlap)
        for c, (s, e) in zip(chunks, offsets):
            assert text[s:e] == c, (c, s, e)
        out.append([[s, c] for c, (s, _) in zip(chunks, offsets)])
    return out, size


def haystack_(req):
    from haystack import Document
    from haystack.components.preprocessors import DocumentSplitter

    splitter = DocumentSplitter(
        split_by="word",
        split_length=req["chunk_size"],
        split_overlap=int(req.get("overlap") or 0),
        split_threshold=int(req.get("split_threshold") or 0),
    )
    out = []
    for text in req["texts"]:
        docs = splitter.run(documents=[Document(content=text)])["documents"]
        out.append([[d.meta["split_idx_start"], d.content] for d in docs])
    return out, req["chunk_size"]


def main():
    req = json.load(sys.stdin)
    lib = req["library"]
    run, package = {
        "text-splitter": (text_splitter, "semantic-text-splitter"),
        "semchunk": (semchunk_, "semchunk"),
        "haystack": (haystack_, "haystack-ai"),
    }[lib]
    chunks, size = run(req)
    json.dump(
        {"chunks": chunks, "chunk_size": size, "versions": {package: version(package)}},
        sys.stdout,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
