/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The plan's rows kernels, run on the CPU (docs/plan.md, "Rows over any axis"): each
 * problem's kernel as its printer prints it, compiled with g++ against
 * tests/plan/simt-emu.hh (every CUDA thread a fiber, barriers and shuffles waited out,
 * vector alignment and buffer bounds checked), run on the seeded inputs of the CPU
 * interpreter, and compared with what the interpreter computes from the plain diagram
 * (float64, stores rounded to their types). Skipped without g++. Timing and the GPU's
 * own behaviour are bench/gpu/rows-prims/check-strided's. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <json-c/json.h>

#include "napkin-backward.h"
#include "napkin-codegen-private.h"
#include "napkin-file.h"
#include "napkin-interp.h"
#include "napkin-test-diagrams.h"
#include "napkin-test-load.h"
#include "napkin-test-plan-cuda.h"
#include "napkin-test-rows.h"

static char *gxx;

static const char *
emu_ctype (NapkinDtype d)
{
  return d == NAPKIN_DTYPE_FP16 ? "napkin_f16" : d == NAPKIN_DTYPE_BF16 ? "napkin_bf16"
         : d == NAPKIN_DTYPE_INT8 ? "signed char" : "float";
}

/* main (): the argument slots from DIR/sN.in (doubles, stored in their types), every
 * kernel of the module launched in order, the outputs written to DIR/sN.out. */
static char *
emu_main (const NapkinCudaModule *module)
{
  GString *s = g_string_new ("\nint\nmain (int argc, char **argv)\n{\n  NapkinArgs args = {};\n  char path[4096];\n\n"
                             "  (void) argc;\n");

  for (guint i = 0; i < module->args->len; i++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (module->program, g_array_index (module->args, int, i));
      gint64 n = napkin_ir_buffer_elements (b);
      const char *ct = emu_ctype (b->dtype);

      g_string_append_printf (s, "  {\n    %s *p = (%s *) nk_emu_alloc (%" G_GINT64_FORMAT " * sizeof (%s));\n"
                                 "    FILE *f;\n\n    args.p[%u] = p;\n"
                                 "    snprintf (path, sizeof path, \"%%s/s%u.in\", argv[1]);\n"
                                 "    f = fopen (path, \"rb\");\n"
                                 "    for (long i = 0; i < %" G_GINT64_FORMAT "; i++)\n      {\n"
                                 "        double v = NAN;\n\n"
                                 "        if (f != nullptr && fread (&v, 8, 1, f) != 1)\n          return 2;\n"
                                 "        napkin_st (p + i, (float) v);\n      }\n"
                                 "    if (f != nullptr)\n      fclose (f);\n  }\n",
                              ct, ct, n, ct, i, i, n);
    }
  /* the plan's scratch and the kernels' workspace, poisoned (NaN): a kernel must write what
   * it reads there */
  if (module->workspace_slot >= 0)
    g_string_append_printf (s, "  args.p[%d] = nk_emu_alloc (%" G_GINT64_FORMAT ");\n"
                               "  memset (args.p[%d], 0xff, %" G_GINT64_FORMAT ");\n",
                            module->workspace_slot, module->workspace_bytes, module->workspace_slot,
                            module->workspace_bytes);
  for (guint k = 0; k < module->kernels->len; k++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (module->kernels, k);

      g_string_append_printf (s, "  nk_emu_launch (%s, %" G_GINT64_FORMAT ", %u, %" G_GINT64_FORMAT ", args);\n",
                              ck->name, ck->grid, ck->threads, ck->dynamic_smem);
    }
  for (guint i = 0; i < module->args->len; i++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (module->program, g_array_index (module->args, int, i));
      const char *ct = emu_ctype (b->dtype);

      if (b->role != NAPKIN_BUF_OUTPUT)
        continue;
      g_string_append_printf (s, "  {\n    const %s *p = (const %s *) args.p[%u];\n    FILE *f;\n\n"
                                 "    snprintf (path, sizeof path, \"%%s/s%u.out\", argv[1]);\n"
                                 "    f = fopen (path, \"wb\");\n"
                                 "    for (long i = 0; i < %" G_GINT64_FORMAT "; i++)\n      {\n"
                                 "        double v = napkin_ld (p + i);\n\n        fwrite (&v, 8, 1, f);\n      }\n"
                                 "    fclose (f);\n  }\n",
                              ct, ct, i, i, napkin_ir_buffer_elements (b));
    }
  g_string_append (s, "  return 0;\n}\n");
  return g_string_free (s, FALSE);
}

static void
run (const char *cmd_dir,
     const char *const *argv,
     const char *what)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;

  g_spawn_sync (cmd_dir, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("%s failed (%s):\n%s%s", argv[0], what, out, err);
}

/* The largest |y − ref| over the largest |ref|, NaN (an element never written) as ∞. */
static double
compare (const double *y,
         const double *ref,
         gint64        n)
{
  double e = 0, m = 0;

  for (gint64 i = 0; i < n; i++)
    {
      if (isnan (y[i]) || isinf (y[i]))
        return INFINITY;
      e = MAX (e, fabs (y[i] - ref[i]));
      m = MAX (m, fabs (ref[i]));
    }
  return m > 0 ? e / m : e;
}

static double
dtype_tolerance (const char *dtype)
{
  return g_str_equal (dtype, "fp32") ? 1e-4 : g_str_equal (dtype, "bf16") ? 1e-2 : 2e-3;
}

/* Runs every kernel of `module` through the emulation on the interpreter's seeded inputs
 * and returns the largest relative difference of its outputs from the interpreter's. */
static double
emulate_module (const NapkinCudaModule *module,
                NapkinDiagram          *d,
                const char             *what)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("napkin-emu-XXXXXX", &error);
  g_autofree char *cc = g_build_filename (dir, "k.cc", NULL);
  g_autofree char *exe = g_build_filename (dir, "k", NULL);
  g_autofree char *emu = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "plan", "simt-emu.hh", NULL);
  g_autoptr(GString) src = NULL;
  g_autofree char *main_text = NULL;
  NapkinTensorSet *set;
  double worst = 0;

  g_assert_no_error (error);
  /* the reference, and the inputs it was computed from */
  set = napkin_tensor_set_new_random (d, 7);
  g_assert_true (napkin_ir_interpret (module->program, set, &error));
  g_assert_no_error (error);
  for (guint i = 0; i < module->args->len; i++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (module->program, g_array_index (module->args, int, i));
      g_autofree char *path = g_strdup_printf ("%s/s%u.in", dir, i);

      if (b->role == NAPKIN_BUF_INPUT)
        g_assert_true (g_file_set_contents (path, (const char *) set->values[b->tensor],
                                            (gssize) (set->elements[b->tensor] * sizeof (double)), NULL));
    }

  src = g_string_new ("#include \"");
  g_string_append_printf (src, "%s\"\n", emu);
  g_string_append (src, module->source);
  g_string_replace (src, "extern __shared__ __align__ (1024) unsigned char smem_raw_u8_[];",
                    "unsigned char *smem_raw_u8_ = nk_emu_dyn_smem;", 0);
  g_string_replace (src, "extern __shared__ __align__ (16) unsigned char smem9_[];",
                    "unsigned char *smem9_ = nk_emu_dyn_smem;", 0);
  g_string_replace (src, "extern __shared__ __align__ (16) unsigned char smem9p_[];",
                    "unsigned char *smem9p_ = nk_emu_dyn_smem;", 0);
  main_text = emu_main (module);
  g_string_append (src, main_text);
  g_assert_true (g_file_set_contents (cc, src->str, -1, NULL));
  {
    const char *argv[] = { gxx, "-std=c++17", "-O1", "-w", "-o", exe, cc, NULL };

    run (dir, argv, what);
  }
  {
    const char *argv[] = { exe, dir, NULL };

    run (dir, argv, what);
  }

  for (guint i = 0; i < module->args->len; i++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (module->program, g_array_index (module->args, int, i));
      g_autofree char *path = g_strdup_printf ("%s/s%u.out", dir, i);
      g_autofree char *bytes = NULL;
      gsize len = 0;

      if (b->role != NAPKIN_BUF_OUTPUT)
        continue;
      g_assert_true (g_file_get_contents (path, &bytes, &len, NULL));
      g_assert_cmpuint (len, ==, set->elements[b->tensor] * sizeof (double));
      {
        const double e = compare ((const double *) bytes, set->values[b->tensor], set->elements[b->tensor]);

        g_test_message ("%s: %s: max |y − ref| / max |ref| = %.3g", what,
                        napkin_diagram_tensor (d, (guint) b->tensor)->name, e);
        worst = MAX (worst, e);
      }
      g_unlink (path);
    }
  napkin_tensor_set_free (set);
  for (guint i = 0; i < module->args->len; i++)
    {
      g_autofree char *path = g_strdup_printf ("%s/s%u.in", dir, i);

      g_unlink (path);
    }
  g_unlink (cc);
  g_unlink (exe);
  g_rmdir (dir);
  return worst;
}

