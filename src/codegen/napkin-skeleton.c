/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include <string.h>

#include "napkin-codegen-private.h"
#include "napkin-kernels.h"

/* Strong skeletons for recognised kernels (the .cu files of kernels/), with their tile sizes,
 * stages and warps taken from the relabeling. A kernel that does not fit a
 * skeleton's conditions goes to the generic printer, with a note saying why. */

#define MAX_DYNAMIC_SMEM (227 * 1024)

typedef NapkinSkeletonParam Param;

char *
_napkin_skeleton_instantiate (const char *template,
                              Param      *params,
                              guint       n_params)
{
  GString *s = g_string_new (template);

  for (guint i = 0; i < n_params; i++)
    {
      g_autofree char *key = g_strdup_printf ("@%s@", params[i].key);

      g_string_replace (s, key, params[i].value, 0);
      g_free (params[i].value);
    }
  return g_string_free (s, FALSE);
}

static int
buffer_for_tensor (const NapkinIrProgram *program,
                   NapkinBufRole          role,
                   int                    tensor)
{
  for (guint b = 0; b < program->buffers->len; b++)
    {
      const NapkinIrBuffer *buf = napkin_ir_buffer (program, b);

      if (buf->role == role && buf->tensor == tensor)
        return b;
    }
  return -1;
}

/* The inner (register) region directly inside the kernel's region, if any. */
static const NapkinRegion *
inner_region (NapkinDiagram      *d,
              const NapkinRegion *outer)
{
  for (guint r = 0; r < napkin_diagram_n_regions (d); r++)
    {
      const NapkinRegion *cand = napkin_diagram_region (d, r);
      gboolean inside = cand != outer && cand->level > outer->level;

      for (guint i = 0; inside && i < cand->nodes->len; i++)
        inside = napkin_region_has_node (outer, g_ptr_array_index (cand->nodes, i));
      if (inside)
        return cand;
    }
  return NULL;
}

/* After the wgmma skeleton refused (`hopper`), both reasons. */
#define REFUSE(...) do { g_autofree char *why_ = g_strdup_printf (__VA_ARGS__);                       \
                         *note = g_strdup_printf ("%s%sgemm-mma skeleton not used: %s", hopper ? hopper : "", \
                                                  hopper ? "; " : "", why_);                          \
                         return FALSE; } while (0)

