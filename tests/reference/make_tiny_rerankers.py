"""Build tiny random-weight sentence-transformers CrossEncoder folders (hidden 32, 2 layers, the
vocabularies make_tiny_models.py trains on the example corpus: WordPiece for BERT, SentencePiece
Unigram for XLM-RoBERTa) with BertForSequenceClassification (pooler dense + tanh on [CLS], then
classifier) and XLMRobertaForSequenceClassification (classifier.dense + tanh + out_proj on <s>)
heads, num_labels 1, sigmoid and identity activations, a small pair window so pairs are truncated.
Saved by CrossEncoder.save (sentence-transformers 6: activation_fn in
config_sentence_transformers.json) and, edited as older versions wrote them, in the layouts before
sentence-transformers 5: config.json `sentence_transformers.activation_fn` (4.x, no
sentence-transformers files) and config.json `sbert_ce_default_activation_function` (before 4).

Records, per folder and pair, CrossEncoder.predict's score (every folder reloaded as users load
it), the window it truncates pairs to, the pair's token ids and type ids after its tokenizer's own
truncation (longest_first), and where the passage is cut: the end of the last passage token kept
(as a character and a UTF-8 byte offset into the passage), or null when the whole passage is kept.
The folders and the record are committed under tests/fixtures/tiny-rerankers/ and checked by
tests/rerank.rs.

usage: .venv-ref/bin/python tests/reference/make_tiny_rerankers.py tests/fixtures/tiny-rerankers
"""
import json
import os
import shutil
import sys

import torch
from sentence_transformers import CrossEncoder
from tokenizers import BertWordPieceTokenizer, SentencePieceUnigramTokenizer
from tokenizers.processors import TemplateProcessing
from transformers import (BertConfig, BertForSequenceClassification, BertTokenizerFast,
                          XLMRobertaConfig, XLMRobertaForSequenceClassification,
                          XLMRobertaTokenizerFast)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tiny_models import corpus_texts  # noqa: E402

SIGMOID = "torch.nn.modules.activation.Sigmoid"
IDENTITY = "torch.nn.modules.linear.Identity"

# name: (architecture, activation given to CrossEncoder, pair window, layout)
# layout "st6": as CrossEncoder.save writes it; "st4": activation in config.json
# `sentence_transformers`, no sentence-transformers files; "st3": config.json
# `sbert_ce_default_activation_function`; "plain": a transformers folder saying nothing (sigmoid).
VARIANTS = {
    "bert-sigmoid": ("bert", torch.nn.Sigmoid(), 32, "st6"),
    "bert-identity": ("bert", torch.nn.Identity(), 24, "st6"),
    "xlmr-sigmoid": ("xlmr", torch.nn.Sigmoid(), 32, "st6"),
    "xlmr-identity": ("xlmr", torch.nn.Identity(), 28, "st6"),
    "bert-st4-identity": ("bert", torch.nn.Identity(), 32, "st4"),
    "xlmr-st3-identity": ("xlmr", torch.nn.Identity(), 32, "st3"),
    "bert-plain-default": ("bert", None, 32, "plain"),
}

LONG = ("Rotate the signing keys every ninety days. The incident commander owns the timeline, "
        "the scribe writes it down, and nobody else changes production while the incident is "
        "open. Refunds for annual plans are pro rata after thirty days; monthly plans get none.")
QUERIES = [
    "how often are keys rotated?",
    "who owns the incident timeline",
    # Longer than some passages: longest_first cuts the query too.
    "when the incident is open who may change production and who writes the timeline down "
    "while the commander owns it and the scribe records every step of the rollback",
]
PASSAGES = [
    "Rotate the signing keys every ninety days.",
    LONG,
    "密钥每九十天轮换一次。事故指挥官负责时间线，记录员把它写下来，事故期间其他人不得更改生产环境。",
    "Zarządzanie kluczami: klucze są obracane co dziewięćdziesiąt dni, a incydent ma dowódcę.",
    "",
    " ",
    "a",
    "restart the payments stack: drain the queue, stop the workers, then the gateway " * 2,
]


def init_weights(net):
    """Weights at the scale of trained ones, as make_tiny_models.py sets them."""
    for m in net.modules():
        if isinstance(m, torch.nn.Linear):
            m.weight.data.normal_(0.0, m.in_features ** -0.5)
            if m.bias is not None:
                m.bias.data.normal_(0.0, 0.1)
        elif isinstance(m, torch.nn.Embedding):
            m.weight.data.normal_(0.0, 1.0)
        elif isinstance(m, torch.nn.LayerNorm):
            m.weight.data = 1.0 + 0.2 * torch.randn_like(m.weight)
            if m.bias is not None:
                m.bias.data = 0.2 * torch.randn_like(m.bias)


