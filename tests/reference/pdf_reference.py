"""The reference PDF text extraction (pypdf), per page, with the time it took.

stdin:  {"paths": ["/dir/a.pdf", ...]}
stdout: {"docs": [{"pages": ["page 1 text", ...]}, ...], "seconds": 1.23}
"""
import json
import sys
import time

from pypdf import PdfReader


def main():
    req = json.load(sys.stdin)
    start = time.perf_counter()
    docs = [{"pages": [p.extract_text() or "" for p in PdfReader(path).pages]} for path in req["paths"]]
    json.dump({"docs": docs, "seconds": time.perf_counter() - start}, sys.stdout)


if __name__ == "__main__":
    main()
