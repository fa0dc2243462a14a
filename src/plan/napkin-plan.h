/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <json-c/json.h>

#include "napkin-arch.h"
#include "napkin-diagram.h"

G_BEGIN_DECLS

/* The kernel plan (docs/plan.md): for a relabeled diagram and an architecture, one
 * decision per kernel — its path, its tiles and stages, how it treats tiles that run
 * past the edges, which operations it fuses before and after its contraction, and its
 * shared-memory and register footprint. The model prices the plan, the code generator
 * prints it, the pane, `analyze`, `tune` and `plan` show it. Nothing else decides a
 * path or a footprint. */

typedef enum
{
  NAPKIN_PATH_WGMMA,     /* Hopper warpgroup tensor-core instructions (sm_90a), TMA loads */
  NAPKIN_PATH_MMA,       /* warp-level mma.sync (sm_80 and later), cp.async loads */
  NAPKIN_PATH_SIMT,      /* CUDA cores with vector loads: rows, elementwise, repacks */
  NAPKIN_PATH_GENERIC,   /* the generic lowering: correct, not fast; the kernel says why */
  NAPKIN_N_PATHS
} NapkinPath;

typedef enum
{
  NAPKIN_PLAN_GEMM,            /* one contraction, with maps fused before/after it */
  NAPKIN_PLAN_ATTENTION,       /* Q·Kᵀ → [scale] → softmax → ·V, online softmax */
  NAPKIN_PLAN_ROWS,            /* softmax / normalize / reduce along a row, maps fused */
  NAPKIN_PLAN_ELEMENTWISE,     /* maps only */
  NAPKIN_PLAN_SPLIT_REDUCE,    /* sums a split-K GEMM's fp32 partials, runs its epilogue */
  NAPKIN_PLAN_REPACK,          /* copies an operand to an aligned or K-major scratch buffer */
  NAPKIN_PLAN_GENERIC,         /* the generic lowering of the region or operation */
  NAPKIN_PLAN_ATTENTION_COMBINE, /* merges a split-KV attention's partial outputs (u.att) */
  NAPKIN_PLAN_ATTENTION_BACKWARD, /* dQ, dK, dV of an attention, scores recomputed per tile (u.bwd) */
  NAPKIN_N_PLAN_KINDS
} NapkinPlanKind;

/* A device-memory buffer a planned kernel reads or writes. */
typedef struct
{
  int         node;      /* ≥ 0: the value of this diagram node in device memory (an input
                            node's tensor, an output's tensor, or an intermediate) */
  int         scratch;   /* ≥ 0 (node −1): the plan's scratch buffer of that index */
  NapkinDtype dtype;
} NapkinPlanBuffer;

/* One element-wise map fused into a kernel, applied to the running fp32 value x:
 * x = fn (x) or, when has_other, x = fn (x, y) (other_first: fn (y, x)) with y read
 * from `other` at  b·stride[0] + i·stride[1] + j·stride[2]  elements for the kernel's
 * (batch, row, column) index (GEMM: (batch, m, n); rows: (0, row, column);
 * elementwise: the flat index as (0, 0, i) unless `strides_nd` is used). A stride of
 * 0 broadcasts (a bias [n] has stride {0, 0, 1}). */
typedef struct
{
  int              node;          /* the map node */
  NapkinMapFn      fn;
  double           alpha;         /* scale */
  NapkinDtype      dtype;         /* cast: the type it rounds to */
  gboolean         has_other;
  gboolean         other_first;
  NapkinPlanBuffer other;
  gint64           stride[3];
  gint64           row_div;       /* rows: the operand's row is the row / row_div (a
                                     modulation [b, e] of rows [b, s]); 0 or 1: the row */
  /* element-wise: a causal or window mask node, not a map: the element of flat output
   * index f is at row (f / mask_row_stride) % mask_rows and column (f / mask_col_stride)
   * % mask_cols, kept where napkin_mask_keeps, else −∞; a tensor mask (mask
   * NAPKIN_MASK_TENSOR) reads its tensor as `other`: a float one is added, an integer
   * one keeps the value where it is not 0, else −∞ */
  gboolean         is_mask;
  NapkinMaskKind   mask;
  gint64           mask_offset, mask_left, mask_right;
  gint64           mask_row_stride, mask_rows, mask_col_stride, mask_cols;
  /* element-wise, a rotary embedding (docs/plan.md, "Rotary as one pass"): the other
   * operand is read rotated by half along y's innermost axis, runs of other_rotate
   * elements (element j reads j + n/2 negated below n/2, j − n/2 above: rotate_half),
   * then multiplied by other2, read through the element-wise kernel's
   * other_strides[other2_index] */
  gint64           other_rotate;
  gboolean         has_other2;
  NapkinPlanBuffer other2;
  guint            other2_index;
} NapkinPlanMap;

/* C[b, m, n] (=) epilogue (Σ_k A[b, m, k] · B[b, k, n]), fp32 accumulation.
 * A is stored K-major (A[…, m, k], k contiguous) or M-major (A[…, k, m]); B K-major
 * (B[…, n, k], the nn.Linear weight) or N-major (B[…, k, n]); C is N-contiguous
 * (a diagram with C[…, n, m] is planned as Cᵀ = Bᵀ·Aᵀ, `swapped`). Leading
 * dimensions and batch strides are in elements; a batch stride of 0 shares the
 * operand across the batch. Tiles that run past M, N or K are handled in the kernel:
 * TMA and cp.async fill out-of-bounds elements with zeros, stores are bounded. */