def tokenizers_for(base):
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(corpus_texts(), vocab_size=400, min_frequency=1,
                           special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    wp.save_model(base)
    with open(os.path.join(base, "vocab.txt"), encoding="utf-8") as f:
        vocab = {w: i for i, w in enumerate(f.read().splitlines())}
    tok = BertTokenizerFast(vocab=dict(vocab), do_lower_case=True, model_max_length=128)
    assert tok.vocab_size == len(vocab), "the vocabulary was not taken"
    sp = SentencePieceUnigramTokenizer()
    sp.train_from_iterator(corpus_texts(), vocab_size=400,
                           special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                           unk_token="<unk>")
    sp.post_processor = TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                           special_tokens=[("<s>", 0), ("</s>", 2)])
    xtok = XLMRobertaTokenizerFast(tokenizer_object=sp, bos_token="<s>", eos_token="</s>",
                                   sep_token="</s>", cls_token="<s>", unk_token="<unk>",
                                   pad_token="<pad>", mask_token="<mask>", model_max_length=128)
    return tok, xtok


def to_old_layout(folder, layout, activation):
    """Rewrite a saved folder as sentence-transformers before 5 left it: a transformers folder
    whose config.json carries the activation (or nothing)."""
    for name in ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"):
        os.remove(os.path.join(folder, name))
    path = os.path.join(folder, "config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    if layout == "st4":
        config["sentence_transformers"] = {"activation_fn": activation, "version": "4.1.0"}
    elif layout == "st3":
        config["sbert_ce_default_activation_function"] = activation
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, sort_keys=True)


def tail_of(ce, query, passage):
    """The pair as the folder's tokenizer truncates it, and where the passage is cut. Called on
    lists, as CrossEncoder calls it (a lone `tok(query, "")` takes the empty passage for no pair
    and leaves out its [SEP]; predict reads the pair)."""
    tok = ce.tokenizer
    window = ce.max_seq_length
    cut = tok([query], [passage], truncation="longest_first", max_length=window,
              return_offsets_mapping=True)
    whole = tok([query], [passage], truncation=False)
    fed = ce.preprocess([(query, passage)])
    assert fed["input_ids"][0].tolist() == cut["input_ids"][0], (query, passage)
    seq = cut.sequence_ids(0)
    kept = [i for i, s in enumerate(seq) if s == 1]
    all_b = sum(1 for s in whole.sequence_ids(0) if s == 1)
    ids = cut["input_ids"][0]
    entry = {
        "ids": ids,
        "type_ids": cut["token_type_ids"][0] if "token_type_ids" in cut else [0] * len(ids),
        "whole_tokens": len(whole["input_ids"][0]),
        "cut_char": None,
        "cut_byte": None,
    }
    if len(kept) < all_b:
        end = cut["offset_mapping"][0][kept[-1]][1] if kept else 0
        entry["cut_char"] = end
        entry["cut_byte"] = len(passage[:end].encode("utf-8"))
    return entry


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, "_base")
    os.makedirs(base, exist_ok=True)
    torch.manual_seed(0)
    tok, xtok = tokenizers_for(base)
    pairs = [[q, p] for q in QUERIES for p in PASSAGES]
    record = {"pairs": pairs, "models": {}}
    for i, (name, (arch, activation, window, layout)) in enumerate(VARIANTS.items()):
        torch.manual_seed(100 + i)
        if arch == "xlmr":
            cfg = XLMRobertaConfig(vocab_size=len(xtok), hidden_size=32, num_hidden_layers=2,
                                   num_attention_heads=2, intermediate_size=64,
                                   max_position_embeddings=130, pad_token_id=1, bos_token_id=0,
                                   eos_token_id=2, type_vocab_size=1, num_labels=1)
            net, t = XLMRobertaForSequenceClassification(cfg), xtok
        else:
            cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                             num_attention_heads=2, intermediate_size=64,
                             max_position_embeddings=128, num_labels=1)
            net, t = BertForSequenceClassification(cfg), tok
        init_weights(net)
        hf_dir = os.path.join(base, name)
        net.save_pretrained(hf_dir, safe_serialization=True)
        t.save_pretrained(hf_dir)
        ce = CrossEncoder(hf_dir, num_labels=1, max_length=window, device="cpu",
                          activation_fn=activation)
        folder = os.path.join(out_dir, name)
        if os.path.exists(folder):
            shutil.rmtree(folder)
        ce.save(folder)
        os.remove(os.path.join(folder, "README.md"))
        if layout != "st6":
            path = SIGMOID if isinstance(activation, torch.nn.Sigmoid) else IDENTITY
            to_old_layout(folder, layout, path)
        # Reload the folder as users do, so what is checked is what was written.
        ce = CrossEncoder(folder, device="cpu")
        assert ce.max_seq_length == window, (name, ce.max_seq_length)
        expect = type(activation) if activation is not None else torch.nn.Sigmoid
        assert isinstance(ce.activation_fn, expect), (name, ce.activation_fn)
        scores = ce.predict([tuple(p) for p in pairs], batch_size=5, convert_to_numpy=True)
        record["models"][name] = {
            "window": ce.max_seq_length,
            "activation": type(ce.activation_fn).__name__,
            "layout": layout,
            "scores": [float(s) for s in scores],
            "pairs": [tail_of(ce, q, p) for q, p in pairs],
        }
    shutil.rmtree(base)
    with open(os.path.join(out_dir, "record.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
