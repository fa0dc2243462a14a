# SPDX-License-Identifier: GPL-3.0-or-later
"""A simplified DeepSeek-V2 multi-head latent attention (modeling_deepseek.py's
DeepseekV2Attention, eager, without the q LoRA, weights named as in DeepSeek's
inference model.py) as written there: q = wq(x) split into q_nope / q_pe by
torch.split; wkv_a(x) split into the compressed latent (kv_lora_rank) and k_pe
(qk_rope_head_dim); RMSNorm on the latent; wkv_b, view, split into k_nope and v;
rotate_half rotary with cos/sin inputs on q_pe and on the one k_pe head shared by all
heads; q = cat(q_nope, q_pe), k = cat(k_nope, k_pe.expand(...)); scores by matmul *
softmax_scale plus the additive causal mask, softmax in fp32, matmul with v, wo.
DeepSeek-V2-Lite's sizes."""

import torch
from torch import nn


class DeepseekV2RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class MLA(nn.Module):
    def __init__(self, dim=2048, n_heads=16, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                 kv_lora_rank=512):
        super().__init__()
        self.dim = dim
        self.n_heads = n_heads
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.kv_lora_rank = kv_lora_rank
        self.wq = nn.Linear(dim, n_heads * self.qk_head_dim, bias=False)
        self.wkv_a = nn.Linear(dim, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = DeepseekV2RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, n_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(n_heads * v_head_dim, dim, bias=False)
        self.softmax_scale = self.qk_head_dim**-0.5

    def forward(self, x, cos, sin, attention_mask):
        bsz, q_len, _ = x.size()

        q = self.wq(x)
        q = q.view(bsz, q_len, self.n_heads, self.qk_head_dim).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)

        compressed_kv = self.wkv_a(x)
        compressed_kv, k_pe = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = k_pe.view(bsz, q_len, 1, self.qk_rope_head_dim).transpose(1, 2)
        kv = (
            self.wkv_b(self.kv_norm(compressed_kv))
            .view(bsz, q_len, self.n_heads, self.qk_nope_head_dim + self.v_head_dim)
            .transpose(1, 2)
        )
        k_nope, value_states = torch.split(kv, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)

        q_pe, k_pe = apply_rotary_pos_emb(q_pe, k_pe, cos, sin)

        query_states = torch.cat([q_nope, q_pe], dim=-1)
        key_states = torch.cat([k_nope, k_pe.expand(-1, self.n_heads, -1, -1)], dim=-1)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.softmax_scale
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)

        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.n_heads * self.v_head_dim)
        return self.wo(attn_output)


def rope(b, s, dim, dtype, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    freqs = torch.outer(torch.arange(s, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype).expand(b, s, dim).contiguous(), emb.sin().to(dtype).expand(b, s, dim).contiguous()


def causal_additive_mask(b, s, dtype):
    m = torch.full((s, s), torch.finfo(dtype).min, dtype=dtype).triu(1)
    return m[None, None].expand(b, 1, s, s).contiguous()


def build(small=False, dtype="bfloat16"):
    cfg = dict(dim=32, n_heads=4, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8, kv_lora_rank=16) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = MLA(**cfg).to(t)
    cos, sin = rope(b, s, cfg.get("qk_rope_head_dim", 64), t)
    x = torch.randn(b, s, cfg.get("dim", 2048), dtype=t)
    return m, (x, cos, sin, causal_additive_mask(b, s, t)), {"x": ["b", "s", "e"]}
