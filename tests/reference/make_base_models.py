"""Build base-size random-weight NomicBERT and JinaBERT sentence-transformers folders (768 wide,
12 layers, 12 heads, 3,072 inner: the shapes of nomic-embed-text-v1.5 and
jina-embeddings-v2-base-en) for `bench embed`, with tiny_arch_ref.py as their code (loaded by
sentence-transformers with trust_remote_code) and a BERT WordPiece tokenizer copied from a model
folder (all-MiniLM-L6-v2's: the uncased vocabulary both models use). Speed depends on the shapes,
not on trained values; the folders are about 550 MB each and are not committed.

usage: python make_base_models.py TOKENIZER_DIR OUT_DIR   (needs torch, transformers,
sentence-transformers)
"""
import os
import shutil
import sys

import torch
from sentence_transformers import SentenceTransformer, models
from transformers import BertTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tiny_arch_ref import JinaRefConfig, JinaRefModel, NomicRefConfig, NomicRefModel  # noqa: E402


def main():
    tok_dir, out_dir = sys.argv[1], sys.argv[2]
    tok = BertTokenizerFast.from_pretrained(tok_dir)
    vocab = -(-len(tok) // 64) * 64  # nomic pads the word table to a multiple of 64
    builds = {
        "nomic-base": (NomicRefModel, NomicRefConfig(
            vocab_size=vocab, n_embd=768, n_head=12, n_layer=12, n_inner=3072, n_positions=8192),
            {"query": "search_query: ", "document": "search_document: "}),
        "jina-base": (JinaRefModel, JinaRefConfig(
            vocab_size=vocab, hidden_size=768, num_attention_heads=12, num_hidden_layers=12,
            intermediate_size=3072, max_position_embeddings=8192), {}),
    }
    torch.manual_seed(0)
    for name, (cls, cfg, prompts) in builds.items():
        net = cls(cfg)
        for m in net.modules():
            if isinstance(m, torch.nn.Linear):
                m.weight.data.normal_(0.0, m.in_features ** -0.5)
        cls.register_for_auto_class("AutoModel")
        type(cfg).register_for_auto_class()
        hf_dir = os.path.join(out_dir, "_hf", name)
        net.save_pretrained(hf_dir, safe_serialization=True)
        tok.save_pretrained(hf_dir)
        trust = {"trust_remote_code": True}
        transformer = models.Transformer(hf_dir, max_seq_length=512, model_args=trust,
                                         config_args=trust)
        st = SentenceTransformer(
            modules=[transformer, models.Pooling(768, pooling_mode="mean"), models.Normalize()],
            device="cpu", prompts=prompts)
        st.save(os.path.join(out_dir, name), safe_serialization=True)
    shutil.rmtree(os.path.join(out_dir, "_hf"))


if __name__ == "__main__":
    main()
