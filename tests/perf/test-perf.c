/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-explain.h"
#include "napkin-model.h"
#include "napkin-plan.h"
#include "napkin-derive.h"
#include "napkin-edit.h"
#include "napkin-tune.h"
#include "napkin-test-load.h"

static char *arch_dir;   /* a $NAPKIN_ARCH_DIR with one test architecture */

static NapkinAnalysis *
analyze (NapkinDiagram *d,
         const char    *arch_id,
         gboolean       paper)
{
  NapkinAnalyzeOptions options = { FALSE, NAPKIN_DTYPE_FP16, FALSE, paper };
  g_autoptr(GError) error = NULL;
  NapkinAnalysis *a = napkin_analyze (d, napkin_test_arch (arch_id), &options, &error);

  g_assert_no_error (error);
  g_assert_nonnull (a);
  return a;
}

static void
tile (NapkinDiagram *d,
      const char    *spec)
{
  g_autoptr(GError) error = NULL;

  napkin_tune_apply_spec (d, spec, &error);   /* REGION.AXIS=… or REGION.stages=N */
  g_assert_no_error (error);
}

static void
axis (NapkinDiagram *d,
      const char    *spec)
{
  g_autoptr(GError) error = NULL;

  napkin_diagram_override_axis (d, spec, &error);
  g_assert_no_error (error);
}

static const NapkinRegionCost *
region (NapkinAnalysis *a,
        const char     *name)
{
  for (guint i = 0; i < a->regions->len; i++)
    if (strcmp (g_array_index (a->regions, NapkinRegionCost, i).name, name) == 0)
      return &g_array_index (a->regions, NapkinRegionCost, i);
  g_assert_not_reached ();
}

static const NapkinTransfer *
transfer (const NapkinRegionCost *r,
          const char             *tensor)
{
  for (guint i = 0; i < r->transfers->len; i++)
    if (strcmp (g_array_index (r->transfers, NapkinTransfer, i).tensor, tensor) == 0)
      return &g_array_index (r->transfers, NapkinTransfer, i);
  g_assert_not_reached ();
}

/* A matmul or attention with one shared-memory region and one pipeline stage, the
 * paper's setting (the examples use 2 or 3 stages). */
static NapkinDiagram *
single_stage (const char *name)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example (name);
  g_autoptr(json_object) root = napkin_diagram_to_json (d);
  json_object *regions = json_object_object_get (root, "regions");
  g_autoptr(GError) error = NULL;
  NapkinDiagram *copy;

  json_object_object_del (json_object_array_get_idx (regions, 0), "stages");
  copy = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  return copy;
}

/* ---- architectures ------------------------------------------------------------------------- */

static void
test_arch_h100 (void)
{
  NapkinArch *h = napkin_test_arch ("h100");

  g_assert_cmpuint (h->sms, ==, 132);
  /* the datasheet's dense peaks, from per-SM-per-clock rates */
  g_assert_cmpfloat_with_epsilon (napkin_arch_tensor_rate (h, NAPKIN_TENSOR_FP16) / 1e12, 989.4, 0.5);
  g_assert_cmpfloat_with_epsilon (napkin_arch_tensor_rate (h, NAPKIN_TENSOR_FP8) / 1e12, 1978.9, 1.0);
  g_assert_cmpfloat_with_epsilon (napkin_arch_cuda_rate (h, NAPKIN_DTYPE_FP32) / 1e12, 66.9, 0.1);
  g_assert_cmpfloat (h->tensor_per_sm_clock[NAPKIN_TENSOR_FP16], ==, 4096);
  g_assert_cmpfloat (h->tensor_per_sm_clock[NAPKIN_TENSOR_FP8], ==, 8192);
  g_assert_cmpfloat (h->sfu_per_sm_clock, ==, 16);
  g_assert_cmpfloat (h->levels[NAPKIN_LEVEL_HBM].bandwidth, ==, 3.35e12);
  g_assert_cmpfloat (h->levels[NAPKIN_LEVEL_SMEM].capacity_bytes, ==, 228 * 1024);
  g_assert_cmpuint (h->registers_per_sm, ==, 65536);
  g_assert_cmpuint (h->max_warps_per_sm, ==, 64);

  /* every figure keeps its source */
  g_assert_nonnull (strstr (napkin_arch_get_source (h, "tensor.fp16"), "989.4"));
  g_assert_nonnull (strstr (napkin_arch_get_source (h, "levels.l2.bandwidth_bytes_per_clock"), "measured"));
  g_assert_null (napkin_arch_get_source (h, "levels.hbm.nonsense"));
  g_assert_cmpuint (napkin_arch_get_figure_paths (h)->len, >=, 30);
  for (guint i = 0; i < napkin_arch_get_figure_paths (h)->len; i++)
    g_assert_nonnull (napkin_arch_get_source (h, g_ptr_array_index (napkin_arch_get_figure_paths (h), i)));
}

static void
test_arch_all (void)
{
  NapkinArchRegistry *reg = napkin_arch_registry_get_default ();
  const char *ids[] = { "a100", "h100", "h200", "l40s", "rtx4090", "b200", "testgpu" };

  /* only the deliberately broken file of $NAPKIN_ARCH_DIR fails; data/archs loads clean */
  g_assert_cmpuint (napkin_arch_registry_errors (reg)->len, ==, 1);
  g_assert_nonnull (strstr (g_ptr_array_index (napkin_arch_registry_errors (reg), 0), "broken.json"));
  for (guint i = 0; i < G_N_ELEMENTS (ids); i++)
    {
      NapkinArch *a = napkin_test_arch (ids[i]);

      g_assert_cmpfloat (napkin_arch_tensor_rate (a, NAPKIN_TENSOR_FP16), >, 1e13);   /* the 7-SM test a100 too */
      g_assert_cmpfloat (a->levels[NAPKIN_LEVEL_HBM].bandwidth, >, 5e11);
    }
  /* $NAPKIN_ARCH_DIR comes first: its "a100" replaces the data dir's */
  g_assert_cmpuint (napkin_test_arch ("a100")->sms, ==, 7);
  g_assert_cmpuint (napkin_test_arch ("A100")->sms, ==, 7);
  g_assert_true (g_str_has_prefix (napkin_test_arch ("a100")->path, arch_dir));
}

static void
test_arch_errors (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "data", "archs", "h100.json", NULL);
  g_autofree char *text = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinArch) a = NULL;
  g_autoptr(NapkinArchRegistry) reg = NULL;
  char *p;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));

  /* a figure without its source */
  p = strstr (text, "\"source\"");
  g_assert_nonnull (p);
  memcpy (p, "\"sourcX\"", 8);
  a = napkin_arch_load_from_data (text, -1, &error);
  g_assert_null (a);
  g_assert_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_FORMAT);
  g_assert_nonnull (strstr (error->message, "sms: every figure needs a “source”"));
  g_clear_error (&error);

  a = napkin_arch_load_from_data ("{\"format\": \"napkin-arch\", \"version\": 1, \"id\": \"x\", \"name\": \"X\", "
                                  "\"sms\": {\"value\": -3, \"source\": \"me\"}}", -1, &error);
  g_assert_null (a);
  g_assert_cmpstr (error->message, ==, "sms: value -3 is outside [1, 4096]");
  g_clear_error (&error);

  a = napkin_arch_load_from_data ("{\"format\": \"napkin\"}", -1, &error);
  g_assert_null (a);
  g_assert_cmpstr (error->message, ==, "format: expected \"napkin-arch\"");
  g_clear_error (&error);

  a = napkin_arch_load_from_data ("{ not json", -1, &error);
  g_assert_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_PARSE);
  g_clear_error (&error);

  reg = napkin_arch_registry_new ();
  napkin_arch_registry_add_dir (reg, arch_dir);
  g_assert_null (napkin_arch_registry_lookup (reg, "h100", &error));
  g_assert_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_NOT_FOUND);
  g_assert_nonnull (strstr (error->message, "known: a100, testgpu"));
  /* the broken file in the directory is reported, with its path */
  g_assert_cmpuint (napkin_arch_registry_errors (reg)->len, ==, 1);
  g_assert_nonnull (strstr (g_ptr_array_index (napkin_arch_registry_errors (reg), 0), "broken.json: levels: missing object"));
  napkin_arch_registry_free (reg);

  /* no profile anywhere: the error names the folders it searched and the variables */
  reg = napkin_arch_registry_new ();
  napkin_arch_registry_add_dir (reg, "/nonexistent/napkin/archs");
  g_clear_error (&error);
  g_assert_null (napkin_arch_registry_lookup (reg, "h100", &error));
  g_assert_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_NOT_FOUND);
  g_assert_nonnull (strstr (error->message, "no architecture profiles found (searched: /nonexistent/napkin/archs)"));
  g_assert_nonnull (strstr (error->message, "NAPKIN_DATA_DIR"));
}

/* ---- the paper's derivations ------------------------------------------------------------- */

