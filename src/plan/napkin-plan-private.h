/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-plan.h"

G_BEGIN_DECLS

/* What the recognisers share while one plan is built. */
typedef struct
{
  NapkinDiagram           *d;
  NapkinArch              *arch;
  NapkinPlan              *plan;
  const NapkinPlanOptions *options;
  guint                    n_nodes;
  int                     *top;          /* node → its top-level region, or −1 */
  int                     *parent;       /* region → the region directly containing it, or −1 */
  guint                    sm;           /* compute capability × 10: 90, 80, 89, 100 … */
  GPtrArray               *before;       /* NapkinPlanKernel: launched before the one planned now (repacks) */
  GPtrArray               *after;        /* … and after it (a split-K's reduction) */
  /* Membership of the kernel planned now (_napkin_plan_member): node → stamp. A
   * linear search per question made planning 100 000 maps quadratic. */
  guint                   *member;
  guint                    member_stamp;
  const NapkinPlanKernel  *member_of;
  guint                    member_len;
  /* node → why the attention chain through it could not run as one kernel (the
   * partition's refusals: the reason its operations' kernels then carry) */
  GHashTable              *chain_refusal;
  /* products outside every region whose operand splits its own or its contracted axes,
   * or whose result splits them or does not lead with the batch axes: the retry copies
   * those operands and results (_napkin_plan_canonical; keys NAPKIN_PLAN_COPY_KEY) */
  GHashTable              *split_operands;
  /* a rotary embedding's operations run in its sum's element-wise kernel
   * (_napkin_plan_rotary_match): each of them → that sum (node + 1) */
  GHashTable              *rotary;
  /* a gated pair's operations run in its join's GEMM (_napkin_plan_gated_match): each
   * of them → that join (node + 1) */
  GHashTable              *gated;
} NapkinPlanner;

/* The key of a product's operand (slot 0, 1) or result (slot 2) that gets a permuting
 * copy: in front of the product, or after it (the product then stores its own order). */
#define NAPKIN_PLAN_COPY_X      0u
#define NAPKIN_PLAN_COPY_Y      1u
#define NAPKIN_PLAN_COPY_RESULT 2u
#define NAPKIN_PLAN_COPY_KEY(contract, slot) GUINT_TO_POINTER ((guint) (contract) * 3u + (slot) + 1u)
/* In the same table: the operand copies take the order the product keeps itself, not
 * the one its epilogue's maps would store (which holds only where they fuse). */
#define NAPKIN_PLAN_COPY_OWN_ORDER GUINT_TO_POINTER (G_MAXUINT)

/* The pipeline's first steps (src/plan/napkin-plan-partition.c; docs/plan.md):
 * `diagram` with its casts folded into the values they cast, or NULL when none folds
 * (`folded` gets cast id → the operation's id); `copies` (NAPKIN_PLAN_COPY_KEY), or
 * NULL: the product operands that get a permuting copy in front, the results one after. */
NapkinDiagram *_napkin_plan_canonical  (NapkinDiagram    *diagram,
                                        GHashTable       *folded,
                                        GHashTable       *copies);
/* The plan's own kernels among the operations outside the drawn regions: each
 * attention chain the attention kernel takes gets a region of the plan's, appended to
 * p->d — which, when `shared` (the caller's diagram), is first replaced by a copy,
 * returned (else NULL). p->top and p->parent are recomputed. */
NapkinDiagram *_napkin_plan_partition  (NapkinPlanner    *p,
                                        gboolean          shared);
/* Region nesting into p->parent and p->top (sized for p->d's regions and nodes). */
void           _napkin_plan_find_parents (NapkinPlanner  *p);

/* The recognisers: each fills `kernel` (kind, path, its union member, grid, threads,
 * shared memory, note) and returns TRUE, or returns FALSE with *why set when the
 * kernel is of its shape but it cannot take it (NULL when it is not of its shape). */
gboolean  _napkin_plan_try_gemm        (NapkinPlanner    *p,
                                        NapkinPlanKernel *kernel,
                                        char            **why);
