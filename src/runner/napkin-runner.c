/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-runner"

/* napkin-runner: the child process that compiles, runs, checks and times one
 * diagram on the local GPU and prints one JSON object on stdout. Progress goes to
 * stderr as "progress FRACTION MESSAGE" lines. It depends on GLib, json-c and
 * NVRTC only (the driver is opened at run time), so it runs on a GPU machine
 * that has no GTK. The parent (NapkinRunJob) enforces its own time limit too.
 * It never calls setlocale: its JSON, messages included, stays English (the C
 * locale); napkin-cli and the app translate the messages they show
 * (docs/cli.md, "Language"). */

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "napkin-codegen.h"
#include "napkin-calibrate-wgmma.h"
#include "napkin-cuda-driver.h"
#include "napkin-nvml.h"
#include "napkin-prediction.h"
#include "napkin-file.h"
#include "napkin-interp.h"
#include "napkin-json-private.h"
#include "napkin-module-cache.h"
#include "napkin-runner-multi.h"
#include "napkin-gpu-group.h"
#include "napkin-shard.h"
#include "napkin-shard-model.h"
#include "napkin-shard-slice.h"
#include "napkin-validate.h"
#include "napkin-kernels.h"

/* The generated code's fp8 codec, as host C (kernels/fp8-codec.h). */
#define NAPKIN_HD static inline
#include "fp8-codec.h"

enum
{
  EXIT_OK = 0,
  EXIT_FAILED = 1,        /* wrong result, compile error, bad diagram */
  EXIT_USAGE = 2,
  EXIT_NO_GPU = 3,
  EXIT_FAULT = 4,
  EXIT_TIMEOUT = 5,
};

static NapkinCudaDriver cu;
static char *cache_dir;   /* the compiled-module cache; NULL with --no-cache */

/* Wall time of each step, in seconds, into the result's "phases" (docs/perf-notes.md,
 * "Where a run's time goes"): each phase_end () closes the step begun at the last. */
static json_object *phases;
static gint64 phase_start, run_start;

/* NVML, opened on a thread of its own while the driver starts (nvmlInit takes tens of
 * milliseconds). */
typedef struct
{
  NapkinNvml  nvml;
  gboolean    ok;
  char       *why;
} NvmlOpen;

static NvmlOpen nvml;
static GThread *nvml_thread;

static gpointer
nvml_open_thread (gpointer data)
{
  NvmlOpen *o = data;

  o->ok = napkin_nvml_open (&o->nvml, 0, &o->why);
  return NULL;
}

/* Waits for the NVML thread; TRUE when NVML is open. */
static gboolean
nvml_join (void)
{
  if (nvml_thread != NULL)
    g_thread_join (g_steal_pointer (&nvml_thread));
  return nvml.ok;
}

/* Seconds to the microsecond, written as such (not 17 digits). */
static json_object *
seconds_json (double s)
{
  char text[32];

  g_snprintf (text, sizeof text, "%.6f", s);
  return json_object_new_double_s (s, text);
}

static void
phase_end (const char *name)
{
  gint64 now = g_get_monotonic_time ();
  json_object *old;

  if (phases == NULL)
    return;
  old = json_object_object_get (phases, name);
  /* a step that comes twice (the kernel's and the reference's compile) adds up */
  json_object_object_add (phases, name, seconds_json ((old ? json_object_get_double (old) : 0)
                                                       + (now - phase_start) / 1e6));
  phase_start = now;
}

static void
progress (double      fraction,
          const char *message)
{
  fprintf (stderr, "progress %.2f %s\n", fraction, message);
  fflush (stderr);
}

static void
emit (json_object *root)
{
  printf ("%s\n", json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  fflush (stdout);
}

static int
finish (json_object *root,
        const char  *status,
        const char  *message,
        int          code)
{
  /* no NVML start left running while the process exits */
  if (nvml_join ())
    napkin_nvml_close (&nvml.nvml);
  json_object_object_add (root, "status", json_object_new_string (status));
  if (phases != NULL)
    json_object_object_add (phases, "total", seconds_json ((g_get_monotonic_time () - run_start) / 1e6));
  if (message != NULL)
    json_object_object_add (root, "message", json_object_new_string (message));
  emit (root);
  return code;
}

/* NVRTC through the compiled-module cache. With `out`, records how the module came:
 * { "ms", "cached", "key", "cache": its file, "note": why the cache was not used }. */
static GBytes *
compile_module (const char   *source,
                const char   *arch,
                char        **log,
                json_object  *out,
                GError      **error)
{
  NapkinModuleCacheInfo info = { 0 };
  GBytes *code = napkin_module_cache_compile (cache_dir, source, arch, log, &info, error);

  if (out != NULL)
    {
      json_object_object_add (out, "ms", json_object_new_double (info.ms));
      json_object_object_add (out, "cached", json_object_new_boolean (info.cached));
      json_object_object_add (out, "key", info.key ? json_object_new_string (info.key) : NULL);
      json_object_object_add (out, "cache", info.path ? json_object_new_string (info.path) : NULL);
      if (info.note != NULL)
        json_object_object_add (out, "note", json_object_new_string (info.note));
    }
  napkin_module_cache_info_clear (&info);
  return code;
}

/* Watchdog: a hung kernel blocks in the driver; report and leave. */
static void
on_alarm (int sig)
{
  static const char text[] = "{ \"status\": \"timeout\", \"message\": \"the kernel did not finish within the "
                             "time limit; the runner stopped it\" }\n";
  ssize_t ignored = write (STDOUT_FILENO, text, sizeof text - 1);

  (void) ignored;
  _exit (EXIT_TIMEOUT);
}

/* ---- host element types ----------------------------------------------------------------- */

static guint16
half_from_float (float f)
{
  guint32 x;
  guint32 sign, mant;
  int exp;

  memcpy (&x, &f, 4);
  sign = (x >> 16) & 0x8000;
  exp = (int) ((x >> 23) & 0xff) - 127 + 15;
  mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff)
    return sign | 0x7c00 | (mant ? 0x200 : 0);
  if (exp >= 31)
    return sign | 0x7c00;
  if (exp <= 0)
    {
      guint32 m, r;
      int shift = 14 - exp;

      if (shift > 24)
        return sign;
      m = mant | 0x800000;
      r = m >> shift;
      if ((m >> (shift - 1)) & 1 && ((m & ((1u << (shift - 1)) - 1)) || (r & 1)))
        r++;
      return sign | r;
    }
  {
    guint32 h = sign | (exp << 10) | (mant >> 13);
    guint32 rest = mant & 0x1fff;

    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
      h++;
    return h;
  }
}

