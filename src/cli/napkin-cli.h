/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

#include "napkin-arch.h"
#include "napkin-diagram.h"

G_BEGIN_DECLS

/* Exit codes shared by every command. */
#define NAPKIN_CLI_OK      0
#define NAPKIN_CLI_FAILED  1   /* an input is invalid, or the work failed */
#define NAPKIN_CLI_USAGE   2   /* bad arguments */

typedef struct
{
  const char *name;
  const char *args;
  const char *summary;
  int       (*run) (int argc, char **argv);
} NapkinCliCommand;

/* The --axis and --tile options that every command taking a FILE shares. */
typedef struct
{
  char **axes;
  char **tiles;
} NapkinCliOverrides;

GOptionContext *napkin_cli_context_new       (const char          *command,
                                              const char          *args,
                                              const char          *summary,
                                              const GOptionEntry  *entries,
                                              NapkinCliOverrides  *overrides);
/* Parses; on error prints it with the command's help hint and returns FALSE. */
gboolean        napkin_cli_parse             (GOptionContext      *context,
                                              int                 *argc,
                                              char              ***argv);
/* Loads FILE, applies the overrides in order, then validates when asked. */
NapkinDiagram  *napkin_cli_load              (const char          *path,
                                              NapkinCliOverrides  *overrides,
                                              gboolean             validate,
                                              GError             **error);
void            napkin_cli_overrides_clear   (NapkinCliOverrides  *overrides);
/* napkin_cli_load (validating), then the overrides cleared: NAPKIN_CLI_OK with *out set,
 * else the exit status after a usage error (a bad override) or "FILE: invalid: …". */
int             napkin_cli_load_or_report    (const char          *command,
                                              const char          *path,
                                              NapkinCliOverrides  *overrides,
                                              NapkinDiagram      **out);
int             napkin_cli_usage_error       (const char          *command,
                                              const char          *format,
                                              ...) G_GNUC_PRINTF (2, 3);

/* --format FORMAT, with --json as its alias, on every command with machine output
 * (docs/cli.md). names is NULL-terminated, names[0] the default. Returns the index of
 * the chosen name, or -1 after a usage error that lists them (an unknown name, or
 * --json beside another --format). */
int             napkin_cli_format_resolve    (const char          *command,
                                              const char          *format,
                                              gboolean             json,
                                              const char * const  *names);
/* napkin_cli_format_resolve for a command whose outputs are text and json: FALSE after
 * a usage error, else TRUE with *as_json set where json was chosen. */
gboolean        napkin_cli_text_or_json      (const char          *command,
                                              const char          *format,
                                              gboolean            *as_json);
/* One spelling of the help texts of the two options. */
#define NAPKIN_CLI_FORMAT_HELP_JSON "Same as --format json"
/* The option pair of a command whose output is text or json: --format FORMAT and its
 * alias --json, for napkin_cli_text_or_json. */
#define NAPKIN_CLI_FORMAT_ENTRIES(format, as_json) \
  { "format", 0, 0, G_OPTION_ARG_STRING, &(format), "Output: text (default) or json", "FORMAT" }, \
  { "json", 0, 0, G_OPTION_ARG_NONE, &(as_json), NAPKIN_CLI_FORMAT_HELP_JSON, NULL }

/* --dtype: TRUE with *has and *out set (nothing when str is NULL), or FALSE after a
 * usage error naming the element types. */
gboolean        napkin_cli_parse_dtype       (const char          *command,
                                              const char          *str,
                                              gboolean            *has,
                                              NapkinDtype         *out);
/* The profile an --arch value names: an id of `napkin-cli archs` (h100, a100, …) or a
 * compute target (sm_90a, sm_80: the first profile of that compute capability). NULL
 * after a usage error that lists the known ids. */
NapkinArch     *napkin_cli_lookup_arch       (const char          *command,
                                              const char          *id);
/* The profiles, with the files that were skipped said once per process. */
NapkinArchRegistry *napkin_cli_registry      (void);

/* Puts a guard on the standard output and error streams: whatever is printed reaches
 * the terminal without control or bidi characters or bytes that are not UTF-8 (shown
 * as \uXXXX and \xHH; docs/security.md). Called once, first thing in main. */
void            napkin_cli_guard_output      (void);

/* Why the model calls a relabeled diagram infeasible on `arch` (the first error, as
 * analyze prints it), or NULL when it is feasible: the one verdict of analyze, plan and
 * codegen, so that they agree on feasibility and on the exit status (docs/cli.md). */
char           *napkin_cli_infeasible_reason (NapkinDiagram       *diagram,
                                              NapkinArch          *arch,
                                              gboolean             has_dtype,
                                              NapkinDtype          dtype);

/* Names a profile that is not one of Napkin's own (napkin_arch_dup_origin) on standard
 * error, so that a user's profile — one `calibrate` wrote, or one that hides another
 * of its id — never changes a result unsaid; once per profile and process, its paths
 * escaped (docs/security.md, "Profiles"); returns `arch`. */
NapkinArch     *napkin_cli_note_arch         (NapkinArch          *arch);

/* The GPU count of --gpus N (gpus > 0), else the one the diagram's gpus region stores
 * ("gpus": N, said on standard error), else 0: one GPU (docs/multi-gpu.md). */
guint           napkin_cli_gpus_or_region    (NapkinDiagram       *diagram,
                                              int                  gpus);

/* Commands, one file each. */
int napkin_cli_validate (int argc, char **argv);
int napkin_cli_info     (int argc, char **argv);
int napkin_cli_import   (int argc, char **argv);
int napkin_cli_grad     (int argc, char **argv);
int napkin_cli_codegen  (int argc, char **argv);
int napkin_cli_run      (int argc, char **argv);
int napkin_cli_calibrate (int argc, char **argv);
/* perf layer: napkin-cli-perf.c */
int napkin_cli_archs    (int argc, char **argv);
int napkin_cli_analyze  (int argc, char **argv);
int napkin_cli_compare  (int argc, char **argv);
int napkin_cli_tune     (int argc, char **argv);
int napkin_cli_plan     (int argc, char **argv);
int napkin_cli_render   (int argc, char **argv);

G_END_DECLS
