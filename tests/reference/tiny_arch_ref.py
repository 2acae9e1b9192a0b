"""Independent PyTorch forward passes of two architectures whose hub code cannot be installed here:
NomicBERT (nomic-embed-text) and JinaBERT (jina-embeddings-v2), written from their published
descriptions with the tensor names and config keys of the released checkpoints. They stand in
for the hub's own modules when make_tiny_models.py builds tiny folders, so sentence-transformers
(trust_remote_code, as users load these models) computes the reference vectors, and chunkscope's
path through candle-transformers is checked against code it shares nothing with.

NomicBERT: word + token-type embeddings, LayerNorm, then post-norm blocks of a fused q|k|v
projection with rotary positions (first half / second half rotation), softmax attention, an
output projection, and a SwiGLU feed-forward (fc11 value, fc12 gate through SiLU, fc2).

JinaBERT: BERT's embeddings without a position table, BERT's attention with a symmetric ALiBi
bias (-slope * |i - j| per head, the ALiBi paper's slopes), and a gated GELU feed-forward
(one projection to twice the inner width; GELU of the first half times the second half; wo;
LayerNorm of the residual sum).
"""
import math

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput


class NomicRefConfig(PretrainedConfig):
    model_type = "nomic_bert"
    attribute_map = {"hidden_size": "n_embd", "num_attention_heads": "n_head",
                     "num_hidden_layers": "n_layer", "max_position_embeddings": "n_positions"}

    def __init__(self, vocab_size=400, n_embd=32, n_head=2, n_layer=2, n_inner=64,
                 n_positions=128, type_vocab_size=2, layer_norm_epsilon=1e-12,
                 rotary_emb_fraction=1.0, rotary_emb_base=1000.0, rotary_emb_interleaved=False,
                 rotary_scaling_factor=None, qkv_proj_bias=False, mlp_fc1_bias=False,
                 mlp_fc2_bias=False, activation_function="swiglu", prenorm=False, causal=False,
                 **kwargs):
        self.vocab_size = vocab_size
        self.n_embd = n_embd
        self.n_head = n_head
        self.n_layer = n_layer
        self.n_inner = n_inner
        self.n_positions = n_positions
        self.type_vocab_size = type_vocab_size
        self.layer_norm_epsilon = layer_norm_epsilon
        self.rotary_emb_fraction = rotary_emb_fraction
        self.rotary_emb_base = rotary_emb_base
        self.rotary_emb_interleaved = rotary_emb_interleaved
        self.rotary_scaling_factor = rotary_scaling_factor
        self.qkv_proj_bias = qkv_proj_bias
        self.mlp_fc1_bias = mlp_fc1_bias
        self.mlp_fc2_bias = mlp_fc2_bias
        self.activation_function = activation_function
        self.prenorm = prenorm
        self.causal = causal
        super().__init__(**kwargs)


def _rotate(x, cos, sin):
    """Rotary positions on the last axis: pairs are (i, i + d/2)."""
    half = x.shape[-1] // 2
    lo, hi = x[..., :half], x[..., half:]
    return torch.cat([lo * cos - hi * sin, hi * cos + lo * sin], dim=-1)


class _NomicEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.n_embd)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.n_embd)


class _NomicAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.n_head
        self.Wqkv = nn.Linear(c.n_embd, 3 * c.n_embd, bias=c.qkv_proj_bias)
        self.out_proj = nn.Linear(c.n_embd, c.n_embd, bias=c.qkv_proj_bias)

    def forward(self, x, bias, cos, sin):
        b, n, width = x.shape
        d = width // self.heads
        q, k, v = self.Wqkv(x).view(b, n, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d) + bias
        ctx = torch.softmax(scores, dim=-1) @ v
        return self.out_proj(ctx.transpose(1, 2).reshape(b, n, width))


class _NomicMlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc11 = nn.Linear(c.n_embd, c.n_inner, bias=c.mlp_fc1_bias)
        self.fc12 = nn.Linear(c.n_embd, c.n_inner, bias=c.mlp_fc1_bias)
        self.fc2 = nn.Linear(c.n_inner, c.n_embd, bias=c.mlp_fc2_bias)

    def forward(self, x):
        return self.fc2(self.fc11(x) * nn.functional.silu(self.fc12(x)))


class _NomicBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn = _NomicAttention(c)
        self.mlp = _NomicMlp(c)
        self.norm1 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.norm2 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)

    def forward(self, x, bias, cos, sin):
        x = self.norm1(x + self.attn(x, bias, cos, sin))
        return self.norm2(x + self.mlp(x))


class _NomicEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layers = nn.ModuleList(_NomicBlock(c) for _ in range(c.n_layer))


