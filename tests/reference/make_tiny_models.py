"""Build tiny random-weight sentence-transformers models (hidden 32, 2 layers, a vocabulary of a
few hundred trained on the example corpus: WordPiece, SentencePiece Unigram, byte-level BPE): BERT with each pooling mode, with and without
Normalize, with a Dense layer and with prompts; XLM-RoBERTa with a SentencePiece (Unigram)
vocabulary and e5-style prompts; DistilBERT; MPNet (relative position bias); ModernBERT and
Qwen3 (candle); NomicBERT and JinaBERT through tiny_arch_ref.py (candle). Record sentence-transformers' own vectors and token
counts for varied texts at two windows. The folders and the record are
committed under tests/fixtures/tiny/ and checked by tests/tiny_models.rs.

usage: python make_tiny_models.py OUT_DIR   (with the torch, transformers and sentence-transformers
that scripts/test.sh pins and installs into .venv-ref: .venv-ref/bin/python make_tiny_models.py)
The folders before sentence-transformers 5 (tests/fixtures/tiny-st3) were made by this script
with sentence-transformers 3.4.1 and transformers 4.x and are kept as they are.
"""
import glob
import json
import os
import sys

import torch
from sentence_transformers import SentenceTransformer, models
from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer, SentencePieceUnigramTokenizer
from tokenizers.processors import TemplateProcessing
from transformers import (BertConfig, PreTrainedTokenizerFast, BertModel, BertTokenizerFast, DistilBertConfig,
                          DistilBertModel, DistilBertTokenizerFast, MPNetConfig, MPNetModel,
                          ModernBertConfig,
                          ModernBertModel, Qwen3Config, Qwen3Model, XLMRobertaConfig,
                          XLMRobertaModel, XLMRobertaTokenizerFast)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_arch_ref import JinaRefConfig, JinaRefModel, NomicRefConfig, NomicRefModel  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples")

TEXTS = [
    "Rotate the signing keys every ninety days.",
    "Refunds for annual plans are pro rata after thirty days; monthly plans get none.",
    "The incident commander owns the timeline, the scribe writes it down, and nobody "
    "else changes production while the incident is open. Escalate after fifteen minutes.",
    "restart the payments stack: drain the queue, stop the workers, then the gateway",
    "Zarządzanie kluczami: klucze są obracane co dziewięćdziesiąt dni.",
    "密钥每九十天轮换一次。",
    "a",
    "On-call engineers page the security team through PagerDuty service SEC-PRIMARY when a "
    "key may have leaked; the rotation then skips the merchant notice period entirely and "
    "the status page says so. " * 3,
]
QUERIES = ["how often are keys rotated?", "who owns the incident timeline"]
WINDOWS = [16, 64]

VARIANTS = {
    # name: (pooling mode, normalize, dense, prompts, default prompt, include_prompt)
    "cls-normalized": ("cls", True, False, None, None, True),
    "mean-raw": ("mean", False, False, None, None, True),
    "max": ("max", True, False, None, None, True),
    "mean-sqrt-len": ("mean_sqrt_len_tokens", True, False, None, None, True),
    "weightedmean": ("weightedmean", True, False, None, None, True),
    "lasttoken": ("lasttoken", True, False, None, None, True),
    "e5-prompts": ("mean", True, False, {"query": "query: ", "passage": "passage: "}, None, True),
    "dense-tanh": ("mean", True, True, None, None, True),
    "prompt-excluded": ("mean", True, False,
                        {"query": "Represent the question: ", "document": "Represent the text: "},
                        None, False),
    "xlm-roberta-e5": ("mean", True, False, {"query": "query: ", "passage": "passage: "}, None, True),
    "distilbert-cls": ("cls", True, False, None, None, True),
    "mpnet-mean": ("mean", True, False, None, None, True),
    # Run through candle-transformers.
    "modernbert-mean": ("mean", True, False, None, None, True),
    "qwen3-lasttoken": ("lasttoken", True, False,
                        {"query": "Instruct: find the passage that answers the question\nQuery: "},
                        None, True),
    # Architectures whose hub code is not installable: tiny_arch_ref.py's own forward passes,
    # loaded by sentence-transformers with trust_remote_code, as users load the real ones.
    "nomic-bert-prompts": ("mean", True, False,
                           {"query": "search_query: ", "document": "search_document: "},
                           None, True),
    "jina-bert-alibi": ("mean", True, False, None, None, True),
    # BERT with the other feed-forward activations transformers names (hidden_act).
    "bert-gelu-new": ("mean", True, False, None, None, True),
    "bert-relu": ("cls", True, False, None, None, True),
    "bert-silu": ("mean", False, False, None, None, True),
}