static gboolean
try_gemm (const NapkinIrProgram *program,
          const NapkinIrKernel  *kernel,
          NapkinCudaModule      *module,
          const int             *slot,
          const char            *prefix,
          guint                  index,
          GString               *out,
          char                 **note)
{
  NapkinDiagram *d = program->diagram;
  const NapkinRegion *region = napkin_diagram_region (d, kernel->region);
  const NapkinRegion *inner;
  const NapkinNode *mm, *a_node, *b_node, *c_node;
  int n, a_src, b_src, a_buf, b_buf, c_buf;
  const NapkinTensor *A, *B, *C;
  guint n_consumers;
  const guint *consumers;
  gint64 M, N, K, BM = 0, BN = 0, BK = 0, WM = 0, WN = 0, stages, smem, warps;
  NapkinCudaKernel *ck;
  g_autofree char *name = NULL;
  g_autofree char *hopper = NULL;
  char *text;

  if (region->nodes->len != 1)
    return FALSE;
  n = napkin_diagram_find_node (d, g_ptr_array_index (region->nodes, 0));
  mm = napkin_diagram_node (d, n);
  if (mm->kind != NAPKIN_OP_CONTRACT)
    return FALSE;
  a_src = napkin_diagram_input_source (d, n, 0);
  b_src = napkin_diagram_input_source (d, n, 1);
  a_node = napkin_diagram_node (d, a_src);
  b_node = napkin_diagram_node (d, b_src);
  consumers = napkin_diagram_consumers (d, n, &n_consumers);
  if (a_node->kind != NAPKIN_OP_INPUT || b_node->kind != NAPKIN_OP_INPUT || n_consumers != 1)
    REFUSE ("its operands must be inputs and its result one output");
  c_node = napkin_diagram_node (d, consumers[0]);
  if (c_node->kind != NAPKIN_OP_OUTPUT)
    REFUSE ("its result must be an output");
  A = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, a_node->tensor));
  B = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, b_node->tensor));
  C = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, c_node->tensor));
  if (g_strv_length (A->axes) != 2 || g_strv_length (B->axes) != 2 || g_strv_length (C->axes) != 2)
    REFUSE ("A, B and C must be matrices");
  /* A[m,k]·B[k,n] → C[m,n], each row-major with the last axis contiguous. */
  if (!g_str_equal (A->axes[1], B->axes[0]) || !g_str_equal (A->axes[0], C->axes[0])
      || !g_str_equal (B->axes[1], C->axes[1]))
    REFUSE ("the layouts must be A[m,k], B[k,n], C[m,n]");
  if ((A->dtype != NAPKIN_DTYPE_FP16 && A->dtype != NAPKIN_DTYPE_BF16) || B->dtype != A->dtype)
    REFUSE ("A and B must both be fp16 or both bf16");
  if (C->dtype != A->dtype && C->dtype != NAPKIN_DTYPE_FP32)
    REFUSE ("C must have A's type or fp32");

  M = napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, A->axes[0]));
  K = napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, A->axes[1]));
  N = napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, B->axes[1]));
  if (napkin_region_mark (region, A->axes[0], &BM) != NAPKIN_MARK_PARALLEL
      || napkin_region_mark (region, B->axes[1], &BN) != NAPKIN_MARK_PARALLEL
      || napkin_region_mark (region, A->axes[1], &BK) != NAPKIN_MARK_STREAM)
    REFUSE ("the region must cut %s and %s into parallel groups and stream %s", A->axes[0], B->axes[1], A->axes[1]);
  stages = MAX (region->stages, 2);

  inner = inner_region (d, region);
  if (inner != NULL)
    {
      if (napkin_region_mark (inner, A->axes[0], &WM) != NAPKIN_MARK_PARALLEL)
        WM = BM;
      if (napkin_region_mark (inner, B->axes[1], &WN) != NAPKIN_MARK_PARALLEL)
        WN = BN;
    }
  else
    {
      /* No warp tiles drawn: up to 8 warps of 64×32 (or less where the block is smaller). */
      WM = MIN (BM, 64);
      WN = MIN (BN, 32);
    }

  if (M % BM || N % BN || K % BK)
    REFUSE ("the sizes (%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ") must be multiples of "
            "the tiles (%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")", M, N, K, BM, BN, BK);

  a_buf = buffer_for_tensor (program, NAPKIN_BUF_INPUT, napkin_diagram_find_tensor (d, a_node->tensor));
  b_buf = buffer_for_tensor (program, NAPKIN_BUF_INPUT, napkin_diagram_find_tensor (d, b_node->tensor));
  c_buf = buffer_for_tensor (program, NAPKIN_BUF_OUTPUT, napkin_diagram_find_tensor (d, c_node->tensor));
  if (a_buf < 0 || b_buf < 0 || c_buf < 0)
    return FALSE;
  name = g_strdup_printf ("%sk%u", prefix, index);
  {
    /* On Hopper the wgmma skeleton first (napkin-skeleton-wgmma.c); its refusal prefixes the note. */
    const NapkinGemmShape shape = { region, mm, A->dtype, C->dtype, M, N, K, BM, BN, BK, stages,
                                    slot[a_buf], slot[b_buf], slot[c_buf] };

    if (_napkin_cuda_gemm_wgmma (&shape, module, name, out, &hopper))
      return TRUE;
  }
  if (BK % 16 || WM % 16 || WN % 16 || BM % WM || BN % WN)
    REFUSE ("the chunk of %s must be a multiple of 16 and the warp tile (%" G_GINT64_FORMAT "×%" G_GINT64_FORMAT
            ") a multiple of 16×16 dividing the block tile", A->axes[1], WM, WN);
  warps = (BM / WM) * (BN / WN);
  if (warps > 16)
    REFUSE ("%" G_GINT64_FORMAT " warps per block; at most 16", warps);
  if (WM * WN / 32 > 128)
    REFUSE ("a %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT " warp tile needs %" G_GINT64_FORMAT
            " accumulator registers per thread; at most 128", WM, WN, WM * WN / 32);
  smem = stages * (BM * (BK + 8) + BK * (BN + 8)) * 2;
  if (smem > MAX_DYNAMIC_SMEM)
    REFUSE ("%" G_GINT64_FORMAT " stages of %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
            "×%" G_GINT64_FORMAT " tiles need %" G_GINT64_FORMAT " bytes of shared memory; at most %d",
            stages, BM, BK, BK, BN, smem, MAX_DYNAMIC_SMEM);

  {
    Param params[] = {
      { "NAME", g_strdup (name) },
      { "BM", g_strdup_printf ("%" G_GINT64_FORMAT, BM) },
      { "BN", g_strdup_printf ("%" G_GINT64_FORMAT, BN) },
      { "BK", g_strdup_printf ("%" G_GINT64_FORMAT, BK) },
      { "WM", g_strdup_printf ("%" G_GINT64_FORMAT, WM) },
      { "WN", g_strdup_printf ("%" G_GINT64_FORMAT, WN) },
      { "STAGES", g_strdup_printf ("%" G_GINT64_FORMAT, stages) },
      /* Two blocks per SM when their shared memory fits: the compiler then keeps to 128 registers. */
      { "MINBLOCKS", g_strdup (2 * (smem + 1024) <= 228 * 1024 && WM * WN / 32 <= 64 ? "2" : "1") },
      { "M", g_strdup_printf ("%" G_GINT64_FORMAT, M) },
      { "N", g_strdup_printf ("%" G_GINT64_FORMAT, N) },
      { "K", g_strdup_printf ("%" G_GINT64_FORMAT, K) },
      { "AT", g_strdup (_napkin_cuda_ctype (A->dtype)) },
      { "CT", g_strdup (_napkin_cuda_ctype (C->dtype)) },
      { "MMA", g_strdup (A->dtype == NAPKIN_DTYPE_FP16 ? "f16" : "bf16") },
      { "A", g_strdup_printf ("%d", slot[a_buf]) },
      { "B", g_strdup_printf ("%d", slot[b_buf]) },
      { "C", g_strdup_printf ("%d", slot[c_buf]) },
    };
    g_autofree char *id = napkin_codegen_escape_comment (mm->id);
    g_autofree char *rname = napkin_codegen_escape_comment (region->name);

    text = _napkin_skeleton_instantiate (napkin_kernel_gemm_mma, params, G_N_ELEMENTS (params));
    g_string_append_printf (out, "\n/* Region %s at %s: %s as the gemm-mma skeleton (kernels/gemm-mma.cu) */\n",
                            rname, napkin_level_to_string (region->level), id);
    g_string_append (out, text);
    g_free (text);
  }

  ck = g_new0 (NapkinCudaKernel, 1);
  ck->name = g_steal_pointer (&name);
  ck->skeleton = g_strdup ("gemm-mma");
  ck->grid = (M / BM) * (N / BN);
  ck->threads = warps * 32;
  ck->smem_bytes = smem;
  ck->dynamic_smem = smem;
  ck->note = g_strdup_printf ("%s%sblock %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT ", chunk %" G_GINT64_FORMAT
                              ", %" G_GINT64_FORMAT " stages, %" G_GINT64_FORMAT " warps of %" G_GINT64_FORMAT
                              "×%" G_GINT64_FORMAT ", mma.sync m16n8k16", hopper ? hopper : "", hopper ? "; " : "",
                              BM, BN, BK, stages, warps, WM, WN);
  g_ptr_array_add (module->kernels, ck);
  return TRUE;
}


