/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Several GPUs (docs/multi-gpu.md): the gpus region in the file, the shard plan's
 * collectives with their bytes and predicted times, the shard diagram, the overlap,
 * and the errors of bad gpus regions. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-error.h"
#include "napkin-json-private.h"
#include "napkin-file.h"
#include "napkin-shard.h"
#include "napkin-shard-model.h"
#include "napkin-test-load.h"

/* The pricing of docs/model.md with the H100 profile's figures, written out here so
 * that the test does not reuse the code it checks. */
static double
expected_seconds (NapkinCollectiveKind kind,
                  guint                n,
                  double               bytes)
{
  double alpha = 21e-6, bus[] = { 352e9, 248e9, 238e9, 283e9 };   /* data/archs/h100.json */
  double steps = kind == NAPKIN_COLLECTIVE_ALL_REDUCE ? 2.0 * (n - 1) : n - 1;
  double factor = (kind == NAPKIN_COLLECTIVE_ALL_REDUCE ? 2.0 : 1.0) * (n - 1) / n;

  return alpha * steps + factor * bytes / bus[kind];
}

static void
check_one (const char          *file,
           guint                n,
           NapkinCollectiveKind kind,
           const char          *tensor,
           gint64               bytes,
           guint                count)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example (file);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinShardPlan) plan = napkin_shard_plan_build (d, napkin_test_arch ("h100"), n, &error);
  guint seen = 0;

  g_assert_no_error (error);
  g_assert_cmpuint (plan->gpus, ==, n);
  g_assert_cmpuint (plan->collectives->len, ==, count);
  for (guint i = 0; i < plan->collectives->len; i++)
    {
      const NapkinCollective *c = g_ptr_array_index (plan->collectives, i);

      g_assert_cmpint (c->kind, ==, kind);
      g_assert_cmpint (c->bytes, ==, bytes);
      g_assert_cmpfloat_with_epsilon (c->seconds, expected_seconds (kind, n, bytes), 1e-9);
      seen += strcmp (c->tensor, tensor) == 0;
    }
  g_assert_cmpuint (seen, >=, 1);
}

/* TP MLP: one all-reduce of Y, t×e bf16 = 8192×4096×2 B whatever N. 2 GPUs: 232.7 µs, 8: 627.6 µs. */
static void
test_tp_mlp (void)
{
  for (guint n = 2; n <= 8; n *= 2)
    check_one ("tp-mlp.napkin", n, NAPKIN_COLLECTIVE_ALL_REDUCE, "Y", 8192LL * 4096 * 2, 1);
  g_assert_cmpfloat (fabs (expected_seconds (NAPKIN_COLLECTIVE_ALL_REDUCE, 2, 8192.0 * 4096 * 2) - 232.7e-6), <, 0.1e-6);
  g_assert_cmpfloat (fabs (expected_seconds (NAPKIN_COLLECTIVE_ALL_REDUCE, 8, 8192.0 * 4096 * 2) - 627.6e-6), <, 0.1e-6);
}

/* Ulysses: four all-to-alls (Q, K, V to heads, O back), each rank's slice of
 * b×h×s×d bf16 = 32×16384×128×2 B / N. */
static void
test_ulysses (void)
{
  for (guint n = 2; n <= 8; n *= 2)
    {
      check_one ("ulysses-attention.napkin", n, NAPKIN_COLLECTIVE_ALL_TO_ALL, "Q", 32LL * 16384 * 128 * 2 / n, 4);
      check_one ("ulysses-attention.napkin", n, NAPKIN_COLLECTIVE_ALL_TO_ALL, "O", 32LL * 16384 * 128 * 2 / n, 4);
    }
}

/* ZeRO-3: one all-gather of W, f×e bf16 = 16384×4096×2 B (128 MiB). 2 GPUs: 291.6 µs. */
static void
test_zero3 (void)
{
  for (guint n = 2; n <= 8; n *= 2)
    check_one ("zero3-matmul.napkin", n, NAPKIN_COLLECTIVE_ALL_GATHER, "W", 16384LL * 4096 * 2, 1);
  g_assert_cmpfloat (fabs (expected_seconds (NAPKIN_COLLECTIVE_ALL_GATHER, 2, 16384.0 * 4096 * 2) - 291.6e-6), <, 0.1e-6);
}

