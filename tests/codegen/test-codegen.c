/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include <math.h>

#include "napkin-codegen.h"
#include "napkin-file.h"
#include "napkin-interp.h"

/* The generated code's fp8 codec, compiled here as host C. */
#define NAPKIN_HD static inline
#include "fp8-codec.h"

static const char *examples[] = {
  "matmul.napkin", "matmul-tiled.napkin", "matmul-nested.napkin", "softmax.napkin",
  "layernorm.napkin", "mlp.napkin", "attention.napkin", "flash-attention.napkin",
  "hopper-attention-fp8.napkin",
};

static NapkinDiagram *
load (const char *file)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), file, NULL);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);

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

/* Every example's CUDA (relabeled, generic and the plain reference) compiles
 * through NVRTC for sm_80 and sm_90a; the relabeled one also for sm_86 and sm_89. */
static void
test_nvrtc (gconstpointer data)
{
  const char *file = data;
  g_autoptr(NapkinDiagram) d = load (file);
  const char *archs[] = { "sm_80", "sm_90a", "sm_86", "sm_89" };
  NapkinCudaModule *mods[3];

  if (!napkin_nvrtc_available ())
    {
      g_test_skip ("built without NVRTC");
      return;
    }

  mods[0] = generate (d, 0, 0, NULL);
  mods[1] = generate (d, 0, NAPKIN_CODEGEN_GENERIC_ONLY, NULL);
  mods[2] = generate (d, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, 0, "napkin_ref_");
  for (guint m = 0; m < 3; m++)
    {
      for (guint a = 0; a < (m == 0 ? G_N_ELEMENTS (archs) : 2); a++)
        {
          g_autoptr(GError) error = NULL;
          g_autofree char *log = NULL;
          g_autoptr(GBytes) cubin = napkin_nvrtc_compile (mods[m]->source, archs[a], &log, &error);

          g_assert_no_error (error);
          g_assert_nonnull (cubin);
          /* A cubin is an ELF file. */
          g_assert_cmpuint (g_bytes_get_size (cubin), >, 4);
          g_assert_cmpmem (g_bytes_get_data (cubin, NULL), 4, "\177ELF", 4);
        }
      napkin_cuda_module_free (mods[m]);
    }
}

static void
test_nvrtc_error (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *log = NULL;
  g_autoptr(GBytes) cubin = NULL;

  if (!napkin_nvrtc_available ())
    {
      g_test_skip ("built without NVRTC");
      return;
    }
  cubin = napkin_nvrtc_compile ("extern \"C\" __global__ void f () { undeclared_name = 1; }", "sm_80", &log, &error);
  g_assert_null (cubin);
  g_assert_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_COMPILE);
  /* The compiler's log reaches the user. */
  g_assert_nonnull (strstr (error->message, "undeclared_name"));
}

