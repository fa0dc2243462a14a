/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib-object.h>
#include <json-c/json.h>

#include "napkin-types.h"

G_BEGIN_DECLS

/* The items of a diagram. The diagram owns them; callers read them through the
 * getters and change them only through NapkinHistory (napkin-edit.h), so that
 * every change can be undone. Unknown JSON fields of each item live in `extra`
 * (NULL or a JSON object) and are written back on save. */

typedef enum
{
  NAPKIN_ITEM_AXIS,
  NAPKIN_ITEM_TENSOR,
  NAPKIN_ITEM_NODE,
  NAPKIN_ITEM_WIRE,
  NAPKIN_ITEM_REGION,
  NAPKIN_N_ITEM_KINDS
} NapkinItemKind;

typedef struct
{
  char        *name;
  gint64       size;
  json_object *extra;
} NapkinAxis;

/* A tensor that lives in device memory: an input or an output of the diagram.
 * Its axes are in memory order (the last one is contiguous). */
typedef struct
{
  char        *name;
  char       **axes;
  NapkinDtype  dtype;
  json_object *extra;
} NapkinTensor;

typedef struct
{
  char          *id;
  NapkinOpKind   kind;
  char          *label;     /* free text, never code */
  double         x;
  double         y;
  char          *tensor;    /* input, output: a name in the tensors list */
  char         **out;       /* contract, rearrange (required), map (optional): output axes */
  char          *axis;      /* reduce, softmax, normalize */
  NapkinMapFn    fn;        /* map */
  double         alpha;     /* map scale: the number, or alpha_expr's value for the axes' sizes */
  char          *alpha_expr;/* map scale as an expression of axis sizes ("1/sqrt(d)", napkin-expr.h),
                               or NULL: alpha is a plain number (docs/file-format.md) */
  NapkinReduceOp reduce;    /* reduce */
  NapkinNormKind norm;      /* normalize */
  double         eps;       /* normalize */
  double         exp_fma;   /* softmax, map exp: the fraction of exponentials computed by a
                               polynomial on the FMA units instead of the SFU (0: all on the SFU) */
  NapkinMaskKind mask;      /* mask: what it keeps; `axis` is the key axis */
  char          *rows;      /* mask: the query (row) axis */
  gint64         offset;    /* mask: diagonal shift, NKV - NQ for a KV-cache prefill */
  gint64         left;      /* mask window: keys before the diagonal, -1 unbounded */
  gint64         right;     /* mask window: keys after the diagonal, -1 unbounded */
  gboolean       has_dtype; /* the result's element type, else the first input's */
  NapkinDtype    dtype;
  json_object   *extra;
} NapkinNode;

/* The output of node `from` feeds input port `port` of node `to`. An input port
 * takes at most one wire, so (to, port) identifies a wire. */
typedef struct
{
  char        *from;
  char        *to;
  guint        port;
  json_object *extra;
} NapkinWire;

typedef struct
{
  char          *axis;
  NapkinMarkKind kind;
  gint64         tile;      /* group size g or stream chunk s; 0 for whole */
} NapkinMark;

typedef struct
{
  char        *name;
  NapkinLevel  level;
  GPtrArray   *nodes;       /* char * node ids */
  GArray      *marks;       /* NapkinMark, axes not listed are whole */
  guint        stages;      /* pipeline stages for streamed inputs, >= 1 */
  guint        threads;     /* threads per instance, 1–1024; 0: the model chooses */
  gboolean     has_rect;
  double       x, y, width, height;
  json_object *extra;
  /* The ids of `nodes` as a set, for napkin_region_has_node: change `nodes` only
   * through napkin_region_add_node, napkin_region_remove_node and
   * napkin_region_clear_nodes, which keep the two in step. */
  GHashTable  *node_set;
} NapkinRegion;

/* Where a tensor lives across GPUs before the diagram runs (inputs) or after it
 * (outputs): whole on every GPU, or cut along one of its axes into equal slices,
 * slice i on GPU i (docs/multi-gpu.md). */