static void
test_matmul_transfer (void)
{
  const struct { gint64 a, b, c, ga, gc, sb; } cases[] = {
    { 4096, 4096, 4096, 128, 128, 64 },
    { 4096, 4096, 4096, 64, 256, 32 },
    { 8192, 2048, 1024, 256, 128, 64 },
    { 1024, 16384, 2048, 128, 64, 128 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = single_stage ("matmul-tiled.napkin");
      g_autoptr(NapkinAnalysis) an = NULL;
      g_autofree char *sa = g_strdup_printf ("m=%" G_GINT64_FORMAT, cases[i].a);
      g_autofree char *sb = g_strdup_printf ("k=%" G_GINT64_FORMAT, cases[i].b);
      g_autofree char *sc = g_strdup_printf ("n=%" G_GINT64_FORMAT, cases[i].c);
      g_autofree char *ta = g_strdup_printf ("block.m=%" G_GINT64_FORMAT, cases[i].ga);
      g_autofree char *tc = g_strdup_printf ("block.n=%" G_GINT64_FORMAT, cases[i].gc);
      g_autofree char *tb = g_strdup_printf ("block.k=%" G_GINT64_FORMAT, cases[i].sb);
      gint64 a = cases[i].a, b = cases[i].b, c = cases[i].c, ga = cases[i].ga, gc = cases[i].gc, s = cases[i].sb;
      const NapkinRegionCost *r;

      axis (d, sa), axis (d, sb), axis (d, sc), tile (d, ta), tile (d, tc), tile (d, tb);
      an = analyze (d, "h100", TRUE);
      r = region (an, "block");
      /* H = a·b·c·(1/g_a + 1/g_c) + a·c */
      g_assert_cmpint (r->transfer_elements, ==, a * b * c / ga + a * b * c / gc + a * c);
      g_assert_cmpint (transfer (r, "A")->elements, ==, a * b * c / gc);
      g_assert_cmpint (transfer (r, "B")->elements, ==, a * b * c / ga);
      g_assert_cmpint (transfer (r, "C")->elements, ==, a * c);
      /* M = g_a·g_c + (g_a + g_c)·s_b */
      g_assert_cmpint (r->footprint_elements, ==, ga * gc + (ga + gc) * s);
      g_assert_cmpint (r->footprint_bytes, ==, 2 * (ga * gc + (ga + gc) * s));
      g_assert_cmpint (r->instances, ==, (a / ga) * (c / gc));
      g_assert_cmpint (r->chunks, ==, b / s);
      /* the paper's model: the device-memory level carries exactly H */
      g_assert_cmpint (an->levels[NAPKIN_LEVEL_HBM].transfer_elements, ==, r->transfer_elements);
      g_assert_cmpint (an->flops_total, ==, 2 * a * b * c);
    }
}

static void
test_matmul_stages (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("matmul-tiled.napkin");   /* 3 stages */
  g_autoptr(NapkinAnalysis) an = analyze (d, "h100", FALSE);
  const NapkinRegionCost *r = region (an, "block");

  /* the streamed inputs are buffered once per stage */
  g_assert_cmpint (r->footprint_elements, ==, 128 * 128 + 3 * (128 + 128) * 64);
  g_assert_cmpint (r->per_sm, ==, 1);
  g_assert_cmpstr (r->binding_limit, ==, "shared memory");
  g_assert_cmpint (r->waves, ==, 8);   /* ⌈1024 / 132⌉ */
}

static void
test_attention_transfer (void)
{
  const struct { gint64 q, x, d, gq, sx; } cases[] = {
    { 4096, 4096, 128, 128, 64 },
    { 4096, 4096, 64, 64, 128 },
    { 2048, 8192, 128, 128, 32 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = single_stage ("flash-attention.napkin");
      g_autoptr(NapkinAnalysis) an = NULL;
      g_autofree char *sq = g_strdup_printf ("q=%" G_GINT64_FORMAT, cases[i].q);
      g_autofree char *sx = g_strdup_printf ("k=%" G_GINT64_FORMAT, cases[i].x);
      g_autofree char *sd = g_strdup_printf ("d=%" G_GINT64_FORMAT, cases[i].d);
      g_autofree char *tq = g_strdup_printf ("block.q=%" G_GINT64_FORMAT, cases[i].gq);
      g_autofree char *tx = g_strdup_printf ("block.k=%" G_GINT64_FORMAT, cases[i].sx);
      gint64 q = cases[i].q, x = cases[i].x, dd = cases[i].d, g = cases[i].gq, s = cases[i].sx;
      gint64 heads = 4 * 16;
      const NapkinRegionCost *r;

      axis (d, sq), axis (d, sx), axis (d, sd), tile (d, tq), tile (d, tx);
      an = analyze (d, "h100", TRUE);
      r = region (an, "block");
      /* H = 2·q·d + 2·x·d·q/g_q per head */
      g_assert_cmpint (r->transfer_elements, ==, heads * (2 * q * dd + 2 * x * dd * q / g));
      g_assert_cmpint (transfer (r, "K")->elements, ==, heads * x * dd * q / g);
      g_assert_cmpint (transfer (r, "Q")->elements, ==, heads * q * dd);
      /* M = 2·g_q·d + 2·s_x·d */
      g_assert_cmpint (r->footprint_elements, ==, 2 * g * dd + 2 * s * dd);
      g_assert_cmpint (an->flops.tensor, ==, heads * 4 * q * x * dd);
      g_assert_true (an->feasible);
    }
}

/* The code generator's paths (docs/model.md §"What the generated kernels do"): every
 * warp of the attention skeleton reads K and V from shared memory, Q once; each stream
 * chunk costs its block NAPKIN_CHUNK_CLOCKS; mma.sync's tensor time adds to the
 * shared-memory time of its operand fragments. */
static void
test_generated_paths (void)
{
  g_autoptr(NapkinDiagram) fa = napkin_test_load_example ("flash-attention.napkin");
  g_autoptr(NapkinDiagram) mm = napkin_test_load_example ("matmul-nested.napkin");
  /* the mma.sync skeletons (on sm_90a these tiles take the wgmma ones: /perf/wgmma/skeletons) */
  NapkinAnalyzeOptions mma_sync = { .no_wgmma = TRUE };
  g_autoptr(NapkinAnalysis) a = napkin_analyze (fa, napkin_test_arch ("h200"), &mma_sync, NULL);
  g_autoptr(NapkinAnalysis) b = NULL;
  const NapkinArch *h200 = napkin_test_arch ("h200");
  const NapkinRegionCost *r = region (a, "block");
  const NapkinKernelCost *k = &g_array_index (a->kernels, NapkinKernelCost, 0);
  const gint64 heads = 4 * 16, q = 4096, x = 4096, dd = 128, warps = 128 / 16;
  double smem_bw = h200->levels[NAPKIN_LEVEL_SMEM].bandwidth;

  /* K and V: x·d per query group, read by each of the 128/16 warps; Q: q·d once */
  g_assert_cmpint (a->levels[NAPKIN_LEVEL_SMEM].transfer_bytes, ==,
                   heads * (2 * (x * dd * q / 128) * warps + q * dd) * 2);
  g_assert_cmpfloat_with_epsilon (k->time_s[NAPKIN_RESOURCE_SMEM], a->levels[NAPKIN_LEVEL_SMEM].transfer_bytes / smem_bw,
                                  1e-12);
  /* 2048 blocks, one per SM: 16 waves of 64 chunks */
  g_assert_cmpint (r->waves, ==, 16);
  g_assert_cmpint (r->chunks, ==, 64);
  g_assert_cmpfloat_with_epsilon (k->chunk_s, 16.0 * 64 * 800 / h200->clock_hz, 1e-12);
  g_assert_cmpfloat_with_epsilon (k->overlap_s,
                                  (k->time_s[NAPKIN_RESOURCE_TENSOR] + k->time_s[NAPKIN_RESOURCE_SMEM]) * k->quantisation
                                  + k->chunk_s + h200->launch_overhead_s, 1e-12);
  g_assert_cmpint (a->bound, ==, NAPKIN_RESOURCE_SMEM);
  /* the skeleton's registers: 16 rows per warp hold scores and their fp16 copy over
   * the key chunk, output and Q over d: 32 + 16·(64 + 128)·6/128 = 176 per thread */
  g_assert_cmpint (r->threads, ==, 128 / 16 * 32);
  g_assert_cmpint (r->registers_per_thread, ==, 176);
  {
    g_autoptr(NapkinDiagram) wide = napkin_test_load_example ("flash-attention.napkin");
    g_autoptr(NapkinAnalysis) w = NULL;

    tile (wide, "block.k=256");
    w = napkin_analyze (wide, napkin_test_arch ("h200"), &mma_sync, NULL);
    g_assert_false (w->feasible);   /* 32 + 16·(256 + 128)·6/128 = 320 > 255 */
  }

  /* matmul with warp tiles: no per-warp rule (the registers region has the reads) */
  b = napkin_analyze (mm, napkin_test_arch ("h200"), &mma_sync, NULL);
  k = &g_array_index (b->kernels, NapkinKernelCost, 0);
  g_assert_cmpfloat (k->overlap_s, >=, (k->time_s[NAPKIN_RESOURCE_TENSOR] + k->time_s[NAPKIN_RESOURCE_SMEM]) * k->quantisation);
  g_assert_cmpint (b->levels[NAPKIN_LEVEL_SMEM].transfer_bytes, ==, (gint64) 4096 * 4096 * 4096 / 32 * 2 + (gint64) 4096 * 4096 * 4096 / 64 * 2 + (gint64) 4096 * 4096 * 2);
}

/* Halving the bytes per element doubles the tile that fits a fixed budget and so
 * quarters the tile-dependent transfer time (the K and V re-reads). */
static void
test_attention_quantisation (void)
{
  g_autoptr(NapkinDiagram) d16 = single_stage ("flash-attention.napkin");
  g_autoptr(NapkinDiagram) d8 = single_stage ("flash-attention.napkin");
  NapkinAnalyzeOptions o16 = { TRUE, NAPKIN_DTYPE_FP16, FALSE, TRUE };
  NapkinAnalyzeOptions o8 = { TRUE, NAPKIN_DTYPE_FP8_E4M3, FALSE, TRUE };
  g_autoptr(NapkinAnalysis) a16 = NULL;
  g_autoptr(NapkinAnalysis) a8 = NULL;
  const NapkinRegionCost *r16, *r8;
  double bw = napkin_test_arch ("h100")->levels[NAPKIN_LEVEL_HBM].bandwidth;
  double t16, t8;

  tile (d16, "block.q=64"), tile (d16, "block.k=64");
  tile (d8, "block.q=128"), tile (d8, "block.k=128");
  a16 = napkin_analyze (d16, napkin_test_arch ("h100"), &o16, NULL);
  a8 = napkin_analyze (d8, napkin_test_arch ("h100"), &o8, NULL);
  r16 = region (a16, "block");
  r8 = region (a8, "block");
  /* the same memory budget */
  g_assert_cmpint (r16->footprint_bytes, ==, r8->footprint_bytes);
  g_assert_cmpint (r16->footprint_bytes, ==, 2 * (2 * 64 * 128 + 2 * 64 * 128));
  t16 = (transfer (r16, "K")->bytes + transfer (r16, "V")->bytes) / bw;
  t8 = (transfer (r8, "K")->bytes + transfer (r8, "V")->bytes) / bw;
  g_assert_cmpfloat_with_epsilon (t16 / t8, 4.0, 1e-12);
}

/* Attention's fixed costs (docs/model.md §9b): each block an SM runs in turn pays
 * 2 device-memory round trips + 6000 clocks, and the split-KV combine of few rows is as
 * long as its round trips. The short sequences the sweep measured 2× slower than the
 * model without them: 32·16 heads of 128 queries × 128 keys, d 64 (0.0324 ms measured,
 * H100) is 512 blocks, 4 a SM: 4 × 4.23 µs. */
static void
test_attention_fixed_costs (void)
{
  NapkinArch *h = napkin_test_arch ("h100");
  double block = 2 * h->levels[NAPKIN_LEVEL_HBM].latency_s + 6000.0 / h->clock_hz;

  g_assert_cmpfloat_with_epsilon (block, 4.2303e-6, 1e-9);
  {
    g_autoptr(NapkinDiagram) d = napkin_test_load_example ("flash-attention.napkin");
    g_autoptr(NapkinAnalysis) an = NULL;
    const NapkinKernelCost *k;

    axis (d, "b=32"), axis (d, "h=16"), axis (d, "q=128"), axis (d, "k=128"), axis (d, "d=64");
    tile (d, "block.k=128");
    /* one tile a block (the plan's persistent walk turned off) */
    g_setenv ("NAPKIN_NO_PERSISTENT_ATTENTION", "1", TRUE);
    an = analyze (d, "h100", FALSE);
    g_unsetenv ("NAPKIN_NO_PERSISTENT_ATTENTION");
    g_assert_cmpuint (an->kernels->len, ==, 1);
    k = &g_array_index (an->kernels, NapkinKernelCost, 0);
    g_assert_cmpfloat_with_epsilon (k->latency_s, 4 * block, 1e-12);
    /* device memory alone would say 0.0142 ms; the run's first launch 2.5 µs more than
     * the kernel's own (docs/model.md, "Launches") */
    g_assert_cmpfloat_with_epsilon (an->predicted_time_s * 1e3, 0.0334, 0.0005);
  }
  {
    /* the same keys in one chunk, persistent (docs/model.md §14b): one block an SM pays
     * the fixed cost once, and Q and O stream at 0.42 of the device memory's rate (K and
     * V, as many bytes here, at the full rate) */
    g_autoptr(NapkinDiagram) d = napkin_test_load_example ("flash-attention.napkin");
    g_autoptr(NapkinAnalysis) an = NULL;
    g_autoptr(NapkinAnalysis) one = NULL;
    const NapkinKernelCost *k, *k1;

    axis (d, "b=32"), axis (d, "h=16"), axis (d, "q=128"), axis (d, "k=128"), axis (d, "d=64");
    tile (d, "block.k=128");
    an = analyze (d, "h100", FALSE);
    g_setenv ("NAPKIN_NO_PERSISTENT_ATTENTION", "1", TRUE);
    one = analyze (d, "h100", FALSE);
    g_unsetenv ("NAPKIN_NO_PERSISTENT_ATTENTION");
    k = &g_array_index (an->kernels, NapkinKernelCost, 0);
    k1 = &g_array_index (one->kernels, NapkinKernelCost, 0);
    g_assert_cmpfloat_with_epsilon (k->latency_s, block, 1e-12);
    g_assert_cmpfloat_with_epsilon (k->time_s[NAPKIN_RESOURCE_HBM],
                                    k1->time_s[NAPKIN_RESOURCE_HBM] * (1 / 0.42 + 1) / 2, 1e-12);
  }
  {
    /* one wave of blocks that each compute one chunk (cross-attention to 77 keys over
     * 88 tiles of 128 queries, d 256): Q and O cross at 0.42 of the memory's rate on top
     * of the block's fixed cost; 200 tiles (two waves, not yet persistent) pay no such
     * term (docs/model.md §14b) */
    const char *qs[] = { "q=11264", "q=25600" };
    double qo[2], lat[2];

    for (guint i = 0; i < G_N_ELEMENTS (qs); i++)
      {
        g_autoptr(NapkinDiagram) d = napkin_test_load_example ("flash-attention.napkin");
        g_autoptr(NapkinAnalysis) an = NULL;
        const NapkinPlanKernel *pk;

        axis (d, "b=1"), axis (d, "h=1"), axis (d, qs[i]), axis (d, "k=77"), axis (d, "d=256");
        tile (d, "block.k=77");
        an = analyze (d, "h100", FALSE);
        pk = napkin_plan_kernel_for (an->plan, 0, -1);
        g_assert_cmpint (pk->grid, ==, i == 0 ? 88 : 200);
        g_assert_cmpint (pk->u.att.persist_tiles, ==, 0);
        qo[i] = (double) pk->u.att.NQ * 256 * 2 * 2 / (h->levels[NAPKIN_LEVEL_HBM].bandwidth * 0.42);
        lat[i] = g_array_index (an->kernels, NapkinKernelCost, 0).latency_s;
      }
    g_assert_cmpfloat_with_epsilon (lat[0], block + qo[0], 1e-12);
    g_assert_cmpfloat_with_epsilon (lat[1], 2 * block, 1e-12);
  }
  {
    /* long sequences at the sweep's tiles, now the file's own (q 128, k 128, 3 stages;
     * 0.8671 ms measured there): the fixed cost is 8 % of 0.867 ms; the exponentials add
     * 84 % of their SFU time to the products'. The file's earlier tiles (k 64, 2 stages)
     * are predicted 1.07 ms (measured 1.054): tune ranks these first. */
    g_autoptr(NapkinDiagram) d = napkin_test_load_example ("flash-attention.napkin");
    g_autoptr(NapkinDiagram) own = napkin_test_load_example ("flash-attention.napkin");
    g_autoptr(NapkinAnalysis) an = NULL;
    g_autoptr(NapkinAnalysis) slow = NULL;
    const NapkinKernelCost *k;

    tile (own, "block.k=64"), tile (own, "block.stages=2");
    an = analyze (d, "h100", FALSE);
    slow = analyze (own, "h100", FALSE);
    g_assert_cmpfloat (slow->predicted_time_s, >, 1.2 * an->predicted_time_s);
    k = &g_array_index (an->kernels, NapkinKernelCost, 0);
    g_assert_cmpfloat_with_epsilon (an->predicted_time_s * 1e3, 0.870, 0.002);
    g_assert_cmpfloat_with_epsilon (k->overlap_s - k->latency_s - h->launch_overhead_s,
                                    (k->time_s[NAPKIN_RESOURCE_TENSOR] + 0.84 * k->time_s[NAPKIN_RESOURCE_SFU])
                                    * k->quantisation, 1e-9);
  }
  {
    /* decoding, 16 splits: the combine's 3 round trips (lse, partials, store) */
    g_autoptr(NapkinDiagram) d = napkin_test_load_example ("attention-decode.napkin");
    g_autoptr(NapkinAnalysis) an = analyze (d, "h100", FALSE);
    const NapkinKernelCost *c;

    g_assert_cmpuint (an->kernels->len, ==, 2);
    c = &g_array_index (an->kernels, NapkinKernelCost, 1);
    g_assert_nonnull (strstr (c->name, "attention-combine"));
    g_assert_cmpfloat_with_epsilon (c->latency_s + c->time_s[NAPKIN_RESOURCE_HBM],
                                    3 * h->levels[NAPKIN_LEVEL_HBM].latency_s, 1e-12);
  }
}

/* On the H100 datasheet figures: the group size above which a matmul stops being
 * bound by device memory. */
static void
test_h100_threshold (void)
{
  NapkinArch *h = napkin_test_arch ("h100");
  double ridge = napkin_arch_tensor_rate (h, NAPKIN_TENSOR_FP16) / h->levels[NAPKIN_LEVEL_HBM].bandwidth;

  /* the paper's ≈ 295: FLOPs per byte at the fp16 peak, i.e. the threshold for
   * one byte per element; fp16 elements (2 bytes) put it at 2 × 295 */
  g_assert_cmpfloat_with_epsilon (ridge, 295.3, 0.1);
  g_assert_cmpfloat_with_epsilon (napkin_matmul_threshold (h, NAPKIN_TENSOR_FP16, 1), 295.3, 0.1);
  g_assert_cmpfloat_with_epsilon (napkin_matmul_threshold (h, NAPKIN_TENSOR_FP16, 2), 590.7, 0.1);
  /* fp8 doubles the rate and halves the bytes: the same threshold */
  g_assert_cmpfloat_with_epsilon (napkin_matmul_threshold (h, NAPKIN_TENSOR_FP8, 1), 590.7, 0.2);

  /* and the full model agrees: square tiles of 512 are HBM-bound, 640 tensor-bound */
  for (guint i = 0; i < 2; i++)
    {
      g_autoptr(NapkinDiagram) d = single_stage ("matmul-tiled.napkin");
      g_autoptr(NapkinAnalysis) an = NULL;
      const char *g = i == 0 ? "512" : "640";
      g_autofree char *tm = g_strdup_printf ("block.m=%s", g);
      g_autofree char *tn = g_strdup_printf ("block.n=%s", g);

      axis (d, "m=5120"), axis (d, "n=5120"), axis (d, "k=65536");
      tile (d, tm), tile (d, tn);
      an = analyze (d, "h100", TRUE);
      if (i == 0)
        g_assert_cmpfloat (an->resource_s[NAPKIN_RESOURCE_HBM], >, an->resource_s[NAPKIN_RESOURCE_TENSOR]);
      else
        g_assert_cmpfloat (an->resource_s[NAPKIN_RESOURCE_HBM], <, an->resource_s[NAPKIN_RESOURCE_TENSOR]);
      /* such tiles do not fit shared memory: the model says so */
      g_assert_false (an->feasible);
    }
}

static void
test_hopper_sketch (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("hopper-attention-fp8.napkin");
  /* the paper's sketch: the ideal the relabeling allows */
  g_autoptr(NapkinAnalysis) an = analyze (d, "h100", TRUE);
  /* what Napkin generates for it: the plan's fp8 attention on wgmma (e4m3 Q·Kᵀ, fp16 P·V) */
  g_autoptr(NapkinAnalysis) honest = analyze (d, "h100", FALSE);
  const NapkinRegionCost *wg = region (an, "warpgroup");
  const NapkinKernelCost *k = &g_array_index (honest->kernels, NapkinKernelCost, 0);

  g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
  g_assert_cmpuint (honest->generic_kernels, ==, 0);

  /* fp8 Q·Kᵀ and fp16 P·V, equal FLOPs: 2 / (1/1978.9 + 1/989.4) TFLOP/s */
  g_assert_cmpfloat_with_epsilon (an->tensor_throughput / 1e15, 2.0 / (1 / 1.9789 + 1 / 0.9894), 1e-3);
  g_assert_cmpfloat_with_epsilon (an->tensor_throughput / 1e15, 1.32, 0.005);
  g_assert_cmpint (an->tensor_flops[NAPKIN_TENSOR_FP8], ==, an->tensor_flops[NAPKIN_TENSOR_FP16]);
  /* warpgroups per SM: the register file binds at two */
  g_assert_cmpint (wg->threads, ==, 128);
  g_assert_cmpint (wg->per_sm, ==, 2);
  g_assert_cmpstr (wg->binding_limit, ==, "registers");
  g_assert_true (an->feasible);
  /* tensor-core time: the fp8 half at 1978.9, the fp16 half at 989.4 TFLOP/s */
  g_assert_cmpfloat_with_epsilon (an->resource_s[NAPKIN_RESOURCE_TENSOR] * 1e6,
                                  an->tensor_flops[NAPKIN_TENSOR_FP8] / 1978.9e6
                                  + an->tensor_flops[NAPKIN_TENSOR_FP16] / 989.4e6, 0.5);
  /* overlap takes the largest resource, so the prediction is at most the ideal */
  g_assert_cmpfloat (an->throughput, <=, an->tensor_throughput);
  g_assert_cmpfloat (an->predicted_time_s, >=, an->resource_s[an->bound]);
}

/* ---- every example, every architecture ------------------------------------------------- */

static void
test_examples_all_archs (void)
{
  const char *dir = g_getenv ("NAPKIN_EXAMPLES_DIR");
  g_autoptr(GDir) gdir = g_dir_open (dir, 0, NULL);
  NapkinArchRegistry *reg = napkin_arch_registry_get_default ();
  const char *name;
  guint n = 0;

  g_assert_nonnull (gdir);
  while ((name = g_dir_read_name (gdir)))
    {
      g_autoptr(NapkinDiagram) d = NULL;

      if (!g_str_has_suffix (name, ".napkin"))
        continue;
      d = napkin_test_load_example (name);
      for (guint i = 0; i < napkin_arch_registry_count (reg); i++)
        {
          g_autoptr(NapkinAnalysis) an = napkin_analyze (d, napkin_arch_registry_get (reg, i), NULL, NULL);

          g_assert_nonnull (an);
          g_assert_true (isfinite (an->predicted_time_s) && an->predicted_time_s > 0);
          g_assert_true (isfinite (an->energy_j) && an->energy_j > 0);
          g_assert_cmpfloat (an->serial_time_s, >=, an->predicted_time_s);
          /* feasible, or explained */
          g_assert_true (an->feasible == (an->errors->len == 0));
          n++;
        }
      /* on the H100 every example fits */
      {
        g_autoptr(NapkinAnalysis) an = analyze (d, "h100", FALSE);

        if (!an->feasible)
          g_error ("%s: %s", name, (char *) g_ptr_array_index (an->errors, 0));
      }
    }
  g_assert_cmpuint (n, >=, 9 * 6);
}

/* The figures a user reads are honest (docs/model.md, §7): on every example and profile
 * no share of a peak is above 100 % — the throughput counts the work the kernels do (a
 * mask's hidden pairs not), each level's time is the kernels' at that level in every
 * table and never past the total — and a region's footprint is its kernel's plan's
 * shared memory, feasible exactly when that fits. */
static void
test_honest_figures (void)
{
  const char *dir = g_getenv ("NAPKIN_EXAMPLES_DIR");
  g_autoptr(GDir) gdir = g_dir_open (dir, 0, NULL);
  NapkinArchRegistry *reg = napkin_arch_registry_get_default ();
  const char *name;
  guint checked = 0;

  while ((name = g_dir_read_name (gdir)))
    {
      g_autoptr(NapkinDiagram) d = NULL;

      if (!g_str_has_suffix (name, ".napkin"))
        continue;
      d = napkin_test_load_example (name);
      if (napkin_diagram_get_gpus (d) != NULL)
        continue;
      for (guint i = 0; i < napkin_arch_registry_count (reg); i++)
        {
          NapkinArch *arch = napkin_arch_registry_get (reg, i);
          g_autoptr(NapkinAnalysis) a = napkin_analyze (d, arch, NULL, NULL);
          double peak = 0;

          g_assert_nonnull (a);
          for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
            peak = MAX (peak, napkin_arch_tensor_rate (arch, c));
          if (a->flops.tensor > 0 && a->throughput > peak * (1 + 1e-9))
            g_error ("%s on %s: %.4g FLOP/s predicted, above the peak %.4g", name, arch->id, a->throughput, peak);
          if (a->flops.tensor > 0 && a->throughput > a->tensor_throughput * (1 + 1e-9))
            g_error ("%s on %s: %.4g FLOP/s predicted, above its types' peak %.4g", name, arch->id, a->throughput,
                     a->tensor_throughput);
          for (guint k = 0; k < a->kernels->len; k++)
            g_assert_cmpfloat (g_array_index (a->kernels, NapkinKernelCost, k).time_s_predicted, <=,
                               a->predicted_time_s * (1 + 1e-9));
          for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
            {
              g_assert_cmpfloat (a->levels[l].time_s, ==, a->resource_s[NAPKIN_RESOURCE_HBM + l]);
              if (a->levels[l].time_s > a->predicted_time_s * (1 + 1e-9))
                g_error ("%s on %s: %s takes %.4g s of %.4g s", name, arch->id, napkin_level_to_string (l),
                         a->levels[l].time_s, a->predicted_time_s);
            }
          for (guint r = 0; r < a->regions->len; r++)
            {
              const NapkinRegionCost *c = &g_array_index (a->regions, NapkinRegionCost, r);
              const NapkinPlanKernel *pk = napkin_plan_kernel_for (a->plan, (int) c->region, -1);

              if (c->level != NAPKIN_LEVEL_SMEM || c->parent >= 0 || pk == NULL || pk->path == NAPKIN_PATH_GENERIC
                  || pk->kind == NAPKIN_PLAN_ELEMENTWISE)
                continue;
              g_assert_cmpint (napkin_region_block_bytes (a, r), ==, pk->smem_bytes);
              if (pk->smem_bytes + arch->smem_reserved_per_block > arch->levels[NAPKIN_LEVEL_SMEM].capacity_bytes)
                g_assert_false (c->feasible);
            }
          checked++;
        }
    }
  g_assert_cmpuint (checked, >=, 60);
}

static void
test_plain_materialised (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("attention.napkin");
  g_autoptr(NapkinAnalysis) an = analyze (d, "h100", FALSE);
  gint64 qkv = 4 * 16 * 4096 * 128, s = 4 * 16 * 4096 * 4096;

  gint64 rows = 4 * 16 * 4096;

  /* With no region drawn the plan runs the attention as FlashAttention (docs/plan.md,
   * "The pipeline"): one kernel, the scores never in device memory — Q and O once, K and
   * V once per block of 128 queries. */
  g_assert_cmpuint (an->kernels->len, ==, 1);
  g_assert_cmpstr (g_array_index (an->kernels, NapkinKernelCost, 0).plan_kind, ==, "attention");
  g_assert_cmpint (an->levels[NAPKIN_LEVEL_HBM].transfer_elements, <, 2 * qkv + 2 * qkv * (4096 / 128) + 1);
  /* … at the tiles drawn in the FlashAttention example, so at its predicted time */
  {
    g_autoptr(NapkinDiagram) drawn = napkin_test_load_example ("flash-attention.napkin");
    g_autoptr(NapkinAnalysis) flash = analyze (drawn, "h100", FALSE);

    g_assert_cmpfloat_with_epsilon (an->predicted_time_s, flash->predicted_time_s, 1e-3 * flash->predicted_time_s);
  }
  /* The paper's model prices the diagram as drawn: every operation reads its inputs
   * from and writes its result to device memory, with nowhere on chip for a row's
   * statistics: three passes with fp32 row statistics. */
  {
    g_autoptr(NapkinAnalysis) paper = analyze (d, "h100", TRUE);

    g_assert_cmpint (paper->levels[NAPKIN_LEVEL_HBM].transfer_elements, ==,
                     (2 * qkv + s) + (s + s) + (3 * s + s + 5 * rows) + (s + qkv + qkv));
  }
}

/* An explicit L2 panel: the device-memory traffic is the panels', the blocks
 * inside read from L2, and the waves are counted in blocks, not panels. */
static void
test_l2_panel (void)
{
  g_autoptr(NapkinDiagram) plain = napkin_test_load_example ("matmul-tiled.napkin");
  g_autoptr(json_object) root = napkin_diagram_to_json (plain);
  json_object *panel = json_tokener_parse ("{\"name\": \"panel\", \"level\": \"l2\", \"nodes\": [\"mm\"], "
                                           "\"marks\": {\"m\": {\"parallel\": 1024}, \"n\": {\"parallel\": 1024}}}");
  g_autoptr(NapkinDiagram) d = NULL;
  g_autoptr(NapkinAnalysis) an = NULL;
  g_autoptr(GError) error = NULL;
  const NapkinRegionCost *p, *b;
  const NapkinKernelCost *k;

  json_object_array_add (json_object_object_get (root, "regions"), panel);
  d = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  an = analyze (d, "h100", FALSE);
  g_assert_true (an->feasible);
  p = region (an, "panel");
  b = region (an, "block");
  g_assert_cmpint (p->instances, ==, 16);
  g_assert_cmpint (b->instances, ==, 1024);
  g_assert_cmpint (b->parent_level, ==, NAPKIN_LEVEL_L2);
  /* each panel reads a 1024 × 4096 strip of A and of B once, and writes C once */
  g_assert_cmpint (an->levels[NAPKIN_LEVEL_HBM].transfer_elements, ==, 2 * 16 * 1024 * 4096 + 4096 * 4096);
  /* the blocks' H now comes from L2 */
  g_assert_cmpint (an->levels[NAPKIN_LEVEL_L2].transfer_elements, ==, b->transfer_elements);
  g_assert_cmpint (b->transfer_elements, ==, 2 * (G_GINT64_CONSTANT (4096) * 4096 * 4096 / 128) + 4096 * 4096);
  g_assert_cmpuint (an->kernels->len, ==, 1);
  k = &g_array_index (an->kernels, NapkinKernelCost, 0);
  g_assert_cmpfloat_with_epsilon (k->quantisation, 8.0 * 132 / 1024, 1e-12);
  g_assert_cmpint (p->per_sm, ==, 2);   /* 18.9 MB panels in 50 MiB of L2 */
}

/* Each binding capacity, named. */
static void
test_occupancy (void)
{
  g_autoptr(NapkinDiagram) small = napkin_test_load_example ("softmax.napkin");
  g_autoptr(NapkinDiagram) rows = napkin_test_load_example ("softmax.napkin");
  g_autoptr(NapkinDiagram) gemm = napkin_test_load_example ("matmul-tiled.napkin");
  g_autoptr(NapkinAnalysis) a = NULL;
  g_autoptr(NapkinAnalysis) b = NULL;
  g_autoptr(NapkinAnalysis) c = NULL;
  const NapkinRegionCost *r;

  /* 4 rows of 1024 fp16 (the paper's footprint 8 KiB): the plan's row kernel keeps them in
   * registers, 32 threads a row, 128 a block at ~64 registers: the registers bind at 8 */
  axis (small, "c=1024");
  a = analyze (small, "h100", FALSE);
  r = region (a, "rows");
  g_assert_cmpint (r->footprint_bytes, ==, 4 * 1024 * 2);
  g_assert_cmpint (r->plan_smem_bytes, >, 0);
  g_assert_cmpint (r->per_sm, ==, 8);
  g_assert_cmpstr (r->binding_limit, ==, "registers");
  g_assert_cmpint (r->waves, ==, (16384 / 4 + 132 * 8 - 1) / (132 * 8));

  /* 4 rows of 16000: 125 KiB by the paper's footprint, but the plan's kernel holds a row
   * in registers (512 threads, 32 values each) and asks for 128 B of shared memory */
  axis (rows, "c=16000");
  b = analyze (rows, "h100", FALSE);
  r = region (b, "rows");
  g_assert_cmpint (r->footprint_bytes, ==, 4 * 16000 * 2);
  g_assert_cmpint (r->plan_smem_bytes, <, 1024);
  g_assert_cmpint (r->per_sm, ==, 2);
  g_assert_cmpstr (r->binding_limit, ==, "registers");
  /* memory-bound: X read once, Y written once */
  g_assert_cmpint (b->levels[NAPKIN_LEVEL_HBM].transfer_bytes, ==, 2 * 16384 * 16000 * 2);
  g_assert_cmpint (b->bound, ==, NAPKIN_RESOURCE_HBM);
  g_assert_true (g_array_index (b->kernels, NapkinKernelCost, 0).overlaps);
  g_assert_cmpfloat (b->predicted_time_s, ==, b->overlap_time_s);

  /* one stage and one block per SM (128×256 blocks: the plan's shared memory binds):
   * nothing hides the loads, the prediction is the no-overlap time */
  tile (gemm, "block.n=256");
  tile (gemm, "block.stages=1");
  c = analyze (gemm, "h100", FALSE);
  r = region (c, "block");
  g_assert_cmpint (r->per_sm, ==, 1);
  g_assert_cmpstr (r->binding_limit, ==, "shared memory");
  g_assert_false (g_array_index (c->kernels, NapkinKernelCost, 0).overlaps);
  g_assert_cmpfloat (c->predicted_time_s, ==, c->serial_time_s);
  g_assert_cmpfloat (c->predicted_time_s, >, c->overlap_time_s);
  /* no overlap: per-SM resources add up, device-memory bytes count once (the slower of hbm and l2) */
  {
    const NapkinKernelCost *k = &g_array_index (c->kernels, NapkinKernelCost, 0);
    double q = k->quantisation;
    double expect = (k->time_s[NAPKIN_RESOURCE_TENSOR] + k->time_s[NAPKIN_RESOURCE_CUDA]
                     + k->time_s[NAPKIN_RESOURCE_SFU] + k->time_s[NAPKIN_RESOURCE_SMEM]
                     + k->time_s[NAPKIN_RESOURCE_REGISTERS]) * q
                    + MAX (k->time_s[NAPKIN_RESOURCE_HBM], k->time_s[NAPKIN_RESOURCE_L2])
                    + k->chunk_s + k->latency_s + napkin_test_arch ("h100")->launch_overhead_s;

    g_assert_cmpfloat_with_epsilon (k->serial_s, expect, 1e-15);
  }
}

/* ---- feasibility ---------------------------------------------------------------------- */

static void
check_error (const char *example_name,
             const char *spec,
             const char *arch_id,
             const char *expected)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example (example_name);
  g_autoptr(NapkinAnalysis) an = NULL;

  if (spec)
    {
      g_auto(GStrv) specs = g_strsplit (spec, ",", -1);

      for (guint i = 0; specs[i]; i++)
        tile (d, specs[i]);
    }
  an = analyze (d, arch_id, FALSE);
  g_assert_false (an->feasible);
  /* each error's region as the editor reads it (error_regions): the one its path names */
  g_assert_cmpuint (an->error_regions->len, ==, an->errors->len);
  for (guint i = 0; i < an->errors->len; i++)
    {
      guint named;

      if (sscanf (g_ptr_array_index (an->errors, i), "regions[%u]", &named) == 1)
        g_assert_cmpint (g_array_index (an->error_regions, int, i), ==, (int) named);
    }
  for (guint i = 0; i < an->errors->len; i++)
    if (strstr (g_ptr_array_index (an->errors, i), expected))
      return;
  g_error ("expected “%s” among %u errors, first: %s", expected, an->errors->len,
           an->errors->len ? (char *) g_ptr_array_index (an->errors, 0) : "none");
}

static void
test_feasibility (void)
{
  check_error ("matmul-tiled.napkin", "block.m=100", "h100",
               "regions[0].marks.m: tile 100 is not a multiple of 16: the row (m) axis of contraction “mm”");
  check_error ("matmul-tiled.napkin", "block.k=24", "h100",
               "regions[0].marks.k: tile 24 × 2 bytes = 48 bytes of A's contiguous axis k is not a multiple of 128");
  /* 256·256 + 3 stages · (256 + 256) · 64 = 163840 elements */
  check_error ("matmul-tiled.napkin", "block.m=256,block.n=256", "h100",
               "regions[0]: footprint 327680 bytes (163840 elements) exceeds the 232448 bytes of shared memory one block can have on h100");
  /* the kernel plan's shared memory (mma.sync: 3 stages of 128×(64+8) and 64×(128+8) halves) */
  check_error ("matmul-tiled.napkin", NULL, "rtx4090", "107520 bytes of shared memory per block; rtx4090 allows 101376");
}

static void
test_overflow (void)
{
  g_autoptr(NapkinDiagram) big = napkin_test_load_example ("matmul-tiled.napkin");
  g_autoptr(NapkinDiagram) huge = napkin_test_load_example ("matmul-tiled.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) a = NULL;
  g_autoptr(NapkinAnalysis) b = NULL;

  /* 2^20 per axis: 2^61 FLOPs, still countable: exact and finite */
  axis (big, "m=1048576"), axis (big, "n=1048576"), axis (big, "k=1048576");
  a = analyze (big, "h100", TRUE);
  g_assert_cmpint (a->flops_total, ==, G_GINT64_CONSTANT (1) << 61);
  g_assert_cmpint (region (a, "block")->transfer_elements, ==,
                   (G_GINT64_CONSTANT (1) << 54) + (G_GINT64_CONSTANT (1) << 40));
  g_assert_true (isfinite (a->predicted_time_s));

  /* 2^40 per axis cannot be counted: a clear error, not a wrapped number */
  axis (huge, "m=1099511627776"), axis (huge, "n=1099511627776"), axis (huge, "k=1099511627776");
  b = napkin_analyze (huge, napkin_test_arch ("h100"), NULL, &error);
  g_assert_null (b);
  g_assert_nonnull (error);
  g_assert_true (error->domain == NAPKIN_DOCUMENT_ERROR);
  g_assert_nonnull (strstr (error->message, "64 bits"));
}

/* ---- tune ---------------------------------------------------------------------------------- */

static void
check_tune (const char *name)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example (name);
  NapkinTuneOptions options = { 5, 0, FALSE, NAPKIN_DTYPE_FP16 };
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinTuneResult) r = napkin_tune (d, napkin_test_arch ("h100"), &options, &error);
  const NapkinTuneCandidate *best;
  g_autoptr(NapkinAnalysis) check = NULL;

  g_assert_no_error (error);
  g_assert_nonnull (r->current);
  g_assert_cmpuint (r->best->len, ==, 5);
  best = g_ptr_array_index (r->best, 0);
  g_assert_cmpfloat (best->predicted_time_s, <=, r->current->predicted_time_s * (1 + 1e-12));
  for (guint i = 1; i < r->best->len; i++)
    g_assert_cmpfloat (((NapkinTuneCandidate *) g_ptr_array_index (r->best, i))->predicted_time_s, >=,
                       best->predicted_time_s);
  /* applying the best and analysing again gives its number */
  napkin_tune_apply (d, best, &error);
  g_assert_no_error (error);
  check = analyze (d, "h100", FALSE);
  g_assert_true (check->feasible);
  g_assert_cmpfloat_with_epsilon (check->predicted_time_s, best->predicted_time_s, 1e-12);
}

