/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The Hopper attention skeleton (kernels/flash-wgmma.cu): chosen for sm_90a by the shared
 * rule with the relabeling's tiles, refused with a note otherwise, and its source built by
 * NVRTC and by nvcc (ptxas: no spills, setmaxnreg honoured, wgmma not serialised). */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "napkin-codegen.h"
#include "napkin-file.h"

/* flash-attention.napkin with `stages`, the axes and tiles overridden ("d=64", "block.q=192"). */
static NapkinDiagram *
flash_typed (guint       stages,
             const char *axis,
             const char *tile_q,
             const char *tile_k,
             const char *dtype,
             const char *o_dtype);

static NapkinDiagram *
flash (guint       stages,
       const char *axis,
       const char *tile_q,
       const char *tile_k)
{
  return flash_typed (stages, axis, tile_q, tile_k, NULL, NULL);
}

/* The same with Q, K, V of `dtype` and O of `o_dtype` (NULL: the file's fp16). */
static NapkinDiagram *
flash_typed (guint       stages,
             const char *axis,
             const char *tile_q,
             const char *tile_k,
             const char *dtype,
             const char *o_dtype)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "flash-attention.napkin", NULL);
  g_autofree char *text = NULL;
  g_autofree char *st = g_strdup_printf ("\"stages\": %u", stages);
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) json = NULL;
  NapkinDiagram *d;

  g_file_get_contents (path, &text, NULL, &error);
  g_assert_no_error (error);
  json = g_string_new (text);
  /* the example's earlier tiles (keys by 64), which these tests pin; stages as asked */
  g_assert_cmpuint (g_string_replace (json, "\"stream\": 128", "\"stream\": 64", 0), ==, 1);
  g_assert_cmpuint (g_string_replace (json, "\"stages\": 3", st, 0), ==, 1);
  if (dtype || o_dtype)
    {
      /* Tensors in file order Q, K, V, O: retype each "fp16" in turn. */
      const char *types[] = { dtype, dtype, dtype, o_dtype };
      gsize at = 0;

      for (guint t = 0; t < G_N_ELEMENTS (types); t++)
        {
          const char *hit = strstr (json->str + at, "\"dtype\": \"fp16\"");
          g_autofree char *with = g_strdup_printf ("\"dtype\": \"%s\"", types[t] ? types[t] : "fp16");

          g_assert_nonnull (hit);
          at = hit - json->str;
          g_string_erase (json, at, strlen ("\"dtype\": \"fp16\""));
          g_string_insert (json, at, with);
          at += strlen (with);
        }
    }
  d = napkin_diagram_load_from_data (json->str, json->len, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  if (axis)
    napkin_diagram_override_axis (d, axis, &error);
  g_assert_no_error (error);
  if (tile_q)
    napkin_diagram_override_tile (d, tile_q, &error);
  g_assert_no_error (error);
  if (tile_k)
    napkin_diagram_override_tile (d, tile_k, &error);
  g_assert_no_error (error);
  return d;
}

static NapkinCudaModule *
generate (NapkinDiagram      *d,
          NapkinLowerFlags    lflags,
          NapkinCodegenFlags  cflags,
          const char         *prefix)
{
  g_autoptr(GError) error = NULL;
  NapkinIrProgram *prog = napkin_ir_lower (d, lflags, &error);
  NapkinCudaModule *m;

  g_assert_no_error (error);
  m = napkin_codegen_cuda (prog, cflags, prefix, &error);
  g_assert_no_error (error);
  return m;
}

static const NapkinCudaKernel *
only_kernel (const NapkinCudaModule *m)
{
  g_assert_cmpuint (m->kernels->len, ==, 1);
  return g_ptr_array_index (m->kernels, 0);
}

/* The example (B4 H16 N4096 d128, 128 queries per block, keys in chunks of 64, 2 stages)
 * on sm_90a: the wgmma skeleton with its tiles and tensor maps; on sm_80: flash-mma. */