gboolean  _napkin_plan_try_attention   (NapkinPlanner    *p,
                                        NapkinPlanKernel *kernel,
                                        char            **why);
gboolean  _napkin_plan_try_rows        (NapkinPlanner    *p,
                                        NapkinPlanKernel *kernel,
                                        char            **why);
gboolean  _napkin_plan_try_elementwise (NapkinPlanner    *p,
                                        NapkinPlanKernel *kernel,
                                        char            **why);
/* A rotary embedding y = x·c + rotate_half (x)·s outside regions (docs/plan.md, "Rotary
 * as one pass"): its parts x·c, x·R, the rename of x·R and that times s, which its sum's
 * element-wise kernel computes, and x rotated by halves of n along `axis`. */
typedef struct
{
  guint  parts[4];
  int    x;
  int    axis;
  gint64 n;
} NapkinPlanRotary;

/* TRUE where `sum` is a rotary embedding's y, described in *r. */
gboolean  _napkin_plan_rotary_match    (NapkinPlanner    *p,
                                        guint             sum,
                                        NapkinPlanRotary *r);
/* Every rotary embedding of p->d: node index + 1 → the index + 1 of the sum whose pass
 * computes it (the sum's own too). */
GHashTable *_napkin_plan_rotary_table  (NapkinPlanner    *p);

/* A gated pair outside regions (docs/plan.md, "Gated GEMM"): join = up · gate_maps (G),
 * where up = A·B and G = A·B2 are products over the same operand A, read only on their
 * way to the join. */
#define NAPKIN_PLAN_GATED_MAPS 4
typedef struct
{
  guint join, up, gate;
  guint maps[NAPKIN_PLAN_GATED_MAPS];   /* after the gate's product, in order */
  guint n_maps;
} NapkinPlanGated;

/* TRUE where `join` (a product of two values) joins a gated pair, described in *r. */
gboolean  _napkin_plan_gated_match     (NapkinPlanner    *p,
                                        guint             join,
                                        NapkinPlanGated  *r);
/* Every gated pair of p->d: node index + 1 → the index + 1 of its join (the join's own
 * too). Pairs that share an operation with a rotary embedding (p->rotary) are left out. */
GHashTable *_napkin_plan_gated_table   (NapkinPlanner    *p);
/* The kernel of the gated pair `pair` (its nodes: the pair's, the join, maps after it):
 * one GEMM with both products (NapkinPlanGemm.dual). FALSE with *why where the GEMM
 * template cannot take the two as one; the caller plans them apart. */
gboolean  _napkin_plan_try_gated_gemm  (NapkinPlanner         *p,
                                        NapkinPlanKernel      *kernel,
                                        const NapkinPlanGated *pair,
                                        char                 **why);

/* The fused attention backward (src/plan/napkin-plan-attn-bwd.c; docs/plan.md, "Attention
 * backward"): the region of the softmax adjoint's operations around softmax `sm` that one
 * kernel computes, as node indices into `nodes` (cleared first); FALSE where `sm` is not
 * such a softmax (among the operations outside regions that `taken`, if given, leaves). */
gboolean  _napkin_plan_attention_backward_group (NapkinPlanner  *p,
                                                 guint           sm,
                                                 const gboolean *taken,
                                                 GArray         *nodes);
gboolean  _napkin_plan_try_attention_backward (NapkinPlanner    *p,
                                               NapkinPlanKernel *kernel,
                                               char            **why);
/* Where a wgmma forward attention and a fused backward of the same attention (Q, K, V,
 * sizes, mask, scale) are both in the plan, the forward before: the forward writes the
 * backward's log-sum-exps and its fp32 O (a scratch buffer added here), and the
 * backward's first launch makes the row terms Σ dO⊙O from it — no product.
 * NAPKIN_BWD_FWD_STATS=0: never. */
void      _napkin_plan_attention_link_stats   (NapkinPlan       *plan);
/* The forward attention's layout rules, for the backward (napkin-plan-attention.c):
 * Q, K, V, O's strides and sizes into `a` (NULL, or why not; *query the query axis);
 * a causal or window mask node; a value as it lies in device memory; the tiles. */