static guint16
bf16_from_float (float f)
{
  guint32 x;

  memcpy (&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return (x >> 16) | 0x40;
  x += 0x7fff + ((x >> 16) & 1);
  return x >> 16;
}

static void
to_device (NapkinDtype  t,
           const float *src,
           void        *dst,
           gint64       n)
{
  for (gint64 i = 0; i < n; i++)
    switch (t)
      {
      case NAPKIN_DTYPE_FP16: ((guint16 *) dst)[i] = half_from_float (src[i]); break;
      case NAPKIN_DTYPE_BF16: ((guint16 *) dst)[i] = bf16_from_float (src[i]); break;
      case NAPKIN_DTYPE_INT8: ((gint8 *) dst)[i] = (gint8) src[i]; break;
      case NAPKIN_DTYPE_FP8_E4M3: ((guint8 *) dst)[i] = napkin_fp8_encode (src[i], 3, 7, 448.0f); break;
      case NAPKIN_DTYPE_FP8_E5M2: ((guint8 *) dst)[i] = napkin_fp8_encode (src[i], 2, 15, 57344.0f); break;
      default: ((float *) dst)[i] = src[i]; break;
      }
}

/* The inputs: the same generator as the exported .cu (splitmix64, one draw per element,
 * tensor after tensor), so both see the same values. Draw number k (from 1) is a
 * function of the seed and k alone, so the device computes each element where it
 * lives (napkin_fill below) instead of the host filling and copying ~10^8 elements;
 * the host computes a few of them again to check (check_inputs). */
#define NAPKIN_RNG_STEP G_GUINT64_CONSTANT (0x9e3779b97f4a7c15)

static double
uniform_at (guint64 first,
            gint64  i)
{
  guint64 z = first + (guint64) (i + 1) * NAPKIN_RNG_STEP;

  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
  z ^= z >> 31;
  return (double) (z >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* Element i of an input whose first draw follows state `first`, as a float (int8
 * inputs take small integers; others are scaled by napkin_input_scale; 0 becomes
 * 0.5 · scale so that no input is zero). */
static float
input_value (guint64  first,
             gboolean integers,
             double   scale,
             gint64   i)
{
  double v = uniform_at (first, i);
  float f = (float) (integers ? rint (v * 100) : v * scale);

  return f != 0 ? f : (float) (0.5 * scale);
}

/* The device twin of input_value () and to_device (): the same integer and IEEE double
 * steps, so the same bits (check_inputs compares). NapkinDtype codes as in
 * compare_source; the fp8 codec is kernels/fp8-codec.h. */
static const char fill_source[] =
  "__device__ unsigned short napkin_fill_half (float f)\n"
  "{\n"
  "  unsigned x = __float_as_uint (f), sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;\n"
  "  int exp = (int) ((x >> 23) & 0xff) - 127 + 15;\n"
  "  if (((x >> 23) & 0xff) == 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);\n"
  "  if (exp >= 31) return sign | 0x7c00;\n"
  "  if (exp <= 0) {\n"
  "    int shift = 14 - exp; unsigned m, r;\n"
  "    if (shift > 24) return sign;\n"
  "    m = mant | 0x800000; r = m >> shift;\n"
  "    if ((m >> (shift - 1)) & 1 && ((m & ((1u << (shift - 1)) - 1)) || (r & 1))) r++;\n"
  "    return sign | r;\n"
  "  }\n"
  "  unsigned h = sign | (exp << 10) | (mant >> 13), rest = mant & 0x1fff;\n"
  "  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;\n"
  "  return h;\n"
  "}\n"
  "__device__ unsigned short napkin_fill_bf16 (float f)\n"
  "{\n"
  "  unsigned x = __float_as_uint (f);\n"
  "  if ((x & 0x7fffffff) > 0x7f800000) return (x >> 16) | 0x40;\n"
  "  x += 0x7fff + ((x >> 16) & 1);\n"
  "  return x >> 16;\n"
  "}\n"
  "extern \"C\" __global__ void napkin_fill (void *dst, int dtype, long n, unsigned long long first, int integers,\n"
  "                                          double scale)\n"
  "{\n"
  "  for (long i = blockIdx.x * (long) blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x) {\n"
  "    unsigned long long z = first + (unsigned long long) (i + 1) * 0x9e3779b97f4a7c15ULL;\n"
  "    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;\n"
  "    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;\n"
  "    z ^= z >> 31;\n"
  "    const double v = (double) (z >> 11) / 9007199254740992.0 * 2.0 - 1.0;\n"
  "    float f = (float) (integers ? rint (v * 100) : v * scale);\n"
  "    if (f == 0) f = (float) (0.5 * scale);\n"
  "    switch (dtype) {\n"
  "    case 2: ((unsigned short *) dst)[i] = napkin_fill_half (f); break;\n"
  "    case 3: ((unsigned short *) dst)[i] = napkin_fill_bf16 (f); break;\n"
  "    case 4: ((unsigned char *) dst)[i] = napkin_fp8_encode (f, 3, 7, 448.0f); break;\n"
  "    case 5: ((unsigned char *) dst)[i] = napkin_fp8_encode (f, 2, 15, 57344.0f); break;\n"
  "    case 6: ((signed char *) dst)[i] = (signed char) f; break;\n"
  "    default: ((float *) dst)[i] = f; break;\n"
  "    }\n"
  "  }\n"
  "}\n";

/* Where each input tensor's draws start: tensors[t] = the generator's state before its
 * first element, integers[t] = whether it is drawn as small integers; rotate_half[t]:
 * the tensor is the constant an imported rotary embedding multiplies by (its
 * "constant": "rotate_half", docs/import.md), n × n, not drawn. */
typedef struct
{
  guint64  *first;
  gboolean *integers;
  double   *scale;         /* napkin_input_scale */
  gint64   *rotate_half;   /* n, or 0 */
  float   **given;         /* values read from NAPKIN_INPUT_DIR (a module's own), or NULL */
} Inputs;

/* R with x · R = cat (−x[n/2:], x[:n/2]), as the PyTorch printer's _rotate_half_matrix. */
static float *
rotate_half_matrix (gint64 n)
{
  float *r = g_new0 (float, n * n);

  for (gint64 i = 0; i < n / 2; i++)
    {
      r[(i + n / 2) * n + i] = -1.0f;
      r[i * n + i + n / 2] = 1.0f;
    }
  return r;
}

/* ---- one module on the device ----------------------------------------------------------- */

typedef struct
{
  NapkinCudaModule *mod;
  CUmodule          module;
  CUfunction       *functions;
  CUdeviceptr      *ptrs;      /* per slot; inputs: copy 0 */
  CUdeviceptr      *copies;    /* inputs: rotation copies, n_copies per slot */
  guint             n_copies;
  CUtensorMap      *maps;      /* the kernels' tensor maps in order, n_maps per input copy */
  guint             n_maps;
  gboolean          freed;
  gboolean          is_reference;
  guint             grid_sms;  /* persistent kernels on at most this many SMs (0: every SM) */
  int              *clusters;  /* per kernel launched in clusters: how many fit on the GPU at
                                  once (0: unknown) */
} Device;

static gboolean
check (CUresult    res,
       const char *what,
       char      **message)
{
  return napkin_cuda_driver_check (&cu, res, what, message);
}

static int sm_count;   /* the GPU's multiprocessors, once the device is open */

/* Blocks a kernel is launched with: a persistent one at most one per SM, in whole
 * clusters. */
static gint64
launch_grid (const Device *dev,
             guint         k)
{
  const NapkinCudaKernel *ck = g_ptr_array_index (dev->mod->kernels, k);
  const gint64 cluster = MAX (1u, ck->cluster);
  guint sms = dev->grid_sms;
  gint64 cap;

  sms = sms > 0 && (int) sms < sm_count ? sms : (guint) sm_count;
  if (!ck->persistent || sms == 0)
    return ck->grid;
  cap = MAX (cluster, (gint64) sms / cluster * cluster);
  /* clusters need their blocks on SMs of one GPC at once: fewer may fit than SMs allow,
   * and a persistent grid of more would run its last clusters after the rest */
  if (cluster > 1 && dev->clusters != NULL && dev->clusters[k] > 0)
    cap = MIN (cap, dev->clusters[k] * cluster);
  return MIN (ck->grid, cap);
}

/* The launch of `ck` in clusters along x, `grid` blocks on `stream` (*attr: the cluster
 * attribute *config points to). */
static void
cluster_launch_config (const NapkinCudaKernel *ck,
                       gint64                  grid,
                       CUstream                stream,
                       CUlaunchAttribute      *attr,
                       CUlaunchConfig         *config)
{
  *attr = (CUlaunchAttribute) { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION };
  attr->value.clusterDim.x = ck->cluster;
  attr->value.clusterDim.y = 1;
  attr->value.clusterDim.z = 1;
  *config = (CUlaunchConfig) {
    .gridDimX = (unsigned) grid, .gridDimY = 1, .gridDimZ = 1,
    .blockDimX = ck->threads, .blockDimY = 1, .blockDimZ = 1,
    .sharedMemBytes = (unsigned) ck->dynamic_smem, .hStream = stream, .attrs = attr, .numAttrs = 1,
  };
}

/* How many clusters of kernel k fit on the GPU at once (0: unknown). */
static int
max_active_clusters (const Device *dev,
                     guint         k)
{
  const NapkinCudaKernel *ck = g_ptr_array_index (dev->mod->kernels, k);
  CUlaunchAttribute attr;
  CUlaunchConfig config;
  int n = 0;

  if (cu.OccupancyMaxActiveClusters == NULL)
    return 0;
  cluster_launch_config (ck, MAX (ck->grid, (gint64) ck->cluster), NULL, &attr, &config);
  return cu.OccupancyMaxActiveClusters (&n, dev->functions[k], &config) == CUDA_SUCCESS ? n : 0;
}

static gboolean
device_load (Device       *dev,
             GBytes       *cubin,
             json_object  *kernels,
             char        **message)
{
  dev->functions = g_new0 (CUfunction, dev->mod->kernels->len + 1);
  dev->clusters = g_new0 (int, dev->mod->kernels->len + 1);
  if (!check (cu.ModuleLoadData (&dev->module, g_bytes_get_data (cubin, NULL)), "loading the module", message))
    return FALSE;
  for (guint k = 0; k < dev->mod->kernels->len; k++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (dev->mod->kernels, k);
      int regs = 0, smem = 0, local = 0;

      if (!check (cu.ModuleGetFunction (&dev->functions[k], dev->module, ck->name), ck->name, message))
        return FALSE;
      if (ck->dynamic_smem > 0
          && !check (cu.FuncSetAttribute (dev->functions[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          (int) ck->dynamic_smem), "opting in to shared memory", message))
        return FALSE;
      if (!check (cu.FuncGetAttribute (&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, dev->functions[k]), "reading registers", message)
          || !check (cu.FuncGetAttribute (&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, dev->functions[k]),
                     "reading static shared memory", message)
          || !check (cu.FuncGetAttribute (&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, dev->functions[k]),
                     "reading local memory", message))
        return FALSE;
      if (ck->cluster > 1)
        dev->clusters[k] = max_active_clusters (dev, k);
      if (kernels != NULL)
        {
          json_object *o = json_object_new_object ();

          json_object_object_add (o, "name", json_object_new_string (ck->name));
          json_object_object_add (o, "skeleton", json_object_new_string (ck->skeleton));
          json_object_object_add (o, "grid", json_object_new_int64 (launch_grid (dev, k)));
          json_object_object_add (o, "threads", json_object_new_int (ck->threads));
          if (ck->cluster > 1)
            {
              json_object_object_add (o, "cluster", json_object_new_int ((int) ck->cluster));
              json_object_object_add (o, "clusters_at_once", json_object_new_int (dev->clusters[k]));
            }
          json_object_object_add (o, "registers", json_object_new_int (regs));
          json_object_object_add (o, "shared_bytes", json_object_new_int (smem + (int) ck->dynamic_smem));
          json_object_object_add (o, "local_bytes", json_object_new_int (local));
          json_object_object_add (o, "workspace_bytes", json_object_new_int64 (ck->workspace_bytes));
          if (ck->note)
            json_object_object_add (o, "note", json_object_new_string (ck->note));
          /* the model's name of the plan kernel it comes from: a helper (a repack, a
           * split-K reduction) is its own kernel there, "NAME (repack)" */
          if (ck->owner)
            {
              g_autofree char *owner = napkin_plan_kernel_label (ck->owner, ck->owner_kind);

              json_object_object_add (o, "owner", json_object_new_string (owner));
            }
          json_object_array_add (kernels, o);
        }
    }
  return TRUE;
}

static gint64
slot_bytes (Device *dev,
            guint   slot)
{
  const NapkinIrBuffer *b;

  if ((int) slot == dev->mod->workspace_slot)
    return dev->mod->workspace_bytes;
  b = napkin_ir_buffer (dev->mod->program, g_array_index (dev->mod->args, int, slot));
  return napkin_ir_buffer_elements (b) * napkin_dtype_bytes (b->dtype);
}

static guint
n_slots (Device *dev)
{
  return dev->mod->args->len + (dev->mod->workspace_slot >= 0 ? 1 : 0);
}

/* The device address slot s has in launch number `copy` (inputs rotate among copies). */
static CUdeviceptr
slot_ptr (Device *dev,
          guint   s,
          guint   copy)
{
  gboolean rotates = dev->n_copies > 1 && dev->copies[s * dev->n_copies + 1] != 0;

  return rotates ? dev->copies[s * dev->n_copies + copy % dev->n_copies] : dev->ptrs[s];
}

/* Every kernel's tensor maps (sm_90a skeletons), for each input copy: built once, so
 * that the timed launches do no host work beyond the launch. */
static gboolean
device_tensor_maps (Device  *dev,
                    char   **message)
{
  guint copies = MAX (dev->n_copies, 1), i = 0;

  dev->n_maps = 0;
  for (guint k = 0; k < dev->mod->kernels->len; k++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (dev->mod->kernels, k);

      dev->n_maps += ck->tensor_maps ? ck->tensor_maps->len : 0;
    }
  if (dev->n_maps == 0)
    return TRUE;
  /* CUtensorMap wants 64-byte alignment. */
  dev->maps = g_aligned_alloc0 ((gsize) dev->n_maps * copies, sizeof (CUtensorMap), 64);
  for (guint c = 0; c < copies; c++)
    for (guint k = 0; k < dev->mod->kernels->len; k++)
      {
        const NapkinCudaKernel *ck = g_ptr_array_index (dev->mod->kernels, k);

        for (guint m = 0; ck->tensor_maps && m < ck->tensor_maps->len; m++)
          {
            const NapkinCudaTensorMap *map = &g_array_index (ck->tensor_maps, NapkinCudaTensorMap, m);

            if (!napkin_cuda_tensor_map (&cu, &dev->maps[i++], map, slot_ptr (dev, map->slot, c), message))
              return FALSE;
          }
      }
  return TRUE;
}

static CUfunction fill_fn;   /* napkin_fill, once its module is loaded */

/* Fills one input buffer on the device with tensor t's draws in its own element type. */
static gboolean
device_fill (CUdeviceptr           p,
             const NapkinIrBuffer *b,
             const Inputs         *inputs,
             char                **message)
{
  CUdeviceptr dst = p;
  int dtype = (int) b->dtype, integers = inputs->integers[b->tensor];
  long n = (long) napkin_ir_buffer_elements (b);
  unsigned long long first = inputs->first[b->tensor];
  double scale = inputs->scale[b->tensor];
  void *params[] = { &dst, &dtype, &n, &first, &integers, &scale };
  unsigned blocks = (unsigned) MAX (1, MIN ((n + 255) / 256, (gint64) MAX (1, sm_count) * 16));

  return check (cu.LaunchKernel (fill_fn, blocks, 1, 1, 256, 1, 1, 0, NULL, params, NULL), "filling inputs", message);
}

static gboolean
device_alloc (Device        *dev,
              const Inputs  *inputs,
              float        **host,
              char         **message)
{
  guint n = n_slots (dev);

  dev->ptrs = g_new0 (CUdeviceptr, n + 1);
  dev->copies = g_new0 (CUdeviceptr, (gsize) (n + 1) * MAX (dev->n_copies, 1));
  for (guint s = 0; s < n; s++)
    {
      gint64 bytes = MAX (slot_bytes (dev, s), 4);
      gboolean is_input = (int) s != dev->mod->workspace_slot
                          && napkin_ir_buffer (dev->mod->program, g_array_index (dev->mod->args, int, s))->role == NAPKIN_BUF_INPUT;
      guint copies = is_input ? MAX (dev->n_copies, 1) : 1;

      for (guint c = 0; c < copies; c++)
        {
          CUdeviceptr p;

          if (!check (cu.MemAlloc (&p, bytes), "allocating device memory", message))
            return FALSE;
          dev->copies[s * MAX (dev->n_copies, 1) + c] = p;
          if (c == 0)
            dev->ptrs[s] = p;
          const NapkinIrBuffer *arg = (int) s != dev->mod->workspace_slot
                                      ? napkin_ir_buffer (dev->mod->program, g_array_index (dev->mod->args, int, s)) : NULL;
          const float *given = !is_input ? NULL
                               : host != NULL ? host[arg->tensor]
                               : inputs != NULL && inputs->given != NULL ? inputs->given[arg->tensor] : NULL;

          if (given != NULL)
            {
              /* values the caller made (a GPU's piece of a sharded input, zeros, or a
               * module's own values read from NAPKIN_INPUT_DIR) */
              const NapkinIrBuffer *b = arg;
              gint64 elems = napkin_ir_buffer_elements (b);
              g_autofree void *bytes_host = g_malloc (bytes);

              to_device (b->dtype, given, bytes_host, elems);
              if (!check (cu.MemcpyHtoD (p, bytes_host, elems * napkin_dtype_bytes (b->dtype)), "copying inputs", message))
                return FALSE;
            }
          else if (is_input && inputs->rotate_half != NULL
                   && inputs->rotate_half[napkin_ir_buffer (dev->mod->program,
                                                            g_array_index (dev->mod->args, int, s))->tensor] > 0)
            {
              const NapkinIrBuffer *b = napkin_ir_buffer (dev->mod->program, g_array_index (dev->mod->args, int, s));
              gint64 n = inputs->rotate_half[b->tensor];
              g_autofree float *r = rotate_half_matrix (n);
              g_autofree void *bytes_host = g_malloc (MAX (bytes, n * n * 4));

              to_device (b->dtype, r, bytes_host, n * n);
              if (!check (cu.MemcpyHtoD (p, bytes_host, n * n * napkin_dtype_bytes (b->dtype)), "copying a constant",
                          message))
                return FALSE;
            }
          else if (is_input)
            {
              if (!device_fill (p, napkin_ir_buffer (dev->mod->program, g_array_index (dev->mod->args, int, s)), inputs,
                                message))
                return FALSE;
            }
          else if (!check (cu.MemsetD8 (p, 0xff, bytes), "poisoning outputs", message))
            return FALSE;
        }
    }
  return device_tensor_maps (dev, message);
}

/* With NAPKIN_DUMP_DIR set (not empty), every input and output of the module as it is on the device
 * (raw, in the tensor's type and axis order: TENSOR.bin) and manifest.json naming each
 * (name, dtype, axes, role): bench/gpu/derive feeds the same inputs to the PyTorch module
 * and compares its output with ours. */
static gboolean
dump_buffers (Device        *dev,
              NapkinDiagram *d,
              char         **message)
{
  const char *dir = g_getenv ("NAPKIN_DUMP_DIR");
  g_autoptr(json_object) manifest = NULL;
  g_autofree char *path = NULL;

  if (dir == NULL || *dir == '\0')
    return TRUE;
  manifest = json_object_new_array ();
  path = g_build_filename (dir, "manifest.json", NULL);
  g_mkdir_with_parents (dir, 0755);
  for (guint s = 0; s < dev->mod->args->len; s++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (dev->mod->program, g_array_index (dev->mod->args, int, s));
      const NapkinTensor *t;
      gint64 bytes;
      g_autofree guint8 *host = NULL;
      g_autofree char *file = NULL;
      json_object *o, *axes;

      if ((int) s == dev->mod->workspace_slot || (b->role != NAPKIN_BUF_INPUT && b->role != NAPKIN_BUF_OUTPUT))
        continue;
      t = napkin_diagram_tensor (d, b->tensor);
      bytes = napkin_ir_buffer_elements (b) * napkin_dtype_bytes (b->dtype);
      host = g_malloc (MAX (bytes, 1));
      file = g_strdup_printf ("%s/%s.bin", dir, t->name);
      if (!check (cu.MemcpyDtoH (host, dev->ptrs[s], bytes), "reading a buffer to dump", message))
        return FALSE;
      if (!g_file_set_contents (file, (const char *) host, bytes, NULL))
        {
          g_free (*message);
          *message = g_strdup_printf ("cannot write %s", file);
          return FALSE;
        }
      o = json_object_new_object ();
      axes = json_object_new_array ();
      for (guint a = 0; t->axes[a]; a++)
        json_object_array_add (axes, json_object_new_string (t->axes[a]));
      json_object_object_add (o, "name", json_object_new_string (t->name));
      json_object_object_add (o, "dtype", json_object_new_string (napkin_dtype_to_string (b->dtype)));
      json_object_object_add (o, "role", json_object_new_string (b->role == NAPKIN_BUF_INPUT ? "input" : "output"));
      json_object_object_add (o, "axes", axes);
      json_object_array_add (manifest, o);
    }
  if (json_object_to_file_ext (path, manifest, JSON_C_TO_STRING_PRETTY) != 0)
    {
      g_free (*message);
      *message = g_strdup_printf ("cannot write %s", path);
      return FALSE;
    }
  return TRUE;
}

/* The first and last elements of every input the device filled, against the host's
 * generator: a device that computed other inputs than the exported program would make
 * the two disagree without either being wrong. */
static gboolean
check_inputs (Device        *dev,
              const Inputs  *inputs,
              char         **message)
{
  for (guint s = 0; s < dev->mod->args->len; s++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (dev->mod->program, g_array_index (dev->mod->args, int, s));
      gint64 n = napkin_ir_buffer_elements (b), m = MIN (n, 1024), size = napkin_dtype_bytes (b->dtype);
      g_autofree float *want = NULL;
      g_autofree guint8 *want_bytes = NULL, *got = NULL;

      if (b->role != NAPKIN_BUF_INPUT || n == 0
          || (inputs->rotate_half != NULL && inputs->rotate_half[b->tensor] > 0)
          || (inputs->given != NULL && inputs->given[b->tensor] != NULL))
        continue;
      want = g_new (float, m);
      want_bytes = g_malloc (m * size);
      got = g_malloc (m * size);
      for (guint end = 0; end < 2; end++)
        {
          gint64 start = end ? n - m : 0;

          for (gint64 i = 0; i < m; i++)
            want[i] = input_value (inputs->first[b->tensor], inputs->integers[b->tensor], inputs->scale[b->tensor],
                                   start + i);
          to_device (b->dtype, want, want_bytes, m);
          if (!check (cu.MemcpyDtoH (got, dev->ptrs[s] + start * size, m * size), "reading inputs back", message))
            return FALSE;
          if (memcmp (got, want_bytes, m * size) != 0)
            {
              g_free (*message);
              *message = g_strdup_printf (_("the inputs filled on the device differ from the host's generator "
                                          "(argument %u, elements %lld–%lld)"),
                                          s, (long long) start, (long long) (start + m - 1));
              return FALSE;
            }
        }
    }
  return TRUE;
}

/* A failure here is a fault the kernels left behind (errors are sticky in a context). */
static gboolean
device_free (Device  *dev,
             char   **message)
{
  gboolean ok = TRUE;
  guint n;

  g_clear_pointer (&dev->clusters, g_free);
  if (dev->ptrs == NULL || dev->freed)
    return TRUE;
  n = n_slots (dev);
  for (guint s = 0; s < n * MAX (dev->n_copies, 1); s++)
    if (dev->copies[s] && ok)
      ok = check (cu.MemFree (dev->copies[s]), "freeing device memory", message);
  g_clear_pointer (&dev->maps, g_aligned_free);
  dev->freed = TRUE;
  return ok;
}

/* Kernel k of the module, for launch number `copy`, on `stream` (NULL: the default one). */
static CUresult
device_launch_kernel (Device   *dev,
                      guint     k,
                      guint     copy,
                      CUstream  stream)
{
  struct { CUdeviceptr p[NAPKIN_CUDA_MAX_ARGS]; } args;
  void *params[1 + 8] = { &args };
  guint n = n_slots (dev), first_map = (copy % MAX (dev->n_copies, 1)) * dev->n_maps;
  const NapkinCudaKernel *ck = g_ptr_array_index (dev->mod->kernels, k);
  guint n_maps = ck->tensor_maps ? ck->tensor_maps->len : 0;

  memset (&args, 0, sizeof args);
  for (guint s = 0; s < n; s++)
    args.p[s] = slot_ptr (dev, s, copy);
  /* Tensor maps go by value after the NapkinArgs, in the kernel's order. */
  for (guint j = 0; j < k; j++)
    {
      const NapkinCudaKernel *before = g_ptr_array_index (dev->mod->kernels, j);

      first_map += before->tensor_maps ? before->tensor_maps->len : 0;
    }
  if (n_maps + 1 > G_N_ELEMENTS (params))
    return CUDA_ERROR_INVALID_VALUE;
  for (guint m = 0; m < n_maps; m++)
    params[1 + m] = &dev->maps[first_map++];
  if (ck->cluster > 1)
    {
      /* blocks in clusters along x (the sm_90a GEMM sharing B by multicast) */
      CUlaunchAttribute attr;
      CUlaunchConfig config;

      if (cu.LaunchKernelEx == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
      cluster_launch_config (ck, launch_grid (dev, k), stream, &attr, &config);
      return cu.LaunchKernelEx (&config, dev->functions[k], params, NULL);
    }
  return cu.LaunchKernel (dev->functions[k], (unsigned) launch_grid (dev, k), 1, 1, ck->threads, 1, 1,
                          (unsigned) ck->dynamic_smem, stream, params, NULL);
}

static CUresult
device_launch (Device *dev,
               guint   copy)
{
  for (guint k = 0; k < dev->mod->kernels->len; k++)
    {
      CUresult res = device_launch_kernel (dev, k, copy, NULL);

      if (res != CUDA_SUCCESS)
        return res;
    }
  return CUDA_SUCCESS;
}

/* The check on the device (the outputs can be billions of elements): max |got − want|,
 * max |want| and whether any NaN was seen, over one output; compiled into the
 * reference's module, whose prelude has napkin_ld for every element type. Element
 * types are NapkinDtype codes. Non-negative floats order like their bits. */
static const char compare_source[] =
  "\n__device__ __forceinline__ float napkin_cmp_ld (const void *p, int t, long i)\n"
  "{\n"
  "  switch (t) {\n"
  "  case 2: return napkin_ld ((const napkin_f16 *) p + i);\n"
  "  case 3: return napkin_ld ((const napkin_bf16 *) p + i);\n"
  "  case 4: return napkin_ld ((const napkin_e4m3 *) p + i);\n"
  "  case 5: return napkin_ld ((const napkin_e5m2 *) p + i);\n"
  "  case 6: return (float) ((const signed char *) p)[i];\n"
  "  default: return ((const float *) p)[i];\n"
  "  }\n"
  "}\n"
  "extern \"C\" __global__ void napkin_compare (const void *a, int ta, const void *b, int tb, long n,\n"
  "                                           unsigned *out)\n"
  "{\n"
  "  float d = 0.0f, m = 0.0f; unsigned nan = 0;\n"
  "  for (long i = blockIdx.x * (long) blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x) {\n"
  "    const float x = napkin_cmp_ld (a, ta, i), y = napkin_cmp_ld (b, tb, i);\n"
  "    if (x != x || y != y) nan = 1;\n"
  "    else { d = fmaxf (d, fabsf (x - y)); m = fmaxf (m, fabsf (y)); }\n"
  "  }\n"
  "  for (int o = 16; o > 0; o >>= 1) {\n"
  "    d = fmaxf (d, __shfl_xor_sync (0xffffffffu, d, o));\n"
  "    m = fmaxf (m, __shfl_xor_sync (0xffffffffu, m, o));\n"
  "    nan |= __shfl_xor_sync (0xffffffffu, nan, o);\n"
  "  }\n"
  "  if ((threadIdx.x & 31) == 0) {\n"
  "    atomicMax (&out[0], __float_as_uint (d)); atomicMax (&out[1], __float_as_uint (m)); atomicOr (&out[2], nan);\n"
  "  }\n"
  "}\n";

/* The device buffer of output `tensor` in `dev`, its element type and count. */
static gboolean
device_output_buffer (Device      *dev,
                      int          tensor,
                      CUdeviceptr *ptr,
                      NapkinDtype *dtype,
                      gint64      *elements)
{
  for (guint s = 0; s < dev->mod->args->len; s++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (dev->mod->program, g_array_index (dev->mod->args, int, s));

      if (b->role != NAPKIN_BUF_OUTPUT || b->tensor != tensor)
        continue;
      *ptr = dev->ptrs[s];
      *dtype = b->dtype;
      *elements = napkin_ir_buffer_elements (b);
      return TRUE;
    }
  return FALSE;
}

/* Relative error of `n` elements at `a` (type ta) against `b` (type tb), on the device:
 * max |a − b| / max |b|, +∞ when an element is NaN (not written). */
/* One output's check: max |got − want|, max |want|, a NaN seen. */
typedef struct
{
  const char *name;
  double      diff, norm;
  gboolean    nan;
} OutputCheck;

/* The outputs' relative errors into `errors` (name → error) and the worst into *worst:
 * max |got − want| / max |want|, +∞ for a NaN (not written), the denominator at least a
 * thousandth of the largest output's (docs/codegen.md, the result's `error`): a gradient that is
 * zero in exact arithmetic (a key bias's under a softmax) is judged against the scale of
 * the others, as its rounding is. */
static void
finish_checks (GArray      *checks,
               json_object *errors,
               double      *worst)
{
  double floor = 0;

  for (guint i = 0; i < checks->len; i++)
    floor = MAX (floor, 1e-3 * g_array_index (checks, OutputCheck, i).norm);
  for (guint i = 0; i < checks->len; i++)
    {
      const OutputCheck *c = &g_array_index (checks, OutputCheck, i);
      double den = MAX (c->norm, floor), rel = c->nan ? INFINITY : den > 0 ? c->diff / den : c->diff;

      *worst = MAX (*worst, rel);
      json_object_object_add (errors, c->name, json_object_new_double (isinf (rel) ? 1e308 : rel));
    }
}

static double
compare_ptrs (CUfunction   fn,
              CUdeviceptr  a,
              NapkinDtype  ta,
              CUdeviceptr  b,
              NapkinDtype  tb,
              gint64       count,
              OutputCheck *parts,
              char       **message)
{
  CUdeviceptr out = 0;
  guint32 host[3] = { 0, 0, 0 };
  int ita = (int) ta, itb = (int) tb;
  long n = (long) count;
  double result = -1;

  if (check (cu.MemAlloc (&out, 16), "allocating the check", message)
      && check (cu.MemsetD8 (out, 0, 16), "clearing the check", message))
    {
      void *params[] = { &a, &ita, &b, &itb, &n, &out };
      unsigned blocks = (unsigned) MAX (1, MIN ((n + 2047) / 2048, (gint64) MAX (1, sm_count) * 32));

      if (check (cu.LaunchKernel (fn, blocks, 1, 1, 256, 1, 1, 0, NULL, params, NULL), "launching the check", message)
          && check (cu.CtxSynchronize (), "running the check", message)
          && check (cu.MemcpyDtoH (host, out, 12), "reading the check", message))
        {
          float diff, norm;

          memcpy (&diff, &host[0], 4);
          memcpy (&norm, &host[1], 4);
          result = host[2] ? INFINITY : norm > 0 ? diff / norm : diff;
          if (parts != NULL)
            {
              parts->diff = diff;
              parts->norm = norm;
              parts->nan = host[2] != 0;
            }
        }
    }
  if (out)
    cu.MemFree (out);
  return result;
}

/* Relative error of output `tensor` of `got` against `want` (compare_ptrs); −1 when
 * either lacks it. */
static double
device_compare (CUfunction   fn,
                Device      *got,
                Device      *want,
                int          tensor,
                OutputCheck *parts,
                char       **message)
{
  CUdeviceptr a, b;
  NapkinDtype ta, tb;
  gint64 na, nb;

  if (!device_output_buffer (got, tensor, &a, &ta, &na) || !device_output_buffer (want, tensor, &b, &tb, &nb))
    return -1;
  return compare_ptrs (fn, a, ta, b, tb, MIN (na, nb), parts, message);
}

static int
compare_doubles (gconstpointer a,
                 gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

/* Timing stops early, once it has taken this long and made MIN_REPEATS launches: a
 * 100 ms reference need not run 20 times for its median (docs/perf-notes.md, "Where a
 * run's time goes"). */
static double time_budget_ms = 200;
#define MIN_REPEATS 5

static double
elapsed_ms (gint64 since)
{
  return (g_get_monotonic_time () - since) / 1e3;
}

/* Warm-up: at least 3 launches and WARM_MS of them, so that a kernel of a few
 * microseconds is timed with the GPU's clocks up from idle (the compile before it
 * leaves the GPU idle for seconds; two runs of the same 12 µs kernel after 3 warm-ups
 * each measured 15 % apart); one launch for a kernel that takes a quarter of the
 * budget. */
#define WARM_MS 10.0

/* Times up to `repeats` launches one by one with events (after the warm-up) and
 * writes their median, min, max and count into `out`. */
static gboolean
time_launches (Device      *dev,
               guint        repeats,
               json_object *out,
               char       **message)
{
  CUevent e0, e1;
  g_autofree double *times = g_new0 (double, repeats + 1);
  guint warm = 0, r = 0;
  gint64 start = g_get_monotonic_time ();

  if (!check (cu.EventCreate (&e0, 0), "creating an event", message)
      || !check (cu.EventCreate (&e1, 0), "creating an event", message))
    return FALSE;
  /* NAPKIN_WARM_MS: a longer warm-up, for benchmarks that compare sustained rates (a GPU
   * kept busy lowers its clocks under the power limit) */
  const char *warm_env = g_getenv ("NAPKIN_WARM_MS");
  double warm_ms = warm_env != NULL ? CLAMP (g_ascii_strtod (warm_env, NULL), 0.0, 60000.0) : WARM_MS;

  while (warm == 0
         || ((warm < 3 || elapsed_ms (start) < warm_ms) && elapsed_ms (start) < MAX (time_budget_ms / 4, warm_ms)))
    if (!check (device_launch (dev, warm++), "warm-up launch", message)
        || !check (cu.CtxSynchronize (), "warm-up", message))
      return FALSE;
  phase_end (dev->is_reference ? "reference_warmup" : "warmup");
  start = g_get_monotonic_time ();
  for (r = 0; r < repeats && (r < MIN (repeats, MIN_REPEATS) || elapsed_ms (start) < time_budget_ms); r++)
    {
      float ms = 0;

      if (!check (cu.EventRecord (e0, NULL), "recording the start event", message)
          || !check (device_launch (dev, r + 1), "launch", message)
          || !check (cu.EventRecord (e1, NULL), "recording the end event", message)
          || !check (cu.EventSynchronize (e1), "running the kernel", message)
          || !check (cu.EventElapsedTime (&ms, e0, e1), "reading the event timer", message))
        return FALSE;
      times[r] = ms;
    }
  if (!check (cu.EventDestroy (e0), "destroying an event", message)
      || !check (cu.EventDestroy (e1), "destroying an event", message))
    return FALSE;
  qsort (times, r, sizeof (double), compare_doubles);
  json_object_object_add (out, "median", json_object_new_double (times[r / 2]));
  json_object_object_add (out, "min", json_object_new_double (times[0]));
  json_object_object_add (out, "max", json_object_new_double (times[r - 1]));
  json_object_object_add (out, "repeats", json_object_new_int ((int) r));
  json_object_object_add (out, "warmup", json_object_new_int ((int) warm));
  if (r < repeats)
    json_object_object_add (out, "asked", json_object_new_int ((int) repeats));
  return TRUE;
}

/* A module of several kernels: each kernel's own time, an event between consecutive
 * kernels of one launch of the whole module (the kernels still run in order on their
 * shared buffers), the median over the repeats into kernels[k].time_ms. */
static gboolean
time_each_kernel (Device      *dev,
                  guint        repeats,
                  json_object *kernels,
                  char       **message)
{
  guint n = dev->mod->kernels->len, r;
  g_autofree CUevent *ev = g_new0 (CUevent, n + 1);
  g_autofree double *times = g_new0 (double, (gsize) n * (repeats + 1));
  gint64 start = g_get_monotonic_time ();
  gboolean ok = TRUE;

  for (guint k = 0; k <= n; k++)
    if (!check (cu.EventCreate (&ev[k], 0), "creating an event", message))
      return FALSE;
  for (r = 0; ok && r < repeats && (r < MIN (repeats, MIN_REPEATS) || elapsed_ms (start) < time_budget_ms); r++)
    {
      ok = check (cu.EventRecord (ev[0], NULL), "recording an event", message);
      for (guint k = 0; ok && k < n; k++)
        ok = check (device_launch_kernel (dev, k, r + 1, NULL), "launch", message)
             && check (cu.EventRecord (ev[k + 1], NULL), "recording an event", message);
      ok = ok && check (cu.EventSynchronize (ev[n]), "running the kernels", message);
      for (guint k = 0; ok && k < n; k++)
        {
          float ms = 0;

          ok = check (cu.EventElapsedTime (&ms, ev[k], ev[k + 1]), "reading the event timer", message);
          times[(gsize) k * (repeats + 1) + r] = ms;
        }
    }
  for (guint k = 0; k <= n; k++)
    cu.EventDestroy (ev[k]);
  if (!ok)
    return FALSE;
  for (guint k = 0; k < n && k < json_object_array_length (kernels); k++)
    {
      double *t = times + (gsize) k * (repeats + 1);

      qsort (t, r, sizeof (double), compare_doubles);
      json_object_object_add (json_object_array_get_idx (kernels, k), "time_ms", json_object_new_double (t[r / 2]));
    }
  return TRUE;
}

/* Energy per launch: back-to-back launches, fed in batches of about 2 ms so that the
 * host can read NVML's counter while the GPU is busy. The counter moves in steps
 * (every few tens of milliseconds); the power is taken between the first and the
 * last step seen during the launches (whole steps, all busy), which needs two steps
 * (one whole interval, ~0.1 s on an H100) rather than the half second a plain
 * before/after difference wants for the same resolution. Without enough steps within a second, it falls back to before/after. */
static gboolean
measure_energy (Device      *dev,
                NapkinNvml  *nvml,
                double       median_ms,
                json_object *out,
                char       **message)
{
  guint batch = (guint) CLAMP (ceil (2.0 / MAX (median_ms, 1e-3)), 1, 10000), n = 0, steps = 0;
  unsigned long long e0 = 0, e1 = 0, e = 0, first_e = 0, last_e = 0;
  gint64 w0, w1, now, first_w = 0, last_w = 0;
  CUevent ev[2];
  double window_ms, watts, per_run_ms;

  if (!check (cu.EventCreate (&ev[0], 0), "creating an event", message)
      || !check (cu.EventCreate (&ev[1], 0), "creating an event", message)
      || !check (cu.CtxSynchronize (), "energy", message))
    return FALSE;
  if (!napkin_nvml_energy_mj (nvml, &e0))
    goto nvml_failed;
  w0 = g_get_monotonic_time ();
  for (guint b = 0; ; b++)
    {
      for (guint i = 0; i < batch; i++)
        if (!check (device_launch (dev, n++), "launch", message))
          return FALSE;
      if (!check (cu.EventRecord (ev[b % 2], NULL), "recording an event", message))
        return FALSE;
      /* the batch before this one: the GPU still has this one to run */
      if (b > 0 && !check (cu.EventSynchronize (ev[(b + 1) % 2]), "energy", message))
        return FALSE;
      if (!napkin_nvml_energy_mj (nvml, &e))
        goto nvml_failed;
      now = g_get_monotonic_time ();
      if (b > 0 && e != last_e)
        {
          /* the first step seen after a whole batch ran starts the busy interval */
          if (steps == 0)
            first_e = e, first_w = now;
          last_e = e, last_w = now;
          steps++;
        }
      else if (b == 0)
        last_e = e;
      if ((steps >= 2 && (now - w0) / 1e3 >= 50) || (now - w0) / 1e3 >= 1000)
        break;
    }
  if (!check (cu.CtxSynchronize (), "energy", message))
    return FALSE;
  w1 = g_get_monotonic_time ();
  if (!napkin_nvml_energy_mj (nvml, &e1))
    goto nvml_failed;
  cu.EventDestroy (ev[0]);
  cu.EventDestroy (ev[1]);
  window_ms = (w1 - w0) / 1e3;
  per_run_ms = window_ms / n;
  if (steps >= 2 && last_w > first_w)
    {
      watts = (last_e - first_e) / 1e3 / ((last_w - first_w) / 1e6);
      json_object_object_add (out, "method", json_object_new_string ("between counter steps"));
    }
  else
    {
      watts = (e1 - e0) / 1e3 / (window_ms / 1e3);
      json_object_object_add (out, "method", json_object_new_string ("before and after"));
    }
  json_object_object_add (out, "joules_per_run", json_object_new_double (watts * per_run_ms / 1e3));
  json_object_object_add (out, "average_power_w", json_object_new_double (watts));
  json_object_object_add (out, "launches", json_object_new_int ((int) n));
  json_object_object_add (out, "seconds", json_object_new_double (window_ms / 1e3));
  json_object_object_add (out, "counter_steps", json_object_new_int ((int) steps));
  return TRUE;

nvml_failed:
  g_free (*message);
  *message = g_strdup (_("reading the NVML energy counter failed"));
  return FALSE;
}

static const char inject_source[] =
  "extern \"C\" __global__ void napkin_fault (int *p) { p[threadIdx.x * 1000003L] = 1; }\n"
  "extern \"C\" __global__ void napkin_hang (volatile int *flag) { while (*flag == 0) { } }\n";

static int
run_injected (const char  *what,
              const char  *arch,
              json_object *root)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) cubin = compile_module (inject_source, arch, NULL, NULL, &error);
  CUmodule module;
  CUfunction fn;
  CUdeviceptr flag = 0;
  CUdeviceptr bad = 16;
  void *params[1];
  CUresult res;
  char *message = NULL;

  if (cubin == NULL)
    return finish (root, "compile-error", error->message, EXIT_FAILED);
  if (!check (cu.ModuleLoadData (&module, g_bytes_get_data (cubin, NULL)), "loading", &message)
      || !check (cu.ModuleGetFunction (&fn, module, g_str_equal (what, "fault") ? "napkin_fault" : "napkin_hang"),
                 "kernel", &message))
    return finish (root, "failed", message, EXIT_FAILED);
  if (g_str_equal (what, "hang"))
    {
      if (!check (cu.MemAlloc (&flag, 4), "allocating the flag", &message)
          || !check (cu.MemsetD8 (flag, 0, 4), "clearing the flag", &message))
        return finish (root, "failed", message, EXIT_FAILED);
      params[0] = &flag;
    }
  else
    params[0] = &bad;
  progress (0.6, g_str_equal (what, "fault") ? "Running a kernel made to fault" : "Running a kernel made to hang");
  res = cu.LaunchKernel (fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
  if (res == CUDA_SUCCESS)
    res = cu.CtxSynchronize ();
  if (res != CUDA_SUCCESS)
    {
      g_autofree char *text = napkin_cuda_driver_error (&cu, res);
      g_autofree char *msg = g_strdup_printf (_("the kernel faulted: %s"), text);

      return finish (root, "fault", msg, EXIT_FAULT);
    }
  return finish (root, "failed", "the injected kernel finished, which it should not", EXIT_FAILED);
}


/* ---- calibrate: the GPU's ceilings, on the instruction paths the generator uses ---------- */

static const char calibrate_source[] =
  "extern \"C\" __global__ void cal_empty () { }\n"
  "extern \"C\" __global__ void cal_copy (const float4 *__restrict__ a, float4 *__restrict__ b, long n)\n"
  "{ for (long i = blockIdx.x * (long) blockDim.x + threadIdx.x; i < n; i += (long) gridDim.x * blockDim.x) b[i] = a[i]; }\n"
  "extern \"C\" __global__ void cal_smem (float *out, int iters)\n"
  "{ __shared__ float s[4096];\n"
  "  for (int i = threadIdx.x; i < 4096; i += blockDim.x) s[i] = i;\n"
  "  __syncthreads ();\n"
  "  float a0 = 0, a1 = 0, a2 = 0, a3 = 0; int base = threadIdx.x & 31, w = threadIdx.x >> 5;\n"
  "  for (int i = 0; i < iters; i++) { int o = ((i * 4 + w) & 31) * 128;\n"
  "    a0 += s[(o + base) & 4095]; a1 += s[(o + 32 + base) & 4095]; a2 += s[(o + 64 + base) & 4095]; a3 += s[(o + 96 + base) & 4095]; }\n"
  "  if (a0 + a1 + a2 + a3 == -1.0f) out[threadIdx.x] = a0; }\n"
  "#define MMA_LOOP(NAME, ASM, AT, CT, NA, NB)\\\n"
  "extern \"C\" __global__ void NAME (float *out, int iters)\\\n"
  "{ unsigned a[4] = { threadIdx.x, threadIdx.x * 3u, threadIdx.x * 5u, threadIdx.x * 7u }, b[2] = { threadIdx.x * 11u, 13u };\\\n"
  "  CT c[4][4] = { };\\\n"
  "  for (int i = 0; i < iters; i++)\\\n"
  "    for (int j = 0; j < 4; j++) ASM;\\\n"
  "  CT t = 0; for (int j = 0; j < 4; j++) t += c[j][0] + c[j][1] + c[j][2] + c[j][3];\\\n"
  "  if ((float) t == -1.0f) out[threadIdx.x] = (float) t; }\n"
  "MMA_LOOP (cal_mma_fp16, asm volatile (\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\""
  " : \"+f\" (c[j][0]), \"+f\" (c[j][1]), \"+f\" (c[j][2]), \"+f\" (c[j][3]) : \"r\" (a[0]), \"r\" (a[1]), \"r\" (a[2]), \"r\" (a[3]), \"r\" (b[0]), \"r\" (b[1])), unsigned, float, 4, 2)\n"
  "MMA_LOOP (cal_mma_bf16, asm volatile (\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\""
  " : \"+f\" (c[j][0]), \"+f\" (c[j][1]), \"+f\" (c[j][2]), \"+f\" (c[j][3]) : \"r\" (a[0]), \"r\" (a[1]), \"r\" (a[2]), \"r\" (a[3]), \"r\" (b[0]), \"r\" (b[1])), unsigned, float, 4, 2)\n"
  "MMA_LOOP (cal_mma_tf32, asm volatile (\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\""
  " : \"+f\" (c[j][0]), \"+f\" (c[j][1]), \"+f\" (c[j][2]), \"+f\" (c[j][3]) : \"r\" (a[0]), \"r\" (a[1]), \"r\" (a[2]), \"r\" (a[3]), \"r\" (b[0]), \"r\" (b[1])), unsigned, float, 4, 2)\n"
  "MMA_LOOP (cal_mma_int8, asm volatile (\"mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\""
  " : \"+r\" (c[j][0]), \"+r\" (c[j][1]), \"+r\" (c[j][2]), \"+r\" (c[j][3]) : \"r\" (a[0]), \"r\" (a[1]), \"r\" (a[2]), \"r\" (a[3]), \"r\" (b[0]), \"r\" (b[1])), unsigned, int, 4, 2)\n";

static gboolean
cal_time (CUfunction   fn,
          unsigned     grid,
          unsigned     threads,
          void       **params,
          guint        launches,
          double      *ms_out,
          char       **message)
{
  CUevent e0, e1;
  double times[7];

  if (!check (cu.EventCreate (&e0, 0), "creating an event", message)
      || !check (cu.EventCreate (&e1, 0), "creating an event", message)
      || !check (cu.LaunchKernel (fn, grid, 1, 1, threads, 1, 1, 0, NULL, params, NULL), "calibration launch", message)
      || !check (cu.CtxSynchronize (), "calibration kernel", message))
    return FALSE;
  for (guint r = 0; r < G_N_ELEMENTS (times); r++)
    {
      float ms = 0;

      if (!check (cu.EventRecord (e0, NULL), "recording the start event", message))
        return FALSE;
      for (guint l = 0; l < launches; l++)
        if (!check (cu.LaunchKernel (fn, grid, 1, 1, threads, 1, 1, 0, NULL, params, NULL), "calibration launch", message))
          return FALSE;
      if (!check (cu.EventRecord (e1, NULL), "recording the end event", message)
          || !check (cu.EventSynchronize (e1), "calibration kernel", message)
          || !check (cu.EventElapsedTime (&ms, e0, e1), "reading the event timer", message))
        return FALSE;
      times[r] = ms / launches;
    }
  if (!check (cu.EventDestroy (e0), "destroying an event", message)
      || !check (cu.EventDestroy (e1), "destroying an event", message))
    return FALSE;
  qsort (times, G_N_ELEMENTS (times), sizeof (double), compare_doubles);
  *ms_out = times[G_N_ELEMENTS (times) / 2];
  return TRUE;
}

/* wgmma m64n256k16 from shared-memory descriptors (napkin-calibrate-wgmma.c), compiled
 * on its own so that a failure leaves the other measurements standing. */
static json_object *
calibrate_wgmma (int          sms,
                 int          clock_khz,
                 CUdeviceptr  out,
                 char       **why)
{
  g_autofree char *source = napkin_calibrate_wgmma_source ();
  g_autofree char *log = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) cubin = compile_module (source, "sm_90a", &log, NULL, &error);
  const char *kernels[][2] = { { "cal_wgmma_fp16", "fp16" }, { "cal_wgmma_bf16", "bf16" }, { "cal_wgmma_fp8", "fp8" } };
  json_object *result;
  CUmodule module;
  int iters = 4096;
  void *params[] = { &out, &iters };

  if (cubin == NULL)
    {
      *why = g_strdup_printf (_("the wgmma loop did not compile: %s"), error->message);
      return NULL;
    }
  if (!check (cu.ModuleLoadData (&module, g_bytes_get_data (cubin, NULL)), "loading the wgmma loop", why))
    return NULL;
  result = json_object_new_object ();
  for (guint i = 0; i < G_N_ELEMENTS (kernels); i++)
    {
      CUfunction fn;
      /* an 8-bit wgmma is k32: twice the products of k16 */
      double ms, flops = napkin_calibrate_wgmma_flops (sms, iters) * (i == 2 ? 2 : 1);
      json_object *t;

      progress (0.92 + 0.03 * i, kernels[i][0]);
      if (!check (cu.ModuleGetFunction (&fn, module, kernels[i][0]), kernels[i][0], why)
          || !cal_time (fn, sms, NAPKIN_CAL_WGMMA_THREADS, params, 2, &ms, why))
        {
          json_object_put (result);
          return NULL;
        }
      t = json_object_new_object ();
      json_object_object_add (t, "flops_per_s", json_object_new_double (flops / (ms * 1e-3)));
      json_object_object_add (t, "per_sm_per_clock", json_object_new_double (flops / (ms * 1e-3) / sms / (clock_khz * 1e3)));
      json_object_object_add (t, "instruction", json_object_new_string (i == 2 ? "wgmma.mma_async m64n256k32 e4m3"
                                                                                 : "wgmma.mma_async m64n256k16"));
      json_object_object_add (result, kernels[i][1], t);
    }
  return result;
}

static int
run_calibrate (const char  *arch,
               int          sms,
               int          clock_khz,
               json_object *root)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *log = NULL;
  g_autoptr(GBytes) cubin = compile_module (calibrate_source, arch, &log, NULL, &error);
  json_object *m = json_object_new_object ();
  CUmodule module;
  CUfunction fn;
  CUdeviceptr a = 0, b = 0, out = 0;
  char *message = NULL;
  double ms;
  long n4 = (1L << 30) / 16;   /* 1 GiB of float4 */
  int iters = 4096;
  void *p_copy[] = { &a, &b, &n4 };
  void *p_loop[] = { &out, &iters };
  const struct { const char *fn; const char *key; double flops; } mmas[] = {
    { "cal_mma_fp16", "fp16", 4096 }, { "cal_mma_bf16", "bf16", 4096 },
    { "cal_mma_tf32", "tf32", 2048 }, { "cal_mma_int8", "int8", 8192 },
  };
  json_object *tensor = json_object_new_object ();

  json_object_object_add (root, "calibration", m);
  if (cubin == NULL)
    return finish (root, "compile-error", error->message, EXIT_FAILED);
  if (!check (cu.ModuleLoadData (&module, g_bytes_get_data (cubin, NULL)), "loading", &message)
      || !check (cu.MemAlloc (&a, n4 * 16), "allocating 1 GiB", &message)
      || !check (cu.MemAlloc (&b, n4 * 16), "allocating 1 GiB", &message)
      || !check (cu.MemAlloc (&out, 4096), "allocating", &message))
    return finish (root, "failed", message, EXIT_FAILED);
  if (!check (cu.MemsetD8 (a, 0x3c, n4 * 16), "filling the copy's source", &message))
    return finish (root, "failed", message, EXIT_FAILED);

  progress (0.2, "Launch overhead");
  if (!check (cu.ModuleGetFunction (&fn, module, "cal_empty"), "cal_empty", &message))
    return finish (root, "failed", message, EXIT_FAILED);
  if (!cal_time (fn, 1, 32, NULL, 1000, &ms, &message))
    return finish (root, "fault", message, EXIT_FAULT);
  json_object_object_add (m, "launch_overhead_s", json_object_new_double (ms * 1e-3));

  progress (0.35, "Device-memory copy bandwidth");
  if (!check (cu.ModuleGetFunction (&fn, module, "cal_copy"), "cal_copy", &message))
    return finish (root, "failed", message, EXIT_FAILED);
  if (!cal_time (fn, sms * 8, 256, p_copy, 3, &ms, &message))
    return finish (root, "fault", message, EXIT_FAULT);
  json_object_object_add (m, "hbm_bytes_per_s", json_object_new_double (2.0 * n4 * 16 / (ms * 1e-3)));

  progress (0.5, "Shared-memory bandwidth");
  if (!check (cu.ModuleGetFunction (&fn, module, "cal_smem"), "cal_smem", &message))
    return finish (root, "failed", message, EXIT_FAILED);
  if (!cal_time (fn, sms * 8, 256, p_loop, 3, &ms, &message))
    return finish (root, "fault", message, EXIT_FAULT);
  {
    double bytes = (double) sms * 8 * 256 * iters * 4 * 4;

    json_object_object_add (m, "smem_bytes_per_s", json_object_new_double (bytes / (ms * 1e-3)));
    json_object_object_add (m, "smem_bytes_per_clock_per_sm",
                            json_object_new_double (bytes / (ms * 1e-3) / sms / (clock_khz * 1e3)));
  }

  for (guint i = 0; i < G_N_ELEMENTS (mmas); i++)
    {
      double flops;

      progress (0.6 + 0.1 * i, mmas[i].key);
      if (!check (cu.ModuleGetFunction (&fn, module, mmas[i].fn), mmas[i].fn, &message))
        return finish (root, "failed", message, EXIT_FAILED);
      if (!cal_time (fn, sms * 4, 256, p_loop, 2, &ms, &message))
        return finish (root, "fault", message, EXIT_FAULT);
      flops = (double) sms * 4 * 8 * iters * 4 * mmas[i].flops;
      {
        json_object *t = json_object_new_object ();

        json_object_object_add (t, "flops_per_s", json_object_new_double (flops / (ms * 1e-3)));
        json_object_object_add (t, "per_sm_per_clock", json_object_new_double (flops / (ms * 1e-3) / sms / (clock_khz * 1e3)));
        json_object_object_add (t, "instruction", json_object_new_string ("mma.sync"));
        json_object_object_add (tensor, mmas[i].key, t);
      }
    }
  json_object_object_add (m, "tensor", tensor);
  if (g_str_has_prefix (arch, "sm_90"))
    {
      /* Hopper: the wgmma path too; a failure is reported, never fatal (calibrate then
       * keeps the datasheet's dense peak and says so) */
      g_autofree char *why = NULL;
      json_object *wgmma = calibrate_wgmma (sms, clock_khz, out, &why);

      if (wgmma != NULL)
        json_object_object_add (m, "tensor_wgmma", wgmma);
      else
        json_object_object_add (m, "tensor_wgmma_error", json_object_new_string (why));
    }
  if (!check (cu.MemFree (a), "freeing device memory", &message) || !check (cu.MemFree (b), "freeing device memory", &message)
      || !check (cu.MemFree (out), "freeing device memory", &message))
    return finish (root, "fault", message, EXIT_FAULT);
  progress (1.0, "Done");
  return finish (root, "ok", NULL, EXIT_OK);
}

/* ---- --gpus N: the shard program on N GPUs with NCCL between its kernels ---------------- *
 * docs/multi-gpu.md, "Running on several GPUs". One thread drives every GPU: each has
 * the shard module loaded, its slots allocated, and runs the same steps on its own
 * stream; collectives are NCCL groups over all of them. */

typedef CUevent GpuEvents[NAPKIN_MAX_GPUS];

typedef struct
{
  const NapkinCollective *c;
  NapkinNcclDataType      type;
  gint64                  src_elems, dst_elems;   /* per GPU */
  CUdeviceptr             src[NAPKIN_MAX_GPUS], dst[NAPKIN_MAX_GPUS];
  CUdeviceptr             tmp_send[NAPKIN_MAX_GPUS], tmp_recv[NAPKIN_MAX_GPUS];
  gboolean                pack, unpack;           /* through the copy kernels */
  NapkinShardSlice        pack_slice, unpack_slice;
  gint64                  chunk;                  /* elements per rank in the NCCL call */
  guint                   at;                     /* runs before this kernel of the module */
  gboolean                src_stored, dst_stored; /* buffers the runner owns (not module slots) */
} MultiColl;

typedef struct
{
  NapkinGpuGroup    g;
  NapkinShardPlan  *plan;
  Device            dev[NAPKIN_MAX_GPUS];
  MultiColl        *colls;
  guint             n_colls;
  CUmodule          copy_module[NAPKIN_MAX_GPUS];
  CUfunction        extract[NAPKIN_MAX_GPUS][4], place[NAPKIN_MAX_GPUS][4];   /* units 1, 2, 4, 16 */
  GPtrArray        *owned;    /* (GPU, CUdeviceptr) pairs the runner allocated */
  gboolean          dry;      /* --dry-run: resolve buffers and steps, touch no GPU */
  NapkinArch       *profile;  /* the model's profile (NULL: no prediction) */
} Multi;

static int
unit_index (guint unit)
{
  return unit == 16 ? 3 : unit == 4 ? 2 : unit == 2 ? 1 : 0;
}

static gboolean
nccl_type_for (NapkinDtype          dtype,
               NapkinNcclDataType  *type,
               gboolean             reduces)
{
  switch (dtype)
    {
    case NAPKIN_DTYPE_BF16: *type = NAPKIN_NCCL_BFLOAT16; return TRUE;
    case NAPKIN_DTYPE_FP16: *type = NAPKIN_NCCL_FLOAT16; return TRUE;
    case NAPKIN_DTYPE_FP32: *type = NAPKIN_NCCL_FLOAT32; return TRUE;
    case NAPKIN_DTYPE_INT8: *type = NAPKIN_NCCL_INT8; return TRUE;
    case NAPKIN_DTYPE_FP8_E4M3:
    case NAPKIN_DTYPE_FP8_E5M2: *type = NAPKIN_NCCL_UINT8; return !reduces;   /* moved as bytes, never summed */
    default: return FALSE;
    }
}

/* The module slot of shard tensor `name` with this role, or -1. */
static int
find_slot (Device     *dev,
           const char *name,
           int         role)
{
  NapkinDiagram *d = dev->mod->program->diagram;

  for (guint s = 0; s < dev->mod->args->len; s++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (dev->mod->program, g_array_index (dev->mod->args, int, s));

      if ((int) b->role == role && b->tensor >= 0 && g_str_equal (napkin_diagram_tensor (d, b->tensor)->name, name))
        return (int) s;
    }
  return -1;
}

static CUdeviceptr
multi_alloc (Multi   *m,
             guint    r,
             gint64   bytes,
             char   **message)
{
  CUdeviceptr p = 0;

  if (m->dry)
    return 1;
  /* poisoned (0xff: NaN in every float type) so that an element never written shows */
  if (!napkin_gpu_group_use (&m->g, r, message)
      || !check (cu.MemAlloc (&p, MAX (bytes, 16)), "allocating device memory", message)
      || !check (cu.MemsetD8 (p, 0xff, MAX (bytes, 16)), "poisoning device memory", message))
    return 0;
  g_ptr_array_add (m->owned, GSIZE_TO_POINTER ((gsize) r));
  g_ptr_array_add (m->owned, GSIZE_TO_POINTER ((gsize) p));
  return p;
}

/* Piece `piece` of `slice` between a contiguous buffer and a strided one, on GPU r's stream. */
static gboolean
slice_copy (Multi                  *m,
            guint                   r,
            gboolean                extract,
            const NapkinShardSlice *slice,
            guint                   piece,
            CUdeviceptr             dst,
            CUdeviceptr             src,
            gsize                   elem_bytes,
            char                  **message)
{
  guint unit = napkin_shard_slice_unit (slice, elem_bytes);
  long outer = (long) slice->outer, total = (long) slice->total, part = (long) slice->part;
  long inner = (long) (slice->inner * (gint64) elem_bytes / unit);
  int p = (int) piece;
  void *params[] = { &dst, &src, &outer, &total, &part, &inner, &p };
  gint64 n = outer * part * inner;
  unsigned blocks = (unsigned) MAX (1, MIN ((n + 255) / 256, (gint64) MAX (1, sm_count) * 8));
  CUfunction fn = extract ? m->extract[r][unit_index (unit)] : m->place[r][unit_index (unit)];

  return check (cu.LaunchKernel (fn, blocks, 1, 1, 256, 1, 1, 0, m->g.stream[r], params, NULL),
                "launching a slice copy", message);
}

static gint64
local_elements (const NapkinCollective *c,
                int                     split,
                guint                   gpus)
{
  return split >= 0 ? c->elements / gpus : c->elements;
}

/* Resolves a collective's buffers and its pack/unpack on every GPU. */
static gboolean
multi_prepare_collective (Multi     *m,
                          MultiColl *mc,
                          char     **message)
{
  const NapkinCollective *c = mc->c;
  guint n = m->g.n;
  gsize eb = napkin_dtype_bytes (c->dtype);
  int src_slot = find_slot (&m->dev[0], c->src, NAPKIN_BUF_OUTPUT);
  int dst_slot = find_slot (&m->dev[0], c->dst, NAPKIN_BUF_INPUT);
  gboolean reduces = c->kind == NAPKIN_COLLECTIVE_ALL_REDUCE || c->kind == NAPKIN_COLLECTIVE_REDUCE_SCATTER;

  if (!nccl_type_for (c->dtype, &mc->type, reduces))
    {
      *message = g_strdup_printf (_("%s of %s: NCCL cannot %s %s"), napkin_nccl_collective_name (c->kind), c->tensor,
                                  reduces ? "sum" : "move", napkin_dtype_to_string (c->dtype));
      return FALSE;
    }
  mc->src_elems = local_elements (c, c->in_split, n);
  mc->dst_elems = local_elements (c, c->out_split, n);
  mc->src_stored = src_slot < 0;
  mc->dst_stored = dst_slot < 0;
  switch (c->kind)
    {
    case NAPKIN_COLLECTIVE_ALL_REDUCE:
      mc->chunk = c->elements;
      break;
    case NAPKIN_COLLECTIVE_ALL_GATHER:
      if (c->in_split < 0 || !napkin_shard_slice_init (&mc->unpack_slice, c->shape, c->rank, c->in_split, n, message))
        return *message != NULL ? FALSE : (*message = g_strdup_printf (_("all-gather of %s: the source is not split"), c->tensor), FALSE);
      mc->unpack = mc->unpack_slice.outer > 1;
      mc->chunk = mc->src_elems;
      break;
    case NAPKIN_COLLECTIVE_REDUCE_SCATTER:
      if (c->out_split < 0 || !napkin_shard_slice_init (&mc->pack_slice, c->shape, c->rank, c->out_split, n, message))
        return *message != NULL ? FALSE : (*message = g_strdup_printf (_("reduce-scatter of %s: the result is not split"), c->tensor), FALSE);
      mc->pack = mc->pack_slice.outer > 1;
      mc->chunk = mc->dst_elems;
      break;
    case NAPKIN_COLLECTIVE_ALL_TO_ALL:
      {
        gint64 local[NAPKIN_MAX_RANK];
        NapkinShardAllToAll a2a;

        if (c->in_split < 0 || c->out_split < 0)
          {
            *message = g_strdup_printf (_("all-to-all of %s: both sides must be split"), c->tensor);
            return FALSE;
          }
        memcpy (local, c->shape, c->rank * sizeof (gint64));
        local[c->in_split] /= n;
        if (!napkin_shard_all_to_all_init (&a2a, local, c->rank, c->in_split, c->out_split, n, message))
          return FALSE;
        mc->pack_slice = a2a.pack;
        mc->unpack_slice = a2a.unpack;
        mc->pack = a2a.pack.outer > 1;
        mc->unpack = a2a.unpack.outer > 1;
        mc->chunk = a2a.chunk;
      }
      break;
    default:
      *message = g_strdup (_("unknown collective"));
      return FALSE;
    }
  for (guint r = 0; r < n; r++)
    {
      mc->src[r] = src_slot >= 0 ? (m->dry ? 1 : m->dev[r].ptrs[src_slot]) : multi_alloc (m, r, mc->src_elems * eb, message);
      mc->dst[r] = dst_slot >= 0 ? (m->dry ? 1 : m->dev[r].ptrs[dst_slot]) : multi_alloc (m, r, mc->dst_elems * eb, message);
      if (mc->src[r] == 0 || mc->dst[r] == 0)
        return FALSE;
      mc->tmp_send[r] = mc->pack ? multi_alloc (m, r, mc->src_elems * eb, message) : mc->src[r];
      mc->tmp_recv[r] = mc->unpack ? multi_alloc (m, r, (c->kind == NAPKIN_COLLECTIVE_ALL_GATHER ? c->elements : mc->dst_elems) * eb, message)
                                   : mc->dst[r];
      if (mc->tmp_send[r] == 0 || mc->tmp_recv[r] == 0)
        return FALSE;
    }
  return TRUE;
}

/* One collective on every GPU: pack, the NCCL group, unpack, all on the compute streams. */
static gboolean
multi_run_collective (Multi     *m,
                      MultiColl *mc,
                      char     **message)
{
  gsize eb = napkin_dtype_bytes (mc->c->dtype);
  guint n = m->g.n;

  for (guint r = 0; r < n && mc->pack; r++)
    {
      if (!napkin_gpu_group_use (&m->g, r, message))
        return FALSE;
      for (guint j = 0; j < n; j++)
        if (!slice_copy (m, r, TRUE, &mc->pack_slice, j, mc->tmp_send[r] + j * mc->chunk * eb, mc->src[r], eb, message))
          return FALSE;
    }
  if (!napkin_gpu_group_collective (&m->g, mc->c->kind, mc->tmp_send, mc->tmp_recv, mc->chunk, mc->type, FALSE, message))
    return FALSE;
  for (guint r = 0; r < n && mc->unpack; r++)
    {
      if (!napkin_gpu_group_use (&m->g, r, message))
        return FALSE;
      for (guint i = 0; i < n; i++)
        if (!slice_copy (m, r, FALSE, &mc->unpack_slice, i, mc->dst[r], mc->tmp_recv[r] + i * mc->chunk * eb, eb, message))
          return FALSE;
    }
  return TRUE;
}

/* The shard program once on every GPU: before kernel k the collectives placed there;
 * with `events`, (steps + 1) per GPU recorded around the steps. */
static gboolean
multi_run_once (Multi    *m,
                CUevent (*events)[NAPKIN_MAX_GPUS],
                char    **message)
{
  guint n_kernels = m->dev[0].mod->kernels->len, step = 0, c = 0;

  for (guint r = 0; r < m->g.n && events; r++)
    if (!napkin_gpu_group_use (&m->g, r, message) || !check (cu.EventRecord (events[0][r], m->g.stream[r]), "recording", message))
      return FALSE;
  for (guint k = 0; k <= n_kernels; k++)
    {
      for (; c < m->n_colls && m->colls[c].at == k; c++)
        {
          if (!multi_run_collective (m, &m->colls[c], message))
            return FALSE;
          step++;
          for (guint r = 0; r < m->g.n && events; r++)
            if (!napkin_gpu_group_use (&m->g, r, message)
                || !check (cu.EventRecord (events[step][r], m->g.stream[r]), "recording", message))
              return FALSE;
        }
      if (k == n_kernels)
        break;
      step++;
      for (guint r = 0; r < m->g.n; r++)
        if (!napkin_gpu_group_use (&m->g, r, message)
            || !check (device_launch_kernel (&m->dev[r], k, 0, m->g.stream[r]), "launching a shard kernel", message)
            || (events && !check (cu.EventRecord (events[step][r], m->g.stream[r]), "recording", message)))
          return FALSE;
    }
  return TRUE;
}

/* Fills GPU r's copy of a buffer with its piece (split ≥ 0) or the whole of a seeded input. */
static gboolean
fill_piece (Multi       *m,
            guint        r,
            CUdeviceptr  ptr,
            const float *whole,
            NapkinDtype  dtype,
            const gint64 *shape,
            guint        rank,
            int          split,
            gint64       expect,
            const char  *name,
            char       **message)
{
  NapkinShardSlice slice;
  gint64 elems = 1;
  g_autofree float *piece = NULL;
  g_autofree void *host = NULL;

  for (guint i = 0; i < rank; i++)
    elems *= shape[i];
  if (split >= 0)
    {
      if (!napkin_shard_slice_init (&slice, shape, rank, (guint) split, m->g.n, message))
        return FALSE;
      elems = napkin_shard_slice_elements (&slice);
      piece = g_new (float, elems);
      napkin_shard_slice_extract (&slice, r, whole, piece, sizeof (float));
    }
  if (elems != expect)
    {
      *message = g_strdup_printf (_("%s: one GPU's buffer holds %lld elements, its piece %lld"),
                                  name, (long long) expect, (long long) elems);
      return FALSE;
    }
  host = g_malloc ((gsize) elems * napkin_dtype_bytes (dtype));
  to_device (dtype, piece ? piece : whole, host, elems);
  return napkin_gpu_group_use (&m->g, r, message)
         && check (cu.MemcpyHtoD (ptr, host, (gsize) elems * napkin_dtype_bytes (dtype)), "copying an input piece", message);
}

static double
median_of (double *v,
           guint   n)
{
  qsort (v, n, sizeof (double), compare_doubles);
  return v[n / 2];
}

/* Gathers every output onto the host (GPU i's piece in place i) and from there to GPU 0,
 * and compares it there with the reference's; the worst relative error in *worst. */
static gboolean
multi_check (Multi        *m,
             Device       *rd,
             CUfunction    compare,
             NapkinDiagram *d,
             json_object  *errors,
             double       *worst,
             const char  **status,
             char        **message)
{
  guint gpus = m->g.n;
  g_autoptr(GArray) checks = g_array_new (FALSE, TRUE, sizeof (OutputCheck));

  for (guint i = 0; i < m->plan->tensors->len; i++)
    {
      const NapkinShardTensor *t = g_ptr_array_index (m->plan->tensors, i);
      OutputCheck c = { t->tensor, 0, 0, FALSE };
      int full_t = napkin_diagram_find_tensor (d, t->tensor);
      MultiColl *mover = NULL;
      int slot = find_slot (&m->dev[0], t->tensor, NAPKIN_BUF_OUTPUT);
      int split;
      gsize eb = napkin_dtype_bytes (t->dtype);
      gint64 whole_n = 1, piece_n;
      g_autofree char *whole = NULL, *piece = NULL;
      CUdeviceptr want = 0, got = 0;
      NapkinDtype want_t;
      gint64 want_n;
      double diff = -1;

      if (!t->is_output)
        continue;
      for (guint c = 0; c < m->n_colls; c++)
        if (m->colls[c].dst_stored && g_str_equal (m->colls[c].c->dst, t->tensor))
          mover = &m->colls[c];
      if (mover == NULL && slot < 0)
        continue;
      split = mover ? t->stored : t->computed;
      if (split == NAPKIN_SHARD_PARTIAL)
        {
          *message = g_strdup_printf (_("output %s is left as partial sums with no collective after it"), t->tensor);
          *status = "unsupported";
          return FALSE;
        }
      for (guint k = 0; k < t->rank; k++)
        whole_n *= t->shape[k];
      piece_n = split >= 0 ? whole_n / gpus : whole_n;
      whole = g_malloc ((gsize) whole_n * eb);
      piece = g_malloc ((gsize) piece_n * eb);
      for (guint r = 0; r < (split >= 0 ? gpus : 1u); r++)
        {
          NapkinShardSlice slice;

          if (!napkin_gpu_group_use (&m->g, r, message)
              || !check (cu.MemcpyDtoH (split >= 0 ? piece : whole, mover ? mover->dst[r] : m->dev[r].ptrs[slot],
                                        (gsize) piece_n * eb), "reading an output piece", message))
            {
              *status = "fault";
              return FALSE;
            }
          if (split >= 0)
            {
              if (!napkin_shard_slice_init (&slice, t->shape, t->rank, (guint) split, gpus, message))
                {
                  *status = "failed";
                  return FALSE;
                }
              napkin_shard_slice_place (&slice, r, piece, whole, eb);
            }
        }
      if (!device_output_buffer (rd, full_t, &want, &want_t, &want_n) || want_n != whole_n)
        continue;
      got = multi_alloc (m, 0, whole_n * eb, message);
      if (got == 0 || !check (cu.MemcpyHtoD (got, whole, (gsize) whole_n * eb), "writing the gathered output", message))
        {
          *status = "failed";
          return FALSE;
        }
      diff = compare_ptrs (compare, got, t->dtype, want, want_t, whole_n, &c, message);
      if (*message != NULL)
        {
          *status = "fault";
          return FALSE;
        }
      if (diff >= 0)
        g_array_append_val (checks, c);
    }
  finish_checks (checks, errors, worst);
  return TRUE;
}

/* The architecture profile the predictions use: --model, else the one the GPU's name names. */
static NapkinArch *
multi_arch (const char *model,
            const char *gpu_name)
{
  const char *id = model != NULL ? model : napkin_arch_id_for_gpu_name (gpu_name);

  return id != NULL ? napkin_arch_registry_lookup (napkin_arch_registry_get_default (), id, NULL) : NULL;
}

/* The profile the kernels are planned for — the one the prediction prices (--model, else
 * the GPU's name's), or, where that profile's target is not the one compiled for, the
 * first profile of the target's compute capability (docs/plan.md, "The pipeline"). */
static NapkinArch *
plan_profile (const char *model,
              const char *gpu_name,
              const char *target)
{
  NapkinArch *arch = multi_arch (model, gpu_name);
  g_autofree char *planned = arch != NULL ? napkin_plan_target_for_arch (arch) : NULL;
  int major = 0, minor = 0;
  g_autofree char *cc = NULL;

  if (arch != NULL && g_strcmp0 (planned, target) == 0)
    return arch;
  if (target == NULL || sscanf (target, "sm_%1d%1d", &major, &minor) != 2)
    return NULL;
  cc = g_strdup_printf ("%d.%d", major, minor);
  return napkin_arch_registry_for_compute_capability (napkin_arch_registry_get_default (), cc);
}

/* The kernels of `d` for target `arch`: the plan of `profile` printed (docs/plan.md, "The
 * pipeline"), or without a profile (or with `generic`) what napkin_codegen_cuda prints. */
static NapkinCudaModule *
module_for (NapkinDiagram *d,
            NapkinArch    *profile,
            const char    *arch,
            gboolean       generic,
            GError       **error)
{
  NapkinCodegenFlags flags = generic ? NAPKIN_CODEGEN_GENERIC_ONLY : napkin_codegen_flags_for_arch (arch);
  g_autoptr(NapkinPlan) plan = NULL;
  NapkinIrProgram *prog;

  if (!generic && profile != NULL)
    {
      plan = napkin_plan_build (d, profile, NULL, error);
      return plan != NULL ? napkin_codegen_cuda_for_plan (plan, flags, NULL, error) : NULL;
    }
  prog = napkin_ir_lower (d, NAPKIN_LOWER_DEFAULT, error);
  return prog != NULL ? napkin_codegen_cuda (prog, flags, NULL, error) : NULL;
}

/* Every collective's buffers, and the module kernel it precedes: the plan counts its
 * kernels, the module may have more (a split-k reduction); "after the plan's last"
 * stays after the module's last. */
static gboolean
multi_prepare (Multi  *m,
               char  **message)
{
  guint n_module = m->dev[0].mod->kernels->len;
  guint n_plan = m->plan->plan != NULL ? m->plan->plan->kernels->len : n_module;

  m->n_colls = m->plan->collectives->len;
  m->colls = g_new0 (MultiColl, m->n_colls + 1);
  for (guint c = 0; c < m->n_colls; c++)
    {
      MultiColl *mc = &m->colls[c];

      mc->c = g_ptr_array_index (m->plan->collectives, c);
      mc->at = mc->c->before_kernel >= n_plan ? n_module : MIN (mc->c->before_kernel, n_module);
      if (!multi_prepare_collective (m, mc, message))
        return FALSE;
    }
  return TRUE;
}

static const char *overlap_chunk_module (Multi *m, const char *arch, gboolean generic, NapkinDiagram **cd,
                                         NapkinCudaModule **cmod, GBytes **cbin, GError **error);

/* --dry-run: the plan, the shard's kernels (compiled) and how the runner would move
 * each tensor, with no GPU. */
static int
multi_dry_run (Multi            *m,
               NapkinCudaModule *kern,
               const char       *arch,
               guint             gpus,
               json_object      *root)
{
  g_autofree char *message = NULL;
  json_object *steps = json_object_new_array ();
  int code = EXIT_OK;

  m->g.n = gpus;
  m->dev[0].mod = kern;
  json_object_object_add (root, "dry_run", json_object_new_boolean (TRUE));
  json_object_object_add (root, "gpus", json_object_new_int ((int) gpus));
  json_object_object_add (root, "module_kernels", json_object_new_int ((int) kern->kernels->len));
  if (multi_prepare (m, &message))
    for (guint c = 0; c < m->n_colls; c++)
      {
        MultiColl *mc = &m->colls[c];
        json_object *o = json_object_new_object ();

        json_object_object_add (o, "kind", json_object_new_string (napkin_nccl_collective_name (mc->c->kind)));
        json_object_object_add (o, "tensor", json_object_new_string (mc->c->tensor));
        json_object_object_add (o, "before_module_kernel", json_object_new_int ((int) mc->at));
        json_object_object_add (o, "src", json_object_new_string (mc->src_stored ? "runner buffer (as stored)" : "module slot"));
        json_object_object_add (o, "dst", json_object_new_string (mc->dst_stored ? "runner buffer (as stored)" : "module slot"));
        json_object_object_add (o, "src_elements", json_object_new_int64 (mc->src_elems));
        json_object_object_add (o, "dst_elements", json_object_new_int64 (mc->dst_elems));
        json_object_object_add (o, "nccl_count", json_object_new_int64 (mc->chunk));
        json_object_object_add (o, "pack", json_object_new_boolean (mc->pack));
        json_object_object_add (o, "unpack", json_object_new_boolean (mc->unpack));
        json_object_array_add (steps, o);
      }
  json_object_object_add (root, "collectives", steps);
  if (message == NULL && m->plan->chunks > 1)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinDiagram) cd = NULL;
      g_autoptr(NapkinCudaModule) cmod = NULL;
      g_autoptr(GBytes) cbin = NULL;
      const char *note = overlap_chunk_module (m, arch, FALSE, &cd, &cmod, &cbin, &error);
      json_object *o = json_object_new_object ();

      json_object_object_add (o, "chunks", json_object_new_int ((int) m->plan->chunks));
      json_object_object_add (o, "chunk_kernels", cmod ? json_object_new_int ((int) cmod->kernels->len) : NULL);
      json_object_object_add (o, "note", note ? json_object_new_string (note) : NULL);
      json_object_object_add (root, "overlap", o);
    }
  g_free (m->colls);
  g_ptr_array_free (m->owned, TRUE);
  napkin_shard_plan_free (m->plan);
  if (message != NULL)
    code = EXIT_FAILED;
  return finish (root, code == EXIT_OK ? "ok" : "unsupported", message, code);
}

/* ---- the overlapped variant (docs/multi-gpu.md, "Overlap") ----------------------------- *
 * The shard diagram with the overlap axis divided by k, compiled once more; chunk i's
 * kernels read and write piece i of the shard's buffers (the axis must lead every
 * buffer that carries it, so a piece is contiguous), and chunk i's collective runs on
 * the communication stream, after an event, while chunk i + 1 computes. Also timed:
 * the same chunks with the collectives on the compute stream (chunked, no overlap). */

/* Elements of one chunk of a buffer of the chunk module that carries `axis`, when the
 * axis leads it (every axis before it of size 1); 0 when the buffer lacks the axis;
 * -1 when a chunk is not contiguous. */
static gint64
chunk_stride (NapkinDiagram        *cd,
              const NapkinIrBuffer *b,
              const char           *axis)
{
  const NapkinTensor *t = b->tensor >= 0 ? napkin_diagram_tensor (cd, b->tensor) : NULL;
  gboolean leading = TRUE;

  for (guint i = 0; t && t->axes && t->axes[i]; i++)
    {
      int ai = napkin_diagram_find_axis (cd, t->axes[i]);
      gint64 size = ai >= 0 ? napkin_diagram_axis (cd, ai)->size : 0;

      if (g_str_equal (t->axes[i], axis))
        return leading ? napkin_ir_buffer_elements (b) : -1;
      if (size != 1)
        leading = FALSE;
    }
  return 0;
}

/* The shard diagram with the overlap axis divided by the chunks, generated and compiled;
 * NULL, or why not (a string that lives as long as *error). */
static const char *
overlap_chunk_module (Multi             *m,
                      const char        *arch,
                      gboolean           generic,
                      NapkinDiagram    **cd,
                      NapkinCudaModule **cmod,
                      GBytes           **cbin,
                      GError           **error)
{
  guint k = m->plan->chunks;
  int ai = napkin_diagram_find_axis (m->plan->shard, m->plan->chunk_axis);
  g_autofree char *spec = NULL;

  if (ai < 0 || k > 64 || napkin_diagram_axis (m->plan->shard, ai)->size % k != 0)
    return "the overlap axis does not divide into the chunks on one GPU";
  *cd = napkin_diagram_copy (m->plan->shard);
  spec = g_strdup_printf ("%s=%" G_GINT64_FORMAT, m->plan->chunk_axis, napkin_diagram_axis (m->plan->shard, ai)->size / k);
  if (!napkin_diagram_override_axis (*cd, spec, error))
    return (*error)->message;
  *cmod = module_for (*cd, plan_profile (m->profile ? m->profile->id : NULL, NULL, arch), arch, generic, error);
  *cbin = *cmod ? compile_module ((*cmod)->source, arch, NULL, NULL, error) : NULL;
  if (*cbin == NULL)
    return (*error)->message;
  /* every input and output of a chunk must be a contiguous piece, or whole (an input) */
  for (guint s = 0; s < (*cmod)->args->len; s++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer ((*cmod)->program, g_array_index ((*cmod)->args, int, s));
      gint64 stride = chunk_stride (*cd, b, m->plan->chunk_axis);

      if ((b->role == NAPKIN_BUF_INPUT || b->role == NAPKIN_BUF_OUTPUT)
          && (stride < 0 || (stride == 0 && b->role == NAPKIN_BUF_OUTPUT)))
        return "a buffer of the chunked stretch does not split into contiguous chunks along the overlap axis";
    }
  return NULL;
}

/* The chunked all-reduce after the last kernel that the overlapped variant runs, or
 * NULL with *note saying why not (input collectives stay whole, before it). */
static MultiColl *
overlap_target (Multi       *m,
                const char **note)
{
  guint n_kernels = m->dev[0].mod->kernels->len;
  MultiColl *last = NULL;

  for (guint c = 0; c < m->n_colls; c++)
    {
      MultiColl *mc = &m->colls[c];

      if (mc->c->chunks > 1 && mc->at == n_kernels && mc->c->kind == NAPKIN_COLLECTIVE_ALL_REDUCE && last == NULL)
        last = mc;
      else if (mc->c->chunks > 1 || mc->at != 0 || !mc->src_stored)
        *note = "only a program whose chunked collective is one all-reduce after the last kernel is run overlapped";
    }
  if (last == NULL)
    *note = "no chunked all-reduce after the last kernel";
  return last;
}

/* Every GPU: the chunk module, its own intermediates, and its inputs and outputs as
 * pieces of the shard's buffers (launch number i takes piece i). */
static gboolean
overlap_load (Multi            *m,
              NapkinDiagram    *cd,
              NapkinCudaModule *cmod,
              GBytes           *cbin,
              Device           *cdev,
              const char      **note,
              char            **message)
{
  guint k = m->plan->chunks;
  gboolean ok = TRUE;

  for (guint r = 0; r < m->g.n && ok; r++)
    {
      Device *cv = &cdev[r];
      g_autofree float **zero = g_new0 (float *, napkin_diagram_n_tensors (cd) + 1);
      guint slots;

      cv->mod = cmod;
      cv->n_copies = 1;
      for (guint s = 0; s < cmod->args->len; s++)
        {
          const NapkinIrBuffer *b = napkin_ir_buffer (cmod->program, g_array_index (cmod->args, int, s));

          if (b->role == NAPKIN_BUF_INPUT && zero[b->tensor] == NULL)
            zero[b->tensor] = g_new0 (float, napkin_ir_buffer_elements (b));
        }
      ok = napkin_gpu_group_use (&m->g, r, message) && device_load (cv, cbin, NULL, message)
           && device_alloc (cv, NULL, zero, message);
      for (guint t = 0; t < napkin_diagram_n_tensors (cd); t++)
        g_free (zero[t]);
      if (!ok)
        break;
      slots = n_slots (cv);
      g_free (cv->copies);
      cv->copies = g_new0 (CUdeviceptr, (gsize) (slots + 1) * k);
      for (guint s = 0; s < slots && ok; s++)
        {
          const NapkinIrBuffer *b = (int) s == cmod->workspace_slot ? NULL
                                    : napkin_ir_buffer (cmod->program, g_array_index (cmod->args, int, s));
          const char *name = b && b->tensor >= 0 ? napkin_diagram_tensor (cd, b->tensor)->name : NULL;
          int role = b ? (int) b->role : -1;
          int whole = name && (role == NAPKIN_BUF_INPUT || role == NAPKIN_BUF_OUTPUT) ? find_slot (&m->dev[r], name, role) : -1;
          gint64 stride = b ? chunk_stride (cd, b, m->plan->chunk_axis) : 0;

          cv->copies[s * k] = cv->ptrs[s];   /* its own buffer: freed with the device */
          if (whole < 0)
            continue;   /* an intermediate: every chunk reuses it */
          if (stride < 0 || (stride == 0 && role == NAPKIN_BUF_OUTPUT))
            {
              *note = "a buffer of the chunked stretch does not split into contiguous chunks along the overlap axis";
              ok = FALSE;
              break;
            }
          for (guint i = 0; i < k; i++)
            cv->copies[s * k + i] = m->dev[r].ptrs[whole] + (CUdeviceptr) (i * stride * napkin_dtype_bytes (b->dtype));
        }
      cv->n_copies = k;
      if (ok)
        {
          g_clear_pointer (&cv->maps, g_aligned_free);
          ok = device_tensor_maps (cv, message);
        }
    }
  return ok;
}

/* The timing events of the overlapped runs. */
typedef struct
{
  CUevent start[NAPKIN_MAX_GPUS], end[NAPKIN_MAX_GPUS], done[NAPKIN_MAX_GPUS][64];
} OverlapEvents;

static gboolean
overlap_events_create (Multi         *m,
                       OverlapEvents *ev,
                       char         **message)
{
  gboolean ok = TRUE;

  for (guint r = 0; r < m->g.n && ok; r++)
    {
      ok = napkin_gpu_group_use (&m->g, r, message) && check (cu.EventCreate (&ev->start[r], 0), "creating an event", message)
           && check (cu.EventCreate (&ev->end[r], 0), "creating an event", message);
      for (guint i = 0; i < m->plan->chunks && ok; i++)
        ok = check (cu.EventCreate (&ev->done[r][i], CU_EVENT_DISABLE_TIMING), "creating an event", message);
    }
  return ok;
}

/* The slowest GPU's milliseconds from ev->start to ev->end, after a sync. */
static gboolean
overlap_elapsed (Multi         *m,
                 OverlapEvents *ev,
                 double        *worst_ms,
                 char         **message)
{
  gboolean ok = napkin_gpu_group_sync (&m->g, message);

  *worst_ms = 0;
  for (guint r = 0; r < m->g.n && ok; r++)
    {
      float ms = 0;

      ok = napkin_gpu_group_use (&m->g, r, message) && check (cu.EventElapsedTime (&ms, ev->start[r], ev->end[r]), "timing", message);
      *worst_ms = MAX (*worst_ms, ms);
    }
  return ok;
}

/* Records ev->start (ev->end) on every GPU's compute (communication) stream. */
static gboolean
overlap_record (Multi    *m,
                CUevent  *events,
                gboolean  comm,
                char    **message)
{
  gboolean ok = TRUE;

  for (guint r = 0; r < m->g.n && ok; r++)
    ok = napkin_gpu_group_use (&m->g, r, message)
         && check (cu.EventRecord (events[r], comm ? m->g.comm_stream[r] : m->g.stream[r]), "recording", message);
  return ok;
}

/* Chunk i's kernels on every GPU's compute stream, then (after its event, with
 * `overlapped` on the communication stream) its piece of the all-reduce. */
static gboolean
overlap_chunk (Multi         *m,
               Device        *cdev,
               MultiColl     *last,
               OverlapEvents *ev,
               guint          i,
               gboolean       overlapped,
               char         **message)
{
  CUdeviceptr src[NAPKIN_MAX_GPUS], dst[NAPKIN_MAX_GPUS];
  gint64 piece = last->chunk / m->plan->chunks;
  gsize off = (gsize) (i * piece) * napkin_dtype_bytes (last->c->dtype);
  gboolean ok = TRUE;

  for (guint r = 0; r < m->g.n && ok; r++)
    {
      ok = napkin_gpu_group_use (&m->g, r, message);
      for (guint kk = 0; kk < cdev[r].mod->kernels->len && ok; kk++)
        ok = check (device_launch_kernel (&cdev[r], kk, i, m->g.stream[r]), "launching a chunk", message);
      ok = ok && check (cu.EventRecord (ev->done[r][i], m->g.stream[r]), "recording", message)
           && (!overlapped || check (cu.StreamWaitEvent (m->g.comm_stream[r], ev->done[r][i], 0), "waiting", message));
      src[r] = last->tmp_send[r] + off;
      dst[r] = last->tmp_recv[r] + off;
    }
  return ok && napkin_gpu_group_collective (&m->g, last->c->kind, src, dst, piece, last->type, overlapped, message);
}

/* One run of every chunk: the collectives on the compute stream (chunked, serial) or on
 * the communication stream (overlapped, the result poisoned first so that the check
 * sees this run's). *ms: its slowest GPU's time. */
static gboolean
overlap_run (Multi         *m,
             Device        *cdev,
             MultiColl     *last,
             OverlapEvents *ev,
             gboolean       overlapped,
             double        *ms,
             char         **message)
{
  gboolean ok = TRUE;

  for (guint r = 0; r < m->g.n && ok && overlapped; r++)
    ok = napkin_gpu_group_use (&m->g, r, message)
         && check (cu.MemsetD8 (last->dst[r], 0xff, (gsize) last->dst_elems * napkin_dtype_bytes (last->c->dtype)),
                   "poisoning the result", message);
  ok = ok && napkin_gpu_group_sync (&m->g, message);
  for (guint c = 0; c < m->n_colls && ok; c++)   /* whole input collectives first */
    if (&m->colls[c] != last)
      ok = multi_run_collective (m, &m->colls[c], message);
  ok = ok && overlap_record (m, ev->start, FALSE, message);
  for (guint i = 0; i < m->plan->chunks && ok; i++)
    ok = overlap_chunk (m, cdev, last, ev, i, overlapped, message);
  return ok && overlap_record (m, ev->end, overlapped, message) && overlap_elapsed (m, ev, ms, message);
}

/* What the model needs, measured alone (docs/model.md, "Overlap"): one chunk's kernels
 * (on the SMs the variant leaves them), one chunk's all-reduce (through the variant's
 * communicator), and that all-reduce while the chunk's kernels run beside it. Medians
 * in ms into out[3]. */
static gboolean
overlap_parts (Multi         *m,
               Device        *cdev,
               MultiColl     *last,
               OverlapEvents *ev,
               int            repeats,
               double        *out,
               char         **message)
{
  g_autofree double *v = g_new0 (double, (gsize) 3 * repeats);
  CUdeviceptr src[NAPKIN_MAX_GPUS], dst[NAPKIN_MAX_GPUS];
  gint64 piece = last->chunk / m->plan->chunks;
  gboolean ok = TRUE;

  for (guint r = 0; r < m->g.n; r++)
    src[r] = last->tmp_send[r], dst[r] = last->tmp_recv[r];
  for (int rep = -1; rep < repeats && ok; rep++)
    for (guint part = 0; part < 3 && ok; part++)
      {
        double ms = 0;
        gboolean comm = part > 0;

        ok = napkin_gpu_group_sync (&m->g, message) && overlap_record (m, ev->start, comm, message);
        for (guint r = 0; r < m->g.n && ok && part != 1; r++)
          {
            ok = napkin_gpu_group_use (&m->g, r, message);
            for (guint kk = 0; kk < cdev[r].mod->kernels->len && ok; kk++)
              ok = check (device_launch_kernel (&cdev[r], kk, 0, m->g.stream[r]), "launching a chunk", message);
          }
        ok = ok && (part == 0 || napkin_gpu_group_collective (&m->g, last->c->kind, src, dst, piece, last->type, TRUE, message))
             && overlap_record (m, ev->end, comm, message) && overlap_elapsed (m, ev, &ms, message);
        if (rep >= 0)
          v[(gsize) part * repeats + rep] = ms;
      }
  for (guint part = 0; part < 3 && ok; part++)
    out[part] = median_of (v + (gsize) part * repeats, (guint) repeats);
  return ok;
}

/* What every variant is checked and compared against. */
typedef struct
{
  Device              *rd;        /* the one-GPU reference (NULL, or no ptrs: not checked) */
  CUfunction           compare;
  NapkinDiagram       *d;
  double               plain_ms;  /* the plain run's median */
  double               serial_ms; /* the chunked run's, collectives on the compute stream */
  NapkinShardAnalysis *sa;        /* the model's (NULL without a profile) */
  NapkinArch          *profile;
} OverlapCheck;

/* The overlapped run's result, checked like the plain one. */
static gboolean
overlap_check (Multi              *m,
               const OverlapCheck *chk,
               json_object        *o,
               double             *worst,
               char              **message)
{
  json_object *errors;
  double w = 0;
  const char *status = NULL;

  if (chk->rd == NULL || chk->rd->ptrs == NULL)
    return TRUE;
  errors = json_object_new_object ();
  json_object_object_add (o, "error", errors);
  if (!multi_check (m, chk->rd, chk->compare, chk->d, errors, &w, &status, message))
    return FALSE;
  json_object_object_add (o, "max_rel", json_object_new_double (isinf (w) ? 1e308 : w));
  *worst = MAX (*worst, w);
  return TRUE;
}

/* The SMs left to NCCL in each measured variant: $NAPKIN_OVERLAP_SMS ("0,4,8"), else
 * the region's comm_sms alone. */
static GArray *
overlap_sms_list (Multi *m)
{
  GArray *list = g_array_new (FALSE, FALSE, sizeof (guint));
  const char *env = g_getenv ("NAPKIN_OVERLAP_SMS");
  g_auto(GStrv) parts = env != NULL && *env != '\0' ? g_strsplit (env, ",", -1) : NULL;

  for (guint i = 0; parts != NULL && parts[i] != NULL; i++)
    {
      guint64 v;

      if (g_ascii_string_to_unsigned (g_strstrip (parts[i]), 10, 0, MAX (sm_count - 1, 0), &v, NULL))
        g_array_append_val (list, ((guint) { (guint) v }));
    }
  if (list->len == 0)
    g_array_append_val (list, m->plan->comm_sms);
  return list;
}

/* One variant: the chunk kernels' persistent grids on SMs − s, the all-reduce through a
 * communicator held to s CTAs (s = 0: every SM, NCCL's own channels), timed, its parts
 * measured, checked, beside the model's figures for the same s. */
static gboolean
overlap_variant (Multi         *m,
                 Device        *cdev,
                 MultiColl     *last,
                 OverlapEvents *ev,
                 guint          sms,
                 int            repeats,
                 const OverlapCheck *chk,
                 json_object   *variants,
                 double        *worst,
                 char         **message)
{
  g_autofree double *over = g_new0 (double, repeats);
  double parts[3] = { 0 }, ms = 0, serial = chk->serial_ms;
  json_object *o = json_object_new_object ();
  gboolean ok = TRUE;

  json_object_array_add (variants, o);
  json_object_object_add (o, "comm_sms", json_object_new_int ((int) sms));
  for (guint r = 0; r < m->g.n; r++)
    cdev[r].grid_sms = sms > 0 ? (guint) sm_count - sms : 0;
  if (sms > 0 && !napkin_gpu_group_limit_ctas (&m->g, sms, message))
    return FALSE;
  m->g.use_limited = sms > 0;
  for (int rep = -2; rep < repeats && ok; rep++)
    if ((ok = overlap_run (m, cdev, last, ev, TRUE, &ms, message)) && rep >= 0)
      over[rep] = ms;
  ok = ok && overlap_check (m, chk, o, worst, message) && overlap_parts (m, cdev, last, ev, repeats, parts, message);
  m->g.use_limited = FALSE;
  for (guint r = 0; r < m->g.n; r++)
    cdev[r].grid_sms = 0;
  if (!ok)
    return FALSE;
  ms = median_of (over, (guint) repeats);
  json_object_object_add (o, "overlapped_ms", json_object_new_double (ms));
  json_object_object_add (o, "gain_ms", json_object_new_double (serial - ms));
  json_object_object_add (o, "gain_vs_plain_ms", json_object_new_double (chk->plain_ms - ms));
  json_object_object_add (o, "chunk_compute_ms", json_object_new_double (parts[0]));
  json_object_object_add (o, "chunk_comm_alone_ms", json_object_new_double (parts[1]));
  json_object_object_add (o, "chunk_comm_beside_ms", json_object_new_double (parts[2]));
  if (chk->sa != NULL)
    {
      napkin_shard_analysis_overlap (chk->sa, chk->profile, NULL, sms);
      json_object_object_add (o, "predicted_overlapped_ms", json_object_new_double (chk->sa->overlapped_s * 1e3));
      json_object_object_add (o, "predicted_gain_ms", json_object_new_double (chk->sa->gain_s * 1e3));
      json_object_object_add (o, "predicted_chunk_compute_ms", json_object_new_double (chk->sa->chunk_compute_s * 1e3));
      json_object_object_add (o, "predicted_chunk_comm_alone_ms", json_object_new_double (chk->sa->chunk_comm_alone_s * 1e3));
      json_object_object_add (o, "predicted_chunk_comm_beside_ms", json_object_new_double (chk->sa->chunk_comm_s * 1e3));
      json_object_object_add (o, "gain_ratio", fabs (chk->sa->gain_s) > 1e-9
                              ? json_object_new_double ((serial - ms) / (chk->sa->gain_s * 1e3)) : NULL);
      if (chk->sa->note != NULL)
        json_object_object_add (o, "predicted_note", json_object_new_string (chk->sa->note));
    }
  return TRUE;
}

/* The events and the chunk module's own buffers (the pieces belong to the shard's). */
static void
overlap_free (Multi         *m,
              Device        *cdev,
              OverlapEvents *ev)
{
  g_autofree char *message = NULL;
  guint k = m->plan->chunks;

  for (guint r = 0; r < m->g.n; r++)
    if (napkin_gpu_group_use (&m->g, r, &message))
      {
        if (ev->start[r])
          cu.EventDestroy (ev->start[r]);
        if (ev->end[r])
          cu.EventDestroy (ev->end[r]);
        for (guint i = 0; i < k && i < 64; i++)
          if (ev->done[r][i])
            cu.EventDestroy (ev->done[r][i]);
        if (cdev[r].copies != NULL && cdev[r].n_copies == k)
          for (guint s = 0; s < n_slots (&cdev[r]); s++)
            {
              cdev[r].copies[s * k] = cdev[r].ptrs[s];
              for (guint i = 1; i < k; i++)
                cdev[r].copies[s * k + i] = 0;
            }
        device_free (&cdev[r], &message);
      }
}

/* The headline: the variant with the region's comm_sms (else the first). */
static void
overlap_headline (Multi       *m,
                  json_object *o,
                  json_object *variants,
                  double       serial_ms,
                  double       worst,
                  int          repeats)
{
  json_object *pick = json_object_array_get_idx (variants, 0), *t = json_object_new_object ();

  for (guint i = 0; i < json_object_array_length (variants); i++)
    {
      json_object *v = json_object_array_get_idx (variants, i);

      if (json_object_get_int (json_object_object_get (v, "comm_sms")) == (int) m->plan->comm_sms)
        {
          pick = v;
          break;
        }
    }
  json_object_object_add (t, "median", json_object_get (json_object_object_get (pick, "overlapped_ms")));
  json_object_object_add (t, "repeats", json_object_new_int (repeats));
  json_object_object_add (o, "time_ms", t);
  json_object_object_add (o, "comm_sms", json_object_get (json_object_object_get (pick, "comm_sms")));
  json_object_object_add (o, "serial_chunked_ms", json_object_new_double (serial_ms));
  json_object_object_add (o, "gain_ms", json_object_get (json_object_object_get (pick, "gain_ms")));
  json_object_object_add (o, "gain_vs_plain_ms", json_object_get (json_object_object_get (pick, "gain_vs_plain_ms")));
  json_object_object_add (o, "gain_note", json_object_new_string ("the chunked run's median (collectives on the compute stream) minus the overlapped run's; "
                                                                  "gain_vs_plain_ms: the plain (unchunked) run's minus the overlapped run's"));
  json_object_object_add (o, "max_rel", json_object_new_double (isinf (worst) ? 1e308 : worst));
}

/* The chunked and overlapped runs with their variants into root's "overlap"; returns
 * the worst error of the variants checked. */
static double
multi_overlap (Multi         *m,
               const char    *arch,
               gboolean       generic,
               Device        *rd,
               CUfunction     compare,
               NapkinDiagram *d,
               int            repeats,
               json_object   *root)
{
  json_object *o = json_object_new_object (), *variants = json_object_new_array ();
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) cd = NULL;
  g_autoptr(NapkinCudaModule) cmod = NULL;
  g_autoptr(GBytes) cbin = NULL;
  g_autofree char *message = NULL;
  g_autofree double *serial_ms = g_new0 (double, repeats);
  g_autoptr(GArray) list = overlap_sms_list (m);
  g_autoptr(NapkinShardAnalysis) sa = m->profile ? napkin_shard_analyze (d, m->profile, m->g.n, NULL, NULL) : NULL;
  Device cdev[NAPKIN_MAX_GPUS] = { { 0 } };
  OverlapEvents ev;
  OverlapCheck chk = { rd, compare, d, 0, 0, sa, m->profile };
  const char *note = NULL;
  MultiColl *last;
  double worst = 0, ms = 0;
  gboolean ok;

  memset (&ev, 0, sizeof ev);
  json_object_object_add (root, "overlap", o);
  json_object_object_add (o, "chunks", json_object_new_int ((int) m->plan->chunks));
  json_object_object_add (o, "axis", json_object_new_string (m->plan->chunk_axis));
  json_object_object_add (o, "variants", variants);
  last = overlap_target (m, &note);
  if (note == NULL)
    note = overlap_chunk_module (m, arch, generic, &cd, &cmod, &cbin, &error);
  if (note != NULL)
    {
      json_object_object_add (o, "note", json_object_new_string (note));
      return 0;
    }
  json_object_object_add (o, "chunk_kernels", json_object_new_int ((int) cmod->kernels->len));
  chk.plain_ms = json_object_get_double (json_object_object_get (json_object_object_get (root, "time_ms"), "median"));
  ok = overlap_load (m, cd, cmod, cbin, cdev, &note, &message) && overlap_events_create (m, &ev, &message);
  /* the chunks with the collectives on the compute stream (chunked, serial), two warm-ups */
  for (int rep = -2; rep < repeats && ok; rep++)
    if ((ok = overlap_run (m, cdev, last, &ev, FALSE, &ms, &message)) && rep >= 0)
      serial_ms[rep] = ms;
  chk.serial_ms = ok ? median_of (serial_ms, (guint) repeats) : 0;
  /* then each variant on the communication stream (overlapped), checked */
  for (guint i = 0; i < list->len && ok; i++)
    ok = overlap_variant (m, cdev, last, &ev, g_array_index (list, guint, i), repeats, &chk, variants, &worst, &message);
  if (ok)
    overlap_headline (m, o, variants, chk.serial_ms, worst, repeats);
  else
    json_object_object_add (o, "note", json_object_new_string (note ? note : message ? message : "failed"));
  overlap_free (m, cdev, &ev);
  return worst;
}

