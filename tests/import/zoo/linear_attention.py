# SPDX-License-Identifier: GPL-3.0-or-later
"""Non-causal linear attention from "Transformers are RNNs" (idiap/fast-transformers,
fast_transformers/attention/linear_attention.py + feature_maps/base.py's elu feature
map, with the AttentionLayer's q/k/v/out projections around it) as written there: the
feature map elu(x) + 1, KV = einsum("nshd,nshm->nhmd", K, V), the normalizer
Z = 1/(einsum("nlhd,nhd->nlh", Q, K.sum(dim=1)) + eps), and the output
einsum("nlhd,nhmd,nlh->nlhm", Q, KV, Z). Sizes of a 12-head, 768-wide encoder."""

import torch
from torch import nn
from torch.nn import functional as F


def elu_feature_map(x):
    return F.elu(x) + 1


class LinearAttention(nn.Module):
    def __init__(self, query_dimensions, eps=1e-6):
        super().__init__()
        self.feature_map = elu_feature_map
        self.eps = eps

    def forward(self, queries, keys, values):
        # Apply the feature map to the queries and keys
        Q = self.feature_map(queries)
        K = self.feature_map(keys)

        # Compute the KV matrix, namely the dot product of keys and values so
        # that we never explicitly compute the attention matrix and thus
        # decrease the complexity
        KV = torch.einsum("nshd,nshm->nhmd", K, values)

        # Compute the normalizer
        Z = 1 / (torch.einsum("nlhd,nhd->nlh", Q, K.sum(dim=1)) + self.eps)

        # Finally compute and return the new values
        V = torch.einsum("nlhd,nhmd,nlh->nlhm", Q, KV, Z)
        return V.contiguous()


class AttentionLayer(nn.Module):
    def __init__(self, d_model=768, n_heads=12, d_keys=None, d_values=None):
        super().__init__()
        d_keys = d_keys or (d_model // n_heads)
        d_values = d_values or (d_model // n_heads)
        self.inner_attention = LinearAttention(d_keys)
        self.query_projection = nn.Linear(d_model, d_keys * n_heads)
        self.key_projection = nn.Linear(d_model, d_keys * n_heads)
        self.value_projection = nn.Linear(d_model, d_values * n_heads)
        self.out_projection = nn.Linear(d_values * n_heads, d_model)
        self.n_heads = n_heads

    def forward(self, x):
        queries = keys = values = x
        N, L, _ = queries.shape
        _, S, _ = keys.shape
        H = self.n_heads
        queries = self.query_projection(queries).view(N, L, H, -1)
        keys = self.key_projection(keys).view(N, S, H, -1)
        values = self.value_projection(values).view(N, S, H, -1)
        new_values = self.inner_attention(queries, keys, values).view(N, L, -1)
        return self.out_projection(new_values)


def build(small=False, dtype="float16"):
    cfg = dict(d_model=32, n_heads=4) if small else {}
    b, s = (2, 8) if small else (8, 4096)
    t = getattr(torch, dtype)
    m = AttentionLayer(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("d_model", 768), dtype=t),), {"x": ["b", "s", "e"]}
