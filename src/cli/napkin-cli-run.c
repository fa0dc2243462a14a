/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "napkin-cli.h"
#include "napkin-error.h"
#include "napkin-json-private.h"
#include "napkin-run-job.h"

#if __has_include("napkin-prediction.h")
#include "napkin-prediction.h"
#include "napkin-shard-model.h"
#include "napkin-tune.h"
#define HAVE_PERF 1
#endif

typedef struct
{
  GMainLoop   *loop;
  json_object *result;
  GError      *error;
} RunWait;

static void
run_done (GObject      *object,
          GAsyncResult *result,
          gpointer      user_data)
{
  RunWait *wait = user_data;

  wait->result = napkin_run_job_run_finish (NAPKIN_RUN_JOB (object), result, &wait->error);
  g_main_loop_quit (wait->loop);
}

static void
on_message (NapkinRunJob *job,
            GParamSpec   *pspec,
            gpointer      user_data)
{
  fprintf (stderr, "  [%3.0f%%] %s\n", 100 * napkin_run_job_get_fraction (job), napkin_run_job_get_message (job));
}

/* The member at a dotted path ("time_ms.median"), or NULL. */
static json_object *
get_path (json_object *obj,
          const char  *path)
{
  g_auto(GStrv) parts = g_strsplit (path, ".", -1);

  for (guint i = 0; parts[i] && obj; i++)
    obj = json_object_object_get (obj, parts[i]);
  return obj;
}

static double
get_double (json_object *obj,
            const char  *path)
{
  obj = get_path (obj, path);
  return obj ? json_object_get_double (obj) : NAN;
}

static const char *
get_string (json_object *obj,
            const char  *path)
{
  obj = get_path (obj, path);
  return obj ? json_object_get_string (obj) : NULL;
}

/* The runner's message in the user's language where the catalogue has it (the runner
 * writes English; docs/cli.md, "Language"). */
static const char *
runner_message (json_object *result)
{
  const char *message = get_string (result, "message");

  return message != NULL && *message != '\0' ? _(message) : message;
}

/* The model's prediction for the GPU the runner found, when the model knows it. */
static void
add_prediction (NapkinDiagram *diagram,
                json_object   *result,
                const char    *model_id)
{
#ifdef HAVE_PERF
  napkin_prediction_add_to_run (diagram, result, model_id);
#endif
}

static json_object *
seconds_json (double s)
{
  char text[32];

  g_snprintf (text, sizeof text, "%.6f", s);
  return json_object_new_double_s (s, text);
}

/* Where the run's wall time went: the runner's steps, then the CLI's own. */
static void
print_phases (json_object *r)
{
  json_object *phases = json_object_object_get (r, "phases");
  GString *line = g_string_new ("  phases    ");

  if (phases == NULL)
    return;
  json_object_object_foreach (phases, key, value)
    g_string_append_printf (line, " %s %.3f s,", key, json_object_get_double (value));
  g_string_truncate (line, line->len - 1);
  printf ("%s\n", line->str);
  g_string_free (line, TRUE);
}

/* --gpus N: the model's shard analysis beside the measurement — one GPU's compute,
 * the collectives, their sum, the overlapped time and its gain (docs/multi-gpu.md). */