typedef struct
{
  char        *tensor;
  char        *split;       /* an axis of the tensor, or NULL: replicated */
} NapkinPlacement;

/* The relabeling above device memory: a region of level "gpus" in the file
 * (docs/multi-gpu.md, docs/file-format.md). It is kept apart from the regions of one
 * GPU, which never see it: the kernel plan, the model of one GPU and the code
 * generator work on the shard diagram that src/plan/napkin-shard.h derives from it. */
typedef struct
{
  NapkinRegion *region;     /* name, nodes, marks (parallel, tile 0: across every GPU), rect, extra */
  guint         position;   /* its index in the file's regions[], kept on save */
  guint         gpus;       /* "gpus": the GPU count analysed by default, 0: not given */
  guint         chunks;     /* "overlap": {"chunks": k, "axis": a}; 0: no overlap */
  char         *chunk_axis;
  guint         comm_sms;   /* "overlap": {"comm_sms": s}: SMs the chunked compute leaves to NCCL; 0: none */
  GArray       *placements; /* NapkinPlacement, in file order */
  json_object  *overlap_extra;   /* unknown fields of "overlap" */
} NapkinGpusRegion;

typedef struct
{
  double       zoom;
  double       scroll_x;
  double       scroll_y;
  json_object *extra;
} NapkinView;

/* The inferred type of a node's output: axis indices into the diagram's axes. */
typedef struct
{
  guint       n_axes;
  guint       axes[NAPKIN_MAX_RANK];
  NapkinDtype dtype;
  gboolean    valid;
} NapkinTensorType;

/* How napkin_node_infer_type finds the axes and tensors a node names. */
typedef struct
{
  int                 (*axis)   (gpointer data, const char *name);   /* its index, or -1 */
  const NapkinTensor *(*tensor) (gpointer data, const char *name);   /* or NULL */
  gpointer              data;
} NapkinTypeLookup;

/* The type of `node`'s output from its inputs' types (inputs[0] and inputs[1], NULL
 * or invalid where unknown): the rule of napkin_diagram_node_type, for a builder that
 * keeps its own index of a diagram it is still adding to (the importers). */
void                napkin_node_infer_type          (const NapkinNode              *node,
                                                     const NapkinTensorType * const *inputs,
                                                     const NapkinTypeLookup         *lookup,
                                                     NapkinTensorType               *type);

/* FLOPs of one node, split by the unit that does them. */
typedef struct
{
  gint64 tensor;    /* contractions: tensor cores */
  gint64 cuda;      /* elementwise and reductions: CUDA cores */
  gint64 sfu;       /* exp, rsqrt, ...: special-function units */
} NapkinFlops;

#define NAPKIN_TYPE_DIAGRAM (napkin_diagram_get_type ())
G_DECLARE_FINAL_TYPE (NapkinDiagram, napkin_diagram, NAPKIN, DIAGRAM, GObject)

#define NAPKIN_FORMAT_VERSION 1

NapkinDiagram      *napkin_diagram_new              (void);
NapkinDiagram      *napkin_diagram_copy             (NapkinDiagram     *self);
/* A copy without the nodes flagged in `bypass` (one flag a node, in node order): a wire
 * out of a bypassed node leaves from what feeds its first input instead, wires into it
 * go, and its id leaves every region. The plan folds casts into the value they cast so
 * (docs/plan.md, "The pipeline"). */
NapkinDiagram      *napkin_diagram_copy_bypassing   (NapkinDiagram     *self,
                                                     const gboolean    *bypass);
/* A copy sharing nothing with the original (json-c's reference counts are not
 * atomic): for work in another thread that needs no unknown fields (the model, the
 * code generator); a tensor's "constant" stays, in objects of the copy's own. It may be
 * freed in that thread. */
