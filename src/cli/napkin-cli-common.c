/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include "napkin-cli.h"
#include "napkin-error.h"
#include "napkin-file.h"
#if __has_include("napkin-tune.h")
#include "napkin-tune.h"
#define apply_tile_spec napkin_tune_apply_spec   /* also REGION.stages=N */
#else
#define apply_tile_spec napkin_diagram_override_tile
#endif
#include "napkin-validate.h"

/* The entries of the command being run (one per process), for napkin_cli_parse. */
static const GOptionEntry *command_entries;

GOptionContext *
napkin_cli_context_new (const char          *command,
                        const char          *args,
                        const char          *summary,
                        const GOptionEntry  *entries,
                        NapkinCliOverrides  *overrides)
{
  g_autofree char *parameter = g_strdup_printf ("%s %s", command, args ? args : "");
  GOptionContext *context = g_option_context_new (parameter);

  g_option_context_set_summary (context, summary);
  command_entries = entries;
  if (entries != NULL)
    g_option_context_add_main_entries (context, entries, NULL);

  if (overrides != NULL)
    {
      const GOptionEntry override_entries[] = {
        { "axis", 0, 0, G_OPTION_ARG_STRING_ARRAY, &overrides->axes,
          "Override an axis size (repeatable)", "NAME=SIZE" },
        { "tile", 0, 0, G_OPTION_ARG_STRING_ARRAY, &overrides->tiles,
          "Override a region's tile for an axis: SIZE, parallel:SIZE, stream:SIZE or whole; "
          "REGION.stages=N sets its pipeline stages (repeatable)",
          "REGION.AXIS=SIZE" },
        { NULL }
      };

      g_option_context_add_main_entries (context, override_entries, NULL);
    }

  return context;
}

static gboolean
same_file (const char *a,
           const char *b)
{
  GStatBuf sa, sb;

  return g_stat (a, &sa) == 0 && g_stat (b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Every command's -o OUT: never one of its input FILEs (through another name, a link
 * or a hard link too), which `codegen in.napkin -o in.napkin` used to replace with
 * CUDA. Checked here once for all commands, from their "output" option. */
static gboolean
check_output (int    argc,
              char **argv)
{
  const char *output = NULL;

  for (const GOptionEntry *e = command_entries; e != NULL && e->long_name != NULL; e++)
    if (strcmp (e->long_name, "output") == 0 && e->arg == G_OPTION_ARG_FILENAME)
      output = *(char **) e->arg_data;
  if (output == NULL)
    return TRUE;
  for (int i = 1; i < argc; i++)
    if (same_file (argv[i], output))
      {
        napkin_cli_usage_error (argv[0], _("-o %s is the input %s: refusing to overwrite it; choose another OUT"),
                                output, argv[i]);
        return FALSE;
      }
  return TRUE;
}

gboolean
napkin_cli_parse (GOptionContext   *context,
                  int              *argc,
                  char           ***argv)
{
  g_autoptr(GError) error = NULL;

  if (!g_option_context_parse (context, argc, argv, &error))
    {
      fprintf (stderr, _("napkin-cli: %s\n(see napkin-cli %s --help)\n"), error->message,
               *argc > 0 ? (*argv)[0] : "");
      return FALSE;
    }
  return check_output (*argc, *argv);
}

int
napkin_cli_usage_error (const char *command,
                        const char *format,
                        ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);

  fprintf (stderr, _("napkin-cli %s: %s\n(see napkin-cli %s --help)\n"), command, message, command);
  return NAPKIN_CLI_USAGE;
}

int
napkin_cli_format_resolve (const char         *command,
                           const char         *format,
                           gboolean            json,
                           const char * const *names)
{
  g_autofree char *known = g_strjoinv (", ", (char **) names);

  g_return_val_if_fail (names != NULL && names[0] != NULL, -1);

  if (format == NULL && !json)
    return 0;
  for (int i = 0; names[i] != NULL; i++)
    if (g_str_equal (names[i], format ? format : "json"))
      {
        if (json && !g_str_equal (names[i], "json"))
          {
            napkin_cli_usage_error (command, _("--json and --format %s disagree"), format);
            return -1;
          }
        /* Machine output stays English whatever the user's language: gettext
         * translates nothing in the C locale (LANGUAGE included). Numbers in JSON
         * are json-c's, never grouped. */
        if (g_str_equal (names[i], "json"))
          setlocale (LC_MESSAGES, "C");
        return i;
      }
  if (format == NULL)   /* --json where JSON is not one of the outputs: a bug in the command */
    g_return_val_if_reached (-1);
  napkin_cli_usage_error (command, _("--format: expected %s, not “%s”"), known, format);
  return -1;
}

