/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <stdio.h>

#include "napkin-cli.h"
#include "napkin-error.h"

int
napkin_cli_validate (int    argc,
                     char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  gboolean quiet = FALSE;
  const GOptionEntry entries[] = {
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "Print only errors", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  int status = NAPKIN_CLI_OK;

  context = napkin_cli_context_new ("validate", "FILE…",
                                    "Check each diagram: its JSON, its structure and its meaning.\n"
                                    "Prints one line per file; exits 1 if any file is invalid.",
                                    entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc < 2)
    return napkin_cli_usage_error ("validate", "no FILE given");

  for (int i = 1; i < argc; i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinDiagram) diagram = napkin_cli_load (argv[i], &overrides, TRUE, &error);

      if (diagram == NULL)
        {
          if (g_error_matches (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE))
            {
              napkin_cli_overrides_clear (&overrides);
              return napkin_cli_usage_error ("validate", "%s", error->message);
            }
          printf ("%s: invalid: %s\n", argv[i], error->message);
          status = NAPKIN_CLI_FAILED;
        }
      else if (!quiet)
        printf ("%s: valid\n", argv[i]);
    }

  napkin_cli_overrides_clear (&overrides);
  return status;
}