typedef struct
{
  int              node;                  /* the contraction */
  NapkinDtype      ab_dtype, c_dtype;
  gint64           batch, M, N, K;
  gboolean         a_kmajor, b_kmajor;
  gint64           lda, ldb, ldc;         /* elements between consecutive stored rows */
  gint64           a_bstride, b_bstride, c_bstride;
  NapkinPlanBuffer a, b, c;
  gboolean         swapped;
  guint            a_piece, b_piece;      /* mma: bytes each copy of A (of B) reads, 8 or 4
                                             where its rows lie only that far apart and it
                                             is read in place; 0: 16 */

  gint64           BM, BN, BK;            /* block tile of C; K in chunks of BK */
  guint            stages;                /* shared-memory buffers of A and B chunks */
  guint            consumers;             /* wgmma: consumer warpgroups (1 or 2) */
  gboolean         pingpong;              /* wgmma, 2 consumers: each takes whole tiles in
                                             turn (BM 64 or 128), its epilogue under the
                                             other's main loop */
  gint64           WM, WN;                /* mma: warp tile */
  guint            split_k;               /* ≥ 1; > 1: fp32 partials into scratch `partials`,
                                             summed by the next (SPLIT_REDUCE) kernel */
  int              partials;              /* scratch index of the partials, or −1 */
  gboolean         persistent;            /* at most one block per SM, looping over tiles */
  guint            cluster_m;             /* wgmma: blocks of a cluster one above the other
                                             (0 or 1: none; 2), each copying half of B's
                                             chunk to both by TMA multicast (docs/plan.md,
                                             "Clusters") */
  gboolean         c_tma;                 /* C stored by TMA (aligned rows; maps, if any, of
                                             the value alone, applied in registers) */
  GArray          *epilogue;              /* NapkinPlanMap, in order, on the fp32 result */
  /* A gated pair (docs/plan.md, "Gated GEMM"): a second product G = A·B2 over the same A
   * (the gate of a SwiGLU), computed beside this one in the same tiles; `gate` (maps of
   * the value alone) then `join` combine them, join (C, gate (G)), before the epilogue.
   * `join` is a map of two values (its other operand is G, not read from memory). */
  gboolean         dual;
  int              node2;                 /* the gate's contraction */
  NapkinPlanBuffer b2;
  gint64           ldb2, b2_bstride;
  GArray          *gate;                  /* NapkinPlanMap on G's fp32 value */
  NapkinPlanMap    join;
} NapkinPlanGemm;

/* Y[r, c] = epilogue (f (prologue (X[r, c]))) along each row, f one of softmax,
 * layernorm, rmsnorm, or a reduction (then Y[r] has no column).
 *
 * Two forms (docs/plan.md, "Rows over any axis"). Contiguous (`inner` 1): the reduced
 * axis is the last of X; row r at r·ldx, y's at r·ldy, a map's operand at
 * (0, row, column) through `stride`. Strided (`inner` > 1): the reduced axis j < cols has
 * `inner` elements between neighbours; the axes after it flatten into the column
 * c < inner (contiguous), those before it into o < outer, so rows = outer · inner
 * reductions; x at o·ldx + j·inner + c, y at o·ldy + j·y_stride + c (a reduction's at
 * o·ldy + c), a map's operand at (o, c, j) through `stride`. A block owns
 * `cols_per_block` columns of one o, `cols_per_block / vec` threads across them and
 * `threads_per_row` threads down the reduced axis. */
typedef struct
{
  int              node;                  /* the softmax, normalize or reduce */
  NapkinOpKind     op;
  NapkinNormKind   norm;
  NapkinReduceOp   reduce;
  double           eps;
  NapkinDtype      x_dtype, y_dtype;
  gint64           rows, cols, ldx, ldy;
  NapkinPlanBuffer x, y;
  GArray          *prologue;              /* NapkinPlanMap on x before f */
  GArray          *epilogue;              /* NapkinPlanMap after f (γ, β, …) */
  gint64           rows_per_block;
  guint            threads;
  guint            threads_per_row;       /* the team that shares one row: 1 … 1024, a power of two */
  guint            vec;                   /* elements per vector load (16 bytes of x) */
  gboolean         one_pass;              /* the row stays on chip: x read once */
  gboolean         smem_row;              /* the row is kept in shared memory (else registers) */
  gint64           outer, inner;          /* strided: rows = outer · inner (contiguous: rows, 1) */
  gint64           y_stride;              /* strided: y's elements between neighbours along the axis */
  gint64           cols_per_block;        /* strided: the columns c one block owns */
  gboolean         l2_reread;             /* two passes: the blocks in flight keep their rows in L2,
                                             so the second read hits it (else device memory) */
  guint            split;                 /* strided, two passes or a reduction: > 1 chunks of the axis
                                             `chunk` long, each a block's, in two launches (their
                                             statistics into scratch `partials`, then the output) */
  gint64           chunk;
  int              partials;              /* scratch: fp32 pairs [split][outer][inner], or −1 */
} NapkinPlanRows;

/* Y[i] = maps (X[i]) over the output's elements, each operand read through strides
 * per output axis (0: broadcast). */
typedef struct
{
  guint            rank;
  gint64           dims[NAPKIN_MAX_RANK];
  NapkinPlanBuffer x, y;
  gint64           x_strides[NAPKIN_MAX_RANK];
  NapkinDtype      x_dtype, y_dtype;
  GArray          *maps;                  /* NapkinPlanMap; `stride` unused, others by other_strides */
  GPtrArray       *other_strides;         /* gint64[NAPKIN_MAX_RANK] per map (NULL entry: unary) */
  guint            threads;
  guint            vec;
} NapkinPlanElementwise;

/* Which keys a query sees (docs/plan.md, "Attention kernels"): query i and key j with
 * diagonal δ = i + mask_offset (mask_offset = NKV − NQ aligns the last query with the last
 * key, as a KV-cache prefill does). */
typedef enum
{
  NAPKIN_ATTN_MASK_NONE,       /* every key */
  NAPKIN_ATTN_MASK_CAUSAL,     /* j ≤ δ */
  NAPKIN_ATTN_MASK_WINDOW,     /* δ − window_left ≤ j ≤ δ + window_right */
  NAPKIN_N_ATTN_MASKS
} NapkinAttnMask;