static void
add_gpus_prediction (NapkinDiagram *diagram,
                     json_object   *result,
                     const char    *model_id,
                     guint          gpus)
{
#ifdef HAVE_PERF
  const char *id = model_id ? model_id : json_object_get_string (json_object_object_get (result, "model"));
  NapkinArch *arch = id ? napkin_arch_registry_lookup (napkin_arch_registry_get_default (), id, NULL) : NULL;
  g_autoptr(NapkinShardAnalysis) sa = arch ? napkin_shard_analyze (diagram, arch, gpus, NULL, NULL) : NULL;
  json_object *p;

  if (sa == NULL)
    return;
  p = json_object_new_object ();
  json_object_object_add (p, "arch", json_object_new_string (arch->id));
  json_object_object_add (p, "compute_ms", json_object_new_double (sa->compute_s * 1e3));
  json_object_object_add (p, "collectives_ms", json_object_new_double (sa->comm_s * 1e3));
  json_object_object_add (p, "time_ms", json_object_new_double (sa->total_s * 1e3));
  json_object_object_add (p, "overlapped_ms", json_object_new_double (sa->overlapped_s * 1e3));
  json_object_object_add (p, "gain_ms", json_object_new_double (sa->gain_s * 1e3));
  json_object_object_add (p, "chunked_ms", json_object_new_double (sa->chunked_s * 1e3));
  if (sa->note != NULL)
    json_object_object_add (p, "overlap_note", json_object_new_string (sa->note));
  json_object_object_add (result, "prediction", p);
#endif
}

static void
print_gpus_summary (const char  *path,
                    json_object *r)
{
  json_object *kernels = json_object_object_get (r, "kernels");
  json_object *colls = json_object_object_get (r, "collectives");
  double ms = get_double (r, "time_ms.median"), pred = get_double (r, "prediction.time_ms");

  printf ("%s: %s on %.0f× %s (%s, NCCL %s)\n", path, get_string (r, "title") ? get_string (r, "title") : "",
          get_double (r, "gpus"), get_string (r, "gpu.name"), get_string (r, "arch"), get_string (r, "nccl.version"));
  for (guint k = 0; kernels && k < json_object_array_length (kernels); k++)
    {
      json_object *o = json_object_array_get_idx (kernels, k);

      printf ("  kernel     %-12s %-9s %9.4f ms\n", get_string (o, "name"), get_string (o, "skeleton"),
              get_double (o, "time_ms"));
    }
  for (guint c = 0; colls && c < json_object_array_length (colls); c++)
    {
      json_object *o = json_object_array_get_idx (colls, c);

      printf ("  %-14s %-6s %8.1f MB/rank %9.4f ms, predicted %s%.4f ms (%.0f GB/s bus)\n", get_string (o, "kind"),
              get_string (o, "tensor"), get_double (o, "bytes") / 1e6, get_double (o, "measured_ms"),
              isnan (get_double (o, "predicted_ms")) ? "— " : "", get_double (o, "predicted_ms"), get_double (o, "busbw_gbps"));
    }
  printf ("  time       %.4f ms, median of %.0f (kernels %.4f, collectives %.4f)\n", ms, get_double (r, "time_ms.repeats"),
          get_double (r, "time_ms.kernels_ms"), get_double (r, "time_ms.collectives_ms"));
  printf ("  error      %.3g relative to the one-GPU fp32 reference (bound %.3g): %s\n", get_double (r, "error.max_rel"),
          get_double (r, "error.bound"),
          json_object_get_boolean (json_object_object_get (json_object_object_get (r, "error"), "ok")) ? "ok" : "WRONG");
  if (!isnan (pred))
    printf ("  predicted  %.4f ms on %s (compute %.4f, collectives %.4f); measured / predicted = %.2f\n", pred,
            get_string (r, "prediction.arch"), get_double (r, "prediction.compute_ms"),
            get_double (r, "prediction.collectives_ms"), ms / pred);
  if (!isnan (get_double (r, "overlap.time_ms.median")))
    printf ("  overlapped %.4f ms in %.0f chunks: gain %.4f ms measured, %.4f ms predicted\n",
            get_double (r, "overlap.time_ms.median"), get_double (r, "overlap.chunks"), get_double (r, "overlap.gain_ms"),
            get_double (r, "prediction.gain_ms"));
}

/* A module of several kernels: each kernel of the model, predicted beside the sum of
 * its module kernels as the runner timed them one by one, and the totals. */
