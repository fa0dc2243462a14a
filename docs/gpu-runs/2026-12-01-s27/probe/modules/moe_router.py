# SPDX-License-Identifier: GPL-3.0-or-later
"""The router of Mixtral's sparse MoE block (transformers' modeling_mixtral.py,
MixtralSparseMoeBlock.forward up to the expert loop) as written there: router logits
from the gate Linear, softmax in fp32 over the experts, top-2 by torch.topk, the two
weights renormalized, cast back. Mixtral-8x7B's sizes."""

import torch
import torch.nn.functional as F
from torch import nn


class MixtralRouter(nn.Module):
    def __init__(self, hidden_dim=4096, num_local_experts=8, num_experts_per_tok=2):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.num_experts = num_local_experts
        self.top_k = num_experts_per_tok
        self.gate = nn.Linear(self.hidden_dim, self.num_experts, bias=False)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        # router_logits: (batch * sequence_length, n_experts)
        router_logits = self.gate(hidden_states)

        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        # we cast back to the input dtype
        routing_weights = routing_weights.to(hidden_states.dtype)
        return routing_weights, selected_experts


def build(small=False, dtype="bfloat16"):
    cfg = dict(hidden_dim=32, num_local_experts=4) if small else {}
    b, s = (2, 8) if small else (4, 2048)
    t = getattr(torch, dtype)
    m = MixtralRouter(**cfg).to(t)
    return m, (torch.randn(b, s, cfg.get("hidden_dim", 4096), dtype=t),), {"hidden_states": ["b", "s", "e"]}