/* The shard program timed: events around every step on every GPU, a step's time its
 * slowest GPU's; the kernels' times into `kernels_json`, the collectives' and the total
 * into root. FALSE on a fault. */
static gboolean
multi_time (Multi       *m,
            int          repeats,
            json_object *kernels_json,
            json_object *root,
            char       **message)
{
  guint n_kernels = m->dev[0].mod->kernels->len, n_steps = n_kernels + m->n_colls;
  json_object *colls_json;
  GpuEvents *events = g_malloc0_n (n_steps + 1, sizeof (GpuEvents));
  g_autofree double *step_ms = g_new0 (double, (gsize) (n_steps + 1) * repeats);
  gboolean ok = TRUE;
  json_object *steps = json_object_new_array ();
  double total_pred_comm = 0;

  for (guint s = 0; s <= n_steps && ok; s++)
    for (guint r = 0; r < m->g.n && ok; r++)
      ok = napkin_gpu_group_use (&m->g, r, message) && check (cu.EventCreate (&events[s][r], 0), "creating an event", message);
  for (guint w = 0; w < 2 && ok; w++)
    ok = multi_run_once (m, NULL, message);
  ok = ok && napkin_gpu_group_sync (&m->g, message);
  for (int rep = 0; rep < repeats && ok; rep++)
    {
      ok = multi_run_once (m, events, message) && napkin_gpu_group_sync (&m->g, message);
      for (guint s = 0; s <= n_steps && ok; s++)
        {
          double worst_ms = 0;

          for (guint r = 0; r < m->g.n && ok; r++)
            {
              float ms = 0;

              ok = napkin_gpu_group_use (&m->g, r, message)
                   && check (cu.EventElapsedTime (&ms, events[s > 0 ? s - 1 : 0][r], events[s == 0 ? n_steps : s][r]),
                             "reading the event timer", message);
              worst_ms = MAX (worst_ms, ms);
            }
          /* slot 0 holds the whole program; slot s the step s */
          step_ms[(gsize) s * repeats + rep] = worst_ms;
        }
    }
  for (guint s = 0; s <= n_steps; s++)
    for (guint r = 0; r < m->g.n; r++)
      if (events[s][r] != NULL && napkin_gpu_group_use (&m->g, r, message))
        cu.EventDestroy (events[s][r]);
  g_free (events);
  if (!ok)
    {
      json_object_put (steps);
      return FALSE;
    }
  colls_json = json_object_new_array ();
  {
    guint c = 0, k = 0;

    for (guint s = 1; s <= n_steps; s++)
      {
        json_object *o = json_object_new_object ();
        double med = median_of (step_ms + (gsize) s * repeats, (guint) repeats);
        gboolean is_coll = c < m->n_colls && m->colls[c].at == k;

        if (is_coll)
          {
            const NapkinCollective *col = m->colls[c].c;

            json_object_object_add (o, "kind", json_object_new_string (napkin_nccl_collective_name (col->kind)));
            json_object_object_add (o, "tensor", json_object_new_string (col->tensor));
            json_object_object_add (o, "before_kernel", json_object_new_int ((int) col->before_kernel));
            json_object_object_add (o, "dtype", json_object_new_string (napkin_dtype_to_string (col->dtype)));
            json_object_object_add (o, "bytes", json_object_new_int64 (col->bytes));
            json_object_object_add (o, "measured_ms", json_object_new_double (med));
            json_object_object_add (o, "predicted_ms", col->seconds > 0 ? json_object_new_double (col->seconds * 1e3) : NULL);
            json_object_object_add (o, "ratio", col->seconds > 0 ? json_object_new_double (med / (col->seconds * 1e3)) : NULL);
            json_object_object_add (o, "busbw_gbps", json_object_new_double (col->bytes / (med * 1e-3) / 1e9
                                                                               * napkin_nccl_bus_factor (col->kind, m->g.n)));
            json_object_object_add (o, "copies", json_object_new_boolean (m->colls[c].pack || m->colls[c].unpack));
            json_object_array_add (colls_json, o);
            total_pred_comm += col->seconds > 0 ? col->seconds : 0;
            c++;
          }
        else
          {
            json_object *ko = json_object_array_get_idx (kernels_json, k);

            if (ko != NULL)
              json_object_object_add (ko, "time_ms", json_object_new_double (med));
            json_object_put (o);
            k++;
          }
      }
  }
  json_object_object_add (root, "collectives", colls_json);
  {
    json_object *t = json_object_new_object ();
    double total = median_of (step_ms, (guint) repeats);
    double coll_ms = 0;

    for (guint c = 0; c < json_object_array_length (colls_json); c++)
      coll_ms += json_object_get_double (json_object_object_get (json_object_array_get_idx (colls_json, c), "measured_ms"));
    json_object_object_add (t, "median", json_object_new_double (total));
    json_object_object_add (t, "repeats", json_object_new_int (repeats));
    json_object_object_add (t, "collectives_ms", json_object_new_double (coll_ms));
    json_object_object_add (t, "kernels_ms", json_object_new_double (total - coll_ms));
    json_object_object_add (root, "time_ms", t);
  }
  json_object_object_add (root, "predicted_collectives_ms", m->profile ? json_object_new_double (total_pred_comm * 1e3) : NULL);
  json_object_put (steps);
  return TRUE;
}