#undef REFUSE
/* After the wgmma skeleton refused (`hopper`), both reasons. */
#define REFUSE(...) do { g_autofree char *why_ = g_strdup_printf (__VA_ARGS__);                        \
                         *note = g_strdup_printf ("%s%sflash-mma skeleton not used: %s", hopper ? hopper : "", \
                                                  hopper ? "; " : "", why_);                           \
                         return FALSE; } while (0)

static gboolean
same_prefix (char **a,
             char **b,
             guint  n)
{
  for (guint i = 0; i < n; i++)
    if (!g_str_equal (a[i], b[i]))
      return FALSE;
  return TRUE;
}

static gboolean
try_flash (const NapkinIrProgram *program,
           const NapkinIrKernel  *kernel,
           NapkinCudaModule      *module,
           const int             *slot,
           const char            *prefix,
           guint                  index,
           GString               *out,
           char                 **note)
{
  NapkinDiagram *d = program->diagram;
  const NapkinRegion *region = napkin_diagram_region (d, kernel->region);
  int qk = -1, scale = -1, sm = -1, pv = -1;
  const NapkinNode *qn, *kn, *vn, *on;
  const NapkinTensor *Q, *K, *V, *O;
  guint n_consumers, rank;
  const guint *consumers;
  double alpha = 1.0;
  gint64 BQ = 0, BKV = 0, NQ, NKV, D, smem, batch = 1;
  int qs, ks, vs, os;
  NapkinCudaKernel *ck;
  g_autofree char *name = NULL;
  g_autofree char *hopper = NULL;

  for (guint i = 0; i < region->nodes->len; i++)
    {
      int n = napkin_diagram_find_node (d, g_ptr_array_index (region->nodes, i));
      const NapkinNode *node = napkin_diagram_node (d, n);

      if (node->kind == NAPKIN_OP_SOFTMAX)
        sm = n;
      else if (node->kind == NAPKIN_OP_MAP && node->fn == NAPKIN_FN_SCALE)
        scale = n;
      else if (node->kind != NAPKIN_OP_CONTRACT)
        return FALSE;
    }
  if (sm < 0 || region->nodes->len != (scale >= 0 ? 4u : 3u))
    return FALSE;
  consumers = napkin_diagram_consumers (d, sm, &n_consumers);
  if (n_consumers != 1)
    return FALSE;
  pv = consumers[0];
  qk = napkin_diagram_input_source (d, scale >= 0 ? scale : sm, 0);
  if (scale >= 0)
    {
      if (napkin_diagram_input_source (d, sm, 0) != scale)
        return FALSE;
      alpha = napkin_diagram_node (d, scale)->alpha;
    }
  if (napkin_diagram_node (d, qk)->kind != NAPKIN_OP_CONTRACT || napkin_diagram_node (d, pv)->kind != NAPKIN_OP_CONTRACT
      || !napkin_region_has_node (region, napkin_diagram_node (d, qk)->id)
      || !napkin_region_has_node (region, napkin_diagram_node (d, pv)->id)
      || napkin_diagram_input_source (d, pv, 0) != sm)
    return FALSE;

  qn = napkin_diagram_node (d, napkin_diagram_input_source (d, qk, 0));
  kn = napkin_diagram_node (d, napkin_diagram_input_source (d, qk, 1));
  vn = napkin_diagram_node (d, napkin_diagram_input_source (d, pv, 1));
  consumers = napkin_diagram_consumers (d, pv, &n_consumers);
  if (qn->kind != NAPKIN_OP_INPUT || kn->kind != NAPKIN_OP_INPUT || vn->kind != NAPKIN_OP_INPUT || n_consumers != 1
      || napkin_diagram_node (d, consumers[0])->kind != NAPKIN_OP_OUTPUT)
    REFUSE ("Q, K and V must be inputs and the output one tensor");
  on = napkin_diagram_node (d, consumers[0]);
  Q = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, qn->tensor));
  K = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, kn->tensor));
  V = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, vn->tensor));
  O = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, on->tensor));
  rank = g_strv_length (Q->axes);
  if (rank < 2 || g_strv_length (K->axes) != rank || g_strv_length (V->axes) != rank || g_strv_length (O->axes) != rank
      || !same_prefix (Q->axes, K->axes, rank - 2) || !same_prefix (Q->axes, V->axes, rank - 2)
      || !same_prefix (Q->axes, O->axes, rank - 1) || !g_str_equal (Q->axes[rank - 1], K->axes[rank - 1])
      || !g_str_equal (K->axes[rank - 2], V->axes[rank - 2]) || !g_str_equal (Q->axes[rank - 1], V->axes[rank - 1])
      || !g_str_equal (Q->axes[rank - 1], O->axes[rank - 1])
      || !g_str_equal (napkin_diagram_node (d, sm)->axis, K->axes[rank - 2]))
    REFUSE ("the layouts must be Q[…,q,d], K[…,k,d], V[…,k,d], O[…,q,d] with softmax over k");
  if ((Q->dtype != NAPKIN_DTYPE_FP16 && Q->dtype != NAPKIN_DTYPE_BF16) || K->dtype != Q->dtype || V->dtype != Q->dtype)
    REFUSE ("Q, K and V must all be fp16 or all bf16");
  if (O->dtype != Q->dtype && O->dtype != NAPKIN_DTYPE_FP32)
    REFUSE ("O must have Q's type or fp32");
  for (guint i = 0; i + 2 < rank; i++)
    {
      gint64 g = 0;
      NapkinMarkKind mk = napkin_region_mark (region, Q->axes[i], &g);

      if (!(mk == NAPKIN_MARK_PARALLEL && g == 1)
          && napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, Q->axes[i])) != 1)
        REFUSE ("batch axis %s must be parallel in groups of 1", Q->axes[i]);
    }
  if (napkin_region_mark (region, Q->axes[rank - 2], &BQ) != NAPKIN_MARK_PARALLEL
      || napkin_region_mark (region, K->axes[rank - 2], &BKV) != NAPKIN_MARK_STREAM
      || napkin_region_mark (region, Q->axes[rank - 1], NULL) != NAPKIN_MARK_WHOLE)
    REFUSE ("the region must group %s, stream %s and keep %s whole", Q->axes[rank - 2], K->axes[rank - 2],
            Q->axes[rank - 1]);
  NQ = napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, Q->axes[rank - 2]));
  NKV = napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, K->axes[rank - 2]));
  D = napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, Q->axes[rank - 1]));
  qs = buffer_for_tensor (program, NAPKIN_BUF_INPUT, napkin_diagram_find_tensor (d, qn->tensor));
  ks = buffer_for_tensor (program, NAPKIN_BUF_INPUT, napkin_diagram_find_tensor (d, kn->tensor));
  vs = buffer_for_tensor (program, NAPKIN_BUF_INPUT, napkin_diagram_find_tensor (d, vn->tensor));
  os = buffer_for_tensor (program, NAPKIN_BUF_OUTPUT, napkin_diagram_find_tensor (d, on->tensor));
  if (qs < 0 || ks < 0 || vs < 0 || os < 0)
    return FALSE;
  name = g_strdup_printf ("%sk%u", prefix, index);
  for (guint i = 0; i + 2 < rank; i++)
    batch *= napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, Q->axes[i]));
  {
    /* On Hopper the wgmma skeleton first (napkin-skeleton-flash-wgmma.c); its refusal prefixes the note. */
    const NapkinFlashShape shape = { region, Q->dtype, O->dtype, batch, NQ, NKV, D, BQ, BKV, MAX (region->stages, 2),
                                     alpha, slot[qs], slot[ks], slot[vs], slot[os] };

    if (_napkin_cuda_flash_wgmma (&shape, module, name, out, &hopper))
      return TRUE;
  }
  if (D != 64 && D != 128)
    REFUSE ("head size %" G_GINT64_FORMAT "; the skeleton takes 64 or 128", D);
  if (BQ % 16 || BQ / 16 > 16 || BKV % 16 || NQ % BQ || NKV % BKV)
    REFUSE ("groups of %" G_GINT64_FORMAT " queries and chunks of %" G_GINT64_FORMAT " keys must be multiples of 16 "
            "dividing %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " (and at most 256 queries)", BQ, BKV, NQ, NKV);
  smem = (BQ + 4 * BKV) * (D + 8) * 2;
  if (smem > MAX_DYNAMIC_SMEM)
    REFUSE ("%" G_GINT64_FORMAT " bytes of shared memory; at most %d", smem, MAX_DYNAMIC_SMEM);

  {
    char alpha_text[G_ASCII_DTOSTR_BUF_SIZE];
    Param params[] = {
      { "NAME", g_strdup (name) },
      { "BQ", g_strdup_printf ("%" G_GINT64_FORMAT, BQ) },
      { "BKV", g_strdup_printf ("%" G_GINT64_FORMAT, BKV) },
      { "D", g_strdup_printf ("%" G_GINT64_FORMAT, D) },
      { "NQ", g_strdup_printf ("%" G_GINT64_FORMAT, NQ) },
      { "NKV", g_strdup_printf ("%" G_GINT64_FORMAT, NKV) },
      { "ALPHA", g_strdup (g_ascii_formatd (alpha_text, sizeof alpha_text, "%.9e", alpha)) },
      { "T", g_strdup (_napkin_cuda_ctype (Q->dtype)) },
      { "OT", g_strdup (_napkin_cuda_ctype (O->dtype)) },
      { "MMA", g_strdup (Q->dtype == NAPKIN_DTYPE_FP16 ? "f16" : "bf16") },
      { "QS", g_strdup_printf ("%d", slot[qs]) },
      { "KS", g_strdup_printf ("%d", slot[ks]) },
      { "VS", g_strdup_printf ("%d", slot[vs]) },
      { "OS", g_strdup_printf ("%d", slot[os]) },
    };
    g_autofree char *rname = napkin_codegen_escape_comment (region->name);
    g_autofree char *text = _napkin_skeleton_instantiate (napkin_kernel_flash_mma, params, G_N_ELEMENTS (params));

    g_string_append_printf (out, "\n/* Region %s at %s: fused attention as the flash-mma skeleton "
                                 "(kernels/flash-mma.cu) */\n", rname, napkin_level_to_string (region->level));
    g_string_append (out, text);

    ck = g_new0 (NapkinCudaKernel, 1);
    ck->name = g_steal_pointer (&name);
    ck->skeleton = g_strdup ("flash-mma");
    ck->grid = batch * (NQ / BQ);
    ck->threads = BQ / 16 * 32;
    ck->smem_bytes = smem;
    ck->dynamic_smem = smem;
    ck->note = g_strdup_printf ("%s%s%" G_GINT64_FORMAT " queries per block, keys in chunks of %" G_GINT64_FORMAT
                                " (double-buffered), %" G_GINT64_FORMAT " warps, online softmax in registers",
                                hopper ? hopper : "", hopper ? "; " : "", BQ, BKV, BQ / 16);
    g_ptr_array_add (module->kernels, ck);
  }
  return TRUE;
}

