/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A .napkin document of `layers` linear+GELU layers, each in a shared-memory region. */
char    *napkin_test_deep_mlp_json         (guint layers);
/* A .napkin document of about n_ops operations: a chain of attention-like blocks,
 * every other one relabeled (streamed softmax feeding a contraction). */
GString *napkin_test_attention_chain_json  (guint n_ops);

/* A chain x → n0 → … → n(n_maps-1) → y of elementwise maps (relu, exp, scale, gelu in
 * turn) over X[r, c], all in one shared-memory region with r in groups of 4 when
 * `region`: the shape of docs/security.md §7 (a 4 000-map chain crashed the
 * lowering, 100 000 maps made the model quadratic). `pad` bytes of free text per
 * label make the file larger without more operations. */
GString *napkin_test_map_chain_json        (guint    n_maps,
                                            gboolean region,
                                            gsize    pad);

G_END_DECLS

/* A GEMM case as a user draws it: C[b?, m, n] = epilogue (A · B) with A stored [m,k] or
 * [k,m], B [k,n] or [n,k], an optional batch axis b (on B too unless shared), an
 * optional epilogue ("", "bias-gelu": + bias[n] then GELU, "residual": + R[m,n],
 * "silu": SiLU, "scale": ×0.5) and, when BM > 0, a shared-memory region holding the
 * product and its epilogue with m, n parallel by BM, BN and k streamed by BK. */
typedef struct
{
  gint64      M, N, K, batch;     /* batch 0: none */
  const char *dtype;             /* "bf16", "fp16", "fp8-e4m3" */
  const char *c_dtype;           /* NULL: the operands' (bf16 for fp8) */
  gboolean    a_km, b_nk;        /* A stored [k,m]; B stored [n,k] */
  gboolean    shared_b;          /* batched A and C, B without the batch axis */
  const char *epilogue;
  gint64      BM, BN, BK;
  guint       stages;
} NapkinTestGemmDiagram;

char    *napkin_test_gemm_json             (const NapkinTestGemmDiagram *c);

/* The GEMM shapes users meet, for tests across layers: each with the split-K and the
 * number of operand repacks the plan should give it on h100. */
typedef struct
{
  const char           *name;
  NapkinTestGemmDiagram c;
  guint                 split;      /* expected split-K, 0: don't care */
  guint                 repacks;    /* expected repack kernels */
} NapkinTestGemmCase;

const NapkinTestGemmCase *napkin_test_gemm_cases (guint *n);