char     *_napkin_plan_attention_layout    (NapkinPlanner       *p,
                                            NapkinPlanAttention *a,
                                            const NapkinTensor  *Q,
                                            const NapkinTensor  *K,
                                            const NapkinTensor  *V,
                                            const NapkinTensor  *O,
                                            const char          *key,
                                            const char          *preferred,
                                            const char         **query);
/* Strides of `t` (named t_name in an error), which has `like`'s axes in any order but like's last (the head axis)
 * last: along a's leading axes (lead[a->n_lead]), the axis `row_axis` and, where group is
 * given, `group_axis` (0 when −1). NULL, or why not. */
char     *_napkin_plan_attention_strides   (NapkinPlanner             *p,
                                            const NapkinPlanAttention *a,
                                            const NapkinTensor        *t,
                                            const NapkinTensor        *like,
                                            const char                *t_name,
                                            const char                *like_name,
                                            int                        row_axis,
                                            int                        group_axis,
                                            gint64                    *lead,
                                            gint64                    *row,
                                            gint64                    *group);
/* The strides along the scores' axes (K's leading axes, a's group and query axes, the
 * key `key` last and contiguous) of the value `value`, a score operand's or its
 * gradient's, into sc->lead, group, row. NULL, or why not (naming `id`). */
char     *_napkin_plan_attention_score_strides (NapkinPlanner             *p,
                                                const NapkinPlanAttention *a,
                                                int                        value,
                                                const NapkinTensor        *K,
                                                const char                *key,
                                                const char                *id,
                                                NapkinPlanAttnScore       *sc);
/* The score operand of `node` (a bias's add or sub, or a tensor mask; its operand on
 * `port`, a bias weighed by `weight`, the scales after it: a->alpha set) appended to a's
 * scores, its strides along the scores' axes (K's leading axes, a's query and group axes,
 * `key`). NULL, or why not. */
char     *_napkin_plan_attention_add_score (NapkinPlanner       *p,
                                            NapkinPlanAttention *a,
                                            int                  node,
                                            int                  port,
                                            double               weight,
                                            const NapkinTensor  *K,
                                            const char          *key);
char     *_napkin_plan_attention_read_mask (NapkinPlanAttention *a,
                                            const NapkinNode    *mask,
                                            const char          *key,
                                            const char          *query);
gboolean  _napkin_plan_attention_value     (NapkinPlanner       *p,
                                            int                  node,
                                            NapkinTensor        *tmp,
                                            const char         **names);
void      _napkin_plan_attention_count_tiles (NapkinPlanAttention *a);
/* An attention kernel's score operands for `plan` --format json (docs/plan.md, "Score
 * operands"): kind, operand, type, factor, strides, staging. */
json_object *_napkin_plan_attention_scores_json (const NapkinPlan          *plan,
                                                 const NapkinPlanAttention *a);

/* ---- roles and layout (src/plan/napkin-plan-layout.c; docs/plan.md, "Roles and layout") ---- */

/* How a device-memory buffer holds a node's value, as the lowering places it (src/lower):
 * an input's tensor, else the first output tensor it feeds, else a buffer between kernels
 * in the order of its inferred type. */
typedef struct
{
  guint               n;
  guint               axes[NAPKIN_MAX_RANK];   /* outermost first */
  NapkinDtype         dtype;                   /* as stored; the plan's dtype where it forces one */
  const NapkinTensor *tensor;                  /* the input's or output's tensor, or NULL */
} NapkinPlanLayout;

/* The part an axis plays in a product X·Y → R: in both operands and R (batch), in both
 * operands only (contracted), in X and R (the GEMM's rows), in Y and R (its columns), in
 * one operand only (summed alone: no GEMM), or in neither. */
