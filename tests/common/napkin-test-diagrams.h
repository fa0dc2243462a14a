/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A .napkin document of `layers` linear+GELU layers, each in a shared-memory region. */
char    *napkin_test_deep_mlp_json         (guint layers);
/* A .napkin document of about n_ops operations: a chain of attention-like blocks,
 * every other one relabeled (streamed softmax feeding a contraction). */
GString *napkin_test_attention_chain_json  (guint n_ops);

G_END_DECLS