/* Every GPU: the shard's module, the slice copy kernels, and its slots allocated and
 * poisoned (the inputs are written after). */
static gboolean
multi_load (Multi            *m,
            NapkinCudaModule *kern,
            GBytes           *kern_bin,
            GBytes           *copy_bin,
            json_object      *kernels_json,
            char            **message)
{
  for (guint r = 0; r < m->g.n; r++)
    {
      Device *dev = &m->dev[r];
      static const char *units[] = { "1", "2", "4", "16" };

      dev->mod = kern;
      dev->n_copies = 1;
      if (!napkin_gpu_group_use (&m->g, r, message) || !device_load (dev, kern_bin, r == 0 ? kernels_json : NULL, message)
          || !check (cu.ModuleLoadData (&m->copy_module[r], g_bytes_get_data (copy_bin, NULL)), "loading the copy kernels", message))
        {
          return FALSE;
        }
      for (guint u = 0; u < 4; u++)
        {
          g_autofree char *x = g_strdup_printf ("napkin_slice_extract_u%s", units[u]);
          g_autofree char *p = g_strdup_printf ("napkin_slice_place_u%s", units[u]);

          if (!check (cu.ModuleGetFunction (&m->extract[r][u], m->copy_module[r], x), x, message)
              || !check (cu.ModuleGetFunction (&m->place[r][u], m->copy_module[r], p), p, message))
            {
              return FALSE;
            }
        }
      /* slots: allocated and poisoned here; the inputs are written below */
      {
        g_autofree float **none = g_new0 (float *, napkin_diagram_n_tensors (m->plan->shard) + 1);
        NapkinDiagram *sd = m->plan->shard;

        /* device_alloc fills inputs from per-tensor floats: give it zeros, then overwrite */
        for (guint s = 0; s < kern->args->len; s++)
          {
            const NapkinIrBuffer *b = napkin_ir_buffer (kern->program, g_array_index (kern->args, int, s));

            if (b->role == NAPKIN_BUF_INPUT && none[b->tensor] == NULL)
              none[b->tensor] = g_new0 (float, napkin_ir_buffer_elements (b));
          }
        if (!device_alloc (dev, NULL, none, message))
          {
            for (guint t = 0; t < napkin_diagram_n_tensors (sd); t++)
              g_free (none[t]);
            return FALSE;
          }
        for (guint t = 0; t < napkin_diagram_n_tensors (sd); t++)
          g_free (none[t]);
      }
    }
  return TRUE;
}