static void
emulate (const NapkinTestRows *t,
         gboolean              strided,
         const char           *form)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *json = NULL;
  g_autoptr(NapkinDiagram) d = NULL;
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(NapkinCudaModule) module = NULL;
  g_autofree char *what = g_strdup_printf ("%s %s b%" G_GINT64_FORMAT " %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT
                                           "%s", t->op, t->x_dtype, t->batch, t->rows, t->cols,
                                           t->col_major ? " (strided)" : "");
  const NapkinPlanKernel *k;
  double tol, worst;

  json = napkin_test_rows_json (t);
  d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  module = napkin_test_plan_cuda (d, napkin_test_arch ("h100"), "emu_k", &plan, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (plan->kernels->len, ==, 1);
  k = g_ptr_array_index (plan->kernels, 0);
  if (k->kind != NAPKIN_PLAN_ROWS)
    g_error ("%s: not a rows kernel (%s)", what, k->reason);
  g_assert_cmpint (k->u.rows.inner > 1, ==, strided);
  if (form != NULL && strstr (k->note, form) == NULL)
    g_error ("%s: the plan's note “%s” lacks “%s”", what, k->note, form);
  if (g_strcmp0 (g_getenv ("NAPKIN_ROWS_SPLIT"), "0") == 0 && k->u.rows.split > 1)
    g_error ("%s: split in %u chunks with NAPKIN_ROWS_SPLIT=0", what, k->u.rows.split);
  g_test_message ("%s: %s", what, k->note);

  worst = emulate_module (module, d, what);
  /* the reference rounds the values between its kernels to their types (x's) */
  tol = MAX (dtype_tolerance (t->x_dtype), dtype_tolerance (t->y_dtype ? t->y_dtype : t->x_dtype));
  g_test_message ("%s: max |y − ref| / max |ref| = %.3g", what, worst);
  if (!(worst <= tol))
    g_error ("%s: max |y − ref| / max |ref| = %.3g (tolerance %.1g)", what, worst, tol);
}

/* Over the first axis (X[c, r], the reduced c outermost) and a middle one (X[b, c, r]):
 * each form (registers, shared memory, two passes, a reduction), odd sizes (columns
 * not a multiple of a vector, blocks past the last column), fused maps whose operands
 * broadcast, run along the columns or are gathered. */