def corpus_texts():
    out = []
    for path in sorted(glob.glob(os.path.join(EXAMPLES, "**", "*.*"), recursive=True)):
        if path.endswith((".md", ".txt", ".rst")):
            with open(path, encoding="utf-8") as f:
                out.extend(p for p in f.read().split("\n\n") if p.strip())
    return out + TEXTS


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(corpus_texts(), vocab_size=400, min_frequency=1,
                           special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    base = os.path.join(out_dir, "_base")
    os.makedirs(base, exist_ok=True)
    wp.save_model(base)
    # transformers 5 takes the vocabulary itself (a vocab_file argument is silently ignored
    # there, leaving only the five specials).
    with open(os.path.join(base, "vocab.txt"), encoding="utf-8") as f:
        vocab = {w: i for i, w in enumerate(f.read().splitlines())}
    tok = BertTokenizerFast(vocab=dict(vocab), do_lower_case=True, model_max_length=128)
    # ModernBERT and Qwen3 take no token type ids.
    plain_tok = BertTokenizerFast(vocab=dict(vocab), do_lower_case=True, model_max_length=128,
                                  model_input_names=["input_ids", "attention_mask"])
    distil_tok = DistilBertTokenizerFast(vocab=dict(vocab), do_lower_case=True,
                                         model_max_length=128)
    assert tok.vocab_size == len(vocab) == distil_tok.vocab_size, "the vocabulary was not taken"
    # XLM-RoBERTa: a SentencePiece Unigram vocabulary, <s> text </s>.
    sp = SentencePieceUnigramTokenizer()
    sp.train_from_iterator(corpus_texts(), vocab_size=400,
                           special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], unk_token="<unk>")
    sp.post_processor = TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                           special_tokens=[("<s>", 0), ("</s>", 2)])
    # Qwen3: a byte-level BPE vocabulary, an end-of-text token appended to every input (as
    # Qwen3-Embedding's tokenizer does; last-token pooling reads it).
    bl = ByteLevelBPETokenizer()
    bl.train_from_iterator(corpus_texts(), vocab_size=400, special_tokens=["<|endoftext|>", "<|pad|>"])
    eot = bl.token_to_id("<|endoftext|>")
    bl.post_processor = TemplateProcessing(single="$A <|endoftext|>", pair="$A <|endoftext|> $B <|endoftext|>",
                                           special_tokens=[("<|endoftext|>", eot)])
    qtok = PreTrainedTokenizerFast(tokenizer_object=bl, eos_token="<|endoftext|>",
                                   pad_token="<|pad|>", model_max_length=128,
                                   model_input_names=["input_ids", "attention_mask"])
    xtok = XLMRobertaTokenizerFast(tokenizer_object=sp, bos_token="<s>", eos_token="</s>",
                                   sep_token="</s>", cls_token="<s>", unk_token="<unk>",
                                   pad_token="<pad>", mask_token="<mask>", model_max_length=128)
    record = {"texts": TEXTS, "queries": QUERIES, "windows": WINDOWS, "models": {}}
    for i, (name, (mode, normalize, dense, prompts, default, include)) in enumerate(VARIANTS.items()):
        torch.manual_seed(i + 1)
        if name.startswith("xlm-roberta"):
            cfg = XLMRobertaConfig(vocab_size=len(xtok), hidden_size=32, num_hidden_layers=2,
                                   num_attention_heads=2, intermediate_size=64,
                                   max_position_embeddings=130, pad_token_id=1, bos_token_id=0,
                                   eos_token_id=2, type_vocab_size=1)
            net, t = XLMRobertaModel(cfg, add_pooling_layer=False), xtok
        elif name.startswith("distilbert"):
            cfg = DistilBertConfig(vocab_size=distil_tok.vocab_size, dim=32, n_layers=2, n_heads=2,
                                   hidden_dim=64, max_position_embeddings=128)
            net, t = DistilBertModel(cfg), distil_tok
        elif name.startswith("mpnet"):
            cfg = MPNetConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=2, intermediate_size=64,
                              max_position_embeddings=130, pad_token_id=0,
                              relative_attention_num_buckets=32)
            net, t = MPNetModel(cfg, add_pooling_layer=False), plain_tok
        elif name.startswith("modernbert"):
            cfg = ModernBertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=3,
                                   num_attention_heads=2, intermediate_size=64,
                                   max_position_embeddings=128, global_attn_every_n_layers=2,
                                   local_attention=16, pad_token_id=0, bos_token_id=2,
                                   eos_token_id=3, cls_token_id=2, sep_token_id=3,
                                   attn_implementation="eager")
            net, t = ModernBertModel(cfg), plain_tok
        elif name.startswith("qwen3"):
            cfg = Qwen3Config(vocab_size=len(qtok), hidden_size=32, intermediate_size=64,
                              num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                              head_dim=16, max_position_embeddings=128, rope_theta=10000.0,
                              tie_word_embeddings=False, attn_implementation="eager")
            net, t = Qwen3Model(cfg), qtok
        elif name.startswith("nomic"):
            cfg = NomicRefConfig(vocab_size=tok.vocab_size, n_embd=32, n_head=2, n_layer=2,
                                 n_inner=64, n_positions=128)
            net, t = NomicRefModel(cfg), tok
        elif name.startswith("jina"):
            # Six heads: ALiBi's slopes for a head count that is not a power of two.
            cfg = JinaRefConfig(vocab_size=tok.vocab_size, hidden_size=48, num_attention_heads=6,
                                intermediate_size=64, max_position_embeddings=128)
            net, t = JinaRefModel(cfg), tok
        else:
            act = name[len("bert-"):].replace("-", "_") if name.startswith("bert-") else "gelu"
            cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                             num_attention_heads=2, intermediate_size=64, max_position_embeddings=128,
                             hidden_act=act)
            net, t = BertModel(cfg), tok
        # Weights at the scale of trained ones (unit-variance outputs), so attention and
        # positions move the vectors (at transformers' 0.02 they barely do: dropping ALiBi left
        # the cosine at 1.0000), and norms away from 1 and 0, so a swapped or skipped norm shows.
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
        remote = isinstance(net, (NomicRefModel, JinaRefModel))
        if remote:
            type(net).register_for_auto_class("AutoModel")
            type(net.config).register_for_auto_class()
        hf_dir = os.path.join(base, name)
        net.save_pretrained(hf_dir, safe_serialization=True)
        t.save_pretrained(hf_dir)
        trust = {"trust_remote_code": True} if remote else {}
        transformer = models.Transformer(hf_dir, max_seq_length=64, model_args=trust,
                                         config_args=trust)
        width = transformer.get_word_embedding_dimension()
        pooling = models.Pooling(width, pooling_mode=mode, include_prompt=include)
        mods = [transformer, pooling]
        if dense:
            mods.append(models.Dense(width, 16, activation_function=torch.nn.Tanh()))
        if normalize:
            mods.append(models.Normalize())
        st = SentenceTransformer(modules=mods, device="cpu",
                                 prompts=prompts or {}, default_prompt_name=default)
        folder = os.path.join(out_dir, name)
        st.save(folder, safe_serialization=True)
        # The generated model card is not needed by anything; the reference architecture's code
        # (copied beside remote-code folders) lives once, in tests/reference.
        os.remove(os.path.join(folder, "README.md"))
        # Reload the folder as users do, so what is checked is what was written (transformers
        # 5.25 reads remote code from the folder itself, so it stays until the record is made).
        st = SentenceTransformer(folder, device="cpu", trust_remote_code=remote)
        # The window sentence-transformers reads from the folder (its own rule, per version).
        entry = {"windows": {}, "st_window": st.max_seq_length}
        for w in WINDOWS:
            st.max_seq_length = w
            docs = st.encode_document(TEXTS, convert_to_numpy=True)
            qs = st.encode_query(QUERIES, convert_to_numpy=True)
            entry["windows"][str(w)] = {"docs": docs.tolist(), "queries": qs.tolist()}
        doc_prompt = next((k for k in ("document", "passage", "corpus") if k in st.prompts), None)
        prefix = st.prompts[doc_prompt] if doc_prompt else ""
        entry["doc_tokens"] = [len(st.tokenizer(prefix + t)["input_ids"]) for t in TEXTS]
        record["models"][name] = entry
        code = os.path.join(folder, "tiny_arch_ref.py")
        if os.path.exists(code):
            os.remove(code)
    # The base folder held the shared tokenizer and plain transformers checkpoints.
    import shutil
    shutil.rmtree(base)
    with open(os.path.join(out_dir, "record.json"), "w", encoding="utf-8") as f:
        json.dump(record, f)


if __name__ == "__main__":
    main()
