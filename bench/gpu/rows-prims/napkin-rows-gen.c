/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Prints a self-contained .cu for one row problem: the plan's rows kernel as Napkin
 * prints it, then a description of its arguments for rows-harness.cu, which checks
 * it against an fp64 reference on the GPU and times it (bench/gpu/rows-prims/check).
 *
 *   napkin-rows-gen --op softmax --rows 4096 --cols 50257 --x fp16 --y fp32
 *                   [--gamma] [--beta] [--residual] [--scale A] [--batch B]
 *                   [--region-rows N] [--stream N] [--threads T] [--arch h100] [--plan]
 *                   [--strided]
 * --strided stores X as [b, c, r]: the op runs over c, not the last axis (the strided
 * form, docs/plan.md "Rows over any axis"; rows-harness.cu checks it too). The model's
 * prediction for the problem is printed as H_PREDICTED_MS. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "napkin-file.h"
#include "napkin-model.h"
#include "napkin-test-plan-cuda.h"
#include "napkin-test-rows.h"

static int
dtype_code (NapkinDtype d)
{
  switch (d)
    {
    case NAPKIN_DTYPE_FP16: return 1;
    case NAPKIN_DTYPE_BF16: return 2;
    default: return 0;
    }
}

int
main (int    argc,
      char **argv)
{
  NapkinTestRows t = { .op = "softmax", .rows = 1024, .cols = 1024, .x_dtype = "fp16" };
  gint64 rows = 0, cols = 0, batch = 0, region_rows = 0, stream = 0;
  int threads = 0;
  gboolean gamma = FALSE, beta = FALSE, residual = FALSE, show_plan = FALSE, fuse = FALSE, strided = FALSE;
  double scale = 0;
  g_autofree char *op = NULL, *xd = NULL, *yd = NULL, *arch_id = NULL;
  GOptionEntry entries[] = {
    { "op", 0, 0, G_OPTION_ARG_STRING, &op, "softmax, layernorm, rmsnorm, sum, max, mean", "OP" },
    { "rows", 0, 0, G_OPTION_ARG_INT64, &rows, "rows", "N" },
    { "cols", 0, 0, G_OPTION_ARG_INT64, &cols, "columns", "N" },
    { "batch", 0, 0, G_OPTION_ARG_INT64, &batch, "a leading batch axis", "N" },
    { "x", 0, 0, G_OPTION_ARG_STRING, &xd, "input type", "DTYPE" },
    { "y", 0, 0, G_OPTION_ARG_STRING, &yd, "output type", "DTYPE" },
    { "gamma", 0, 0, G_OPTION_ARG_NONE, &gamma, "·G[c] after", NULL },
    { "beta", 0, 0, G_OPTION_ARG_NONE, &beta, "+B[c] after", NULL },
    { "residual", 0, 0, G_OPTION_ARG_NONE, &residual, "+R[r,c] before", NULL },
    { "scale", 0, 0, G_OPTION_ARG_DOUBLE, &scale, "a scale before", "A" },
    { "fuse", 0, 0, G_OPTION_ARG_NONE, &fuse, "a region (no marks) around the op and its maps", NULL },
    { "region-rows", 0, 0, G_OPTION_ARG_INT64, &region_rows, "a region grouping rows", "N" },
    { "stream", 0, 0, G_OPTION_ARG_INT64, &stream, "the region streams c", "N" },
    { "threads", 0, 0, G_OPTION_ARG_INT, &threads, "the region's threads", "N" },
    { "arch", 0, 0, G_OPTION_ARG_STRING, &arch_id, "architecture id (default h100)", "ID" },
    { "plan", 0, 0, G_OPTION_ARG_NONE, &show_plan, "print the plan as JSON on stderr", NULL },
    { "strided", 0, 0, G_OPTION_ARG_NONE, &strided, "X stored [b, c, r]: the op over a non-last axis", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) oc = g_option_context_new ("- print a rows kernel with its check harness");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = NULL;
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(NapkinCudaModule) module = NULL;
  g_autofree char *json = NULL;
  NapkinArch *arch;
  const NapkinPlanKernel *k = NULL;
  const NapkinCudaKernel *ck = NULL;
  guint ki = 0;

  g_option_context_add_main_entries (oc, entries, NULL);
  if (!g_option_context_parse (oc, &argc, &argv, &error))
    {
      fprintf (stderr, "napkin-rows-gen: %s\n", error->message);
      return 2;
    }
  if (op) t.op = op;
  if (rows) t.rows = rows;
  if (cols) t.cols = cols;
  if (xd) t.x_dtype = xd;
  t.y_dtype = yd;
  t.batch = batch;
  t.gamma = gamma;
  t.beta = beta;
  t.residual = residual;
  t.scale = scale;
  t.fuse = fuse;
  t.region_rows = region_rows;
  t.stream_cols = stream;
  t.threads = threads;
  t.col_major = strided;

  json = napkin_test_rows_json (&t);
  d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  arch = d ? napkin_arch_registry_lookup (napkin_arch_registry_get_default (), arch_id ? arch_id : "h100", &error)
           : NULL;
  if (arch != NULL)
    module = napkin_test_plan_cuda (d, arch, "napkin_rows_k", &plan, &error);
  if (module == NULL)
    {
      fprintf (stderr, "napkin-rows-gen: %s\n", error->message);
      return 1;
    }
  if (show_plan)
    {
      json_object *pj = napkin_plan_to_json (plan);

      fprintf (stderr, "%s\n", json_object_to_json_string_ext (pj, JSON_C_TO_STRING_PRETTY));
      json_object_put (pj);
    }
  for (guint i = 0; i < plan->kernels->len && k == NULL; i++)
    if (((NapkinPlanKernel *) g_ptr_array_index (plan->kernels, i))->kind == NAPKIN_PLAN_ROWS)
      k = g_ptr_array_index (plan->kernels, ki = i);
  if (k != NULL)
    {
      g_autofree char *kname = g_strdup_printf ("napkin_rows_k%u", ki);

      for (guint i = 0; i < module->kernels->len; i++)
        if (g_str_equal (((NapkinCudaKernel *) g_ptr_array_index (module->kernels, i))->name, kname))
          ck = g_ptr_array_index (module->kernels, i);
    }
  if (k == NULL || ck == NULL || plan->kernels->len != 1)
    {
      const NapkinPlanKernel *g = g_ptr_array_index (plan->kernels, 0);

      fprintf (stderr, "napkin-rows-gen: the plan is not one rows kernel (%u kernels; the first, %s: %s)\n",
               plan->kernels->len, g->name, g->reason ? g->reason : napkin_plan_kind_to_string (g->kind));
      return 1;
    }

  printf ("%s\n", module->source);
  printf ("\n/* ---- the problem, for rows-harness.cu ---- */\n");
  printf ("/* plan: %s */\n", k->note);
  printf ("#define H_KERNEL %s\n#define H_GRID %" G_GINT64_FORMAT "\n#define H_THREADS %u\n#define H_DYN_SMEM %"
          G_GINT64_FORMAT "\n", ck->name, ck->grid, ck->threads, ck->dynamic_smem);
  printf ("#define H_OP %d\n", g_str_equal (t.op, "softmax") ? 0 : g_str_equal (t.op, "layernorm") ? 1
                             : g_str_equal (t.op, "rmsnorm") ? 2 : g_str_equal (t.op, "sum") ? 3
                             : g_str_equal (t.op, "max") ? 4 : 5);
  printf ("#define H_ROWS %" G_GINT64_FORMAT "L\n#define H_COLS %" G_GINT64_FORMAT "L\n", k->u.rows.rows,
          k->u.rows.cols);
  printf ("#define H_OUTER %" G_GINT64_FORMAT "L\n#define H_INNER %" G_GINT64_FORMAT "L\n",
          k->u.rows.inner > 1 ? k->u.rows.outer : k->u.rows.rows, MAX (k->u.rows.inner, 1));
  {
    g_autoptr(GError) aerror = NULL;
    NapkinAnalysis *a = napkin_analyze (d, arch, NULL, &aerror);

    printf ("#define H_PREDICTED_MS %.5f\n", a != NULL ? a->predicted_time_s * 1e3 : 0.0);
    g_clear_pointer (&a, napkin_analysis_free);
  }
  printf ("#define H_SCALE %.17g\n#define H_EPS 1e-5\n", scale != 0 ? scale : 1.0);
  printf ("#define H_NSLOTS %u\nstruct HSlot { char role; int dtype; long n; };\n", module->args->len);
  printf ("static const HSlot h_slots[] = {\n");
  for (guint s = 0; s < module->args->len; s++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (module->program, g_array_index (module->args, int, s));
      const NapkinTensor *tensor = b->tensor >= 0 ? napkin_diagram_tensor (d, b->tensor) : NULL;

      printf ("  { '%c', %d, %" G_GINT64_FORMAT "L },\n", tensor ? tensor->name[0] : 'S', dtype_code (b->dtype),
              napkin_ir_buffer_elements (b));
    }
  printf ("};\n#include \"rows-harness.cu\"\n");
  return 0;
}
