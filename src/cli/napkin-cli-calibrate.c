/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "napkin-cli.h"
#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-run-job.h"

/* Measures the local GPU through napkin-runner --calibrate, then writes a measured
 * architecture profile: the datasheet profile of the same GPU with the measured
 * figures in place of the datasheet ones, each with its source saying so. */

typedef struct
{
  GMainLoop   *loop;
  json_object *result;
  GError      *error;
} CalWait;

static void
cal_done (GObject      *object,
          GAsyncResult *result,
          gpointer      user_data)
{
  CalWait *wait = user_data;

  wait->result = napkin_run_job_run_finish (NAPKIN_RUN_JOB (object), result, &wait->error);
  g_main_loop_quit (wait->loop);
}

/* Runs napkin-runner with `args` and waits for its answer: its JSON when the status
 * is "ok", else NULL after saying why on standard error. */
static json_object *
run_runner (const char * const *args,
            int                 timeout)
{
  g_autoptr(NapkinRunJob) job = napkin_run_job_new_for_args (args);
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  CalWait wait = { 0 };
  const char *status;

  napkin_run_job_set_timeout (job, MAX (timeout, 10));
  wait.loop = loop;
  napkin_run_job_run_async (job, NULL, cal_done, &wait);
  g_main_loop_run (loop);
  if (wait.result == NULL)
    {
      fprintf (stderr, "napkin-cli calibrate: %s\n", wait.error->message);
      g_error_free (wait.error);
      return NULL;
    }
  status = json_object_get_string (json_object_object_get (wait.result, "status"));
  if (g_strcmp0 (status, "ok") != 0)
    {
      fprintf (stderr, "napkin-cli calibrate: %s: %s\n", status ? status : "failed",
               json_object_get_string (json_object_object_get (wait.result, "message")));
      json_object_put (wait.result);
      return NULL;
    }
  return wait.result;
}

static json_object *
sourced (double      value,
         const char *source)
{
  json_object *o = json_object_new_object ();

  json_object_object_add (o, "value", json_object_new_double (value));
  json_object_object_add (o, "source", json_object_new_string (source));
  return o;
}

static double
num (json_object *obj,
     const char  *path)
{
  g_auto(GStrv) parts = g_strsplit (path, ".", -1);

  for (guint i = 0; parts[i] && obj; i++)
    obj = json_object_object_get (obj, parts[i]);
  return obj ? json_object_get_double (obj) : 0;
}

static const char *
base_id_for (const char *gpu_name)
{
  g_autofree char *lower = g_ascii_strdown (gpu_name ? gpu_name : "", -1);
  const char *ids[] = { "h100", "h200", "a100", "b200", "l40s", "rtx4090" };
  const char *keys[] = { "h100", "h200", "a100", "b200", "l40s", "4090" };

  for (guint i = 0; i < G_N_ELEMENTS (ids); i++)
    if (strstr (lower, keys[i]) != NULL)
      return ids[i];
  return NULL;
}

/* The tensor-core figures of the measured profile, per SM per clock at the measured clock.
 * Where the GPU has a second, faster path (Hopper: wgmma; the profile's compute
 * capability 9.x), mma.sync's measurements go to tensor_mma_sync and tensor holds
 * wgmma's: measured for fp16 and bf16 when the runner's wgmma loop ran, otherwise the
 * datasheet's dense peak kept in FLOP/s (rescaled to the new clock) and said so in
 * its source. Elsewhere mma.sync is the peak path and its measurements are tensor's.
 * Returns a line for the user about wgmma, or NULL. */