static void
test_tune (void)
{
  check_tune ("matmul-tiled.napkin");
  check_tune ("flash-attention.napkin");
}

static NapkinDiagram *
matmul_bf16 (gint64 size)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("matmul-nested.napkin");
  g_autoptr(json_object) root = napkin_diagram_to_json (d);
  json_object *tensors = json_object_object_get (root, "tensors");
  g_autoptr(GError) error = NULL;
  NapkinDiagram *copy;

  for (guint i = 0; i < json_object_array_length (tensors); i++)
    json_object_object_add (json_object_array_get_idx (tensors, i), "dtype", json_object_new_string ("bf16"));
  copy = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  for (const char *const *a = (const char *const[]) { "m", "n", "k", NULL }; *a; a++)
    {
      g_autofree char *spec = g_strdup_printf ("%s=%" G_GINT64_FORMAT, *a, size);

      axis (copy, spec);
    }
  return copy;
}

/* The specs of a candidate without its warp tiles. */
static char *
block_specs (const NapkinTuneCandidate *c)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; c->specs[i]; i++)
    if (!g_str_has_prefix (c->specs[i], "warp."))
      g_string_append_printf (s, "%s ", c->specs[i]);
  return g_string_free (s, FALSE);
}

/* On the wgmma skeleton the warp tiles do not reach the kernel: tune lists one
 * candidate per block tiling and stage count there, so --measure never times one
 * kernel twice; on mma.sync (L40S) the warp tiles are the kernel's and stay. Stage
 * counts the plan clamps to the same kernel are listed once. */
static void
test_tune_distinct_kernels (void)
{
  const char *archs[] = { "h100", "l40s" };

  for (guint x = 0; x < G_N_ELEMENTS (archs); x++)
    {
      g_autoptr(NapkinDiagram) d = matmul_bf16 (8192);
      NapkinTuneOptions options = { 1000, 0, FALSE, NAPKIN_DTYPE_FP16 };
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinTuneResult) r = napkin_tune (d, napkin_test_arch (archs[x]), &options, &error);
      g_autoptr(GHashTable) blocks = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
      guint wgmma = 0, repeated = 0;

      g_assert_no_error (error);
      for (guint i = 0; i < r->best->len; i++)
        {
          const NapkinTuneCandidate *c = g_ptr_array_index (r->best, i);
          g_autoptr(NapkinDiagram) copy = napkin_diagram_copy (d);
          g_autoptr(NapkinAnalysis) a = NULL;
          char *key = block_specs (c);

          napkin_tune_apply (copy, c, &error);
          g_assert_no_error (error);
          a = analyze (copy, archs[x], FALSE);
          if (g_strcmp0 (g_array_index (a->kernels, NapkinKernelCost, 0).tensor_path, "wgmma") == 0)
            {
              wgmma++;
              g_assert_false (g_hash_table_contains (blocks, key));
            }
          else if (g_hash_table_contains (blocks, key))
            repeated++;
          g_hash_table_add (blocks, key);
        }
      if (x == 0)
        g_assert_cmpuint (wgmma, >, 10);
      else
        {
          g_assert_cmpuint (wgmma, ==, 0);
          g_assert_cmpuint (repeated, >, 10);   /* mma.sync: warp-tile variants kept */
        }
    }

  /* stages asked beyond what fits are clamped by the plan: one candidate per kernel as
   * launched (d 256 attention on an H200 listed k~128 with stages 2…6, one kernel) */
  {
    g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "attention-causal-d256.napkin", NULL);
    g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, NULL);
    NapkinTuneOptions options = { 20, 0, FALSE, NAPKIN_DTYPE_FP16 };
    g_autoptr(NapkinTuneResult) r = napkin_tune (d, napkin_test_arch ("h200"), &options, NULL);

    g_assert_nonnull (r);
    for (guint i = 0; i < r->best->len; i++)
      for (guint j = i + 1; j < r->best->len; j++)
        {
          const NapkinTuneCandidate *a = g_ptr_array_index (r->best, i), *b = g_ptr_array_index (r->best, j);
          g_auto(GStrv) sa = g_strsplit (a->tiles, " block.stages=", 2);
          g_auto(GStrv) sb = g_strsplit (b->tiles, " block.stages=", 2);

          /* the same tiles but for the stages: then a different kernel */
          if (g_strcmp0 (sa[0], sb[0]) == 0)
            g_assert_cmpint (a->footprint_bytes, !=, b->footprint_bytes);
        }
  }
}

/* The stage pipeline (docs/model.md §6c): at 8192³ with 256 × 128 blocks a chunk's
 * compute (0.56 µs) is shorter than a load's round trip plus its transfer, so 2 stages
 * expose the loads (measured 2.63 ms against 1.37 ms at 4 stages); 3 cover them. */
static void
test_pipeline_stages (void)
{
  const NapkinArch *h = napkin_test_arch ("h100");
  double times[5] = { 0 }, latency[5] = { 0 };

  for (guint s = 2; s <= 4; s++)
    {
      g_autoptr(NapkinDiagram) d = matmul_bf16 (8192);
      g_autofree char *spec = g_strdup_printf ("block.stages=%u", s);
      g_autoptr(NapkinAnalysis) a = NULL;

      tile (d, "block.m=parallel:256");
      tile (d, "block.n=parallel:128");
      tile (d, spec);
      a = analyze (d, "h100", FALSE);
      g_assert_true (a->feasible);
      g_assert_cmpstr (g_array_index (a->kernels, NapkinKernelCost, 0).tensor_path, ==, "wgmma");
      times[s] = a->predicted_time_s;
      latency[s] = g_array_index (a->kernels, NapkinKernelCost, 0).latency_s;
    }
  g_assert_cmpfloat (latency[2], >, 0);
  g_assert_cmpfloat (latency[3], ==, 0);
  g_assert_cmpfloat (latency[4], ==, 0);
  g_assert_cmpfloat (times[2], >, 1.1 * times[3]);
  g_assert_cmpfloat_with_epsilon (times[3], times[4], 1e-12);
  {
    /* the wait per step: (latency + transfer + compute) / 2 − the longer of the two;
     * 2048 steps (16 waves × 128 chunks); bounded by half a latency a step at most */
    double per_step = latency[2] / (16 * 128);

    g_assert_cmpfloat (per_step, >, 0);
    g_assert_cmpfloat (per_step, <, h->levels[NAPKIN_LEVEL_HBM].latency_s / 2 + 1e-12);
  }
  {
    /* no latency figure in the profile, no term */
    NapkinArch copy = *h;
    g_autoptr(NapkinDiagram) d = matmul_bf16 (8192);
    NapkinAnalyzeOptions options = { FALSE, NAPKIN_DTYPE_FP16, FALSE, FALSE };
    g_autoptr(NapkinAnalysis) a = NULL;
    g_autoptr(GError) error = NULL;

    copy.levels[NAPKIN_LEVEL_HBM].latency_s = 0;
    tile (d, "block.m=parallel:256");
    tile (d, "block.n=parallel:128");
    tile (d, "block.stages=2");
    a = napkin_analyze (d, &copy, &options, &error);
    g_assert_no_error (error);
    g_assert_cmpfloat (g_array_index (a->kernels, NapkinKernelCost, 0).latency_s, ==, 0);
  }
}

