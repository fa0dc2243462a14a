/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <stdio.h>

#include "napkin-cli.h"
#include "napkin-describe.h"
#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-schema.h"

static const char *
error_kind (const GError *error)
{
  static const char * const kinds[] = {
    [NAPKIN_DOCUMENT_ERROR_IO] = "io",
    [NAPKIN_DOCUMENT_ERROR_PARSE] = "parse",
    [NAPKIN_DOCUMENT_ERROR_FORMAT] = "format",
    [NAPKIN_DOCUMENT_ERROR_VERSION] = "version",
    [NAPKIN_DOCUMENT_ERROR_REFERENCE] = "reference",
    [NAPKIN_DOCUMENT_ERROR_INVALID] = "invalid",
    [NAPKIN_DOCUMENT_ERROR_LIMIT] = "limit",
    [NAPKIN_DOCUMENT_ERROR_USAGE] = "usage",
    [NAPKIN_DOCUMENT_ERROR_SCHEMA] = "schema",
  };

  if (error->domain == NAPKIN_DOCUMENT_ERROR && error->code >= 0 && (gsize) error->code < G_N_ELEMENTS (kinds))
    return kinds[error->code];
  return "other";
}

/* A document error's message says the place in words and ends with its JSON path as
 * details (napkin-describe.h); an I/O error has none. */
static json_object *
error_to_json (const GError *error)
{
  json_object *obj = json_object_new_object ();
  g_autofree char *path = NULL;

  json_object_object_add (obj, "kind", json_object_new_string (error_kind (error)));
  if (error->domain == NAPKIN_DOCUMENT_ERROR && error->code != NAPKIN_DOCUMENT_ERROR_IO)
    path = napkin_error_path (error->message);
  if (path != NULL)
    {
      g_autofree char *words = napkin_error_summary (error->message);

      json_object_object_add (obj, "json_path", json_object_new_string (path));
      json_object_object_add (obj, "message", json_object_new_string (words));
    }
  else
    {
      json_object_object_add (obj, "json_path", NULL);
      json_object_object_add (obj, "message", json_object_new_string (error->message));
    }
  return obj;
}

int
napkin_cli_validate (int    argc,
                     char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  gboolean quiet = FALSE, as_json = FALSE;
  g_autofree char *format = NULL;
  const GOptionEntry entries[] = {
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "Print only errors", NULL },
    { "format", 0, 0, G_OPTION_ARG_STRING, &format,
      "Output: text (default; one line per file) or json (an object with a \"files\" array)", "FORMAT" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &as_json, NAPKIN_CLI_FORMAT_HELP_JSON, NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(json_object) root = json_object_new_object ();
  json_object *files = json_object_new_array ();
  int status = NAPKIN_CLI_OK;
  g_autoptr(json_object) schema = NULL;
  g_autoptr(GError) schema_error = NULL;

  json_object_object_add (root, "files", files);
  context = napkin_cli_context_new ("validate", "FILE…",
                                    "Check each diagram: its JSON, its structure and its meaning, then the "
                                    "file format's JSON Schema (napkin.schema.json in the data folder).\n"
                                    "Prints one line per file; exits 1 if any file is invalid.",
                                    entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc < 2)
    return napkin_cli_usage_error ("validate", _("no FILE given"));
  if (!napkin_cli_text_or_json ("validate", format, &as_json))
    return NAPKIN_CLI_USAGE;

  /* The loader's checks come first (their messages say the place in words); the schema
   * then catches what the loader lets through (docs/decisions.md). */
  schema = napkin_schema_load_default (&schema_error);
  if (schema == NULL)
    fprintf (stderr, "napkin-cli validate: checking without the JSON Schema: %s\n", schema_error->message);

  for (int i = 1; i < argc; i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinDiagram) diagram = napkin_cli_load (argv[i], &overrides, TRUE, &error);
      json_object *file = json_object_new_object ();

      if (diagram != NULL && schema != NULL)
        {
          g_autofree char *text = NULL;
          gsize length = 0;

          if (!(text = napkin_file_read_bounded (argv[i], NAPKIN_MAX_FILE_SIZE, &length, &error))
              || !napkin_schema_validate_text (schema, text, length, &error))
            g_clear_object (&diagram);
        }

      json_object_object_add (file, "path", json_object_new_string (argv[i]));
      json_object_object_add (file, "valid", json_object_new_boolean (diagram != NULL));
      json_object_array_add (files, file);
      if (diagram == NULL)
        {
          if (g_error_matches (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE))
            {
              napkin_cli_overrides_clear (&overrides);
              return napkin_cli_usage_error ("validate", "%s", error->message);
            }
          json_object_object_add (file, "error", error_to_json (error));
          if (!as_json)
            printf (_("%s: invalid: %s\n"), argv[i], error->message);
          status = NAPKIN_CLI_FAILED;
        }
      else if (!quiet && !as_json)
        printf ("%s: valid\n", argv[i]);
    }

  napkin_cli_overrides_clear (&overrides);
  if (as_json)
    {
      json_object_object_add (root, "valid", json_object_new_boolean (status == NAPKIN_CLI_OK));
      printf ("%s\n", json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                                              | JSON_C_TO_STRING_NOSLASHESCAPE));
    }
  return status;
}