static char *
write_tensor_rates (json_object *profile,
                    json_object *tensor,
                    json_object *cal,
                    const char  *note,
                    double       sms,
                    double       clock_mhz)
{
  const char *cc = json_object_get_string (json_object_object_get (profile, "compute_capability"));
  gboolean hopper = cc != NULL && g_str_has_prefix (cc, "9.");
  json_object *measured_wgmma = json_object_object_get (cal, "tensor_wgmma");
  const char *wgmma_error = json_object_get_string (json_object_object_get (cal, "tensor_wgmma_error"));
  double old_clock = num (profile, "tensor_clock_mhz.value");
  json_object *mma_sync = hopper ? json_object_new_object () : NULL;
  json_object_iter it;
  char *line = NULL;

  if (hopper)
    {
      /* the datasheet's peaks, in FLOP/s, kept at the new clock; replaced below where measured */
      json_object_object_foreachC (tensor, it)
        {
          double v = num (it.val, "value") * (old_clock > 0 ? old_clock / clock_mhz : 1.0);
          g_autofree char *src = g_strdup_printf ("%s; kept from the datasheet profile (%.1f TFLOP/s dense, the "
                                                  "wgmma path): %s", json_object_get_string (json_object_object_get (it.val, "source")),
                                                  v * sms * clock_mhz * 1e6 / 1e12,
                                                  measured_wgmma ? "not measured for this type"
                                                                 : "the wgmma loop did not run");

          json_object_object_add (tensor, it.key, sourced (v, src));
        }
    }
  json_object_object_foreachC (json_object_object_get (cal, "tensor"), it)
    {
      double rate = num (it.val, "flops_per_s") / sms / (clock_mhz * 1e6);
      g_autofree char *src = g_strdup_printf ("%s: mma.sync, %.1f TFLOP/s at %.0f MHz", note,
                                              num (it.val, "flops_per_s") / 1e12, clock_mhz);

      json_object_object_add (hopper ? mma_sync : tensor, it.key, sourced (rate, src));
    }
  if (hopper && measured_wgmma != NULL)
    {
      json_object_object_foreachC (measured_wgmma, it)
        {
          g_autofree char *key = g_strdup_printf ("%s.value", it.key);
          double rate = num (it.val, "flops_per_s") / sms / (clock_mhz * 1e6);
          double floor_rate = num (mma_sync, key);
          const char *instruction = json_object_get_string (json_object_object_get (it.val, "instruction"));
          g_autofree char *src = g_strdup_printf ("%s: %s, %.1f TFLOP/s at %.0f MHz", note,
                                                  instruction ? instruction : "wgmma m64n256k16",
                                                  num (it.val, "flops_per_s") / 1e12, clock_mhz);

          /* the loader wants tensor ≥ tensor_mma_sync: a wgmma loop slower than mma.sync
           * measured something else; keep mma.sync's rate and say so */
          if (rate < floor_rate)
            {
              g_free (src);
              src = g_strdup_printf ("%s: wgmma measured %.1f TFLOP/s, below mma.sync: mma.sync's rate used", note,
                                     num (it.val, "flops_per_s") / 1e12);
              rate = floor_rate;
            }
          json_object_object_add (tensor, it.key, sourced (rate, src));
        }
      line = g_strdup_printf ("wgmma fp16 %.0f bf16 %.0f TFLOP/s (measured)",
                              num (measured_wgmma, "fp16.flops_per_s") / 1e12,
                              num (measured_wgmma, "bf16.flops_per_s") / 1e12);
    }
  else if (hopper)
    line = g_strdup_printf ("wgmma not measured (%s): the profile keeps the datasheet's dense peak for the wgmma "
                            "path, mma.sync's measured rates for the rest",
                            wgmma_error ? wgmma_error : "the runner did not report it");
  if (mma_sync != NULL)
    json_object_object_add (profile, "tensor_mma_sync", mma_sync);
  json_object_object_add (profile, "tensor_clock_mhz", sourced (clock_mhz, note));
  return line;
}

/* calibrate --collectives: NCCL's four collectives timed on N GPUs (napkin-runner
 * --collectives), each beside the model's price from the profile's interconnect
 * (docs/multi-gpu.md, "Running on several GPUs"). Writes no profile. */