static void
print_per_kernel (json_object *r)
{
  json_object *p = json_object_object_get (r, "prediction");
  json_object *list = p ? json_object_object_get (p, "kernels") : NULL;

  if (list == NULL || isnan (get_double (p, "kernels_measured_ms")))
    return;
  printf ("  per kernel  %-28s %-10s %-9s %11s %11s %7s\n", "kernel", "kind", "path", "predicted", "measured",
          "ratio");
  for (size_t i = 0; i < json_object_array_length (list); i++)
    {
      json_object *o = json_object_array_get_idx (list, i);
      double m = get_double (o, "measured_ms");

      if (isnan (m))
        printf ("              %-28s %-10s %-9s %8.4f ms %11s %7s\n", get_string (o, "name"), get_string (o, "kind"),
                get_string (o, "path"), get_double (o, "predicted_ms"), "(fused)", "");
      else
        printf ("              %-28s %-10s %-9s %8.4f ms %8.4f ms %6.2f×\n", get_string (o, "name"),
                get_string (o, "kind"), get_string (o, "path"), get_double (o, "predicted_ms"), m,
                get_double (o, "measured_over_predicted"));
    }
  printf ("              %-28s %-10s %-9s %8.4f ms %8.4f ms %6.2f×\n", "total (kernels one by one)", "", "",
          get_double (p, "kernels_predicted_ms"), get_double (p, "kernels_measured_ms"),
          get_double (p, "kernels_measured_ms") / MAX (get_double (p, "kernels_predicted_ms"), 1e-12));
}

static void
print_summary (const char  *path,
               json_object *r)
{
  json_object *kernels = json_object_object_get (r, "kernels");
  double ms = get_double (r, "time_ms.median");
  double pred = get_double (r, "prediction.time_ms");

  printf ("%s: %s on %s (%s, driver %s)\n", path, get_string (r, "title") ? get_string (r, "title") : "",
          get_string (r, "gpu.name"), get_string (r, "arch"), get_string (r, "gpu.driver"));
  for (guint k = 0; kernels && k < json_object_array_length (kernels); k++)
    {
      json_object *o = json_object_array_get_idx (kernels, k);

      printf ("  kernel %-12s %-9s %8.0f blocks × %3.0f threads, %3.0f registers, %6.0f B shared, %4.0f B local\n",
              get_string (o, "name"), get_string (o, "skeleton"), get_double (o, "grid"), get_double (o, "threads"),
              get_double (o, "registers"), get_double (o, "shared_bytes"), get_double (o, "local_bytes"));
    }
  if (!isnan (get_double (r, "compile.ms")))
    printf ("  compile    %.1f ms (%s)\n", get_double (r, "compile.ms"),
            json_object_get_boolean (json_object_object_get (json_object_object_get (r, "compile"), "cached"))
            ? "from the compiled-module cache" : "NVRTC");
  printf ("  time       %.4f ms, median of %.0f (min %.4f, max %.4f)\n", ms, get_double (r, "time_ms.repeats"),
          get_double (r, "time_ms.min"), get_double (r, "time_ms.max"));
  printf ("  throughput %.2f TFLOP/s, %.1f GB/s (inputs and outputs once)\n", get_double (r, "tflops"),
          get_double (r, "gbps"));
  printf ("  error      %.3g relative to the fp32 reference (bound %.3g): %s\n", get_double (r, "error.max_rel"),
          get_double (r, "error.bound"), json_object_get_boolean (json_object_object_get (json_object_object_get (r, "error"), "ok")) ? "ok" : "WRONG");
  if (!isnan (get_double (r, "reference_time_ms.median")))
    printf ("  plain      %.4f ms (the fp32 reference: every operation through device memory)\n",
            get_double (r, "reference_time_ms.median"));
  if (!isnan (pred))
    printf ("  predicted  %.4f ms on %s (bound: %s); measured / predicted = %.2f\n", pred,
            get_string (r, "prediction.arch"), get_string (r, "prediction.bound"), ms / pred);
  else
    printf ("  predicted  — (the performance model does not know this GPU)\n");
  print_per_kernel (r);
  if (!isnan (get_double (r, "energy.joules_per_run")))
    printf ("  energy     %.4f J per run measured (NVML, %.0f W average)%s\n", get_double (r, "energy.joules_per_run"),
            get_double (r, "energy.average_power_w"), "");
  if (!isnan (get_double (r, "prediction.energy_j")))
    printf ("             %.4f J per run estimated by the model\n", get_double (r, "prediction.energy_j"));
  print_phases (r);
}