static void
test_strided (void)
{
  struct { NapkinTestRows t; const char *form; } cases[] = {
    { { .op = "softmax", .rows = 256, .cols = 64, .x_dtype = "fp16", .col_major = TRUE }, "registers" },
    { { .op = "softmax", .rows = 1000, .cols = 333, .x_dtype = "fp16", .col_major = TRUE }, NULL },
    { { .op = "layernorm", .rows = 80, .cols = 5000, .x_dtype = "bf16", .y_dtype = "fp32", .col_major = TRUE,
        .gamma = TRUE, .beta = TRUE }, "shared memory" },
    /* softmax in shared memory: the max in the sweep, then Σ exp from the kept columns */
    { { .op = "softmax", .rows = 80, .cols = 5000, .x_dtype = "fp16", .col_major = TRUE }, "shared memory" },
    { { .op = "softmax", .rows = 300, .cols = 700, .x_dtype = "bf16", .col_major = TRUE, .scale = 0.5, .fuse = TRUE },
      NULL },
    { { .op = "rmsnorm", .rows = 40, .cols = 9000, .x_dtype = "fp32", .col_major = TRUE, .gamma = TRUE },
      "two passes" },
    { { .op = "softmax", .batch = 2, .rows = 24, .cols = 5000, .x_dtype = "fp16", .y_dtype = "fp32",
        .col_major = TRUE, .residual = TRUE, .r_row_major = TRUE, .scale = 0.5, .fuse = TRUE }, "two passes" },
    { { .op = "layernorm", .batch = 2, .rows = 24, .cols = 8000, .x_dtype = "fp16", .col_major = TRUE,
        .gamma = TRUE, .beta = TRUE, .act = "gelu", .fuse = TRUE }, "two passes" },
    { { .op = "sum", .rows = 520, .cols = 77, .x_dtype = "fp16", .y_dtype = "fp32", .col_major = TRUE }, "one pass" },
    { { .op = "max", .batch = 5, .rows = 9, .cols = 300, .x_dtype = "bf16", .col_major = TRUE }, "one pass" },
    { { .op = "mean", .batch = 4, .rows = 64, .cols = 1100, .x_dtype = "fp32", .col_major = TRUE, .residual = TRUE,
        .fuse = TRUE },
      "one pass" },
    { { .op = "rmsnorm", .batch = 2, .rows = 6, .cols = 50, .x_dtype = "bf16", .col_major = TRUE, .threads = 64,
        .region_rows = 1 }, NULL },
    /* a long axis over few columns, in chunks (the last one short) and two launches */
    { { .op = "softmax", .rows = 16, .cols = 9001, .x_dtype = "bf16", .col_major = TRUE }, "chunks" },
    { { .op = "max", .rows = 40, .cols = 7000, .x_dtype = "fp16", .col_major = TRUE }, "chunks" },
    { { .op = "sum", .batch = 3, .rows = 8, .cols = 20000, .x_dtype = "fp16", .y_dtype = "fp32", .col_major = TRUE },
      "chunks" },
  };
  /* the same whole (NAPKIN_ROWS_SPLIT=0): one launch, as before the split */
  guint whole[] = { 5, 6, 7, 10, 12, 13, 14 };

  if (gxx == NULL)
    {
      g_test_skip ("no g++ to build the emulation");
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    emulate (&cases[i].t, TRUE, cases[i].form);
  g_setenv ("NAPKIN_ROWS_SPLIT", "0", TRUE);
  for (guint i = 0; i < G_N_ELEMENTS (whole); i++)
    emulate (&cases[whole[i]].t, TRUE, "pass");
  g_unsetenv ("NAPKIN_ROWS_SPLIT");
}

/* The contiguous rows kernel through the same emulation: one problem of each form. */
static void
test_contiguous (void)
{
  struct { NapkinTestRows t; const char *form; } cases[] = {
    { { .op = "softmax", .rows = 70, .cols = 1000, .x_dtype = "fp16" }, "registers" },
    /* rows not 16 bytes apart: γ and β met off their alignment at most rows, read as the
     * aligned vectors that cover them, shifted (2- and 4-byte elements) */
    { { .op = "layernorm", .rows = 19, .cols = 1003, .x_dtype = "bf16", .gamma = TRUE, .beta = TRUE }, "registers" },
    { { .op = "rmsnorm", .rows = 13, .cols = 999, .x_dtype = "fp32", .gamma = TRUE }, "registers" },
    { { .op = "softmax", .rows = 9, .cols = 40001, .x_dtype = "bf16" }, "shared memory" },
    /* a norm alone is read twice; with a residual before it and a region of 256 threads
     * (too few to hold the row in registers), its fp32 sum kept */
    { { .op = "layernorm", .rows = 9, .cols = 40001, .x_dtype = "bf16", .gamma = TRUE, .beta = TRUE },
      "two passes" },
    { { .op = "layernorm", .rows = 7, .cols = 20001, .x_dtype = "bf16", .residual = TRUE, .fuse = TRUE,
        .gamma = TRUE, .beta = TRUE, .threads = 256 }, "shared memory" },
    { { .op = "rmsnorm", .rows = 5, .cols = 70001, .x_dtype = "fp32", .residual = TRUE, .fuse = TRUE }, "two passes" },
    { { .op = "sum", .rows = 33, .cols = 999, .x_dtype = "fp16", .y_dtype = "fp32" }, "one pass" },
  };

  if (gxx == NULL)
    {
      g_test_skip ("no g++ to build the emulation");
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    emulate (&cases[i].t, FALSE, cases[i].form);
}

/* The diagram of `json` (valid), planned for the H100 and printed: the module. */
static NapkinCudaModule *
plan_json (const char     *json,
           NapkinDiagram **d,
           NapkinPlan    **plan)
{
  g_autoptr(GError) error = NULL;
  NapkinCudaModule *module;

  *d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  module = napkin_test_plan_cuda (*d, napkin_test_arch ("h100"), "emu_k", plan, &error);
  g_assert_no_error (error);
  return module;
}

/* The module's outputs within `dtype`'s tolerance of the interpreter's; FALSE (the test
 * skipped) without g++. */
static gboolean
check_emulation (const NapkinCudaModule *module,
                 NapkinDiagram          *d,
                 const char             *what,
                 const char             *dtype)
{
  double worst;

  if (gxx == NULL)
    {
      g_test_skip ("no g++ to build the emulation");
      return FALSE;
    }
  worst = emulate_module (module, d, what);
  g_test_message ("%s: max |y − ref| / max |ref| = %.3g", what, worst);
  if (!(worst <= dtype_tolerance (dtype)))
    g_error ("%s: max |y − ref| / max |ref| = %.3g (tolerance %.1g)", what, worst, dtype_tolerance (dtype));
  return TRUE;
}

/* An output wired straight from an input: the plan's element-wise copy kernel stores
 * it, transposed and converted (docs/plan.md), beside the input's other consumer; the
 * lowering's copy computes the reference. */
static void
test_input_copy (void)
{
  static const char json[] =
    "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"m\",\"size\":37},{\"name\":\"n\",\"size\":24}],"
    "\"tensors\":[{\"name\":\"X\",\"axes\":[\"m\",\"n\"],\"dtype\":\"fp16\"},"
    "{\"name\":\"Y\",\"axes\":[\"n\",\"m\"],\"dtype\":\"fp32\"},{\"name\":\"Z\",\"axes\":[\"m\",\"n\"],\"dtype\":\"fp16\"}],"
    "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\"},{\"id\":\"y\",\"kind\":\"output\",\"tensor\":\"Y\"},"
    "{\"id\":\"e\",\"kind\":\"map\",\"fn\":\"exp\"},{\"id\":\"z\",\"kind\":\"output\",\"tensor\":\"Z\"}],"
    "\"wires\":[{\"from\":\"x\",\"to\":\"y\",\"port\":0},{\"from\":\"x\",\"to\":\"e\",\"port\":0},"
    "{\"from\":\"e\",\"to\":\"z\",\"port\":0}]}";
  g_autoptr(NapkinDiagram) d = NULL;
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(NapkinCudaModule) module = plan_json (json, &d, &plan);
  const NapkinPlanKernel *k;

  g_assert_cmpuint (plan->kernels->len, ==, 2);
  k = g_ptr_array_index (plan->kernels, 0);
  g_assert_cmpstr (k->name, ==, "y");
  g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ELEMENTWISE);
  g_assert_cmpint (k->path, ==, NAPKIN_PATH_SIMT);
  g_assert_cmpuint (k->u.ew.maps->len, ==, 0);
  check_emulation (module, d, "input copy", "fp16");
}

/* DiT's modulation after a LayerNorm: x[b, s, e] normalised over e, times (1 + scale)
 * and plus shift, each [b, e] — operands that vary by sequence, not by row, read at
 * row / s in the norm's epilogue (docs/plan.md, "Rows over any axis"): one kernel. */
static void
test_modulation (void)
{
  static const char json[] =
    "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"b\",\"size\":3},{\"name\":\"s\",\"size\":7},"
    "{\"name\":\"e\",\"size\":96}],"
    "\"tensors\":[{\"name\":\"X\",\"axes\":[\"b\",\"s\",\"e\"],\"dtype\":\"bf16\"},"
    "{\"name\":\"SC\",\"axes\":[\"b\",\"e\"],\"dtype\":\"bf16\"},{\"name\":\"SH\",\"axes\":[\"b\",\"e\"],\"dtype\":\"bf16\"},"
    "{\"name\":\"Y\",\"axes\":[\"b\",\"s\",\"e\"],\"dtype\":\"bf16\"}],"
    "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\"},{\"id\":\"sc\",\"kind\":\"input\",\"tensor\":\"SC\"},"
    "{\"id\":\"sh\",\"kind\":\"input\",\"tensor\":\"SH\"},"
    "{\"id\":\"norm\",\"kind\":\"normalize\",\"norm\":\"layernorm\",\"eps\":1e-6,\"axis\":\"e\"},"
    "{\"id\":\"mod\",\"kind\":\"map\",\"fn\":\"mul\"},{\"id\":\"shift\",\"kind\":\"map\",\"fn\":\"add\"},"
    "{\"id\":\"y\",\"kind\":\"output\",\"tensor\":\"Y\"}],"
    "\"wires\":[{\"from\":\"x\",\"to\":\"norm\",\"port\":0},{\"from\":\"norm\",\"to\":\"mod\",\"port\":0},"
    "{\"from\":\"sc\",\"to\":\"mod\",\"port\":1},{\"from\":\"mod\",\"to\":\"shift\",\"port\":0},"
    "{\"from\":\"sh\",\"to\":\"shift\",\"port\":1},{\"from\":\"shift\",\"to\":\"y\",\"port\":0}]}";
  g_autoptr(NapkinDiagram) d = NULL;
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(NapkinCudaModule) module = plan_json (json, &d, &plan);
  const NapkinPlanKernel *k;

  g_assert_cmpuint (plan->kernels->len, ==, 1);
  k = g_ptr_array_index (plan->kernels, 0);
  g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ROWS);
  g_assert_cmpuint (k->u.rows.epilogue->len, ==, 2);
  for (guint i = 0; i < 2; i++)
    {
      const NapkinPlanMap *m = &g_array_index (k->u.rows.epilogue, NapkinPlanMap, i);

      g_assert_true (m->has_other);
      g_assert_cmpint (m->row_div, ==, 7);
      g_assert_cmpint (m->stride[1], ==, 96);
      g_assert_cmpint (m->stride[2], ==, 1);
    }
  g_assert_nonnull (strstr (module->source, "(rr / 7L)"));
  check_emulation (module, d, "modulation", "bf16");
}