NapkinDiagram      *napkin_diagram_copy_without_extras (NapkinDiagram  *self);
/* The constant a tensor holds ("constant": "rotate_half", which the runner, the
 * interpreter and the printers make rather than read: docs/import.md), or NULL. */
const char         *napkin_tensor_get_constant      (const NapkinTensor *tensor);

const char         *napkin_diagram_get_title        (NapkinDiagram     *self);
void                napkin_diagram_set_title        (NapkinDiagram     *self,
                                                     const char        *title);
const char         *napkin_diagram_get_description  (NapkinDiagram     *self);
void                napkin_diagram_set_description  (NapkinDiagram     *self,
                                                     const char        *description);
NapkinView         *napkin_diagram_get_view         (NapkinDiagram     *self);
json_object        *napkin_diagram_get_extra        (NapkinDiagram     *self);
void                napkin_diagram_set_extra        (NapkinDiagram     *self,
                                                     json_object       *extra);

/* Generation counter: bumps on every change, so caches can tell they are stale. */
guint64             napkin_diagram_get_generation   (NapkinDiagram     *self);

/* Generic item access. */
guint               napkin_diagram_count            (NapkinDiagram     *self,
                                                     NapkinItemKind     kind);
gpointer            napkin_diagram_get_item         (NapkinDiagram     *self,
                                                     NapkinItemKind     kind,
                                                     guint              index);
int                 napkin_diagram_find             (NapkinDiagram     *self,
                                                     NapkinItemKind     kind,
                                                     const char        *key);
void                napkin_diagram_insert_item      (NapkinDiagram     *self,
                                                     NapkinItemKind     kind,
                                                     guint              index,
                                                     gpointer           item);
gpointer            napkin_diagram_steal_item       (NapkinDiagram     *self,
                                                     NapkinItemKind     kind,
                                                     guint              index);
void                napkin_diagram_replace_item     (NapkinDiagram     *self,
                                                     NapkinItemKind     kind,
                                                     guint              index,
                                                     gpointer           item);
void                napkin_diagram_changed          (NapkinDiagram     *self);
/* Between freeze and thaw, changes bump the generation but ::changed is emitted
 * once, at the thaw, so a grouped edit redraws once. */
void                napkin_diagram_freeze_changed   (NapkinDiagram     *self);
void                napkin_diagram_thaw_changed     (NapkinDiagram     *self);

/* Typed shortcuts. */
#define napkin_diagram_n_axes(d)      napkin_diagram_count ((d), NAPKIN_ITEM_AXIS)
#define napkin_diagram_n_tensors(d)   napkin_diagram_count ((d), NAPKIN_ITEM_TENSOR)
#define napkin_diagram_n_nodes(d)     napkin_diagram_count ((d), NAPKIN_ITEM_NODE)
#define napkin_diagram_n_wires(d)     napkin_diagram_count ((d), NAPKIN_ITEM_WIRE)
#define napkin_diagram_n_regions(d)   napkin_diagram_count ((d), NAPKIN_ITEM_REGION)
#define napkin_diagram_axis(d, i)     ((const NapkinAxis *) napkin_diagram_get_item ((d), NAPKIN_ITEM_AXIS, (i)))
#define napkin_diagram_tensor(d, i)   ((const NapkinTensor *) napkin_diagram_get_item ((d), NAPKIN_ITEM_TENSOR, (i)))
#define napkin_diagram_node(d, i)     ((const NapkinNode *) napkin_diagram_get_item ((d), NAPKIN_ITEM_NODE, (i)))
#define napkin_diagram_wire(d, i)     ((const NapkinWire *) napkin_diagram_get_item ((d), NAPKIN_ITEM_WIRE, (i)))
#define napkin_diagram_region(d, i)   ((const NapkinRegion *) napkin_diagram_get_item ((d), NAPKIN_ITEM_REGION, (i)))

int                 napkin_diagram_find_axis        (NapkinDiagram     *self,
                                                     const char        *name);
int                 napkin_diagram_find_node        (NapkinDiagram     *self,
                                                     const char        *id);
