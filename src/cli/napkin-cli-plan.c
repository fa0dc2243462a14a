/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <stdio.h>

#include "napkin-cli.h"
#include "napkin-plan.h"
#include "napkin-shard.h"

/* napkin-cli plan: the kernel plan (docs/plan.md) of a diagram on an architecture, as
 * JSON (--format json) or one paragraph per kernel. */

static void
print_text (const NapkinPlan *plan,
            NapkinDiagram    *d,
            const char       *path)
{
  printf ("%s on %s (%s): %u kernel%s%s\n", path, plan->arch->id, plan->target, plan->kernels->len,
          plan->kernels->len == 1 ? "" : "s", plan->feasible ? "" : ", INFEASIBLE");
  for (guint i = 0; i < plan->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (plan->kernels, i);

      printf ("\n%u. %s — %s on %s\n", i + 1, k->name, napkin_plan_kind_to_string (k->kind),
              napkin_path_to_string (k->path));
      if (k->note != NULL)
        printf ("   %s\n", k->note);
      if (k->grid > 0)
        printf ("   grid %" G_GINT64_FORMAT " × %u threads, %" G_GINT64_FORMAT " B shared memory a block, ~%u "
                "registers a thread\n", k->grid, k->threads, k->smem_bytes, k->registers);
      else   /* the generic lowering sizes its own launch */
        printf ("   grid and footprint as the generic lowering launches it\n");
      if (k->reason != NULL)
        printf ("   generic because: %s\n", k->reason);
      if (k->best_note != NULL)
        printf ("   best path: %s\n", k->best_note);
      for (guint j = 0; j < k->adjustments->len; j++)
        printf ("   adjusted: %s\n", (const char *) g_ptr_array_index (k->adjustments, j));
      if (!k->feasible)
        printf ("   INFEASIBLE: %s\n", k->infeasible);
    }
  if (plan->scratch_bytes > 0)
    printf ("\nscratch in device memory: %" G_GINT64_FORMAT " B\n", plan->scratch_bytes);
  (void) d;
}

/* plan --gpus N (docs/multi-gpu.md). */
static int
plan_gpus (NapkinDiagram *diagram,
           NapkinArch    *arch,
           guint          gpus,
           gboolean       json,
           const char    *file)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinShardPlan) shard = napkin_shard_plan_build (diagram, arch, gpus, &error);

  if (shard == NULL)
    {
      fprintf (stderr, "%s: %s\n", file, error->message);
      return NAPKIN_CLI_FAILED;
    }
  if (json)
    {
      json_object *root = napkin_shard_plan_to_json (shard);

      json_object_object_add (root, "file", json_object_new_string (file));
      json_object_object_add (root, "plan", napkin_plan_to_json (shard->plan));
      printf ("%s\n", json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                                              | JSON_C_TO_STRING_NOSLASHESCAPE));
      json_object_put (root);
      return shard->plan->feasible ? NAPKIN_CLI_OK : NAPKIN_CLI_FAILED;
    }
  printf ("%s on %u GPUs", file, shard->gpus);
  if (shard->axis != NULL)
    printf (": %s = %" G_GINT64_FORMAT " split across them, %" G_GINT64_FORMAT " per GPU",
            shard->axis, shard->axis_size, shard->axis_size / shard->gpus);
  printf ("\n\nCollectives (before kernel; %u = after the last):\n", shard->plan->kernels->len + 1);
  for (guint i = 0; i < shard->collectives->len; i++)
    {
      const NapkinCollective *c = g_ptr_array_index (shard->collectives, i);

      printf ("  before %u: %s of %s (%s → %s), %" G_GINT64_FORMAT " B per rank, %.1f µs at %.0f GB/s bus\n",
              c->before_kernel + 1, napkin_collective_to_string (c->kind), c->tensor, c->src, c->dst,
              c->bytes, c->seconds * 1e6, c->bus_bandwidth / 1e9);
    }
  if (shard->collectives->len == 0)
    printf ("  none\n");
  printf ("\nOne GPU's kernels: ");
  print_text (shard->plan, shard->shard, file);
  return shard->plan->feasible ? NAPKIN_CLI_OK : NAPKIN_CLI_FAILED;
}