/* The plan's one kernel, which must be element-wise (`what` names the case). */
static const NapkinPlanKernel *
the_elementwise (const NapkinPlan *plan,
                 const char       *what)
{
  const NapkinPlanKernel *k;

  g_assert_cmpuint (plan->kernels->len, ==, 1);
  k = g_ptr_array_index (plan->kernels, 0);
  if (k->kind != NAPKIN_PLAN_ELEMENTWISE)
    g_error ("%s: not an element-wise kernel (%s)", what, k->reason);
  return k;
}

/* A rotary embedding as the importer writes it (docs/import.md): y = x·cos +
 * rename (x·R)·sin with R the rotate_half constant: one element-wise pass reading x
 * rotated by halves of d (docs/plan.md, "Rotary as one pass"), the product by R and its
 * rename never stored; the interpreter multiplies by R itself. Both orders of each
 * operation's operands. */
static void
test_rotary (void)
{
  static const char *const fmt =
    "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"b\",\"size\":2},{\"name\":\"s\",\"size\":5},"
    "{\"name\":\"h\",\"size\":3},{\"name\":\"d\",\"size\":32},{\"name\":\"d_rot\",\"size\":32}],"
    "\"tensors\":[{\"name\":\"X\",\"axes\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"%s\"},"
    "{\"name\":\"C\",\"axes\":[\"s\",\"d\"],\"dtype\":\"%s\"},{\"name\":\"S\",\"axes\":[\"s\",\"d\"],\"dtype\":\"%s\"},"
    "{\"name\":\"R\",\"axes\":[\"d\",\"d_rot\"],\"dtype\":\"%s\",\"constant\":\"rotate_half\"},"
    "{\"name\":\"Y\",\"axes\":[\"b\",\"s\",\"h\",\"d\"],\"dtype\":\"%s\"}],"
    "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\"},{\"id\":\"c\",\"kind\":\"input\",\"tensor\":\"C\"},"
    "{\"id\":\"s\",\"kind\":\"input\",\"tensor\":\"S\"},{\"id\":\"r\",\"kind\":\"input\",\"tensor\":\"R\"},"
    "{\"id\":\"xc\",\"kind\":\"map\",\"fn\":\"mul\"},"
    "{\"id\":\"rot\",\"kind\":\"contract\",\"out\":[\"b\",\"s\",\"h\",\"d_rot\"]},"
    "{\"id\":\"unrot\",\"kind\":\"rearrange\",\"out\":[\"b\",\"s\",\"h\",\"d\"]},"
    "{\"id\":\"rs\",\"kind\":\"map\",\"fn\":\"mul\"},{\"id\":\"sum\",\"kind\":\"map\",\"fn\":\"add\"},"
    "{\"id\":\"y\",\"kind\":\"output\",\"tensor\":\"Y\"}],"
    "\"wires\":[{\"from\":\"x\",\"to\":\"xc\",\"port\":%d},{\"from\":\"c\",\"to\":\"xc\",\"port\":%d},"
    "{\"from\":\"x\",\"to\":\"rot\",\"port\":%d},{\"from\":\"r\",\"to\":\"rot\",\"port\":%d},"
    "{\"from\":\"rot\",\"to\":\"unrot\",\"port\":0},{\"from\":\"unrot\",\"to\":\"rs\",\"port\":%d},"
    "{\"from\":\"s\",\"to\":\"rs\",\"port\":%d},{\"from\":\"xc\",\"to\":\"sum\",\"port\":%d},"
    "{\"from\":\"rs\",\"to\":\"sum\",\"port\":%d},{\"from\":\"sum\",\"to\":\"y\",\"port\":0}]}";

  for (guint c = 0; c < 2; c++)
    {
      const char *dtype = c == 0 ? "bf16" : "fp32";
      g_autofree char *json = g_strdup_printf (fmt, dtype, dtype, dtype, dtype, dtype, c, 1 - c, c, 1 - c, c, 1 - c, c,
                                               1 - c);
      g_autoptr(NapkinDiagram) d = NULL;
      g_autoptr(NapkinPlan) plan = NULL;
      g_autoptr(NapkinCudaModule) module = plan_json (json, &d, &plan);
      const NapkinPlanKernel *k;
      const NapkinPlanMap *m;

      k = the_elementwise (plan, dtype);
      g_assert_cmpuint (k->nodes->len, ==, 5);
      g_assert_cmpuint (k->u.ew.maps->len, ==, 2);
      m = &g_array_index (k->u.ew.maps, NapkinPlanMap, 1);
      g_assert_cmpint (m->other_rotate, ==, 32);
      g_assert_true (m->has_other2);
      g_assert_nonnull (strstr (module->source, "lo_ ? -o_[k_]"));
      check_emulation (module, d, c == 0 ? "rotary bf16" : "rotary fp32, operands swapped", dtype);
    }
}

/* A product over an axis of size 1 (P·V over one key; an outer product) is an
 * element-wise kernel, not a GEMM whose K pads to a chunk: each operand read by its
 * strides, broadcast along the axes it lacks, and the maps after it in the same pass —
 * in a region too. */
static void
test_unit_product (void)
{
  static const char *const fmt =
    "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"b\",\"size\":3},{\"name\":\"q\",\"size\":37},"
    "{\"name\":\"k\",\"size\":1},{\"name\":\"d\",\"size\":40}],"
    "\"tensors\":[{\"name\":\"P\",\"axes\":[\"b\",\"q\",\"k\"],\"dtype\":\"%s\"},"
    "{\"name\":\"V\",\"axes\":[\"b\",\"k\",\"d\"],\"dtype\":\"%s\"},"
    "{\"name\":\"O\",\"axes\":[\"b\",\"q\",\"d\"],\"dtype\":\"%s\"}],"
    "\"nodes\":[{\"id\":\"p\",\"kind\":\"input\",\"tensor\":\"P\"},{\"id\":\"v\",\"kind\":\"input\",\"tensor\":\"V\"},"
    "{\"id\":\"pv\",\"kind\":\"contract\",\"out\":[\"b\",\"q\",\"d\"]},"
    "{\"id\":\"half\",\"kind\":\"map\",\"fn\":\"scale\",\"alpha\":0.5},"
    "{\"id\":\"o\",\"kind\":\"output\",\"tensor\":\"O\"}],"
    "\"wires\":[{\"from\":\"p\",\"to\":\"pv\",\"port\":0},{\"from\":\"v\",\"to\":\"pv\",\"port\":1},"
    "{\"from\":\"pv\",\"to\":\"half\",\"port\":0},{\"from\":\"half\",\"to\":\"o\",\"port\":0}]%s}";
  static const char *const region =
    ",\"regions\":[{\"name\":\"blk\",\"level\":\"smem\",\"nodes\":[\"pv\",\"half\"],"
    "\"marks\":{\"b\":{\"parallel\":1},\"q\":{\"parallel\":32},\"d\":{\"parallel\":32},\"k\":\"whole\"}}]";

  for (guint c = 0; c < 3; c++)
    {
      const char *dtype = c == 1 ? "fp32" : "bf16";
      const char *what = c == 0 ? "unit product bf16" : c == 1 ? "unit product fp32" : "unit product, region";
      g_autofree char *json = g_strdup_printf (fmt, dtype, dtype, dtype, c == 2 ? region : "");
      g_autoptr(NapkinDiagram) d = NULL;
      g_autoptr(NapkinPlan) plan = NULL;
      g_autoptr(NapkinCudaModule) module = plan_json (json, &d, &plan);
      const NapkinPlanKernel *k = the_elementwise (plan, what);
      const NapkinPlanMap *m;

      g_assert_cmpuint (k->u.ew.maps->len, ==, 2);
      m = &g_array_index (k->u.ew.maps, NapkinPlanMap, 0);
      g_assert_cmpint (m->fn, ==, NAPKIN_FN_MUL);
      g_assert_true (m->has_other);
      check_emulation (module, d, what, dtype);
    }
}