int                 napkin_diagram_find_region      (NapkinDiagram     *self,
                                                     const char        *name);
int                 napkin_diagram_find_tensor      (NapkinDiagram     *self,
                                                     const char        *name);
gint64              napkin_diagram_axis_size        (NapkinDiagram     *self,
                                                     guint              axis);

/* Graph queries, cached per generation. Indices are node indices. */
guint               napkin_op_n_inputs              (const NapkinNode  *node);
int                 napkin_diagram_input_source     (NapkinDiagram     *self,
                                                     guint              node,
                                                     guint              port);
int                 napkin_diagram_wire_for_port    (NapkinDiagram     *self,
                                                     guint              node,
                                                     guint              port);
const guint        *napkin_diagram_consumers        (NapkinDiagram     *self,
                                                     guint              node,
                                                     guint             *n_consumers);
/* Topological order, or NULL when the graph has a cycle. */
const guint        *napkin_diagram_topo_order       (NapkinDiagram     *self);
/* Output type of a node; .valid is FALSE if it cannot be inferred. */
const NapkinTensorType *napkin_diagram_node_type    (NapkinDiagram     *self,
                                                     guint              node);
gboolean            napkin_diagram_node_flops       (NapkinDiagram     *self,
                                                     guint              node,
                                                     NapkinFlops       *flops);
gboolean            napkin_diagram_total_flops      (NapkinDiagram     *self,
                                                     NapkinFlops       *flops);
/* The total less what causal and window masks hide: an operation over both of a mask's
 * axes (Q·Kᵀ, the scale, the mask, the softmax, P·V) counts only the (query, key) pairs
 * the mask keeps (causal N × N: N(N+1)/2). What a throughput should be reported on. */
gboolean            napkin_diagram_computed_flops   (NapkinDiagram     *self,
                                                     NapkinFlops       *flops);
gboolean            napkin_tensor_type_has_axis     (const NapkinTensorType *type,
                                                     guint              axis);
gboolean            napkin_diagram_type_elements    (NapkinDiagram     *self,
                                                     const NapkinTensorType *type,
                                                     gint64            *elements);
/* What a contraction's output axes should be from its wires: the axes of its inputs
 * that only one of them carries (the shared ones are summed), first input's first —
 * A[m,k]·B[k,n] gives m, n. NULL while an input is unconnected or of unknown type. */
char              **napkin_diagram_infer_contract_out (NapkinDiagram *self,
                                                     guint              node);
/* Writes "A[m,k] fp16" style text; returns a newly allocated string. */
char               *napkin_diagram_type_to_string   (NapkinDiagram     *self,
                                                     const NapkinTensorType *type);

/* The region's mark for an axis (whole when unmarked). Returns the tile. */
NapkinMarkKind      napkin_region_mark              (const NapkinRegion *region,
                                                     const char        *axis,
                                                     gint64            *tile);
gboolean            napkin_region_has_node          (const NapkinRegion *region,
                                                     const char        *id);
/* Whether operation n or one of its operands carries the axis. */
gboolean            napkin_diagram_node_uses_axis   (NapkinDiagram     *self,
                                                     guint              node,
                                                     guint              axis);
/* Whether an operation of the region (or one of its operands) carries the axis. */
gboolean            napkin_region_uses_axis         (NapkinDiagram     *self,
                                                     const NapkinRegion *region,
                                                     guint              axis);
/* Whether a contraction of the region sums over the axis (an operand has it, the
 * result not); `n_products`, if not NULL, gets how many contractions the region has. */
gboolean            napkin_region_sums_axis         (NapkinDiagram     *self,
                                                     const NapkinRegion *region,
                                                     guint              axis,
                                                     guint             *n_products);
/* Whether a softmax, normalization or reduction of the region works along the axis. */
gboolean            napkin_region_reduces_axis      (NapkinDiagram     *self,
                                                     const NapkinRegion *region,
                                                     const char        *axis);
