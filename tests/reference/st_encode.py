"""What sentence-transformers makes of a model folder, for tests/real_weights.rs.

JSON on stdin: {"model_dir": path, "documents": [str], "queries": [str], "windows": [int]}
JSON on stdout:
  {"st_window": the max_seq_length the folder gives, before any change,
   "document_prompt", "query_prompt": what encode_document / encode_query put ahead,
   "windows": {"<w>": {"documents": [[float]], "queries": [[float]]}}  (encode_document /
              encode_query at max_seq_length w),
   "doc_tokens": [token count of prompt + document, specials included, untruncated],
   "tail_bytes": {"<w>": [byte offset in the document where the first unread token starts, or
                  null when the window holds it all]},
   "versions": {...}}
"""
import json
import sys

import sentence_transformers
import torch
import transformers
from sentence_transformers import SentenceTransformer


def prompt_for(model, names):
    name = next((n for n in names if n in model.prompts), model.default_prompt_name)
    return model.prompts.get(name, "") if name else ""


def main():
    req = json.load(sys.stdin)
    model = SentenceTransformer(req["model_dir"], device="cpu")
    out = {"st_window": model.max_seq_length, "windows": {}, "tail_bytes": {},
           "versions": {"sentence_transformers": sentence_transformers.__version__,
                        "transformers": transformers.__version__, "torch": torch.__version__}}
    doc_prompt = prompt_for(model, ["document", "passage", "corpus"])
    out["document_prompt"], out["query_prompt"] = doc_prompt, prompt_for(model, ["query"])
    docs, queries = req["documents"], req["queries"]
    tok = model.tokenizer
    encoded = [tok(doc_prompt + d, return_offsets_mapping=True, truncation=False) for d in docs]
    out["doc_tokens"] = [len(e["input_ids"]) for e in encoded]
    specials = len(tok("")["input_ids"])
    prompt_chars = len(doc_prompt)
    with torch.inference_mode():
        for w in req["windows"]:
            model.max_seq_length = w
            out["windows"][str(w)] = {
                "documents": model.encode_document(docs, convert_to_numpy=True).tolist(),
                "queries": model.encode_query(queries, convert_to_numpy=True).tolist(),
            }
            tails = []
            for d, e in zip(docs, encoded):
                # Content tokens (specials have empty spans); the first one past the window.
                content = [s for s, t in e["offset_mapping"] if t > s]
                first = w - specials
                if first >= len(content):
                    tails.append(None)
                else:
                    start = content[first] - prompt_chars
                    tails.append(len(d[:max(start, 0)].encode("utf-8")))
            out["tail_bytes"][str(w)] = tails
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