/* The shard's module, the one-GPU run's (for its argument order: the seeds then match
 * `run` without --gpus) and, unless no_reference, the fp32 reference's. */
static gboolean
multi_modules (NapkinDiagram     *d,
               NapkinShardPlan   *plan,
               const char        *arch,
               gboolean           generic,
               gboolean           no_reference,
               NapkinCudaModule **kern,
               NapkinCudaModule **full,
               NapkinCudaModule **ref,
               GError           **error)
{
  NapkinIrProgram *prog;

  *kern = module_for (plan->shard, plan_profile (plan->plan ? plan->plan->arch->id : NULL, NULL, arch), arch, generic,
                      error);
  if (*kern == NULL)
    return FALSE;
  prog = napkin_ir_lower (d, NAPKIN_LOWER_DEFAULT, error);
  *full = prog ? napkin_codegen_cuda (prog, NAPKIN_CODEGEN_GENERIC_ONLY, NULL, error) : NULL;
  if (*full == NULL || no_reference)
    return *full != NULL;
  prog = napkin_ir_lower (d, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, error);
  *ref = prog ? napkin_codegen_cuda (prog, NAPKIN_CODEGEN_GENERIC_ONLY, "napkin_ref_", error) : NULL;
  return *ref != NULL;
}

/* root's "nccl" (version, library) and "gpus". */
static void
multi_nccl_json (Multi       *m,
                 json_object *root)
{
  json_object *nccl = json_object_new_object ();
  g_autofree char *version = napkin_nccl_version (&m->g.nccl);

  json_object_object_add (nccl, "version", json_object_new_string (version));
  json_object_object_add (nccl, "library", json_object_new_string (m->g.nccl.path));
  json_object_object_add (root, "nccl", nccl);
  json_object_object_add (root, "gpus", json_object_new_int ((int) m->g.n));
}