/* The plan's one kernel, an element-wise kernel with one mask among its maps: that mask. */
static const NapkinPlanMap *
the_mask (const NapkinPlan *plan,
          guint             c)
{
  g_autofree char *what = g_strdup_printf ("case %u", c);
  const NapkinPlanKernel *k = the_elementwise (plan, what);
  const NapkinPlanMap *mask = NULL;
  guint masks = 0;

  for (guint i = 0; i < k->u.ew.maps->len; i++)
    if (g_array_index (k->u.ew.maps, NapkinPlanMap, i).is_mask)
      {
        mask = &g_array_index (k->u.ew.maps, NapkinPlanMap, i);
        masks++;
      }
  g_assert_cmpuint (masks, ==, 1);
  return mask;
}

/* Causal and window masks in the element-wise kernel (the backward of a causal
 * attention masks outside any attention): each element's row and column read back
 * from its flat index, with the rows axis outside or inside the batch, an offset, and
 * a window open on either side; exp after the mask so that the masked elements are 0. */
static void
test_masks (void)
{
  static const char *const cases[][3] = {
    /* axes of X and Y, the mask's fields */
    { "[\"b\", \"q\", \"k\"]", "\"mask\": \"causal\", \"rows\": \"q\", \"axis\": \"k\"", "causal" },
    { "[\"q\", \"b\", \"k\"]", "\"mask\": \"causal\", \"rows\": \"q\", \"axis\": \"k\", \"offset\": 3", "causal" },
    { "[\"b\", \"k\", \"q\"]", "\"mask\": \"window\", \"rows\": \"q\", \"axis\": \"k\", \"offset\": -2, \"left\": 4, "
      "\"right\": 1", "window" },
    { "[\"b\", \"q\", \"k\"]", "\"mask\": \"window\", \"rows\": \"q\", \"axis\": \"k\", \"left\": 5, \"right\": -1",
      "window" },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autofree char *json = g_strdup_printf (
        "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"b\",\"size\":3},{\"name\":\"q\",\"size\":13},"
        "{\"name\":\"k\",\"size\":40}],"
        "\"tensors\":[{\"name\":\"X\",\"axes\":%s,\"dtype\":\"fp16\"},{\"name\":\"Y\",\"axes\":%s,\"dtype\":\"fp32\"}],"
        "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\"},"
        "{\"id\":\"half\",\"kind\":\"map\",\"fn\":\"scale\",\"alpha\":0.5},"
        "{\"id\":\"m\",\"kind\":\"mask\",%s},{\"id\":\"e\",\"kind\":\"map\",\"fn\":\"exp\"},"
        "{\"id\":\"y\",\"kind\":\"output\",\"tensor\":\"Y\"}],"
        "\"wires\":[{\"from\":\"x\",\"to\":\"half\",\"port\":0},{\"from\":\"half\",\"to\":\"m\",\"port\":0},"
        "{\"from\":\"m\",\"to\":\"e\",\"port\":0},{\"from\":\"e\",\"to\":\"y\",\"port\":0}]}",
        cases[c][0], cases[c][0], cases[c][1]);
      g_autoptr(NapkinDiagram) d = NULL;
      g_autoptr(NapkinPlan) plan = NULL;
      g_autoptr(NapkinCudaModule) module = plan_json (json, &d, &plan);
      g_autofree char *what = g_strdup_printf ("case %u, %s %s", c, cases[c][2], cases[c][0]);

      the_mask (plan, c);
      if (!check_emulation (module, d, what, "fp16"))
        return;
    }
}

/* A softmax whose rows are all masked (a window that ends before the keys begin, as a
 * cross-attention to one key left unfused): zeros, as the interpreter and the attention
 * kernels give them, not exp (−∞ − −∞) = NaN. Rows along the key axis (the contiguous
 * rows kernel), across it (the strided one), and a key axis of one element. */
static void
test_masked_rows (void)
{
  static const char *const cases[][3] = {
    /* axes of X and Y, the size of k */
    { "[\"b\", \"q\", \"k\"]", "40", "contiguous" },
    { "[\"b\", \"k\", \"q\"]", "40", "strided" },
    { "[\"b\", \"q\", \"k\"]", "1", "one key" },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autofree char *json = g_strdup_printf (
        "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"b\",\"size\":3},"
        "{\"name\":\"q\",\"size\":13},{\"name\":\"k\",\"size\":%s}],"
        "\"tensors\":[{\"name\":\"X\",\"axes\":%s,\"dtype\":\"fp16\"},{\"name\":\"Y\",\"axes\":%s,\"dtype\":\"fp16\"}],"
        "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\"},"
        "{\"id\":\"m\",\"kind\":\"mask\",\"mask\":\"window\",\"rows\":\"q\",\"axis\":\"k\",\"offset\":-6,"
        "\"left\":3,\"right\":0},"
        "{\"id\":\"sm\",\"kind\":\"softmax\",\"axis\":\"k\"},"
        "{\"id\":\"y\",\"kind\":\"output\",\"tensor\":\"Y\"}],"
        "\"wires\":[{\"from\":\"x\",\"to\":\"m\",\"port\":0},{\"from\":\"m\",\"to\":\"sm\",\"port\":0},"
        "{\"from\":\"sm\",\"to\":\"y\",\"port\":0}]}",
        cases[c][1], cases[c][0], cases[c][0]);
      g_autoptr(NapkinDiagram) d = NULL;
      g_autoptr(NapkinPlan) plan = NULL;
      g_autoptr(NapkinCudaModule) module = plan_json (json, &d, &plan);
      g_autofree char *what = g_strdup_printf ("masked rows, %s", cases[c][2]);
      gboolean rows = FALSE;

      for (guint i = 0; i < plan->kernels->len; i++)
        {
          const NapkinPlanKernel *k = g_ptr_array_index (plan->kernels, i);

          rows |= k->kind == NAPKIN_PLAN_ROWS;
        }
      g_assert_true (rows);
      if (!check_emulation (module, d, what, "fp16"))
        return;
    }
}

/* Tensor masks in the element-wise kernel (a backward's mask outside any attention):
 * a boolean int8 mask [q, k] broadcast over the batch keeps where it is not 0, an
 * additive fp16 bias [b, k] (a padding mask) is added; exp after, as in attention. */