/* Attention tiles that do not divide the sequence would run the generic loop nest:
 * tune never proposes them (192 queries divide 3072, not 4096; 176 keys neither). */
static void
test_tune_attention_divides (void)
{
  const gint64 sizes[] = { 4096, 3072 };

  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      g_autoptr(NapkinDiagram) d = napkin_test_load_example ("flash-attention.napkin");
      g_autofree char *q = g_strdup_printf ("q=%" G_GINT64_FORMAT, sizes[i]);
      g_autofree char *k = g_strdup_printf ("k=%" G_GINT64_FORMAT, sizes[i]);
      NapkinTuneOptions options = { 1000, 0, FALSE, NAPKIN_DTYPE_FP16 };
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinTuneResult) r = NULL;
      guint q192 = 0;

      axis (d, q), axis (d, k), axis (d, "d=64");
      r = napkin_tune (d, napkin_test_arch ("h100"), &options, &error);
      g_assert_no_error (error);
      for (guint c = 0; c < r->best->len; c++)
        {
          const NapkinTuneCandidate *cand = g_ptr_array_index (r->best, c);

          g_assert_null (strstr (cand->tiles, "block.k~176"));
          q192 += strstr (cand->tiles, "block.q=192 ") != NULL;
        }
      if (sizes[i] == 4096)
        g_assert_cmpuint (q192, ==, 0);
      else
        g_assert_cmpuint (q192, >, 0);
    }
}

/* The rows skeleton's threads per block (§7c): tune tries every count try_rows takes,
 * and the model sees what they change: registers, so blocks (rows in flight) per SM. */
static void
test_tune_rows_threads (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("layernorm.napkin");
  NapkinTuneOptions options = { 1000, 0, FALSE, NAPKIN_DTYPE_FP16 };
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinTuneResult) r = napkin_tune (d, napkin_test_arch ("h100"), &options, &error);
  g_autoptr(GHashTable) counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  gint64 per_sm[2] = { 0 };

  g_assert_no_error (error);
  for (guint c = 0; c < r->best->len; c++)
    {
      const NapkinTuneCandidate *cand = g_ptr_array_index (r->best, c);

      for (guint i = 0; cand->specs[i]; i++)
        if (g_str_has_prefix (cand->specs[i], "rows.threads="))
          g_hash_table_add (counts, g_strdup (cand->specs[i]));
    }
  /* C = 4096: 32 to 512 (8·1024 does not divide 4096) */
  g_assert_cmpuint (g_hash_table_size (counts), ==, 5);
  g_assert_true (g_hash_table_contains (counts, "rows.threads=32"));
  g_assert_true (g_hash_table_contains (counts, "rows.threads=512"));
  g_assert_false (g_hash_table_contains (counts, "rows.threads=1024"));
  for (guint i = 0; i < 2; i++)
    {
      g_autoptr(NapkinDiagram) copy = napkin_test_load_example ("layernorm.napkin");
      g_autoptr(NapkinAnalysis) a = NULL;

      tile (copy, i == 0 ? "rows.threads=32" : "rows.threads=512");
      a = analyze (copy, "h100", FALSE);
      g_assert_cmpuint (region (a, "rows")->threads, ==, i == 0 ? 32 : 512);
      per_sm[i] = region (a, "rows")->per_sm;
    }
  g_assert_cmpint (per_sm[0], >, per_sm[1]);
  /* bad counts name the field */
  g_assert_false (napkin_tune_apply_spec (d, "rows.threads=2000", &error));
  g_assert_nonnull (strstr (error->message, "threads"));
  g_clear_error (&error);
  g_assert_false (napkin_tune_apply_spec (d, "nowhere.threads=64", &error));
  g_assert_nonnull (strstr (error->message, "nowhere"));
}

/* Idle hardware is priced (docs/model.md, "Idle SMs"): the row softmax of 16384 rows
 * of 16384 cut into 32 one-warp blocks on the H200's 132 SMs moves device memory through
 * 32 SMs only, so it takes at least 132/32 of the bandwidth time and ranks far below
 * the tilings that fill the GPU; a one-warp block keeps its row in shared memory (512
 * values a thread do not fit its registers) and its few loads in flight are priced by
 * Little's law; a threads count the kernel cannot run is said, never changed silently,
 * and tune never proposes one. */
/* The flash-attention example resized to cross-attention over 77 text tokens: the model
 * prices 256 query rows a block on mma.sync below every wgmma tile, but mma.sync's prices
 * on Hopper are not calibrated (that kernel ran 1.5× slower than the plan's own on an
 * H200: docs/perf-notes.md, "Session 13"), so the search ranks it after the tiles that
 * keep wgmma and the best keeps wgmma. */
static void
test_tune_best_path (void)
{
  const char *axes[] = { "b=2", "h=32", "q=1923", "k=77", "d=96" };
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("flash-attention.napkin");
  NapkinTuneOptions options = { 400, 0, FALSE, NAPKIN_DTYPE_FP16 };
  g_autoptr(NapkinTuneResult) r = NULL;
  const NapkinTuneCandidate *best;
  gboolean ranked_after = FALSE, seen_off = FALSE;

  for (guint i = 0; i < G_N_ELEMENTS (axes); i++)
    {
      g_autoptr(GError) error = NULL;

      g_assert_true (napkin_diagram_override_axis (d, axes[i], &error));
      g_assert_no_error (error);
    }
  g_assert_cmpuint (napkin_diagram_refit_tiles (d, NULL), ==, 1);   /* k by 128: the whole 77 */
  r = napkin_tune (d, napkin_test_arch ("h200"), &options, NULL);
  g_assert_nonnull (r);
  best = g_ptr_array_index (r->best, 0);
  g_assert_cmpuint (best->off_best_path, ==, 0);
  for (guint c = 1; c < r->best->len; c++)
    {
      const NapkinTuneCandidate *cand = g_ptr_array_index (r->best, c);

      if (cand->off_best_path > 0)
        {
          seen_off = TRUE;
          ranked_after |= cand->predicted_time_s < best->predicted_time_s;
        }
      else
        g_assert_false (seen_off);   /* every wgmma candidate before any off it */
    }
  g_assert_true (ranked_after);
}

/* Regions are hints and the model has a resolution (docs/plan.md, "Regions as hints"):
 * the causal GQA example at 2 × 8 × 4 heads of 2048², its block of 32 queries by 128 keys
 * redrawn in 2 stages (the example draws 3), gives way to the plan's own kernel (128-key chunks in 3 stages),
 * and that stays first although 64-key chunks in 4 stages are priced ~2 % faster — key
 * chunks of 32 priced 2 % faster than 128 ran 1.4× slower on an H200. */
static void
test_tune_resolution (void)
{
  const char *axes[] = { "b=2", "h=8", "g=4", "q=2048", "k=2048" };
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("attention-causal-gqa.napkin");
  NapkinTuneOptions options = { 400, 0, FALSE, NAPKIN_DTYPE_FP16, TRUE };
  g_autoptr(NapkinTuneResult) r = NULL;
  const NapkinTuneCandidate *best;
  gboolean close = FALSE;

  for (guint i = 0; i < G_N_ELEMENTS (axes); i++)
    g_assert_true (napkin_diagram_override_axis (d, axes[i], NULL));
  ((NapkinRegion *) napkin_diagram_region (d, 0))->stages = 2;
  r = napkin_tune (d, napkin_test_arch ("h200"), &options, NULL);
  g_assert_nonnull (r);
  g_assert_true (r->regions_replaced);
  g_assert_nonnull (r->relabeled);
  g_assert_nonnull (r->current);   /* the drawn block's own tiles, to compare with */
  best = g_ptr_array_index (r->best, 0);
  g_assert_nonnull (strstr (best->tiles, "attention1.k~128"));
  g_assert_nonnull (strstr (best->tiles, "attention1.stages=3"));
  g_assert_cmpfloat (best->predicted_time_s, <, r->current->predicted_time_s);
  for (guint c = 1; c < r->best->len; c++)
    {
      const NapkinTuneCandidate *cand = g_ptr_array_index (r->best, c);

      close |= cand->predicted_time_s < best->predicted_time_s
               && cand->predicted_time_s >= best->predicted_time_s * (1 - NAPKIN_TUNE_RESOLUTION);
      g_assert_cmpfloat (cand->predicted_time_s, >=, best->predicted_time_s * (1 - NAPKIN_TUNE_RESOLUTION));
    }
  g_assert_true (close);   /* the case this is about: a faster candidate within 3 % */
  /* without hints, the drawn block's own relabelings only */
  options.regions_are_hints = FALSE;
  {
    g_autoptr(NapkinTuneResult) drawn = napkin_tune (d, napkin_test_arch ("h200"), &options, NULL);

    g_assert_false (drawn->regions_replaced);
    g_assert_null (drawn->relabeled);
    g_assert_true (g_str_has_prefix (((NapkinTuneCandidate *) g_ptr_array_index (drawn->best, 0))->tiles, "block."));
  }
}

static void
test_tune_idle_sms (void)
{
  NapkinArch *h200 = napkin_test_arch ("h200");
  double bytes = 2.0 * 16384 * 16384 * 2, full = bytes / h200->levels[NAPKIN_LEVEL_HBM].bandwidth;
  double idle;

  {
    g_autoptr(NapkinDiagram) d = napkin_test_load_example ("softmax.napkin");
    g_autoptr(NapkinAnalysis) a = NULL;
    const NapkinKernelCost *k;
    const NapkinPlanKernel *pk;

    tile (d, "rows.r=parallel:512");
    tile (d, "rows.threads=32");
    a = analyze (d, "h200", FALSE);
    g_assert_true (a->feasible);
    k = &g_array_index (a->kernels, NapkinKernelCost, 0);
    pk = napkin_plan_kernel_for (a->plan, 0, -1);
    g_assert_cmpint (pk->grid, ==, 32);
    g_assert_true (pk->u.rows.smem_row);
    g_assert_cmpfloat_with_epsilon (k->fill, 32.0 / 132, 1e-12);
    g_assert_cmpfloat (a->predicted_time_s, >=, full * 132 / 32);
    idle = a->predicted_time_s;
  }
  {
    g_autoptr(NapkinDiagram) d = napkin_test_load_example ("softmax.napkin");
    NapkinTuneOptions options = { 40, 0, FALSE, NAPKIN_DTYPE_FP16 };
    g_autoptr(NapkinTuneResult) r = napkin_tune (d, h200, &options, NULL);
    const NapkinTuneCandidate *best;

    g_assert_nonnull (r);
    best = g_ptr_array_index (r->best, 0);
    g_assert_cmpfloat (best->predicted_time_s, <, idle / 3);
    for (guint c = 0; c < r->best->len; c++)
      {
        const NapkinTuneCandidate *cand = g_ptr_array_index (r->best, c);

        for (guint i = 0; cand->specs[i]; i++)
          {
            /* 16384 / 256 = 64 blocks of a region tile of 256 rows: half the SMs idle */
            if (g_str_equal (cand->specs[i], "rows.r=parallel:256"))
              g_assert_cmpfloat (cand->predicted_time_s, >=, full * 132 / 64);
            if (g_str_has_prefix (cand->specs[i], "rows.threads="))
              {
                guint64 t = g_ascii_strtoull (cand->specs[i] + strlen ("rows.threads="), NULL, 10);

                g_assert_cmpuint (t, >=, 32);
                g_assert_cmpuint (t & (t - 1), ==, 0);
              }
          }
      }
  }
  {
    /* rows of 64: the old rule halved the threads past a warp, to 16 */
    g_autoptr(NapkinDiagram) d = napkin_test_load_example ("softmax.napkin");
    NapkinTuneOptions options = { 40, 0, FALSE, NAPKIN_DTYPE_FP16 };
    g_autoptr(NapkinTuneResult) r = NULL;
    g_autoptr(NapkinAnalysis) a = NULL;
    gboolean said = FALSE;

    axis (d, "c=64");
    r = napkin_tune (d, h200, &options, NULL);
    g_assert_nonnull (r);
    for (guint c = 0; c < r->best->len; c++)
      {
        const NapkinTuneCandidate *cand = g_ptr_array_index (r->best, c);

        for (guint i = 0; cand->specs[i]; i++)
          g_assert_false (g_str_equal (cand->specs[i], "rows.threads=16"));
      }
    tile (d, "rows.threads=16");
    a = analyze (d, "h200", FALSE);
    g_assert_cmpuint (region (a, "rows")->threads, ==, 32);
    for (guint i = 0; i < a->warnings->len; i++)
      said |= strstr (g_ptr_array_index (a->warnings, i), "rows.threads: 16 → 32") != NULL;
    g_assert_true (said);
  }
}

/* A region around attention's operations that holds the keys whole (138 MB a block)
 * fits nowhere; the search also streams the axes its products sum over, so it proposes
 * the keys in chunks instead of "no feasible tiles" (docs/model.md §9). */
static void
test_tune_streams_whole_axis (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("attention.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (d);
  g_autoptr(NapkinRegion) region = napkin_region_new ("block1", NAPKIN_LEVEL_SMEM);
  NapkinTuneOptions options = { 5, 0, FALSE, NAPKIN_DTYPE_FP16 };
  g_autoptr(NapkinTuneResult) r = NULL;
  g_autoptr(NapkinAnalysis) before = NULL;
  g_autoptr(NapkinDiagram) applied = NULL;
  g_autoptr(NapkinAnalysis) after = NULL;
  const char *ops[] = { "qk", "scale", "sm", "pv" };
  const NapkinTuneCandidate *best;
  gboolean streams = FALSE;

  for (guint i = 0; i < G_N_ELEMENTS (ops); i++)
    napkin_region_add_node (region, ops[i]);
  g_assert_true (napkin_edit_add_region (history, region, NULL));
  g_assert_true (napkin_edit_set_mark (history, "block1", "q", NAPKIN_MARK_PARALLEL, 128, NULL));
  before = analyze (d, "h100", FALSE);
  g_assert_false (before->feasible);
  r = napkin_tune (d, napkin_test_arch ("h100"), &options, NULL);
  g_assert_nonnull (r);
  g_assert_cmpuint (r->best->len, >, 0);
  g_assert_null (r->current);   /* the file's own: infeasible */
  best = g_ptr_array_index (r->best, 0);
  for (guint i = 0; best->specs[i]; i++)
    streams |= g_str_has_prefix (best->specs[i], "block1.k=stream:");
  g_assert_true (streams);
  applied = napkin_tune_result_relabel (r, d, 0, NULL);
  g_assert_nonnull (applied);
  after = analyze (applied, "h100", FALSE);
  g_assert_true (after->feasible);
  g_assert_cmpfloat_with_epsilon (after->predicted_time_s, best->predicted_time_s, 1e-12);
}

/* Two kernels: searched one kernel at a time (time is a sum over kernels), the
 * search must reach the same best as all 15,625 combinations. */
static void
test_tune_separable (void)
{
  g_autoptr(NapkinDiagram) plain = napkin_test_load_example ("mlp.napkin");
  g_autoptr(json_object) root = napkin_diagram_to_json (plain);
  g_autoptr(NapkinDiagram) d = NULL;
  g_autoptr(GError) error = NULL;
  NapkinTuneOptions all = { 3, 0, FALSE, NAPKIN_DTYPE_FP16 };
  NapkinTuneOptions split = { 3, 1000, FALSE, NAPKIN_DTYPE_FP16 };
  g_autoptr(NapkinTuneResult) a = NULL;
  g_autoptr(NapkinTuneResult) b = NULL;

  json_object_object_add (root, "regions", json_tokener_parse (
    "[{\"name\": \"up\", \"level\": \"smem\", \"nodes\": [\"lin1\", \"act\"], \"stages\": 3, "
    "\"marks\": {\"t\": {\"parallel\": 128}, \"f\": {\"parallel\": 128}, \"e\": {\"stream\": 64}}}, "
    "{\"name\": \"down\", \"level\": \"smem\", \"nodes\": [\"lin2\"], \"stages\": 3, "
    "\"marks\": {\"t\": {\"parallel\": 128}, \"e\": {\"parallel\": 128}, \"f\": {\"stream\": 64}}}]"));
  d = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);

  a = napkin_tune (d, napkin_test_arch ("h100"), &all, &error);
  g_assert_no_error (error);
  b = napkin_tune (d, napkin_test_arch ("h100"), &split, &error);
  g_assert_no_error (error);
  g_assert_true (a->exhaustive);
  g_assert_false (b->exhaustive);
  /* the tiles at 2 stages, then every other stage count on the best tiles */
  g_assert_cmpuint (a->evaluated - a->stage_trials, ==, 15625);
  g_assert_cmpuint (b->evaluated - b->stage_trials, <, 300);   /* 125 + 125 and their combination */
  g_assert_cmpuint (a->stage_trials, >, 0);
  g_assert_cmpuint (a->stage_trials, <=, (4 * 3 + 64) * 2 * 5);
  /* the stage counts are tried on each search's own best tiles, and since the stage
   * pipeline term (docs/model.md §6c) makes 2 stages rank tiles differently from 3, the
   * two searches' seeds — and so their bests — may differ slightly: within 1 % */
  g_assert_cmpfloat (fabs (((NapkinTuneCandidate *) g_ptr_array_index (b->best, 0))->predicted_time_s
                           - ((NapkinTuneCandidate *) g_ptr_array_index (a->best, 0))->predicted_time_s),
                     <, 0.01 * ((NapkinTuneCandidate *) g_ptr_array_index (a->best, 0))->predicted_time_s);
  g_assert_cmpfloat (((NapkinTuneCandidate *) g_ptr_array_index (a->best, 0))->predicted_time_s, <,
                     a->current->predicted_time_s);
}

static void
test_json_keys (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("flash-attention.napkin");
  g_autoptr(NapkinAnalysis) an = analyze (d, "h100", FALSE);
  g_autoptr(json_object) root = napkin_analysis_to_json (an);
  const char *top[] = { "flops", "predicted_time_s", "bound", "levels", "regions", "feasible", "errors" };
  const char *level_keys[] = { "level", "transfer_elements", "transfer_bytes", "time_s" };
  const char *region_keys[] = { "name", "level", "instances", "paper_footprint_elements", "footprint_bytes", "per_sm",
                                "binding_limit" };
  json_object *levels, *regions;

  for (guint i = 0; i < G_N_ELEMENTS (top); i++)
    g_assert_true (json_object_object_get_ex (root, top[i], NULL));
  levels = json_object_object_get (root, "levels");
  g_assert_cmpuint (json_object_array_length (levels), ==, NAPKIN_N_LEVELS);
  for (guint i = 0; i < G_N_ELEMENTS (level_keys); i++)
    g_assert_true (json_object_object_get_ex (json_object_array_get_idx (levels, 0), level_keys[i], NULL));
  regions = json_object_object_get (root, "regions");
  for (guint i = 0; i < G_N_ELEMENTS (region_keys); i++)
    g_assert_true (json_object_object_get_ex (json_object_array_get_idx (regions, 0), region_keys[i], NULL));
  g_assert_cmpint (json_object_get_int64 (json_object_object_get (root, "flops")), ==, an->flops_total);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (root, "bound")), ==,
                   napkin_resource_to_string (an->bound));
}

