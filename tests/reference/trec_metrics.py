"""pytrec_eval's per-query measures for tests/metrics.rs.

Reads JSON on stdin: {"qrels": {query: {doc: grade}}, "run": {query: [doc ids, best first]},
"ks": [cutoffs]}. Each ranking is handed to pytrec_eval with scores n, n-1, ..., 1 (strictly
decreasing), so trec_eval's re-sort (score descending, then docno descending) keeps our order.

Prints {"version": pytrec-eval-terrier's version, "per_query": {query: {measure: value}}} with
trec_eval's names (ndcg_cut_5, map_cut_5, recall_5, P_5, recip_rank) plus recip_rank_cut_k:
recip_rank of the ranking cut to its first k (MRR@k; trec_eval has no cutoff for recip_rank).
Only queries in both qrels and run are measured, as pytrec_eval does.
"""

import json
import sys
from importlib.metadata import version

import pytrec_eval


def scored(ranking):
    n = len(ranking)
    return {doc: float(n - i) for i, doc in enumerate(ranking)}


def main():
    req = json.load(sys.stdin)
    qrels = {q: {d: int(g) for d, g in docs.items()} for q, docs in req["qrels"].items()}
    run = req["run"]
    ks = ",".join(str(k) for k in req["ks"])
    measures = {f"ndcg_cut.{ks}", f"map_cut.{ks}", f"recall.{ks}", f"P.{ks}", "recip_rank"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
    per_query = evaluator.evaluate({q: scored(r) for q, r in run.items()})
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
    for k in req["ks"]:
        cut = rr.evaluate({q: scored(r[:k]) for q, r in run.items()})
        for q, values in cut.items():
            per_query[q][f"recip_rank_cut_{k}"] = values["recip_rank"]
    json.dump({"version": version("pytrec-eval-terrier"), "per_query": per_query}, sys.stdout)


if __name__ == "__main__":
    main()
