/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <stdio.h>
#include <string.h>

#include "napkin-cli.h"
#include "napkin-file.h"
#include "napkin-grad.h"
#include "napkin-backward.h"

/* Comma-separated names of repeated options, NULL-terminated; NULL when none; FALSE (and
 * a usage error printed) for an empty name. */
static gboolean
split_names (const char *option,
             GStrv       args,
             GPtrArray **out)
{
  if (args == NULL)
    return TRUE;
  *out = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; args[i] != NULL; i++)
    {
      g_auto(GStrv) names = g_strsplit (args[i], ",", -1);

      for (guint k = 0; names[k] != NULL; k++)
        {
          g_strstrip (names[k]);
          if (*names[k] == '\0')
            {
              napkin_cli_usage_error ("grad", "%s: an empty name in “%s”", option, args[i]);
              return FALSE;
            }
          g_ptr_array_add (*out, g_strdup (names[k]));
        }
    }
  g_ptr_array_add (*out, NULL);
  return TRUE;
}

/* napkin-cli grad FILE [-o OUT] [--wrt NAME,...] [--recompute NAME,...|softmax|auto
 * [--arch ID]]: the backward diagram (docs/training.md). */
int
napkin_cli_grad (int    argc,
                 char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  g_autofree char *output = NULL;
  g_auto(GStrv) wrt_args = NULL;
  g_auto(GStrv) recompute_args = NULL;
  g_autofree char *arch_id = NULL;
  g_autoptr(GPtrArray) recompute = NULL;
  gboolean automatic = FALSE;
  const GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the backward diagram to this file instead of standard output", "OUT" },
    { "wrt", 0, 0, G_OPTION_ARG_STRING_ARRAY, &wrt_args, "Gradients of these inputs only (comma-separated; default: every floating-point input but constants)", "NAME,..." },
    { "recompute", 0, 0, G_OPTION_ARG_STRING_ARRAY, &recompute_args, "Recompute these operations' values in the backward instead of storing them: ids, “softmax” (every softmax, as FlashAttention does) or “auto” (whichever of storing and recomputing the softmaxes the model prices lower on --arch)", "NAME,...|softmax|auto" },
    { "arch", 0, 0, G_OPTION_ARG_STRING, &arch_id, "Architecture --recompute=auto prices on (napkin-cli archs); default h100", "ID" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(NapkinDiagram) backward = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) wrt = NULL;
  g_autoptr(GString) notes = g_string_new (NULL);
  g_autofree char *text = NULL;
  int status;

  context = napkin_cli_context_new ("grad", "FILE",
                                    "The backward diagram: the forward operations, the values they keep\n"
                                    "(saved_*), an input d_O for each output O's gradient (none for an\n"
                                    "output of no axes, a loss) and an output d_X for each input X's\n"
                                    "gradient (docs/training.md). Regions are dropped.",
                                    entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 2)
    {
      napkin_cli_overrides_clear (&overrides);
      return napkin_cli_usage_error ("grad", "expected exactly one FILE");
    }
  if (overrides.tiles != NULL)
    {
      napkin_cli_overrides_clear (&overrides);
      return napkin_cli_usage_error ("grad", "the backward diagram has no regions: --tile does not apply");
    }
  if (!split_names ("--wrt", wrt_args, &wrt) || !split_names ("--recompute", recompute_args, &recompute))
    {
      napkin_cli_overrides_clear (&overrides);
      return NAPKIN_CLI_USAGE;
    }
  if (recompute != NULL && recompute->len == 2
      && (g_strcmp0 (g_ptr_array_index (recompute, 0), "auto") == 0
          || g_strcmp0 (g_ptr_array_index (recompute, 0), "softmax") == 0))
    {
      automatic = g_strcmp0 (g_ptr_array_index (recompute, 0), "auto") == 0;
      g_clear_pointer (&recompute, g_ptr_array_unref);
    }
  else if (arch_id != NULL)
    {
      napkin_cli_overrides_clear (&overrides);
      return napkin_cli_usage_error ("grad", "--arch prices the choice of --recompute=auto only");
    }

  status = napkin_cli_load_or_report ("grad", argv[1], &overrides, &diagram);
  if (status != NAPKIN_CLI_OK)
    return status;

  if (recompute != NULL)
    backward = napkin_grad_diagram_recompute (diagram, wrt ? (const char * const *) wrt->pdata : NULL,
                                              (const char * const *) recompute->pdata, notes, &error);
  else
    {
      /* none, softmax, or auto: priced on --arch */
      NapkinArch *arch = automatic ? napkin_cli_lookup_arch ("grad", arch_id) : NULL;
      g_autoptr(GString) summary = g_string_new (NULL);

      if (automatic && arch == NULL)
        return NAPKIN_CLI_USAGE;
      backward = napkin_backward_diagram (diagram, wrt ? (const char * const *) wrt->pdata : NULL,
                                          automatic ? NAPKIN_BACKWARD_CHEAPER
                                          : recompute_args != NULL ? NAPKIN_BACKWARD_RECOMPUTE : NAPKIN_BACKWARD_STORE,
                                          arch, notes, summary, &error);
      if (summary->len > 0)
        g_string_append_printf (notes, "--recompute=auto: %s\n", summary->str);
    }
  if (backward == NULL)
    {
      if (g_error_matches (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_UNKNOWN_INPUT))
        return napkin_cli_usage_error ("grad", "--wrt: %s", error->message);
      if (g_error_matches (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_NOT_RECOMPUTABLE))
        return napkin_cli_usage_error ("grad", "--recompute: %s", error->message);
      fprintf (stderr, "napkin-cli grad: %s: %s\n", argv[1], error->message);
      return NAPKIN_CLI_FAILED;
    }
  if (notes->len > 0)
    fprintf (stderr, "%s", notes->str);

  text = napkin_diagram_save_to_data (backward, NULL);
  if (output == NULL)
    {
      fputs (text, stdout);
      return NAPKIN_CLI_OK;
    }
  if (!napkin_file_write_atomic (output, text, strlen (text), &error))
    {
      fprintf (stderr, "napkin-cli grad: %s\n", error->message);
      return NAPKIN_CLI_FAILED;
    }
  return NAPKIN_CLI_OK;
}