static void
test_pseudocode (void)
{
  g_autoptr(NapkinDiagram) flash = load ("flash-attention.napkin");
  g_autoptr(NapkinDiagram) tiled = load ("matmul-tiled.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinIrProgram) f = napkin_ir_lower (flash, 0, &error);
  g_autoptr(NapkinIrProgram) t = napkin_ir_lower (tiled, 0, &error);
  g_autofree char *fp = napkin_codegen_pseudocode (f);
  g_autofree char *tp = napkin_codegen_pseudocode (t);

  g_assert_no_error (error);
  g_test_message ("%s", fp);
  g_test_message ("%s", tp);
  g_assert_nonnull (strstr (fp, "in parallel over 32 groups of 128 along q (one thread block each):"));
  g_assert_nonnull (strstr (fp, "for each chunk of 128 along k (32 chunks, in sequence):"));
  g_assert_nonnull (strstr (fp, "online softmax"));
  g_assert_nonnull (strstr (fp, "Q_s[b:1, h:1, q:128, d] ← Q          (load hbm → smem)"));
  g_assert_nonnull (strstr (tp, "A_s[m:128, k:64] ← A          (load hbm → smem)"));
  g_assert_nonnull (strstr (tp, "mm_s[m:128, n:128] += Σ_k A_s·B_s"));
  g_assert_nonnull (strstr (tp, "C[m, n] ← mm_s          (store smem → hbm)"));
  g_assert_nonnull (strstr (tp, "device-memory traffic: 2181038080 bytes"));
}

/* Labels are free text: they reach the source only inside comments, escaped. */
static void
test_labels_escaped (void)
{
  g_autoptr(NapkinDiagram) d = load ("softmax.napkin");
  g_autoptr(NapkinDiagram) copy = NULL;
  g_autofree char *json = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinCudaModule) m = NULL;
  char *pos;
  g_autofree char *data = NULL;

  json = g_strdup ("{\"format\":\"napkin\",\"version\":1,\"title\":\"t */ int evil; /*\","
                   "\"axes\":[{\"name\":\"r\",\"size\":8},{\"name\":\"c\",\"size\":8}],"
                   "\"tensors\":[{\"name\":\"X\",\"axes\":[\"r\",\"c\"],\"dtype\":\"fp32\"},"
                   "{\"name\":\"Y\",\"axes\":[\"r\",\"c\"],\"dtype\":\"fp32\"}],"
                   "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\",\"x\":0,\"y\":0},"
                   "{\"id\":\"sm\",\"kind\":\"softmax\",\"axis\":\"c\",\"label\":\"*/\\n#error pwned\\n/* é\",\"x\":0,\"y\":0},"
                   "{\"id\":\"y\",\"kind\":\"output\",\"tensor\":\"Y\",\"x\":0,\"y\":0}],"
                   "\"wires\":[{\"from\":\"x\",\"to\":\"sm\",\"port\":0},{\"from\":\"sm\",\"to\":\"y\",\"port\":0}],"
                   "\"regions\":[{\"name\":\"rows\",\"level\":\"smem\",\"nodes\":[\"sm\"],\"marks\":{\"r\":{\"parallel\":2}}}]}");
  copy = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  m = generate (copy, 0, 0, NULL);
  /* The text survives only inside comments: no line starts with it. */
  g_assert_null (strstr (m->source, "\n#error"));
  g_assert_nonnull (strstr (m->source, "#error pwned"));
  g_assert_null (strstr (m->source, "*/ int evil"));
  g_assert_nonnull (strstr (m->source, "\\u00e9"));
  /* Every line holding the label's or the title's text holds it inside one comment
   * that opens and closes on that line. */
  {
    g_auto(GStrv) lines = g_strsplit (m->source, "\n", -1);
    guint seen = 0;

    for (guint i = 0; lines[i]; i++)
      {
        char *hit = strstr (lines[i], "pwned");

        if (hit == NULL)
          hit = strstr (lines[i], "evil");
        if (hit == NULL)
          continue;
        seen++;
        pos = g_strrstr_len (lines[i], hit - lines[i], "/*");
        g_assert_nonnull (pos);
        g_assert_null (g_strstr_len (pos + 2, hit - pos - 2, "*/"));
        g_assert_nonnull (strstr (hit, "*/"));
      }
    g_assert_cmpuint (seen, >, 0);
  }
  if (napkin_nvrtc_available ())
    {
      g_autoptr(GBytes) cubin = napkin_nvrtc_compile (m->source, "sm_80", NULL, &error);

      g_assert_no_error (error);
    }
  (void) data;
  (void) d;
}

/* The plan's row kernel takes the region's threads per block where it sets them (tune
 * tries them, docs/model.md §7c), rounded to whole warps in powers of two (the plan says
 * so in an adjustment). */
