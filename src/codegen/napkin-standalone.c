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

      /* inputs drawn as the runner draws them: scaled by napkin_input_scale */
      double scale = b->role == NAPKIN_BUF_INPUT ? napkin_input_scale (m->program->diagram, b->tensor) : 1.0;

      g_string_append_printf (out, "  { %" G_GINT64_FORMAT "L, %d, %d, %d, %.17g },\n", napkin_ir_buffer_elements (b),
                              (int) b->dtype, (int) b->role, b->tensor, scale);
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
      guint n_maps = ck->tensor_maps ? ck->tensor_maps->len : 0;

      if (n_maps == 0)
        {
          g_string_append_printf (out, "  %s<<<%" G_GINT64_FORMAT ", %u, %" G_GINT64_FORMAT ">>> (a);\n", ck->name,
                                  ck->grid, ck->threads, ck->dynamic_smem);
          continue;
        }
      /* Tensor maps (sm_90a skeletons): built once, as main() launches on the same buffers. */
      g_string_append_printf (out, "  {\n    static NapkinTensorMap m[%u];\n    static bool ready;\n"
                                   "    if (!ready) {\n", n_maps);
      for (guint i = 0; i < n_maps; i++)
        {
          const NapkinCudaTensorMap *tm = &g_array_index (ck->tensor_maps, NapkinCudaTensorMap, i);

          g_string_append_printf (out, "      napkin_tensor_map (&m[%u], (char *) a.p[%d] + %" G_GINT64_FORMAT ", %d, %"
                                       G_GINT64_FORMAT "ULL, %" G_GINT64_FORMAT "ULL, %u, %u, %u, %" G_GINT64_FORMAT
                                       "ULL, %" G_GINT64_FORMAT "ULL, %" G_GINT64_FORMAT "ULL);\n", i, tm->slot,
                                  tm->offset, (int) tm->dtype, tm->inner, tm->outer, tm->box_inner, tm->box_outer,
                                  tm->swizzle, tm->ld > 0 ? tm->ld : tm->inner, MAX (tm->batch, 1), tm->batch_stride);
        }
      g_string_append (out, "      ready = true;\n    }\n");
      if (ck->persistent && ck->cluster > 1)
        {
          /* whole clusters of blocks, at most one block per SM */
          g_string_append_printf (out, "    int sms = 0; CHECK (cudaDeviceGetAttribute (&sms, cudaDevAttrMultiProcessorCount, 0));\n"
                                       "    cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute at[1];\n"
                                       "    cfg.gridDim = dim3 ((unsigned) std::min (%" G_GINT64_FORMAT "L, (long) (sms / %u * %u)));\n"
                                       "    cfg.blockDim = dim3 (%u); cfg.dynamicSmemBytes = %" G_GINT64_FORMAT ";\n"
                                       "    at[0].id = cudaLaunchAttributeClusterDimension;\n"
                                       "    at[0].val.clusterDim.x = %u; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;\n"
                                       "    cfg.attrs = at; cfg.numAttrs = 1;\n"
                                       "    int fit = 0; CHECK (cudaOccupancyMaxActiveClusters (&fit, %s, &cfg));\n"
                                       "    if (fit > 0) cfg.gridDim.x = std::min (cfg.gridDim.x, (unsigned) (fit * %u));\n"
                                       "    CHECK (cudaLaunchKernelEx (&cfg, %s, a",
                                  ck->grid, ck->cluster, ck->cluster, ck->threads, ck->dynamic_smem, ck->cluster,
                                  ck->name, ck->cluster, ck->name);
        }
      else if (ck->persistent)   /* at most one block per SM: the kernel loops over its tiles */
        g_string_append_printf (out, "    int sms = 0; CHECK (cudaDeviceGetAttribute (&sms, cudaDevAttrMultiProcessorCount, 0));\n"
                                     "    %s<<<std::min (%" G_GINT64_FORMAT "L, (long) sms), %u, %" G_GINT64_FORMAT ">>> (a",
                                ck->name, ck->grid, ck->threads, ck->dynamic_smem);
      else
        g_string_append_printf (out, "    %s<<<%" G_GINT64_FORMAT ", %u, %" G_GINT64_FORMAT ">>> (a", ck->name, ck->grid,
                                ck->threads, ck->dynamic_smem);
      for (guint i = 0; i < n_maps; i++)
        g_string_append_printf (out, ", m[%u]", i);
      g_string_append (out, ck->persistent && ck->cluster > 1 ? "));\n  }\n" : ");\n  }\n");
    }
  g_string_append_printf (out, "}\nstatic const long %s_workspace = %" G_GINT64_FORMAT "L;\n"
                               "static const int %s_workspace_slot = %d;\n",
                          tag, m->workspace_bytes, tag, m->workspace_slot);
}

static gboolean
takes_tensor_maps (const NapkinCudaModule *m)
{
  for (guint k = 0; k < m->kernels->len; k++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (m->kernels, k);

      if (ck->tensor_maps && ck->tensor_maps->len > 0)
        return TRUE;
    }
  return FALSE;
}

/* cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda). */
static const char tensor_map_helper[] =
  "typedef CUresult (*NapkinEncodeTiled) (CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,\n"
  "  const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,\n"
  "  CUtensorMapL2promotion, CUtensorMapFloatOOBfill);\n"
  "static void napkin_tensor_map (NapkinTensorMap *m, void *p, int dtype, unsigned long long inner,\n"
  "                               unsigned long long outer, unsigned box_inner, unsigned box_outer, unsigned swizzle,\n"
  "                               unsigned long long ld, unsigned long long batch, unsigned long long batch_stride)\n"
  "{ static NapkinEncodeTiled encode; cudaDriverEntryPointQueryResult q;\n"
  "  if (!encode) {\n"
  "#if CUDART_VERSION >= 12050\n"
  "    CHECK (cudaGetDriverEntryPointByVersion (\"cuTensorMapEncodeTiled\", (void **) &encode, 12000, cudaEnableDefault, &q));\n"
  "#else\n"
  "    CHECK (cudaGetDriverEntryPoint (\"cuTensorMapEncodeTiled\", (void **) &encode, cudaEnableDefault, &q));\n"
  "#endif\n"
  "    if (!encode) { fprintf (stderr, \"the driver lacks cuTensorMapEncodeTiled (CUDA 12+)\\n\"); exit (1); } }\n"
  "  size_t es = esize (dtype);\n"
  "  cuuint64_t dims[3] = { inner, outer, batch }, strides[2] = { ld * es, batch_stride * es };\n"
  "  cuuint32_t box[3] = { box_inner, box_outer, 1 }, estr[3] = { 1, 1, 1 };\n"
  "  CUtensorMapDataType t = dtype == NB_FP16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : dtype == NB_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16\n"
  "                        : es == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;\n"
  "  CUtensorMapSwizzle sw = swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B\n"
  "                        : swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;\n"
  "  CUresult r = encode ((CUtensorMap *) m, t, batch > 1 ? 3 : 2, p, dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,\n"
  "                       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);\n"
  "  if (r != CUDA_SUCCESS) { fprintf (stderr, \"cuTensorMapEncodeTiled: error %d\\n\", (int) r); exit (1); } }\n";

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
  g_autofree char *gencode = NULL;

  g_return_val_if_fail (module != NULL && reference != NULL, NULL);

  d = module->program->diagram;
  /* the work done: pairs a causal or window mask hides are not counted */
  napkin_diagram_computed_flops (d, &flops);
  for (guint i = 0; i < module->args->len; i++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (module->program, g_array_index (module->args, int, i));

      if (b->role == NAPKIN_BUF_INPUT || b->role == NAPKIN_BUF_OUTPUT)
        io_bytes += napkin_ir_buffer_elements (b) * napkin_dtype_bytes (b->dtype);
      /* the coarsest type the data passes through: tensor-core paths round operands and
       * intermediates (attention's P) to the inputs' type, so bf16 inputs with an fp32
       * output carry bf16's error, not fp32's */
      if (b->role == NAPKIN_BUF_OUTPUT || b->role == NAPKIN_BUF_INPUT)
        bound = MAX (bound, napkin_dtype_tolerance (b->dtype));
    }

  /* the plan's target: sm_90a's wgmma needs the architecture-specific compute_90a */
  if (module->target != NULL)
    gencode = g_strdup_printf ("-gencode=arch=compute_%s,code=%s", module->target + 3, module->target);
  else
    gencode = g_strdup ("-arch=native");
  out = g_string_new (NULL);
  g_string_append_printf (out,
    "/* %s: exported by Napkin. Build: nvcc -O3 %s -o bench this.cu\n"
    " * Run: ./bench [repeats] [seed]. Prints the median time of the kernels below, the\n"
    " * throughput, and the relative error against an fp32 reference generated from the\n"
    " * plain diagram (every operation through device memory). */\n"
    "#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <cmath>\n#include <vector>\n"
    "#include <algorithm>\n#include <cuda.h>\n#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n\n",
    safe_title, gencode);
  g_string_append (out, module->source);
  g_string_append (out, "\n/* ---- fp32 reference from the plain diagram ---- */\n");
  g_string_append (out, reference->source);
  g_string_append (out,
    "\n/* ---- measurement ---- */\n"
    "#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \\\n"
    "  fprintf (stderr, \"%s:%d: %s\\n\", __FILE__, __LINE__, cudaGetErrorString (e_)); exit (1); } } while (0)\n"
    "struct NapkinBuf { long elements; int dtype; int role; int tensor; double scale; };\n"
    "enum { NB_FP32, NB_TF32, NB_FP16, NB_BF16, NB_E4M3, NB_E5M2, NB_INT8 };\n"
    "enum { NB_INPUT, NB_OUTPUT, NB_SCRATCH };\n");
  g_string_append (out, "static size_t esize (int t) { return t == NB_FP16 || t == NB_BF16 ? 2 : t == NB_INT8 || t == NB_E4M3 || t == NB_E5M2 ? 1 : 4; }\n");
  if (takes_tensor_maps (module))
    g_string_append (out, tensor_map_helper);
  print_tables (out, module, "kern");
  print_tables (out, reference, "ref");
  g_string_append_printf (out,
    "static const double flops = %" G_GINT64_FORMAT ".0, io_bytes = %" G_GINT64_FORMAT ".0;\n"
    "static const double bound = %g;\n",
    flops.tensor + flops.cuda + flops.sfu, io_bytes, bound);
  g_string_append (out,
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
    "          h[k] = (float) (bufs[i].dtype == NB_INT8 ? rint (v * 100) : v * bufs[i].scale);\n"
    "          if (h[k] == 0) h[k] = (float) (0.5 * bufs[i].scale); } }\n"
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
