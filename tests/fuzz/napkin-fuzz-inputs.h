/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The other files Napkin takes from someone else (docs/security.md, "Fuzzing"):
 * einsum text and graph JSON to import, and architecture profiles. Each runs one
 * input and aborts, for the fuzzer or the replay test to report, when an invariant
 * breaks: an error is one line of clean, bounded text; an import that succeeds is a
 * diagram the loader takes back as written; a profile that loads passes the model's
 * own check, survives its save and prices a diagram without a crash. */
void napkin_fuzz_einsum  (const guint8 *data,
                          gsize         size);
void napkin_fuzz_graph   (const guint8 *data,
                          gsize         size);
void napkin_fuzz_profile (const guint8 *data,
                          gsize         size);

G_END_DECLS