static char *
replace_first (const char *text,
               const char *old,
               const char *new)
{
  const char *at = strstr (text, old);

  g_assert_nonnull (at);
  return g_strdup_printf ("%.*s%s%s", (int) (at - text), text, new, at + strlen (old));
}

/* ---- instruction paths (docs/model.md "Instruction paths", /work shared rule) ------------- */

static gboolean
wgmma_with (const char *file,
            const char *arch_id,
            const char *spec)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example (file);
  g_auto(GStrv) parts = g_strsplit (spec ? spec : "", ",", -1);

  for (guint i = 0; parts[i] && *parts[i]; i++)
    {
      if (strchr (parts[i], '.'))
        tile (d, parts[i]);
      else
        axis (d, parts[i]);
    }
  return napkin_model_region_uses_wgmma (napkin_test_arch (arch_id), d, 0);
}

static void
test_wgmma_rule (void)
{
  /* GEMM: 128×128 block, k chunks of 64, 3 stages = 96 KiB */
  g_assert_true (wgmma_with ("matmul-tiled.napkin", "h100", NULL));
  g_assert_true (wgmma_with ("matmul-tiled.napkin", "h200", NULL));
  g_assert_true (wgmma_with ("matmul-nested.napkin", "h100", NULL));   /* warp tiles inside: the block decides */
  g_assert_true (wgmma_with ("matmul-tiled.napkin", "h100", "block.m=64,block.n=256"));
  g_assert_false (wgmma_with ("matmul-tiled.napkin", "h100", "block.n=8"));      /* gemm-wgmma loads B in 64-column boxes */
  g_assert_false (wgmma_with ("matmul-tiled.napkin", "h100", "block.m=256,block.n=256"));   /* 256 accumulators a thread */
  g_assert_false (wgmma_with ("matmul-tiled.napkin", "l40s", NULL));   /* sm_89: no wgmma */
  g_assert_false (wgmma_with ("matmul-tiled.napkin", "b200", NULL));   /* sm_100: tcgen05, not wgmma */
  g_assert_false (wgmma_with ("matmul-tiled.napkin", "h100", "block.k=32"));   /* BK % 64 */
  g_assert_false (wgmma_with ("matmul-tiled.napkin", "h100", "block.m=32"));   /* BM % 64 */
  g_assert_false (wgmma_with ("matmul-tiled.napkin", "h100", "block.n=512"));  /* BN ≤ 256 */
  g_assert_false (wgmma_with ("matmul-tiled.napkin", "h100", "block.n=4"));    /* BN % 8 */
  g_assert_true (wgmma_with ("matmul-tiled.napkin", "h100", "m=4160"));        /* edge tiles bounded (the plan) */
  /* 3 stages of 256×128 and 128×256 = 384 KiB > 227 KiB */
  g_assert_false (wgmma_with ("matmul-tiled.napkin", "h100", "block.m=256,block.n=256,block.k=128"));

  /* attention: q tile 128, key chunks of 128, d 128, 3 stages: (3·2·128 + 128)·128·2 = 224 KiB */
  g_assert_true (wgmma_with ("flash-attention.napkin", "h100", NULL));
  g_assert_true (wgmma_with ("flash-attention.napkin", "h100", "d=64,k=4224,block.k=176"));
  g_assert_true (wgmma_with ("flash-attention.napkin", "h100", "d=64,q=4224,block.q=192,block.k=128"));
  g_assert_true (wgmma_with ("flash-attention.napkin", "h100", "d=64,block.k=176"));      /* edge chunks masked (the plan) */
  /* 3 consumers get 160 registers; d 128 by 128 keys needs 192: the chunks run as 2 of 64 */
  g_assert_true (wgmma_with ("flash-attention.napkin", "h100", "q=4224,block.q=192,block.k=128"));
  g_assert_false (wgmma_with ("flash-attention.napkin", "h100", "q=4352,block.q=256"));  /* 4 consumers */
  g_assert_true (wgmma_with ("flash-attention.napkin", "h100", "block.q=32"));     /* one consumer, 32 rows */
  g_assert_true (wgmma_with ("flash-attention.napkin", "h100", "block.k=8"));      /* a hint: run as 16 (the plan) */
  g_assert_true (wgmma_with ("flash-attention.napkin", "h100", "d=256,block.k=64"));   /* head dims 8 … 256 */
  /* by 128 keys: 256 registers > 240, and 2·2·256·128·2 + … > 227 KiB: both run as 2 of 64 */
  g_assert_true (wgmma_with ("flash-attention.napkin", "h100", "d=256"));
  g_assert_true (wgmma_with ("flash-attention.napkin", "h100", "block.k=256"));
  g_assert_false (wgmma_with ("flash-attention.napkin", "h100", "block.k=264"));   /* no part a multiple of 16 fits */
  g_assert_false (wgmma_with ("flash-attention.napkin", "rtx4090", NULL));
  /* fp8 Q, K: wgmma e4m3 */
  g_assert_true (wgmma_with ("hopper-attention-fp8.napkin", "h100", NULL));
  /* row kernels have no contraction */
  g_assert_false (wgmma_with ("softmax.napkin", "h100", NULL));
}

/* The model takes wgmma's rate (tensor) on that path and mma.sync's (tensor_mma_sync)
 * elsewhere; the paper's model and plain operations use the dense peak. */
static void
test_wgmma_rates (void)
{
  g_autoptr(NapkinArch) cal = napkin_arch_copy (napkin_test_arch ("h100"), "h100-paths", "H100, two paths");
  const double mma_sync = 2658;   /* 642 TFLOP/s at 132 SMs × 1.83 GHz */
  struct { const char *spec; gboolean no_wgmma, paper; double per_clock; const char *path; } cases[] = {
    { NULL, FALSE, FALSE, 4096, "wgmma" },
    { "block.k=32", FALSE, FALSE, mma_sync, "mma.sync" },
    { NULL, TRUE, FALSE, mma_sync, "mma.sync" },
    { "block.k=32", FALSE, TRUE, 4096, "mma.sync" },
  };

  /* the shipped profile carries the measured figure; a calibration replaces it */
  g_assert_cmpfloat (cal->tensor_mma_sync_per_sm_clock[NAPKIN_TENSOR_FP16], ==, mma_sync);
  cal->tensor_mma_sync_per_sm_clock[NAPKIN_TENSOR_FP16] = mma_sync;
  napkin_arch_set_source (cal, "tensor_mma_sync.fp16", "test");
  g_assert_cmpfloat_with_epsilon (napkin_arch_mma_sync_rate (cal, NAPKIN_TENSOR_FP16) / 1e12, 642.0, 0.1);
  /* a class without its own figure: mma.sync reaches the dense peak */
  g_assert_cmpfloat (napkin_arch_mma_sync_rate (cal, NAPKIN_TENSOR_TF32), ==, napkin_arch_tensor_rate (cal, NAPKIN_TENSOR_TF32));
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = napkin_test_load_example ("matmul-tiled.napkin");
      NapkinAnalyzeOptions options = { 0 };
      g_autoptr(NapkinAnalysis) a = NULL;
      const NapkinKernelCost *k;

      options.no_wgmma = cases[i].no_wgmma;
      options.paper = cases[i].paper;
      if (cases[i].spec)
        tile (d, cases[i].spec);
      a = napkin_analyze (d, cal, &options, NULL);
      g_assert_nonnull (a);
      k = &g_array_index (a->kernels, NapkinKernelCost, 0);
      g_assert_cmpstr (k->tensor_path, ==, cases[i].path);
      /* the plan's wgmma GEMM sustains a share of the peak over its main loop; its
       * mma.sync GEMM a smaller share of mma.sync's rate on a GPU that has wgmma */
      g_assert_cmpfloat_with_epsilon (k->time_s[NAPKIN_RESOURCE_TENSOR] * 1e6,
                                      a->flops.tensor / (cases[i].per_clock * 132 * 1.83e9) * 1e6
                                        / (g_str_equal (cases[i].path, "wgmma") ? NAPKIN_PLAN_GEMM_TENSOR_EFFICIENCY
                                           : cases[i].paper ? 1.0 : NAPKIN_PLAN_MMA_ON_WGMMA_GPU_EFFICIENCY),
                                      1e-6);
    }
  {
    /* a plain product: the plan tiles it itself, on wgmma at the share of the dense peak
     * its main loop sustains (its 4096³ fits the plan's 128×256 blocks and chunks of 64
     * exactly: no padding) */
    g_autoptr(NapkinDiagram) d = napkin_test_load_example ("matmul.napkin");
    g_autoptr(NapkinAnalysis) a = napkin_analyze (d, cal, NULL, NULL);
    const NapkinKernelCost *k = &g_array_index (a->kernels, NapkinKernelCost, 0);

    g_assert_cmpstr (k->tensor_path, ==, "wgmma");
    g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
    g_assert_cmpfloat_with_epsilon (k->time_s[NAPKIN_RESOURCE_TENSOR],
                                    a->flops.tensor / napkin_arch_tensor_rate (cal, NAPKIN_TENSOR_FP16)
                                      / NAPKIN_PLAN_GEMM_TENSOR_EFFICIENCY, 1e-12);
  }
  {
    /* written and read back with its source */
    g_autoptr(json_object) json = napkin_arch_to_json (cal);
    g_autoptr(GError) error = NULL;
    g_autoptr(NapkinArch) back = napkin_arch_load_from_data (json_object_to_json_string (json), -1, &error);

    g_assert_no_error (error);
    g_assert_cmpfloat (back->tensor_mma_sync_per_sm_clock[NAPKIN_TENSOR_FP16], ==, mma_sync);
    g_assert_cmpfloat (back->tensor_mma_sync_per_sm_clock[NAPKIN_TENSOR_BF16], ==, mma_sync);
    g_assert_cmpfloat (back->tensor_mma_sync_per_sm_clock[NAPKIN_TENSOR_TF32], ==, 0);
    g_assert_cmpstr (napkin_arch_get_source (back, "tensor_mma_sync.fp16"), ==, "test");
  }
  {
    /* bad figures name the field */
    g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "data", "archs", "h100.json", NULL);
    g_autofree char *text = NULL, *above = NULL, *unknown = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(NapkinArch) a = NULL;

    g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
    above = replace_first (text, "\"cuda\": {", "\"tensor_mma_sync\": {\"fp16\": {\"value\": 5000, \"source\": \"x\"}}, \"cuda\": {");
    a = napkin_arch_load_from_data (above, -1, &error);
    g_assert_null (a);
    g_assert_cmpstr (error->message, ==, "tensor_mma_sync: fp16: 5000 is above the dense peak tensor.fp16 (4096): "
                                         "mma.sync cannot beat it");
    g_clear_error (&error);
    unknown = replace_first (text, "\"cuda\": {", "\"tensor_mma_sync\": {\"fp6\": {\"value\": 5, \"source\": \"x\"}}, \"cuda\": {");
    a = napkin_arch_load_from_data (unknown, -1, &error);
    g_assert_null (a);
    g_assert_cmpstr (error->message, ==, "tensor_mma_sync: unknown tensor class “fp6” (fp16, bf16, tf32, fp8, int8)");
  }
}

/* On the wgmma path the model describes gemm-wgmma and the attention kernel, attn-sm90.cu
 * with the plan's register split (docs/model.md §6b). */
static void
test_wgmma_skeletons (void)
{
  g_autoptr(NapkinDiagram) fa = napkin_test_load_example ("flash-attention.napkin");
  g_autoptr(NapkinDiagram) mm = napkin_test_load_example ("matmul-nested.napkin");
  g_autoptr(NapkinAnalysis) a = NULL;
  g_autoptr(NapkinAnalysis) b = NULL;
  const NapkinArch *h = napkin_test_arch ("h100");
  const NapkinRegionCost *r;
  const NapkinKernelCost *k;
  const gint64 heads = 64, q = 4096, dd = 128, chunks = 4096 / 128;

  tile (fa, "block.k=128"), tile (fa, "block.stages=3");
  a = analyze (fa, "h100", FALSE);
  r = region (a, "block");
  k = &g_array_index (a->kernels, NapkinKernelCost, 0);
  g_assert_true (a->feasible);   /* M with O is 256 KiB; the skeleton's buffers 225 KiB */
  g_assert_cmpstr (k->tensor_path, ==, "wgmma");
  g_assert_cmpint (r->threads, ==, 3 * 128);   /* producer + two 64-row consumers */
  g_assert_cmpint (r->registers_per_thread, ==, 224);
  g_assert_cmpint (r->per_sm, ==, 1);
  /* K, V read by both consumers; Q again for each of the 32 key chunks */
  g_assert_cmpint (a->levels[NAPKIN_LEVEL_SMEM].transfer_bytes, ==,
                   heads * (2 * 2 * (4096 * dd * q / 128) + q * dd * chunks) * 2);
  /* tensor and 84 % of SFU add (the consumers' softmax, partly behind the other
   * consumer's products); no per-chunk constant on this path; 16 blocks an SM each pay
   * the block's fixed cost */
  g_assert_cmpfloat (k->chunk_s, ==, 0);
  g_assert_cmpfloat_with_epsilon (k->latency_s, 16 * (2 * h->levels[NAPKIN_LEVEL_HBM].latency_s + 6000.0 / h->clock_hz),
                                  1e-12);
  g_assert_cmpfloat_with_epsilon (k->overlap_s,
                                  (k->time_s[NAPKIN_RESOURCE_TENSOR] + 0.84 * k->time_s[NAPKIN_RESOURCE_SFU])
                                  * k->quantisation + k->chunk_s + k->latency_s + h->launch_overhead_s, 1e-12);

  /* GEMM: the warp tiles are ignored, no per-chunk cost, max over resources */
  b = analyze (mm, "h100", FALSE);
  r = region (b, "block");
  k = &g_array_index (b->kernels, NapkinKernelCost, 0);
  g_assert_cmpstr (k->tensor_path, ==, "wgmma");
  g_assert_cmpint (r->threads, ==, 3 * 128);
  g_assert_cmpfloat (k->chunk_s, ==, 0);
  /* A once, B by both consumers: 64 chunks × 1024 blocks of 128 × 64 each */
  g_assert_cmpint (b->levels[NAPKIN_LEVEL_SMEM].transfer_bytes, ==, (gint64) 1024 * 64 * (128 * 64 + 2 * 64 * 128) * 2);
  {
    double max = 0;

    for (NapkinResource res = 0; res < NAPKIN_N_RESOURCES; res++)
      max = MAX (max, k->time_s[res] * (res == NAPKIN_RESOURCE_HBM || res == NAPKIN_RESOURCE_L2 ? 1 : k->quantisation));
    g_assert_cmpfloat_with_epsilon (k->overlap_s, max + h->launch_overhead_s, 1e-12);
  }
}

/* The plan's row kernel (docs/plan.md, model §7c, §14): rows in registers, so the rows
 * per block do not change occupancy, which the plan's threads and registers decide; one
 * pass; a latency chain per row; γ and β from L1. */
static void
test_rows_skeleton (void)
{
  const NapkinArch *h = napkin_test_arch ("h100");
  double times[3];

  for (guint i = 0; i < 3; i++)
    {
      g_autoptr(NapkinDiagram) d = napkin_test_load_example ("softmax.napkin");
      g_autofree char *spec = g_strdup_printf ("rows.r=%d", 1 << i);
      g_autoptr(NapkinAnalysis) a = NULL;
      const NapkinRegionCost *r;
      const NapkinKernelCost *k;
      const NapkinPlanKernel *pk;
      gint64 waves;

      tile (d, spec);
      a = analyze (d, "h100", FALSE);
      r = region (a, "rows");
      k = &g_array_index (a->kernels, NapkinKernelCost, 0);
      pk = napkin_plan_kernel_for (a->plan, 0, -1);
      g_assert_true (a->feasible);
      g_assert_cmpint (pk->kind, ==, NAPKIN_PLAN_ROWS);
      g_assert_cmpint (k->path, ==, NAPKIN_PATH_SIMT);
      /* the plan's block: its threads and registers decide the blocks per SM */
      g_assert_cmpint (r->threads, ==, pk->threads);
      g_assert_cmpint (r->registers_per_thread, ==, pk->registers);
      g_assert_cmpint (r->per_sm, ==, 65536 / (pk->threads * pk->registers));
      g_assert_cmpstr (r->binding_limit, ==, "registers");
      g_assert_cmpint (a->levels[NAPKIN_LEVEL_HBM].transfer_bytes, ==, 2 * 16384 * 16384 * 2);
      waves = (16384 / (1 << i) + 132 * r->per_sm - 1) / (132 * r->per_sm);
      g_assert_cmpint (r->waves, ==, waves);
      /* the row in registers: its turns hold the chain of rows, each 6.6 round trips (§7c,
       * "Turns"), one a team's row, after the first; the first round trip and the tail
       * are the latency, as outside regions */
      g_assert_cmpfloat_with_epsilon (k->latency_s, h->levels[NAPKIN_LEVEL_HBM].latency_s + 2.4e-6, 1e-12);
      g_assert_cmpfloat_with_epsilon (k->turns_s,
                                      (waves * ((1 << i) + pk->threads / pk->u.rows.threads_per_row - 1)
                                       / (pk->threads / pk->u.rows.threads_per_row) - 1)
                                      * 6.6 * h->levels[NAPKIN_LEVEL_HBM].latency_s, 1e-12);
      g_assert_true (k->overlaps);
      times[i] = a->predicted_time_s;
    }
  /* within 3 % of one another: the rows per block barely matter to this skeleton */
  g_assert_cmpfloat (fabs (times[2] - times[0]) / times[0], <, 0.03);

  {
    /* layernorm: γ and β are read for every row but from L1: L2 serves them once per
     * block slot (132 SMs × 8 blocks), not once per block */
    g_autoptr(NapkinDiagram) d = napkin_test_load_example ("layernorm.napkin");
    g_autoptr(NapkinAnalysis) a = NULL;

    tile (d, "rows.t=1");
    a = analyze (d, "h100", FALSE);
    g_assert_cmpint (region (a, "rows")->per_sm, ==, 8);   /* the plan's 128 threads at 64 registers */
    g_assert_cmpint (a->levels[NAPKIN_LEVEL_L2].transfer_bytes, ==,
                     (gint64) 2 * 65536 * 4096 * 2 + 2 * 132 * 8 * 4096 * 2);
  }
}

/* The strided rows kernel (docs/model.md §7g), priced from its plan: softmax over the
 * first axis of 4096 × 8192 fp16 reads x twice from device memory (128-byte lines of
 * 1024-thread blocks hold more than L2 in flight), writes y once, at 0.6 of the HBM's
 * rate; each wave of blocks waits out two round trips and a reduction; no generic
 * warning. A long axis over few columns fills a share of the SMs. */
