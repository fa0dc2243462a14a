/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The libFuzzer entry points of napkin-fuzz-einsum, napkin-fuzz-graph and
 * napkin-fuzz-profile (build-aux/fuzz); NAPKIN_FUZZ_INPUT names the harness. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include <glib.h>

#include "napkin-fuzz-inputs.h"
#include "napkin-fuzz-one.h"

int LLVMFuzzerInitialize   (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize (int    *argc,
                      char ***argv)
{
  napkin_fuzz_abort_on_warnings ();
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
