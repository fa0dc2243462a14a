/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include <string.h>

#include "napkin-codegen-private.h"
#include "napkin-kernels.h"

/* The kernel templates of kernels/ (embedded at build time) are valid CUDA on their own
 * (docs/codegen.md, "Kernel sources"): a block `#ifndef NAPKIN_GENERATED` … `#endif
 * NAPKIN_GENERATED` gives the includes and default parameters a compile of the file
 * alone needs; each parameter is a macro NKP_KEY, or a fragment block that the printer
 * fills with code. An instantiation drops the first, defines the macros before the text
 * and undefines them after it (a module may hold the same template twice), and puts each
 * fragment in place of its block. */

#define ALONE_BEGIN "#ifndef NAPKIN_GENERATED"
#define ALONE_END   "#endif /* NAPKIN_GENERATED */\n"

/* Removes every stand-alone block, from its #ifndef line through its #endif line. */
static void
drop_alone_blocks (GString *s)
{
  char *p;

  while ((p = strstr (s->str, ALONE_BEGIN)) != NULL)
    {
      const char *end = strstr (p, ALONE_END);

      g_return_if_fail (end != NULL);
      g_string_erase (s, p - s->str, end + strlen (ALONE_END) - p);
    }
}

/* The block `#ifdef NAPKIN_GENERATED`, `#include "napkin-fragment/KEY"`, `#else`, a
 * default, `#endif` and the comment napkin-fragment/KEY, becomes the fragment's text. */
static gboolean
put_fragment (GString    *s,
              const char *key,
              const char *value)
{
  g_autofree char *begin = g_strdup_printf ("#ifdef NAPKIN_GENERATED\n#include \"napkin-fragment/%s\"\n", key);
  g_autofree char *end = g_strdup_printf ("#endif /* napkin-fragment/%s */\n", key);
  gboolean found = FALSE;
  char *p;

  while ((p = strstr (s->str, begin)) != NULL)
    {
      const char *q = strstr (p, end);
      gsize at = p - s->str;

      g_return_val_if_fail (q != NULL, found);
      g_string_erase (s, at, q + strlen (end) - p);
      g_string_insert (s, at, value);
      if (value[0] != '\0' && value[strlen (value) - 1] != '\n')
        g_string_insert_c (s, at + strlen (value), '\n');
      found = TRUE;
    }
  return found;
}

char *
_napkin_skeleton_instantiate (const char          *template,
                              NapkinSkeletonParam *params,
                              guint       n_params)
{
  GString *s = g_string_new (template);
  GString *defs = g_string_new (NULL), *undefs = g_string_new (NULL);

  drop_alone_blocks (s);
  for (guint i = 0; i < n_params; i++)
    {
      if (!put_fragment (s, params[i].key, params[i].value))
        {
          /* one logical line: a macro's value may be printed over several */
          g_auto (GStrv) lines = g_strsplit (params[i].value, "\n", -1);
          GString *one = g_string_new (NULL);

          for (guint l = 0; lines[l] != NULL; l++)
            {
              const char *t = lines[l];

              if (l > 0)
                {
                  while (*t == ' ')
                    t++;
                  if (*t != '\0')
                    g_string_append_c (one, ' ');
                }
              g_string_append (one, t);
            }
          g_string_append_printf (defs, "#define NKP_%s %s\n", params[i].key, one->str);
          g_string_append_printf (undefs, "#undef NKP_%s\n", params[i].key);
          g_string_free (one, TRUE);
        }
      g_free (params[i].value);
    }
  g_string_prepend (s, defs->str);
  g_string_append (s, undefs->str);
  g_string_free (defs, TRUE);
  g_string_free (undefs, TRUE);
  return g_string_free (s, FALSE);
}

GArray *
_napkin_skeleton_params (const NapkinSkeletonParam *t,
                         guint                      n)
{
  GArray *p = g_array_new (FALSE, FALSE, sizeof (NapkinSkeletonParam));

  g_array_append_vals (p, t, n);
  return p;
}