/* Seeded inputs of the whole diagram, as the one-GPU run makes them (tensor after
 * tensor in the one-GPU module's argument order); *bound: the loosest tolerance of its
 * inputs' and outputs' types. */
static float **
multi_inputs (NapkinDiagram    *d,
              NapkinCudaModule *full,
              gint64            seed,
              double           *bound)
{
  float **inputs = g_new0 (float *, napkin_diagram_n_tensors (d) + 1);
  guint64 draws = 0;

  for (guint s = 0; s < full->args->len; s++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (full->program, g_array_index (full->args, int, s));
      gint64 n = napkin_ir_buffer_elements (b);
      double scale;

      if (b->role == NAPKIN_BUF_OUTPUT || b->role == NAPKIN_BUF_INPUT)
        *bound = MAX (*bound, napkin_dtype_tolerance (b->dtype));
      if (b->role != NAPKIN_BUF_INPUT || inputs[b->tensor] != NULL)
        continue;
      scale = napkin_input_scale (d, b->tensor);
      inputs[b->tensor] = g_new (float, n);
      for (gint64 i = 0; i < n; i++)
        inputs[b->tensor][i] = input_value ((guint64) seed + draws * NAPKIN_RNG_STEP, b->dtype == NAPKIN_DTYPE_INT8,
                                            scale, i);
      draws += (guint64) n;
    }
  return inputs;
}

/* Every GPU's inputs: as stored when a collective moves them, else as the shard's
 * kernels read them. */