static void
test_tensor_masks (void)
{
  static const char *const cases[][3] = {
    /* the mask tensor's axes and type */
    { "[\"q\", \"k\"]", "int8", "boolean [q, k]" },
    { "[\"b\", \"k\"]", "fp16", "additive [b, k]" },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autofree char *json = g_strdup_printf (
        "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"b\",\"size\":3},{\"name\":\"q\",\"size\":13},"
        "{\"name\":\"k\",\"size\":40}],"
        "\"tensors\":[{\"name\":\"X\",\"axes\":[\"b\",\"q\",\"k\"],\"dtype\":\"fp16\"},"
        "{\"name\":\"M\",\"axes\":%s,\"dtype\":\"%s\"},"
        "{\"name\":\"Y\",\"axes\":[\"b\",\"q\",\"k\"],\"dtype\":\"fp32\"}],"
        "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\"},{\"id\":\"mm\",\"kind\":\"input\",\"tensor\":\"M\"},"
        "{\"id\":\"half\",\"kind\":\"map\",\"fn\":\"scale\",\"alpha\":0.5},"
        "{\"id\":\"m\",\"kind\":\"mask\",\"mask\":\"tensor\"},{\"id\":\"e\",\"kind\":\"map\",\"fn\":\"exp\"},"
        "{\"id\":\"y\",\"kind\":\"output\",\"tensor\":\"Y\"}],"
        "\"wires\":[{\"from\":\"x\",\"to\":\"half\",\"port\":0},{\"from\":\"half\",\"to\":\"m\",\"port\":0},"
        "{\"from\":\"mm\",\"to\":\"m\",\"port\":1},"
        "{\"from\":\"m\",\"to\":\"e\",\"port\":0},{\"from\":\"e\",\"to\":\"y\",\"port\":0}]}",
        cases[c][0], cases[c][1]);
      g_autoptr(NapkinDiagram) d = NULL;
      g_autoptr(NapkinPlan) plan = NULL;
      g_autoptr(NapkinCudaModule) module = plan_json (json, &d, &plan);
      g_autofree char *what = g_strdup_printf ("tensor mask %s", cases[c][2]);
      const NapkinPlanMap *m = the_mask (plan, c);

      g_assert_cmpint (m->mask, ==, NAPKIN_MASK_TENSOR);
      g_assert_true (m->has_other);
      if (!check_emulation (module, d, what, "fp16"))
        return;
    }
}

/* The forward's output node and every operation left without a consumer: what only the
 * forward computes (the backward's fused kernel reads Q, K, V and dO, not O). */
static NapkinDiagram *
backward_alone (NapkinDiagram *bwd,
                const char    *forward_output)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *text = napkin_diagram_save_to_data (bwd, NULL);
  json_object *root, *nodes, *wires, *tensors, *kept;
  gboolean changed = TRUE;
  NapkinDiagram *d;

  g_assert_no_error (error);
  root = json_tokener_parse (text);
  g_assert_nonnull (root);
  g_assert_true (json_object_object_get_ex (root, "nodes", &nodes));
  g_assert_true (json_object_object_get_ex (root, "wires", &wires));
  g_assert_true (json_object_object_get_ex (root, "tensors", &tensors));
  while (changed)
    {
      changed = FALSE;
      for (size_t i = 0; i < json_object_array_length (nodes); i++)
        {
          json_object *n = json_object_array_get_idx (nodes, i), *v;
          const char *id, *kind;
          gboolean used = FALSE;

          json_object_object_get_ex (n, "id", &v);
          id = json_object_get_string (v);
          json_object_object_get_ex (n, "kind", &v);
          kind = json_object_get_string (v);
          if (g_str_equal (kind, "output"))
            {
              json_object_object_get_ex (n, "tensor", &v);
              used = !g_str_equal (json_object_get_string (v), forward_output);
            }
          for (size_t w = 0; w < json_object_array_length (wires) && !used; w++)
            {
              json_object_object_get_ex (json_object_array_get_idx (wires, w), "from", &v);
              used = g_str_equal (json_object_get_string (v), id);
            }
          if (used)
            continue;
          for (size_t w = json_object_array_length (wires); w-- > 0;)
            {
              json_object_object_get_ex (json_object_array_get_idx (wires, w), "to", &v);
              if (g_str_equal (json_object_get_string (v), id))
                json_object_array_del_idx (wires, w, 1);
            }
          json_object_array_del_idx (nodes, i, 1);
          changed = TRUE;
          break;
        }
    }
  /* the tensors no node names */
  kept = json_object_new_array ();
  for (size_t t = 0; t < json_object_array_length (tensors); t++)
    {
      json_object *tensor = json_object_array_get_idx (tensors, t), *v;
      gboolean named = FALSE;

      json_object_object_get_ex (tensor, "name", &v);
      for (size_t i = 0; i < json_object_array_length (nodes) && !named; i++)
        {
          json_object *tv;

          named = json_object_object_get_ex (json_object_array_get_idx (nodes, i), "tensor", &tv)
                  && g_str_equal (json_object_get_string (tv), json_object_get_string (v));
        }
      if (named)
        json_object_array_add (kept, json_object_get (tensor));
    }
  json_object_object_add (root, "tensors", kept);
  d = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  json_object_put (root);
  return d;
}

/* The attention backward's first and main launches on wgmma (the h200 plan), the dq launch and the LEAD fragment as the printer prints them, run on
 * the CPU: the wgmma operands read through their descriptors and the 128-byte swizzle,
 * the accumulators and register operands in the fragment layouts — the layouts the
 * kernel writes and describes checked against each other before a GPU runs it. dQ, dK
 * and dV against the interpreter's gradients of the same backward diagram: head sizes
 * 64 and 128, lengths that leave partial tiles and key blocks (77 keys: one of each),
 * no mask, causal with GQA, a sliding window, a bias with its gradient, fp16 and bf16. */