/* The options of `napkin-cli run`. */
typedef struct
{
  gboolean as_json, generic, no_reference, plain, tune, no_energy, no_cache;
  int      repeats, timeout, reference_repeats, gpus;
  gint64   seed;
  char    *inject;
  char    *model;
  char    *format;
} RunOptions;

static void
run_options_clear (RunOptions *o)
{
  g_free (o->inject);
  g_free (o->model);
  g_free (o->format);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (RunOptions, run_options_clear)

/* The values the options take together; a usage error otherwise. */
static int
run_check_options (RunOptions *o)
{
  if (!napkin_cli_text_or_json ("run", o->format, &o->as_json))
    return NAPKIN_CLI_USAGE;
  if (o->repeats < 1 || o->timeout < 1)
    return napkin_cli_usage_error ("run", _("--repeats and --timeout must be positive"));
  if (o->reference_repeats < 0)
    return napkin_cli_usage_error ("run", _("--reference-repeats must be 0 or more, not %d"), o->reference_repeats);
  if (o->inject != NULL && !g_str_equal (o->inject, "fault") && !g_str_equal (o->inject, "hang"))
    return napkin_cli_usage_error ("run", _("--inject takes fault or hang, not “%s”"), o->inject);
  if (o->gpus < 1 || o->gpus > 16)
    return napkin_cli_usage_error ("run", _("--gpus takes 1 to 16, not %d"), o->gpus);
  return NAPKIN_CLI_OK;
}

/* --tune on a file without regions: the relabeling the model ranks first (napkin_tune
 * derives the kernels — docs/plan.md, "Deriving a diagram" — then searches their tiles);
 * the diagram as drawn where the plan's own kernels are best. */
static NapkinDiagram *
run_tuned (NapkinDiagram    *diagram,
           const RunOptions *o,
           const char       *file)
{
#ifdef HAVE_PERF
  if (napkin_diagram_n_regions (diagram) == 0 && o->tune && !o->plain && o->inject == NULL)
    {
      NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), o->model ? o->model : "h100",
                                                      NULL);
      g_autoptr(GError) tune_error = NULL;
      g_autoptr(NapkinTuneResult) tuned = arch ? napkin_tune (diagram, arch, NULL, &tune_error) : NULL;
      g_autoptr(NapkinDiagram) relabeled = tuned && tuned->best->len > 0
                                           ? napkin_tune_result_relabel (tuned, diagram, 0, &tune_error) : NULL;

      if (relabeled != NULL)
        {
          const char *tiles = ((NapkinTuneCandidate *) g_ptr_array_index (tuned->best, 0))->tiles;
          napkin_cli_note_arch (arch);
          fprintf (stderr, _("%s: no relabeling in the file; running the model's best on %s: %s\n"), file, arch->id,
                   *tiles ? tiles : _("the plan's own kernels, as drawn"));
          return g_steal_pointer (&relabeled);
        }
      fprintf (stderr, _("%s: no relabeling in the file, and the model proposes none (%s): running it as drawn\n"),
               file, tune_error ? tune_error->message : "no architecture profile");
    }
#endif
  return g_object_ref (diagram);
}

