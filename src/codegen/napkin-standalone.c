/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include "napkin-codegen-private.h"
#include "napkin-interp.h"

/* The exported .cu: the same kernels the runner compiles, the fp32 reference from
 * the plain diagram, and a main() that measures like the runner (seeded inputs,
 * poisoned outputs, warm-up, median of event-timed repeats). */

static void
print_tables (GString                *out,
              const NapkinCudaModule *m,
              const char             *tag)
{
  g_string_append_printf (out, "static const NapkinBuf %s_bufs[] = {\n", tag);
  for (guint i = 0; i < m->args->len; i++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (m->program, g_array_index (m->args, int, i));

      g_string_append_printf (out, "  { %" G_GINT64_FORMAT "L, %d, %d, %d },\n", napkin_ir_buffer_elements (b),
                              (int) b->dtype, (int) b->role, b->tensor);
    }
  g_string_append_printf (out, "};\nstatic void\n%s_setup_kernels (void)\n{\n", tag);
  for (guint k = 0; k < m->kernels->len; k++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (m->kernels, k);

      if (ck->dynamic_smem > 0)
        g_string_append_printf (out, "  CHECK (cudaFuncSetAttribute (%s, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                                     "%" G_GINT64_FORMAT "));\n", ck->name, ck->dynamic_smem);
    }
  g_string_append_printf (out, "}\nstatic void\n%s_launch (const NapkinArgs &a)\n{\n", tag);
  for (guint k = 0; k < m->kernels->len; k++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (m->kernels, k);

      g_string_append_printf (out, "  %s<<<%" G_GINT64_FORMAT ", %u, %" G_GINT64_FORMAT ">>> (a);\n", ck->name,
                              ck->grid, ck->threads, ck->dynamic_smem);
    }
  g_string_append_printf (out, "}\nstatic const long %s_workspace = %" G_GINT64_FORMAT "L;\n"
                               "static const int %s_workspace_slot = %d;\n",
                          tag, m->workspace_bytes, tag, m->workspace_slot);
}

