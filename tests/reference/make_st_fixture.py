#!/usr/bin/env python3
"""Write tests/fixtures/st_vectors.json: sentence-transformers' embeddings of varied texts at windows
128 and 256, for the embedder test to compare against (cosine >= 0.9999).

Run with a Python that has sentence-transformers and torch:
  python tests/reference/make_st_fixture.py MODEL_DIR
"""

import json
import pathlib
import sys

import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

ROOT = pathlib.Path(__file__).resolve().parents[2]

INLINE = {
    "short": "Rotate the staging key.",
    "question": "Which flag rolls back the gateway deployment?",
    "code": "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{v:?}\");\n}\n",
    "cjk": "检索增强生成的质量在切分时就已决定。嵌入模型只读取每个片段的前一百二十八个词元，其余部分从未被搜索。",
    "spanish": "La calidad de la recuperación se decide al trocear: lo que queda fuera de la ventana nunca llega al vector.",
    "emoji": "Deploy done 🚀 — error rate 0.2 % ✅, rollback plan ready 🧯.",
    "blank-ish": "  \n\t ",
}
FILES = ["README.md", "runbooks/rotate-keys.md", "policy/refunds.md", "guides/incident-handbook.md"]


def main():
    model = SentenceTransformer(sys.argv[1], device="cpu")
    texts = dict(INLINE)
    for f in FILES:
        texts["examples/" + f] = (ROOT / "examples" / f).read_text(encoding="utf-8")
    out = {
        "generator": "tests/reference/make_st_fixture.py",
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "inline": INLINE,
        "files": ["examples/" + f for f in FILES],
        "windows": {},
    }
    names = list(texts)
    for window in (128, 256):
        model.max_seq_length = window
        vecs = model.encode([texts[n] for n in names], normalize_embeddings=True)
        out["windows"][str(window)] = {n: [float(f"{x:.7g}") for x in v] for n, v in zip(names, vecs)}
    path = ROOT / "tests" / "fixtures" / "st_vectors.json"
    path.write_text(json.dumps(out, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