static int
calibrate_collectives (int         gpus,
                       const char *base,
                       gint64      max_bytes,
                       int         timeout,
                       gboolean    as_json)
{
  g_autofree char *g = g_strdup_printf ("--gpus=%d", gpus);
  g_autofree char *mb = g_strdup_printf ("--max-bytes=%" G_GINT64_FORMAT, max_bytes);
  const char *args[] = { "--collectives", g, mb, NULL };
  g_autoptr(json_object) result = NULL;
  const char *gpu;
  NapkinArch *arch = NULL;
  json_object *list;

  result = run_runner (args, timeout);
  if (result == NULL)
    return NAPKIN_CLI_FAILED;
  gpu = json_object_get_string (json_object_object_get (json_object_object_get (result, "gpu"), "name"));
  if (base == NULL)
    base = base_id_for (gpu);
  if (base != NULL)
    arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), base, NULL);
  json_object_object_add (result, "model", arch ? json_object_new_string (arch->id) : NULL);
  list = json_object_object_get (result, "collectives");
  if (!as_json)
    printf ("%s × %d, NCCL %s, bf16; predicted by %s\n%-15s %12s %11s %11s %9s %10s %6s\n", gpu, gpus,
            json_object_get_string (json_object_object_get (json_object_object_get (result, "nccl"), "version")),
            arch ? arch->id : "— (no profile)", "collective", "bytes", "time ms", "predicted", "busbw", "model bw", "ratio");
  for (guint i = 0; list && i < json_object_array_length (list); i++)
    {
      json_object *o = json_object_array_get_idx (list, i);
      const char *kind = json_object_get_string (json_object_object_get (o, "kind"));
      double bytes = num (o, "bytes"), ms = num (o, "time_ms"), bw = 0, pred = -1;

      for (guint k = 0; arch != NULL && k < NAPKIN_N_COLLECTIVES; k++)
        if (g_str_equal (kind, napkin_collective_to_string (k)))
          pred = napkin_arch_collective_seconds (arch, k, (guint) gpus, bytes, &bw);
      if (pred > 0)
        {
          json_object_object_add (o, "predicted_ms", json_object_new_double (pred * 1e3));
          json_object_object_add (o, "model_busbw_gbps", json_object_new_double (bw / 1e9));
          json_object_object_add (o, "ratio", json_object_new_double (ms / (pred * 1e3)));
        }
      if (!as_json)
        {
          char p[32] = "—", b[32] = "—", q[32] = "—";

          if (pred > 0)
            {
              g_snprintf (p, sizeof p, "%.4f", pred * 1e3);
              g_snprintf (b, sizeof b, "%.1f", bw / 1e9);
              g_snprintf (q, sizeof q, "%.2f", ms / (pred * 1e3));
            }
          printf ("%-15s %12.0f %11.4f %11s %9.1f %10s %6s\n", kind, bytes, ms, p, num (o, "busbw_gbps"), b, q);
        }
    }
  if (as_json)
    printf ("%s\n", json_object_to_json_string_ext (result, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  return NAPKIN_CLI_OK;
}

/* The datasheet profile the measurement starts from: --base, else the one the GPU's
 * name matches; its file as the registry reads it ($NAPKIN_ARCH_DIR's folders, then the
 * data dirs). NULL after saying why. */
static json_object *
calibrate_datasheet (const char  *gpu,
                     char       **base)
{
  NapkinArch *datasheet;
  json_object *profile;

  if (*base == NULL && base_id_for (gpu) != NULL)
    *base = g_strdup (base_id_for (gpu));
  if (*base == NULL)
    {
      fprintf (stderr, _("napkin-cli calibrate: no datasheet profile matches “%s”; pass --base ID\n"), gpu);
      return NULL;
    }
  datasheet = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), *base, NULL);
  if (datasheet == NULL || datasheet->path == NULL)
    {
      fprintf (stderr, _("napkin-cli calibrate: no datasheet profile “%s” (napkin-cli archs lists them)\n"), *base);
      return NULL;
    }
  {
    g_autofree char *text = napkin_file_read_bounded (datasheet->path, NAPKIN_ARCH_MAX_FILE_SIZE, NULL, NULL);

    profile = text != NULL ? json_tokener_parse (text) : NULL;
  }
  if (profile == NULL)
    fprintf (stderr, _("napkin-cli calibrate: cannot read the datasheet profile %s\n"), datasheet->path);
  return profile;
}

/* The measured figures into the datasheet's profile, each with where it came from;
 * the line about the wgmma rates for the summary, or NULL. */