/* What a score operand does to the scores (docs/plan.md, "Score operands"). */
typedef enum
{
  NAPKIN_ATTN_SCORE_BIAS,      /* s += coef · x (a relative-position bias, an additive mask) */
  NAPKIN_ATTN_SCORE_KEEP,      /* s = x ≠ 0 ? s : −∞ (boolean keep flags, int8) */
  NAPKIN_N_ATTN_SCORES
} NapkinAttnScoreKind;

#define NAPKIN_ATTN_MAX_SCORES 4

/* A tensor read from device memory and applied to the scores between Q·Kᵀ and the
 * softmax (docs/plan.md, "Score operands"): element (lead…, group g, query i, key j) at
 *   Σ lead[l]·idx_l + g·group + i·row + j
 * (the key axis contiguous; a stride of 0 broadcasts). `coef` is in units of the raw
 * score Q·Kᵀ: the kernel adds coef·x to it before the softmax's scale α, so the score
 * the softmax sees gains (α·coef)·x, the operand's weight in the diagram. A consumer warp
 * stages its rows of each key chunk in shared memory (`rows` 16, or 1 when every row of
 * the block reads the same one), `pitch` bytes apart, `offset` into the warp's area, in
 * pieces of `vec` bytes (cp.async where ≥ 4). With `scan` (one operand at most: keep
 * flags, or a bias of −∞, shared by every row of a block, a padding mask [b, k]) the
 * block first reads its row and computes only the key chunks between the first and the
 * last key it keeps. */
typedef struct
{
  NapkinAttnScoreKind kind;
  int                 node;              /* the map or mask that applies it */
  NapkinPlanBuffer    x;
  NapkinDtype         dtype;             /* fp16, bf16, fp32 (BIAS) or int8 (KEEP) */
  double              coef;
  gint64              lead[NAPKIN_MAX_RANK];
  gint64              group, row;
  guint               rows, vec;
  gint64              pitch, offset;
  gboolean            scan;
} NapkinPlanAttnScore;

/* Fused attention O = softmax (α·Q·Kᵀ, masked)·V over the keys, online softmax, fp32
 * accumulation (docs/plan.md, "Attention kernels").
 *
 * Heads: `batch` query matrices Q[NQ, D] (every (batch, head) pair), `kv_batch` key and
 * value matrices K, V [NKV, D]; `group` = batch / kv_batch query heads share one K and V
 * (GQA; MQA: kv_batch = seqs). In the diagram the group is an axis of Q and O that K and V
 * lack. A block computes `group_tile` heads of a group × BQ queries = `rows` query rows
 * against the same K and V tiles (each K/V tile loaded once for them).
 *
 * Layouts: d is contiguous in every tensor. The leading axes are K's (outermost first,
 * sizes lead_size); each tensor's element stride along them is x_lead[i], along the
 * group axis x_group, between consecutive queries or keys x_row. V has K's layout. O
 * may order its axes freely. For the TMA, K and V are rows of D elements kv_ld apart,
 * kv_rows rows in each of kv_planes planes kv_plane_stride apart; lead index i adds
 * idx·kv_row_coef[i] to the row and idx·kv_plane_coef[i] to the plane.
 *
 * Boundaries: any NQ, NKV. Key rows past NKV read as zero (or as the next head's rows,
 * which the kernel masks: scores of keys ≥ NKV are −∞ before the softmax); query rows
 * past NQ are computed and not stored. */
