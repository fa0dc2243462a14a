/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The libFuzzer entry point: build-aux/fuzz builds and runs it (docs/security.md). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include <glib.h>

#include "napkin-fuzz-one.h"

int LLVMFuzzerInitialize   (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize (int    *argc,
                      char ***argv)
{
  napkin_fuzz_abort_on_warnings ();

  /* Warm up once: Pango and fontconfig load fonts on a thread of their own at first
   * use and keep them; done here, that is not taken for a leak of the first input. */
  {
    g_autofree char *path = g_build_filename (NAPKIN_SOURCE_DATADIR, "examples", "attention.napkin", NULL);
    g_autofree char *contents = NULL;
    gsize length;

    if (g_file_get_contents (path, &contents, &length, NULL))
      napkin_fuzz_one ((const guint8 *) contents, length);
  }
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data,
                        size_t         size)
{
  /* The loader refuses larger files before parsing; do not spend runs there. */
  if (size > 1024 * 1024)
    return -1;
  napkin_fuzz_one (data, size);
  return 0;
}