/* The H100 figures reproduce napkin-runner --collectives on 2× H100 NV18 (NCCL 2.28.3,
 * bf16, docs/gpu-runs/2026-11-25-h100x2-collectives.txt) within 15% from 16 MiB up, for
 * each of the four collectives (nccl-tests sizes: the buffer, the gathered buffer, the
 * buffer each rank sends). */
static void
test_h100_measured (void)
{
  static const struct { NapkinCollectiveKind kind; double bytes, ms; } m[] = {
    { NAPKIN_COLLECTIVE_ALL_REDUCE, 16777216, 0.0813 }, { NAPKIN_COLLECTIVE_ALL_REDUCE, 67108864, 0.2553 },
    { NAPKIN_COLLECTIVE_ALL_REDUCE, 268435456, 0.8976 }, { NAPKIN_COLLECTIVE_ALL_REDUCE, 1073741824, 3.2618 },
    { NAPKIN_COLLECTIVE_ALL_GATHER, 16777216, 0.0597 }, { NAPKIN_COLLECTIVE_ALL_GATHER, 67108864, 0.1631 },
    { NAPKIN_COLLECTIVE_ALL_GATHER, 268435456, 0.5546 }, { NAPKIN_COLLECTIVE_ALL_GATHER, 1073741824, 2.0274 },
    { NAPKIN_COLLECTIVE_REDUCE_SCATTER, 16777216, 0.0559 }, { NAPKIN_COLLECTIVE_REDUCE_SCATTER, 67108864, 0.1760 },
    { NAPKIN_COLLECTIVE_REDUCE_SCATTER, 268435456, 0.6037 }, { NAPKIN_COLLECTIVE_REDUCE_SCATTER, 1073741824, 2.1115 },
    { NAPKIN_COLLECTIVE_ALL_TO_ALL, 16777216, 0.0569 }, { NAPKIN_COLLECTIVE_ALL_TO_ALL, 67108864, 0.1495 },
    { NAPKIN_COLLECTIVE_ALL_TO_ALL, 268435456, 0.5191 }, { NAPKIN_COLLECTIVE_ALL_TO_ALL, 1073741824, 1.7309 },
  };
  NapkinArch *h100 = napkin_test_arch ("h100");

  for (guint i = 0; i < G_N_ELEMENTS (m); i++)
    {
      double t = napkin_arch_collective_seconds (h100, m[i].kind, 2, m[i].bytes, NULL);

      g_assert_cmpfloat (fabs (t * 1e3 / m[i].ms - 1), <, 0.15);
    }
}

/* The fitted figures reproduce the 2× H200 measurement within 15% from 16 MB up. */
static void
test_anchor (void)
{
  static const struct { double bytes, busbw; } ar[] = {
    { 16 << 20, 223e9 }, { 128 << 20, 287e9 }, { 1 << 30, 330e9 },
  };
  NapkinArch *h200 = napkin_test_arch ("h200");
  double bus, t;

  for (guint i = 0; i < G_N_ELEMENTS (ar); i++)
    {
      t = napkin_arch_collective_seconds (h200, NAPKIN_COLLECTIVE_ALL_REDUCE, 2, ar[i].bytes, &bus);
      g_assert_cmpfloat (fabs (ar[i].bytes / t / ar[i].busbw - 1), <, 0.15);
      g_assert_cmpfloat (bus, ==, 319e9);
    }
  t = napkin_arch_collective_seconds (h200, NAPKIN_COLLECTIVE_ALL_GATHER, 2, 1 << 30, NULL);
  g_assert_cmpfloat (fabs (0.5 * (1 << 30) / t / 278e9 - 1), <, 0.15);
  t = napkin_arch_collective_seconds (h200, NAPKIN_COLLECTIVE_ALL_TO_ALL, 2, 1 << 30, NULL);
  g_assert_cmpfloat (fabs (0.5 * (1 << 30) / t / 330e9 - 1), <, 0.15);
  /* one GPU: nothing to move; past a node: the network tier */
  g_assert_cmpfloat (napkin_arch_collective_seconds (h200, NAPKIN_COLLECTIVE_ALL_REDUCE, 1, 1 << 30, NULL), ==, 0);
  napkin_arch_collective_seconds (h200, NAPKIN_COLLECTIVE_ALL_REDUCE, 16, 1 << 30, &bus);
  g_assert_cmpfloat (bus, ==, 45e9);
}