typedef enum
{
  NAPKIN_PLAN_ROLE_NONE,
  NAPKIN_PLAN_ROLE_BATCH,
  NAPKIN_PLAN_ROLE_ROW,
  NAPKIN_PLAN_ROLE_COLUMN,
  NAPKIN_PLAN_ROLE_CONTRACTED,
  NAPKIN_PLAN_ROLE_SUMMED_ALONE,
} NapkinPlanRole;

/* Whether two values have the same axes, in any order. */
gboolean    _napkin_plan_same_axes      (const NapkinTensorType *a,
                                         const NapkinTensorType *b);
/* The input's tensor, or the first output tensor `node` feeds; NULL for a value between
 * kernels. */
const NapkinTensor *_napkin_plan_stored_tensor (NapkinDiagram          *d,
                                                int                     node);
/* The element type `node`'s value has in device memory (the plan's dtype where given). */
NapkinDtype _napkin_plan_value_dtype    (NapkinPlanner          *p,
                                         int                     node);
/* `node`'s layout into `l`; FALSE where its type is not known. */
gboolean    _napkin_plan_value_layout   (NapkinPlanner          *p,
                                         int                     node,
                                         NapkinPlanLayout       *l);
/* Where `axis` stands in the list `axes` of `n`, or −1. */
int         _napkin_plan_axes_position  (const guint            *axes,
                                         guint                   n,
                                         guint                   axis);
/* Elements between neighbours along `axis` in the layout (row-major); 0 when it lacks it. */
gint64      _napkin_plan_layout_stride  (NapkinDiagram          *d,
                                         const NapkinPlanLayout *l,
                                         guint                   axis);
/* Where the `n` axes of `group` lie in `l` as one contiguous run in their order: the
 * run's first position, −1 when they do not, −2 for an empty group (it lies anywhere). */
int         _napkin_plan_layout_run     (const NapkinPlanLayout *l,
                                         const guint            *group,
                                         guint                   n);
NapkinPlanRole _napkin_plan_product_role (const NapkinTensorType *x,
                                          const NapkinTensorType *y,
                                          const NapkinTensorType *result,
                                          guint                   axis);

/* Helpers. */
NapkinDtype _napkin_plan_dtype          (NapkinPlanner    *p,
                                        int               node);
/* Whether `node` (−1: no) is one of `kernel`'s, in constant time. */
gboolean    _napkin_plan_member         (NapkinPlanner    *p,
                                        const NapkinPlanKernel *kernel,
                                        int               node);
/* Whether `node` is a view: a rearrange that renames its input's axes by position (the
 * same sizes in the same order over a value stored in its type's order: the same bytes,
 * as the importer's key axis s → k), read by one operation. A kernel that takes it reads
 * its input's buffer instead: no copy (docs/plan.md, "Views"). */
gboolean    _napkin_plan_is_view        (NapkinDiagram    *d,
                                        guint             node);
/* Whether `node` is a contraction that sums only over axes of size 1 (P·V over one key,
 * an outer product, a product of same-shaped values): an element-wise product of its two
 * operands, each broadcast along the axes it lacks, which the plan runs as an
 * element-wise kernel rather than a GEMM whose K is padded to a chunk (docs/plan.md,
 * "Products over axes of size 1"). */
gboolean    _napkin_plan_unit_product   (NapkinDiagram    *d,
                                        guint             node);
/* Whether the environment variable `name` is set to something other than "" or "0": the
 * plan's switches for A/B runs on a GPU (docs/plan.md). */
gboolean    _napkin_plan_env_flag       (const char       *name);
/* A new scratch buffer of `bytes` in the plan's scratch area; its index. */
int         _napkin_plan_add_scratch    (NapkinPlan       *plan,
                                        gint64            bytes);
/* A new kernel of `kind` on `path` for the kernel being planned (its name, region and
 * node copied), for p->before or p->after. */
NapkinPlanKernel *_napkin_plan_kernel_new (const NapkinPlanKernel *like,
                                        NapkinPlanKind    kind,
                                        NapkinPath        path);
void        _napkin_plan_kernel_free    (gpointer          kernel);

G_END_DECLS