class _RefModel(PreTrainedModel):
    """What both models share: transformers' weight init, and the inputs sentence-transformers
    may leave out."""

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(0.0, 0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias.data.zero_()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, **_):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        return self.encode(input_ids, attention_mask, token_type_ids)


class NomicRefModel(_RefModel):
    config_class = NomicRefConfig
    base_model_prefix = "nomic_ref"

    def __init__(self, config):
        super().__init__(config)
        self.embeddings = _NomicEmbeddings(config)
        self.emb_ln = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.encoder = _NomicEncoder(config)
        self.post_init()

    def encode(self, input_ids, attention_mask, token_type_ids):
        c = self.config
        x = self.embeddings.word_embeddings(input_ids)
        x = x + self.embeddings.token_type_embeddings(token_type_ids)
        x = self.emb_ln(x)
        n = input_ids.shape[1]
        d = c.n_embd // c.n_head
        rot = int(d * c.rotary_emb_fraction)
        assert rot == d, "this reference rotates whole heads only"
        freq = 1.0 / (c.rotary_emb_base ** (torch.arange(0, rot, 2, dtype=torch.float32) / rot))
        angles = torch.arange(n, dtype=torch.float32)[:, None] * freq[None, :]
        cos, sin = angles.cos(), angles.sin()
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.encoder.layers:
            x = layer(x, bias, cos, sin)
        return BaseModelOutput(last_hidden_state=x)


class JinaRefConfig(PretrainedConfig):
    # The released checkpoints say "bert" and tell the difference by position_embedding_type.
    model_type = "bert"

    def __init__(self, vocab_size=400, hidden_size=48, num_hidden_layers=2, num_attention_heads=6,
                 intermediate_size=64, hidden_act="gelu", max_position_embeddings=128,
                 type_vocab_size=2, initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0,
                 position_embedding_type="alibi", feed_forward_type="geglu", **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.position_embedding_type = position_embedding_type
        self.feed_forward_type = feed_forward_type
        super().__init__(pad_token_id=pad_token_id, **kwargs)


def alibi_slopes(heads):
    """The ALiBi paper's head slopes: a geometric series from 2^(-8/n); for a head count that is
    not a power of two, the nearest lower power's series then every other slope of the next."""
    def series(n):
        first = 2.0 ** (-8.0 / n)
        return [first ** (i + 1) for i in range(n)]

    p = 2 ** int(math.floor(math.log2(heads)))
    if p == heads:
        return series(heads)
    return series(p) + series(2 * p)[0::2][: heads - p]


class _JinaEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)


class _JinaSelf(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)


class _JinaSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)


class _JinaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = _JinaSelf(c)
        self.output = _JinaSelfOutput(c)
        self.heads = c.num_attention_heads

    def forward(self, x, bias):
        b, n, width = x.shape
        d = width // self.heads

        def split(t):
            return t.view(b, n, self.heads, d).transpose(1, 2)

        q, k, v = split(self.self.query(x)), split(self.self.key(x)), split(self.self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d) + bias
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, n, width)
        return self.output.LayerNorm(self.output.dense(ctx) + x)


class _JinaMlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.inner = c.intermediate_size
        self.gated_layers = nn.Linear(c.hidden_size, 2 * c.intermediate_size, bias=False)
        self.wo = nn.Linear(c.intermediate_size, c.hidden_size)
        self.layernorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, x):
        h = self.gated_layers(x)
        h = nn.functional.gelu(h[..., : self.inner]) * h[..., self.inner:]
        return self.layernorm(self.wo(h) + x)


class _JinaLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = _JinaAttention(c)
        self.mlp = _JinaMlp(c)

    def forward(self, x, bias):
        return self.mlp(self.attention(x, bias))


class _JinaEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList(_JinaLayer(c) for _ in range(c.num_hidden_layers))


class JinaRefModel(_RefModel):
    config_class = JinaRefConfig
    base_model_prefix = "jina_ref"

    def __init__(self, config):
        super().__init__(config)
        self.embeddings = _JinaEmbeddings(config)
        self.encoder = _JinaEncoder(config)
        self.post_init()

    def encode(self, input_ids, attention_mask, token_type_ids):
        c = self.config
        e = self.embeddings
        x = e.LayerNorm(e.word_embeddings(input_ids) + e.token_type_embeddings(token_type_ids))
        n = input_ids.shape[1]
        pos = torch.arange(n, dtype=torch.float32)
        distance = (pos[None, :] - pos[:, None]).abs()
        slopes = torch.tensor(alibi_slopes(c.num_attention_heads), dtype=torch.float32)
        bias = -slopes[:, None, None] * distance[None, :, :]
        bias = bias[None] + (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.encoder.layer:
            x = layer(x, bias)
        return BaseModelOutput(last_hidden_state=x)