/* napkin-runner's arguments for these options (NULL-terminated). */
static GPtrArray *
run_runner_args (const RunOptions *o)
{
  GPtrArray *args = g_ptr_array_new_with_free_func (g_free);

  g_ptr_array_add (args, g_strdup_printf ("--repeats=%d", o->repeats));
  g_ptr_array_add (args, g_strdup_printf ("--seed=%" G_GINT64_FORMAT, o->seed));
  if (o->generic)
    g_ptr_array_add (args, g_strdup ("--generic"));
  if (o->no_reference)
    g_ptr_array_add (args, g_strdup ("--no-reference"));
  if (o->no_energy)
    g_ptr_array_add (args, g_strdup ("--no-energy"));
  if (o->no_cache)
    g_ptr_array_add (args, g_strdup ("--no-cache"));
  g_ptr_array_add (args, g_strdup_printf ("--reference-repeats=%d", o->reference_repeats));
  if (o->inject != NULL)
    g_ptr_array_add (args, g_strdup_printf ("--inject=%s", o->inject));
  if (o->gpus > 1)
    g_ptr_array_add (args, g_strdup_printf ("--gpus=%d", o->gpus));
  /* the kernels are planned for the profile the prediction prices */
  if (o->model != NULL)
    g_ptr_array_add (args, g_strdup_printf ("--model=%s", o->model));
  g_ptr_array_add (args, NULL);
  return args;
}

/* Runs the job to its end in a main loop of our own; the runner's JSON, or NULL after
 * saying why. */
static json_object *
run_wait (NapkinDiagram    *diagram,
          const RunOptions *o)
{
  g_autoptr(GPtrArray) args = run_runner_args (o);
  g_autoptr(NapkinRunJob) job = napkin_run_job_new (diagram, (const char * const *) args->pdata);
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  RunWait wait = { loop, NULL, NULL };

  napkin_run_job_set_timeout (job, o->timeout);
  if (isatty (STDERR_FILENO) && !o->as_json)
    g_signal_connect (job, "notify::message", G_CALLBACK (on_message), NULL);
  napkin_run_job_run_async (job, NULL, run_done, &wait);
  g_main_loop_run (loop);
  if (wait.result == NULL)
    {
      fprintf (stderr, "napkin-cli run: %s\n", wait.error->message);
      g_error_free (wait.error);
    }
  return wait.result;
}

/* The CLI's own steps beside the runner's (docs/perf-notes.md, "Where a run's time goes"). */
static void
run_add_phases (json_object *result,
                gint64       t0,
                gint64       t1,
                gint64       t2)
{
  json_object *phases = json_object_object_get (result, "phases");

  if (phases == NULL)
    json_object_object_add (result, "phases", phases = json_object_new_object ());
  json_object_object_add (phases, "cli_load", seconds_json ((t1 - t0) / 1e6));
  json_object_object_add (phases, "cli_runner_process", seconds_json ((t2 - t1) / 1e6));
  json_object_object_add (phases, "cli_prediction", seconds_json ((g_get_monotonic_time () - t2) / 1e6));
}

/* The result as JSON or as a summary, and how the run ended as the exit status. */
static int
run_report (const char       *file,
            json_object      *result,
            const RunOptions *o)
{
  const char *status = get_string (result, "status");
  gboolean ran = g_strcmp0 (status, "ok") == 0 || g_strcmp0 (status, "wrong") == 0;

  if (o->as_json)
    printf ("%s\n", json_object_to_json_string_ext (result, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                                            | JSON_C_TO_STRING_NOSLASHESCAPE));
  else if (ran && o->gpus > 1)
    print_gpus_summary (file, result);
  else if (ran)
    print_summary (file, result);

  if (g_strcmp0 (status, "ok") == 0)
    return NAPKIN_CLI_OK;
  /* the runner's messages are English (docs/cli.md, "Language"): the fixed ones are in the catalogue */
  if (g_strcmp0 (status, "no-gpu") == 0)
    fprintf (stderr, _("napkin-cli run: no GPU: %s\n"), runner_message (result));
  else
    fprintf (stderr, "napkin-cli run: %s: %s\n", status ? status : "failed",
             get_string (result, "message") ? runner_message (result) : _("no message"));
  return NAPKIN_CLI_FAILED;
}

