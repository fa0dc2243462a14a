/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "napkin-cli.h"
#include "napkin-shard-model.h"
#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-explain.h"
#include "napkin-model.h"
#include "napkin-derive.h"
#include "napkin-tune.h"

#if __has_include("napkin-run-job.h")
#include "napkin-run-job.h"
#include "napkin-codegen.h"
#define HAVE_RUNNER 1
#endif

typedef enum
{
  FORMAT_TEXT,
  FORMAT_JSON,
  FORMAT_CSV,
  FORMAT_MD,
} Format;

/* In the order of Format; for napkin_cli_format_resolve. */
static const char * const format_names[] = { "text", "json", "csv", "md", NULL };

static void
print_json (json_object *root)
{
  printf ("%s\n", json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                                          | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Seconds, bytes and rates with SI prefixes. */
static NapkinArchRegistry *
registry (void)
{
  return napkin_cli_registry ();
}

/* ---- the verdict plan, analyze and codegen share ---------------------------------------------- */

char *
napkin_cli_infeasible_reason (NapkinDiagram *diagram,
                              NapkinArch    *arch,
                              gboolean       has_dtype,
                              NapkinDtype    dtype)
{
  NapkinAnalyzeOptions options = { has_dtype, dtype, TRUE, FALSE, FALSE, 0 };
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) a = napkin_analyze (diagram, arch, &options, &error);

  if (a == NULL)
    return g_strdup (error->message);
  if (a->feasible)
    return NULL;
  /* the first error is the reason, as analyze says it */
  return g_strdup (a->errors->len > 0 ? (const char *) g_ptr_array_index (a->errors, 0)
                                      : _("infeasible (the model gives no reason)"));
}

/* ---- archs --------------------------------------------------------------------------------- */

int
napkin_cli_archs (int    argc,
                  char **argv)
{
  gboolean as_json = FALSE;
  g_autofree char *format = NULL;
  const GOptionEntry entries[] = {
    NAPKIN_CLI_FORMAT_ENTRIES (format, as_json),
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  NapkinArchRegistry *reg;

  context = napkin_cli_context_new ("archs", "",
                                    "List the GPU architectures the model knows ($NAPKIN_ARCH_DIR, then "
                                    "archs/*.json in Napkin's data dirs), with their main figures.", entries, NULL);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 1)
    return napkin_cli_usage_error ("archs", _("takes no arguments"));
  if (!napkin_cli_text_or_json ("archs", format, &as_json))
    return NAPKIN_CLI_USAGE;

  reg = registry ();
  if (napkin_arch_registry_count (reg) == 0)
    {
      fprintf (stderr, _("napkin-cli archs: no architecture files found (set NAPKIN_ARCH_DIR)\n"));
      return NAPKIN_CLI_FAILED;
    }

  if (as_json)
    {
      g_autoptr(json_object) array = json_object_new_array ();

      for (guint i = 0; i < napkin_arch_registry_count (reg); i++)
        {
          NapkinArch *a = napkin_arch_registry_get (reg, i);
          json_object *obj = json_object_new_object ();
          json_object *tensor = json_object_new_object ();

          json_object_object_add (obj, "id", json_object_new_string (a->id));
          json_object_object_add (obj, "name", json_object_new_string (a->name));
          json_object_object_add (obj, "path", json_object_new_string (a->path));
          json_object_object_add (obj, "hides", a->shadows ? json_object_new_string (a->shadows) : NULL);
          json_object_object_add (obj, "sms", json_object_new_int (a->sms));
          json_object_object_add (obj, "clock_hz", json_object_new_double (a->clock_hz));
          json_object_object_add (obj, "hbm_bytes_per_s", json_object_new_double (a->levels[NAPKIN_LEVEL_HBM].bandwidth));
          json_object_object_add (obj, "smem_bytes_per_sm", json_object_new_double (a->levels[NAPKIN_LEVEL_SMEM].capacity_bytes));
          for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
            json_object_object_add (tensor, napkin_tensor_class_to_string (c),
                                    json_object_new_double (napkin_arch_tensor_rate (a, c)));
          json_object_object_add (obj, "tensor_flops_per_s", tensor);
          {
            const GPtrArray *paths = napkin_arch_get_figure_paths (a);
            json_object *sources = json_object_new_object ();

            for (guint p = 0; p < paths->len; p++)
              json_object_object_add (sources, g_ptr_array_index (paths, p),
                                      json_object_new_string (napkin_arch_get_source (a, g_ptr_array_index (paths, p))));
            json_object_object_add (obj, "sources", sources);
          }
          json_object_array_add (array, obj);
        }
      print_json (array);
      return NAPKIN_CLI_OK;
    }

  printf ("%-8s %-26s %4s %6s %10s %8s %9s %9s %9s\n", "id", "name", "SMs", "MHz", "HBM", "smem/SM",
          "fp16 TC", "fp8 TC", "ridge");
  for (guint i = 0; i < napkin_arch_registry_count (reg); i++)
    {
      NapkinArch *a = napkin_arch_registry_get (reg, i);
      g_autofree char *bw = napkin_format_si (a->levels[NAPKIN_LEVEL_HBM].bandwidth, "B/s");
      g_autofree char *f16 = napkin_format_si (napkin_arch_tensor_rate (a, NAPKIN_TENSOR_FP16), "F/s");
      g_autofree char *f8 = a->tensor_per_sm_clock[NAPKIN_TENSOR_FP8] > 0
                            ? napkin_format_si (napkin_arch_tensor_rate (a, NAPKIN_TENSOR_FP8), "F/s") : g_strdup ("—");

      printf ("%-8s %-26s %4u %6.0f %10s %6.0fKB %9s %9s %6.0f F/B\n", a->id, a->name, a->sms, a->clock_hz / 1e6,
              bw, a->levels[NAPKIN_LEVEL_SMEM].capacity_bytes / 1024, f16, f8,
              napkin_arch_tensor_rate (a, NAPKIN_TENSOR_FP16) / a->levels[NAPKIN_LEVEL_HBM].bandwidth);
    }
  /* the profiles that hide others of their ids say so (napkin_arch_dup_origin) */
  for (guint i = 0; i < napkin_arch_registry_count (reg); i++)
    if (napkin_arch_registry_get (reg, i)->shadows != NULL)
      napkin_cli_note_arch (napkin_arch_registry_get (reg, i));
  return NAPKIN_CLI_OK;
}

/* ---- analyze ------------------------------------------------------------------------------- */

static void
print_analysis_text (NapkinAnalysis *a,
                     const char     *path)
{
  g_autofree char *t = napkin_format_si (a->predicted_time_s, "s");
  g_autofree char *ts = napkin_format_si (a->serial_time_s, "s");
  g_autofree char *to = napkin_format_si (a->overlap_time_s, "s");
  g_autofree char *tp = napkin_format_si (a->throughput, "FLOP/s");
  g_autofree char *tt = napkin_format_si (a->tensor_throughput, "FLOP/s");
  g_autofree char *stp = napkin_format_si (a->serial_throughput, "FLOP/s");
  g_autofree char *en = napkin_format_si (a->energy_j, "J");
  g_autofree char *fl = napkin_format_si ((double) a->flops_total, "FLOP");

  printf ("%s on %s (%s)%s%s%s\n", path, a->arch->id, a->arch->name, a->has_dtype ? ", all tensors " : "",
          a->has_dtype ? napkin_dtype_to_string (a->dtype) : "", a->paper ? ", the paper's model (no L2 reuse)" : "");
  /* the first error is the reason; the others follow it */
  if (a->feasible)
    printf (_("\nfeasible: every region fits\n"));
  else
    printf (_("\nINFEASIBLE: %s\n"), a->errors->len > 0 ? (const char *) g_ptr_array_index (a->errors, 0)
                                                         : _("the model found no configuration that fits"));
  for (guint i = a->feasible ? 0 : 1; i < a->errors->len; i++)
    printf (_("  error: %s\n"), (const char *) g_ptr_array_index (a->errors, i));
  for (guint i = 0; i < a->warnings->len; i++)
    printf (_("  note: %s\n"), (const char *) g_ptr_array_index (a->warnings, i));

  printf (_("\nPredicted time  %s (%s with full overlap everywhere, %s with none), bound by %s\n"), t, to, ts,
          napkin_resource_to_label (a->bound));
  printf (_("Throughput      %s predicted, %s with no overlap (tensor cores alone: %s)\n"), tp, stp,
          a->tensor_throughput > 0 ? tt : "—");
  if (a->best_path != NULL)
    {
      g_autofree char *bt = napkin_format_si (a->best_time_s, "s");
      g_autofree char *btp = napkin_format_si (a->best_throughput, "FLOP/s");

      /* both labelled (docs/model.md, "Best path"): the GPU's capability, and Napkin's code */
      printf (_("Best path       %s on %s, bound by %s (%s): %s\n"), bt, a->best_path,
              napkin_resource_to_label (a->best_bound), btp,
              a->best_generated ? _("the path Napkin generates (the time above is its code's)")
                                : _("the GPU's best path, which Napkin does not generate here; the time above "
                                    "is the code it generates"));
      if (a->best_note != NULL)
        printf ("                %s\n", a->best_note);
    }
  printf ("Work            %s; intensity %.1f FLOP per device-memory byte\n", fl, a->intensity);
  printf ("Energy          %s (estimate)\n", en);

  printf ("\n%-10s %18s %16s %12s\n", "level", "transfer elements", "bytes", "time");
  for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
    {
      g_autofree char *lt = napkin_format_si (a->levels[l].time_s, "s");

      printf ("%-10s %18" G_GINT64_FORMAT " %16" G_GINT64_FORMAT " %12s\n", napkin_level_to_string (l),
              a->levels[l].transfer_elements, a->levels[l].transfer_bytes, lt);
    }
  printf ("\n%-10s", "resource");
  for (NapkinResource r = 0; r < NAPKIN_N_RESOURCES; r++)
    printf (" %10s", napkin_resource_to_string (r));
  printf ("\n%-10s", "time");
  for (NapkinResource r = 0; r < NAPKIN_N_RESOURCES; r++)
    {
      g_autofree char *rt = napkin_format_si (a->resource_s[r], "s");

      printf (" %10s", rt);
    }
  printf ("\n");

  for (guint i = 0; i < a->regions->len; i++)
    {
      const NapkinRegionCost *c = &g_array_index (a->regions, NapkinRegionCost, i);

      printf ("\nRegion %s (%s inside %s): tile %s, %u stage%s", c->name, napkin_level_to_string (c->level),
              napkin_level_to_string (c->parent_level), c->tile, c->stages, c->stages == 1 ? "" : "s");
      if (c->threads > 0)
        printf (", %u threads", c->threads);
      printf ("\n");
      /* one footprint: the block's, as its kernel's plan asks for it (docs/plan.md) */
      if (c->plan_smem_bytes > 0)
        printf ("  instances %" G_GINT64_FORMAT " (%" G_GINT64_FORMAT " groups × %" G_GINT64_FORMAT
                " stream chunks per group), footprint %" G_GINT64_FORMAT " bytes a block (its plan's shared memory: "
                "tiles of %" G_GINT64_FORMAT " elements, stages, staging buffers, barriers)\n", c->instances, c->groups,
                c->chunks, c->plan_smem_bytes, c->footprint_elements);
      else
        printf ("  instances %" G_GINT64_FORMAT " (%" G_GINT64_FORMAT " groups × %" G_GINT64_FORMAT
                " stream chunks per group), footprint %" G_GINT64_FORMAT " elements = %" G_GINT64_FORMAT " bytes\n",
                c->instances, c->groups, c->chunks, c->footprint_elements, c->footprint_bytes);
      if (c->level == NAPKIN_LEVEL_L2)
        printf ("  %" G_GINT64_FORMAT " held in L2 at once, %" G_GINT64_FORMAT " round%s%s\n", c->per_sm, c->waves,
                c->waves == 1 ? "" : "s", c->feasible ? "" : "  INFEASIBLE");
      else
        printf ("  %" G_GINT64_FORMAT " per SM (bound by %s), %u registers/thread, %" G_GINT64_FORMAT " wave%s%s\n",
                c->per_sm, c->binding_limit, c->registers_per_thread, c->waves, c->waves == 1 ? "" : "s",
                c->feasible ? "" : "  INFEASIBLE");
      for (guint t = 0; t < c->transfers->len; t++)
        {
          const NapkinTransfer *tr = &g_array_index (c->transfers, NapkinTransfer, t);

          printf ("    %-3s %-10s %s %-9s tile %10" G_GINT64_FORMAT " × %10" G_GINT64_FORMAT " = %14" G_GINT64_FORMAT
                  " elements %15" G_GINT64_FORMAT " bytes\n", tr->is_output ? "out" : "in", tr->tensor,
                  tr->is_output ? "→" : "←", napkin_level_to_string (tr->from), tr->tile_elements, tr->count,
                  tr->elements, tr->bytes);
        }
    }

  printf ("\n%-16s %-9s %10s %12s %12s %12s\n", "kernel", "bound", "waves×", "time", "overlap", "serial");
  for (guint k = 0; k < a->kernels->len; k++)
    {
      const NapkinKernelCost *kc = &g_array_index (a->kernels, NapkinKernelCost, k);
      g_autofree char *t = napkin_format_si (kc->time_s_predicted, "s");
      g_autofree char *o = napkin_format_si (kc->overlap_s, "s");
      g_autofree char *s = napkin_format_si (kc->serial_s, "s");

      printf ("%-16s %-9s %10.3f %12s %12s %12s\n", kc->name, napkin_resource_to_string (kc->bound),
              kc->quantisation, t, o, s);
    }
  if (a->launch_run_s != 0)
    {
      /* each kernel is priced as timed alone; the total as one run (docs/model.md, "Launches") */
      g_autofree char *l = napkin_format_si (a->launch_run_s, "s");

      printf (_("%-16s %u in one run: %s against each kernel alone (in the total)\n"), "launches", a->launches, l);
    }
}

static void
print_analysis_table (NapkinAnalysis *a,
                      gboolean        markdown)
{
  if (markdown)
    printf ("| level | transfer elements | transfer bytes | time (s) |\n|---|---:|---:|---:|\n");
  else
    printf ("section,name,level,transfer_elements,transfer_bytes,time_s,instances,footprint_bytes,per_sm,"
            "binding_limit,bound\n");
  for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
    {
      if (markdown)
        printf ("| %s | %" G_GINT64_FORMAT " | %" G_GINT64_FORMAT " | %.6g |\n", napkin_level_to_string (l),
                a->levels[l].transfer_elements, a->levels[l].transfer_bytes, a->levels[l].time_s);
      else
        printf ("level,,%s,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%.9g,,,,,\n", napkin_level_to_string (l),
                a->levels[l].transfer_elements, a->levels[l].transfer_bytes, a->levels[l].time_s);
    }
  if (markdown)
    printf ("\n| region | level | tile | instances | footprint (bytes) | per SM | binding |\n"
            "|---|---|---|---:|---:|---:|---|\n");
  for (guint i = 0; i < a->regions->len; i++)
    {
      const NapkinRegionCost *c = &g_array_index (a->regions, NapkinRegionCost, i);

      if (markdown)
        printf ("| %s | %s | %s | %" G_GINT64_FORMAT " | %" G_GINT64_FORMAT " | %" G_GINT64_FORMAT " | %s |\n",
                c->name, napkin_level_to_string (c->level), c->tile, c->instances,
                c->plan_smem_bytes > 0 ? c->plan_smem_bytes : c->footprint_bytes, c->per_sm, c->binding_limit);
      else
        printf ("region,%s,%s,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                ",%" G_GINT64_FORMAT ",%s,\n", c->name, napkin_level_to_string (c->level), c->transfer_elements,
                c->transfer_bytes, c->instances, c->plan_smem_bytes > 0 ? c->plan_smem_bytes : c->footprint_bytes, c->per_sm,
                c->binding_limit);
    }
  if (markdown)
    printf ("\n| predicted time (s) | bound | FLOPs | throughput (FLOP/s) | feasible |\n|---:|---|---:|---:|---|\n"
            "| %.6g | %s | %" G_GINT64_FORMAT " | %.6g | %s |\n", a->predicted_time_s,
            napkin_resource_to_string (a->bound), a->flops_total, a->throughput, a->feasible ? "yes" : "no");
  else
    printf ("total,,,,,%.9g,,,,,%s\n", a->predicted_time_s, napkin_resource_to_string (a->bound));
}

/* analyze --gpus N: one GPU's kernels, the collectives between them, the totals
 * (docs/multi-gpu.md). */
static void
print_time (double s)
{
  if (s < 0)
    printf ("        ?");
  else if (s < 1e-3)
    printf ("%7.1f µs", s * 1e6);
  else
    printf ("%7.3f ms", s * 1e3);
}

static int
analyze_gpus (NapkinDiagram              *diagram,
              NapkinArch                 *arch,
              const NapkinAnalyzeOptions *options,
              guint                       gpus,
              Format                      format,
              const char                 *file)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinShardAnalysis) sa = napkin_shard_analyze (diagram, arch, gpus, options, &error);
  const NapkinShardPlan *plan;
  guint next = 0;

  if (sa == NULL)
    {
      fprintf (stderr, "%s: %s\n", file, error->message);
      return NAPKIN_CLI_FAILED;
    }
  plan = sa->shard;
  if (format == FORMAT_JSON)
    {
      g_autoptr(json_object) root = napkin_shard_analysis_to_json (sa);

      json_object_object_add (root, "file", json_object_new_string (file));
      json_object_object_add (root, "arch", json_object_new_string (arch->id));
      print_json (root);
      return sa->analysis->feasible ? NAPKIN_CLI_OK : NAPKIN_CLI_FAILED;
    }
  if (format == FORMAT_CSV || format == FORMAT_MD)
    {
      fprintf (stderr, "analyze: --gpus prints text or json\n");
      return NAPKIN_CLI_USAGE;
    }
  printf ("%s on %u× %s", file, plan->gpus, arch->id);
  if (plan->axis != NULL)
    printf (" — gpus region “%s”: %s = %" G_GINT64_FORMAT " split, %" G_GINT64_FORMAT " per GPU",
            plan->region, plan->axis, plan->axis_size, plan->axis_size / plan->gpus);
  printf ("\n\nOne GPU's program (kernels and collectives in run order):\n");
  for (guint k = 0; k <= sa->analysis->kernels->len; k++)
    {
      for (; next < plan->collectives->len; next++)
        {
          const NapkinCollective *c = g_ptr_array_index (plan->collectives, next);

          if (c->before_kernel > k)
            break;
          printf ("  %-14s %-12s %12" G_GINT64_FORMAT " B/rank ", napkin_collective_to_string (c->kind), c->tensor, c->bytes);
          print_time (c->seconds);
          printf ("  at %.0f GB/s bus", c->bus_bandwidth / 1e9);
          if (c->chunks > 1)
            printf (", %u chunks of ", c->chunks), print_time (c->chunk_seconds);
          printf ("\n");
        }
      if (k < sa->analysis->kernels->len)
        {
          const NapkinKernelCost *kc = &g_array_index (sa->analysis->kernels, NapkinKernelCost, k);

          printf ("  kernel %-7u %-34s ", k + 1, kc->name);
          print_time (kc->time_s_predicted);
          printf ("\n");
        }
    }
  printf ("\ncompute   ");
  print_time (sa->compute_s);
  printf ("\ncollectives");
  print_time (sa->comm_s);
  printf ("\ntotal     ");
  print_time (sa->total_s);
  printf ("  (one after the other)\n");
  if (plan->chunks > 1)
    {
      printf ("overlapped");
      print_time (sa->overlapped_s);
      printf ("  (%u chunks along %s; %s ", plan->chunks, plan->chunk_axis, sa->gain_s < 0 ? "loss" : "gain");
      print_time (fabs (sa->gain_s));
      printf (")\n");
      printf ("chunked   ");
      print_time (sa->chunked_s);
      printf ("  (the chunks one after another)\n");
      if (sa->note != NULL)
        printf ("note: %s\n", sa->note);
    }
  return sa->analysis->feasible ? NAPKIN_CLI_OK : NAPKIN_CLI_FAILED;
}