static void
test_attention_backward_wgmma (void)
{
  static const struct
  {
    const char *example, *dtype;
    gint64      b, h, g, q, k, d, left;
    gboolean    bias;
  } cases[] = {
    { "flash-attention.napkin", "fp16", 1, 2, 0, 200, 300, 128, 0, FALSE },
    { "attention-causal-gqa.napkin", "bf16", 1, 1, 2, 150, 150, 64, 0, FALSE },
    { "attention-causal-gqa.napkin", "fp16", 1, 1, 2, 130, 130, 128, 0, FALSE },
    { "attention-sliding-window.napkin", "fp16", 1, 1, 2, 300, 300, 64, 100, FALSE },
    /* an additive bias [h, q, k] on the scores, its gradient asked for */
    { "flash-attention.napkin", "bf16", 1, 2, 0, 140, 200, 64, 0, TRUE },
    /* few keys (a text encoder's 77): one key block and one chunk, both partial */
    { "flash-attention.napkin", "fp16", 2, 1, 0, 150, 77, 128, 0, FALSE },
  };

  if (gxx == NULL)
    {
      g_test_skip ("no g++ to build the emulation");
      return;
    }
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinDiagram) fwd = NULL;
      g_autoptr(NapkinDiagram) bwd = NULL;
      g_autoptr(NapkinDiagram) alone = NULL;
      g_autoptr(NapkinPlan) plan = NULL;
      g_autoptr(NapkinCudaModule) module = NULL;
      g_autofree char *what = g_strdup_printf ("attention backward on wgmma, %s %s b%" G_GINT64_FORMAT " h%"
                                               G_GINT64_FORMAT " g%" G_GINT64_FORMAT " q%" G_GINT64_FORMAT " k%"
                                               G_GINT64_FORMAT " d%" G_GINT64_FORMAT "%s", cases[c].example,
                                               cases[c].dtype, cases[c].b, cases[c].h, cases[c].g, cases[c].q,
                                               cases[c].k, cases[c].d, cases[c].bias ? " with a bias" : "");
      const char *axes[] = { "b", "h", "g", "q", "k", "d" };
      const gint64 sizes[] = { cases[c].b, cases[c].h, cases[c].g, cases[c].q, cases[c].k, cases[c].d };
      const NapkinPlanKernel *k = NULL;
      double worst;

      /* the example resized and retyped */
      {
        g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), cases[c].example, NULL);
        json_object *root = json_object_from_file (path), *list;

        g_assert_nonnull (root);
        g_assert_true (json_object_object_get_ex (root, "axes", &list));
        for (size_t i = 0; i < json_object_array_length (list); i++)
          {
            json_object *axis = json_object_array_get_idx (list, i), *name;

            json_object_object_get_ex (axis, "name", &name);
            for (guint a = 0; a < G_N_ELEMENTS (axes); a++)
              if (g_str_equal (json_object_get_string (name), axes[a]) && sizes[a] > 0)
                json_object_object_add (axis, "size", json_object_new_int64 (sizes[a]));
          }
        g_assert_true (json_object_object_get_ex (root, "tensors", &list));
        for (size_t i = 0; i < json_object_array_length (list); i++)
          json_object_object_add (json_object_array_get_idx (list, i), "dtype",
                                  json_object_new_string (cases[c].dtype));
        if (cases[c].bias)
          json_object_array_add (list, json_tokener_parse ("{\"name\": \"B\", \"axes\": [\"h\", \"q\", \"k\"], "
                                                           "\"dtype\": \"bf16\"}"));
        /* the plan's own partition (no region: the user's path) */
        json_object_object_add (root, "regions", json_object_new_array ());
        g_assert_true (json_object_object_get_ex (root, "nodes", &list));
        for (size_t i = 0; i < json_object_array_length (list); i++)
          {
            json_object *node = json_object_array_get_idx (list, i), *id;

            json_object_object_get_ex (node, "id", &id);
            if (cases[c].left > 0 && g_str_equal (json_object_get_string (id), "mask"))
              json_object_object_add (node, "left", json_object_new_int64 (cases[c].left));
          }
        if (cases[c].bias)
          {
            json_object *wires;
            json_object_array_add (list, json_tokener_parse ("{\"id\": \"b_in\", \"kind\": \"input\", "
                                                             "\"tensor\": \"B\"}"));
            json_object_array_add (list, json_tokener_parse ("{\"id\": \"bias\", \"kind\": \"map\", "
                                                             "\"fn\": \"add\"}"));
            g_assert_true (json_object_object_get_ex (root, "wires", &wires));
            for (size_t w = 0; w < json_object_array_length (wires); w++)
              {
                json_object *wire = json_object_array_get_idx (wires, w), *to;

                json_object_object_get_ex (wire, "to", &to);
                if (g_str_equal (json_object_get_string (to), "sm"))
                  json_object_object_add (wire, "to", json_object_new_string ("bias"));
              }
            json_object_array_add (wires, json_tokener_parse ("{\"from\": \"b_in\", \"to\": \"bias\", \"port\": 1}"));
            json_object_array_add (wires, json_tokener_parse ("{\"from\": \"bias\", \"to\": \"sm\", \"port\": 0}"));
          }
        fwd = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, &error);
        g_assert_no_error (error);
        json_object_put (root);
      }
      bwd = napkin_backward_diagram (fwd, NULL, NAPKIN_BACKWARD_RECOMPUTE, NULL, NULL, NULL, &error);
      g_assert_no_error (error);
      alone = backward_alone (bwd, "O");
      plan = napkin_plan_build (alone, napkin_test_arch ("h200"), NULL, &error);
      g_assert_no_error (error);
      module = napkin_codegen_cuda_for_plan (plan, 0, "emu_k", &error);
      g_assert_no_error (error);
      g_assert_cmpuint (plan->kernels->len, ==, 1);
      k = g_ptr_array_index (plan->kernels, 0);
      g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ATTENTION_BACKWARD);
      g_assert_true (k->u.bwd.main_wgmma);
      if (cases[c].bias)
        g_assert_cmpint (k->u.bwd.d_bias.node, >=, 0);
      /* at these sizes the K/V heads' key blocks are far fewer than the SMs: a group's
       * query heads split over blocks, dK and dV added up in fp32 */
      if (cases[c].g > 1)
        g_assert_cmpint (k->u.bwd.gsplit, ==, cases[c].g);
      worst = emulate_module (module, alone, what);
      g_test_message ("%s (group split %" G_GINT64_FORMAT "): max |y − ref| / max |ref| = %.3g", what,
                      k->u.bwd.gsplit, worst);

    }
}

/* A GEMM case as a user draws it, planned on `arch` with NAPKIN_GEMM_IN_PLACE and
 * NAPKIN_GEMM_SKINNY set for the build (NULL: unset): the diagram, its plan, the plan's
 * GEMM kernel and whether a repack and a split-K reduction go beside it. */
typedef struct
{
  NapkinDiagram          *d;
  NapkinPlan             *plan;
  const NapkinPlanKernel *gemm;
  gboolean                repacked, reduced;
  char                   *what;
} GemmPlanned;

static void
gemm_planned_clear (GemmPlanned *gp)
{
  g_clear_object (&gp->d);
  g_clear_pointer (&gp->plan, napkin_plan_free);
  g_clear_pointer (&gp->what, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (GemmPlanned, gemm_planned_clear)

static void
gemm_planned (const char                  *arch,
              const NapkinTestGemmDiagram *g,
              const char                  *in_place,
              const char                  *skinny,
              GemmPlanned                 *gp)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *json = napkin_test_gemm_json (g);

  gp->what = g_strdup_printf ("GEMM on %s, %s b%" G_GINT64_FORMAT " %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT "×%"
                              G_GINT64_FORMAT " A %s B %s%s%s", arch, g->dtype, g->batch, g->M, g->N, g->K,
                              g->a_km ? "[k,m]" : "[m,k]", g->b_nk ? "[n,k]" : "[k,n]", g->epilogue ? " + " : "",
                              g->epilogue ? g->epilogue : "");
  gp->d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  if (in_place != NULL)
    g_setenv ("NAPKIN_GEMM_IN_PLACE", in_place, TRUE);
  if (skinny != NULL)
    g_setenv ("NAPKIN_GEMM_SKINNY", skinny, TRUE);
  gp->plan = napkin_plan_build (gp->d, napkin_test_arch (arch), NULL, &error);
  g_unsetenv ("NAPKIN_GEMM_IN_PLACE");
  g_unsetenv ("NAPKIN_GEMM_SKINNY");
  g_assert_no_error (error);
  for (guint i = 0; i < gp->plan->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (gp->plan->kernels, i);

      gp->repacked |= k->kind == NAPKIN_PLAN_REPACK;
      gp->reduced |= k->kind == NAPKIN_PLAN_SPLIT_REDUCE;
      if (k->kind == NAPKIN_PLAN_GEMM)
        gp->gemm = k;
    }
  g_assert_nonnull (gp->gemm);
  g_test_message ("%s: %s", gp->what, gp->gemm->note);
}

/* The plan's CUDA for the case, run in the emulation against the interpreter, within
 * its type's tolerance. */
static void
gemm_emulate (const GemmPlanned           *gp,
              const NapkinTestGemmDiagram *g)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinCudaModule) module = napkin_codegen_cuda_for_plan (gp->plan, 0, "emu_k", &error);
  double worst, tol = g_str_equal (g->dtype, "bf16") ? 1e-2 : 2e-3;

  g_assert_no_error (error);
  worst = emulate_module (module, gp->d, gp->what);
  if (!(worst <= tol))
    g_error ("%s: max |y − ref| / max |ref| = %.3g (tolerance %.1g)", gp->what, worst, tol);
}

/* The plan's mma.sync GEMM (kernels/gemm-sm80.cu) and what it launches beside it (a
 * repack, a split-K reduction), on the user's path (no region): on the A100 every
 * product, on the H200 the skinny ones that read an unaligned operand in place by 8- or
 * 4-byte copies (docs/plan.md, "Reading unaligned operands in place"); edge tiles,
 * both majors of A and B, a batch, a shared B, fused epilogues. */
