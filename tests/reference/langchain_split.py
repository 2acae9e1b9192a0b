#!/usr/bin/env python3
"""Reference chunks from the real langchain_text_splitters
RecursiveCharacterTextSplitter (verified with langchain-text-splitters 1.1.3).

Interface: JSON on stdin
  {"texts": [str, ...], "chunk_size": int, "chunk_overlap": int,
   "unit": "chars" | "embed", "tokenizer_json": path-or-null,
   "separators": [str, ...]}            (separators optional)
JSON on stdout: {"chunks": [[str, ...] per input text]}

unit "chars": RecursiveCharacterTextSplitter(chunk_size=..., chunk_overlap=...)
  with everything else default: separators ["\\n\\n", "\\n", " ", ""],
  keep_separator=True (separator kept at the START of the following piece),
  is_separator_regex=False, strip_whitespace=True, length_function=len
  (Python len = Unicode code points, not UTF-16 units, not bytes).

unit "embed": equivalent of
  RecursiveCharacterTextSplitter.from_huggingface_tokenizer(tok, chunk_size=...,
  chunk_overlap=...).
  In langchain_text_splitters/base.py (1.1.3) from_huggingface_tokenizer only
  checks that `tok` is a transformers PreTrainedTokenizerBase and then uses
  length_function = len(tok.tokenize(text)). For a fast (Rust-backed) tokenizer
  such as BertTokenizerFast, transformers' PreTrainedTokenizerFast.tokenize(text)
  is encode_plus(text, add_special_tokens=False).tokens(), and encode_plus with
  its defaults (truncation=False, padding=False) turns the backend's
  truncation/padding off. So len(tok.tokenize(text)) ==
  len(Tokenizer.encode(text, add_special_tokens=False).ids) on the bare
  `tokenizers` object with no_truncation() and no_padding(), which is what is
  used here (transformers itself is not needed). Disabling both matters: e.g.
  all-MiniLM-L6-v2's tokenizer.json ships truncation max_length=128 and fixed
  padding to 128, which would otherwise cap / inflate every count.
"""

import json
import sys

from langchain_text_splitters import RecursiveCharacterTextSplitter


def make_splitter(req):
    unit = req.get("unit", "chars")
    kwargs = {
        "chunk_size": req["chunk_size"],
        "chunk_overlap": req["chunk_overlap"],
    }
    if req.get("separators") is not None:
        kwargs["separators"] = list(req["separators"])

    if unit == "chars":
        return RecursiveCharacterTextSplitter(**kwargs)

    if unit == "embed":
        path = req.get("tokenizer_json")
        if not path:
            raise SystemExit("unit 'embed' needs tokenizer_json")
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(path)
        tok.no_truncation()
        tok.no_padding()

        def token_count(text):
            return len(tok.encode(text, add_special_tokens=False).ids)

        return RecursiveCharacterTextSplitter(length_function=token_count, **kwargs)

    raise SystemExit("unknown unit %r (expected 'chars' or 'embed')" % unit)


def main():
    req = json.load(sys.stdin)
    splitter = make_splitter(req)
    chunks = [splitter.split_text(text) for text in req.get("texts", [])]
    json.dump({"chunks": chunks}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
