/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <stdio.h>

#include "napkin-cli.h"
#include "napkin-error.h"
#include "napkin-render.h"

/* Draws a diagram with the editor's own drawing code (src/render). */
int
napkin_cli_render (int    argc,
                   char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  g_autofree char *output = NULL;
  g_autofree char *format_name = NULL;
  double scale = 2.0;
  const GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write to OUT (.svg, .pdf, .png or .tex)", "OUT" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_name, "svg, pdf, png or tex (default: from OUT)", "FORMAT" },
    { "scale", 's', 0, G_OPTION_ARG_DOUBLE, &scale, "PNG pixels per diagram unit (default 2)", "SCALE" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;
  NapkinExportFormat format;

  context = napkin_cli_context_new ("render", "FILE -o OUT",
                                    "Draw a diagram as the editor shows it, with its level colours and\n"
                                    "legend, to SVG, PDF, PNG or a TikZ picture (.tex).",
                                    entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 2)
    {
      napkin_cli_overrides_clear (&overrides);
      return napkin_cli_usage_error ("render", argc < 2 ? "no FILE given" : "give one FILE");
    }
  if (output == NULL)
    {
      napkin_cli_overrides_clear (&overrides);
      return napkin_cli_usage_error ("render", _("no output: give -o OUT.svg, .pdf, .png or .tex"));
    }
  if (format_name != NULL)
    {
      g_autofree char *fake = g_strconcat ("x.", format_name, NULL);

      if (!napkin_export_format_from_path (fake, &format))
        {
          napkin_cli_overrides_clear (&overrides);
          return napkin_cli_usage_error ("render", _("--format: “%s” is not svg, pdf, png or tex"), format_name);
        }
    }
  else if (!napkin_export_format_from_path (output, &format))
    {
      napkin_cli_overrides_clear (&overrides);
      return napkin_cli_usage_error ("render", _("%s: unknown extension; use .svg, .pdf, .png or .tex, or --format"),
                                     output);
    }
  if (format == NAPKIN_EXPORT_PNG && !(scale > 0 && scale <= 16))
    {
      napkin_cli_overrides_clear (&overrides);
      return napkin_cli_usage_error ("render", _("--scale: %g is not in (0, 16]"), scale);
    }

  diagram = napkin_cli_load (argv[1], &overrides, FALSE, &error);
  napkin_cli_overrides_clear (&overrides);
  if (diagram == NULL)
    {
      if (g_error_matches (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE))
        return napkin_cli_usage_error ("render", "%s", error->message);
      fprintf (stderr, "napkin-cli render: %s: %s\n", argv[1], error->message);
      return NAPKIN_CLI_FAILED;
    }

  if (!napkin_render_export (diagram, output, format, scale, &error))
    {
      /* a drawing too large is the input's: name it (a failed write names OUT) */
      if (g_error_matches (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT))
        g_prefix_error (&error, "%s: ", argv[1]);
      fprintf (stderr, "napkin-cli render: %s\n", error->message);
      return NAPKIN_CLI_FAILED;
    }
  printf ("%s: wrote %s\n", argv[1], output);
  return NAPKIN_CLI_OK;
}
