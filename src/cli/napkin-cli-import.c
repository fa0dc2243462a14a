/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "napkin-cli.h"
#include "napkin-file.h"
#include "napkin-import.h"
#include "napkin-text.h"
#include "napkin-validate.h"

/* napkin-cli import FILE [-o OUT]: einsum text or the exporter's graph JSON to a
 * diagram (docs/import.md). */
int
napkin_cli_import (int    argc,
                   char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  g_autofree char *output = NULL;
  g_autofree char *title = NULL;
  const GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the diagram to this file instead of standard output", "OUT" },
    { "title", 0, 0, G_OPTION_ARG_STRING, &title, "The diagram's title", "TEXT" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;
  gsize length = 0;
  gboolean resized;

  context = napkin_cli_context_new ("import", "FILE",
                                    "Build a diagram from einsum-style text or from the graph JSON that\n"
                                    "napkin_export.py writes from a PyTorch module (docs/import.md).\n"
                                    "--axis NAME=SIZE resizes an axis of the result.",
                                    entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 2)
    {
      napkin_cli_overrides_clear (&overrides);
      return napkin_cli_usage_error ("import", "expected exactly one FILE");
    }
  if (overrides.tiles != NULL)
    {
      napkin_cli_overrides_clear (&overrides);
      return napkin_cli_usage_error ("import", "an imported diagram has no regions: --tile does not apply");
    }

#ifdef __GLIBC__
  /* An import builds and frees millions of small JSON objects (the graph's tree, the
   * saved text's tree); glibc's fast bins would hold them until each large allocation
   * consolidates them all, about a fifth of a 100 000-operation import
   * (docs/security.md, "Scale"). Freed at once, they are merged as they go. */
  mallopt (M_MXFAST, 0);
#endif
  diagram = napkin_import_file (argv[1], &error);
  if (diagram == NULL)
    {
      napkin_cli_overrides_clear (&overrides);
      fprintf (stderr, "napkin-cli import: %s\n", error->message);
      return NAPKIN_CLI_FAILED;
    }
  resized = overrides.axes != NULL;
  for (guint i = 0; overrides.axes && overrides.axes[i]; i++)
    if (!napkin_diagram_override_axis (diagram, overrides.axes[i], &error))
      {
        napkin_cli_overrides_clear (&overrides);
        return napkin_cli_usage_error ("import", "%s", error->message);
      }
  napkin_cli_overrides_clear (&overrides);
  if (title != NULL)
    napkin_diagram_set_title (diagram, title);
  else if (napkin_diagram_get_title (diagram) == NULL || *napkin_diagram_get_title (diagram) == '\0')
    {
      g_autofree char *base = g_path_get_basename (argv[1]);
      char *dot = strrchr (base, '.');

      if (dot != NULL && dot != base)
        *dot = '\0';
      napkin_diagram_set_title (diagram, base);
    }
  text = napkin_diagram_save_to_data (diagram, &length);
  /* What is written is what the loader reads: an import never makes a file that
   * Napkin then refuses (docs/security.md, "Importers"). The importer checked the
   * diagram's meaning; resized axes are checked again. */
  {
    g_autoptr(NapkinDiagram) back = length <= NAPKIN_MAX_FILE_SIZE
                                    ? napkin_diagram_load_from_data (text, length,
                                                                     resized ? NAPKIN_LOAD_VALIDATE : NAPKIN_LOAD_DEFAULT,
                                                                     &error)
                                    : NULL;

    if (back == NULL)
      {
        g_autofree char *shown = napkin_text_shown (argv[1], -1, 200);

        if (error == NULL)
          fprintf (stderr, "napkin-cli import: %s: the diagram would take %" G_GSIZE_FORMAT " bytes, more than "
                   "the %d Napkin reads\n", shown, length, NAPKIN_MAX_FILE_SIZE);
        else
          fprintf (stderr, "napkin-cli import: %s: the import makes a diagram Napkin would refuse: %s\n", shown,
                   error->message);
        return NAPKIN_CLI_FAILED;
      }
  }
  if (output == NULL)
    {
      fputs (text, stdout);
      return NAPKIN_CLI_OK;
    }
  if (!napkin_file_write_atomic (output, text, length, &error))
    {
      fprintf (stderr, "napkin-cli import: %s\n", error->message);
      return NAPKIN_CLI_FAILED;
    }
  return NAPKIN_CLI_OK;
}