static void
test_rows_strided (void)
{
  const NapkinArch *h = napkin_test_arch ("h200");
  const char *json =
    "{\"format\": \"napkin\", \"version\": 1, \"axes\": [{\"name\": \"r\", \"size\": %d}, {\"name\": \"c\", "
    "\"size\": %d}], \"tensors\": [{\"name\": \"X\", \"axes\": [\"r\", \"c\"], \"dtype\": \"fp16\"}, "
    "{\"name\": \"Y\", \"axes\": [\"r\", \"c\"], \"dtype\": \"fp16\"}], \"nodes\": ["
    "{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\", \"x\": 0, \"y\": 0}, "
    "{\"id\": \"f\", \"kind\": \"softmax\", \"axis\": \"r\", \"x\": 1, \"y\": 0}, "
    "{\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\", \"x\": 2, \"y\": 0}], \"wires\": ["
    "{\"from\": \"x\", \"to\": \"f\", \"port\": 0}, {\"from\": \"f\", \"to\": \"y\", \"port\": 0}]}";

  {
    g_autofree char *text = g_strdup_printf (json, 4096, 8192);
    g_autoptr(NapkinDiagram) d = napkin_test_load_json (text);
    g_autoptr(NapkinAnalysis) a = analyze (d, "h200", FALSE);
    const NapkinKernelCost *k = &g_array_index (a->kernels, NapkinKernelCost, 0);
    const NapkinPlanKernel *pk = napkin_plan_kernel_for (a->plan, -1, 1);
    gint64 bytes = (gint64) 4096 * 8192 * 2, slots = 132 * pk->blocks_per_sm, waves = (pk->grid + slots - 1) / slots;

    g_assert_cmpint (pk->kind, ==, NAPKIN_PLAN_ROWS);
    g_assert_cmpint (pk->u.rows.inner, ==, 8192);
    g_assert_false (pk->u.rows.l2_reread);
    g_assert_cmpuint (a->kernels->len, ==, 1);
    g_assert_cmpuint (a->generic_kernels, ==, 0);
    g_assert_cmpint (k->path, ==, NAPKIN_PATH_SIMT);
    g_assert_cmpint (a->levels[NAPKIN_LEVEL_HBM].transfer_bytes, ==, 3 * bytes);
    g_assert_cmpint (a->levels[NAPKIN_LEVEL_L2].transfer_bytes, ==, 3 * bytes);
    /* read twice from device memory in 16-byte vectors: 0.72 of its rate */
    g_assert_cmpfloat_with_epsilon (k->time_s[NAPKIN_RESOURCE_HBM],
                                    3 * bytes / h->levels[NAPKIN_LEVEL_HBM].bandwidth / 0.72, 1e-12);
    g_assert_cmpfloat_with_epsilon (k->latency_s, waves * (2 * h->levels[NAPKIN_LEVEL_HBM].latency_s
                                                           + 250 / h->clock_hz), 1e-12);
    /* well under the generic lowering's 0.73 ms and torch.compile's 0.21 ms (H200: 0.079
     * ms measured, docs/perf-notes.md "Session 14") */
    g_assert_cmpfloat (a->predicted_time_s, <, 90e-6);
  }
  {
    /* 1000000 × 128: two strips of 64 columns; whole columns would leave 16 blocks (16 of
     * 132 SMs: 2.2 ms predicted, 2.36 measured on an H200), so the axis goes in 256
     * chunks of 3907, two launches (0.31 ms measured) */
    g_autofree char *text = g_strdup_printf (json, 1000000, 128);
    g_autoptr(NapkinDiagram) d = napkin_test_load_json (text);
    g_autoptr(NapkinAnalysis) a = analyze (d, "h200", FALSE);
    const NapkinKernelCost *k = &g_array_index (a->kernels, NapkinKernelCost, 0);
    const NapkinPlanKernel *pk = napkin_plan_kernel_for (a->plan, -1, 1);
    gint64 bytes = (gint64) 1000000 * 128 * 2;

    g_assert_cmpuint (pk->u.rows.split, ==, 256);
    g_assert_cmpint (pk->u.rows.chunk, ==, 3907);
    g_assert_cmpint (pk->u.rows.cols_per_block, ==, 64);
    g_assert_cmpint (pk->grid, ==, 2 * 256);
    g_assert_cmpint (pk->u.rows.partials, >=, 0);
    g_assert_false (pk->u.rows.l2_reread);
    g_assert_nonnull (strstr (pk->note, "256 chunks of 3907"));
    /* the bytes at the strided form's 0.6 of the bandwidth over a full grid, two launches */
    g_assert_cmpfloat_with_epsilon (k->time_s[NAPKIN_RESOURCE_HBM],
                                    3 * bytes / h->levels[NAPKIN_LEVEL_HBM].bandwidth / 0.6, 1e-12);
    g_assert_cmpfloat_with_epsilon (k->fill, 1.0, 1e-12);
    g_assert_cmpint (k->launches, ==, 2);
    g_assert_cmpfloat (a->predicted_time_s, <, 0.31e-3 * 1.5);
    g_assert_cmpfloat (a->predicted_time_s, >, 0.31e-3 / 1.5);
  }
  {
    /* 45887 × 256 (23.5 MB): 132 chunks whose second launch rereads them from L2; ran
     * 0.058 ms on an H200 where bandwidth and latency alone priced 0.026 (docs/model.md
     * §7g, "A split axis") */
    g_autofree char *text = g_strdup_printf (json, 45887, 256);
    g_autoptr(NapkinDiagram) d = napkin_test_load_json (text);
    g_autoptr(NapkinAnalysis) a = analyze (d, "h200", FALSE);
    const NapkinPlanKernel *pk = napkin_plan_kernel_for (a->plan, -1, 1);

    g_assert_cmpuint (pk->u.rows.split, ==, 132);
    g_assert_true (pk->u.rows.l2_reread);
    g_assert_cmpfloat (a->predicted_time_s, <, 0.0579e-3 * 1.25);
    g_assert_cmpfloat (a->predicted_time_s, >, 0.0579e-3 / 1.25);
  }
}

/* The rows forms whose device memory runs below the rate (docs/model.md §7c): an rmsnorm
 * whose rows are not 16 bytes apart (bf16, 11961 columns), the row in registers, at 0.8
 * (a scalar head and tail a row; the same rows 16 bytes apart at the full rate: H200,
 * 39503 × 11961 ran 0.614 ms); a softmax read twice a whole block a row at 0.8. */
static void
test_rows_below_rate (void)
{
  const NapkinArch *h = napkin_test_arch ("h200");
  const char *json =
    "{\"format\": \"napkin\", \"version\": 1, \"axes\": [{\"name\": \"t\", \"size\": 39503}, {\"name\": \"h\", "
    "\"size\": %d}], \"tensors\": [{\"name\": \"X\", \"axes\": [\"t\", \"h\"], \"dtype\": \"bf16\"}, "
    "{\"name\": \"Y\", \"axes\": [\"t\", \"h\"], \"dtype\": \"bf16\"}], \"nodes\": ["
    "{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\", \"x\": 0, \"y\": 0}, "
    "{\"id\": \"f\", \"kind\": \"normalize\", \"norm\": \"rmsnorm\", \"axis\": \"h\", \"eps\": 1e-05, \"x\": 1, "
    "\"y\": 0}, {\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\", \"x\": 2, \"y\": 0}], \"wires\": ["
    "{\"from\": \"x\", \"to\": \"f\", \"port\": 0}, {\"from\": \"f\", \"to\": \"y\", \"port\": 0}]}";
  const int cols[] = { 11961, 11968 };

  for (guint i = 0; i < G_N_ELEMENTS (cols); i++)
    {
      g_autofree char *text = g_strdup_printf (json, cols[i]);
      g_autoptr(NapkinDiagram) d = napkin_test_load_json (text);
      g_autoptr(NapkinAnalysis) a = analyze (d, "h200", FALSE);
      const NapkinKernelCost *k = &g_array_index (a->kernels, NapkinKernelCost, 0);
      const NapkinPlanKernel *pk = napkin_plan_kernel_for (a->plan, -1, 1);
      double bytes = 2.0 * 39503 * cols[i] * 2;

      g_assert_cmpint (pk->kind, ==, NAPKIN_PLAN_ROWS);
      g_assert_true (pk->u.rows.one_pass);
      g_assert_false (pk->u.rows.smem_row);
      g_assert_cmpuint (a->kernels->len, ==, 1);
      g_test_message ("%d columns: %s; device memory %.3f of the bytes' time, %.4f ms", cols[i], pk->note,
                      MAX (k->time_s[NAPKIN_RESOURCE_HBM], k->turns_s) * h->levels[NAPKIN_LEVEL_HBM].bandwidth / bytes,
                      a->predicted_time_s * 1e3);
      if (i == 0)
        {
          /* 512 threads a row, two blocks an SM: at least the unaligned rows' 0.8, and
           * here the 149 turns after the first (§7c, "Turns") bound it */
          g_assert_nonnull (strstr (pk->note, "not 16-byte aligned"));
          g_assert_cmpuint (pk->u.rows.threads_per_row, ==, 512);
          g_assert_cmpfloat_with_epsilon (k->time_s[NAPKIN_RESOURCE_HBM] * h->levels[NAPKIN_LEVEL_HBM].bandwidth / bytes,
                                          1 / 0.8, 1e-9);
          g_assert_cmpfloat_with_epsilon (k->turns_s, 149 * 6.6 * h->levels[NAPKIN_LEVEL_HBM].latency_s, 1e-9);
          g_assert_cmpfloat (k->turns_s, >, k->time_s[NAPKIN_RESOURCE_HBM]);
          g_assert_cmpint (k->bound, ==, NAPKIN_RESOURCE_HBM);
          g_assert_cmpfloat (a->predicted_time_s, >, 0.614e-3 / 1.1);
          g_assert_cmpfloat (a->predicted_time_s, <, 0.614e-3 * 1.1);
        }
      else
        {
          /* aligned: 256 threads a row hold it (48 values), three blocks an SM, and the
           * bytes at the full rate bound it */
          g_assert_cmpuint (pk->u.rows.threads_per_row, ==, 256);
          g_assert_cmpuint (pk->blocks_per_sm, ==, 3);
          g_assert_cmpfloat_with_epsilon (k->time_s[NAPKIN_RESOURCE_HBM] * h->levels[NAPKIN_LEVEL_HBM].bandwidth / bytes,
                                          1.0, 1e-9);
        }
    }
  {
    /* a softmax over rows too long for shared memory (8192 × 61366 fp16): read twice, a
     * whole block of 1024 threads a row, two an SM: device memory at 0.8 of its rate (H200:
     * 0.994 ms measured; 0.635 predicted at the full rate) */
    const char *sm =
      "{\"format\": \"napkin\", \"version\": 1, \"axes\": [{\"name\": \"r\", \"size\": 8192}, {\"name\": \"c\", "
      "\"size\": 61366}], \"tensors\": [{\"name\": \"X\", \"axes\": [\"r\", \"c\"], \"dtype\": \"fp16\"}, "
      "{\"name\": \"Y\", \"axes\": [\"r\", \"c\"], \"dtype\": \"fp16\"}], \"nodes\": ["
      "{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\", \"x\": 0, \"y\": 0}, "
      "{\"id\": \"f\", \"kind\": \"softmax\", \"axis\": \"c\", \"x\": 1, \"y\": 0}, "
      "{\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\", \"x\": 2, \"y\": 0}], \"wires\": ["
      "{\"from\": \"x\", \"to\": \"f\", \"port\": 0}, {\"from\": \"f\", \"to\": \"y\", \"port\": 0}]}";
    g_autoptr(NapkinDiagram) d = napkin_test_load_json (sm);
    g_autoptr(NapkinAnalysis) a = analyze (d, "h200", FALSE);
    const NapkinKernelCost *k = &g_array_index (a->kernels, NapkinKernelCost, 0);
    const NapkinPlanKernel *pk = napkin_plan_kernel_for (a->plan, -1, 1);
    double bytes = 3.0 * 8192 * 61366 * 2;

    g_assert_cmpint (pk->kind, ==, NAPKIN_PLAN_ROWS);
    g_assert_false (pk->u.rows.one_pass);
    g_assert_cmpuint (pk->u.rows.threads_per_row, ==, pk->u.rows.threads);
    g_assert_cmpuint (pk->blocks_per_sm, <=, 2);
    g_assert_cmpfloat_with_epsilon (k->time_s[NAPKIN_RESOURCE_HBM] * h->levels[NAPKIN_LEVEL_HBM].bandwidth / bytes,
                                    1 / 0.8, 1e-9);
    g_assert_cmpfloat (a->predicted_time_s, >, 0.994e-3 / 1.5);
    g_assert_cmpfloat (a->predicted_time_s, <, 0.994e-3 * 1.5);
  }
}

static NapkinDiagram *
derive_data (const char *name)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "..", "..", "tests", "data", "derive",
                                            name, NULL);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);

  g_assert_no_error (error);
  return d;
}

static NapkinDerivation *
derive_on (NapkinDiagram *d,
           const char    *arch_id)
{
  g_autoptr(GError) error = NULL;
  NapkinDerivation *r = napkin_derive (d, napkin_test_arch (arch_id), NULL, &error);

  g_assert_no_error (error);
  g_assert_nonnull (r);
  return r;
}

static NapkinDerivation *
derive (NapkinDiagram *d)
{
  return derive_on (d, "h100");
}

static char *
kernel_ops (const NapkinDerivation *r,
            guint                   i)
{
  return g_strjoinv (",", ((NapkinDeriveKernel *) g_ptr_array_index (r->kernels, i))->nodes);
}

/* The Llama block's four renames move no byte (docs/plan.md, "Views"): K's and V's
 * (s→k) are read through by the attention kernel, the rotary's (d_rot→d) are never
 * stored: the rotary embedding is one element-wise pass that reads x rotated (docs/plan.md,
 * "Rotary as one pass"); none is a kernel of its own, as derived and as planned. Before,
 * each ran as a copy (measured on an H200, docs/perf-notes.md, session 6: 18–76 µs as
 * generic kernels). */