/* FALSE (and nothing added) when the id is listed already. */
gboolean            napkin_region_add_node          (NapkinRegion      *region,
                                                     const char        *id);
gboolean            napkin_region_remove_node       (NapkinRegion      *region,
                                                     const char        *id);
void                napkin_region_clear_nodes       (NapkinRegion      *region);

/* Item memory. */
gpointer            napkin_item_copy                (NapkinItemKind     kind,
                                                     gconstpointer      item);
void                napkin_item_free                (NapkinItemKind     kind,
                                                     gpointer           item);
char               *napkin_item_key                 (NapkinItemKind     kind,
                                                     gconstpointer      item);
NapkinNode         *napkin_node_new                 (const char        *id,
                                                     NapkinOpKind       kind);
NapkinRegion       *napkin_region_new               (const char        *name,
                                                     NapkinLevel        level);
void                napkin_region_set_mark          (NapkinRegion      *region,
                                                     const char        *axis,
                                                     NapkinMarkKind     kind,
                                                     gint64             tile);

static inline void napkin_node_free (NapkinNode *node) { napkin_item_free (NAPKIN_ITEM_NODE, node); }
static inline void napkin_region_free (NapkinRegion *region) { napkin_item_free (NAPKIN_ITEM_REGION, region); }
G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinNode, napkin_node_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinRegion, napkin_region_free)

/* Sets node->alpha from node->alpha_expr at the axes' sizes (nothing to do without an
 * expression). FALSE with the error, the node's last value kept, when the expression
 * names an axis the diagram lacks. The diagram does it whenever an axis or an
 * operation is inserted or replaced, so that a scale of 1/sqrt(d) follows d. */
gboolean            napkin_diagram_eval_alpha       (NapkinDiagram     *self,
                                                     NapkinNode        *node,
                                                     GError           **error);
/* An expression of the diagram's axis sizes (napkin-expr.h), evaluated. */
gboolean            napkin_diagram_eval_expr        (NapkinDiagram     *self,
                                                     const char        *text,
                                                     double            *value,
                                                     GError           **error);
/* The gpus region, or NULL (at most one per diagram). set takes ownership (NULL removes
 * it) and bumps the generation. */
const NapkinGpusRegion *napkin_diagram_get_gpus     (NapkinDiagram     *self);
void                napkin_diagram_set_gpus         (NapkinDiagram     *self,
                                                     NapkinGpusRegion  *gpus);
NapkinGpusRegion   *napkin_gpus_region_new          (const char        *name);
NapkinGpusRegion   *napkin_gpus_region_copy         (const NapkinGpusRegion *gpus,
                                                     gboolean           with_extras);
void                napkin_gpus_region_free         (NapkinGpusRegion  *gpus);
/* The placement declared for a tensor, NULL when none (replicated). */
const NapkinPlacement *napkin_gpus_region_placement (const NapkinGpusRegion *gpus,
                                                     const char        *tensor);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinGpusRegion, napkin_gpus_region_free)

/* A copy of `region` with every tile larger than its axis now is cut to the axis
 * (a resized axis: the tile becomes the whole axis, its kind kept, the plan rounds a
 * streamed chunk as it does any hint), or NULL when every tile fits. Each cut appends
 * a sentence to `notes` (may be NULL). */
NapkinRegion       *napkin_region_refit             (NapkinDiagram     *self,
                                                     const NapkinRegion *region,
                                                     GString           *notes);

/* Overrides for the command line: no undo, checked like the editor's edits. */
gboolean            napkin_diagram_override_axis    (NapkinDiagram     *self,
                                                     const char        *spec,
                                                     GError           **error);
gboolean            napkin_diagram_override_tile    (NapkinDiagram     *self,
                                                     const char        *spec,
                                                     GError           **error);
/* napkin_region_refit on every region, in place (after --axis); the number cut. */
guint               napkin_diagram_refit_tiles      (NapkinDiagram     *self,
                                                     GString           *notes);

G_END_DECLS