int
napkin_cli_plan (int    argc,
                 char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  g_autofree char *arch_id = NULL;
  g_autofree char *format = NULL;
  g_autofree char *dtype_str = NULL;
  gboolean json = FALSE, generic = FALSE;
  int gpus = G_MININT;   /* not given */
  const GOptionEntry entries[] = {
    { "arch", 0, 0, G_OPTION_ARG_STRING, &arch_id, "Architecture id (napkin-cli archs) or sm_XY; default h100", "ID" },
    { "gpus", 0, 0, G_OPTION_ARG_INT, &gpus,
      "The shard plan of the diagram's gpus region on N GPUs: one GPU's kernels and the collectives (docs/multi-gpu.md)", "N" },
    NAPKIN_CLI_FORMAT_ENTRIES (format, json),
    { "generic", 0, 0, G_OPTION_ARG_NONE, &generic, "Plan every kernel on the generic lowering", NULL },
    { "dtype", 0, 0, G_OPTION_ARG_STRING, &dtype_str, "Give every tensor this element type (as analyze does)", "T" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(GError) error = NULL;
  NapkinPlanOptions options = { 0 };
  NapkinArch *arch;
  g_autofree char *infeasible = NULL;
  int rc;

  context = napkin_cli_context_new ("plan", "FILE",
                                    "The kernel plan of a relabeled diagram on a GPU: for each kernel its path "
                                    "(wgmma, mma, simt or generic, with the reason), tiles, stages, the "
                                    "operations it fuses and its footprint (docs/plan.md).", entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 2)
    return napkin_cli_usage_error ("plan", _("expected exactly one FILE"));
  if (!napkin_cli_text_or_json ("plan", format, &json))
    return NAPKIN_CLI_USAGE;
  if ((arch = napkin_cli_lookup_arch ("plan", arch_id)) == NULL)
    return NAPKIN_CLI_USAGE;
  if (!napkin_cli_parse_dtype ("plan", dtype_str, &options.has_dtype, &options.dtype))
    return NAPKIN_CLI_USAGE;
  /* the options first, then the file: a usage error is exit 2 before any work */
  if (gpus != G_MININT && (gpus < 1 || gpus > 1024))
    return napkin_cli_usage_error ("plan", "--gpus: %d is not a GPU count from 1 to 1024", gpus);
  if ((rc = napkin_cli_load_or_report ("plan", argv[1], &overrides, &diagram)) != NAPKIN_CLI_OK)
    return rc;
  gpus = napkin_cli_gpus_or_region (diagram, gpus);
  /* one GPU: the whole diagram, as without a gpus region (docs/multi-gpu.md) */
  if (gpus > 1)
    return plan_gpus (diagram, arch, gpus, json, argv[1]);
  options.generic_only = generic;
  plan = napkin_plan_build (diagram, arch, &options, &error);
  if (plan == NULL)
    {
      fprintf (stderr, "%s: %s\n", argv[1], error->message);
      return NAPKIN_CLI_FAILED;
    }
  /* The model prices this plan: where it calls the relabeling infeasible, so does
   * plan (analyze's first error, exit 1). */
  infeasible = napkin_cli_infeasible_reason (diagram, arch, options.has_dtype, options.dtype);
  if (json)
    {
      json_object *root = napkin_plan_to_json (plan);

      if (infeasible != NULL)
        {
          json_object_object_add (root, "feasible", json_object_new_boolean (FALSE));
          json_object_object_add (root, "infeasible", json_object_new_string (infeasible));
        }
      json_object_object_add (root, "file", json_object_new_string (argv[1]));
      printf ("%s\n", json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                                              | JSON_C_TO_STRING_NOSLASHESCAPE));
      json_object_put (root);
    }
  else
    print_text (plan, diagram, argv[1]);
  if (infeasible != NULL)
    fprintf (stderr, _("%s: INFEASIBLE on %s: %s\n"), argv[1], arch->id, infeasible);
  return plan->feasible && infeasible == NULL ? NAPKIN_CLI_OK : NAPKIN_CLI_FAILED;
}