static char *
calibrate_profile (json_object *profile,
                   json_object *result,
                   const char  *gpu,
                   const char  *base)
{
  g_autoptr(GDateTime) now = g_date_time_new_now_utc ();
  g_autofree char *stamp = g_date_time_format_iso8601 (now);
  json_object *cal = json_object_object_get (result, "calibration");
  double clock_mhz = num (result, "gpu.clock_mhz");
  double sms = num (result, "gpu.sms");
  g_autofree char *note = g_strdup_printf ("measured by napkin-cli calibrate on %s (%s, %s)", gpu, stamp,
                                           json_object_get_string (json_object_object_get (result, "arch")));
  g_autofree char *id = g_strdup_printf ("%s-measured", base);
  g_autofree char *name = g_strdup_printf ("%s (measured)", gpu);
  json_object *levels, *tensor;

  json_object_object_add (profile, "id", json_object_new_string (id));
  json_object_object_add (profile, "name", json_object_new_string (name));
  json_object_object_add (profile, "launch_overhead_s", sourced (num (cal, "launch_overhead_s"), note));
  levels = json_object_object_get (profile, "levels");
  if (levels != NULL)
    {
      json_object *hbm = json_object_object_get (levels, "hbm");
      json_object *smem = json_object_object_get (levels, "smem");

      if (hbm != NULL)
        json_object_object_add (hbm, "bandwidth_bytes_per_s", sourced (num (cal, "hbm_bytes_per_s"), note));
      if (smem != NULL)
        json_object_object_add (smem, "bandwidth_bytes_per_clock", sourced (num (cal, "smem_bytes_per_clock_per_sm"), note));
    }
  tensor = json_object_object_get (profile, "tensor");
  return tensor != NULL ? write_tensor_rates (profile, tensor, cal, note, sms, clock_mhz) : NULL;
}

/* The profile to OUT, by default the user's data dir (napkin/archs/BASE-measured.json). */
static gboolean
calibrate_write (json_object  *profile,
                 const char   *base,
                 char        **output)
{
  g_autoptr(GError) error = NULL;
  const char *text = json_object_to_json_string_ext (profile, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                                                | JSON_C_TO_STRING_NOSLASHESCAPE);

  if (*output == NULL)
    {
      g_autofree char *dir = g_build_filename (g_get_user_data_dir (), "napkin", "archs", NULL);
      g_autofree char *file = g_strdup_printf ("%s-measured.json", base);

      g_mkdir_with_parents (dir, 0755);
      *output = g_build_filename (dir, file, NULL);
    }
  /* a measured profile loads back, or it is not written (docs/security.md, "Profiles") */
  {
    NapkinArch *back = napkin_arch_load_from_data (text, -1, &error);

    if (back == NULL)
      {
        fprintf (stderr, "napkin-cli calibrate: the measured profile would not load, not written: %s\n",
                 error->message);
        return FALSE;
      }
    napkin_arch_unref (back);
  }
  if (!napkin_file_write_atomic (*output, text, strlen (text), &error))
    {
      fprintf (stderr, "napkin-cli calibrate: %s\n", error->message);
      return FALSE;
    }
  return TRUE;
}

/* What was measured and where the profile went (on standard error beside --format json). */
static void
calibrate_print_summary (json_object *result,
                         const char  *gpu,
                         const char  *base,
                         const char  *output,
                         const char  *wgmma_note,
                         gboolean     as_json)
{
  json_object *cal = json_object_object_get (result, "calibration");
  g_autofree char *dir = g_path_get_dirname (output);
  g_autofree char *user_dir = g_build_filename (g_get_user_data_dir (), "napkin", "archs", NULL);
  /* the registry reads the user's data dir (docs/packaging.md); elsewhere it needs telling */
  g_autofree char *hint = g_str_equal (dir, user_dir) ? g_strdup_printf ("--arch %s-measured now works", base)
                                                      : g_strdup_printf ("use it with NAPKIN_ARCH_DIR=%s", dir);

  fprintf (as_json ? stderr : stdout, "%s: copy %.0f GB/s, shared memory %.0f B/clock/SM, launch %.1f µs, mma.sync fp16 %.0f bf16 %.0f "
          "tf32 %.0f int8 %.0f TFLOP/s\n%s%swrote %s (%s)\n",
          gpu, num (cal, "hbm_bytes_per_s") / 1e9, num (cal, "smem_bytes_per_clock_per_sm"),
          num (cal, "launch_overhead_s") * 1e6, num (cal, "tensor.fp16.flops_per_s") / 1e12,
          num (cal, "tensor.bf16.flops_per_s") / 1e12, num (cal, "tensor.tf32.flops_per_s") / 1e12,
          num (cal, "tensor.int8.flops_per_s") / 1e12, wgmma_note ? wgmma_note : "", wgmma_note ? "\n" : "",
          output, hint);
}

