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
 * `region`: the shape of issue "bounded and honest" (a 4 000-map chain crashed the
 * lowering, 100 000 maps made the model quadratic). `pad` bytes of free text per
 * label make the file larger without more operations. */
GString *napkin_test_map_chain_json        (guint    n_maps,
                                            gboolean region,
                                            gsize    pad);

G_END_DECLS