typedef struct
{
  NapkinDtype      dtype, o_dtype;        /* Q and K; O */
  gint64           batch, NQ, NKV, D, BQ, BKV;
  guint            stages;                /* the kernel's: the region's hint, lowered to fit */
  guint            stages_asked;          /* the region's, where the plan lowered it (else 0) */
  double           alpha;
  NapkinPlanBuffer q, k, v, o;

  NapkinDtype      v_dtype;               /* V: Q's 16-bit type, or (fp8 Q, K) e4m3, fp16 or bf16 */
  gint64           kv_batch, group;       /* batch = kv_batch × group */
  gint64           seqs, heads, kv_heads; /* batch = seqs × heads, kv_batch = seqs × kv_heads */
  gint64           group_tile;            /* heads of a group in one block */
  gint64           rows;                  /* query rows of a block: group_tile × BQ */

  guint            n_lead;
  gint64           lead_size[NAPKIN_MAX_RANK];
  gint64           q_lead[NAPKIN_MAX_RANK], k_lead[NAPKIN_MAX_RANK], o_lead[NAPKIN_MAX_RANK];
  gint64           q_group, o_group;      /* 0 when group = 1 */
  gint64           q_row, k_row, o_row;   /* V: k_lead, k_row */
  gboolean         kv_tma;                /* K and V have a TMA view (else the reason is in the note) */
  gint64           kv_rows, kv_ld, kv_planes, kv_plane_stride;
  gint64           kv_row_coef[NAPKIN_MAX_RANK], kv_plane_coef[NAPKIN_MAX_RANK];

  NapkinAttnMask   mask;
  gint64           mask_offset, window_left, window_right;
  guint            n_scores;              /* score operands (biases, keep flags), in chain order */
  NapkinPlanAttnScore scores[NAPKIN_ATTN_MAX_SCORES];
  gint64           score_warp_bytes;      /* shared memory each consumer warp stages them in */
  int              lead_first;            /* the leading axis the blocks walk first (−1: K's innermost):
                                             one a score operand lacks (a T5 bias [h, q, k] and the
                                             batch), so blocks reading its same tiles run together */
  int              query_axis, group_axis;/* diagram axes (−1: no group), and K's leading ones: */
  int              lead_axis[NAPKIN_MAX_RANK];   /* the blocks' walk, as the model orders its waves */
  gint64           tiles_total;           /* per query head: query tiles × key chunks */
  gint64           tiles_computed;        /* … of which the kernel computes (not wholly masked) */
  gint64           tiles_masked;          /* … of which it masks in registers (partly masked, or past NKV) */
  gint64           chunks_most;           /* the most key chunks one query tile computes */
  gint64           seen_lo, seen_hi;      /* the query tiles that see some key: [seen_lo, seen_hi) (a
                                             mask's visible band is one run of them); a persistent
                                             kernel shares them out before the wholly masked ones */

  guint            split_kv;              /* ≥ 1; > 1: key chunks cut into split_kv ranges, partial
                                             outputs and log-sum-exps into scratch `partials`, merged
                                             by the next (ATTENTION_COMBINE) kernel */
  gint64           chunks_per_split;
  gint64           band;                  /* the blocks' order under a mask, not persistent, not split:
                                             0 one (batch, head) after another, each's query tiles
                                             heaviest first; B > 1 B of them at a time, the heaviest
                                             query tiles of all B first (docs/plan.md, "Causal order") */
  double           tail;                  /* the last block ends `tail` times the even share of the
                                             blocks' chunks an SM after the start (≥ 1; 1 where even) */
  int              partials;              /* scratch: fp32 O [split][batch·NQ][D], then [split][batch·NQ] */
  int              unit_axes[NAPKIN_MAX_RANK]; /* the diagram's indices of K's axes a block takes one at
                                             a time (its batch and heads: the region's tile of each
                                             must be 1; what tune need not try) */
  guint            n_unit_axes;
  int              whole_axes[2];         /* … and of d and V's head axis, which it holds whole */
  guint            n_whole_axes;

  double           q_scale, k_scale, v_scale;   /* fp8: per-tensor dequantisation scales */
  int              v_t;                   /* fp8 P·V: scratch Vᵀ [kv_batch][v_t_rows][v_t_ld] (a repack), or −1 */
  gint64           v_t_ld;
  gint64           v_t_rows;              /* D, or D + 8 where row D is ones: P·V's column D is then
                                             the softmax's row sum (no additions in the softmax) */
  gboolean         vt_in_kernel;          /* fp8 P·V: the kernel's producer transposes V in shared
                                             memory (no repack, v_t −1) */

  guint            consumers;             /* wgmma: consumer warpgroups; mma: warps */
  guint            producer_regs, consumer_regs;   /* wgmma: setmaxnreg counts */
  gint64           d_smem;                /* elements of a Q or K row in shared memory (padded) */
  gboolean         overlap;               /* wgmma: next Q·Kᵀ issued before this P·V */
  gboolean         q_regs;                /* mma: Q's fragments kept in registers (else read each chunk) */
  guint            bkv_parts;             /* mma: the region's key chunk run as this many kernel chunks
                                             of BKV keys (2: halves, where a whole chunk spills), else 1 */
  gboolean         legacy;                /* mma: today's aligned shapes, kernels/flash-mma.cu */
  gint64           persist_tiles;         /* wgmma, > 0: persistent, the grid's blocks walk these tiles
                                             (query tiles × group tiles × K's leading axes), each a
                                             contiguous range; Q through q_buffers buffers */
  guint            q_buffers;             /* Q's buffers in shared memory (1, or 2–4 persistent) */
  gint64           bkv_asked;             /* persistent: the region's chunk of keys where the plan took
                                             all the keys as one chunk instead (else 0) */
  double           exp_fma;               /* the softmax's exponentials on the FMA units (a fraction;
                                             wgmma only: kernels/attn-sm90.cu, napkin_exp2_poly) */
  /* wgmma: the forward also writes, for the fused backward after it in the same plan, each
   * query row's base-2 log-sum-exp into that kernel's scratch `stats_scratch` at float
   * stats_lse_at, and its fp32 O (before rounding) into scratch `stats_o32` (D floats a row;
   * rows (K/V head · group + g) · NQ + q); −1 in stats_scratch: not */
  int              stats_scratch, stats_o32;
  gint64           stats_lse_at;
} NapkinPlanAttention;

/* The gradients of O = softmax (α·Q·Kᵀ, masked)·V in one kernel of FlashAttention-2's shape
 * (docs/plan.md, "Attention backward"; kernels/attn-bwd-sm80.cu), from Q, K, V, the
 * forward's O and dO: the scores recomputed per tile from each row's log-sum-exp, which a
 * first kernel computes with Σ dO⊙O and a zeroed dQ accumulator; a block per BKV keys of
 * a K/V head accumulates dK and dV over every query head of its group and query tile,
 * adding dQ's share to the fp32 accumulator (atomics); a last kernel writes dQ.
 * `a` holds the layout as the forward's (Q, K, V, O; dO has O's), the mask and α; dQ, dK
 * and dV have their primals' axes in any order, the head axis last, with their own
 * strides; BQ and BKV are the main kernel's query tile and key block. */