static void
test_rows_threads (void)
{
  const struct { guint threads, launched; } cases[] = {
    { 32, 32 }, { 64, 64 }, { 512, 512 }, { 48, 64 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = load ("layernorm.napkin");
      g_autoptr(NapkinCudaModule) m = NULL;
      const NapkinCudaKernel *k;

      ((NapkinRegion *) napkin_diagram_region (d, 0))->threads = cases[i].threads;
      m = generate (d, 0, 0, NULL);
      k = g_ptr_array_index (m->kernels, 0);
      g_assert_cmpstr (k->skeleton, ==, "rows");
      g_assert_cmpuint (k->threads, ==, cases[i].launched);
    }
}

/* The exported .cu builds with nvcc into a program. Under AddressSanitizer
 * (build-aux/ci-sanitize) every example's .cu is printed but nvcc builds only the
 * last (fp8 attention): nvcc is the same program either way, what the sanitizer
 * checks is the printing, and the suite's plain run builds them all. */
static void
test_standalone_nvcc (void)
{
  const char *nvcc = NAPKIN_TEST_NVCC;
  g_autofree char *dir = NULL;
  g_autoptr(GError) error = NULL;
#if defined(__SANITIZE_ADDRESS__)
  const guint n_built = 1;
#else
  const guint n_built = G_N_ELEMENTS (examples);
#endif

  if (!g_file_test (nvcc, G_FILE_TEST_IS_EXECUTABLE))
    {
      g_test_skip ("no nvcc at " NAPKIN_TEST_NVCC);
      return;
    }
  dir = g_dir_make_tmp ("napkin-cu-XXXXXX", &error);
  g_assert_no_error (error);

  if (n_built < G_N_ELEMENTS (examples))
    g_test_message ("sanitizer build: nvcc builds the last example only");
  for (guint i = 0; i < G_N_ELEMENTS (examples); i++)
    {
      g_autoptr(NapkinDiagram) d = load (examples[i]);
      g_autoptr(NapkinCudaModule) m = generate (d, 0, 0, NULL);
      g_autoptr(NapkinCudaModule) r = generate (d, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, 0, "napkin_ref_");
      g_autofree char *cu = napkin_codegen_standalone (m, r, napkin_diagram_get_title (d));
      g_autofree char *src = g_build_filename (dir, "bench.cu", NULL);
      g_autofree char *exe = g_build_filename (dir, "bench", NULL);
      g_autofree char *out = NULL, *err = NULL;
      int status = 0;
      const char *argv[] = { nvcc, "-O1", "-arch=sm_90a", "-o", exe, src, NULL };

      g_assert_nonnull (strstr (cu, "int main"));
      if (i < G_N_ELEMENTS (examples) - n_built)
        continue;
      g_file_set_contents (src, cu, -1, &error);
      g_assert_no_error (error);
      g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
      g_assert_no_error (error);
      if (!g_spawn_check_wait_status (status, NULL))
        g_error ("nvcc failed on %s:\n%s", examples[i], err);
      g_assert_true (g_file_test (exe, G_FILE_TEST_IS_EXECUTABLE));
      g_remove (exe);
      g_remove (src);
    }
  g_rmdir (dir);
}

/* A causal export reports the work it does: Q·Kᵀ, the softmax and P·V count only the
 * (query, key) pairs the mask keeps, N(N+1)/2 of N² (the sweep's and the papers'
 * convention), so a causal GQA export's TFLOP/s is not doubled. */
static void
test_standalone_masked_flops (void)
{
  g_autoptr(NapkinDiagram) d = load ("attention-causal-gqa.napkin");
  NapkinFlops total, computed;
  /* b 1, h 8, g 4, q = k = 4096, d 128: 4·32·128 per kept pair */
  const gint64 pairs = 4096LL * 4097 / 2, kept_tensor = 4LL * 32 * 128 * pairs;

  g_assert_true (napkin_diagram_total_flops (d, &total));
  g_assert_true (napkin_diagram_computed_flops (d, &computed));
  g_assert_cmpint (total.tensor, ==, 4LL * 32 * 128 * 4096 * 4096);
  g_assert_cmpint (computed.tensor, ==, kept_tensor);
  g_assert_cmpint (computed.sfu, ==, 32LL * pairs);
  {
    g_autoptr(NapkinCudaModule) m = generate (d, 0, NAPKIN_CODEGEN_SM90A, NULL);
    g_autoptr(NapkinCudaModule) r = generate (d, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, 0, "napkin_ref_");
    g_autofree char *cu = napkin_codegen_standalone (m, r, "causal");
    g_autofree char *line = g_strdup_printf ("static const double flops = %" G_GINT64_FORMAT ".0,",
                                             computed.tensor + computed.cuda + computed.sfu);

    g_assert_nonnull (strstr (cu, line));
    g_assert_cmpfloat ((double) (computed.tensor + computed.cuda + computed.sfu)
                       / (total.tensor + total.cuda + total.sfu), <, 0.51);
  }
}

/* Recognised shapes get their skeleton with the relabeling's tiles; others fall back with a note. */
static void
test_skeletons (void)
{
  g_autoptr(NapkinDiagram) tiled = load ("matmul-tiled.napkin");
  g_autoptr(NapkinDiagram) nested = load ("matmul-nested.napkin");
  g_autoptr(NapkinDiagram) flash = load ("flash-attention.napkin");
  g_autoptr(NapkinDiagram) odd = load ("matmul-tiled.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinCudaModule) t = generate (tiled, 0, 0, NULL);
  g_autoptr(NapkinCudaModule) n = generate (nested, 0, 0, NULL);
  g_autoptr(NapkinCudaModule) f = generate (flash, 0, 0, NULL);
  g_autoptr(NapkinCudaModule) o = NULL;
  const NapkinCudaKernel *k;

  k = g_ptr_array_index (t->kernels, 0);
  g_assert_cmpstr (k->skeleton, ==, "gemm-mma");
  g_assert_cmpint (k->grid, ==, 32 * 32);
  g_assert_cmpuint (k->threads, ==, 256);            /* 8 warps of 64×32 */
  g_assert_cmpint (k->dynamic_smem, ==, 3 * (128 * 72 + 64 * 136) * 2);
  g_assert_nonnull (strstr (t->source, "#define NKP_BK 64\n"));
  g_assert_nonnull (strstr (t->source, "#define NKP_STAGES 3\n"));

  k = g_ptr_array_index (n->kernels, 0);
  g_assert_cmpstr (k->skeleton, ==, "gemm-mma");
  g_assert_nonnull (strstr (n->source, "#define NKP_WM 64\n"));
  g_assert_nonnull (strstr (n->source, "#define NKP_WN 32\n"));

  k = g_ptr_array_index (f->kernels, 0);
  g_assert_cmpstr (k->skeleton, ==, "flash-mma");
  g_assert_cmpint (k->grid, ==, 4 * 16 * 32);
  g_assert_cmpuint (k->threads, ==, 256);
  g_assert_nonnull (strstr (f->source, "#define NKP_BKV 64\n"));

  napkin_diagram_override_axis (odd, "m=4000", &error);
  g_assert_no_error (error);
  o = generate (odd, 0, 0, NULL);
  /* sizes that are not multiples of the tiles: the same kernel, edge tiles bounded */
  k = g_ptr_array_index (o->kernels, 0);
  g_assert_cmpstr (k->skeleton, ==, "gemm-mma");
  g_assert_cmpint (k->grid, ==, 32 * 32);
  g_assert_nonnull (k->note);
  g_assert_nonnull (strstr (k->note, "zero-filled edges"));
  g_assert_nonnull (strstr (o->source, "#define NKP_M 4000\n"));
}

/* matmul-tiled.napkin with bf16 tensors, sizes m=n=k=`size` and the block tile overridden. */
static NapkinDiagram *
bf16_matmul (gint64      size,
             const char *tile_m,
             const char *tile_n,
             guint       stages)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "matmul-tiled.napkin", NULL);
  g_autofree char *text = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *axes = g_strdup_printf ("m=%" G_GINT64_FORMAT, size);
  GString *json;
  NapkinDiagram *d;

  g_file_get_contents (path, &text, NULL, &error);
  g_assert_no_error (error);
  json = g_string_new (text);
  g_assert_cmpuint (g_string_replace (json, "\"fp16\"", "\"bf16\"", 0), ==, 3);
  {
    g_autofree char *st = g_strdup_printf ("\"stages\": %u", stages);

    g_assert_cmpuint (g_string_replace (json, "\"stages\": 3", st, 0), ==, 1);
  }
  d = napkin_diagram_load_from_data (json->str, json->len, NAPKIN_LOAD_VALIDATE, &error);
  g_string_free (json, TRUE);
  g_assert_no_error (error);
  for (const char *a = "mnk"; *a; a++)
    {
      axes[0] = *a;
      napkin_diagram_override_axis (d, axes, &error);
      g_assert_no_error (error);
    }
  napkin_diagram_override_tile (d, tile_m, &error);
  g_assert_no_error (error);
  napkin_diagram_override_tile (d, tile_n, &error);
  g_assert_no_error (error);
  return d;
}

