/* SPDX-License-Identifier: GPL-3.0-or-later */
/* What every libFuzzer target shares (build-aux/fuzz). */
#include "config.h"

#include <stdlib.h>

#include "napkin-fuzz-one.h"

static GLogWriterOutput
abort_on_warning (GLogLevelFlags   level,
                  const GLogField *fields,
                  gsize            n_fields,
                  gpointer         user_data)
{
  g_log_writer_standard_streams (level, fields, n_fields, user_data);
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
    abort ();
  return G_LOG_WRITER_HANDLED;
}

void
napkin_fuzz_abort_on_warnings (void)
{
  /* A critical or a warning is a bug found: make it a crash the fuzzer keeps. */
  g_log_set_writer_func (abort_on_warning, NULL, NULL);
}