int
napkin_cli_calibrate (int    argc,
                      char **argv)
{
  gboolean as_json = FALSE;
  g_autofree char *output = NULL;
  g_autofree char *base = NULL;
  g_autofree char *format = NULL;
  int timeout = 300, gpus = 2;
  gboolean collectives = FALSE;
  gint64 max_bytes = 1 << 30;
  const GOptionEntry entries[] = {
    { "collectives", 0, 0, G_OPTION_ARG_NONE, &collectives,
      "Instead: time NCCL's all-reduce, all-gather, reduce-scatter and all-to-all (bf16, 1 MiB to --max-bytes) on --gpus GPUs "
      "beside the model's prediction", NULL },
    { "gpus", 0, 0, G_OPTION_ARG_INT, &gpus, "With --collectives: how many GPUs (default 2)", "N" },
    { "max-bytes", 0, 0, G_OPTION_ARG_INT64, &max_bytes, "With --collectives: the largest message (default 1 GiB)", "B" },
    { "format", 0, 0, G_OPTION_ARG_STRING, &format, "Output: text (default) or json (the measurements; the summary goes to standard error)",
      "FORMAT" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &as_json, NAPKIN_CLI_FORMAT_HELP_JSON, NULL },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
      "Write the profile here (default: the user data dir, napkin/archs/ID-measured.json)", "OUT" },
    { "base", 0, 0, G_OPTION_ARG_STRING, &base, "Datasheet profile to start from (default: from the GPU's name)", "ID" },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &timeout, "Stop after this many seconds", "S" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(json_object) result = NULL;
  g_autoptr(json_object) profile = NULL;
  const char *args[] = { "--calibrate", NULL };
  const char *gpu;
  g_autofree char *wgmma_note = NULL;

  context = napkin_cli_context_new ("calibrate", "",
                                    "Measure the local GPU's ceilings (device-memory copy bandwidth, "
                                    "shared-memory bandwidth, mma.sync tensor-core rates per element type and, on Hopper, "
                                    "wgmma fp16/bf16 rates, "
                                    "launch overhead) and save them as a measured architecture profile.",
                                    entries, NULL);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 1)
    return napkin_cli_usage_error ("calibrate", _("takes no FILE"));
  if (!napkin_cli_text_or_json ("calibrate", format, &as_json))
    return NAPKIN_CLI_USAGE;
  if (collectives)
    {
      if (gpus < 2 || gpus > 16 || max_bytes < (1 << 20))
        return napkin_cli_usage_error ("calibrate", "--collectives needs --gpus 2 to 16 and --max-bytes of 1 MiB or more");
      return calibrate_collectives (gpus, base, max_bytes, timeout, as_json);
    }

  if (output == NULL)
    {
      g_autofree char *dir = g_build_filename (g_get_user_data_dir (), "napkin", "archs", NULL);

      /* said before the minutes of measuring, not only after: a profile there joins every
       * command's list of GPUs (docs/packaging.md) */
      fprintf (stderr, _("napkin-cli calibrate: without -o the profile goes to %s/%s-measured.json, where "
                         "analyze, compare, tune and the editor find it (and name it where they use it); "
                         "-o OUT writes it elsewhere\n"),
               dir, base ? base : "ID");
    }
  result = run_runner (args, timeout);
  if (result == NULL)
    return NAPKIN_CLI_FAILED;
  if (as_json)
    printf ("%s\n", json_object_to_json_string_ext (result, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));

  gpu = json_object_get_string (json_object_object_get (json_object_object_get (result, "gpu"), "name"));
  profile = calibrate_datasheet (gpu, &base);
  if (profile == NULL)
    return NAPKIN_CLI_FAILED;
  wgmma_note = calibrate_profile (profile, result, gpu, base);
  if (!calibrate_write (profile, base, &output))
    return NAPKIN_CLI_FAILED;
  calibrate_print_summary (result, gpu, base, output, wgmma_note, as_json);
  return NAPKIN_CLI_OK;
}