typedef struct
{
  NapkinPlanAttention a;
  NapkinPlanBuffer    d_o, d_q, d_k, d_v;
  NapkinDtype         grad_dtype;          /* dQ, dK, dV */
  gint64              dq_lead[NAPKIN_MAX_RANK], dk_lead[NAPKIN_MAX_RANK], dv_lead[NAPKIN_MAX_RANK];
  gint64              dq_group, dq_row, dk_row, dv_row;   /* as a's q_lead, q_group, q_row, k_row */
  double              d_alpha;             /* dQ, dK = d_alpha · (dS·K, dSᵀ·Q) */
  int                 scratch;             /* fp32: log-sum-exps, row terms, dQ's accumulator */
  gint64              lse_at, drow_at, dqa_at;   /* their offsets in it, in floats */
  guint               warps, pre_warps;    /* BKV = 16 · warps keys a block; pre: 16 rows a warp */
  gboolean            main_wgmma;          /* the first and main launches on wgmma (Hopper: BKV 128, BQ 64,
                                              256 threads; pre_warps 8, 128 query rows a block) */
  gint64              pre_grid, dq_grid;   /* main's is the kernel's grid */
  /* wgmma main: a K/V head's query heads (the GQA group) split over `gsplit` blocks of each
   * key block where the K/V heads' key blocks alone would not fill the SMs; dK and dV are
   * then added up in fp32 at `dkva_at` of the scratch (dK's, then dV's: K/V heads × NKV × D
   * each), zeroed by the first launch, rounded by the last */
  gint64              gsplit, dkva_at;
  /* the log-sum-exps come from the forward attention kernel before it (its stats_*), and
   * its fp32 O in scratch `o32_scratch`: the first launch zeroes the accumulators and
   * makes the row terms Σ dO⊙O, a pass over memory, no product */
  gboolean            stats_given;
  int                 o32_scratch;
  gint64              pre_smem;
  gint64              pairs;               /* (key block, query tile) pairs computed, all heads */
  gint64              longest;             /* … by the block with the most (a causal mask's first keys) */
  /* A bias's gradient (−1 in d_bias.node: none): d_bias = Σ d_bias_weight·dS over the score
   * axes the bias lacks, added up in fp32 at `dbias_at` of the scratch (zeroed by the first
   * launch, added to by the main one with atomics, rounded into d_bias by the last); its
   * strides along the scores' axes in `d_bias_at` (lead, group, row; the keys contiguous),
   * d_bias_elems elements */
  NapkinPlanBuffer    d_bias;
  double              d_bias_weight;
  NapkinPlanAttnScore d_bias_at;
  gint64              d_bias_elems, dbias_at;
} NapkinPlanAttnBackward;

/* Copy src (rows × cols, leading dimension ld_src) to dst (leading dimension ld_dst,
 * padding zeroed), transposed when `transpose`, for `batch` matrices (the source's batch
 * over one axis or two: batch_inner). With `pv_key_order`
 * (a transposed fp8 Vᵀ) each 32 destination columns hold their source rows in the order
 * fp8 P·V's A operand takes the scores (docs/plan.md, "Attention kernels"); with
 * `ones_row`, a row of ones below them makes P·V add up each row of P. */
typedef struct
{
  NapkinPlanBuffer src, dst;
  NapkinDtype      dtype;
  gint64           batch, rows, cols, ld_src, ld_dst, src_bstride, dst_bstride;
  gint64           batch_inner;           /* ≥ 2: the source's batch is two axes, matrix b at
                                             (b / batch_inner)·src_bstride + (b % batch_inner)·
                                             src_bstride_inner (a permuted operand); else one */
  gint64           src_bstride_inner;
  gboolean         transpose;
  gboolean         pv_key_order;
  gboolean         ones_row;              /* transposed: 8 more destination rows after cols, the
                                             first all ones (1.0 in dtype), the others zero */
} NapkinPlanRepack;

typedef struct
{
  NapkinPlanKind   kind;
  NapkinPath       path;
  char            *name;          /* the region's name, or the operation's id */
  int              region;        /* top-level diagram region, or −1 */
  int              node;          /* a kernel of one operation outside regions, or −1 */
  GArray          *nodes;         /* guint: the diagram nodes it computes, diagram order */
  char            *reason;        /* GENERIC: why the plan could not do better */
  char            *note;          /* one line: tiles, stages, what is fused */
  GPtrArray       *adjustments;   /* char *: where the plan changed the relabeling's numbers */

  gint64           grid;          /* thread blocks (a persistent kernel launches MIN (grid, SMs)) */
  guint            threads;       /* per block */
  gint64           smem_bytes;    /* per block, as launched */
  guint            registers;     /* per thread, estimated */
  guint            blocks_per_sm;
  gboolean         feasible;
  char            *infeasible;    /* why not, naming the limit */
  /* The GPU's best tensor-core path for the kernel's products where the code generator
   * does not emit it here (NULL: it does); best_note says so (docs/model.md, "Best path") */
  const char      *best_path;
  char            *best_note;

  union
  {
    NapkinPlanGemm        gemm;
    NapkinPlanRows        rows;
    NapkinPlanElementwise ew;
    NapkinPlanAttention   att;
    NapkinPlanRepack      repack;
    NapkinPlanAttnBackward bwd;
  } u;
} NapkinPlanKernel;

typedef struct
{
  NapkinArch      *arch;
  char            *target;        /* "sm_90a", "sm_80", "sm_89", … */
  /* What the kernels are planned on (docs/plan.md, "The pipeline"): the drawn diagram,
   * or a copy of it with casts folded into the values they cast and the plan's own
   * regions after the drawn ones. Kernels' regions and nodes index it; the model prices
   * it and the code generator lowers and prints it. */
  NapkinDiagram   *diagram;
  guint            drawn_regions; /* the drawn diagram's regions: the first of `diagram`'s */
  GHashTable      *folded;        /* char *: id of a cast folded away → id of the operation
                                     whose type it became */
  GPtrArray       *kernels;       /* NapkinPlanKernel, in launch order */
  GArray          *scratch;       /* gint64 bytes of each scratch buffer */
  GArray          *scratch_offset;/* gint64: each buffer's offset in the scratch area (256-aligned) */
  gint64           scratch_bytes; /* the scratch area, all buffers */
  gboolean         feasible;
  guint            n_generic;
  /* napkin_plan_kernel_for's index, built on first use (private) */
  GHashTable      *kernel_index;  /* region ≥ 0 → kernel; node n as −2 − n */
  GHashTable      *fused_index;   /* nodes outside regions run in another node's kernel */
  guint            indexed;       /* kernels->len when it was built */
} NapkinPlan;

