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
#include "napkin-text.h"
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
  /* Files are written atomically, by renaming a new file over OUT: a folder, a device
   * or a pipe there is refused now, not after the work (napkin_file_write_atomic). */
  {
    GStatBuf st;

    if (g_stat (output, &st) == 0 && !S_ISREG (st.st_mode))
      {
        g_autofree char *shown = napkin_text_shown (output, -1, 200);

        napkin_cli_usage_error (argv[0], _("-o %s is not a regular file (a folder, a device or a pipe); choose a "
                                           "file to write"), shown);
        return FALSE;
      }
  }
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

NapkinArchRegistry *
napkin_cli_registry (void)
{
  static gsize warned;
  NapkinArchRegistry *reg = napkin_arch_registry_get_default ();

  if (g_once_init_enter (&warned))
    {
      const GPtrArray *errors = napkin_arch_registry_errors (reg);

      for (guint i = 0; i < errors->len; i++)
        fprintf (stderr, _("napkin-cli: warning: skipped architecture file: %s\n"),
                 (const char *) g_ptr_array_index (errors, i));
      g_once_init_leave (&warned, 1);
    }
  return reg;
}

NapkinArch *
napkin_cli_note_arch (NapkinArch *arch)
{
  static GHashTable *noted;   /* the ids already noted, once per process */
  g_autofree char *origin = NULL;
  g_autofree char *shown = NULL;

  if (arch == NULL || (origin = napkin_arch_dup_origin (arch)) == NULL)
    return arch;
  if (noted == NULL)
    noted = g_hash_table_new (g_str_hash, g_str_equal);
  if (!g_hash_table_add (noted, arch->id))
    return arch;
  /* the paths are someone else's: escaped and cut */
  shown = napkin_text_shown (origin, -1, 600);
  fprintf (stderr, _("napkin-cli: note: %s\n"), shown);
  return arch;
}

/* "sm_90a", "compute_100", "sm_89": the compute capability "9.0", "10.0", "8.9", or
 * NULL when `id` is no compute target. */
static char *
target_capability (const char *id)
{
  const char *digits;
  guint64 number;
  char *end = NULL;

  if (g_str_has_prefix (id, "sm_"))
    digits = id + 3;
  else if (g_str_has_prefix (id, "compute_"))
    digits = id + 8;
  else
    return NULL;
  if (!g_ascii_isdigit (*digits))
    return NULL;
  number = g_ascii_strtoull (digits, &end, 10);
  if (end - digits < 2 || end - digits > 3 || (*end != '\0' && !(end[0] == 'a' && end[1] == '\0')))
    return NULL;
  return g_strdup_printf ("%u.%u", (guint) (number / 10), (guint) (number % 10));
}

NapkinArch *
napkin_cli_lookup_arch (const char *command,
                        const char *id)
{
  NapkinArchRegistry *reg = napkin_cli_registry ();
  g_autoptr(GError) error = NULL;
  g_autofree char *cc = NULL;
  NapkinArch *arch;

  if (id == NULL)
    id = "h100";
  /* a compute target: the first profile of that compute capability */
  if ((cc = target_capability (id)) != NULL)
    {
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
  return napkin_cli_note_arch (arch);
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
