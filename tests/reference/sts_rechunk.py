#!/usr/bin/env python3
"""Time semantic-text-splitter (text-splitter's Python binding) re-chunking a corpus after a size
change, with the same tokenizer.json, for `chunkscope bench rechunk --reference`.

JSON on stdin: {"dir": path, "tokenizer_json": path, "sizes": [int, ...]}
JSON on stdout: {"files": n, "bytes": n, "millis": [one full re-chunk per size], "chunks": [...]}

text-splitter has no token cache: every re-chunk tokenizes the corpus again, which is the point of
the comparison.
"""

import json
import pathlib
import sys
import time

from semantic_text_splitter import TextSplitter


def main():
    req = json.load(sys.stdin)
    root = pathlib.Path(req["dir"])
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.rglob("*")) if p.is_file()]
    millis, chunks = [], []
    for size in req["sizes"]:
        splitter = TextSplitter.from_huggingface_tokenizer_file(req["tokenizer_json"], size)
        t0 = time.perf_counter()
        out = splitter.chunk_all(texts)
        millis.append((time.perf_counter() - t0) * 1000.0)
        chunks.append(sum(len(c) for c in out))
    json.dump({"files": len(texts), "bytes": sum(len(t.encode()) for t in texts), "millis": millis, "chunks": chunks}, sys.stdout)


if __name__ == "__main__":
    main()