/* Hopper: a bf16 8192³ relabeling with 128×256 tiles takes the gemm-wgmma skeleton when the
 * target is sm_90a (tensor maps for A and B, NVRTC compiles it with no spills), gemm-mma on
 * sm_80; tiles the wgmma skeleton cannot take fall back to gemm-mma with a note saying why. */
static void
test_wgmma (void)
{
  g_autoptr(NapkinDiagram) d = bf16_matmul (8192, "block.m=128", "block.n=256", 4);
  /* on the A100 (its plan) 4 stages of 128×256 blocks are 204 KiB, more than a block may
   * have there: 2 stages fit */
  g_autoptr(NapkinDiagram) d2 = bf16_matmul (8192, "block.m=128", "block.n=256", 2);
  g_autoptr(NapkinDiagram) narrow = bf16_matmul (6144, "block.m=128", "block.n=96", 3);
  g_autoptr(NapkinDiagram) tall = bf16_matmul (4096, "block.m=256", "block.n=256", 3);
  g_autoptr(NapkinCudaModule) h = generate (d, 0, napkin_codegen_flags_for_arch ("sm_90a"), NULL);
  g_autoptr(NapkinCudaModule) a = generate (d2, 0, napkin_codegen_flags_for_arch ("sm_80"), NULL);
  g_autoptr(NapkinCudaModule) n = generate (narrow, 0, NAPKIN_CODEGEN_SM90A, NULL);
  g_autoptr(NapkinCudaModule) t = generate (tall, 0, NAPKIN_CODEGEN_SM90A, NULL);
  const NapkinCudaKernel *k = g_ptr_array_index (h->kernels, 0);
  const NapkinCudaTensorMap *map;

  g_assert_cmpint (napkin_codegen_flags_for_arch ("sm_90"), ==, NAPKIN_CODEGEN_DEFAULT);
  g_assert_cmpstr (k->skeleton, ==, "gemm-wgmma");
  g_assert_cmpint (k->grid, ==, 64 * 32);
  g_assert_cmpuint (k->threads, ==, 384);   /* producer + 2 consumer warpgroups */
  g_assert_cmpint (k->dynamic_smem, ==, 4 * (128 * 64 + 64 * 256) * 2 + 4 * 8192 + 1024 + 16 * 4);
  g_assert_true (k->persistent);
  g_assert_nonnull (strstr (h->source, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));
  g_assert_nonnull (strstr (h->source, "cp.async.bulk.tensor.2d"));
  g_assert_nonnull (k->tensor_maps);
  g_assert_cmpuint (k->tensor_maps->len, ==, 3);
  map = &g_array_index (k->tensor_maps, NapkinCudaTensorMap, 0);   /* A: K contiguous, 64 × BM boxes */
  g_assert_cmpint (map->inner, ==, 8192);
  g_assert_cmpuint (map->box_inner, ==, 64);
  g_assert_cmpuint (map->box_outer, ==, 128);
  g_assert_cmpuint (map->swizzle, ==, 128);
  g_assert_cmpint (map->dtype, ==, NAPKIN_DTYPE_BF16);
  map = &g_array_index (k->tensor_maps, NapkinCudaTensorMap, 1);   /* B: N contiguous, 64 × 64 boxes */
  g_assert_cmpuint (map->box_inner, ==, 64);
  g_assert_cmpuint (map->box_outer, ==, 64);
  g_assert_cmpint (map->slot, !=, g_array_index (k->tensor_maps, NapkinCudaTensorMap, 0).slot);
  map = &g_array_index (k->tensor_maps, NapkinCudaTensorMap, 2);   /* C: stored in 64 × 64 pieces */
  g_assert_cmpint (map->inner, ==, 8192);
  g_assert_cmpuint (map->box_inner, ==, 64);
  g_assert_cmpuint (map->box_outer, ==, 64);

  k = g_ptr_array_index (a->kernels, 0);
  g_assert_cmpstr (k->skeleton, ==, "gemm-mma");
  g_assert_null (k->tensor_maps);
  g_assert_null (strstr (a->source, "wgmma"));

  /* BN = 96 with B N-major: not the wgmma's 64-column B boxes; the plan takes mma.sync. */
  k = g_ptr_array_index (n->kernels, 0);
  g_assert_cmpstr (k->skeleton, ==, "gemm-mma");
  /* 256×256: 256 accumulators per consumer thread. */
  k = g_ptr_array_index (t->kernels, 0);
  g_test_message ("256×256: %s: %s", k->skeleton, k->note);
  g_assert_cmpstr (k->skeleton, !=, "gemm-wgmma");
  g_assert_nonnull (strstr (k->note, "accumulators"));

  if (!napkin_nvrtc_available ())
    {
      g_test_skip ("NVRTC not available");
      return;
    }
  {
    g_autoptr(GError) error = NULL;
    g_autofree char *log = NULL;
    g_autoptr(GBytes) cubin = napkin_nvrtc_compile (h->source, "sm_90a", &log, &error);

    g_assert_no_error (error);
    g_assert_nonnull (cubin);
    g_assert_cmpuint (g_bytes_get_size (cubin), >, 0);
  }
  /* ptxas's resource report (nvcc, where installed): no spills, setmaxnreg and wgmma as written. */
  if (g_file_test (NAPKIN_TEST_NVCC, G_FILE_TEST_IS_EXECUTABLE))
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *dir = g_dir_make_tmp ("napkin-wgmma-XXXXXX", &error);
      g_autofree char *src = g_build_filename (dir, "k.cu", NULL);
      g_autofree char *obj = g_build_filename (dir, "k.o", NULL);
      g_autofree char *out = NULL, *err = NULL;
      const char *argv[] = { NAPKIN_TEST_NVCC, "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v",
                             "-c", "-o", obj, src, NULL };
      int status = 0;

      g_assert_no_error (error);
      g_file_set_contents (src, h->source, -1, &error);
      g_assert_no_error (error);
      g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
      g_assert_no_error (error);
      if (!g_spawn_check_wait_status (status, NULL))
        g_error ("nvcc failed on the wgmma module:\n%s", err);
      g_assert_nonnull (strstr (err, "0 bytes spill stores, 0 bytes spill loads"));
      g_assert_null (strstr (err, "C7508"));                 /* setmaxnreg ignored */
      /* wgmma made synchronous: ptxas says "(C7512/C7514) … serialized" */
      g_assert_null (strstr (err, "C7514"));
      g_assert_null (strstr (err, "serialized"));
      g_remove (obj);

      /* The exported .cu builds its tensor maps through the runtime's driver entry point. */
      {
        g_autoptr(NapkinCudaModule) r = generate (d, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, 0, "napkin_ref_");
        g_autofree char *cu = napkin_codegen_standalone (h, r, "wgmma");
        const char *link[] = { NAPKIN_TEST_NVCC, "-O1", "-gencode=arch=compute_90a,code=sm_90a", "-o", obj,
                               src, NULL };

        g_assert_nonnull (strstr (cu, "-gencode=arch=compute_90a,code=sm_90a"));
        g_assert_nonnull (strstr (cu, "napkin_tensor_map (&m[2]"));
        g_file_set_contents (src, cu, -1, &error);
        g_assert_no_error (error);
        g_free (err);
        g_spawn_sync (NULL, (char **) link, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err, &status, &error);
        g_assert_no_error (error);
        if (!g_spawn_check_wait_status (status, NULL))
          g_error ("nvcc failed on the exported wgmma .cu:\n%s", err);
      }
      g_remove (obj);
      g_remove (src);
      g_rmdir (dir);
    }
}