gboolean
napkin_cli_text_or_json (const char *command,
                         const char *format,
                         gboolean   *as_json)
{
  switch (napkin_cli_format_resolve (command, format, *as_json, (const char * const[]) { "text", "json", NULL }))
    {
    case -1: return FALSE;
    case 1: *as_json = TRUE; break;
    default: break;
    }
  return TRUE;
}

NapkinDiagram *
napkin_cli_load (const char          *path,
                 NapkinCliOverrides  *overrides,
                 gboolean             validate,
                 GError             **error)
{
  g_autoptr(NapkinDiagram) diagram = NULL;

  diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, error);
  if (diagram == NULL)
    return NULL;

  for (guint i = 0; overrides && overrides->axes && overrides->axes[i]; i++)
    if (!napkin_diagram_override_axis (diagram, overrides->axes[i], error))
      return NULL;
  if (overrides && overrides->axes && overrides->axes[0])
    {
      /* a resized diagram is re-tiled where a tile no longer fits, and says so */
      g_autoptr(GString) notes = g_string_new (NULL);

      if (napkin_diagram_refit_tiles (diagram, notes) > 0)
        g_printerr ("%s: %s\n", path, notes->str);
    }
  for (guint i = 0; overrides && overrides->tiles && overrides->tiles[i]; i++)
    if (!apply_tile_spec (diagram, overrides->tiles[i], error))
      return NULL;

  if (validate && !napkin_diagram_validate (diagram, error))
    return NULL;

  return g_steal_pointer (&diagram);
}

void
napkin_cli_overrides_clear (NapkinCliOverrides *overrides)
{
  g_clear_pointer (&overrides->axes, g_strfreev);
  g_clear_pointer (&overrides->tiles, g_strfreev);
}

NapkinArch *
napkin_cli_lookup_arch (const char *command,
                        const char *id)
{
  NapkinArchRegistry *reg = napkin_arch_registry_get_default ();
  g_autoptr(GError) error = NULL;
  NapkinArch *arch;
  int major = 0, minor = 0;

  if (id == NULL)
    id = "h100";
  /* a compute target: the first profile of that compute capability */
  if ((g_str_has_prefix (id, "sm_") || g_str_has_prefix (id, "compute_"))
      && sscanf (strchr (id, '_') + 1, "%1d%1d", &major, &minor) == 2)
    {
      g_autofree char *cc = g_strdup_printf ("%d.%d", major, minor);

      for (guint i = 0; i < napkin_arch_registry_count (reg); i++)
        {
          arch = napkin_arch_registry_get (reg, i);
          if (g_strcmp0 (arch->compute_capability, cc) == 0)
            return napkin_cli_note_arch (arch);
        }
      napkin_cli_usage_error (command, _("--arch: no architecture profile has compute capability %s"), cc);
      return NULL;
    }
  arch = napkin_arch_registry_lookup (reg, id, &error);
  if (arch == NULL)
    napkin_cli_usage_error (command, _("--arch: %s"), error->message);
  return arch ? napkin_cli_note_arch (arch) : NULL;
}

NapkinArch *
napkin_cli_note_arch (NapkinArch *arch)
{
  g_autofree char *origin = arch ? napkin_arch_dup_origin (arch) : NULL;

  if (origin != NULL)
    fprintf (stderr, _("napkin-cli: note: %s\n"), origin);
  return arch;
}

int
napkin_cli_load_or_report (const char          *command,
                           const char          *path,
                           NapkinCliOverrides  *overrides,
                           NapkinDiagram      **out)
{
  g_autoptr(GError) error = NULL;

  *out = napkin_cli_load (path, overrides, TRUE, &error);
  napkin_cli_overrides_clear (overrides);
  if (*out != NULL)
    return NAPKIN_CLI_OK;
  if (g_error_matches (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE))
    return napkin_cli_usage_error (command, "%s", error->message);
  fprintf (stderr, _("%s: invalid: %s\n"), path, error->message);
  return NAPKIN_CLI_FAILED;
}

gboolean
napkin_cli_parse_dtype (const char  *command,
                        const char  *str,
                        gboolean    *has,
                        NapkinDtype *out)
{
  if (str == NULL)
    return TRUE;
  if (!napkin_dtype_from_string (str, out))
    {
      napkin_cli_usage_error (command, _("--dtype: unknown element type “%s” (fp32, tf32, fp16, bf16, "
                                  "fp8-e4m3, fp8-e5m2, int8)"), str);
      return FALSE;
    }
  *has = TRUE;
  return TRUE;
}

guint
napkin_cli_gpus_or_region (NapkinDiagram *diagram,
                           int            gpus)
{
  const NapkinGpusRegion *region = napkin_diagram_get_gpus (diagram);

  if (gpus > 0 || region == NULL || region->gpus == 0)
    return gpus > 0 ? (guint) gpus : 0;
  fprintf (stderr, _("napkin-cli: the gpus region “%s” on its own count, %u GPUs (--gpus N for another)\n"),
           region->region->name, region->gpus);
  return region->gpus;
}
