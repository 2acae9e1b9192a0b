#!/usr/bin/env python3
"""Reference embeddings and timings from sentence-transformers (torch, CPU).

JSON on stdin:
  {"model_dir": path, "texts": [str, ...], "window": int,
   "batch_sizes": [int, ...] (optional: time encode() at each batch size),
   "repeat": int (optional, timing repetitions, default 1),
   "bf16": bool (optional: also encode and time under torch.autocast("cpu", bfloat16))}
JSON on stdout:
  {"vectors": [[float, ...] per text] (batch 32, normalised),
   "timings": {"<batch>": seconds for one encode() of all texts, best of `repeat`},
   "vectors_bf16", "timings_bf16": the same under bf16 autocast (when asked),
   "torch_threads": int, "versions": {...}}

The window is set as sentence-transformers' max_seq_length, which truncates the tokenizer's input to
that many tokens, [CLS] and [SEP] included.
"""

import json
import os
import sys
import time

import torch
from sentence_transformers import SentenceTransformer
import sentence_transformers


def main():
    req = json.load(sys.stdin)
    # Folders whose architecture lives in code beside the weights (config.json's auto_map, as
    # nomic-embed-text and jina-embeddings-v2 ship) load only with trust_remote_code, as users
    # load them.
    try:
        with open(os.path.join(req["model_dir"], "config.json"), encoding="utf-8") as f:
            remote = "auto_map" in json.load(f)
    except OSError:
        remote = False
    model = SentenceTransformer(req["model_dir"], device="cpu", trust_remote_code=remote)
    model.max_seq_length = int(req["window"])
    texts = req["texts"]

    def run():
        vectors = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        timings = {}
        for b in req.get("batch_sizes", []):
            model.encode(texts[: max(1, b)], batch_size=b, normalize_embeddings=True)  # warm up
            best = None
            for _ in range(int(req.get("repeat", 1))):
                t0 = time.perf_counter()
                model.encode(texts, batch_size=b, normalize_embeddings=True)
                dt = time.perf_counter() - t0
                best = dt if best is None else min(best, dt)
            timings[str(b)] = best
        return vectors.astype("float32").tolist(), timings

    with torch.inference_mode():
        vectors, timings = run()
        extra = {}
        if req.get("bf16"):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                extra["vectors_bf16"], extra["timings_bf16"] = run()
    json.dump(
        {
            **extra,
            "vectors": vectors,
            "timings": timings,
            "torch_threads": torch.get_num_threads(),
            "versions": {"sentence_transformers": sentence_transformers.__version__, "torch": torch.__version__},
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