static gboolean
multi_fill_inputs (Multi            *m,
                   NapkinDiagram    *d,
                   NapkinCudaModule *kern,
                   float           **inputs,
                   char            **message)
{
  for (guint i = 0; i < m->plan->tensors->len; i++)
    {
      const NapkinShardTensor *t = g_ptr_array_index (m->plan->tensors, i);
      int full_t = napkin_diagram_find_tensor (d, t->tensor);
      MultiColl *mover = NULL;
      int slot = find_slot (&m->dev[0], t->tensor, NAPKIN_BUF_INPUT);

      if (t->is_output)
        continue;
      for (guint c = 0; c < m->n_colls; c++)
        if (m->colls[c].src_stored && g_str_equal (m->colls[c].c->src, t->tensor))
          mover = &m->colls[c];
      if (full_t < 0 || inputs[full_t] == NULL || (mover == NULL && slot < 0))
        continue;   /* an input no kernel reads */
      for (guint r = 0; r < m->g.n; r++)
        {
          CUdeviceptr ptr = mover ? mover->src[r] : m->dev[r].ptrs[slot];
          int split = mover ? t->stored : t->computed;
          gint64 expect = mover ? mover->src_elems
                                : napkin_ir_buffer_elements (napkin_ir_buffer (kern->program, g_array_index (kern->args, int, slot)));

          if (!fill_piece (m, r, ptr, inputs[full_t], t->dtype, t->shape, t->rank, split, expect, t->tensor, message))
            return FALSE;
        }
    }
  return TRUE;
}

/* The reference on GPU 0 (the whole diagram through device memory in fp32, into *rd)
 * and the gathered outputs checked against it; root's "error" says how close. Returns
 * EXIT_OK, or the exit code with *status and *message set. */
static int
multi_reference (Multi            *m,
                 NapkinDiagram    *d,
                 NapkinCudaModule *ref,
                 GBytes           *ref_bin,
                 float           **inputs,
                 double            bound,
                 Device           *rd,
                 CUfunction       *compare,
                 double           *worst,
                 const char      **status,
                 json_object      *root,
                 char            **message)
{
  json_object *errors = json_object_new_object (), *e = json_object_new_object ();

  json_object_object_add (e, "outputs", errors);
  json_object_object_add (root, "error", e);
  if (ref != NULL)
    {
      progress (0.6, "Running the one-GPU reference on GPU 0");
      rd->mod = ref;
      rd->n_copies = 1;
      if (!napkin_gpu_group_use (&m->g, 0, message) || !device_load (rd, ref_bin, NULL, message)
          || !device_alloc (rd, NULL, inputs, message)
          || !check (cu.ModuleGetFunction (compare, rd->module, "napkin_compare"), "the check kernel", message))
        return *status = "failed", EXIT_FAILED;
      if (!check (device_launch (rd, 0), "launching the reference", message)
          || !check (cu.CtxSynchronize (), "running the reference", message))
        return *status = "fault", EXIT_FAULT;
      progress (0.7, "Gathering the outputs on GPU 0 and checking them");
      if (!multi_check (m, rd, *compare, d, errors, worst, status, message))
        return g_str_equal (*status, "fault") ? EXIT_FAULT : EXIT_FAILED;
    }
  json_object_object_add (e, "max_rel", json_object_new_double (isinf (*worst) ? 1e308 : *worst));
  json_object_object_add (e, "bound", json_object_new_double (bound));
  json_object_object_add (e, "ok", json_object_new_boolean (ref != NULL && *worst <= bound));
  json_object_object_add (e, "checked", json_object_new_boolean (ref != NULL));
  json_object_object_add (e, "against", json_object_new_string ("the whole diagram on GPU 0, fp32 through device memory"));
  return EXIT_OK;
}

static int
run_gpus (NapkinDiagram *d,
          guint          gpus,
          const char    *arch,
          const char    *model,
          const char    *gpu_name,
          gboolean       generic,
          gboolean       no_reference,
          int            repeats,
          gint64         seed,
          gboolean       dry_run,
          json_object   *root)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinCudaModule) kern = NULL, ref = NULL, full = NULL;
  g_autoptr(GBytes) kern_bin = NULL, ref_bin = NULL, copy_bin = NULL;
  g_autofree char *log = NULL;
  g_autofree float **inputs = NULL;
  g_autofree char *message = NULL;
  NapkinArch *arch_profile = multi_arch (model, gpu_name);
  CUfunction compare = NULL;
  Multi m = { 0 };
  Device rd = { 0 };
  json_object *kernels_json;
  guint n_tensors;
  double worst = 0, bound = 0;
  int code = EXIT_OK;
  const char *status = "ok";

  m.owned = g_ptr_array_new ();
  m.dry = dry_run;
  m.profile = arch_profile;
  progress (0.15, "Building the shard plan");
  m.plan = napkin_shard_plan_build (d, arch_profile, gpus, &error);
  if (m.plan == NULL)
    return finish (root, "unsupported", error->message, EXIT_FAILED);
  json_object_object_add (root, "shard_plan", napkin_shard_plan_to_json (m.plan));
  json_object_object_add (root, "model", arch_profile ? json_object_new_string (arch_profile->id) : NULL);
  if (!multi_modules (d, m.plan, arch, generic, no_reference, &kern, &full, &ref, &error))
    return finish (root, "unsupported", error->message, EXIT_FAILED);

  progress (0.2, "Compiling the shard's kernels with NVRTC (once for every GPU)");
  {
    json_object *compile = json_object_new_object ();

    json_object_object_add (root, "compile", compile);
    kern_bin = compile_module (kern->source, arch, &log, compile, &error);
    json_object_object_add (compile, "log", json_object_new_string (log ? log : ""));
    if (kern_bin == NULL)
      return finish (root, "compile-error", error->message, EXIT_FAILED);
    copy_bin = compile_module (napkin_shard_slice_cuda_source (), arch, NULL, NULL, &error);
    if (copy_bin == NULL)
      return finish (root, "compile-error", error->message, EXIT_FAILED);
    if (ref != NULL)
      {
        g_autofree char *ref_source = g_strconcat (ref->source, compare_source, NULL);

        ref_bin = compile_module (ref_source, arch, NULL, NULL, &error);
        if (ref_bin == NULL)
          return finish (root, "compile-error", error->message, EXIT_FAILED);
      }
  }

  if (dry_run)
    return multi_dry_run (&m, kern, arch, gpus, root);

  progress (0.3, "Opening the GPUs and NCCL");
  if (!napkin_gpu_group_open (&m.g, &cu, gpus, &message))
    {
      napkin_gpu_group_close (&m.g);
      return finish (root, m.g.no_nccl ? "no-nccl" : "failed", message, EXIT_FAILED);
    }
  multi_nccl_json (&m, root);

  n_tensors = napkin_diagram_n_tensors (d);
  inputs = multi_inputs (d, full, seed, &bound);

  progress (0.4, "Loading the module and the inputs on every GPU");
  kernels_json = json_object_new_array ();
  json_object_object_add (root, "kernels", kernels_json);
  if (!multi_load (&m, kern, kern_bin, copy_bin, kernels_json, &message))
    {
      code = EXIT_FAILED, status = "failed";
      goto out;
    }

  /* The collectives' buffers, then every GPU's inputs. */
  if (!multi_prepare (&m, &message))
    {
      code = EXIT_FAILED, status = "unsupported";
      goto out;
    }
  if (!multi_fill_inputs (&m, d, kern, inputs, &message))
    {
      code = EXIT_FAILED, status = "failed";
      goto out;
    }

  progress (0.5, "Running the shard program on every GPU");
  /* the copies and fills above went through the legacy stream, which the non-blocking
   * streams do not wait for */
  if (!napkin_gpu_group_sync (&m.g, &message) || !multi_run_once (&m, NULL, &message)
      || !napkin_gpu_group_sync (&m.g, &message))
    {
      code = EXIT_FAULT, status = "fault";
      goto out;
    }

  if ((code = multi_reference (&m, d, ref, ref_bin, inputs, bound, &rd, &compare, &worst, &status, root, &message))
      != EXIT_OK)
    goto out;

  progress (0.8, "Timing");
  if (!multi_time (&m, repeats, kernels_json, root, &message))
    {
      code = EXIT_FAULT, status = "fault";
      goto out;
    }

  if (m.plan->chunks > 1)
    {
      progress (0.9, "Timing the overlapped variant");
      worst = MAX (worst, multi_overlap (&m, arch, generic, ref != NULL ? &rd : NULL, compare, d, repeats, root));
    }
  if (worst > bound)
    {
      message = g_strdup (_("the gathered result differs from the one-GPU fp32 reference beyond the bound"));
      code = EXIT_FAILED, status = "wrong";
    }
out:
  for (guint i = 0; i + 1 < m.owned->len; i += 2)
    if (napkin_gpu_group_use (&m.g, GPOINTER_TO_SIZE (m.owned->pdata[i]), &message))
      cu.MemFree ((CUdeviceptr) GPOINTER_TO_SIZE (m.owned->pdata[i + 1]));
  for (guint r = 0; r < m.g.n; r++)
    if (napkin_gpu_group_use (&m.g, r, &message))
      device_free (&m.dev[r], &message);
  if (rd.ptrs != NULL && napkin_gpu_group_use (&m.g, 0, &message))
    device_free (&rd, &message);
  napkin_gpu_group_close (&m.g);
  g_ptr_array_free (m.owned, TRUE);
  g_free (m.colls);
  for (guint t = 0; inputs && t < n_tensors; t++)
    g_free (inputs[t]);
  napkin_shard_plan_free (m.plan);
  progress (1.0, "Done");
  return finish (root, status, code == EXIT_OK ? NULL : message, code);
}

static NapkinDiagram *
load_diagram (const char  *path,
              char       **axes,
              char       **tiles,
              GError     **error)
{
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, error);

  if (d == NULL)
    return NULL;
  for (guint i = 0; axes && axes[i]; i++)
    if (!napkin_diagram_override_axis (d, axes[i], error))
      return NULL;
  /* a tile the resized axis no longer holds is cut to it, as `napkin-cli` does (it
   * said so before handing the run over) */
  if (axes != NULL && axes[0] != NULL)
    napkin_diagram_refit_tiles (d, NULL);
  for (guint i = 0; tiles && tiles[i]; i++)
    if (!napkin_diagram_override_tile (d, tiles[i], error))
      return NULL;
  if (!napkin_diagram_validate (d, error))
    return NULL;
  return g_steal_pointer (&d);
}

/* ---- main, step by step ---------------------------------------------------------------------- */

/* A step of main that did not end the run; otherwise a step returns finish ()'s exit status. */
#define GO_ON (-1)

/* What main's steps share: the options, then what each step makes. */
typedef struct
{
  char       **axes, **tiles, **only;
  char        *inject, *arch_opt, *model;
  int          repeats, timeout, reference_repeats, budget_ms, gpus;
  gint64       seed, min_bytes, max_bytes;
  gboolean     generic, calibrate, no_reference, no_energy, no_cache, collectives, dry_run;

  json_object      *root;
  NapkinDiagram    *d;
  NapkinCudaModule *kern, *ref;
  GBytes           *kern_bin, *ref_bin, *fill_bin;
  char             *arch;
  char              name[256];
  int               sms, clock_khz, l2;
  Device            kd, rd;
  Inputs            in;
  gint64            io_bytes, input_bytes;
  double            worst, bound;
  json_object      *kernels, *time_obj;
} Run;

static void
run_clear (Run *r)
{
  g_strfreev (r->axes);
  g_strfreev (r->tiles);
  g_strfreev (r->only);
  g_free (r->inject);
  g_free (r->arch_opt);
  g_free (r->model);
  g_clear_pointer (&r->root, json_object_put);
  g_clear_object (&r->d);
  g_clear_pointer (&r->kern, napkin_cuda_module_free);
  g_clear_pointer (&r->ref, napkin_cuda_module_free);
  g_clear_pointer (&r->kern_bin, g_bytes_unref);
  g_clear_pointer (&r->ref_bin, g_bytes_unref);
  g_clear_pointer (&r->fill_bin, g_bytes_unref);
  g_free (r->arch);
  g_free (r->in.first);
  g_free (r->in.rotate_half);
  g_free (r->in.scale);
  g_free (r->in.integers);
  for (guint t = 0; r->in.given != NULL && t < napkin_diagram_n_tensors (r->d); t++)
    g_free (r->in.given[t]);
  g_free (r->in.given);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Run, run_clear)

/* The options and the values they take together; EXIT_USAGE after saying why. */
static int
parse_options (Run    *r,
               int    *argc,
               char ***argv)
{
  const GOptionEntry entries[] = {
    { "calibrate", 0, 0, G_OPTION_ARG_NONE, &r->calibrate, "Measure the GPU's ceilings instead of running a diagram", NULL },
    { "gpus", 0, 0, G_OPTION_ARG_INT, &r->gpus, "Run on this many GPUs (docs/multi-gpu.md; needs NCCL)", "N" },
    { "dry-run", 0, 0, G_OPTION_ARG_NONE, &r->dry_run,
      "With --gpus: build the shard plan, generate and compile its kernels (for --arch) and resolve every buffer; no GPU", NULL },
    { "model", 0, 0, G_OPTION_ARG_STRING, &r->model,
      "The architecture profile the kernels are planned for and, with --gpus, that prices the collectives "
      "(default: from the GPU's name)", "ID" },
    { "collectives", 0, 0, G_OPTION_ARG_NONE, &r->collectives,
      "Time NCCL's all-reduce, all-gather, reduce-scatter and all-to-all in bf16 on --gpus GPUs instead of running a diagram", NULL },
    { "collective", 0, 0, G_OPTION_ARG_STRING_ARRAY, &r->only, "With --collectives: only this one (repeatable)", "KIND" },
    { "min-bytes", 0, 0, G_OPTION_ARG_INT64, &r->min_bytes, "With --collectives: the smallest size (default 1 MiB)", "B" },
    { "max-bytes", 0, 0, G_OPTION_ARG_INT64, &r->max_bytes, "With --collectives: the largest size (default 1 GiB; sizes step ×4)", "B" },
    { "axis", 0, 0, G_OPTION_ARG_STRING_ARRAY, &r->axes, "Override an axis size", "NAME=SIZE" },
    { "tile", 0, 0, G_OPTION_ARG_STRING_ARRAY, &r->tiles, "Override a tile", "REGION.AXIS=SIZE" },
    { "repeats", 0, 0, G_OPTION_ARG_INT, &r->repeats, "Timed repeats (at least 20 recommended)", "N" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &r->seed, "Seed of the random inputs", "S" },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &r->timeout, "Give up after this many seconds", "S" },
    { "arch", 0, 0, G_OPTION_ARG_STRING, &r->arch_opt, "Compile for this architecture (default: the GPU's)", "sm_XX" },
    { "generic", 0, 0, G_OPTION_ARG_NONE, &r->generic, "Use the generic lowering only (no skeletons)", NULL },
    { "inject", 0, 0, G_OPTION_ARG_STRING, &r->inject, "Run a kernel made to fault or hang instead", "fault|hang" },
    { "no-reference", 0, 0, G_OPTION_ARG_NONE, &r->no_reference,
      "Time the kernel without the fp32 reference (for sizes whose reference does not fit; check a smaller size)", NULL },
    { "reference-repeats", 0, 0, G_OPTION_ARG_INT, &r->reference_repeats, "Timed runs of the plain reference (default 5, 0: none)", "N" },
    { "time-budget", 0, 0, G_OPTION_ARG_INT, &r->budget_ms,
      "Stop timing after this many milliseconds once 5 repeats are done (default 200)", "MS" },
    { "no-energy", 0, 0, G_OPTION_ARG_NONE, &r->no_energy,
      "Skip the NVML energy measurement (tens of milliseconds of launches)", NULL },
    { "no-cache", 0, 0, G_OPTION_ARG_NONE, &r->no_cache,
      "Compile with NVRTC even when the compiled-module cache ($XDG_CACHE_HOME/napkin/modules) has the module", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("FILE — compile, run, check and time a diagram on the GPU");
  g_autoptr(GError) error = NULL;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, argc, argv, &error))
    {
      fprintf (stderr, "napkin-runner: %s\n", error->message);
      return EXIT_USAGE;
    }
  if (r->collectives && (r->min_bytes < 1024 || r->max_bytes < r->min_bytes || r->max_bytes > (G_GINT64_CONSTANT (1) << 34)))
    {
      fprintf (stderr, "napkin-runner: --min-bytes must be at least 1024 and at most --max-bytes (at most 16 GiB)\n");
      return EXIT_USAGE;
    }
  if (r->gpus < 1 || r->gpus > 16)
    {
      fprintf (stderr, "napkin-runner: --gpus takes 1 to 16, not %d\n", r->gpus);
      return EXIT_USAGE;
    }
  if ((*argc != 2 && r->inject == NULL && !r->calibrate && !r->collectives) || r->repeats < 1 || r->reference_repeats < 0
      || r->budget_ms < 0)
    {
      fprintf (stderr, "napkin-runner: expected one FILE (and --repeats ≥ 1, --reference-repeats ≥ 0, "
               "--time-budget ≥ 0)\n");
      return EXIT_USAGE;
    }
  if (r->inject && !g_str_equal (r->inject, "fault") && !g_str_equal (r->inject, "hang"))
    {
      fprintf (stderr, "napkin-runner: --inject takes fault or hang\n");
      return EXIT_USAGE;
    }
  return GO_ON;
}

/* The diagram, its kernels and (unless --no-reference) the plain fp32 reference;
 * a run on several GPUs lowers per shard later (run_gpus). */
static int
lower_diagram (Run        *r,
               const char *path)
{
  g_autoptr(GError) error = NULL;

  progress (0.05, "Lowering the diagram");
  r->d = load_diagram (path, r->axes, r->tiles, &error);
  if (r->d == NULL)
    return finish (r->root, "invalid", error->message, EXIT_FAILED);
  if (r->gpus <= 1)
  {
    NapkinIrProgram *prog;

    /* the kernels as compile_all will plan them (its diagram, casts folded), here for
     * an early verdict before a GPU is opened: the profile named, else Hopper's */
    r->kern = module_for (r->d, r->generic ? NULL : plan_profile (r->model, NULL, "sm_90a"), "sm_90a", r->generic,
                          &error);
    if (r->kern == NULL)
      return finish (r->root, "unsupported", error->message, EXIT_FAILED);
    if (!r->no_reference)
      {
        prog = napkin_ir_lower (r->d, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, &error);
        if (prog == NULL)
          return finish (r->root, "unsupported", error->message, EXIT_FAILED);
        r->ref = napkin_codegen_cuda (prog, NAPKIN_CODEGEN_GENERIC_ONLY, "napkin_ref_", &error);
        if (r->ref == NULL)
          return finish (r->root, "unsupported", error->message, EXIT_FAILED);
      }
  }
  json_object_object_add (r->root, "file", json_object_new_string (path));
  if (napkin_diagram_get_title (r->d))
    json_object_object_add (r->root, "title", json_object_new_string (napkin_diagram_get_title (r->d)));
  phase_end ("lower");
  return GO_ON;
}