static void
test_gemm_mma (void)
{
  static const struct
  {
    const char           *arch;
    NapkinTestGemmDiagram c;
    guint                 piece;   /* the narrowest copy the plan reads in place, 0: none */
    gboolean              repack;
  } cases[] = {
    /* rows of 58 and 106 bytes: copied to aligned rows */
    { "a100", { .M = 37, .N = 53, .K = 29, .dtype = "bf16" }, 0, TRUE },
    { "a100", { .M = 96, .N = 80, .K = 120, .batch = 2, .dtype = "fp16", .a_km = TRUE, .b_nk = TRUE,
                .epilogue = "bias-gelu" }, 0, FALSE },
    /* a few tokens against a weight whose rows are 4 or 8 bytes apart */
    { "h200", { .M = 2, .N = 150, .K = 88, .batch = 3, .dtype = "bf16" }, 4, FALSE },
    { "h200", { .M = 16, .N = 300, .K = 72, .dtype = "fp16", .epilogue = "residual" }, 8, FALSE },
    { "h200", { .M = 5, .N = 64, .K = 1998, .dtype = "bf16", .b_nk = TRUE }, 4, FALSE },
    { "h200", { .M = 9, .N = 130, .K = 96, .batch = 2, .dtype = "fp16", .a_km = TRUE, .shared_b = TRUE,
                .epilogue = "silu" }, 4, TRUE },   /* A's rows 18 bytes apart: copied */
  };

  if (gxx == NULL)
    {
      g_test_skip ("no g++ to build the emulation");
      return;
    }
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      const NapkinTestGemmDiagram *g = &cases[c].c;
      g_auto(GemmPlanned) gp = { 0 };
      guint a, b;

      /* reading in place lost to the copy where measured: only forced, and such products
       * otherwise run on CUDA cores (test_gemm_skinny) */
      gemm_planned (cases[c].arch, g, cases[c].piece ? "force" : "0", "0", &gp);
      g_assert_cmpint (gp.gemm->path, ==, NAPKIN_PATH_MMA);
      g_assert_cmpint (gp.repacked, ==, cases[c].repack);
      a = gp.gemm->u.gemm.a_piece;
      b = gp.gemm->u.gemm.b_piece;
      g_assert_cmpuint (a && b ? MIN (a, b) : MAX (a, b), ==, cases[c].piece);
      gemm_emulate (&gp, g);
    }
}

/* The plan's skinny product on CUDA cores (kernels/gemm-skinny.cu) and its split-K
 * reduction, on the user's path (no region), H200: few rows against B read where it
 * lies — rows 2, 4, 8 or 16 bytes apart, both majors of A and B, a batch, a shared B,
 * the last slice of K short, the columns' edge inside a vector, fused epilogues. Sizes
 * an emulation can run are too small to fill an H200 (the plan keeps them on tensor
 * cores): the kernel is forced here; the decision is checked on full sizes below. */
static void
test_gemm_skinny_decision (void)
{
  static const struct
  {
    NapkinTestGemmDiagram c;
    gboolean              skinny;
  } cases[] = {
    /* measured on an H200 (docs/perf-notes.md, session 27): B's rows 4 bytes apart */
    { { .M = 8, .N = 13206, .K = 4594, .dtype = "bf16", .epilogue = "residual" }, TRUE },
    { { .M = 2, .N = 1518, .K = 880, .batch = 39, .dtype = "bf16" }, TRUE },
    { { .M = 4, .N = 5000, .K = 3002, .dtype = "bf16", .b_nk = TRUE }, TRUE },
    /* batched, K of 2 chunks: each wave's tiles and round trip weighed on the tensor
     * side (H200, session 35: skinny 0.0335 ms, copy + wgmma 0.0394) */
    { { .M = 4, .N = 1803, .K = 128, .batch = 57, .dtype = "fp16" }, TRUE },
    /* 16 rows: the FMAs cost more than the copy saves */
    { { .M = 16, .N = 8650, .K = 8676, .dtype = "fp16", .epilogue = "residual" }, FALSE },
    /* aligned: nothing to copy, wgmma streams it as fast */
    { { .M = 4, .N = 14336, .K = 4096, .dtype = "bf16", .b_nk = TRUE }, FALSE },
    /* 64 columns: too few blocks for the SMs */
    { { .M = 4, .N = 64, .K = 13265, .dtype = "bf16" }, FALSE },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_auto(GemmPlanned) gp = { 0 };

      gemm_planned ("h200", &cases[c].c, NULL, NULL, &gp);
      g_assert_cmpint (gp.gemm->path == NAPKIN_PATH_SIMT, ==, cases[c].skinny);
    }
}

static void
test_gemm_skinny (void)
{
  static const struct
  {
    NapkinTestGemmDiagram c;
    guint                 vec;    /* elements a load of B reads */
  } cases[] = {
    { { .M = 8, .N = 150, .K = 300, .dtype = "bf16" }, 2 },                                 /* 300 B rows */
    { { .M = 3, .N = 77, .K = 257, .dtype = "fp16", .epilogue = "residual" }, 1 },          /* odd: 2 B */
    { { .M = 8, .N = 1030, .K = 2000, .dtype = "fp16", .a_km = TRUE }, 2 },
    { { .M = 1, .N = 600, .K = 1004, .dtype = "bf16", .b_nk = TRUE, .epilogue = "bias-gelu" }, 4 },
    { { .M = 5, .N = 700, .K = 1201, .dtype = "fp16", .b_nk = TRUE }, 1 },
    /* 6 rows: at most 32 / 6 sums a thread, the width a power of two (4, not 5) */
    { { .M = 6, .N = 1020, .K = 300, .dtype = "bf16" }, 4 },
    { { .M = 2, .N = 1002, .K = 900, .batch = 3, .dtype = "bf16" }, 2 },
    { { .M = 4, .N = 1026, .K = 700, .batch = 2, .dtype = "fp16", .shared_b = TRUE, .epilogue = "silu" }, 2 },
  };

  if (gxx == NULL)
    {
      g_test_skip ("no g++ to build the emulation");
      return;
    }
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_auto(GemmPlanned) gp = { 0 };

      gemm_planned ("h200", &cases[c].c, NULL, "force", &gp);
      g_assert_cmpint (gp.gemm->path, ==, NAPKIN_PATH_SIMT);
      g_assert_false (gp.repacked);
      g_assert_true (gp.reduced);
      g_assert_cmpuint (gp.gemm->u.gemm.b_piece, ==, cases[c].vec * 2);
      gemm_emulate (&gp, &cases[c].c);
    }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  gxx = g_find_program_in_path ("g++");
  g_test_add_func ("/plan/emulate/attention-backward-wgmma", test_attention_backward_wgmma);
  g_test_add_func ("/plan/emulate/gemm-mma", test_gemm_mma);
  g_test_add_func ("/plan/emulate/gemm-skinny", test_gemm_skinny);
  g_test_add_func ("/plan/gemm/skinny-decision", test_gemm_skinny_decision);
  g_test_add_func ("/plan/rows/emulate-strided", test_strided);
  g_test_add_func ("/plan/rows/emulate-contiguous", test_contiguous);
  g_test_add_func ("/plan/rows/emulate-masked", test_masked_rows);
  g_test_add_func ("/plan/elementwise/emulate-input-copy", test_input_copy);
  g_test_add_func ("/plan/elementwise/emulate-rotary", test_rotary);
  g_test_add_func ("/plan/elementwise/emulate-unit-product", test_unit_product);
  g_test_add_func ("/plan/rows/emulate-modulation", test_modulation);
  g_test_add_func ("/plan/elementwise/emulate-masks", test_masks);
  g_test_add_func ("/plan/elementwise/emulate-tensor-masks", test_tensor_masks);
  return g_test_run ();
}
