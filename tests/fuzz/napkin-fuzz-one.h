/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Runs one input through everything a shared file reaches: load, check, the model,
 * saving and reloading (and the later layers when they are built). Aborts, so that
 * the fuzzer or the replay test reports it, when an invariant breaks. */
void napkin_fuzz_one (const guint8 *data,
                      gsize         size);

/* Makes every critical and warning an abort, so that libFuzzer keeps the input. */
void napkin_fuzz_abort_on_warnings (void);

G_END_DECLS
