/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include <string.h>

#include "napkin-codegen-private.h"
#include "napkin-kernels.h"

/* The kernel templates of kernels/ (embedded at build time) are instantiated by the
 * plan's printers: each @KEY@ replaced by its value (docs/codegen.md). */


char *
_napkin_skeleton_instantiate (const char          *template,
                              NapkinSkeletonParam *params,
                              guint       n_params)
{
  GString *s = g_string_new (template);

  for (guint i = 0; i < n_params; i++)
    {
      g_autofree char *key = g_strdup_printf ("@%s@", params[i].key);

      g_string_replace (s, key, params[i].value, 0);
      g_free (params[i].value);
    }
  return g_string_free (s, FALSE);
}
