/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The libFuzzer entry points of napkin-fuzz-einsum, napkin-fuzz-graph and
 * napkin-fuzz-profile (build-aux/fuzz); NAPKIN_FUZZ_INPUT names the harness. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include <glib.h>

#include "napkin-fuzz-inputs.h"

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

int LLVMFuzzerInitialize   (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize (int    *argc,
                      char ***argv)
{
  /* A critical or a warning is a bug found: make it a crash the fuzzer keeps. */
  g_log_set_writer_func (abort_on_warning, NULL, NULL);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data,
                        size_t         size)
{
  if (size > 256 * 1024)
    return -1;
  NAPKIN_FUZZ_INPUT (data, size);
  return 0;
}