int
napkin_cli_analyze (int    argc,
                    char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  g_autofree char *arch_id = NULL;
  g_autofree char *dtype_str = NULL;
  g_autofree char *format_str = NULL;
  gboolean paper = FALSE, no_wgmma = FALSE, as_json = FALSE;
  int gpus = G_MININT;   /* not given */
  const GOptionEntry entries[] = {
    { "arch", 0, 0, G_OPTION_ARG_STRING, &arch_id, "Architecture id (napkin-cli archs); default h100", "ID" },
    { "gpus", 0, 0, G_OPTION_ARG_INT, &gpus,
      "Price the diagram's gpus region on N GPUs: one GPU's kernels, the collectives, the total and the overlapped total (docs/multi-gpu.md)", "N" },
    { "dtype", 0, 0, G_OPTION_ARG_STRING, &dtype_str, "Give every tensor this element type (quantisation)", "T" },
    { "format", 0, 0, G_OPTION_ARG_STRING, &format_str, "Output: text (default), json, csv or md", "FORMAT" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &as_json, NAPKIN_CLI_FORMAT_HELP_JSON, NULL },
    { "paper", 0, 0, G_OPTION_ARG_NONE, &paper, "The paper's model: every tile from device memory, no L2 reuse", NULL },
    { "no-wgmma", 0, 0, G_OPTION_ARG_NONE, &no_wgmma,
      "Model code generated without the Hopper wgmma skeletons (every region on mma.sync), as runs before them", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(NapkinAnalysis) analysis = NULL;
  g_autoptr(GError) error = NULL;
  NapkinAnalyzeOptions options = { FALSE, NAPKIN_DTYPE_FP16, TRUE };
  Format format = FORMAT_TEXT;
  NapkinArch *arch;
  int rc;

  context = napkin_cli_context_new ("analyze", "FILE",
                                    "Predict what a relabeled diagram costs on a GPU: transfers per memory "
                                    "level, footprint and occupancy per region, time per resource, the bound "
                                    "resource, throughput and energy (docs/model.md).", entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 2)
    return napkin_cli_usage_error ("analyze", _("expected exactly one FILE"));
  if ((rc = napkin_cli_format_resolve ("analyze", format_str, as_json, format_names)) < 0)
    return NAPKIN_CLI_USAGE;
  format = rc;
  if (!napkin_cli_parse_dtype ("analyze", dtype_str, &options.has_dtype, &options.dtype))
    return NAPKIN_CLI_USAGE;
  if ((arch = napkin_cli_lookup_arch ("analyze", arch_id)) == NULL)
    return NAPKIN_CLI_USAGE;

  if (gpus != G_MININT && (gpus < 1 || gpus > 1024))
    return napkin_cli_usage_error ("analyze", "--gpus: %d is not a GPU count from 1 to 1024", gpus);
  if ((rc = napkin_cli_load_or_report ("analyze", argv[1], &overrides, &diagram)) != NAPKIN_CLI_OK)
    return rc;
  options.paper = paper;
  options.no_wgmma = no_wgmma;
  gpus = napkin_cli_gpus_or_region (diagram, gpus);
  /* one GPU: the whole diagram, as without a gpus region (docs/multi-gpu.md) */
  if (gpus > 1)
    return analyze_gpus (diagram, arch, &options, gpus, format, argv[1]);
  analysis = napkin_analyze (diagram, arch, &options, &error);
  if (analysis == NULL)
    {
      fprintf (stderr, "%s: %s\n", argv[1], error->message);
      return NAPKIN_CLI_FAILED;
    }

  switch (format)
    {
    case FORMAT_JSON:
      {
        g_autoptr(json_object) root = napkin_analysis_to_json (analysis);

        json_object_object_add (root, "file", json_object_new_string (argv[1]));
        print_json (root);
      }
      break;
    case FORMAT_CSV:
      print_analysis_table (analysis, FALSE);
      break;
    case FORMAT_MD:
      print_analysis_table (analysis, TRUE);
      break;
    case FORMAT_TEXT:
    default:
      print_analysis_text (analysis, argv[1]);
      break;
    }
  /* Tables have no place for the reasons: they go to the error stream, so that a
   * failing exit status always comes with one. */
  if (!analysis->feasible && (format == FORMAT_CSV || format == FORMAT_MD))
    for (guint i = 0; i < MAX (analysis->errors->len, 1); i++)
      fprintf (stderr, _("%s: infeasible: %s\n"), argv[1],
               analysis->errors->len > 0 ? (const char *) g_ptr_array_index (analysis->errors, i)
                                         : "the model found no configuration that fits");
  /* an infeasible relabeling is a result, but scripts should be able to tell */
  return analysis->feasible ? NAPKIN_CLI_OK : NAPKIN_CLI_FAILED;
}

/* ---- compare ------------------------------------------------------------------------------- */

/* --arch ID,ID,…: the profiles compared (default: every one the registry has). */
static int
compare_arches (NapkinArchRegistry *reg,
                const char         *arch_ids,
                GPtrArray          *arches)
{
  if (arch_ids)
    {
      g_auto(GStrv) ids = g_strsplit (arch_ids, ",", -1);

      for (guint i = 0; ids[i]; i++)
        {
          g_autoptr(GError) error = NULL;
          NapkinArch *arch = napkin_arch_registry_lookup (reg, g_strstrip (ids[i]), &error);

          if (arch == NULL)
            return napkin_cli_usage_error ("compare", _("--arch: %s"), error->message);
          g_ptr_array_add (arches, napkin_cli_note_arch (arch));
        }
    }
  else
    for (guint i = 0; i < napkin_arch_registry_count (reg); i++)
      g_ptr_array_add (arches, napkin_cli_note_arch (napkin_arch_registry_get (reg, i)));
  return NAPKIN_CLI_OK;
}

/* --dtype T,T,…: the element types tried after the file's own (-1). */
static int
compare_dtypes (const char *dtype_ids,
                GArray     *dtypes)
{
  int none = -1;

  g_array_append_val (dtypes, none);   /* the file's own types */
  if (dtype_ids)
    {
      g_auto(GStrv) ids = g_strsplit (dtype_ids, ",", -1);

      for (guint i = 0; ids[i]; i++)
        {
          NapkinDtype dt;
          int v;

          if (!napkin_dtype_from_string (g_strstrip (ids[i]), &dt))
            return napkin_cli_usage_error ("compare", _("--dtype: unknown element type “%s”"), ids[i]);
          v = dt;
          g_array_append_val (dtypes, v);
        }
    }
  return NAPKIN_CLI_OK;
}

/* Two times a row (docs/model.md, "Best path"): on the GPU's best tensor-core path, and
 * with the code Napkin generates (the same where it generates that path). */
static void
compare_print_header (Format format)
{
  if (format == FORMAT_TEXT)
    printf ("%-8s %-9s %12s %-6s %-9s %14s %12s %-9s %14s %12s %s\n", "arch", "dtype", "best path", "bound",
            "path", "throughput", "generated", "bound", "peak", "energy", "feasible");
  else if (format == FORMAT_MD)
    printf ("| arch | dtype | best path time (s) | bound | path | throughput (FLOP/s) | generated code time (s) | bound | energy (J) | feasible |\n"
            "|---|---|---:|---|---|---:|---:|---|---:|---|\n");
  else if (format == FORMAT_CSV)
    printf ("arch,dtype,best_time_s,best_bound,best_path,best_throughput_flops_per_s,predicted_time_s,bound,"
            "throughput_flops_per_s,energy_j,feasible\n");
}

/* A text row; where the best path is not generated, why, into best_notes. */
static void
compare_print_text_row (NapkinAnalysis *a,
                        NapkinArch     *arch,
                        int             dt,
                        const char     *dname,
                        GPtrArray      *best_notes)
{
  g_autofree char *t = napkin_format_si (a->predicted_time_s, "s");
  NapkinTensorClass klass = NAPKIN_TENSOR_FP16;
  g_autofree char *pk = NULL;
  g_autofree char *en = napkin_format_si (a->energy_j, "J");
  g_autofree char *bt = napkin_format_si (a->best_time_s, "s");
  g_autofree char *btp = napkin_format_si (a->best_throughput, "FLOP/s");
  g_autofree char *bp = g_strdup_printf ("%s%s", a->best_path ? a->best_path : "-", a->best_generated ? "" : "*");

  /* the peak of the element type asked for (fp16 for the file's own) */
  if (dt >= 0 && (!napkin_tensor_class_for_dtype (dt, &klass) || arch->tensor_per_sm_clock[klass] <= 0))
    klass = NAPKIN_TENSOR_FP16;
  pk = dt == NAPKIN_DTYPE_FP32 ? napkin_format_si (napkin_arch_cuda_rate (arch, NAPKIN_DTYPE_FP32), "FLOP/s")
                               : napkin_format_si (napkin_arch_tensor_rate (arch, klass), "FLOP/s");
  printf ("%-8s %-9s %12s %-6s %-9s %14s %12s %-9s %14s %12s %s\n", arch->id, dname, bt,
          napkin_resource_to_string (a->best_bound), bp, btp, t,
          napkin_resource_to_string (a->bound), pk, en, a->feasible ? "yes" : "NO");
  if (!a->best_generated && a->best_note != NULL)
    g_ptr_array_add (best_notes, g_strdup_printf ("%s %s: %s", arch->id, dname, a->best_note));
}

/* A row of compare --format json. */
static json_object *
compare_json_row (NapkinAnalysis *a,
                  NapkinArch     *arch,
                  const char     *dname)
{
  json_object *row = json_object_new_object ();

  json_object_object_add (row, "arch", json_object_new_string (arch->id));
  json_object_object_add (row, "dtype", json_object_new_string (dname));
  json_object_object_add (row, "predicted_time_s", json_object_new_double (a->predicted_time_s));
  json_object_object_add (row, "bound", json_object_new_string (napkin_resource_to_string (a->bound)));
  json_object_object_add (row, "throughput_flops_per_s", json_object_new_double (a->throughput));
  json_object_object_add (row, "energy_j", json_object_new_double (a->energy_j));
  json_object_object_add (row, "feasible", json_object_new_boolean (a->feasible));
  json_object_object_add (row, "best_time_s", json_object_new_double (a->best_time_s));
  json_object_object_add (row, "best_bound", json_object_new_string (napkin_resource_to_string (a->best_bound)));
  json_object_object_add (row, "best_path", a->best_path ? json_object_new_string (a->best_path) : NULL);
  json_object_object_add (row, "best_path_generated", json_object_new_boolean (a->best_generated));
  json_object_object_add (row, "best_throughput_flops_per_s", json_object_new_double (a->best_throughput));
  if (a->best_note)
    json_object_object_add (row, "best_note", json_object_new_string (a->best_note));
  return row;
}

/* One architecture × element type in the format asked for (JSON rows go to `rows`). */
static void
compare_print_row (Format          format,
                   NapkinAnalysis *a,
                   NapkinArch     *arch,
                   int             dt,
                   json_object    *rows,
                   GPtrArray      *best_notes)
{
  const char *dname = dt >= 0 ? napkin_dtype_to_string (dt) : "file";

  if (format == FORMAT_TEXT)
    compare_print_text_row (a, arch, dt, dname, best_notes);
  else if (format == FORMAT_MD)
    printf ("| %s | %s | %.6g | %s | %s%s | %.6g | %.6g | %s | %.6g | %s |\n", arch->id, dname, a->best_time_s,
            napkin_resource_to_string (a->best_bound), a->best_path ? a->best_path : "-",
            a->best_generated ? "" : " (not generated)", a->best_throughput, a->predicted_time_s,
            napkin_resource_to_string (a->bound), a->energy_j, a->feasible ? "yes" : "no");
  else if (format == FORMAT_CSV)
    printf ("%s,%s,%.9g,%s,%s,%.9g,%.9g,%s,%.9g,%.9g,%s\n", arch->id, dname, a->best_time_s,
            napkin_resource_to_string (a->best_bound), a->best_path ? a->best_path : "",
            a->best_throughput, a->predicted_time_s,
            napkin_resource_to_string (a->bound), a->throughput, a->energy_j, a->feasible ? "true" : "false");
  else
    json_object_array_add (rows, compare_json_row (a, arch, dname));
}

/* Under the text table: the best paths Napkin does not generate, and why rows are infeasible. */
static void
compare_print_notes (GPtrArray *best_notes,
                     GPtrArray *notes)
{
  if (best_notes->len > 0)
    {
      printf ("\n* best path not generated by Napkin: “generated” is the time of the code it generates\n");
      for (guint i = 0; i < best_notes->len; i++)
        printf ("  %s\n", (const char *) g_ptr_array_index (best_notes, i));
    }
  if (notes->len > 0)
    {
      printf ("\nInfeasible:\n");
      for (guint i = 0; i < notes->len; i++)
        printf ("  %s\n", (const char *) g_ptr_array_index (notes, i));
    }
}

int
napkin_cli_compare (int    argc,
                    char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  g_autofree char *arch_ids = NULL;
  g_autofree char *dtype_ids = NULL;
  g_autofree char *format_str = NULL;
  gboolean paper = FALSE, as_json = FALSE;
  const GOptionEntry entries[] = {
    { "arch", 0, 0, G_OPTION_ARG_STRING, &arch_ids, "Comma-separated architecture ids (default: all)", "ID,ID,…" },
    { "dtype", 0, 0, G_OPTION_ARG_STRING, &dtype_ids, "Comma-separated element types to try besides the file's own", "T,T,…" },
    { "format", 0, 0, G_OPTION_ARG_STRING, &format_str, "Output: text (default), json, csv or md", "FORMAT" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &as_json, NAPKIN_CLI_FORMAT_HELP_JSON, NULL },
    { "paper", 0, 0, G_OPTION_ARG_NONE, &paper, "The paper's model: every tile from device memory, no L2 reuse", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GPtrArray) arches = g_ptr_array_new ();
  g_autoptr(GArray) dtypes = g_array_new (FALSE, FALSE, sizeof (int));
  g_autoptr(json_object) rows = json_object_new_array ();
  g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GPtrArray) best_notes = g_ptr_array_new_with_free_func (g_free);
  Format format = FORMAT_TEXT;
  NapkinArchRegistry *reg;
  int rc;

  context = napkin_cli_context_new ("compare", "FILE",
                                    "Predicted time, bound resource and throughput of one diagram on several "
                                    "architectures and element types.", entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 2)
    return napkin_cli_usage_error ("compare", _("expected exactly one FILE"));
  if ((rc = napkin_cli_format_resolve ("compare", format_str, as_json, format_names)) < 0)
    return NAPKIN_CLI_USAGE;
  format = rc;

  reg = registry ();
  if ((rc = compare_arches (reg, arch_ids, arches)) != NAPKIN_CLI_OK
      || (rc = compare_dtypes (dtype_ids, dtypes)) != NAPKIN_CLI_OK
      || (rc = napkin_cli_load_or_report ("compare", argv[1], &overrides, &diagram)) != NAPKIN_CLI_OK)
    return rc;

  compare_print_header (format);
  for (guint i = 0; i < arches->len; i++)
    for (guint j = 0; j < dtypes->len; j++)
      {
        NapkinArch *arch = g_ptr_array_index (arches, i);
        int dt = g_array_index (dtypes, int, j);
        NapkinAnalyzeOptions options = { dt >= 0, dt >= 0 ? (NapkinDtype) dt : NAPKIN_DTYPE_FP16, j > 0 || i > 0, paper };
        g_autoptr(GError) error = NULL;
        g_autoptr(NapkinAnalysis) a = napkin_analyze (diagram, arch, &options, &error);
        const char *dname = dt >= 0 ? napkin_dtype_to_string (dt) : "file";

        if (a == NULL)
          {
            fprintf (stderr, "%s: %s\n", argv[1], error->message);
            return NAPKIN_CLI_FAILED;
          }
        if (!a->feasible)
          g_ptr_array_add (notes, g_strdup_printf ("%s %s: %s", arch->id, dname,
                                                   (const char *) g_ptr_array_index (a->errors, 0)));
        compare_print_row (format, a, arch, dt, rows, best_notes);
      }
  if (format == FORMAT_JSON)
    print_json (rows);
  if (format == FORMAT_TEXT)
    compare_print_notes (best_notes, notes);
  return NAPKIN_CLI_OK;
}

/* ---- tune ---------------------------------------------------------------------------------- */

static json_object *
candidate_to_json (const NapkinTuneCandidate *c)
{
  json_object *obj = json_object_new_object ();

  json_object_object_add (obj, "tiles", json_object_new_string (c->tiles));
  json_object_object_add (obj, "predicted_time_s", json_object_new_double (c->predicted_time_s));
  json_object_object_add (obj, "throughput_flops_per_s", json_object_new_double (c->throughput));
  json_object_object_add (obj, "bound", json_object_new_string (napkin_resource_to_string (c->bound)));
  json_object_object_add (obj, "hbm_bytes", json_object_new_int64 (c->hbm_bytes));
  json_object_object_add (obj, "footprint_bytes", json_object_new_int64 (c->footprint_bytes));
  json_object_object_add (obj, "per_sm", json_object_new_int64 (c->per_sm));
  json_object_object_add (obj, "off_best_path", json_object_new_int (c->off_best_path));
  {
    json_object *specs = json_object_new_array ();

    for (guint i = 0; c->specs && c->specs[i]; i++)
      json_object_array_add (specs, json_object_new_string (c->specs[i]));
    json_object_object_add (obj, "specs", specs);    /* as --tile takes them */
  }
  return obj;
}

/* Spearman's rank correlation, ties given their mean rank; NAN below 3 pairs or when
 * one side is constant. */
static void
ranks_of (const double *v,
          guint         n,
          double       *rank)
{
  for (guint i = 0; i < n; i++)
    {
      guint less = 0, equal = 0;

      for (guint j = 0; j < n; j++)
        less += v[j] < v[i], equal += v[j] == v[i];
      rank[i] = less + (equal + 1) / 2.0;
    }
}

static double
spearman (const double *x,
          const double *y,
          guint         n)
{
  g_autofree double *rx = g_new (double, MAX (n, 1));
  g_autofree double *ry = g_new (double, MAX (n, 1));
  double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;

  if (n < 3)
    return NAN;
  ranks_of (x, n, rx);
  ranks_of (y, n, ry);
  for (guint i = 0; i < n; i++)
    mx += rx[i] / n, my += ry[i] / n;
  for (guint i = 0; i < n; i++)
    {
      sxy += (rx[i] - mx) * (ry[i] - my);
      sxx += (rx[i] - mx) * (rx[i] - mx);
      syy += (ry[i] - my) * (ry[i] - my);
    }
  return sxx > 0 && syy > 0 ? sxy / sqrt (sxx * syy) : NAN;
}

#ifdef HAVE_RUNNER
/* How many of the kernels the code generator emits for these tiles fall back to its
 * generic loop nest (no skeleton); -1 when they do not lower at all. `source`
 * (optional) gets the CUDA source it generated, for the target `flags` say. */
static int
generic_kernels (NapkinDiagram             *diagram,
                 const NapkinTuneCandidate *candidate,
                 NapkinCodegenFlags         flags,
                 char                     **source)
{
  g_autoptr(NapkinDiagram) copy = napkin_diagram_copy (diagram);
  NapkinIrProgram *program;
  NapkinCudaModule *module;
  int n = 0;

  if (candidate != NULL && !napkin_tune_apply (copy, candidate, NULL))
    return -1;
  program = napkin_ir_lower (copy, NAPKIN_LOWER_DEFAULT, NULL);
  if (program == NULL)
    return -1;
  module = napkin_codegen_cuda (program, flags, NULL, NULL);
  if (module == NULL)
    return -1;
  for (guint i = 0; i < module->kernels->len; i++)
    n += g_strcmp0 (((NapkinCudaKernel *) g_ptr_array_index (module->kernels, i))->skeleton, "generic") == 0;
  if (source != NULL)
    *source = g_strdup (module->source);
  napkin_cuda_module_free (module);
  return n;
}

typedef struct
{
  GMainLoop       *loop;
  NapkinRunResult *result;
  GError          *error;
} MeasureWait;

static void
measure_done (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  MeasureWait *wait = user_data;

  wait->result = napkin_run_job_run_finish_result (NAPKIN_RUN_JOB (object), result, &wait->error);
  g_main_loop_quit (wait->loop);
}

/* Runs the diagram with the candidate's tiles on the local GPU (the same child process
 * as `napkin-cli run`); returns the runner's result, or NULL with the reason. */
static NapkinRunResult *
measure_candidate (NapkinDiagram             *diagram,
                   NapkinArch                *arch,
                   const NapkinTuneCandidate *candidate,
                   int                        repeats,
                   int                        timeout,
                   GError                   **error)
{
  g_autoptr(NapkinDiagram) copy = napkin_diagram_copy (diagram);
  g_autoptr(NapkinRunJob) job = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autofree char *reps = g_strdup_printf ("--repeats=%d", repeats);
  const char *args[] = { reps, "--reference-repeats=0", NULL };
  MeasureWait wait = { loop, NULL, NULL };

  if (!napkin_tune_apply (copy, candidate, error))
    return NULL;
  job = napkin_run_job_new (copy, args);
  napkin_run_job_set_timeout (job, timeout);
  napkin_run_job_run_async (job, NULL, measure_done, &wait);
  g_main_loop_run (loop);
  if (wait.result == NULL)
    {
      g_propagate_error (error, wait.error);
      return NULL;
    }
  {
    g_autoptr(NapkinAnalysis) analysis = napkin_analyze (copy, arch, NULL, NULL);

    if (analysis != NULL)
      wait.result->predicted_energy_j = analysis->energy_j;
  }
  return wait.result;
}
#endif

static void
print_candidate (const char                *label,
                 const NapkinTuneCandidate *c)
{
  g_autofree char *t = napkin_format_si (c->predicted_time_s, "s");
  g_autofree char *tp = napkin_format_si (c->throughput, "FLOP/s");

  printf ("%-8s %10s %14s %-9s %14" G_GINT64_FORMAT " %10" G_GINT64_FORMAT " %6" G_GINT64_FORMAT "  %s\n", label,
          t, tp, napkin_resource_to_string (c->bound), c->hbm_bytes, c->footprint_bytes, c->per_sm, c->tiles);
  if (c->off_best_path > 0)
    printf (_("         (%u kernel(s) on mma.sync where wgmma is best: ranked after the tiles that keep wgmma)\n"),
            c->off_best_path);
}

/* tune on a diagram without regions: the kernels, unfused vs derived, and --apply */
static int
print_derivation (const char       *file,
                  NapkinArch       *arch,
                  NapkinDerivation *dr,
                  double            elapsed,
                  gboolean          as_json,
                  gboolean          write)
{
  g_autoptr(GError) error = NULL;

  if (as_json)
    {
      g_autoptr(json_object) root = napkin_derivation_to_json (dr);

      json_object_object_add (root, "arch", json_object_new_string (arch->id));
      json_object_object_add (root, "seconds", json_object_new_double (elapsed));
      print_json (root);
    }
  else
    {
      g_autofree char *unfused = napkin_format_si (dr->unfused_s, "s");
      g_autofree char *derived = napkin_format_si (dr->derived_s, "s");

      printf (_("%s has no regions; derived %u kernels on %s (%u candidates, %u analyses, %s, %.3f s):\n\n"), file,
              dr->kernels->len, arch->id, dr->candidates, dr->evaluated,
              dr->exact ? _("exact search") : _("greedy past the search's bound"), elapsed);
      printf ("%-3s %-14s %-12s %10s %10s  %s\n", "#", "kernel", "kind", "predicted", "unfused", "operations");
      for (guint i = 0; i < dr->kernels->len; i++)
        {
          const NapkinDeriveKernel *k = g_ptr_array_index (dr->kernels, i);
          g_autofree char *p = napkin_format_si (k->predicted_s, "s");
          g_autofree char *u = napkin_format_si (k->unfused_s, "s");
          g_autofree char *ops = g_strjoinv (" → ", k->nodes);

          printf ("%-3u %-14s %-12s %10s %10s  %s\n", i + 1, k->name, k->kind, p, u, ops);
          if (k->tiles)
            printf ("    tiles: %s\n", k->tiles);
          if (k->writes[0])
            {
              g_autofree char *w = g_strjoinv (", ", k->writes);

              printf ("    through device memory: %s\n", w);
            }
          printf ("    why: %s\n", k->why);
        }
      if (dr->launch_run_s != 0)
        {
          g_autofree char *l = napkin_format_si (dr->launch_run_s, "s");

          printf (_("    launches in one run: %s against each kernel alone (in the total)\n"), l);
        }
      printf (_("\ntotal: unfused %s (every operation its own kernel), derived %s: %.2f× (analyze on the derived "
                "diagram: %.4f ms)\n"), unfused, derived, dr->unfused_s / dr->derived_s, dr->analyzed_s * 1e3);
    }
  if (write)
    {
      if (!napkin_diagram_save_to_file (dr->derived, file, &error))
        {
          fprintf (stderr, _("%s: cannot write the derived regions: %s\n"), file, error->message);
          return NAPKIN_CLI_FAILED;
        }
      fprintf (stderr, _("wrote %s\n"), file);
    }
  return NAPKIN_CLI_OK;
}

#ifdef HAVE_RUNNER
/* The candidates --measure runs: only what the code generator turns into as many
 * skeleton kernels as the file's own tiles do (a relabeling it would run through its
 * generic loop nest is not what the model ranks), each kernel once; the best `measure`
 * of them, or with `spread` the best and others spread evenly over the ranking. */
static GPtrArray *
tune_measure_pick (NapkinTuneResult *result,
                   NapkinDiagram    *base,
                   NapkinArch       *arch,
                   int               measure,
                   gboolean          spread,
                   gboolean          as_json)
{
  g_autoptr(GPtrArray) pool = g_ptr_array_new ();
  GPtrArray *chosen = g_ptr_array_new ();
  g_autoptr(GHashTable) sources = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  /* the code the runner will build: sm_90a's skeletons on a Hopper profile */
  NapkinCodegenFlags flags = napkin_arch_has_wgmma (arch) ? NAPKIN_CODEGEN_SM90A : NAPKIN_CODEGEN_DEFAULT;
  guint n, dropped = 0, same = 0;
  int own = generic_kernels (base, NULL, flags, NULL);

  for (guint i = 0; i < result->best->len; i++)
    {
      NapkinTuneCandidate *c = g_ptr_array_index (result->best, i);
      char *source = NULL;
      int g = generic_kernels (base, c, flags, &source);

      /* a relabeling that generates the same kernel as a better-ranked one (tiles
       * the skeleton ignores) would time that kernel twice */
      if (g < 0 || (own >= 0 && g > own))
        dropped++;
      else if (g_hash_table_contains (sources, source))
        same++;
      else
        {
          g_hash_table_add (sources, g_steal_pointer (&source));
          g_ptr_array_add (pool, c);
        }
      g_free (source);
      if (!spread && pool->len >= (guint) measure)
        break;
    }
  if (dropped > 0 && !as_json)
    fprintf (stderr, _("tune --measure: %u relabelings skipped: the code generator has no skeleton for them\n"), dropped);
  if (same > 0 && !as_json)
    fprintf (stderr, _("tune --measure: %u relabelings skipped: they generate the same kernel as a better-ranked "
             "one\n"), same);
  n = MIN ((guint) measure, pool->len);
  for (guint j = 0; j < n; j++)
    g_ptr_array_add (chosen, g_ptr_array_index (pool, spread && n > 1 ? (guint) llround ((double) j * (pool->len - 1) / (n - 1)) : j));
  return chosen;
}

/* One measured candidate as a row of --measure's table: its rank, how the run ended
 * and its time and energy; the measured time in *seconds (0 where it did not run). */
static json_object *
tune_measure_row (NapkinTuneResult          *result,
                  NapkinDiagram             *base,
                  NapkinArch                *arch,
                  const NapkinTuneCandidate *c,
                  int                        repeats,
                  int                        timeout,
                  double                    *seconds)
{
  g_autoptr(GError) run_error = NULL;
  g_autoptr(NapkinRunResult) r = measure_candidate (base, arch, c, repeats, timeout, &run_error);
  json_object *row = candidate_to_json (c);
  guint rank = 0;

  *seconds = 0;
  while (rank < result->best->len && g_ptr_array_index (result->best, rank) != c)
    rank++;
  json_object_object_add (row, "rank", json_object_new_int (rank + 1));
  json_object_object_add (row, "status", json_object_new_string (r ? r->status : "failed"));
  if (r == NULL)
    json_object_object_add (row, "message", json_object_new_string (run_error->message));
  else if (napkin_run_result_is_ok (r))
    {
      *seconds = r->time_median_ms / 1e3;
      json_object_object_add (row, "measured_time_s", json_object_new_double (*seconds));
      if (r->kernels->len > 0 && napkin_run_result_kernel (r, 0)->name != NULL)
        json_object_object_add (row, "kernel", json_object_new_string (napkin_run_result_kernel (r, 0)->name));
      if (!isnan (r->energy_j))
        json_object_object_add (row, "measured_energy_j", json_object_new_double (r->energy_j));
      if (!isnan (r->predicted_energy_j))
        json_object_object_add (row, "predicted_energy_j", json_object_new_double (r->predicted_energy_j));
    }
  else if (r->message != NULL)
    json_object_object_add (row, "message", json_object_new_string (r->message));
  return row;
}

/* --measure: runs the chosen candidates on the local GPU; the rows of the table, and
 * the rank correlation of predicted and measured time in *rho. */
static json_object *
tune_measure (NapkinTuneResult *result,
              NapkinDiagram    *base,
              NapkinArch       *arch,
              int               measure,
              gboolean          spread,
              int               repeats,
              int               timeout,
              gboolean          as_json,
              double           *rho)
{
  g_autoptr(GPtrArray) chosen = tune_measure_pick (result, base, arch, measure, spread, as_json);
  guint n = chosen->len, good = 0;
  g_autofree double *pred = g_new0 (double, n + 1);
  g_autofree double *meas = g_new0 (double, n + 1);
  json_object *measured = json_object_new_array ();

  for (guint i = 0; i < n; i++)
    {
      const NapkinTuneCandidate *c = g_ptr_array_index (chosen, i);
      double seconds;
      json_object *row = tune_measure_row (result, base, arch, c, repeats, timeout, &seconds);
      const char *status = json_object_get_string (json_object_object_get (row, "status"));

      if (json_object_object_get (row, "measured_time_s") != NULL)
        {
          pred[good] = c->predicted_time_s;
          meas[good] = seconds;
          good++;
        }
      if (!as_json)
        {
          if (good > 0 && meas[good - 1] > 0 && g_strcmp0 (status, "ok") == 0)
            fprintf (stderr, _("measured %u/%u: %.4f ms (predicted %.4f ms)  %s\n"), i + 1, n,
                     meas[good - 1] * 1e3, c->predicted_time_s * 1e3, c->tiles);
          else
            fprintf (stderr, _("measured %u/%u: %s  %s\n"), i + 1, n, status, c->tiles);
        }
      json_object_array_add (measured, row);
    }
  *rho = spearman (pred, meas, good);
  return measured;
}
#endif

/* tune --format json: the search, its best relabelings and what --measure found. */
static void
print_tune_json (NapkinTuneResult *result,
                 NapkinArch       *arch,
                 double            elapsed,
                 json_object      *measured,
                 double            rho)
{
  g_autoptr(json_object) root = json_object_new_object ();
  json_object *array = json_object_new_array ();

  json_object_object_add (root, "arch", json_object_new_string (arch->id));
  json_object_object_add (root, "evaluated", json_object_new_int (result->evaluated));
  json_object_object_add (root, "feasible", json_object_new_int (result->feasible));
  json_object_object_add (root, "exhaustive", json_object_new_boolean (result->exhaustive));
  json_object_object_add (root, "stopped", json_object_new_boolean (result->stopped));
  json_object_object_add (root, "seconds", json_object_new_double (elapsed));
  if (result->proposed != NULL)
    {
      json_object *lines = json_object_new_array ();

      for (guint i = 0; result->proposed[i]; i++)
        json_object_array_add (lines, json_object_new_string (result->proposed[i]));
      json_object_object_add (root, "proposed_regions", lines);
    }
  /* the drawn regions gave way to the plan's own partition (regions are hints) */
  json_object_object_add (root, "regions_replaced", json_object_new_boolean (result->regions_replaced));
  if (result->current)
    json_object_object_add (root, "current", candidate_to_json (result->current));
  for (guint i = 0; i < result->best->len; i++)
    json_object_array_add (array, candidate_to_json (g_ptr_array_index (result->best, i)));
  json_object_object_add (root, "best", array);
  if (measured != NULL)
    {
      json_object_object_add (root, "measured", json_object_get (measured));
      json_object_object_add (root, "spearman", isnan (rho) ? NULL : json_object_new_double (rho));
    }
  print_json (root);
}

/* --measure's table: predicted against measured time, and their rank correlation. */
static void
print_measured_table (json_object *measured,
                      double       rho)
{
  printf ("\n%-6s %12s %12s %9s  %s\n", "rank", "predicted", "measured", "meas/pred", "tiles");
  for (size_t i = 0; i < json_object_array_length (measured); i++)
    {
      json_object *row = json_object_array_get_idx (measured, i), *v;
      double p = json_object_get_double (json_object_object_get (row, "predicted_time_s"));

      if (json_object_object_get_ex (row, "measured_time_s", &v))
        printf ("%-6zu %9.4f ms %9.4f ms %9.2f  %s\n", (size_t) json_object_get_int (json_object_object_get (row, "rank")), p * 1e3, json_object_get_double (v) * 1e3,
                json_object_get_double (v) / p, json_object_get_string (json_object_object_get (row, "tiles")));
      else
        printf ("%-6zu %9.4f ms %12s %9s  %s\n", (size_t) json_object_get_int (json_object_object_get (row, "rank")), p * 1e3,
                json_object_get_string (json_object_object_get (row, "status")), "-",
                json_object_get_string (json_object_object_get (row, "tiles")));
    }
  if (isnan (rho))
    printf ("rank correlation (Spearman): — (fewer than 3 runs measured, or all equal)\n");
  else
    printf ("rank correlation (Spearman), predicted vs measured: %.3f\n", rho);
}

/* tune as text: the search, the file's own tiles and the best relabelings. */
static void
print_tune_text (const char       *file,
                 NapkinTuneResult *result,
                 NapkinArch       *arch,
                 double            elapsed,
                 json_object      *measured,
                 double            rho)
{
  printf ("%s on %s: %u relabelings tried (%s), %u feasible, %.3f s\n\n", file, arch->id, result->evaluated,
          result->stopped ? _("stopped at its budget for a diagram this large")
          : result->exhaustive ? "all combinations" : "coordinate descent", result->feasible, elapsed);
  printf ("%-8s %10s %14s %-9s %14s %10s %6s  %s\n", "rank", "time", "throughput", "bound", "HBM bytes",
          "footprint", "per SM", "tiles");
  if (result->current)
    print_candidate ("file", result->current);
  else
    printf ("%-8s the file's own tiles are infeasible on %s\n", "file", arch->id);
  for (guint i = 0; i < result->best->len; i++)
    {
      g_autofree char *label = g_strdup_printf ("%u", i + 1);

      print_candidate (label, g_ptr_array_index (result->best, i));
    }
  if (result->current)
    printf ("\nbest is %.2f× the file's predicted speed\n",
            result->current->predicted_time_s / ((NapkinTuneCandidate *) g_ptr_array_index (result->best, 0))->predicted_time_s);
  if (measured != NULL)
    print_measured_table (measured, rho);
}

/* Whether --measure timed at least one run: without a GPU none did, and tune says so
 * with exit 1 rather than success. */
static gboolean
measured_any (json_object *measured)
{
  for (size_t i = 0; measured != NULL && i < json_object_array_length (measured); i++)
    if (json_object_object_get (json_object_array_get_idx (measured, i), "measured_time_s") != NULL)
      return TRUE;
  return FALSE;
}

/* --write: the best tiles into the file as it is on disk, without the --axis/--tile
 * overrides; a diagram without regions gets the proposed ones. */
static int
tune_write (const char       *file,
            NapkinTuneResult *result,
            NapkinArch       *arch)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) original = napkin_diagram_load_from_file (file, NAPKIN_LOAD_DEFAULT, &error);
  g_autofree char *infeasible = NULL;

  /* a diagram without regions gets its derivation's, by operation id; drawn regions
   * that gave way to the plan's own partition are replaced by it */
  while (original != NULL && result->regions_replaced && napkin_diagram_n_regions (original) > 0)
    napkin_item_free (NAPKIN_ITEM_REGION, napkin_diagram_steal_item (original, NAPKIN_ITEM_REGION, 0));
  for (guint r = 0; original != NULL && result->relabeled != NULL && r < napkin_diagram_n_regions (result->relabeled); r++)
    napkin_diagram_insert_item (original, NAPKIN_ITEM_REGION, napkin_diagram_n_regions (original),
                                napkin_item_copy (NAPKIN_ITEM_REGION, napkin_diagram_region (result->relabeled, r)));
  if (original == NULL || !napkin_tune_apply (original, g_ptr_array_index (result->best, 0), &error))
    {
      fprintf (stderr, _("%s: cannot write the best tiles: %s\n"), file, error->message);
      return NAPKIN_CLI_FAILED;
    }
  /* The search may have run on other sizes or element types (--axis, --dtype): what
   * is saved must be feasible as the file is, as analyze of it will say. */
  if ((infeasible = napkin_cli_infeasible_reason (original, arch, FALSE, NAPKIN_DTYPE_FP32)) != NULL)
    {
      fprintf (stderr, _("%s: not written: the best tiles are INFEASIBLE on %s for the file as it is (without "
                         "--axis, --tile and --dtype): %s\n"), file, arch->id, infeasible);
      return NAPKIN_CLI_FAILED;
    }
  if (!napkin_diagram_save_to_file (original, file, &error))
    {
      fprintf (stderr, _("%s: cannot write the best tiles: %s\n"), file, error->message);
      return NAPKIN_CLI_FAILED;
    }
  fprintf (stderr, _("wrote %s\n"), file);
  return NAPKIN_CLI_OK;
}