typedef struct
{
  gboolean    has_dtype;          /* price and plan every tensor as this type */
  NapkinDtype dtype;
  gboolean    generic_only;       /* every kernel on the generic lowering */
  gboolean    no_wgmma;           /* Hopper without its warpgroup path (mma instead) */
  gboolean    trusted;            /* the diagram is known valid: skip validation */
  gboolean    as_drawn;           /* no pipeline (casts stay, the plan makes no regions):
                                     the paper's model prices the diagram as drawn */
} NapkinPlanOptions;

/* Whether the rows skeletons print `rows` (kernels/rows-sm80.cu, rows-strided-sm80.cu):
 * the rules the plan chooses a rows kernel by, which its printer checks again (a printer
 * never refuses a plan it was handed). FALSE with `why` naming the rule it breaks. */
gboolean          napkin_plan_rows_printable   (const NapkinPlanRows    *rows,
                                                char                   **why);

/* Whether `node` is an output wired straight from an input: the plan runs it as a copy
 * kernel of its own, named after it (the lowering's copy, docs/plan.md). */
gboolean          napkin_plan_node_is_input_copy (NapkinDiagram         *diagram,
                                                  guint                  node);
/* The query axis of the attention Q·Kᵀ (`qk`) → … → softmax (`sm`) → ·V (`pv`): the rows
 * of a causal or window mask between Q·Kᵀ and the softmax where there is one, else the
 * largest of the axes Q and O have and K lacks; `group` gets the product of the others
 * (the query heads of a GQA or multi-query group). −1 where Q, K or O is untyped or
 * has no such axis (docs/plan.md, "Attention kernels"). */
int               napkin_plan_attention_query  (NapkinDiagram           *diagram,
                                                guint                    qk,
                                                guint                    sm,
                                                guint                    pv,
                                                gint64                  *group);
/* Whether an attention block of `rows` query rows stacks a group of `group` query heads
 * on its `nq` queries (sharing each chunk of `nk` keys), or takes a head a block: it
 * stacks where it keeps 16 queries of each head or more, or decodes (a few queries). */
gboolean          napkin_plan_attention_stacks (gint64                   group,
                                                gint64                   nq,
                                                gint64                   nk,
                                                gint64                   rows);
/* Whether `node` is a view: a rename by position the kernel reading it reads through,
 * moving no byte (docs/plan.md, "Views"). */
gboolean          napkin_plan_node_is_view     (NapkinDiagram           *diagram,
                                                guint                    node);
/* The operations outside regions that the plan runs as rotary embeddings, one
 * element-wise pass each (x·c + rotate_half (x)·s: docs/plan.md, "Rotary as one pass"):
 * node index + 1 → the index + 1 of the sum whose pass computes it (the sum's own too). */
GHashTable       *napkin_plan_rotary_nodes     (NapkinDiagram           *diagram);
/* The operations outside regions that form gated pairs (two products of one operand
 * joined by a product after maps of one of them, a SwiGLU: docs/plan.md, "Gated GEMM"),
 * which the plan runs as one GEMM where its template takes them: node index + 1 → the
 * index + 1 of the pair's join (the join's own too). */
GHashTable       *napkin_plan_gated_nodes      (NapkinDiagram           *diagram);
/* Whether `node`, outside every region, runs in the kernel of another operation (a map
 * that only finishes that operation's value: docs/plan.md). */
gboolean          napkin_plan_node_fused_away  (const NapkinPlan        *plan,
                                                guint                    node);

/* The compile target of an architecture profile: "sm_90a" for compute capability 9.0
 * (wgmma), "sm_100a" for 10.0, else "sm_XY". */
char             *napkin_plan_target_for_arch  (const NapkinArch        *arch);

/* The plan of a valid diagram (docs/plan.md, "The pipeline"): casts folded into the
 * values they cast, the operations outside the drawn regions cut into kernels by the
 * plan's own rules (an attention chain gets a region of the plan's), each kernel's
 * template, path and tiles. NULL with an error only when the diagram is invalid;
 * infeasible kernels are part of the plan (feasible FALSE, infeasible says why). */
NapkinPlan       *napkin_plan_build            (NapkinDiagram           *diagram,
                                                NapkinArch              *arch,
                                                const NapkinPlanOptions *options,
                                                GError                 **error);
void              napkin_plan_free             (NapkinPlan              *plan);
/* Names and operations as plan->diagram has them. */
json_object      *napkin_plan_to_json          (const NapkinPlan        *plan);

/* `drawn` (the diagram the plan was built from) with the plan's own regions drawn: what
 * Apply writes, which plans as `plan` does (docs/plan.md, "The pipeline"). */
NapkinDiagram    *napkin_plan_with_regions     (const NapkinPlan        *plan,
                                                NapkinDiagram           *drawn);

/* Whether region `region` of plan->diagram is one the plan made (no drawn region). */
gboolean          napkin_plan_region_planned   (const NapkinPlan        *plan,
                                                int                      region);

/* The plan's kernel for top-level region `region` (or, region −1, for operation `node`). */
const NapkinPlanKernel *napkin_plan_kernel_for (const NapkinPlan        *plan,
                                                int                      region,
                                                int                      node);

/* Whether `node` of `diagram` is a contraction over axes of size 1 only, which the plan
 * runs as an element-wise product (no tensor-core work; docs/plan.md, "Products over
 * axes of size 1"). */
gboolean          napkin_plan_unit_product     (NapkinDiagram           *diagram,
                                                guint                    node);

/* Shared memory of a GEMM kernel on `path` (wgmma or mma) as its printer lays it out:
 * the one rule the plan prices and the printer allocates by (docs/plan.md, "GEMM tile
 * primitives"). */
gint64            napkin_plan_gemm_smem        (NapkinPath               path,
                                                const NapkinPlanGemm    *gemm);

