/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The CPU side of runs on several GPUs (docs/multi-gpu.md, "Running on several GPUs"):
 * the NCCL loader, nccl-tests' bandwidth formulas, the per-GPU slicing of inputs and
 * the all-to-all pack/unpack index math. No GPU needed. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-codegen.h"
#include "napkin-nccl.h"
#include "napkin-shard-slice.h"

static void
test_nccl_absent (void)
{
  NapkinNccl nccl;
  char *message = NULL;

  g_setenv ("NAPKIN_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", TRUE);
  g_assert_false (napkin_nccl_open (&nccl, &message));
  g_unsetenv ("NAPKIN_NCCL_LIBRARY");
  g_assert_nonnull (strstr (message, "No NCCL library (/nonexistent/libnccl.so.2 could not be loaded"));
  g_assert_nonnull (strstr (message, "NAPKIN_NCCL_LIBRARY"));
  g_assert_null (nccl.handle);
  g_free (message);
}

/* A library that loads but is not NCCL: the missing symbol is named. */
static void
test_nccl_not_nccl (void)
{
  NapkinNccl nccl;
  char *message = NULL;

  g_setenv ("NAPKIN_NCCL_LIBRARY", "libm.so.6", TRUE);
  g_assert_false (napkin_nccl_open (&nccl, &message));
  g_unsetenv ("NAPKIN_NCCL_LIBRARY");
  g_assert_nonnull (strstr (message, "The NCCL library libm.so.6 lacks ncclGetVersion"));
  g_assert_null (nccl.handle);
  g_free (message);
}

/* The toolkit's NCCL, where this machine has one: it opens without a GPU. */
static void
test_nccl_toolkit (void)
{
  const char *candidates[] = { "/usr/local/cuda/lib/libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2",
                               "/usr/lib/x86_64-linux-gnu/libnccl.so.2" };
  const char *found = NULL;
  NapkinNccl nccl;
  char *message = NULL;
  g_autofree char *version = NULL, *err = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (candidates) && found == NULL; i++)
    if (g_file_test (candidates[i], G_FILE_TEST_EXISTS))
      found = candidates[i];
  if (found == NULL)
    {
      g_test_skip ("no libnccl.so.2 on this machine");
      return;
    }
  g_setenv ("NAPKIN_NCCL_LIBRARY", found, TRUE);
  g_assert_true (napkin_nccl_open (&nccl, &message));
  g_unsetenv ("NAPKIN_NCCL_LIBRARY");
  g_assert_null (message);
  version = napkin_nccl_version (&nccl);
  g_assert_true (g_str_has_prefix (version, "2."));
  g_assert_cmpint (nccl.version, >=, 21000);
  err = napkin_nccl_error (&nccl, 5);
  g_assert_true (g_str_has_prefix (err, "ncclInvalidUsage (5): "));
  napkin_nccl_close (&nccl);
  g_assert_null (nccl.handle);
}

static void
test_nccl_version_codes (void)
{
  NapkinNccl nccl = { 0 };
  g_autofree char *a = NULL, *b = NULL, *c = NULL;

  nccl.version = 22805;
  a = napkin_nccl_version (&nccl);
  g_assert_cmpstr (a, ==, "2.28.5");
  nccl.version = 2804;   /* before 2.9: MAJOR*1000 + MINOR*100 + PATCH */
  b = napkin_nccl_version (&nccl);
  g_assert_cmpstr (b, ==, "2.8.4");
  c = napkin_nccl_error (NULL, 2);
  g_assert_cmpstr (c, ==, "ncclSystemError (2): unknown");
}

/* nccl-tests' sizes and bus-bandwidth factors, and the anchor the model is calibrated
 * on (2× H200: all-reduce busbw 223 GB/s at 16 MB). */