int
napkin_cli_run (int    argc,
                char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  g_auto(RunOptions) o = { .repeats = 20, .timeout = 300, .reference_repeats = 5, .gpus = 1, .seed = 1234 };
  const GOptionEntry entries[] = {
    { "format", 0, 0, G_OPTION_ARG_STRING, &o.format, "Output: text (default) or json (the runner's result)", "FORMAT" },
    { "gpus", 0, 0, G_OPTION_ARG_INT, &o.gpus,
      "Run the diagram's gpus region on N GPUs with NCCL between the kernels (docs/multi-gpu.md)", "N" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &o.as_json, NAPKIN_CLI_FORMAT_HELP_JSON, NULL },
    { "repeats", 0, 0, G_OPTION_ARG_INT, &o.repeats, "Timed repeats (default 20)", "N" },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &o.timeout, "Stop the run after this many seconds (default 300)", "S" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &o.seed, "Seed of the random inputs", "S" },
    { "generic", 0, 0, G_OPTION_ARG_NONE, &o.generic, "Generic lowering only (no tile primitives)", NULL },
    { "model", 0, 0, G_OPTION_ARG_STRING, &o.model, "Architecture the prediction uses (default: the GPU found)", "ID" },
    { "arch", 0, 0, G_OPTION_ARG_STRING, &o.model, "Same as --model", "ID" },
    { "inject", 0, 0, G_OPTION_ARG_STRING, &o.inject, "Test the containment: run a kernel made to fault or hang", "fault|hang" },
    { "no-reference", 0, 0, G_OPTION_ARG_NONE, &o.no_reference,
      "Time without the fp32 reference (when it does not fit in device memory; check the tiles at a smaller size)", NULL },
    { "reference-repeats", 0, 0, G_OPTION_ARG_INT, &o.reference_repeats, "Timed runs of the plain reference (default 5, 0: none)", "N" },
    { "tune", 0, 0, G_OPTION_ARG_NONE, &o.tune,
      "A diagram without regions: run the model's best relabeling of it instead of the plan of it as drawn", NULL },
    { "plain", 0, 0, G_OPTION_ARG_NONE, &o.plain, "Run the diagram as drawn (the default; kept for scripts)", NULL },
    { "no-energy", 0, 0, G_OPTION_ARG_NONE, &o.no_energy, "Skip the NVML energy measurement", NULL },
    { "no-cache", 0, 0, G_OPTION_ARG_NONE, &o.no_cache,
      "Compile with NVRTC even when the compiled-module cache has the kernel", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(NapkinDiagram) drawn = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(json_object) result = NULL;
  const char *status;
  gint64 t0 = g_get_monotonic_time (), t1, t2;
  int rc;

  context = napkin_cli_context_new ("run", "FILE",
                                    "Generate the diagram's CUDA, compile it for the local GPU, run it in a "
                                    "child process with a time limit, check it against an fp32 reference and "
                                    "time it. Needs an NVIDIA GPU and driver.",
                                    entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 2)
    return napkin_cli_usage_error ("run", _("expected exactly one FILE"));
  if ((rc = run_check_options (&o)) != NAPKIN_CLI_OK
      || (rc = napkin_cli_load_or_report ("run", argv[1], &overrides, &drawn)) != NAPKIN_CLI_OK)
    return rc;
  diagram = run_tuned (drawn, &o, argv[1]);

  t1 = g_get_monotonic_time ();
  result = run_wait (diagram, &o);
  t2 = g_get_monotonic_time ();
  if (result == NULL)
    return NAPKIN_CLI_FAILED;
  status = get_string (result, "status");
  if ((g_strcmp0 (status, "ok") == 0 || g_strcmp0 (status, "wrong") == 0) && o.gpus > 1)
    add_gpus_prediction (diagram, result, o.model, (guint) o.gpus);
  else if (g_strcmp0 (status, "ok") == 0 || g_strcmp0 (status, "wrong") == 0)
    add_prediction (diagram, result, o.model);
  run_add_phases (result, t0, t1, t2);
  return run_report (argv[1], result, &o);
}