/* What TMA loads of operand rows whose pitch is not a multiple of 128 bytes cost one
 * chunk (BM + BN rows of BK elements) of the Hopper GEMM beyond its products, in seconds
 * on one SM: 0 where both pitches are aligned (docs/model.md §14, "Unaligned rows"). The
 * plan repacks an operand where this costs more than the copy; the model prices what
 * is left. */
double            napkin_plan_gemm_unaligned_chunk_s (const NapkinArch   *arch,
                                                      const NapkinPlanGemm *gemm,
                                                      gint64              BM,
                                                      gint64              BN);

/* What the mma.sync GEMM's copies narrower than 16 bytes (an operand read in place,
 * its rows only 8 or 4 bytes apart: a_piece, b_piece) cost one chunk of BK beyond its
 * products and its loads from L2, in seconds on one SM: 0 where both are read in
 * 16-byte pieces (docs/model.md §14, "Operands read in place"). The plan weighs it
 * against a repack; the model prices it. */
double            napkin_plan_gemm_narrow_chunk_s (const NapkinArch   *arch,
                                                   const NapkinPlanGemm *gemm,
                                                   gint64              BM,
                                                   gint64              BN,
                                                   gint64              BK);

/* Whether every map fused into the GEMM works on its value alone (a cast, GELU, a
 * scale; no bias or residual read): the Hopper kernel applies them in registers and
 * keeps the TMA store. */
gboolean          napkin_plan_gemm_maps_unary (const NapkinPlanGemm *g);

/* Whether the Hopper GEMM's tiles can go in clusters of `cluster_m` blocks along M that
 * share B's chunks by TMA multicast (docs/plan.md, "Clusters"): wgmma tiles whose B
 * splits into equal shares the copies can take (K-major: rows a multiple of 8 each;
 * N-major: boxes of 64 columns each), and at least two rows of tiles. NULL when it can,
 * else why not; the plan and the printer both ask. */
const char       *napkin_plan_gemm_cluster_refusal (const NapkinPlanGemm *g,
                                                    guint                 cluster_m);
/* The blocks a cluster (1 where none) and the blocks the Hopper GEMM's grid has: whole
 * clusters, each tile of C in one block. */
guint             napkin_plan_gemm_cluster (const NapkinPlanGemm *g);
gint64            napkin_plan_gemm_blocks (const NapkinPlanGemm *g);

/* One tile's staged epilogue of the Hopper GEMM on its SM, in seconds (docs/model.md
 * §14, "The staged epilogue"): 0 where the kernel stores C by TMA with nothing fused or a
 * split-K reduction applies the maps; the transcendental maps' arithmetic where they run
 * in registers before the TMA store. The plan weighs ping-pong consumers with it; the
 * model prices it. */
double            napkin_plan_gemm_staged_epilogue_s (const NapkinArch   *arch,
                                                      const NapkinPlanGemm *gemm);
/* The store of one BM × BN tile of `bytes` an element (a split K's fp32 partials: 4)
 * through shared memory. */
double            napkin_plan_gemm_tile_store_s (const NapkinArch     *arch,
                                                 const NapkinPlanGemm *gemm,
                                                 guint                 bytes);
/* What each tile of the plan's GEMM pays whatever its chunks (docs/model.md §14): its
 * store (staged where C's rows are not 16 bytes apart, less what a ping-pong consumer
 * hides), on wgmma its chain's fill and drain. The model prices it; the plan's choice
 * between a skinny product and the tensor path weighs it. */
double            napkin_plan_gemm_tile_s       (const NapkinArch     *arch,
                                                 NapkinPath            path,
                                                 const NapkinPlanGemm *gemm);

/* The share of the profile's tensor rate the wgmma GEMM's main loop sustains over a
 * long K (its barriers, the producer's issue, the clock under load): 0.87, fitted on
 * the H200 GEMM sweep of session 11 (40 products up to 16k on a side, where the long-K
 * ones ran a median 1.16× their prediction without it; 8192³ bf16 runs at 790 TFLOP/s
 * of the datasheet's 989) (docs/model.md §14, "The main loop"). */
#define NAPKIN_PLAN_GEMM_TENSOR_EFFICIENCY 0.87
/* The share of mma.sync's rate (the profile's tensor_mma_sync) the plan's mma.sync GEMM
 * (kernels/gemm-sm80.cu) sustains on a GPU that has wgmma: 4096³ fp16 with 128 × 96
 * blocks ran 0.81 ms on an H200 (170 TFLOP/s; docs/perf-notes.md, session 24) where the
 * 646 TFLOP/s of calibrate's mma.sync loop priced it 0.386 (docs/model.md §14). One
 * measurement: it keeps tune and derive from taking a tile wgmma cannot run as if it
 * were nearly as fast. */
#define NAPKIN_PLAN_MMA_ON_WGMMA_GPU_EFFICIENCY 0.48
/* Skinny products on CUDA cores (kernels/gemm-skinny.cu; docs/plan.md, "Skinny products
 * on CUDA cores"): at most this many rows of C, a thread keeping every row's sums. */
#define NAPKIN_PLAN_GEMM_SKINNY_MAX_M 16
/* The share of device memory's bandwidth its stream of B sustains, and of the CUDA
 * cores' FMA rate its multiplies do; the two add (a thread's loads and products hardly
 * overlap). Fitted on an H200 (docs/perf-notes.md, session 27: eleven products, M 1–16,
 * both majors of B; B N-major within 8 % of all seven, K-major within 1.4×). */
#define NAPKIN_PLAN_GEMM_SKINNY_HBM_SHARE 0.61
#define NAPKIN_PLAN_GEMM_SKINNY_FMA_SHARE 0.45
/* B's rows only 2 bytes apart (an odd count of 16-bit elements): one 2-byte load an
 * element, and the stream at this share instead (three such products, 0.6–1.7 TB/s) */