#undef REFUSE
#define REFUSE(...) do { *note = g_strdup_printf ("rows skeleton not used: " __VA_ARGS__); return FALSE; } while (0)

/* A map of `prev` with a vector input over `axis`: returns that input's node, or -1. */
static int
vector_operand (NapkinDiagram *d,
                int            map,
                int            prev,
                const char    *axis)
{
  for (int p = 0; p < 2; p++)
    {
      int other = napkin_diagram_input_source (d, map, 1 - p);
      const NapkinNode *on;
      const NapkinTensor *t;

      if (napkin_diagram_input_source (d, map, p) != prev || other < 0)
        continue;
      on = napkin_diagram_node (d, other);
      if (on->kind != NAPKIN_OP_INPUT)
        return -1;
      t = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, on->tensor));
      if (g_strv_length (t->axes) == 1 && g_str_equal (t->axes[0], axis))
        return other;
      return -1;
    }
  return -1;
}

static gboolean
try_rows (const NapkinIrProgram *program,
          const NapkinIrKernel  *kernel,
          NapkinCudaModule      *module,
          const int             *slot,
          const char            *prefix,
          guint                  index,
          GString               *out,
          char                 **note)
{
  NapkinDiagram *d = program->diagram;
  const NapkinRegion *region = napkin_diagram_region (d, kernel->region);
  int f = -1, last, gamma = -1, beta = -1, x_node;
  const NapkinNode *fn, *yn;
  const NapkinTensor *X, *Y, *Gt = NULL;
  guint n_consumers, chain = 1;
  const guint *consumers;
  gint64 C, rows, R = 0, threads;
  int op;
  NapkinCudaKernel *ck;
  g_autofree char *name = NULL;

  for (guint i = 0; i < region->nodes->len; i++)
    {
      int n = napkin_diagram_find_node (d, g_ptr_array_index (region->nodes, i));
      const NapkinNode *node = napkin_diagram_node (d, n);

      if (node->kind == NAPKIN_OP_SOFTMAX || node->kind == NAPKIN_OP_NORMALIZE)
        {
          if (f >= 0)
            return FALSE;
          f = n;
        }
      else if (node->kind != NAPKIN_OP_MAP)
        return FALSE;
    }
  if (f < 0)
    return FALSE;
  fn = napkin_diagram_node (d, f);
  x_node = napkin_diagram_input_source (d, f, 0);
  if (napkin_diagram_node (d, x_node)->kind != NAPKIN_OP_INPUT)
    REFUSE ("the %s must read an input", napkin_op_kind_to_string (fn->kind));
  X = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, napkin_diagram_node (d, x_node)->tensor));
  if (g_strv_length (X->axes) != 2 || !g_str_equal (X->axes[1], fn->axis))
    REFUSE ("the input must be a matrix X[r,c] with the %s over its last axis", napkin_op_kind_to_string (fn->kind));

  /* f, then ·γ[c], then +β[c] (normalisations only), each feeding only the next. */
  last = f;
  for (;;)
    {
      int next;
      const NapkinNode *nn;

      consumers = napkin_diagram_consumers (d, last, &n_consumers);
      if (n_consumers != 1)
        REFUSE ("each step must feed exactly one operation");
      next = consumers[0];
      nn = napkin_diagram_node (d, next);
      if (!napkin_region_has_node (region, nn->id))
        break;
      if (fn->kind != NAPKIN_OP_NORMALIZE || nn->kind != NAPKIN_OP_MAP)
        return FALSE;
      if (nn->fn == NAPKIN_FN_MUL && gamma < 0 && beta < 0 && (gamma = vector_operand (d, next, last, X->axes[1])) >= 0)
        ;
      else if (nn->fn == NAPKIN_FN_ADD && beta < 0 && (beta = vector_operand (d, next, last, X->axes[1])) >= 0)
        ;
      else
        REFUSE ("after the normalisation only ·γ[%s] then +β[%s] are fused", X->axes[1], X->axes[1]);
      last = next;
      chain++;
    }
  if (chain != region->nodes->len)
    return FALSE;
  yn = napkin_diagram_node (d, consumers[0]);
  if (yn->kind != NAPKIN_OP_OUTPUT)
    REFUSE ("the result must be an output");
  Y = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, yn->tensor));
  if (g_strv_length (Y->axes) != 2 || !g_str_equal (Y->axes[0], X->axes[0]) || !g_str_equal (Y->axes[1], X->axes[1]))
    REFUSE ("the output must be laid out like the input");
  if (X->dtype != NAPKIN_DTYPE_FP16 && X->dtype != NAPKIN_DTYPE_BF16)
    REFUSE ("the input must be fp16 or bf16");
  if (Y->dtype != X->dtype && Y->dtype != NAPKIN_DTYPE_FP32)
    REFUSE ("the output must have the input's type or fp32");
  if (gamma >= 0)
    Gt = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, napkin_diagram_node (d, gamma)->tensor));
  if ((Gt && Gt->dtype != X->dtype)
      || (beta >= 0 && napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, napkin_diagram_node (d, beta)->tensor))->dtype != X->dtype))
    REFUSE ("γ and β must have the input's type");
  if (napkin_region_mark (region, X->axes[0], &R) != NAPKIN_MARK_PARALLEL
      || napkin_region_mark (region, X->axes[1], NULL) != NAPKIN_MARK_WHOLE)
    REFUSE ("the region must group %s and keep %s whole", X->axes[0], X->axes[1]);
  rows = napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, X->axes[0]));
  C = napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, X->axes[1]));
  /* the region's threads per block where it sets them (tune tries them: docs/model.md
   * §7c), else 256 halved until 8·T divides C */
  if (region->threads > 0)
    {
      threads = region->threads;
      if (threads % 32 != 0 || threads > 1024 || C % (threads * 8) != 0 || C / threads > 128)
        REFUSE ("threads: %" G_GINT64_FORMAT " threads per block must be whole warps, at most 1024, with 8·threads "
                "dividing the rows of %" G_GINT64_FORMAT " and at most 128 values each", threads, C);
    }
  else
    for (threads = 256; threads >= 32 && C % (threads * 8) != 0; threads /= 2)
      ;
  if (threads < 32 || C / threads > 128 || rows % R)
    REFUSE ("rows of %" G_GINT64_FORMAT " must split into 16-byte pieces over 32 to 256 threads with at most "
            "128 values each, and the %" G_GINT64_FORMAT " rows into groups of %" G_GINT64_FORMAT, C, rows, R);
  op = fn->kind == NAPKIN_OP_SOFTMAX ? 0 : fn->norm == NAPKIN_NORM_LAYERNORM ? 1 : 2;

  name = g_strdup_printf ("%sk%u", prefix, index);
  {
    char eps[G_ASCII_DTOSTR_BUF_SIZE];
    int xs = buffer_for_tensor (program, NAPKIN_BUF_INPUT, napkin_diagram_find_tensor (d, napkin_diagram_node (d, x_node)->tensor));
    int ys = buffer_for_tensor (program, NAPKIN_BUF_OUTPUT, napkin_diagram_find_tensor (d, yn->tensor));
    int gs = gamma >= 0 ? buffer_for_tensor (program, NAPKIN_BUF_INPUT, napkin_diagram_find_tensor (d, napkin_diagram_node (d, gamma)->tensor)) : -1;
    int bs = beta >= 0 ? buffer_for_tensor (program, NAPKIN_BUF_INPUT, napkin_diagram_find_tensor (d, napkin_diagram_node (d, beta)->tensor)) : -1;
    Param params[] = {
      { "NAME", g_strdup (name) },
      { "C", g_strdup_printf ("%" G_GINT64_FORMAT, C) },
      { "R", g_strdup_printf ("%" G_GINT64_FORMAT, R) },
      { "THREADS", g_strdup_printf ("%" G_GINT64_FORMAT, threads) },
      { "OP", g_strdup_printf ("%d", op) },
      { "HAS_GAMMA", g_strdup (gamma >= 0 ? "1" : "0") },
      { "HAS_BETA", g_strdup (beta >= 0 ? "1" : "0") },
      { "EPS", g_strdup (g_ascii_formatd (eps, sizeof eps, "%.9e", op ? fn->eps : 0.0)) },
      { "T", g_strdup (_napkin_cuda_ctype (X->dtype)) },
      { "OT", g_strdup (_napkin_cuda_ctype (Y->dtype)) },
      { "OUT16", g_strdup (Y->dtype == NAPKIN_DTYPE_FP32 ? "0" : "1") },
      { "XS", g_strdup_printf ("%d", slot[xs]) },
      { "YS", g_strdup_printf ("%d", slot[ys]) },
      { "GS", g_strdup_printf ("%d", gs >= 0 ? slot[gs] : 0) },
      { "BS", g_strdup_printf ("%d", bs >= 0 ? slot[bs] : 0) },
    };
    g_autofree char *rname = napkin_codegen_escape_comment (region->name);
    g_autofree char *text = _napkin_skeleton_instantiate (napkin_kernel_rows, params, G_N_ELEMENTS (params));

    if (xs < 0 || ys < 0)
      return FALSE;
    g_string_append_printf (out, "\n/* Region %s at %s: %s as the rows skeleton (kernels/rows.cu) */\n", rname,
                            napkin_level_to_string (region->level), op == 0 ? "softmax" : "normalisation");
    g_string_append (out, text);
  }

  ck = g_new0 (NapkinCudaKernel, 1);
  ck->name = g_steal_pointer (&name);
  ck->skeleton = g_strdup ("rows");
  ck->grid = rows / R;
  ck->threads = threads;
  ck->smem_bytes = 128;
  ck->note = g_strdup_printf ("%" G_GINT64_FORMAT " rows per block, %" G_GINT64_FORMAT " threads, %" G_GINT64_FORMAT
                              " values per thread in registers", R, threads, C / threads);
  g_ptr_array_add (module->kernels, ck);
  return TRUE;
}

gboolean
_napkin_cuda_try_skeleton (const NapkinIrProgram *program,
                           const NapkinIrKernel  *kernel,
                           NapkinCudaModule      *module,
                           const int             *slot,
                           const char            *prefix,
                           guint                  index,
                           GString               *out,
                           char                 **note)
{
  *note = NULL;
  if (kernel->region < 0)
    return FALSE;
  if (try_gemm (program, kernel, module, slot, prefix, index, out, note) || *note != NULL)
    return *note == NULL;
  if (try_flash (program, kernel, module, slot, prefix, index, out, note) || *note != NULL)
    return *note == NULL;
  return try_rows (program, kernel, module, slot, prefix, index, out, note);
}