static void
test_derive_copies (void)
{
  struct { const char *node; NapkinPlanKind kind; const char *kernel; } views[] = {
    { "k_pos", NAPKIN_PLAN_ATTENTION, NULL }, { "v_pos", NAPKIN_PLAN_ATTENTION, NULL },
    { "unrotate", NAPKIN_PLAN_ELEMENTWISE, "mul,cat,unrotate,mul_1,add" },
    { "unrotate2", NAPKIN_PLAN_ELEMENTWISE, "mul_2,cat_1,unrotate2,mul_3,add_1" },
  };
  g_autoptr(NapkinDiagram) d = derive_data ("llama-block.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDerivation) r = napkin_derive (d, napkin_test_arch ("h200"), NULL, &error);
  g_autoptr(NapkinAnalysis) a = napkin_analyze (d, napkin_test_arch ("h200"), NULL, &error);

  g_assert_no_error (error);
  for (guint v = 0; v < G_N_ELEMENTS (views); v++)
    {
      int node = napkin_diagram_find_node (a->plan->diagram, views[v].node);
      guint holders = 0;

      g_assert_true (napkin_plan_node_is_view (a->plan->diagram, (guint) node));
      for (guint i = 0; i < a->plan->kernels->len; i++)
        {
          const NapkinPlanKernel *pk = g_ptr_array_index (a->plan->kernels, i);

          for (guint j = 0; j < pk->nodes->len; j++)
            if (g_array_index (pk->nodes, guint, j) == (guint) node)
              {
                g_assert_cmpint (pk->kind, ==, views[v].kind);
                g_assert_cmpuint (pk->nodes->len, >, 1);
                holders++;
              }
        }
      g_assert_cmpuint (holders, ==, 1);
      for (guint i = 0; i < r->kernels->len; i++)
        {
          g_autofree char *ops = kernel_ops (r, i);
          NapkinDeriveKernel *k = g_ptr_array_index (r->kernels, i);

          g_assert_false (g_strv_length (k->nodes) == 1 && g_str_equal (k->nodes[0], views[v].node));
          if (views[v].kernel != NULL && g_strv_contains ((const char *const *) k->nodes, views[v].node))
            g_assert_cmpstr (ops, ==, views[v].kernel);
        }
    }
}

/* Attention over one key, as einsum text writes it (docs/plan.md, "Products over axes of
 * size 1" and "Deriving a diagram"): P·V over the one key is an element-wise kernel,
 * and derive never leaves it alone outside regions, where the plan would fuse the whole
 * attention (the cover it priced would not be what runs). The four kernels it derives
 * ran 0.163 ms on an H200 against 0.213 for the attention kernel (docs/perf-notes.md,
 * session 24). */
static void
test_derive_one_key (void)
{
  g_autoptr(NapkinDiagram) d = derive_data ("one-key-attention.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDerivation) r = napkin_derive (d, napkin_test_arch ("h200"), NULL, &error);
  g_autoptr(NapkinAnalysis) plain = napkin_analyze (d, napkin_test_arch ("h200"), NULL, &error);
  gboolean pv_elementwise = FALSE;

  g_assert_no_error (error);
  /* without regions the plan fuses the attention */
  g_assert_cmpuint (plain->plan->kernels->len, ==, 1);
  g_assert_cmpint (((NapkinPlanKernel *) g_ptr_array_index (plain->plan->kernels, 0))->kind, ==,
                   NAPKIN_PLAN_ATTENTION);
  g_test_message ("derived %.4f ms in %u kernels, the attention kernel %.4f ms", r->derived_s * 1e3, r->kernels->len,
                  plain->predicted_time_s * 1e3);
  g_assert_cmpuint (r->kernels->len, ==, 4);
  for (guint i = 0; i < r->kernels->len; i++)
    {
      NapkinDeriveKernel *k = g_ptr_array_index (r->kernels, i);

      if (g_strv_contains ((const char *const *) k->nodes, "pv"))
        {
          g_assert_cmpstr (k->kind, ==, "elementwise");
          g_assert_nonnull (k->tiles);   /* in a region: it cuts the attention's chain */
          pv_elementwise = TRUE;
        }
    }
  g_assert_true (pv_elementwise);
  /* what the derivation priced is what runs */
  g_assert_cmpfloat_with_epsilon (r->analyzed_s, r->derived_s, r->derived_s * 1e-6);
  g_assert_cmpfloat (r->derived_s, <, plain->predicted_time_s);
}

/* A derivation's tiles are those the search of its own regions ranks first (docs/plan.md,
 * "Deriving a diagram"): fp8 attention over 8 × 2103 queries, d 256, as einsum text
 * imports it. The plan's own 128-row tiles fill 136 blocks, two waves on 132 SMs; 64 rows
 * (264 blocks) price 3 % less, and ran 0.071 ms against 0.086 on an H200 (session 28). */
static void
test_derive_tiles_searched (void)
{
  g_autoptr(NapkinDiagram) d = derive_data ("fp8-attention-d256.napkin");
  g_autoptr(NapkinDerivation) r = derive_on (d, "h200");
  g_autoptr(GError) error = NULL;
  NapkinTuneOptions options = { .top_k = 1 };
  g_autoptr(NapkinTuneResult) search = NULL;
  const NapkinDeriveKernel *k;
  double best;

  g_assert_cmpuint (r->kernels->len, ==, 1);
  k = g_ptr_array_index (r->kernels, 0);
  g_test_message ("%s: %s, %.4f ms", k->name, k->tiles, r->derived_s * 1e3);
  g_assert_nonnull (strstr (k->tiles, "q=64 "));
  search = napkin_tune (r->derived, napkin_test_arch ("h200"), &options, &error);
  g_assert_no_error (error);
  best = ((NapkinTuneCandidate *) g_ptr_array_index (search->best, 0))->predicted_time_s;
  g_assert_cmpfloat (r->analyzed_s * (1 - NAPKIN_TUNE_RESOLUTION), <=, best);
  g_assert_cmpfloat_with_epsilon (r->analyzed_s, r->derived_s, r->derived_s * 1e-6);
}

/* An fp8 product whose result is cast to bf16, 8 × 256 × 8784, as einsum text imports it:
 * alone, the product stores fp8 and runs the generic lowering, which the model once priced
 * at 15.7 µs (it ran 1.91 ms on an H200: 2048 threads each walking 8784 steps), so derive
 * kept the cast apart. Priced as it walks, the product and its cast stay one GEMM. */
static void
test_derive_fp8_cast (void)
{
  g_autoptr(NapkinDiagram) d = derive_data ("fp8-gemm-cast.napkin");
  g_autoptr(NapkinDerivation) r = derive_on (d, "h200");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) a = NULL;

  g_test_message ("%u kernels, %.4f ms, unfused %.4f ms", r->kernels->len, r->derived_s * 1e3, r->unfused_s * 1e3);
  g_assert_cmpuint (r->kernels->len, ==, 1);
  g_assert_cmpstr (((NapkinDeriveKernel *) g_ptr_array_index (r->kernels, 0))->kind, ==, "gemm");
  a = napkin_analyze (r->derived, napkin_test_arch ("h200"), NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (a->generic_kernels, ==, 0);
  g_assert_cmpfloat (r->derived_s, <, 50e-6);
  /* the product alone on the generic lowering: at least its walk over k */
  g_assert_cmpfloat (r->unfused_s, >, 1e-3);
}

/* What the H200 ran these derivations at (docs/perf-notes.md, "Session 30"), entered as
 * einsum text: cross-attention whose window ends before most query tiles (1308 of 1428
 * blocks see no key: each stores zero rows and leaves, priced at a working block's
 * fixed cost it came to 58 µs), and two bias + exact-GELU chains over 6144 rows whose
 * maps bound the element-wise kernel (8-element vectors over 8192 columns, single
 * elements over 4549; priced by their bytes they came to 0.83 and 0.63 of their time).
 * Session 35: the same at d 256 (4 × 16 × 15789 × 300, fp8 Q·Kᵀ, 6048 of 7904 blocks
 * empty, each storing 64 KB of zeros: priced 0.292 without their stores' term).
 * The model within 1.25× of each. */
static void
test_derive_measured (void)
{
  const struct { const char *file; double measured_ms; } cases[] = {
    { "cross-window-empty.napkin", 0.0261 }, { "bias-gelu.napkin", 0.0718 }, { "bias-gelu-odd.napkin", 0.0806 },
    { "cross-window-empty-d256.napkin", 0.4417 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = derive_data (cases[i].file);
      g_autoptr(NapkinDerivation) r = derive_on (d, "h200");
      double ms = r->derived_s * 1e3;

      g_test_message ("%s: %u kernels, predicted %.4f ms, ran %.4f", cases[i].file, r->kernels->len, ms,
                      cases[i].measured_ms);
      g_assert_cmpuint (r->kernels->len, ==, 1);
      g_assert_cmpfloat (ms, <, cases[i].measured_ms * 1.25);
      g_assert_cmpfloat (ms, >, cases[i].measured_ms / 1.25);
    }
}

/* Suggest on a derived Llama block (12 kernels, its attention the one region): the
 * attention template takes one head a block and holds d whole, so the search leaves its
 * batch and head tiles at 1 and tries no variant streaming d. It tried 14740
 * relabelings (50 feasible, 6.6 s in a release build) for the same best. */
static void
test_tune_attention_knobs (void)
{
  g_autoptr(NapkinDiagram) d = derive_data ("llama-block.napkin");
  g_autoptr(NapkinDerivation) r = derive (d);
  g_autoptr(GError) error = NULL;
  NapkinTuneOptions options = { .top_k = 3, .regions_are_hints = TRUE };
  g_autoptr(NapkinTuneResult) t = napkin_tune (r->derived, napkin_test_arch ("h100"), &options, &error);
  const NapkinTuneCandidate *best;

  g_assert_no_error (error);
  best = g_ptr_array_index (t->best, 0);
  g_test_message ("%u relabelings, %u feasible; best %.4f ms (derived %.4f)", t->evaluated, t->feasible,
                  best->predicted_time_s * 1e3, r->analyzed_s * 1e3);
  g_assert_cmpuint (t->evaluated, <, 500);
  g_assert_cmpfloat (best->predicted_time_s, >=, r->analyzed_s * (1 - NAPKIN_TUNE_RESOLUTION));
}

/* A GEMM region whose K the plan splits (512 × 4096 × 4096 + bias + GELU in 128 × 256
 * tiles, K in 2: 128 slices on 132 SMs): priced by the plan's tiles, a slice each, and
 * their fp32 partials stored, as the same kernel outside regions is. The region's 64
 * output tiles had priced half of the SMs idle: 0.0579 ms against 0.0425 measured on
 * an H200, unsplit 0.0530 (docs/perf-notes.md, "Session 30"). */
static void
test_split_region (void)
{
  g_autoptr(NapkinDiagram) d = derive_data ("split-region.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) a = NULL;
  const NapkinKernelCost *k;

  g_setenv ("NAPKIN_GEMM_SPLIT", "2", TRUE);
  a = napkin_analyze (d, napkin_test_arch ("h200"), NULL, &error);
  g_unsetenv ("NAPKIN_GEMM_SPLIT");
  g_assert_no_error (error);
  k = &g_array_index (a->kernels, NapkinKernelCost, 0);
  g_test_message ("%s: %.4f ms, quantisation %.2f", k->name, a->predicted_time_s * 1e3, k->quantisation);
  g_assert_cmpfloat (k->quantisation, <, 1.1);
  g_assert_cmpfloat (a->predicted_time_s * 1e3, <, 0.0425 * 1.1);
  g_assert_cmpfloat (a->predicted_time_s * 1e3, >, 0.0425 / 1.1);
}

/* GQA packed 8 heads a block at D 64 under a window of 1801 keys, 3 × 64 heads over 4096
 * (as einsum text): keys in chunks of 128 through 3 stages ran 0.790 ms on an H200, chunks
 * of 64 through 5 stages 0.904 — a chunk's fixed part the line fitted on D 80–256 put at
 * 222 clocks, about 500 measured (docs/model.md §14c) — and the derivation took the 64s. */
static void
test_derive_gqa_chunks (void)
{
  g_autoptr(NapkinDiagram) d = derive_data ("gqa-window-d64.napkin");
  g_autoptr(NapkinDerivation) r = derive_on (d, "h200");
  const NapkinDeriveKernel *k;

  g_assert_cmpuint (r->kernels->len, ==, 1);
  k = g_ptr_array_index (r->kernels, 0);
  g_test_message ("%s: %s, %.4f ms", k->name, k->tiles, r->derived_s * 1e3);
  g_assert_nonnull (strstr (k->tiles, "k~128"));
  g_assert_cmpfloat (r->derived_s * 1e3, <, 0.790 * 1.1);
  g_assert_cmpfloat (r->derived_s * 1e3, >, 0.790 / 1.1);
}

/* Four query heads on one K/V head at D 256 under a window of 3108 over 4096 keys (seed
 * 2239's einsum text, docs/model.md §14c "Under a mask, the longest block"): the 128
 * blocks of 32 queries × 4 heads walk 2 to 99 chunks of 32 keys, and that relabeling ran
 * 0.102 ms on an H200, where the SMs' average chain had priced it 0.077 and the derivation
 * took it. Priced by its longest block it is within 1.25× of its time; the derivation
 * takes chunks of 128 keys, whose file ran 0.0813 ms. */
static void
test_derive_window_longest_block (void)
{
  g_autoptr(NapkinDiagram) d = derive_data ("mqa-window-d256.napkin");
  g_autoptr(NapkinDiagram) k32 = derive_data ("mqa-window-d256-k32.napkin");
  g_autoptr(NapkinDerivation) r = derive_on (d, "h200");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) a = napkin_analyze (k32, napkin_test_arch ("h200"), NULL, &error);
  const NapkinDeriveKernel *k;

  g_assert_no_error (error);
  g_assert_cmpuint (r->kernels->len, ==, 1);
  k = g_ptr_array_index (r->kernels, 0);
  g_test_message ("%s: %s, %.4f ms; chunks of 32: %.4f ms", k->name, k->tiles, r->derived_s * 1e3,
                  a->predicted_time_s * 1e3);
  g_assert_nonnull (strstr (k->tiles, "k~128"));
  g_assert_cmpfloat (r->derived_s * 1e3, <, 0.0813 * 1.25);
  g_assert_cmpfloat (r->derived_s * 1e3, >, 0.0813 / 1.25);
  g_assert_cmpfloat (a->predicted_time_s * 1e3, <, 0.102 * 1.25);
  g_assert_cmpfloat (a->predicted_time_s * 1e3, >, 0.102 / 1.25);
}

/* Attention with no mask in one wave, 2 × 1 heads × 4724² at D 256 (seed 2240's einsum
 * text, docs/model.md §14c "In one wave"): 74 blocks of 128 queries on 132 SMs, and a
 * block's chain of key chunks is not shared by the idle SMs. On an H200 (session 34) the
 * derivation's chunks of 32 keys ran 0.149 ms where the SMs' share had priced them 0.109,
 * 64 queries in chunks of 128 (148 blocks: two waves, the second of 16) ran 0.164,
 * and the derivation now takes 128 queries in chunks of 80, which ran 0.121–0.124. */
static void
test_derive_one_wave_chain (void)
{
  const struct { const char *file; double measured_ms; } cases[] = {
    { "attn-one-wave-d256-k32.napkin", 0.149 }, { "attn-one-wave-d256-q64.napkin", 0.164 },
  };
  g_autoptr(NapkinDiagram) d = derive_data ("attn-one-wave-d256.napkin");
  g_autoptr(NapkinDerivation) r = derive_on (d, "h200");
  const NapkinDeriveKernel *k;

  g_assert_cmpuint (r->kernels->len, ==, 1);
  k = g_ptr_array_index (r->kernels, 0);
  g_test_message ("%s: %s, %.4f ms", k->name, k->tiles, r->derived_s * 1e3);
  g_assert_null (strstr (k->tiles, "k~32 "));
  g_assert_nonnull (strstr (k->tiles, "q=128"));
  g_assert_cmpfloat (r->derived_s * 1e3, <, 0.1235 * 1.25);
  g_assert_cmpfloat (r->derived_s * 1e3, >, 0.1235 / 1.25);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) e = derive_data (cases[i].file);
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinAnalysis) a = napkin_analyze (e, napkin_test_arch ("h200"), NULL, &error);

      g_assert_no_error (error);
      g_test_message ("%s: predicted %.4f ms, ran %.4f", cases[i].file, a->predicted_time_s * 1e3,
                      cases[i].measured_ms);
      g_assert_cmpfloat (a->predicted_time_s * 1e3, <, cases[i].measured_ms * 1.25);
      g_assert_cmpfloat (a->predicted_time_s * 1e3, >, cases[i].measured_ms / 1.25);
      /* and above the derivation's */
      g_assert_cmpfloat (a->predicted_time_s, >, r->derived_s);
    }
}

/* Persistent cross-attention over 77 keys at d 256 (1 × 16 × 10915, docs/model.md §14b
 * "Wide persistent blocks"): 64-row blocks ran 0.0930 ms on an H200 (session 35), the
 * drawn example's 128-row ones 0.1103, priced within 1 % of each other before 128-row
 * blocks streamed Q and O at 1/1.09 of the rate. The derivation takes 64 rows. */
static void
test_derive_wide_persistent (void)
{
  g_autoptr(NapkinDiagram) d = derive_data ("xattn-persist-d256.napkin");
  g_autoptr(NapkinDiagram) wide = derive_data ("xattn-persist-d256-q128.napkin");
  g_autoptr(NapkinDerivation) r = derive_on (d, "h200");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) a = napkin_analyze (wide, napkin_test_arch ("h200"), NULL, &error);
  const NapkinDeriveKernel *k;

  g_assert_no_error (error);
  g_assert_cmpuint (r->kernels->len, ==, 1);
  k = g_ptr_array_index (r->kernels, 0);
  g_test_message ("%s: %s, %.4f ms; 128 rows %.4f ms", k->name, k->tiles, r->derived_s * 1e3,
                  a->predicted_time_s * 1e3);
  g_assert_nonnull (strstr (k->tiles, "q=64 "));
  g_assert_cmpfloat (r->derived_s * 1e3, <, 0.0930 * 1.25);
  g_assert_cmpfloat (r->derived_s * 1e3, >, 0.0930 / 1.25);
  g_assert_cmpfloat (a->predicted_time_s * 1e3, <, 0.1103 * 1.25);
  g_assert_cmpfloat (a->predicted_time_s * 1e3, >, 0.1103 / 1.25);
  /* and clearly above the derivation's, as it ran */
  g_assert_cmpfloat (a->predicted_time_s, >, r->derived_s * 1.04);
}

/* A GEMM of fewer tiles than SMs over a long K, 5807 × 128 × 8192 plus a residual (seed
 * 2241's einsum text, docs/model.md §14 "L2 through the grid's own SMs"): 92 tiles of
 * 128 × 64 ran 0.0508 ms on an H200 (session 34), priced 0.0413 with 92 SMs drawing all
 * of L2; the derivation now splits K over more SMs, which ran 0.0449. */
static void
test_derive_one_wave_gemm (void)
{
  g_autoptr(NapkinDiagram) d = derive_data ("gemm-one-wave.napkin");
  g_autoptr(NapkinDiagram) unsplit = derive_data ("gemm-one-wave-unsplit.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) a = napkin_analyze (d, napkin_test_arch ("h200"), NULL, &error);
  g_autoptr(NapkinAnalysis) u = NULL;

  g_assert_no_error (error);
  u = napkin_analyze (unsplit, napkin_test_arch ("h200"), NULL, &error);
  g_assert_no_error (error);
  g_test_message ("derived %.4f ms (ran 0.0449); 128 × 64 unsplit %.4f ms (ran 0.0508)",
                  a->predicted_time_s * 1e3, u->predicted_time_s * 1e3);
  g_assert_cmpfloat (a->predicted_time_s * 1e3, <, 0.0449 * 1.25);
  g_assert_cmpfloat (a->predicted_time_s * 1e3, >, 0.0449 / 1.25);
  g_assert_cmpfloat (u->predicted_time_s * 1e3, <, 0.0508 * 1.25);
  g_assert_cmpfloat (u->predicted_time_s * 1e3, >, 0.0508 / 1.25);
  g_assert_cmpfloat (u->predicted_time_s, >, a->predicted_time_s * 1.1);
}

/* A product of two rows drawn in a region, 2 × 8192 × 14456 bf16, 64 rows a tile and 64, 128
 * or 256 columns (docs/model.md, "Few-row products"): its weight streams once from device
 * memory, a block's chunks no faster than a round trip under load per stage. On an H200
 * (session 29) they ran 0.129 ms (64 × 64, no split), 0.0815 (64 × 128, K in 2) and
 * 0.074–0.076 (64 × 256, K in 2 or 4); priced at the device's full rate over the SMs a grid
 * fills they were 0.062, 0.114 and 0.216. */
static void
test_few_rows_stream (void)
{
  const struct { const char *file; double measured_ms; } cases[] = {
    { "few-rows-64.napkin", 0.129 }, { "few-rows-128.napkin", 0.0815 }, { "few-rows-256.napkin", 0.075 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = derive_data (cases[i].file);
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinAnalysis) a = napkin_analyze (d, napkin_test_arch ("h200"), NULL, &error);
      double ms;

      g_assert_no_error (error);
      ms = a->predicted_time_s * 1e3;
      g_test_message ("%s: predicted %.4f ms, ran %.4f", cases[i].file, ms, cases[i].measured_ms);
      g_assert_cmpfloat (ms, <, cases[i].measured_ms * 1.25);
      g_assert_cmpfloat (ms, >, cases[i].measured_ms / 1.7);
    }
}

/* Whole-block derivation (docs/plan.md, "Deriving a diagram"): the hand-drawn SwiGLU MLP
 * block and the imported Llama block partition deterministically, with pinned totals. */
static void
test_derive_blocks (void)
{
  struct { const char *file; guint kernels; double unfused_ms, derived_ms; const char *fused[4]; } cases[] = {
    /* the gate and up projections one gated GEMM (docs/plan.md, "Gated GEMM") */
    { "swiglu-block.napkin", 3, 4.2293, 3.7473, { "norm,scale", "gate,act,up,glu", "down,res", "norm,scale" } },
    /* the rotary embedding one pass each for q and k (docs/plan.md, "Rotary as one pass") */
    { "llama-block.napkin", 11, 8.8280, 5.0494, { "v_pos,k_pos,scores,scale,causal,probs,scaled_dot_product_attention",
                                                    "linear_3,add_2", "linear_4,silu,linear_5,mul_4",
                                                    "mul,cat,unrotate,mul_1,add" } },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr(NapkinDiagram) d = derive_data (cases[c].file);
      g_autoptr(NapkinDerivation) a = derive (d);
      g_autoptr(NapkinDerivation) b = derive (d);
      g_autoptr(json_object) ja = napkin_derivation_to_json (a);
      g_autoptr(json_object) jb = napkin_derivation_to_json (b);
      double sum = 0;

      g_test_message ("%s: %u kernels, unfused %.4f ms, derived %.4f ms", cases[c].file, a->kernels->len,
                      a->unfused_s * 1e3, a->derived_s * 1e3);
      g_assert_cmpuint (a->kernels->len, ==, cases[c].kernels);
      g_assert_cmpfloat_with_epsilon (a->unfused_s * 1e3, cases[c].unfused_ms, cases[c].unfused_ms * 1e-4);
      g_assert_cmpfloat_with_epsilon (a->derived_s * 1e3, cases[c].derived_ms, cases[c].derived_ms * 1e-4);
      g_assert_cmpfloat (a->derived_s, <, a->unfused_s);
      g_assert_true (a->exact);
      /* the sum of the kernels, launched in one run, is what analyze says of the derived
       * diagram (docs/model.md, "Launches") */
      g_assert_cmpfloat_with_epsilon (a->analyzed_s, a->derived_s, a->derived_s * 1e-6);
      for (guint i = 0; i < a->kernels->len; i++)
        sum += ((NapkinDeriveKernel *) g_ptr_array_index (a->kernels, i))->predicted_s;
      g_assert_cmpfloat (a->launch_run_s, <, 0);
      g_assert_cmpfloat_with_epsilon (sum + a->launch_run_s, a->derived_s, a->derived_s * 1e-9);
      /* deterministic: the same partition, tiles and numbers */
      g_assert_cmpstr (json_object_to_json_string (ja), ==, json_object_to_json_string (jb));
      for (guint f = 0; f < G_N_ELEMENTS (cases[c].fused); f++)
        {
          gboolean found = FALSE;

          for (guint i = 0; i < a->kernels->len && !found; i++)
            {
              g_autofree char *ops = kernel_ops (a, i);

              found = strcmp (ops, cases[c].fused[f]) == 0;
            }
          g_assert_true (found);
        }
    }
  {
    /* the Llama block: one flash attention kernel (GQA 8 × 4, V's head axis dv), and the
     * output projection over h·g·dv priced as a 8192×4096×4096 GEMM, as the Q projection */
    g_autoptr(NapkinDiagram) d = derive_data ("llama-block.napkin");
    g_autoptr(NapkinDerivation) r = derive (d);
    guint attention = 0;
    double wq = 0, wo = 0;

    for (guint i = 0; i < r->kernels->len; i++)
      {
        NapkinDeriveKernel *k = g_ptr_array_index (r->kernels, i);

        attention += g_str_equal (k->kind, "attention");
        if (g_str_equal (k->nodes[0], "linear"))
          wq = k->predicted_s;
        if (g_str_equal (k->nodes[0], "linear_3"))
          wo = k->predicted_s;
        if (g_str_equal (k->kind, "attention"))
          g_assert_cmpfloat (k->predicted_s, <, 0.5e-3);
        /* rotate_half's product keeps the projection's row order, so it is one
         * memory-bound GEMM (2.05 ms as a generic kernel when it also transposed) */
        if (g_str_equal (k->nodes[0], "cat") || g_str_equal (k->nodes[0], "cat_1"))
          {
            g_assert_cmpstr (k->kind, ==, "gemm");
            g_assert_cmpfloat (k->predicted_s, <, 0.06e-3);
          }
      }
    g_assert_cmpuint (attention, ==, 1);
    g_assert_cmpfloat (wo, >, 0.15e-3);
    g_assert_cmpfloat (wo, <, 1.25 * wq);
    {
      g_autoptr(NapkinAnalysis) a = analyze (r->derived, "h100", FALSE);
      guint flash = 0;

      for (guint i = 0; i < a->plan->kernels->len; i++)
        {
          const NapkinPlanKernel *k = g_ptr_array_index (a->plan->kernels, i);

          flash += k->kind == NAPKIN_PLAN_ATTENTION && k->path == NAPKIN_PATH_WGMMA && k->u.att.group == 4;
        }
      g_assert_cmpuint (flash, ==, 1);
    }
  }
  {
    /* a diagram with regions is refused */
    g_autoptr(NapkinDiagram) d = napkin_test_load_example ("flash-attention.napkin");
    g_autoptr(GError) error = NULL;

    g_assert_null (napkin_derive (d, napkin_test_arch ("h100"), NULL, &error));
    g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE);
  }
}