/* The runner's tensor-map arguments: dims, row stride and box as cuTensorMapEncodeTiled
 * takes them, and the driver's rules checked with an error naming the slot. */
static void
test_tensor_map_encoding (void)
{
  NapkinCudaTensorMap map = { 1, NAPKIN_DTYPE_BF16, 8192, 4096, 64, 128, 128 };
  NapkinTensorMapEncoding enc;
  g_autoptr(GError) error = NULL;

  g_assert_true (napkin_cuda_tensor_map_encoding (&map, 0x7f0000000000, &enc, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (enc.dims[0], ==, 8192);
  g_assert_cmpuint (enc.dims[1], ==, 4096);
  g_assert_cmpuint (enc.row_stride, ==, 8192 * 2);
  g_assert_cmpuint (enc.box[0], ==, 64);
  g_assert_cmpuint (enc.box[1], ==, 128);
  g_assert_cmpuint (enc.element_bytes, ==, 2);

  g_assert_false (napkin_cuda_tensor_map_encoding (&map, 0x7f0000000008, &enc, &error));
  g_assert_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "slot 1"));
  g_assert_nonnull (strstr (error->message, "16-byte aligned"));
  g_clear_error (&error);

  map.box_inner = 128;   /* 256 bytes: wider than the 128-byte swizzle */
  g_assert_false (napkin_cuda_tensor_map_encoding (&map, 0x7f0000000000, &enc, &error));
  g_assert_nonnull (strstr (error->message, "swizzle span"));
  g_clear_error (&error);

  map.box_inner = 64;
  map.box_outer = 512;
  g_assert_false (napkin_cuda_tensor_map_encoding (&map, 0x7f0000000000, &enc, &error));
  g_assert_nonnull (strstr (error->message, "1 to 256"));
  g_clear_error (&error);

  map.box_outer = 64;
  map.inner = 4100;      /* rows of 8200 bytes: not a multiple of 16 */
  g_assert_false (napkin_cuda_tensor_map_encoding (&map, 0x7f0000000000, &enc, &error));
  g_assert_nonnull (strstr (error->message, "multiple of 16 bytes"));
}