static void
test_collective_formulas (void)
{
  NapkinCollectiveKind k = NAPKIN_COLLECTIVE_ALL_REDUCE;
  double t;

  g_assert_cmpfloat_with_epsilon (napkin_nccl_bus_factor (NAPKIN_COLLECTIVE_ALL_REDUCE, 2), 1.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (napkin_nccl_bus_factor (NAPKIN_COLLECTIVE_ALL_REDUCE, 8), 1.75, 1e-12);
  g_assert_cmpfloat_with_epsilon (napkin_nccl_bus_factor (NAPKIN_COLLECTIVE_ALL_GATHER, 8), 0.875, 1e-12);
  g_assert_cmpfloat_with_epsilon (napkin_nccl_bus_factor (NAPKIN_COLLECTIVE_REDUCE_SCATTER, 4), 0.75, 1e-12);
  g_assert_cmpfloat_with_epsilon (napkin_nccl_bus_factor (NAPKIN_COLLECTIVE_ALL_TO_ALL, 2), 0.5, 1e-12);
  g_assert_cmpint (napkin_nccl_size_bytes (NAPKIN_COLLECTIVE_ALL_REDUCE, 8 << 20, 2, 2), ==, 16 << 20);
  g_assert_cmpint (napkin_nccl_size_bytes (NAPKIN_COLLECTIVE_ALL_GATHER, 4 << 20, 2, 2), ==, 16 << 20);
  g_assert_cmpint (napkin_nccl_size_bytes (NAPKIN_COLLECTIVE_ALL_TO_ALL, 1 << 20, 2, 8), ==, 16 << 20);
  /* 16 MiB all-reduce on 2 GPUs at 223 GB/s bus bandwidth: algbw = busbw, 75.2 µs */
  t = (16 << 20) / (223e9 / napkin_nccl_bus_factor (NAPKIN_COLLECTIVE_ALL_REDUCE, 2));
  g_assert_cmpfloat_with_epsilon (t * 1e6, 75.23, 0.01);
  g_assert_true (napkin_nccl_collective_parse ("reduce_scatter", &k));
  g_assert_cmpint (k, ==, NAPKIN_COLLECTIVE_REDUCE_SCATTER);
  g_assert_true (napkin_nccl_collective_parse ("All-To-All", &k));
  g_assert_cmpint (k, ==, NAPKIN_COLLECTIVE_ALL_TO_ALL);
  g_assert_false (napkin_nccl_collective_parse ("broadcast", &k));
  g_assert_cmpstr (napkin_nccl_collective_name (NAPKIN_COLLECTIVE_ALL_GATHER), ==, "all-gather");
}

/* A GPU's slice of a seeded input: [2, 6, 3] split along dimension 1 across 3 GPUs. */
static void
test_slice_inputs (void)
{
  const gint64 dims[] = { 2, 6, 3 };
  NapkinShardSlice s;
  float whole[36], piece[12], back[36];
  char *message = NULL;

  for (guint i = 0; i < 36; i++)
    whole[i] = (float) i;
  g_assert_true (napkin_shard_slice_init (&s, dims, 3, 1, 3, &message));
  g_assert_cmpint (s.outer, ==, 2);
  g_assert_cmpint (s.total, ==, 6);
  g_assert_cmpint (s.part, ==, 2);
  g_assert_cmpint (s.inner, ==, 3);
  g_assert_cmpint (napkin_shard_slice_elements (&s), ==, 12);
  /* piece 1 holds rows 2 and 3 of each outer index: x[0][2][0] = 6 … x[1][3][2] = 29 */
  g_assert_cmpint (napkin_shard_slice_index (&s, 1, 0), ==, 6);
  g_assert_cmpint (napkin_shard_slice_index (&s, 1, 5), ==, 11);
  g_assert_cmpint (napkin_shard_slice_index (&s, 1, 6), ==, 24);
  g_assert_cmpint (napkin_shard_slice_index (&s, 2, 11), ==, 35);
  napkin_shard_slice_extract (&s, 1, whole, piece, sizeof (float));
  g_assert_cmpfloat (piece[0], ==, 6);
  g_assert_cmpfloat (piece[5], ==, 11);
  g_assert_cmpfloat (piece[6], ==, 24);
  g_assert_cmpfloat (piece[11], ==, 29);
  /* the gather: every piece placed back rebuilds the tensor */
  memset (back, 0, sizeof back);
  for (guint p = 0; p < 3; p++)
    {
      napkin_shard_slice_extract (&s, p, whole, piece, sizeof (float));
      napkin_shard_slice_place (&s, p, piece, back, sizeof (float));
    }
  g_assert_cmpmem (back, sizeof back, whole, sizeof whole);

  /* split along the outermost dimension: pieces are contiguous blocks (NCCL's layout) */
  g_assert_true (napkin_shard_slice_init (&s, dims, 3, 0, 2, &message));
  g_assert_cmpint (napkin_shard_slice_index (&s, 1, 0), ==, 18);
  g_assert_cmpint (napkin_shard_slice_index (&s, 1, 17), ==, 35);

  g_assert_false (napkin_shard_slice_init (&s, dims, 3, 2, 2, &message));
  g_assert_cmpstr (message, ==, "dimension 2 (size 3) does not split evenly across 2 GPUs");
  g_clear_pointer (&message, g_free);
  g_assert_false (napkin_shard_slice_init (&s, dims, 3, 3, 2, &message));
  g_assert_cmpstr (message, ==, "split dimension 3 of a rank-3 tensor into 2 parts");
  g_free (message);
}

/* Ulysses on the CPU: X [S=8, H=4, D=2] split along S across G GPUs; pack, exchange
 * as NCCL's send/recv do, unpack: each GPU then holds X split along H. */
static void
check_ulysses (guint G)
{
  const gint64 S = 8, H = 4, D = 2, full[] = { 8, 4, 2 };
  gint64 local[] = { S / G, H, D };
  float x[64];
  g_autofree float *send = g_new0 (float, 64), *recv = g_new0 (float, 64);
  g_autofree float *sends = g_new0 (float, 64 * G), *got = g_new0 (float, 64), *want = g_new0 (float, 64);
  NapkinShardSlice in, out;
  NapkinShardAllToAll a2a;
  char *message = NULL;

  for (guint i = 0; i < 64; i++)
    x[i] = (float) (i + 1);
  g_assert_true (napkin_shard_slice_init (&in, full, 3, 0, G, &message));
  g_assert_true (napkin_shard_slice_init (&out, full, 3, 1, G, &message));
  g_assert_true (napkin_shard_all_to_all_init (&a2a, local, 3, 0, 1, G, &message));
  g_assert_cmpint (a2a.chunk, ==, 64 / G / G);
  /* every GPU packs its sequence slice */
  for (guint r = 0; r < G; r++)
    {
      napkin_shard_slice_extract (&in, r, x, send, sizeof (float));
      for (guint j = 0; j < G; j++)
        napkin_shard_slice_extract (&a2a.pack, j, send, sends + (r * G + j) * a2a.chunk, sizeof (float));
    }
  for (guint r = 0; r < G; r++)
    {
      /* chunk i of GPU r's receive buffer is chunk r of GPU i's send buffer */
      for (guint i = 0; i < G; i++)
        memcpy (recv + i * a2a.chunk, sends + (i * G + r) * a2a.chunk, a2a.chunk * sizeof (float));
      for (guint i = 0; i < G; i++)
        napkin_shard_slice_place (&a2a.unpack, i, recv + i * a2a.chunk, got, sizeof (float));
      napkin_shard_slice_extract (&out, r, x, want, sizeof (float));
      g_assert_cmpmem (got, 64 / G * sizeof (float), want, 64 / G * sizeof (float));
    }
  g_assert_false (napkin_shard_all_to_all_init (&a2a, local, 3, 1, 1, G, &message));
  g_assert_cmpstr (message, ==, "all-to-all from dimension 1 to dimension 1 of a rank-3 tensor");
  g_free (message);
}

static void
test_all_to_all (void)
{
  check_ulysses (2);
  check_ulysses (4);
}

static void
test_slice_cuda (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) cubin = NULL;
  const gint64 dims[] = { 3, 4, 6 };
  NapkinShardSlice s;
  char *message = NULL;

  g_assert_true (napkin_shard_slice_init (&s, dims, 3, 1, 2, &message));
  g_assert_cmpuint (napkin_shard_slice_unit (&s, 2), ==, 4);    /* 6 bf16: 12 bytes */
  g_assert_cmpuint (napkin_shard_slice_unit (&s, 4), ==, 4);   /* 24 bytes */
  g_assert_cmpuint (napkin_shard_slice_unit (&s, 1), ==, 2);
  s.inner = 8;
  g_assert_cmpuint (napkin_shard_slice_unit (&s, 2), ==, 16);
  s.inner = 3;
  g_assert_cmpuint (napkin_shard_slice_unit (&s, 1), ==, 1);
  if (!napkin_nvrtc_available ())
    {
      g_test_skip ("no NVRTC: the device copy kernels are not compiled");
      return;
    }
  cubin = napkin_nvrtc_compile (napkin_shard_slice_cuda_source (), "sm_90a", NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (cubin);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/multi-gpu/nccl/absent", test_nccl_absent);
  g_test_add_func ("/multi-gpu/nccl/not-nccl", test_nccl_not_nccl);
  g_test_add_func ("/multi-gpu/nccl/toolkit", test_nccl_toolkit);
  g_test_add_func ("/multi-gpu/nccl/version-codes", test_nccl_version_codes);
  g_test_add_func ("/multi-gpu/collective/formulas", test_collective_formulas);
  g_test_add_func ("/multi-gpu/slice/inputs", test_slice_inputs);
  g_test_add_func ("/multi-gpu/slice/all-to-all", test_all_to_all);
  g_test_add_func ("/multi-gpu/slice/cuda", test_slice_cuda);
  return g_test_run ();
}