static void
test_choose (void)
{
  g_autoptr(NapkinDiagram) d = flash (2, NULL, NULL, NULL);
  g_autoptr(NapkinCudaModule) h = generate (d, 0, napkin_codegen_flags_for_arch ("sm_90a"), NULL);
  g_autoptr(NapkinCudaModule) a = generate (d, 0, napkin_codegen_flags_for_arch ("sm_80"), NULL);
  const NapkinCudaKernel *k = only_kernel (h);
  const NapkinCudaTensorMap *q, *kk, *v;

  g_assert_cmpstr (k->skeleton, ==, "flash-wgmma");
  g_assert_cmpint (k->grid, ==, 4 * 16 * (4096 / 128));
  g_assert_cmpuint (k->threads, ==, 384);   /* producer + 2 consumer warpgroups of 64 queries */
  g_assert_cmpint (k->dynamic_smem, ==, 1024 + 128 * 128 * 2 + 2 * 2 * 64 * 128 * 2 + 8 * 7);
  g_assert_nonnull (strstr (h->source, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"));    /* Q·Kᵀ */
  g_assert_nonnull (strstr (h->source, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"));   /* P·V */
  g_assert_nonnull (strstr (h->source, "cp.async.bulk.tensor.2d"));
  g_assert_nonnull (strstr (h->source, "#define NKP_OVERLAP 0\n"));   /* 2 stages */
  g_assert_nonnull (strstr (h->source, "8.838834"));              /* α = 1/√128 */
  g_assert_null (strstr (h->source, "@"));
  g_assert_nonnull (k->tensor_maps);
  g_assert_cmpuint (k->tensor_maps->len, ==, 3);
  q = &g_array_index (k->tensor_maps, NapkinCudaTensorMap, 0);
  kk = &g_array_index (k->tensor_maps, NapkinCudaTensorMap, 1);
  v = &g_array_index (k->tensor_maps, NapkinCudaTensorMap, 2);
  g_assert_cmpint (q->inner, ==, 128);
  g_assert_cmpint (q->outer, ==, 4 * 16 * 4096);
  g_assert_cmpuint (q->box_inner, ==, 64);
  g_assert_cmpuint (q->box_outer, ==, 128);
  g_assert_cmpuint (kk->box_outer, ==, 64);
  g_assert_cmpuint (v->box_outer, ==, 64);
  g_assert_cmpuint (q->swizzle, ==, 128);
  g_assert_cmpint (q->dtype, ==, NAPKIN_DTYPE_FP16);
  g_assert_cmpint (q->slot, !=, kk->slot);
  g_assert_cmpint (kk->slot, !=, v->slot);

  /* Chunks of 128 keys, 3 stages: the next Q·Kᵀ overlaps P·V and the consumers take turns. */
  {
    g_autoptr(NapkinDiagram) d3 = flash (3, NULL, NULL, "block.k=128");
    g_autoptr(NapkinCudaModule) h3 = generate (d3, 0, NAPKIN_CODEGEN_SM90A, NULL);

    k = only_kernel (h3);
    g_assert_cmpstr (k->skeleton, ==, "flash-wgmma");
    g_assert_nonnull (strstr (h3->source, "#define NKP_OVERLAP 1\n"));
    g_assert_nonnull (strstr (h3->source, "bar.sync"));
    g_assert_nonnull (strstr (k->note, "consumers in turn"));
    g_assert_cmpint (k->dynamic_smem, ==, 1024 + 128 * 128 * 2 + 2 * 3 * 128 * 128 * 2 + 8 * 10);
  }

  k = only_kernel (a);
  g_assert_cmpstr (k->skeleton, ==, "flash-mma");
  g_assert_null (k->tensor_maps);
  g_assert_null (strstr (a->source, "wgmma"));
}

/* Tiles outside the skeleton's limits: the plan's general kernels (docs/plan.md,
 * "Attention kernels") take them (a key chunk too big for Hopper's in parts), or, where
 * Hopper's cannot, mma.sync saying why. */
static void
test_refuse (void)
{
  static const struct
  {
    guint       stages;
    const char *axis, *tile_q, *tile_k, *skeleton, *note;
  } cases[] = {
    { 2, NULL, "block.q=32", NULL, "attn-sm90", "32 query rows a block (1 consumer warpgroup)" },
    { 2, "d=64", "block.q=256", NULL, "flash-mma", "wgmma not used: 256 query rows per block need 4 consumer warpgroups" },
    { 2, NULL, "block.q=256", NULL, "generic", "256 query rows per block need 4 consumer warpgroups" },
    { 2, "d=64", NULL, "block.k=256", "attn-sm90", "the region's chunks of 256 keys run as 2 of 128" },
    /* stages are a hint: 4 do not fit, the 3 that do run on wgmma */
    { 4, NULL, NULL, "block.k=128", "flash-wgmma", "keys in chunks of 128 through 3 stages" },
    { 2, "d=96", NULL, NULL, "attn-sm90", "rows of 96 padded to 128 in shared memory" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = flash (cases[i].stages, cases[i].axis, cases[i].tile_q, cases[i].tile_k);
      g_autoptr(NapkinCudaModule) h = generate (d, 0, NAPKIN_CODEGEN_SM90A, NULL);
      const NapkinCudaKernel *k = only_kernel (h);

      g_test_message ("case %u: %s: %s", i, k->skeleton, k->note ? k->note : "(no note)");
      g_assert_cmpstr (k->skeleton, ==, cases[i].skeleton);
      g_assert_nonnull (k->note);
      g_assert_nonnull (strstr (k->note, cases[i].note));
    }
}

/* ptxas's report on a module, through nvcc (where installed): no spills, setmaxnreg
 * honoured (no C7508), wgmma left asynchronous (no C7514 serialisation). */
static void
check_ptxas (const char *source)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("napkin-flash-wgmma-XXXXXX", &error);
  g_autofree char *src = g_build_filename (dir, "k.cu", NULL);
  g_autofree char *obj = g_build_filename (dir, "k.o", NULL);
  g_autofree char *err = NULL;
  const char *argv[] = { NAPKIN_TEST_NVCC, "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v",
                         "-c", "-o", obj, src, NULL };
  int status = 0;

  g_assert_no_error (error);
  g_file_set_contents (src, source, -1, &error);
  g_assert_no_error (error);
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("nvcc failed on the flash-wgmma module:\n%s", err);
  g_test_message ("%s", err);
  g_assert_nonnull (strstr (err, "bytes spill stores"));
  g_assert_false (g_regex_match_simple ("[1-9][0-9]* bytes (spill|stack)", err, 0, 0));
  g_assert_null (strstr (err, "C7508"));
  g_assert_null (strstr (err, "C7514"));
  g_assert_null (strstr (err, "serialized"));
  g_remove (obj);
  g_remove (src);
  g_rmdir (dir);
}

/* NVRTC builds the module for sm_90a at the measured configurations (d 128: 128×128 with
 * 3 stages and the overlap; d 64: 128×128 with 4 stages, 128×64 with 3; the example's
 * 128×64; bf16 in, fp32 out), and
 * ptxas reports no spills. */
static void
test_compile (void)
{
  static const struct
  {
    guint       stages;
    const char *axis, *tile_k, *dtype, *o_dtype;
  } cases[] = {
    { 2, NULL, NULL, NULL, NULL },
    { 3, NULL, "block.k=128", NULL, NULL },
    { 4, "d=64", "block.k=128", NULL, NULL },
    { 3, "d=64", "block.k=64", NULL, NULL },
    { 3, NULL, "block.k=128", "bf16", "fp32" },
  };

  if (!napkin_nvrtc_available ())
    {
      g_test_skip ("NVRTC not available");
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = flash_typed (cases[i].stages, cases[i].axis, NULL, cases[i].tile_k, cases[i].dtype,
                                                cases[i].o_dtype);
      g_autoptr(NapkinCudaModule) h = generate (d, 0, NAPKIN_CODEGEN_SM90A, NULL);
      g_autoptr(GError) error = NULL;
      g_autofree char *log = NULL;
      g_autoptr(GBytes) cubin = NULL;

      g_assert_cmpstr (only_kernel (h)->skeleton, ==, "flash-wgmma");
      if (cases[i].dtype)
        {
          g_assert_nonnull (strstr (h->source, "k16.f32.bf16.bf16"));
          g_assert_nonnull (strstr (h->source, "#define NKP_MMA bf16\n"));
          g_assert_cmpint (g_array_index (only_kernel (h)->tensor_maps, NapkinCudaTensorMap, 0).dtype, ==,
                           NAPKIN_DTYPE_BF16);
        }
      cubin = napkin_nvrtc_compile (h->source, "sm_90a", &log, &error);
      g_assert_no_error (error);
      g_assert_nonnull (cubin);
      g_assert_cmpuint (g_bytes_get_size (cubin), >, 0);
      if (g_file_test (NAPKIN_TEST_NVCC, G_FILE_TEST_IS_EXECUTABLE))
        check_ptxas (h->source);
    }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/codegen/flash-wgmma/choose", test_choose);
  g_test_add_func ("/codegen/flash-wgmma/refuse", test_refuse);
  g_test_add_func ("/codegen/flash-wgmma/compile", test_compile);
  return g_test_run ();
}