/* The CUDA fp8 codec rounds exactly as the interpreter does, and every code round-trips. */
static void
test_fp8_codec (void)
{
  for (int mb = 2; mb <= 3; mb++)
    {
      NapkinDtype t = mb == 3 ? NAPKIN_DTYPE_FP8_E4M3 : NAPKIN_DTYPE_FP8_E5M2;
      int bias = mb == 3 ? 7 : 15;
      float maxv = mb == 3 ? 448.0f : 57344.0f;

      for (double v = -600; v <= 600; v += 0.0137)
        {
          float f = (float) v;
          double want = napkin_round_to_dtype (f, t);

          if (fabs (want) > maxv)
            want = copysign (maxv, want);   /* the codec saturates */
          g_assert_cmpfloat (napkin_fp8_decode (napkin_fp8_encode (f, mb, bias, maxv), mb, bias), ==, (float) want);
        }
      for (double v = 1e-7; v < 0.1; v *= 1.01)
        g_assert_cmpfloat (napkin_fp8_decode (napkin_fp8_encode ((float) v, mb, bias, maxv), mb, bias), ==,
                           (float) napkin_round_to_dtype ((float) v, t));
      for (int b = 1; b < 256; b++)
        {
          float x = napkin_fp8_decode (b, mb, bias);

          if (isnan (x) || isinf (x) || x == 0)
            continue;
          g_assert_cmpint (napkin_fp8_encode (x, mb, bias, maxv), ==, b);
        }
    }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  for (guint i = 0; i < G_N_ELEMENTS (examples); i++)
    {
      g_autofree char *name = g_strdup (examples[i]);
      g_autofree char *path = NULL;

      *strrchr (name, '.') = '\0';
      path = g_strdup_printf ("/codegen/nvrtc/%s", name);
      g_test_add_data_func (path, examples[i], test_nvrtc);
    }
  g_test_add_func ("/codegen/nvrtc-error", test_nvrtc_error);
  g_test_add_func ("/codegen/pseudocode", test_pseudocode);
  g_test_add_func ("/codegen/skeletons", test_skeletons);
  g_test_add_func ("/codegen/fp8-codec", test_fp8_codec);
  g_test_add_func ("/codegen/labels-escaped", test_labels_escaped);
  g_test_add_func ("/codegen/standalone-nvcc", test_standalone_nvcc);
  g_test_add_func ("/codegen/standalone-masked-flops", test_standalone_masked_flops);
  g_test_add_func ("/codegen/wgmma", test_wgmma);
  g_test_add_func ("/codegen/rows-threads", test_rows_threads);
  g_test_add_func ("/codegen/tensor-map-encoding", test_tensor_map_encoding);
  return g_test_run ();
}