int
napkin_cli_tune (int    argc,
                 char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  g_autofree char *arch_id = NULL;
  g_autofree char *dtype_str = NULL;
  g_autofree char *format = NULL;
  gboolean write = FALSE, as_json = FALSE, spread = FALSE, derive = FALSE;
  int top = 10, measure = 0, repeats = 20, timeout = 300;
  const GOptionEntry entries[] = {
    { "arch", 0, 0, G_OPTION_ARG_STRING, &arch_id, "Architecture id (default h100)", "ID" },
    { "top", 0, 0, G_OPTION_ARG_INT, &top, "How many relabelings to print (default 10)", "K" },
    { "dtype", 0, 0, G_OPTION_ARG_STRING, &dtype_str, "Give every tensor this element type", "T" },
    { "write", 0, 0, G_OPTION_ARG_NONE, &write, "Save the best tiles into FILE", NULL },
    { "apply", 0, 0, G_OPTION_ARG_NONE, &write, "The same as --write", NULL },
    { "derive", 0, 0, G_OPTION_ARG_NONE, &derive,
      "Partition a diagram without regions into kernels even when it is one pattern", NULL },
    NAPKIN_CLI_FORMAT_ENTRIES (format, as_json),
    { "measure", 0, 0, G_OPTION_ARG_INT, &measure,
      "Run the best K on the local GPU and report the rank correlation of predicted and measured time", "K" },
    { "repeats", 0, 0, G_OPTION_ARG_INT, &repeats, "Timed repeats of each measured run (default 20)", "N" },
    { "spread", 0, 0, G_OPTION_ARG_NONE, &spread,
      "With --measure: run the best and K−1 others spread evenly over the ranking (not the K best)", NULL },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &timeout, "Stop each measured run after this many seconds (default 300)", "S" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(NapkinTuneResult) result = NULL;
  g_autoptr(json_object) measured = NULL;
  double rho = NAN;
  g_autoptr(GError) error = NULL;
  NapkinTuneOptions options = { 0 };
  NapkinArch *arch;
  NapkinDiagram *base = NULL;   /* the diagram the candidates relabel */
  gint64 start;
  double elapsed;
  int rc;

  context = napkin_cli_context_new ("tune", "FILE",
                                    "Enumerate the legal tile and stream sizes of every region under the "
                                    "capacity and “multiple of” constraints, rank them by predicted time "
                                    "and print the best.", entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 2)
    return napkin_cli_usage_error ("tune", _("expected exactly one FILE"));
  if (!napkin_cli_text_or_json ("tune", format, &as_json))
    return NAPKIN_CLI_USAGE;
  if (top < 1 || top > 1000)
    return napkin_cli_usage_error ("tune", _("--top: expected 1 to 1000, not %d"), top);
  if (measure < 0 || measure > 100 || repeats < 1 || timeout < 1)
    return napkin_cli_usage_error ("tune", _("--measure takes 0 to 100 runs; --repeats and --timeout must be positive"));
  if (measure > 0 && dtype_str != NULL)
    return napkin_cli_usage_error ("tune", _("--measure runs the file's own element types: leave out --dtype"));
#ifndef HAVE_RUNNER
  if (measure > 0)
    return napkin_cli_usage_error ("tune", _("--measure: this napkin-cli was built without the GPU runner"));
#endif
  if (measure > top)
    top = measure;
  if (measure > 0 && spread)
    top = MAX (top, 1000);
  if (!napkin_cli_parse_dtype ("tune", dtype_str, &options.has_dtype, &options.dtype))
    return NAPKIN_CLI_USAGE;
  if ((arch = napkin_cli_lookup_arch ("tune", arch_id)) == NULL)
    return NAPKIN_CLI_USAGE;
  if ((rc = napkin_cli_load_or_report ("tune", argv[1], &overrides, &diagram)) != NAPKIN_CLI_OK)
    return rc;
  options.top_k = top;
  /* --measure checks the ranking of the drawn regions' relabelings; --dtype asks how the
   * drawn regions fare in other types (the plan's own partition may differ there) */
  options.regions_are_hints = measure == 0 && !options.has_dtype;
  start = g_get_monotonic_time ();
  /* A diagram without regions: derive the whole partition, one kernel or many
   * (docs/plan.md, "Deriving a diagram") */
  if ((napkin_diagram_n_regions (diagram) == 0 || derive) && measure == 0)
    {
      g_autoptr(NapkinDerivation) dr = napkin_derive (diagram, arch, &options, &error);

      if (dr == NULL)
        {
          fprintf (stderr, "%s: %s\n", argv[1], error->message);
          return NAPKIN_CLI_FAILED;
        }
      return print_derivation (argv[1], arch, dr, (g_get_monotonic_time () - start) / 1e6, as_json, write);
    }
  result = napkin_tune (diagram, arch, &options, &error);
  elapsed = (g_get_monotonic_time () - start) / 1e6;
  if (result == NULL)
    {
      fprintf (stderr, "%s: %s\n", argv[1], error->message);
      return NAPKIN_CLI_FAILED;
    }
  if (result->best->len == 0)
    {
      fprintf (stderr, _("%s: no feasible tiles on %s among %u tried\n"), argv[1], arch->id, result->evaluated);
      return NAPKIN_CLI_FAILED;
    }
  /* a diagram without regions: the search ran on the regions the model proposed */
  base = result->relabeled != NULL ? result->relabeled : diagram;
  if (result->proposed != NULL && !as_json)
    {
      if (result->regions_replaced)
        printf (_("%s: its regions, as drawn, are not within %.0f %% of the best the model finds, and the plan's "
                  "own partition of the diagram without them is; the search starts from that partition (regions "
                  "are hints, docs/plan.md):\n"), argv[1], 100 * NAPKIN_TUNE_RESOLUTION);
      else
        printf ("%s has no regions; the search starts from its derivation:\n", argv[1]);
      for (guint i = 0; result->proposed[i]; i++)
        printf ("  %s\n", result->proposed[i]);
      printf ("\n");
    }

#ifdef HAVE_RUNNER
  if (measure > 0)
    measured = tune_measure (result, base, arch, measure, spread, repeats, timeout, as_json, &rho);
#endif
  if (as_json)
    print_tune_json (result, arch, elapsed, measured, rho);
  else
    print_tune_text (argv[1], result, arch, elapsed, measured, rho);
  if (measure > 0 && !measured_any (measured))
    {
      fprintf (stderr, _("%s: tune --measure: no relabeling ran on a GPU (see each run's status above)\n"), argv[1]);
      return NAPKIN_CLI_FAILED;
    }
  return write ? tune_write (argv[1], result, arch) : NAPKIN_CLI_OK;
}