char *
napkin_codegen_standalone (const NapkinCudaModule *module,
                           const NapkinCudaModule *reference,
                           const char             *title)
{
  NapkinDiagram *d;
  GString *out;
  NapkinFlops flops = { 0 };
  gint64 io_bytes = 0;
  double bound = 0;
  g_autofree char *safe_title = napkin_codegen_escape_comment (title);

  g_return_val_if_fail (module != NULL && reference != NULL, NULL);

  d = module->program->diagram;
  napkin_diagram_total_flops (d, &flops);
  for (guint i = 0; i < module->args->len; i++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (module->program, g_array_index (module->args, int, i));

      if (b->role == NAPKIN_BUF_INPUT || b->role == NAPKIN_BUF_OUTPUT)
        io_bytes += napkin_ir_buffer_elements (b) * napkin_dtype_bytes (b->dtype);
      if (b->role == NAPKIN_BUF_OUTPUT)
        bound = MAX (bound, napkin_dtype_tolerance (b->dtype));
    }

  out = g_string_new (NULL);
  g_string_append_printf (out,
    "/* %s: exported by Napkin. Build: nvcc -O3 -arch=native -o bench this.cu\n"
    " * Run: ./bench [repeats] [seed]. Prints the median time of the kernels below, the\n"
    " * throughput, and the relative error against an fp32 reference generated from the\n"
    " * plain diagram (every operation through device memory). */\n"
    "#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <cmath>\n#include <vector>\n"
    "#include <algorithm>\n#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n\n",
    safe_title);
  g_string_append (out, module->source);
  g_string_append (out, "\n/* ---- fp32 reference from the plain diagram ---- */\n");
  g_string_append (out, reference->source);
  g_string_append (out,
    "\n/* ---- measurement ---- */\n"
    "#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \\\n"
    "  fprintf (stderr, \"%s:%d: %s\\n\", __FILE__, __LINE__, cudaGetErrorString (e_)); exit (1); } } while (0)\n"
    "struct NapkinBuf { long elements; int dtype; int role; int tensor; };\n"
    "enum { NB_FP32, NB_TF32, NB_FP16, NB_BF16, NB_E4M3, NB_E5M2, NB_INT8 };\n"
    "enum { NB_INPUT, NB_OUTPUT, NB_SCRATCH };\n");
  print_tables (out, module, "kern");
  print_tables (out, reference, "ref");
  g_string_append_printf (out,
    "static const double flops = %" G_GINT64_FORMAT ".0, io_bytes = %" G_GINT64_FORMAT ".0;\n"
    "static const double bound = %g;\n",
    flops.tensor + flops.cuda + flops.sfu, io_bytes, bound);
  g_string_append (out,
    "static size_t esize (int t) { return t == NB_FP16 || t == NB_BF16 ? 2 : t == NB_INT8 || t == NB_E4M3 || t == NB_E5M2 ? 1 : 4; }\n"
    "static unsigned long long rng_state;\n"
    "static double next_uniform (void)\n"
    "{ unsigned long long z = (rng_state += 0x9e3779b97f4a7c15ULL); z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;\n"
    "  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL; z ^= z >> 31; return (double) (z >> 11) / 9007199254740992.0 * 2.0 - 1.0; }\n"
    "static void to_device_type (int t, const float *src, void *dst, long n)\n"
    "{ for (long i = 0; i < n; i++) {\n"
    "    if (t == NB_FP16) ((__half *) dst)[i] = __float2half (src[i]);\n"
    "    else if (t == NB_BF16) ((__nv_bfloat16 *) dst)[i] = __float2bfloat16 (src[i]);\n"
    "    else if (t == NB_INT8) ((signed char *) dst)[i] = (signed char) src[i];\n"
    "    else if (t == NB_E4M3) ((unsigned char *) dst)[i] = napkin_fp8_encode (src[i], 3, 7, 448.0f);\n"
    "    else if (t == NB_E5M2) ((unsigned char *) dst)[i] = napkin_fp8_encode (src[i], 2, 15, 57344.0f);\n"
    "    else ((float *) dst)[i] = src[i]; } }\n"
    "static void to_float (int t, const void *src, float *dst, long n)\n"
    "{ for (long i = 0; i < n; i++) {\n"
    "    if (t == NB_FP16) dst[i] = __half2float (((const __half *) src)[i]);\n"
    "    else if (t == NB_BF16) dst[i] = __bfloat162float (((const __nv_bfloat16 *) src)[i]);\n"
    "    else if (t == NB_INT8) dst[i] = ((const signed char *) src)[i];\n"
    "    else if (t == NB_E4M3) dst[i] = napkin_fp8_decode (((const unsigned char *) src)[i], 3, 7);\n"
    "    else if (t == NB_E5M2) dst[i] = napkin_fp8_decode (((const unsigned char *) src)[i], 2, 15);\n"
    "    else dst[i] = ((const float *) src)[i]; } }\n"
    "static void setup (const NapkinBuf *bufs, int n, long ws, int ws_slot, NapkinArgs &a,\n"
    "                   std::vector<std::vector<float> > &inputs)\n"
    "{ memset (&a, 0, sizeof a);\n"
    "  for (int i = 0; i < n; i++) {\n"
    "    size_t bytes = bufs[i].elements * esize (bufs[i].dtype);\n"
    "    CHECK (cudaMalloc (&a.p[i], bytes));\n"
    "    CHECK (cudaMemset (a.p[i], 0xff, bytes)); /* poison: NaN in every float type */\n"
    "    if (bufs[i].role == NB_INPUT) {\n"
    "      std::vector<float> &h = inputs[bufs[i].tensor];\n"
    "      if (h.empty ()) { h.resize (bufs[i].elements);\n"
    "        for (long k = 0; k < bufs[i].elements; k++) { double v = next_uniform ();\n"
    "          h[k] = (float) (bufs[i].dtype == NB_INT8 ? rint (v * 100) : v); if (h[k] == 0) h[k] = 0.5f; } }\n"
    "      std::vector<char> dev (bytes); to_device_type (bufs[i].dtype, h.data (), dev.data (), bufs[i].elements);\n"
    "      CHECK (cudaMemcpy (a.p[i], dev.data (), bytes, cudaMemcpyHostToDevice)); } }\n"
    "  if (ws_slot >= 0) CHECK (cudaMalloc (&a.p[ws_slot], ws)); }\n"
    "static std::vector<float> output (const NapkinBuf *bufs, int n, const NapkinArgs &a, int tensor)\n"
    "{ for (int i = 0; i < n; i++) if (bufs[i].role == NB_OUTPUT && bufs[i].tensor == tensor) {\n"
    "    size_t bytes = bufs[i].elements * esize (bufs[i].dtype); std::vector<char> dev (bytes);\n"
    "    std::vector<float> h (bufs[i].elements);\n"
    "    CHECK (cudaMemcpy (dev.data (), a.p[i], bytes, cudaMemcpyDeviceToHost));\n"
    "    to_float (bufs[i].dtype, dev.data (), h.data (), bufs[i].elements); return h; }\n"
    "  return std::vector<float> (); }\n"
    "int main (int argc, char **argv)\n"
    "{ int repeats = argc > 1 ? atoi (argv[1]) : 20; rng_state = argc > 2 ? strtoull (argv[2], 0, 10) : 1234;\n"
    "  if (repeats < 1) repeats = 1;\n"
    "  const int nk = sizeof kern_bufs / sizeof kern_bufs[0], nr = sizeof ref_bufs / sizeof ref_bufs[0];\n"
    "  std::vector<std::vector<float> > inputs (64);\n"
    "  kern_setup_kernels (); ref_setup_kernels ();\n"
    "  NapkinArgs ka, ra; setup (ref_bufs, nr, ref_workspace, ref_workspace_slot, ra, inputs);\n"
    "  setup (kern_bufs, nk, kern_workspace, kern_workspace_slot, ka, inputs);\n"
    "  ref_launch (ra); CHECK (cudaGetLastError ()); CHECK (cudaDeviceSynchronize ());\n"
    "  kern_launch (ka); CHECK (cudaGetLastError ()); CHECK (cudaDeviceSynchronize ());\n"
    "  double err = 0;\n"
    "  for (int i = 0; i < nk; i++) if (kern_bufs[i].role == NB_OUTPUT) {\n"
    "    std::vector<float> got = output (kern_bufs, nk, ka, kern_bufs[i].tensor), want = output (ref_bufs, nr, ra, kern_bufs[i].tensor);\n"
    "    double diff = 0, norm = 0; for (size_t k = 0; k < got.size (); k++) {\n"
    "      if (std::isnan (got[k]) || std::isnan (want[k])) { diff = INFINITY; break; }\n"
    "      diff = std::max (diff, (double) fabsf (got[k] - want[k])); norm = std::max (norm, (double) fabsf (want[k])); }\n"
    "    err = std::max (err, norm > 0 ? diff / norm : diff); }\n"
    "  for (int w = 0; w < 3; w++) kern_launch (ka);\n"
    "  CHECK (cudaDeviceSynchronize ());\n"
    "  cudaEvent_t e0, e1; CHECK (cudaEventCreate (&e0)); CHECK (cudaEventCreate (&e1));\n"
    "  std::vector<float> times;\n"
    "  for (int r = 0; r < repeats; r++) { CHECK (cudaEventRecord (e0)); kern_launch (ka); CHECK (cudaEventRecord (e1));\n"
    "    CHECK (cudaEventSynchronize (e1)); float ms; CHECK (cudaEventElapsedTime (&ms, e0, e1)); times.push_back (ms); }\n"
    "  CHECK (cudaGetLastError ());\n"
    "  std::sort (times.begin (), times.end ()); double ms = times[times.size () / 2];\n"
    "  printf (\"time_ms %.4f  tflops %.2f  gbps %.1f  rel_err %.3g  %s\\n\", ms, flops / ms / 1e9,\n"
    "          io_bytes / ms / 1e6, err, err <= bound ? \"ok\" : \"WRONG\");\n"
    "  return err <= bound ? 0 : 1; }\n");
  return g_string_free (out, FALSE);
}