/* What one GPU runs: f divided by N, the gpus region gone, the placements. */
static void
test_shard_diagram (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("tp-mlp.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinShardPlan) plan = napkin_shard_plan_build (d, napkin_test_arch ("h100"), 4, &error);
  const NapkinShardTensor *w1, *y;
  const NapkinCollective *c;

  g_assert_no_error (error);
  g_assert_cmpstr (plan->axis, ==, "f");
  g_assert_cmpint (napkin_diagram_axis_size (plan->shard, napkin_diagram_find_axis (plan->shard, "f")), ==, 4096);
  g_assert_cmpint (napkin_diagram_axis_size (plan->shard, napkin_diagram_find_axis (plan->shard, "t")), ==, 8192);
  g_assert_null (napkin_diagram_get_gpus (plan->shard));
  g_assert_nonnull (napkin_diagram_get_gpus (d));
  g_assert_cmpuint (plan->plan->kernels->len, ==, 2);
  w1 = napkin_shard_plan_tensor (plan, "W1");
  g_assert_cmpint (w1->stored, ==, 1);       /* W1[e, f]: split on f */
  g_assert_cmpint (w1->computed, ==, 1);
  y = napkin_shard_plan_tensor (plan, "Y");
  g_assert_true (y->is_output);
  g_assert_cmpint (y->computed, ==, NAPKIN_SHARD_PARTIAL);
  g_assert_cmpint (y->stored, ==, NAPKIN_SHARD_REPLICATED);
  c = g_ptr_array_index (plan->collectives, 0);
  g_assert_cmpuint (c->before_kernel, ==, 2);   /* after the last kernel */
  g_assert_cmpint (c->in_split, ==, NAPKIN_SHARD_PARTIAL);
  g_assert_cmpint (c->out_split, ==, NAPKIN_SHARD_REPLICATED);

  /* one GPU (or no count): the whole diagram, no collectives */
  {
    g_autoptr(NapkinShardPlan) one = napkin_shard_plan_build (d, napkin_test_arch ("h100"), 1, &error);

    g_assert_no_error (error);
    g_assert_cmpuint (one->collectives->len, ==, 0);
    g_assert_cmpint (napkin_diagram_axis_size (one->shard, napkin_diagram_find_axis (one->shard, "f")), ==, 16384);
  }
  /* the JSON the runner reads */
  {
    g_autoptr(json_object) root = napkin_shard_plan_to_json (plan);
    json_object *cols = json_object_object_get (root, "collectives");
    json_object *c0 = json_object_array_get_idx (cols, 0);

    g_assert_cmpint (json_object_get_int (json_object_object_get (root, "gpus")), ==, 4);
    g_assert_cmpstr (json_object_get_string (json_object_object_get (c0, "kind")), ==, "all-reduce");
    g_assert_cmpint (json_object_get_int64 (json_object_object_get (c0, "bytes")), ==, 67108864);
    g_assert_cmpint (json_object_get_int (json_object_object_get (root, "kernels")), ==, 2);
    g_assert_nonnull (json_object_object_get (root, "shard"));
  }
}

/* Ulysses: stored on the sequence, computed on heads. */
static void
test_ulysses_layouts (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("ulysses-attention.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinShardPlan) plan = napkin_shard_plan_build (d, napkin_test_arch ("h100"), 2, &error);
  const NapkinShardTensor *q;
  const NapkinCollective *last;

  g_assert_no_error (error);
  q = napkin_shard_plan_tensor (plan, "Q");
  g_assert_cmpint (q->stored, ==, 2);    /* Q[b, h, q, d]: q */
  g_assert_cmpint (q->computed, ==, 1);  /* h */
  g_assert_cmpuint (napkin_diagram_n_regions (plan->shard), ==, 1);   /* the smem region stays */
  last = g_ptr_array_index (plan->collectives, 3);
  g_assert_cmpstr (last->tensor, ==, "O");
  g_assert_cmpuint (last->before_kernel, ==, plan->plan->kernels->len);
}

/* Overlap: the wgmma GEMMs hold one 225 KB block on every SM, so NCCL's CTAs wait for
 * SMs to drain (docs/model.md, "Overlap"): on this compute-heavy MLP overlapping loses
 * −0.041 ms against the same chunks one after another. Measured on 2× H200 NV18 (NCCL
 * 2.28, docs/gpu-runs/2026-11-26-h200x2-overlap-r3, ex-k4): −0.042 ms at s = 0. */
static void
test_overlap (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("tp-mlp-overlap.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinShardAnalysis) two = napkin_shard_analyze (d, napkin_test_arch ("h100"), 2, NULL, &error);
  g_autoptr(NapkinShardAnalysis) eight = NULL;
  g_autoptr(json_object) root = NULL;
  const NapkinCollective *c;

  g_assert_no_error (error);
  c = g_ptr_array_index (two->shard->collectives, 0);
  g_assert_cmpuint (c->chunks, ==, 4);
  g_assert_cmpfloat_with_epsilon (c->chunk_seconds, expected_seconds (NAPKIN_COLLECTIVE_ALL_REDUCE, 2, 8192.0 * 4096 * 2 / 4), 1e-9);
  g_assert_cmpfloat_with_epsilon (two->total_s, two->compute_s + two->comm_s, 1e-12);
  /* chunked: 4 chunks' GEMMs (priced at 2048 tokens) + 4 all-reduces of 16 MiB, each
   * paying the whole latency (2 steps of 21 µs); overlapped: lin1 fills every SM, the
   * all-reduce waits 0.45 of a chunk's GEMMs (317.0 µs) for SMs, then the GEMMs lose 0.45
   * of the time beside it: step max (m_b, c + 0.45 min (c, m_b)); the gain is against chunked */
  g_assert_cmpfloat (two->chunked_s - two->total_s, >, 4 * c->chunk_seconds - c->seconds);
  g_assert_cmpfloat_with_epsilon (two->chunk_comm_s, c->chunk_seconds + 0.45 * two->chunk_compute_s, 1e-12);
  g_assert_cmpfloat_with_epsilon (two->overlapped_s - two->total_s + two->compute_s + two->comm_s,
                                  two->chunk_compute_s + 3 * MAX (two->chunk_comm_s, two->chunk_compute_s + 0.45 * MIN (two->chunk_comm_s, two->chunk_compute_s))
                                  + c->chunk_seconds, 1e-9);
  g_assert_cmpfloat_with_epsilon (two->gain_s, two->chunked_s - two->overlapped_s, 1e-12);
  g_assert_cmpfloat_with_epsilon (two->gain_s, -77.07e-6, 0.05e-6);
  g_assert_nonnull (two->note);
  g_assert_nonnull (strstr (two->note, "fills every SM (1 block of 225 KB shared memory an SM): NCCL's CTAs wait"));
  root = napkin_shard_analysis_to_json (two);
  g_assert_cmpfloat_with_epsilon (json_object_get_double (json_object_object_get (root, "chunked_s")), two->chunked_s, 1e-12);
  g_assert_nonnull (json_object_object_get (root, "overlap_note"));
  /* 8 GPUs: the GEMMs a quarter, the same step shape */
  eight = napkin_shard_analyze (d, napkin_test_arch ("h100"), 8, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat_with_epsilon (eight->gain_s, eight->chunked_s - eight->overlapped_s, 1e-12);
}

/* SMs left to NCCL (docs/model.md, "Overlap"): the chunks' persistent GEMM grids on
 * SMs − s, the all-reduce on a communicator of s CTAs at MIN (352, s · 176) GB/s bus
 * (2 CTAs carried the full bus on 2× H200); beside the GEMMs it first waits 0.45 of a
 * chunk's GEMMs for SMs, and the GEMMs lose 0.45 of the time it runs beside them (the
 * profile's figures, fitted by bench/gpu/overlap on 2× H200). 4 SMs cost lin1 nothing
 * (512 tiles in 4 waves of 128, each tile with GELU in registers before its TMA store): the same loss as 0
 * (measured −0.04 ms at s = 0); 8 SMs
 * put lin1 in 5 waves. */
static void
test_overlap_sms (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("tp-mlp-overlap.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinShardAnalysis) sa = napkin_shard_analyze (d, napkin_test_arch ("h100"), 2, NULL, &error);
  double serial_chunk_s, alone_s = 42e-6 + 8192.0 * 4096 * 2 / 4 / 352e9, step_s;

  g_assert_no_error (error);
  napkin_shard_analysis_overlap (sa, napkin_test_arch ("h100"), NULL, 0);
  serial_chunk_s = sa->chunk_compute_s;
  g_assert_cmpfloat (fabs (serial_chunk_s - 370.38e-6), <, 0.1e-6);
  napkin_shard_analysis_overlap (sa, napkin_test_arch ("h100"), NULL, 4);
  g_assert_cmpuint (sa->comm_sms, ==, 4);
  g_assert_cmpfloat_with_epsilon (sa->chunk_compute_s, serial_chunk_s, 1e-9);
  /* 2 steps of 21 µs + 16 MiB at the full 352 GB/s: 4 CTAs are past the 2 that saturate */
  g_assert_cmpfloat_with_epsilon (sa->chunk_comm_alone_s, alone_s, 1e-9);
  /* beside the GEMMs: the wait for 0.45 of a chunk's GEMMs (on every SM) first */
  g_assert_cmpfloat_with_epsilon (sa->chunk_comm_s, alone_s + 0.45 * serial_chunk_s, 1e-12);
  step_s = serial_chunk_s + 0.45 * MIN (serial_chunk_s, sa->chunk_comm_s);   /* the GEMMs' loss beside NCCL */
  g_assert_cmpfloat_with_epsilon (sa->overlapped_s - sa->total_s,
                                  serial_chunk_s + 3 * MAX (step_s, sa->chunk_comm_s) + alone_s - sa->total_s, 1e-9);
  g_assert_cmpfloat_with_epsilon (sa->gain_s, -77.07e-6, 0.1e-6);
  g_assert_nonnull (strstr (sa->note, "on 128 of 132 SMs"));
  /* 2 CTAs: the same time alone; 1 CTA: half the bus */
  napkin_shard_analysis_overlap (sa, napkin_test_arch ("h100"), NULL, 2);
  g_assert_cmpfloat_with_epsilon (sa->chunk_comm_alone_s, alone_s, 1e-9);
  napkin_shard_analysis_overlap (sa, napkin_test_arch ("h100"), NULL, 1);
  g_assert_cmpfloat_with_epsilon (sa->chunk_comm_alone_s, 42e-6 + 8192.0 * 4096 * 2 / 4 / 176e9, 1e-9);
  /* 8 SMs: lin1 in 5 waves; the step is the slower GEMMs and their loss: overlapping
   * costs more than it hides (measured on 2× H200: −0.24 to −0.03 ms at s = 8) */
  napkin_shard_analysis_overlap (sa, napkin_test_arch ("h100"), NULL, 8);
  g_assert_cmpfloat (fabs (sa->chunk_compute_s - 503.72e-6), <, 0.1e-6);
  step_s = sa->chunk_compute_s + 0.45 * MIN (sa->chunk_compute_s, sa->chunk_comm_s);
  g_assert_cmpfloat_with_epsilon (sa->overlapped_s - sa->total_s,
                                  sa->chunk_compute_s + 3 * step_s + alone_s - sa->total_s, 1e-9);
  g_assert_cmpfloat (sa->gain_s, <, -0.3e-3);
}

/* The communication-heavier example (t 16384, f 4096): on the H200 profile the model's
 * gain against the chunked run, 0.130 ms (GELU in registers before the TMA store); measured on
 * 2× H200 0.179 ms at s = 0
 * (docs/gpu-runs/2026-11-26-h200x2-overlap-r3, comm-k4; 0.163 ms in round 2). A chunk's
 * GEMMs are priced 0.195 ms (measured 0.202), its all-reduce alone 0.131 (measured 0.149):
 * the gain's 22 % is the all-reduce's share (docs/model.md, "SMs left to NCCL"). */
static void
test_overlap_comm (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("tp-mlp-overlap-comm.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinShardAnalysis) sa = napkin_shard_analyze (d, napkin_test_arch ("h200"), 2, NULL, &error);

  g_assert_no_error (error);
  g_assert_cmpuint (sa->comm_sms, ==, 0);
  g_assert_cmpfloat (fabs (sa->chunk_compute_s - 195.23e-6), <, 0.05e-6);
  g_assert_cmpfloat (fabs (sa->chunk_comm_alone_s - 131.19e-6), <, 0.05e-6);
  g_assert_cmpfloat_with_epsilon (sa->gain_s, 130.00e-6, 0.05e-6);
  /* (27 % under the measured gain since the chunk's GEMMs are priced nearer their
   * measured 0.202 ms: the overlap's constants were fitted beside 0.189) */
  g_assert_cmpfloat (fabs (sa->gain_s - 0.1789e-3), <, 0.4 * 0.1789e-3);
}

/* Load, save, load, save: the same bytes, the gpus region intact. */
static void
test_roundtrip (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("tp-mlp-overlap.napkin");
  g_autoptr(NapkinDiagram) again = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *first = NULL, *second = NULL;
  const NapkinGpusRegion *g;
  gsize n1, n2;

  first = napkin_diagram_save_to_data (d, &n1);
  again = napkin_diagram_load_from_data (first, n1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  second = napkin_diagram_save_to_data (again, &n2);
  g_assert_cmpstr (first, ==, second);
  g = napkin_diagram_get_gpus (again);
  g_assert_nonnull (g);
  g_assert_cmpstr (g->region->name, ==, "tp");
  g_assert_cmpuint (g->gpus, ==, 2);
  g_assert_cmpuint (g->chunks, ==, 4);
  g_assert_cmpstr (g->chunk_axis, ==, "t");
  g_assert_cmpuint (g->comm_sms, ==, 0);
  g_assert_cmpuint (g->placements->len, ==, 4);
  g_assert_cmpstr (napkin_gpus_region_placement (g, "W2")->split, ==, "f");
  g_assert_null (napkin_gpus_region_placement (g, "X")->split);
  g_assert_nonnull (strstr (first, "\"level\": \"gpus\""));
  g_assert_nonnull (strstr (first, "\"f\": \"parallel\""));
  /* a copy keeps it */
  {
    g_autoptr(NapkinDiagram) copy = napkin_diagram_copy_without_extras (again);

    g_assert_cmpuint (napkin_diagram_get_gpus (copy)->chunks, ==, 4);
  }
}

/* A bad gpus region: the error names the field. */
static void
expect_error (const char *json_edit_from,
              const char *json_edit_to,
              guint       gpus,
              const char *words,
              const char *path)
{
  g_autofree char *file = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "tp-mlp.napkin", NULL);
  g_autofree char *text = NULL;
  g_autofree char *edited = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = NULL;
  g_autoptr(NapkinShardPlan) plan = NULL;
  g_auto(GStrv) parts = NULL;

  g_assert_true (g_file_get_contents (file, &text, NULL, NULL));
  parts = g_strsplit (text, json_edit_from, 2);
  g_assert_cmpuint (g_strv_length (parts), ==, 2);
  edited = g_strjoinv (json_edit_to, parts);
  d = napkin_diagram_load_from_data (edited, -1, NAPKIN_LOAD_VALIDATE, &error);
  if (d != NULL)
    plan = napkin_shard_plan_build (d, napkin_test_arch ("h100"), gpus, &error);
  g_assert_null (plan);
  g_assert_nonnull (error);
  if (g_test_verbose ())
    g_printerr ("%s\n", error->message);
  g_assert_nonnull (strstr (error->message, words));
  {
    g_autofree char *suffix = g_strdup_printf ("(JSON path: %s)", path);

    g_assert_true (g_str_has_suffix (error->message, suffix));
  }
}

static void
test_errors (void)
{
  /* 16384 does not divide into 3 */
  expect_error ("\"gpus\": 2", "\"gpus\": 2", 3, "does not divide into 3 GPUs", "regions[0].marks.f");
  expect_error ("\"f\": \"parallel\"", "\"f\": {\"parallel\": 4}", 2,
                "a mark of a gpus region is \"parallel\"", "regions[0].marks.f");
  expect_error ("\"f\": \"parallel\"", "\"f\": \"parallel\", \"t\": \"parallel\"", 2,
                "exactly one axis", "regions[0].marks");
  expect_error ("\"f\": \"parallel\"", "\"f\": \"whole\"", 2, "exactly one axis", "regions[0].marks");
  expect_error ("\"nodes\": [\n        \"lin1\",\n        \"act\",\n        \"lin2\"\n      ]",
                "\"nodes\": [\"lin1\", \"lin2\"]", 2, "outside the gpus region", "nodes[3]");
  expect_error ("\"W1\": {\n          \"split\": \"f\"\n        }", "\"W1\": {\"split\": \"t\"}", 2,
                "is not an axis of tensor “W1”", "regions[0].placements.W1.split");
  expect_error ("\"W1\": {\n          \"split\": \"f\"\n        }", "\"Z\": \"replicated\"", 2,
                "unknown tensor", "regions[0].placements");
  expect_error ("\"gpus\": 2", "\"gpus\": 2, \"overlap\": {\"chunks\": 4, \"axis\": \"f\"}", 2,
                "is the axis split across the GPUs", "regions[0].overlap.axis");
  expect_error ("\"gpus\": 2", "\"gpus\": 2, \"overlap\": {\"chunks\": 1, \"axis\": \"t\"}", 2,
                "", "regions[0].overlap.chunks");
  expect_error ("\"gpus\": 2", "\"gpus\": 2, \"overlap\": {\"chunks\": 4, \"axis\": \"t\", \"comm_sms\": 132}", 2,
                "leaves 132 SMs to NCCL, but “h100” has 132", "regions[0].overlap.comm_sms");
  expect_error ("\"regions\": [\n    {\n      \"name\": \"tp\",\n      \"level\": \"gpus\",\n      \"nodes\": [\n        \"lin1\",\n        \"act\",\n        \"lin2\"\n      ]",
                "\"regions\": [{\"name\": \"blk\", \"level\": \"smem\", \"nodes\": [\"lin1\", \"act\", \"lin2\"]},\n    {\n      \"name\": \"tp\",\n      \"level\": \"gpus\",\n      \"nodes\": [\"lin1\"]",
                2, "cannot be inside region “blk” (smem)", "regions[1]");
  expect_error ("\"regions\": [\n    {\n      \"name\": \"tp\",\n      \"level\": \"gpus\",\n      \"nodes\": [\n        \"lin1\",\n        \"act\",\n        \"lin2\"\n      ]",
                "\"regions\": [{\"name\": \"blk\", \"level\": \"smem\", \"nodes\": [\"act\", \"lin2\"]},\n    {\n      \"name\": \"tp\",\n      \"level\": \"gpus\",\n      \"nodes\": [\"lin1\", \"act\"]",
                2, "partly inside the gpus region", "regions[0].nodes");
  /* the gpus region is the last of the regions */
  expect_error ("    }\n  ],\n  \"view\"", "    },\n    {\"name\": \"blk\", \"level\": \"smem\", \"nodes\": [\"lin2\"]}\n  ],\n  \"view\"",
                2, "must be the last of the regions", "regions[0]");
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/shard/tp-mlp", test_tp_mlp);
  g_test_add_func ("/shard/ulysses", test_ulysses);
  g_test_add_func ("/shard/zero3", test_zero3);
  g_test_add_func ("/shard/h100-measured", test_h100_measured);
  g_test_add_func ("/shard/anchor", test_anchor);
  g_test_add_func ("/shard/shard-diagram", test_shard_diagram);
  g_test_add_func ("/shard/ulysses-layouts", test_ulysses_layouts);
  g_test_add_func ("/shard/overlap", test_overlap);
  g_test_add_func ("/shard/overlap-sms", test_overlap_sms);
  g_test_add_func ("/shard/overlap-comm", test_overlap_comm);
  g_test_add_func ("/shard/roundtrip", test_roundtrip);
  g_test_add_func ("/shard/errors", test_errors);
  return g_test_run ();
}