/* The driver, GPU 0's figures (the result's "gpu" and "arch") and a context on it. */
static int
open_gpu (Run *r)
{
  g_autofree char *message = NULL;
  int major = 0, minor = 0, mem_khz = 0, driver_version = 0;
  CUdevice device;
  CUcontext ctx;
  json_object *gpu;

  progress (0.1, "Opening the CUDA driver");
  if (!napkin_cuda_driver_open (&cu, &message))
    {
      if (r->gpus > 1)
        {
          g_autofree char *why = g_steal_pointer (&message);

          message = g_strdup_printf (_("--gpus %d: this machine has no usable GPU (%s)"), r->gpus, why);
        }
      return finish (r->root, "no-gpu", message, EXIT_NO_GPU);
    }
  if (r->gpus > 1 && !napkin_gpu_group_check_count (&cu, (guint) r->gpus, &message))
    return finish (r->root, "no-gpu", message, EXIT_NO_GPU);

  if (!check (cu.DeviceGet (&device, 0), "opening GPU 0", &message)
      || !check (cu.DeviceGetName (r->name, sizeof r->name, device), "reading the GPU's name", &message)
      || !check (cu.DeviceGetAttribute (&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
                 "reading the compute capability", &message)
      || !check (cu.DeviceGetAttribute (&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
                 "reading the compute capability", &message)
      || !check (cu.DeviceGetAttribute (&r->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                 "reading the multiprocessor count", &message)
      || !check (cu.DeviceGetAttribute (&r->clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, device), "reading the clock", &message)
      || !check (cu.DeviceGetAttribute (&mem_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, device),
                 "reading the memory clock", &message)
      || !check (cu.DeviceGetAttribute (&r->l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device), "reading the L2 size", &message)
      || !check (cu.DriverGetVersion (&driver_version), "reading the driver version", &message))
    return finish (r->root, "no-gpu", message, EXIT_NO_GPU);
  sm_count = r->sms;
  gpu = json_object_new_object ();
  json_object_object_add (gpu, "name", json_object_new_string (r->name));
  {
    g_autofree char *cc = g_strdup_printf ("%d.%d", major, minor);

    json_object_object_add (gpu, "compute_capability", json_object_new_string (cc));
  }
  json_object_object_add (gpu, "sms", json_object_new_int (r->sms));
  json_object_object_add (gpu, "clock_mhz", json_object_new_int (r->clock_khz / 1000));
  json_object_object_add (gpu, "memory_clock_mhz", json_object_new_int (mem_khz / 1000));
  json_object_object_add (gpu, "l2_bytes", json_object_new_int (r->l2));
  {
    g_autofree char *dv = g_strdup_printf ("%d.%d", driver_version / 1000, (driver_version % 1000) / 10);

    json_object_object_add (gpu, "driver", json_object_new_string (dv));
  }
  json_object_object_add (r->root, "gpu", gpu);
  if (!check (cu.DevicePrimaryCtxRetain (&ctx, device), "creating a context", &message)
      || !check (cu.CtxSetCurrent (ctx), "creating a context", &message))
    return finish (r->root, "no-gpu", message, EXIT_NO_GPU);
  phase_end ("init");

  r->arch = r->arch_opt ? g_strdup (r->arch_opt)
                        : g_strdup_printf ("sm_%d%d%s", major, minor, major == 9 && minor == 0 ? "a" : "");
  json_object_object_add (r->root, "arch", json_object_new_string (r->arch));
  return GO_ON;
}

/* The runs that are not a diagram on one GPU: --inject, --calibrate, --gpus N, --collectives. */
static int
run_other_modes (Run *r)
{
  g_autofree char *message = NULL;

  if (r->inject != NULL)
    return run_injected (r->inject, r->arch, r->root);
  if (r->calibrate)
    return run_calibrate (r->arch, r->sms, r->clock_khz, r->root);
  if (r->gpus > 1 && r->d != NULL)
    return run_gpus (r->d, (guint) r->gpus, r->arch, r->model, r->name, r->generic, r->no_reference, r->repeats, r->seed,
                     FALSE, r->root);
  if (r->collectives)
    {
      NapkinCollectivesOptions opt = { (guint) r->gpus, r->min_bytes, r->max_bytes, 4, (guint) MIN (r->repeats, 50), 5,
                                       r->only };
      g_autofree char *status = NULL;
      int code;

      /* 20 timed batches of 5 by default would be 100 GiB-sized calls: 10 batches are plenty */
      opt.repeats = MAX (3, MIN (opt.repeats, 10));
      code = napkin_runner_collectives (&cu, &opt, r->root, &status, &message);
      return finish (r->root, status, message, code);
    }
  return GO_ON;
}

/* The kernels for the target found (sm_90a has skeletons of its own: wgmma), the
 * reference with its check kernel, and the input filler, through NVRTC or the cache. */
static int
compile_all (Run *r)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *log = NULL;
  json_object *compile;

  if (!r->generic)
    {
      /* the plan of the profile the prediction prices, built once here (docs/plan.md) */
      NapkinArch *profile = plan_profile (r->model, r->name, r->arch);

      g_clear_pointer (&r->kern, napkin_cuda_module_free);
      r->kern = module_for (r->d, profile, r->arch, FALSE, &error);
      if (profile != NULL)
        json_object_object_add (r->root, "plan_arch", json_object_new_string (profile->id));
      if (r->kern == NULL)
        return finish (r->root, "unsupported", error->message, EXIT_FAILED);
      phase_end ("lower");
    }

  progress (0.2, "Compiling with NVRTC");
  compile = json_object_new_object ();
  json_object_object_add (r->root, "compile", compile);
  r->kern_bin = compile_module (r->kern->source, r->arch, &log, compile, &error);
  json_object_object_add (compile, "log", json_object_new_string (log ? log : ""));
  if (r->kern_bin == NULL)
    return finish (r->root, "compile-error", error->message, EXIT_FAILED);
  if (r->ref != NULL)
    {
      json_object *reference = json_object_new_object ();

      json_object_object_add (compile, "reference", reference);
      g_autofree char *ref_source = g_strconcat (r->ref->source, compare_source, NULL);

      r->ref_bin = compile_module (ref_source, r->arch, NULL, reference, &error);
      if (r->ref_bin == NULL)
        return finish (r->root, "compile-error", error->message, EXIT_FAILED);
    }
  {
    g_autofree char *source = g_strconcat ("#define NAPKIN_HD static __device__ inline\n", napkin_kernel_fp8_codec,
                                           fill_source, NULL);

    r->fill_bin = compile_module (source, r->arch, NULL, NULL, &error);
    if (r->fill_bin == NULL)
      return finish (r->root, "compile-error", error->message, EXIT_FAILED);
  }
  phase_end ("compile_or_cache");
  return GO_ON;
}

/* The modules on the device: the kernels (the result's "kernels"), the reference, the filler. */
static int
load_modules (Run *r)
{
  g_autofree char *message = NULL;
  CUmodule fill_module;

  r->kernels = json_object_new_array ();
  json_object_object_add (r->root, "kernels", r->kernels);
  r->kd.mod = r->kern;
  r->rd.mod = r->ref;
  r->rd.is_reference = TRUE;
  if (!device_load (&r->kd, r->kern_bin, r->kernels, &message)
      || (r->ref != NULL && !device_load (&r->rd, r->ref_bin, NULL, &message))
      || !check (cu.ModuleLoadData (&fill_module, g_bytes_get_data (r->fill_bin, NULL)), "loading the input filler", &message)
      || !check (cu.ModuleGetFunction (&fill_fn, fill_module, "napkin_fill"), "the input filler", &message))
    return finish (r->root, "failed", message, EXIT_FAILED);
  phase_end ("module_load");
  return GO_ON;
}

/* With NAPKIN_INPUT_DIR set (not empty), an input with a file TENSOR.f32 there (raw
 * little-endian fp32, in the tensor's axis order) takes those values instead of the
 * seeded ones, for the kernel and the reference alike: bench/gpu/zoo-e2e runs a
 * module's own parameters and inputs through the derived kernels and compares the
 * output (NAPKIN_DUMP_DIR) with the module's. */
static gboolean
read_given (Run                  *r,
            const NapkinIrBuffer *b,
            char                **message)
{
  const char *dir = g_getenv ("NAPKIN_INPUT_DIR");
  const NapkinTensor *t = napkin_diagram_tensor (r->d, b->tensor);
  g_autofree char *name = NULL, *path = NULL, *bytes = NULL;
  gint64 n = napkin_ir_buffer_elements (b);
  gsize length = 0;
  g_autoptr(GError) error = NULL;

  if (dir == NULL || *dir == '\0')
    return TRUE;
  name = g_strconcat (t->name, ".f32", NULL);
  path = g_build_filename (dir, name, NULL);
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    return TRUE;
  if (!g_file_get_contents (path, &bytes, &length, &error) || length != (gsize) n * 4)
    {
      g_free (*message);
      *message = g_strdup_printf ("%s: %s", path, error != NULL ? error->message
                                  : "not the tensor's elements as raw fp32 (wrong size)");
      return FALSE;
    }
  if (r->in.given == NULL)
    r->in.given = g_new0 (float *, napkin_diagram_n_tensors (r->d) + 1);
  r->in.given[b->tensor] = (float *) g_steal_pointer (&bytes);
  return TRUE;
}

/* Seeded inputs, the same values for the kernel and the reference: where each
 * tensor's draws start (they are made on the device, device_alloc), the rotate_half
 * constants, the bytes in and out, and the error bound of the coarsest type. */
static int
plan_inputs (Run *r)
{
  guint n_tensors = napkin_diagram_n_tensors (r->d);
  g_autofree gboolean *drawn = g_new0 (gboolean, n_tensors + 1);
  g_autofree char *message = NULL;
  guint64 draws = 0;

  progress (0.3, "Filling inputs");
  r->in.first = g_new0 (guint64, n_tensors + 1);
  r->in.integers = g_new0 (gboolean, n_tensors + 1);
  r->in.rotate_half = g_new0 (gint64, n_tensors + 1);
  r->in.scale = g_new0 (double, n_tensors + 1);
  for (guint t = 0; t < n_tensors; t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (r->d, t);

      if (g_strcmp0 (napkin_tensor_get_constant (tensor), "rotate_half") == 0 && g_strv_length (tensor->axes) == 2)
        {
          gint64 n0 = napkin_diagram_axis_size (r->d, napkin_diagram_find_axis (r->d, tensor->axes[0]));
          gint64 n1 = napkin_diagram_axis_size (r->d, napkin_diagram_find_axis (r->d, tensor->axes[1]));

          if (n0 != n1 || n0 % 2 != 0)
            {
              g_autofree char *msg = g_strdup_printf ("tensor “%s”: a rotate_half constant is n × n with n even, "
                                                      "not %" G_GINT64_FORMAT " × %" G_GINT64_FORMAT,
                                                      tensor->name, n0, n1);

              return finish (r->root, "failed", msg, EXIT_FAILED);
            }
          r->in.rotate_half[t] = n0;
        }
    }
  for (guint s = 0; s < r->kern->args->len; s++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (r->kern->program, g_array_index (r->kern->args, int, s));
      gint64 n = napkin_ir_buffer_elements (b);

      if (b->role == NAPKIN_BUF_INPUT || b->role == NAPKIN_BUF_OUTPUT)
        r->io_bytes += n * napkin_dtype_bytes (b->dtype);
      /* the coarsest type the data passes through: tensor-core paths round operands and
       * intermediates (attention's P) to the inputs' type, so bf16 inputs with an fp32
       * output carry bf16's error, not fp32's */
      if (b->role == NAPKIN_BUF_OUTPUT || b->role == NAPKIN_BUF_INPUT)
        r->bound = MAX (r->bound, napkin_dtype_tolerance (b->dtype));
      if (b->role != NAPKIN_BUF_INPUT || drawn[b->tensor])
        continue;
      r->input_bytes += n * napkin_dtype_bytes (b->dtype);
      drawn[b->tensor] = TRUE;
      r->in.first[b->tensor] = (guint64) r->seed + draws * NAPKIN_RNG_STEP;
      r->in.integers[b->tensor] = b->dtype == NAPKIN_DTYPE_INT8;
      r->in.scale[b->tensor] = napkin_input_scale (r->d, b->tensor);
      draws += (guint64) n;
      if (!read_given (r, b, &message))
        return finish (r->root, "failed", message, EXIT_FAILED);
    }
  return GO_ON;
}

/* The buffers on the device, with input copies to rotate among when the inputs would
 * sit in L2 between repeats; "too-large" where they do not fit. */
static int
alloc_buffers (Run *r)
{
  g_autofree char *message = NULL;
  size_t free_b = 0, total_b = 0;
  gint64 need = 0;

  r->kd.n_copies = r->input_bytes > 0 && r->input_bytes < 2 * (gint64) r->l2
                   ? (guint) MIN (16, (4 * (gint64) r->l2) / r->input_bytes + 1) : 1;
  r->rd.n_copies = 1;
  json_object_object_add (r->root, "input_copies", json_object_new_int (r->kd.n_copies));

  for (guint s = 0; s < n_slots (&r->kd); s++)
    need += slot_bytes (&r->kd, s);
  for (guint s = 0; r->ref != NULL && s < n_slots (&r->rd); s++)
    need += slot_bytes (&r->rd, s);
  need += r->input_bytes * (r->kd.n_copies - 1);
  if (!check (cu.MemGetInfo (&free_b, &total_b), "reading free device memory", &message))
    return finish (r->root, "failed", message, EXIT_FAILED);
  json_object_object_add (r->root, "device_bytes", json_object_new_int64 (need));
  if ((guint64) need > free_b)
    {
      g_autofree char *msg = g_strdup_printf (_("the kernel, its reference and their buffers need %.2f GB of device "
                                              "memory; %.2f GB are free (use --axis to shrink it)"),
                                              need / 1e9, free_b / 1e9);

      return finish (r->root, "too-large", msg, EXIT_FAILED);
    }

  if ((r->ref != NULL && !device_alloc (&r->rd, &r->in, NULL, &message)) || !device_alloc (&r->kd, &r->in, NULL, &message)
      || !check (cu.CtxSynchronize (), "filling inputs", &message))
    return finish (r->root, "fault", message, EXIT_FAULT);
  if (!check_inputs (&r->kd, &r->in, &message) || (r->ref != NULL && !check_inputs (&r->rd, &r->in, &message)))
    return finish (r->root, "failed", message, EXIT_FAILED);
  phase_end ("inputs");
  return GO_ON;
}

/* The reference, then the kernel, once each; then every output against the reference
 * (the result's "error"). */
static int
run_and_check (Run *r)
{
  g_autofree char *message = NULL;
  json_object *errors, *e;
  CUfunction compare = NULL;

  progress (0.5, "Running the reference");
  if (r->ref != NULL
      && (!check (device_launch (&r->rd, 0), "launching the reference", &message)
          || !check (cu.CtxSynchronize (), "running the reference", &message)))
    return finish (r->root, "fault", message, EXIT_FAULT);
  if (r->ref != NULL)
    phase_end ("reference");

  progress (0.6, "Running the kernel");
  if (!check (device_launch (&r->kd, 0), "launching the kernel", &message)
      || !check (cu.CtxSynchronize (), "running the kernel", &message))
    return finish (r->root, "fault", message, EXIT_FAULT);
  phase_end ("first_launch");

  progress (0.7, "Checking the result");
  if (r->ref != NULL && !check (cu.ModuleGetFunction (&compare, r->rd.module, "napkin_compare"), "the check kernel", &message))
    return finish (r->root, "failed", message, EXIT_FAILED);
  errors = json_object_new_object ();
  {
    g_autoptr(GArray) checks = g_array_new (FALSE, TRUE, sizeof (OutputCheck));

    for (guint t = 0; r->ref != NULL && t < napkin_diagram_n_tensors (r->d); t++)
      {
        OutputCheck c = { napkin_diagram_tensor (r->d, t)->name, 0, 0, FALSE };
        double diff = device_compare (compare, &r->kd, &r->rd, (int) t, &c, &message);

        if (message != NULL)
          {
            json_object_put (errors);
            return finish (r->root, "fault", message, EXIT_FAULT);
          }
        if (diff >= 0)
          g_array_append_val (checks, c);
      }
    finish_checks (checks, errors, &r->worst);
  }
  e = json_object_new_object ();
  json_object_object_add (e, "max_rel", json_object_new_double (isinf (r->worst) ? 1e308 : r->worst));
  json_object_object_add (e, "bound", json_object_new_double (r->bound));
  json_object_object_add (e, "ok", json_object_new_boolean (r->ref != NULL && r->worst <= r->bound));
  json_object_object_add (e, "checked", json_object_new_boolean (r->ref != NULL));
  if (r->ref == NULL)
    json_object_object_add (e, "note", json_object_new_string ("--no-reference: not compared (check the same tiles at a smaller size)"));
  json_object_object_add (e, "outputs", errors);
  if (isinf (r->worst))
    json_object_object_add (e, "note", json_object_new_string ("NaN in an output: an element was not written"));
  json_object_object_add (r->root, "error", e);
  phase_end ("check");
  if (!dump_buffers (&r->kd, r->d, &message))
    return finish (r->root, "failed", message, EXIT_FAILED);
  return GO_ON;
}

/* The timed repeats (each kernel of a module alone too), and the rates they give. */
static int
time_kernel (Run *r)
{
  g_autofree char *message = NULL;
  NapkinFlops flops = { 0 };
  double ms;

  progress (0.75, "Timing");
  r->time_obj = json_object_new_object ();
  if (!time_launches (&r->kd, r->repeats, r->time_obj, &message))
    {
      g_clear_pointer (&r->time_obj, json_object_put);
      return finish (r->root, "fault", message, EXIT_FAULT);
    }
  json_object_object_add (r->root, "time_ms", r->time_obj);
  if (r->kern->kernels->len > 1 && !time_each_kernel (&r->kd, r->repeats, r->kernels, &message))
    return finish (r->root, "fault", message, EXIT_FAULT);
  phase_end ("timing");
  ms = json_object_get_double (json_object_object_get (r->time_obj, "median"));
  napkin_diagram_computed_flops (r->d, &flops);
  json_object_object_add (r->root, "flops", json_object_new_int64 (flops.tensor + flops.cuda + flops.sfu));
  json_object_object_add (r->root, "io_bytes", json_object_new_int64 (r->io_bytes));
  json_object_object_add (r->root, "ir_hbm_bytes", json_object_new_int64 (napkin_ir_hbm_bytes (r->kern->program)));
  json_object_object_add (r->root, "tflops", json_object_new_double ((flops.tensor + flops.cuda + flops.sfu) / ms / 1e9));
  json_object_object_add (r->root, "gbps", json_object_new_double (r->io_bytes / ms / 1e6));
  return GO_ON;
}

/* Energy: NVML's counter during back-to-back launches (measure_energy). */
static int
measure_kernel_energy (Run *r)
{
  g_autofree char *message = NULL;
  json_object *energy = json_object_new_object ();

  progress (0.85, "Measuring energy");
  nvml_join ();
  phase_end ("energy_open");
  if (nvml.ok)
    {
      double ms = json_object_get_double (json_object_object_get (r->time_obj, "median"));
      gboolean ok = measure_energy (&r->kd, &nvml.nvml, ms, energy, &message);

      json_object_object_add (energy, "device", json_object_new_string (nvml.nvml.name));
      json_object_object_add (energy, "source", json_object_new_string ("nvmlDeviceGetTotalEnergyConsumption, device 0"));
      napkin_nvml_close (&nvml.nvml);
      nvml.ok = FALSE;
      if (!ok)
        {
          json_object_put (energy);
          return finish (r->root, "fault", message, EXIT_FAULT);
        }
    }
  else
    json_object_object_add (energy, "note", json_object_new_string (nvml.why));
  g_clear_pointer (&nvml.why, g_free);
  json_object_object_add (r->root, "energy", energy);
  phase_end ("energy");
  return GO_ON;
}

/* The plain reference timed too (the result's "reference_time_ms"), then the buffers freed. */
static int
time_reference_and_free (Run *r)
{
  g_autofree char *message = NULL;
  json_object *ref_time = json_object_new_object ();

  progress (0.9, "Timing the plain reference");
  if (r->ref != NULL && r->reference_repeats > 0 && time_launches (&r->rd, r->reference_repeats, ref_time, &message))
    json_object_object_add (r->root, "reference_time_ms", ref_time);
  else
    json_object_put (ref_time);
  if (r->ref != NULL && r->reference_repeats > 0)
    phase_end ("reference_timing");

  g_clear_pointer (&message, g_free);
  if (!device_free (&r->kd, &message) || (r->ref != NULL && !device_free (&r->rd, &message)))
    return finish (r->root, "fault", message, EXIT_FAULT);
  phase_end ("free");
  return GO_ON;
}

int
main (int    argc,
      char **argv)
{
  g_auto(Run) r = { .repeats = 20, .timeout = 120, .seed = 1234, .reference_repeats = 5, .budget_ms = 200, .gpus = 1,
                    .min_bytes = 1 << 20, .max_bytes = 1 << 30 };
  int code;

  run_start = phase_start = g_get_monotonic_time ();
  r.root = json_object_new_object ();
  phases = json_object_new_object ();
  json_object_object_add (r.root, "phases", phases);

  if ((code = parse_options (&r, &argc, &argv)) != GO_ON)
    return code;
  signal (SIGALRM, on_alarm);
  alarm (r.timeout);
  if (!r.no_cache)
    cache_dir = napkin_module_cache_default_dir ();
  time_budget_ms = r.budget_ms;
  if (!r.no_energy && r.inject == NULL && !r.calibrate)
    nvml_thread = g_thread_new ("nvml", nvml_open_thread, &nvml);

  if (r.inject == NULL && !r.calibrate && !r.collectives && (code = lower_diagram (&r, argv[1])) != GO_ON)
    return code;
  if (r.dry_run)
    {
      if (r.gpus < 2 || r.d == NULL)
        {
          fprintf (stderr, "napkin-runner: --dry-run needs FILE and --gpus 2 or more\n");
          return EXIT_USAGE;
        }
      return run_gpus (r.d, (guint) r.gpus, r.arch_opt ? r.arch_opt : "sm_90a", r.model, NULL, r.generic, r.no_reference,
                       r.repeats, r.seed, TRUE, r.root);
    }
  if ((code = open_gpu (&r)) != GO_ON || (code = run_other_modes (&r)) != GO_ON || (code = compile_all (&r)) != GO_ON
      || (code = load_modules (&r)) != GO_ON || (code = plan_inputs (&r)) != GO_ON || (code = alloc_buffers (&r)) != GO_ON
      || (code = run_and_check (&r)) != GO_ON || (code = time_kernel (&r)) != GO_ON
      || (!r.no_energy && (code = measure_kernel_energy (&r)) != GO_ON) || (code = time_reference_and_free (&r)) != GO_ON)
    return code;
  progress (1.0, "Done");
  if (r.worst > r.bound)
    return finish (r.root, "wrong", "the kernel's result differs from the fp32 reference beyond the bound", EXIT_FAILED);
  return finish (r.root, "ok", NULL, EXIT_OK);
}
