"""Max-Min semantic chunking, written from the paper's description (Kiss, Nagy and Szilagyi, 2025),
independently of chunkscope's Rust code, for tests/maxmin.rs.

Reads JSON on stdin: {"params": {"fixed_threshold", "c", "init_constant"},
"docs": [[vector, ...], ...]} (one list of sentence vectors per document) and prints JSON: for each
document, the indices of the sentences that open a chunk.
"""

import json
import math
import sys


def cos(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return dot / (na * nb)


def chunk_starts(vectors, fixed_threshold, c, init_constant):
    if not vectors:
        return []
    starts = [0]
    current = [vectors[0]]
    min_pair = None
    for i in range(1, len(vectors)):
        v = vectors[i]
        if len(current) == 1:
            sim = cos(v, current[0])
            score = init_constant * sim
            threshold = 0.0
            candidate_min = sim
        else:
            sims = [cos(v, m) for m in current]
            score = max(sims)
            threshold = min_pair * c * (1.0 / (1.0 + math.exp(-(len(current) - 1))))
            candidate_min = min(min_pair, min(sims))
        if score > max(threshold, fixed_threshold):
            current.append(v)
            min_pair = candidate_min
        else:
            starts.append(i)
            current = [v]
            min_pair = None
    return starts


def main():
    data = json.load(sys.stdin)
    p = data["params"]
    out = [
        chunk_starts(doc, p["fixed_threshold"], p["c"], p["init_constant"])
        for doc in data["docs"]
    ]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
