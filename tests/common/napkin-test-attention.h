/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* An attention case as a user draws it (docs/plan.md, "Attention kernels"): Q·Kᵀ, a
 * scale by 1/√d, a softmax over the keys and ·V in one shared-memory region, with B
 * sequences of H query heads and HK key/value heads:
 *  - MHA (HK = H or 0): Q[b, h, q, d], K and V [b, h, k, d], O as Q;
 *  - GQA (1 < HK < H): a group axis g of H / HK: Q[b, h, g, q, d], K[b, h, k, d];
 *  - MQA (HK = 1): Q[b, g, q, d], K[b, k, d];
 * `bshd` stores every tensor with the sequence outside the heads (Q[b, q, h, g, d]).
 * The region groups the queries by BQ (0: whole), the group axis by group_tile (0: 1),
 * streams the keys by BKV, with `stages` buffers. */
typedef struct
{
  gint64      B, H, HK, NQ, NKV, D;
  const char *dtype;        /* Q and K: "fp16", "bf16", "fp8-e4m3" */
  const char *v_dtype;      /* NULL: dtype */
  const char *o_dtype;      /* NULL: dtype, or fp16 under fp8 */
  gint64      BQ, BKV;
  guint       stages;
  gint64      group_tile;
  gboolean    bshd;
  /* score operands (docs/plan.md, "Score operands"): a bias B added to the scores and
   * int8 keep flags M masking them, each over the score axes listed ("h,q,k"; NULL:
   * none), in the region between the scale and the softmax */
  const char *bias;
  const char *bias_dtype;   /* NULL: the scores' type (Q's, or V's under fp8); else the scores' too */
  const char *keep;
  gboolean    bias_first;   /* the bias added before the scale (α·(Q·Kᵀ + B)), else after */
  double      alpha;        /* the scale; 0: 1/√d */
} NapkinTestAttention;

char    *napkin_test_attention_json        (const NapkinTestAttention *c);

G_END_DECLS