/* A derived region over the same nodes as each region of `hand`: the same level and the
 * same kind of mark on every axis (the tiles may differ, the model's better ones). A
 * hand region whose chain the derivation leaves to the plan (no region, priced lower)
 * has no counterpart. */
static guint
check_same_relabeling (NapkinDiagram *derived,
                       NapkinDiagram *hand)
{
  guint matched = 0;

  for (guint i = 0; i < napkin_diagram_n_regions (hand); i++)
    {
      const NapkinRegion *h = napkin_diagram_region (hand, i);
      const NapkinRegion *d = NULL;

      for (guint j = 0; j < napkin_diagram_n_regions (derived) && d == NULL; j++)
        {
          const NapkinRegion *o = napkin_diagram_region (derived, j);
          gboolean same = o->nodes->len == h->nodes->len;

          for (guint n = 0; same && n < h->nodes->len; n++)
            same = napkin_region_has_node (o, g_ptr_array_index (h->nodes, n));
          if (same)
            d = o;
        }
      g_test_message ("hand region %s: %s", h->name, d ? d->name : "left to the plan");
      if (d == NULL)
        continue;
      g_assert_cmpint (d->level, ==, h->level);
      for (guint m = 0; m < napkin_diagram_n_axes (hand); m++)
        {
          const char *axis = napkin_diagram_axis (hand, m)->name;
          gint64 ht = 0, dt = 0;

          g_assert_cmpint (napkin_region_mark (d, axis, &dt), ==, napkin_region_mark (h, axis, &ht));
        }
      matched++;
    }
  return matched;
}

/* The plain examples re-derive the hand-written relabelings, or ones the model prices better. */
static void
test_derive_examples (void)
{
  /* matched: the hand-written regions re-derived as such (layernorm's rows region is
   * left to the plan, which fuses the chain itself and is priced lower) */
  struct { const char *plain; const char *hand; guint kernels; const char *first; guint matched; } cases[] = {
    { "attention.napkin", "flash-attention.napkin", 1, "qk,scale,sm,pv", 1 },
    { "mlp.napkin", NULL, 2, "lin1,act", 0 },
    { "layernorm.napkin", "layernorm.napkin", 1, "ln,mul,add", 0 },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr(NapkinDiagram) d = napkin_test_load_example (cases[c].plain);
      g_autoptr(NapkinDerivation) r = NULL;
      g_autofree char *ops = NULL;

      if (napkin_diagram_n_regions (d) > 0)
        {
          /* layernorm.napkin is drawn relabeled: derive its plain form */
          g_autoptr(json_object) root = napkin_diagram_to_json (d);

          json_object_object_add (root, "regions", json_object_new_array ());
          g_clear_object (&d);
          d = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, NULL);
        }
      r = derive (d);
      ops = kernel_ops (r, 0);
      g_assert_cmpuint (r->kernels->len, ==, cases[c].kernels);
      g_assert_cmpstr (ops, ==, cases[c].first);
      g_assert_cmpfloat (r->derived_s, <, r->unfused_s);
      if (cases[c].hand != NULL)
        {
          g_autoptr(NapkinDiagram) h = napkin_test_load_example (cases[c].hand);
          g_autoptr(NapkinAnalysis) a = analyze (h, "h100", FALSE);

          g_test_message ("%s: derived %.4f ms, %s %.4f ms", cases[c].plain, r->derived_s * 1e3, cases[c].hand,
                          a->predicted_time_s * 1e3);
          g_assert_cmpfloat (r->derived_s, <=, a->predicted_time_s * (1 + 1e-9));
          g_assert_cmpuint (check_same_relabeling (r->derived, h), ==, cases[c].matched);
        }
    }
}

/* The fragment rule on the tile as a whole: a per-head tile of a projection, h = 1 × d
 * whole (128 columns), is a GEMM block of 128 columns, not refused for h = 1. */
static void
test_per_head_tile (void)
{
  const char *json =
    "{\"format\":\"napkin\",\"version\":1,"
    "\"axes\":[{\"name\":\"t\",\"size\":4096},{\"name\":\"e\",\"size\":4096},{\"name\":\"h\",\"size\":32},"
    "{\"name\":\"d\",\"size\":128}],"
    "\"tensors\":[{\"name\":\"X\",\"axes\":[\"t\",\"e\"],\"dtype\":\"bf16\"},"
    "{\"name\":\"W\",\"axes\":[\"e\",\"h\",\"d\"],\"dtype\":\"bf16\"},"
    "{\"name\":\"Q\",\"axes\":[\"t\",\"h\",\"d\"],\"dtype\":\"bf16\"}],"
    "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\"},{\"id\":\"w\",\"kind\":\"input\",\"tensor\":\"W\"},"
    "{\"id\":\"q\",\"kind\":\"contract\",\"out\":[\"t\",\"h\",\"d\"]},{\"id\":\"o\",\"kind\":\"output\",\"tensor\":\"Q\"}],"
    "\"wires\":[{\"from\":\"x\",\"to\":\"q\",\"port\":0},{\"from\":\"w\",\"to\":\"q\",\"port\":1},"
    "{\"from\":\"q\",\"to\":\"o\",\"port\":0}],"
    "\"regions\":[{\"name\":\"block\",\"level\":\"smem\",\"nodes\":[\"q\"],"
    "\"marks\":{\"t\":{\"parallel\":128},\"h\":{\"parallel\":1},\"d\":\"whole\",\"e\":{\"stream\":64}},\"stages\":3}]}";
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_autoptr(NapkinAnalysis) a = NULL;
  const NapkinPlanKernel *k;

  g_assert_no_error (error);
  a = analyze (d, "h100", FALSE);
  g_assert_true (a->feasible);
  g_assert_cmpuint (a->generic_kernels, ==, 0);
  k = napkin_plan_kernel_for (a->plan, 0, -1);
  g_assert_nonnull (k);
  g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GEMM);
  g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
  g_assert_cmpint (k->u.gemm.BM, ==, 128);
  g_assert_cmpint (k->u.gemm.BN, ==, 128);   /* h = 1 × d = 128 */
  g_assert_cmpint (k->u.gemm.N, ==, 32 * 128);
  {
    /* h = 2 × d whole: 256 columns */
    g_autoptr(NapkinDiagram) two = napkin_diagram_copy (d);
    g_autoptr(NapkinAnalysis) b = NULL;

    g_assert_true (napkin_diagram_override_tile (two, "block.h=parallel:2", &error));
    g_assert_no_error (error);
    b = analyze (two, "h100", FALSE);
    g_assert_cmpint (napkin_plan_kernel_for (b->plan, 0, -1)->u.gemm.BN, ==, 256);
  }
}

/* tune on a diagram drawn without regions starts from its derivation (docs/plan.md,
 * "Deriving a diagram"): it never proposes what the plan runs slower with no regions,
 * and applying its best reproduces the candidate's time. */
static void
test_tune_unrelabeled (void)
{
  const char *files[] = { "matmul.napkin", "attention.napkin", "mlp.napkin", "softmax.napkin" };

  for (guint i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autoptr(NapkinDiagram) d = napkin_test_load_example (files[i]);
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinTuneResult) t = NULL;
      g_autoptr(NapkinDiagram) best = NULL;
      g_autoptr(NapkinAnalysis) plain = NULL;
      const NapkinTuneCandidate *first;

      if (napkin_diagram_n_regions (d) > 0)
        continue;
      plain = analyze (d, "h100", FALSE);
      t = napkin_tune (d, napkin_test_arch ("h100"), NULL, &error);
      g_assert_no_error (error);
      g_assert_nonnull (t->relabeled);
      g_assert_nonnull (t->proposed);
      g_assert_cmpuint (t->best->len, >, 0);
      first = g_ptr_array_index (t->best, 0);
      g_assert_cmpfloat (first->predicted_time_s, <=, plain->predicted_time_s * (1 + 1e-9));
      best = napkin_tune_result_relabel (t, d, 0, &error);
      g_assert_no_error (error);
      {
        g_autoptr(NapkinAnalysis) a = analyze (best, "h100", FALSE);

        g_assert_true (a->feasible);
        g_assert_cmpuint (a->generic_kernels, ==, 0);
        g_assert_cmpfloat_with_epsilon (a->predicted_time_s, first->predicted_time_s, 1e-12);
      }
    }
  {
    /* the plain attention's derivation draws the FlashAttention example's relabeling
     * (one region, the same tiles and time) */
    g_autoptr(NapkinDiagram) d = napkin_test_load_example ("attention.napkin");
    g_autoptr(NapkinDiagram) flash = napkin_test_load_example ("flash-attention.napkin");
    g_autoptr(NapkinTuneResult) t = napkin_tune (d, napkin_test_arch ("h100"), NULL, NULL);
    g_autoptr(NapkinAnalysis) a = analyze (t->relabeled, "h100", FALSE);
    g_autoptr(NapkinAnalysis) b = analyze (flash, "h100", FALSE);

    g_assert_cmpuint (napkin_diagram_n_regions (t->relabeled), ==, 1);
    g_assert_cmpfloat_with_epsilon (a->predicted_time_s, b->predicted_time_s, 1e-3 * b->predicted_time_s);
    g_assert_cmpstr (g_array_index (a->regions, NapkinRegionCost, 0).tile, ==,
                     g_array_index (b->regions, NapkinRegionCost, 0).tile);
  }
}

static void
write_arch_dir (void)
{
  g_autofree char *h100 = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "data", "archs", "h100.json", NULL);
  g_autofree char *text = NULL;
  g_autofree char *a100_id = NULL, *a100 = NULL, *test = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *p1 = NULL, *p2 = NULL, *p3 = NULL;

  arch_dir = g_dir_make_tmp ("napkin-perf-XXXXXX", &error);
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (h100, &text, NULL, NULL));
  /* an "a100" with 7 SMs (the first 132 in the file is "sms"), to show which directory wins */
  a100_id = replace_first (text, "\"id\": \"h100\"", "\"id\": \"a100\"");
  a100 = replace_first (a100_id, "\"value\": 132", "\"value\": 7");
  test = replace_first (text, "\"id\": \"h100\"", "\"id\": \"testgpu\"");
  p1 = g_build_filename (arch_dir, "a100.json", NULL);
  p2 = g_build_filename (arch_dir, "testgpu.json", NULL);
  p3 = g_build_filename (arch_dir, "broken.json", NULL);
  g_assert_true (g_file_set_contents (p1, a100, -1, NULL));
  g_assert_true (g_file_set_contents (p2, test, -1, NULL));
  g_assert_true (g_file_set_contents (p3, "{\"format\": \"napkin-arch\", \"version\": 1, \"id\": \"b\", \"name\": \"B\", "
                                          "\"sms\": {\"value\": 1, \"source\": \"x\"}, \"clock_mhz\": {\"value\": 1000, \"source\": \"x\"}, "
                                          "\"tensor_clock_mhz\": {\"value\": 1000, \"source\": \"x\"}, "
                                          "\"max_threads_per_sm\": {\"value\": 1024, \"source\": \"x\"}, "
                                          "\"max_blocks_per_sm\": {\"value\": 16, \"source\": \"x\"}, "
                                          "\"registers_per_sm\": {\"value\": 65536, \"source\": \"x\"}, "
                                          "\"max_registers_per_thread\": {\"value\": 255, \"source\": \"x\"}, "
                                          "\"launch_overhead_s\": {\"value\": 0, \"source\": \"x\"}}", -1, NULL));
  g_setenv ("NAPKIN_ARCH_DIR", arch_dir, TRUE);
}

static void
remove_arch_dir (void)
{
  const char *names[] = { "a100.json", "testgpu.json", "broken.json" };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *p = g_build_filename (arch_dir, names[i], NULL);

      g_remove (p);
    }
  g_rmdir (arch_dir);
}

int
main (int    argc,
      char **argv)
{
  int rc;

  g_test_init (&argc, &argv, NULL);
  write_arch_dir ();   /* before the default registry loads */

  g_test_add_func ("/perf/arch/h100", test_arch_h100);
  g_test_add_func ("/perf/arch/all", test_arch_all);
  g_test_add_func ("/perf/arch/errors", test_arch_errors);
  g_test_add_func ("/perf/matmul/transfer", test_matmul_transfer);
  g_test_add_func ("/perf/matmul/stages", test_matmul_stages);
  g_test_add_func ("/perf/attention/transfer", test_attention_transfer);
  g_test_add_func ("/perf/attention/quantisation", test_attention_quantisation);
  g_test_add_func ("/perf/attention/fixed-costs", test_attention_fixed_costs);
  g_test_add_func ("/perf/generated/paths", test_generated_paths);
  g_test_add_func ("/perf/h100/threshold", test_h100_threshold);
  g_test_add_func ("/perf/hopper/sketch", test_hopper_sketch);
  g_test_add_func ("/perf/examples/all-archs", test_examples_all_archs);
  g_test_add_func ("/perf/examples/honest-figures", test_honest_figures);
  g_test_add_func ("/perf/plain/materialised", test_plain_materialised);
  g_test_add_func ("/perf/l2/panel", test_l2_panel);
  g_test_add_func ("/perf/occupancy/binding", test_occupancy);
  g_test_add_func ("/perf/feasibility", test_feasibility);
  g_test_add_func ("/perf/overflow", test_overflow);
  g_test_add_func ("/perf/tune", test_tune);
  g_test_add_func ("/perf/tune/separable", test_tune_separable);
  g_test_add_func ("/perf/tune/distinct-kernels", test_tune_distinct_kernels);
  g_test_add_func ("/perf/tune/attention-divides", test_tune_attention_divides);
  g_test_add_func ("/perf/tune/rows-threads", test_tune_rows_threads);
  g_test_add_func ("/perf/tune/idle-sms", test_tune_idle_sms);
  g_test_add_func ("/perf/tune/best-path", test_tune_best_path);
  g_test_add_func ("/perf/tune/resolution", test_tune_resolution);
  g_test_add_func ("/perf/tune/streams-whole-axis", test_tune_streams_whole_axis);
  g_test_add_func ("/perf/pipeline-stages", test_pipeline_stages);
  g_test_add_func ("/perf/json/keys", test_json_keys);
  g_test_add_func ("/perf/wgmma/rule", test_wgmma_rule);
  g_test_add_func ("/perf/wgmma/rates", test_wgmma_rates);
  g_test_add_func ("/perf/wgmma/skeletons", test_wgmma_skeletons);
  g_test_add_func ("/perf/rows/skeleton", test_rows_skeleton);
  g_test_add_func ("/perf/rows/strided", test_rows_strided);
  g_test_add_func ("/perf/rows/below-rate", test_rows_below_rate);
  g_test_add_func ("/perf/tune/unrelabeled", test_tune_unrelabeled);
  g_test_add_func ("/perf/derive/blocks", test_derive_blocks);
  g_test_add_func ("/perf/derive/tiles-searched", test_derive_tiles_searched);
  g_test_add_func ("/perf/derive/fp8-cast", test_derive_fp8_cast);
  g_test_add_func ("/perf/derive/measured", test_derive_measured);
  g_test_add_func ("/perf/derive/gqa-chunks", test_derive_gqa_chunks);
  g_test_add_func ("/perf/derive/window-longest-block", test_derive_window_longest_block);
  g_test_add_func ("/perf/derive/one-wave-chain", test_derive_one_wave_chain);
  g_test_add_func ("/perf/derive/wide-persistent", test_derive_wide_persistent);
  g_test_add_func ("/perf/derive/one-wave-gemm", test_derive_one_wave_gemm);
  g_test_add_func ("/perf/gemm/split-region", test_split_region);
  g_test_add_func ("/perf/tune/attention-knobs", test_tune_attention_knobs);
  g_test_add_func ("/perf/gemm/few-rows-stream", test_few_rows_stream);
  g_test_add_func ("/perf/derive/copies", test_derive_copies);
  g_test_add_func ("/perf/derive/one-key-attention", test_derive_one_key);
  g_test_add_func ("/perf/derive/examples", test_derive_examples);
  g_test_add_func ("/perf/plan/per-head-tile", test_per_head_tile);

  rc = g_test_run ();
  remove_arch_dir ();
  return rc;
}
