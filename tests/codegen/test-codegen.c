/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "napkin-codegen.h"
#include "napkin-file.h"

static const char *examples[] = {
  "matmul.napkin", "matmul-tiled.napkin", "matmul-nested.napkin", "softmax.napkin",
  "layernorm.napkin", "mlp.napkin", "attention.napkin", "flash-attention.napkin",
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
  g_assert_nonnull (strstr (fp, "for each chunk of 64 along k (64 chunks, in sequence):"));
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
  /* Every comment closes where the printer closed it: no "*" "/" inside a label. */
  for (pos = m->source; (pos = strstr (pos, "/*")) != NULL; pos += 2)
    {
      char *end = strstr (pos + 2, "*/");
      char *nl = strchr (pos, '\n');

      g_assert_nonnull (end);
      g_assert_true (nl == NULL || end < nl);
    }
  if (napkin_nvrtc_available ())
    {
      g_autoptr(GBytes) cubin = napkin_nvrtc_compile (m->source, "sm_80", NULL, &error);

      g_assert_no_error (error);
    }
  (void) data;
  (void) d;
}

/* The exported .cu builds with nvcc into a program. */
static void
test_standalone_nvcc (void)
{
  const char *nvcc = "/usr/local/cuda/bin/nvcc";
  g_autofree char *dir = NULL;
  g_autoptr(GError) error = NULL;

  if (!g_file_test (nvcc, G_FILE_TEST_IS_EXECUTABLE))
    {
      g_test_skip ("no nvcc at /usr/local/cuda/bin");
      return;
    }
  dir = g_dir_make_tmp ("napkin-cu-XXXXXX", &error);
  g_assert_no_error (error);

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
  g_assert_nonnull (strstr (t->source, "#define G_BK 64"));
  g_assert_nonnull (strstr (t->source, "#define G_STAGES 3"));

  k = g_ptr_array_index (n->kernels, 0);
  g_assert_cmpstr (k->skeleton, ==, "gemm-mma");
  g_assert_nonnull (strstr (n->source, "#define G_WM 64"));
  g_assert_nonnull (strstr (n->source, "#define G_WN 32"));

  k = g_ptr_array_index (f->kernels, 0);
  g_assert_cmpstr (k->skeleton, ==, "flash-mma");
  g_assert_cmpint (k->grid, ==, 4 * 16 * 32);
  g_assert_cmpuint (k->threads, ==, 256);
  g_assert_nonnull (strstr (f->source, "#define F_BKV 64"));

  napkin_diagram_override_axis (odd, "m=4000", &error);
  g_assert_no_error (error);
  o = generate (odd, 0, 0, NULL);
  k = g_ptr_array_index (o->kernels, 0);
  g_assert_cmpstr (k->skeleton, ==, "generic");
  g_assert_nonnull (k->note);
  g_assert_nonnull (strstr (k->note, "must be multiples of the tiles"));
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
  g_test_add_func ("/codegen/labels-escaped", test_labels_escaped);
  g_test_add_func ("/codegen/standalone-nvcc", test_standalone_nvcc);
  return g_test_run ();
}