#define NAPKIN_PLAN_GEMM_SKINNY_HBM_SHARE_2B 0.30
/* The share of device memory the skinny kernel's stream of B sustains, by its loads. */
double            napkin_plan_gemm_skinny_hbm_share (const NapkinPlanGemm *gemm);
/* The skinny kernel's time alone (its stream of A, B and the partials, then its
 * multiplies on the CUDA cores, and a round trip); the split-K reduction after it is
 * priced as any. */
double            napkin_plan_gemm_skinny_s     (const NapkinArch     *arch,
                                                 const NapkinPlanGemm *gemm);
/* The widest load of B, in elements (a power of two, at most 8 and `max`), that its
 * start (`offset` bytes), rows (`ld`) and matrices (`bstride`) allow. */
gint64            napkin_plan_gemm_skinny_vec   (gint64                offset,
                                                 gint64                ld,
                                                 gint64                bstride,
                                                 guint                 bytes,
                                                 gint64                max);
/* Its blocks across the columns for loads of `vec` elements (× batch × slices of K). */
gint64            napkin_plan_gemm_skinny_column_blocks (const NapkinPlanGemm *gemm,
                                                         gint64                vec);
/* What it streams from device memory: A, B and its fp32 partials. */
double            napkin_plan_gemm_skinny_bytes (const NapkinPlanGemm *gemm);
/* The share of the SMs its blocks occupy (fewer blocks than SMs: the rest idle). */
double            napkin_plan_gemm_skinny_fill  (const NapkinArch     *arch,
                                                 const NapkinPlanGemm *gemm);
/* A's slice in fp32 in its shared memory (N-major: rows padded to 4). */
gint64            napkin_plan_gemm_skinny_a_bytes (const NapkinPlanGemm *gemm);
/* Its shared memory: A's slice in fp32 and (B N-major) the partial sums it adds. */
gint64            napkin_plan_gemm_skinny_smem  (const NapkinPlanGemm *gemm);
/* Ping-pong consumers (docs/plan.md, "Ping-pong"): the share of the tensor cores' rate
 * one warpgroup issuing at a time keeps, and the share of the epilogue (its stores and
 * the staged maps) left exposed beside the other consumer's main loop. Measured on an
 * H200 (docs/perf-notes.md, session 11). */
#define NAPKIN_PLAN_PINGPONG_TENSOR   0.93
#define NAPKIN_PLAN_PINGPONG_EXPOSED  0.5
/* The share of its path's tensor rate (wgmma's: the profile's tensor; mma.sync's:
 * tensor_mma_sync) a GEMM kernel on `path` sustains on `arch`: the wgmma main loop's,
 * times ping-pong's where its consumers take turns; the mma.sync kernel's where wgmma
 * exists (NAPKIN_PLAN_MMA_ON_WGMMA_GPU_EFFICIENCY), else all of it. */
double            napkin_plan_gemm_tensor_share (const NapkinArch     *arch,
                                                 NapkinPath            path,
                                                 const NapkinPlanGemm *gemm);
double            napkin_plan_gemm_pingpong_hidden_s (const NapkinArch     *arch,
                                                      const NapkinPlanGemm *gemm,
                                                      double                epilogue_s);

/* Whether a GEMM kernel stores C in this type (the rule the plan and the printers share). */
gboolean          napkin_plan_gemm_c_storable  (NapkinDtype              dtype);

/* Fills the grid, threads and shared memory of a repack or split-K reduction kernel
 * (kind REPACK or SPLIT_REDUCE) from its sizes, as kernels/repack.cu and
 * kernels/split-reduce.cu launch them; their printers check a kernel against it. */
void              napkin_plan_helper_launch    (NapkinPlanKernel        *kernel);

#define NAPKIN_PLAN_MAX_GRID 16384   /* grid-stride helper kernels: enough blocks to fill any GPU */
/* Attention (docs/plan.md, "Attention kernels"): the key chunks [*first, *end) that the
 * queries [q0, q1) see under the kernel's mask (*end ≤ *first: none), and how many of
 * them must be masked in registers. */
void              napkin_plan_attention_band_tile (gint64  block,
                                                   gint64  q_tiles,
                                                   gint64  units,
                                                   gint64  band,
                                                   gint64 *qt,
                                                   gint64 *unit);
void              napkin_plan_attention_chunks (const NapkinPlanAttention *a,
                                                gint64                     q0,
                                                gint64                     q1,
                                                gint64                    *first,
                                                gint64                    *end,
                                                gint64                    *masked);
/* Sets the mask of an attention kernel (and of the combine after it, if any) and
 * recounts the tiles it computes; FALSE with an error naming the field when the mask's
 * numbers are out of range (a window side < 0). */
gboolean          napkin_plan_attention_set_mask (NapkinPlan            *plan,
                                                NapkinPlanKernel          *kernel,
                                                NapkinAttnMask             mask,
                                                gint64                     offset,
                                                gint64                     left,
                                                gint64                     right,
                                                GError                   **error);
const char       *napkin_attn_mask_to_string   (NapkinAttnMask           mask);

const char       *napkin_path_to_string        (NapkinPath               path);
const char       *napkin_plan_kind_to_string   (NapkinPlanKind           kind);
/* Whether a plan kernel of this kind is a helper the plan adds beside another kernel (an
 * operand repack, a split-K reduction, a split-KV combine): it carries that kernel's
 * name and nodes and computes none of its products. */
gboolean          napkin_plan_kind_is_helper   (NapkinPlanKind           kind);
/* The name the model, the Kernels pane and the code view give plan kernel `name` of
 * `kind`: the name itself, or "NAME (kind)" for a helper. */
char             *napkin_plan_kernel_label     (const char              *name,
                                                NapkinPlanKind           kind);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinPlan, napkin_plan_free)

G_END_DECLS
