/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A row problem as a diagram: X[(b,) r, c] → [x + R] → [·scale] → op over c →
 * [·G[c]] → [+B[c]] → Y. Shared by tests/plan and bench/gpu/rows-prims. */
typedef struct
{
  const char *op;            /* softmax, layernorm, rmsnorm, sum, max, mean */
  gint64      batch;         /* > 1: a leading axis b, rows = batch · rows */
  gint64      rows, cols;
  const char *x_dtype;       /* fp16, bf16, fp32 */
  const char *y_dtype;
  gboolean    residual;      /* + R[(b,) r, c] before the op (R of x's type) */
  double      scale;         /* ≠ 0: a scale map before the op */
  gboolean    gamma, beta;   /* ·G[c], +B[c] after (of x's type) */
  const char *act;           /* non-NULL: a unary map after (gelu, silu, …) */
  gboolean    fuse;          /* a shared-memory region around the op and its maps, no marks */
  gint64      region_rows;   /* > 0: that region, r in parallel groups of this */
  gint64      stream_cols;   /* > 0 (with a region): c streamed in chunks of this */
  guint       threads;       /* the region's threads (0: free) */
  gboolean    col_major;     /* X (and Y, R) stored [(b,) c, r]: the op is over a non-contiguous axis */
  gboolean    r_row_major;   /* with col_major: R stored [(b,) r, c] all the same */
} NapkinTestRows;

char    *napkin_test_rows_json   (const NapkinTestRows *spec);

/* A diagram of one map chain: X[m, n] → fn … → Y[m, n]; `other` ≠ NULL adds
 * a binary map with that operand's axes ("m,n", "n" or "m"). */
char    *napkin_test_map_json    (gint64      m,
                                  gint64      n,
                                  const char *x_dtype,
                                  const char *y_dtype,
                                  const char *unary,
                                  const char *binary,
                                  const char *other,
                                  gboolean    region);

G_END_DECLS
