/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <json-c/json.h>

#include "napkin-import-private.h"

G_BEGIN_DECLS

/* The graph importer's own state, shared by its files (docs/import.md, "Graph JSON"):
 * napkin-import-graph.c reads the graph, reports and names; -axes.c keeps the axis
 * classes; -ops.c is pass 1 per operation; -patterns.c finds what spans several
 * operations (rotate_half, masks, norms written out, values computed from parameters
 * alone); -emit.c is pass 2. Functions named gi_ are this importer's internals. */

#define MAX_DIMS    NAPKIN_MAX_RANK
#define NONE        (-1)      /* a broadcast dimension of size 1 (unsqueeze): no axis */

typedef struct
{
  int     parent;
  gint64  size;
  GArray *kids;               /* int classes, NULL when atomic */
  char   *hint;
  int     prio;
  char   *axis;               /* pass 2: the napkin axis of an atomic root */
  int     alias;              /* a renamed copy of this class (a key axis), or NONE */
} Class;

typedef enum
{
  EMIT_SKIP,        /* no computation (an assertion), or absorbed into a pattern */
  EMIT_INPUT,
  EMIT_VIEW,        /* the same napkin value as args[0] */
  EMIT_CAST,
  EMIT_CONTRACT,    /* linear mm bmm matmul einsum addmm */
  EMIT_SOFTMAX,
  EMIT_NORM,
  EMIT_ATTENTION,
  EMIT_MAP1,
  EMIT_MAP2,
  EMIT_SCALE,
  EMIT_ROTATE,
  EMIT_GETITEM,
  EMIT_PART,        /* one part of a split, a select or a slice: args[0] restricted */
  EMIT_REDUCE,
  EMIT_MASK,        /* masked_fill / where with a mask: a mask node */
  EMIT_TUPLE,       /* split, chunk, unbind: only its parts are used */
  EMIT_GROUP_NORM,  /* group_norm: reshaped to [batch, groups, rest], normalised, back */
} Emit;

/* What a boolean value keeps, as the mask operation reads it. */
typedef enum
{
  MASK_NONE,
  MASK_ONES,        /* torch.ones: keeps everything (before tril/triu) */
  MASK_TRIL,        /* keeps j ≤ i + offset over the last two dimensions */
  MASK_TRIU,        /* keeps j ≥ i + offset */
  MASK_TENSOR,      /* a boolean tensor of the graph (`tensor`): keeps where true */
  MASK_BAND,        /* keeps i + lower ≤ j ≤ i + offset: a tril and a triu anded (a window) */
} MaskKind;

typedef struct
{
  MaskKind kind;
  gint64   offset;
  gboolean invert;            /* keeps where the pattern does not */
  int      tensor;            /* MASK_TENSOR: the value index of the boolean tensor */
  gint64   lower;             /* MASK_BAND */
} MaskInfo;

/* One restricted atom of a part: the atom `atom` runs over [start, end) of itself,
 * as the atom `repl` (NONE when one index is selected and the dimension goes). */
typedef struct
{
  int         atom;
  gint64      start;
  gint64      end;
  int         repl;
  const char *tag;            /* the part's name (q, k, v from the code), or NULL */
} Restrict;

/* The key axis of a written-out attention: operand `operand` of a value sees its
 * class `from` as `to` (a renaming rearrange in front of it). */
typedef struct
{
  guint operand;
  int   from;
  int   to;
} Rename;

typedef struct
{
  char        *name;
  const char  *target;        /* "aten.linear.default" */
  char        *base;          /* "linear" */
  json_object *obj;
  json_object *args;
  json_object *kwargs;
  guint        line;
  const char  *file;
  const char  *code;
  guint        n_dims;
  gint64       shape[MAX_DIMS];
  int          dims[MAX_DIMS];
  gboolean     has_shape;
  gboolean     has_dtype;
  gboolean     is_bool;       /* a boolean tensor: only a mask reads it */
  gboolean     is_int;        /* an integer tensor (also is_bool): a 0/1 mask, nonzero keeps */
  NapkinDtype  dtype;
  const char  *dtype_name;
  Emit         emit;
  int          src[3];        /* value indices of tensor operands */
  NapkinMapFn  fn;
  double       alpha;
  double       product_alpha; /* a product scaled before its bias (baddbmm's alpha); 0: none */
  int          out_from;      /* a square weight's product: the weight's output class, which the
                                 product computes and then renames to its own (NONE: none) */
  int          axis_dim;      /* softmax, norm, rotate, reduce: the torch dim */
  guint64      reduce_more;   /* reduce: further torch dims of the operand, a bit each (one
                                 reduction node each after axis_dim's) */
  NapkinNormKind norm;
  NapkinReduceOp reduce;
  double       eps;
  gboolean     causal;
  gboolean     default_scale; /* attention without a scale: 1/sqrt(d), which follows d */
  int          extra[4];      /* einsum/matmul/linear: bias value; attention: value of v */
  gboolean     absorbed;
  gboolean     poisoned;      /* refused: what reads it is not reported again */
  gboolean     user_dep;      /* depends on a user input (not on parameters alone) */
  gboolean     is_scalar;     /* a number: full([], c), a one-element constant */
  double       scalar;
  MaskInfo     mask;          /* boolean values: what they keep */
  GArray      *cuts;          /* EMIT_PART: Restrict, on src[0]'s atoms */
  GArray      *renames;       /* Rename */
  guint        users;         /* references in the graph */
  GPtrArray   *readers;       /* Value *: what reads it (after the patterns) */
  gboolean     rewritten;     /* a pattern's result: it reads src[] and extra[0], not its arguments */
  gboolean     hoisted;       /* computed from parameters alone: an input of the diagram (role 3) */
  gboolean     lazy;          /* read only in parts: only its parts are emitted */
  gboolean     is_output;
  char        *napkin;        /* pass 2: id of the node that makes it */
  int          role;          /* placeholder: 0 input, 1 parameter, 2 buffer, 3 computed from parameters */
  const char  *param;         /* placeholder: parameter's or buffer's name */
  char        *stem;          /* a name for the tensor or the parts it makes */
  guint        index;         /* its place in the graph's nodes, for references */
} Value;

typedef struct
{
  const char    *source;
  GArray        *classes;     /* Class */
  GPtrArray     *values;      /* Value * */
  GHashTable    *by_name;     /* name → Value * */
  GError       **error;
  gboolean       failed;      /* the graph cannot be read at all */
  GPtrArray     *refusals;    /* char *: the first refused operations, with their lines and what to write */
  guint          n_refusals;  /* all of them */
  guint          n_checks;    /* assertions left out */
  guint          n_dropouts;  /* eval-mode dropouts left out */
  GPtrArray     *notes;       /* char *: for the description */
  NapkinDiagram *d;
  NapkinImportBuilder *b;     /* the one index of what is added (napkin-import-private.h) */
  GHashTable    *rotations;   /* axis name → tensor name of its rotate-half matrix */
  GHashTable    *rotation_inputs;   /* tensor name → id of its input node */
  GHashTable    *variants;    /* "value|restriction|renames" → node id */
  GHashTable    *square;      /* weights whose two axes the graph makes one (x + W(x)): their
                                 product's result gets an axis of its own, renamed after */
  GHashTable    *square_found;/* … found by check_distinct, for the second reading */
  json_object   *outputs;
} G;

/* napkin-import-graph.c: errors and arguments */
char        *gi_where            (G *g, Value *v);
void         gi_fail             (G *g, Value *v, const char *format, ...) G_GNUC_PRINTF (3, 4);
/* The graph cannot be read on (a limit of the file format reached): stops both passes. */
void         gi_fatal            (G *g, Value *v, const char *format, ...) G_GNUC_PRINTF (3, 4);
void         gi_refuse           (G *g, Value *v, const char *why, const char *instead);
void         gi_note             (G *g, const char *format, ...) G_GNUC_PRINTF (2, 3);
json_object *gi_member           (json_object *obj, const char *key);
const char  *gi_member_string    (json_object *obj, const char *key);
const char  *gi_member_string_or (json_object *obj, const char *key, const char *fallback);
json_object *gi_arg              (Value *v, guint i, const char *key);
Value       *gi_arg_value        (G *g, Value *v, guint i, const char *key);
Value       *gi_value            (G *g, json_object *ref);
int          gi_value_index      (G *g, Value *v);
gboolean     gi_arg_int          (Value *v, guint i, const char *key, gint64 fallback, gint64 *out);
gboolean     gi_arg_double       (Value *v, guint i, const char *key, double fallback, double *out);
gboolean     gi_arg_bool         (Value *v, guint i, const char *key);
gboolean     gi_arg_is_number    (Value *v, guint i);
gboolean     gi_number           (G *g, json_object *a, double *out);
gboolean     gi_norm_dim         (gint64 dim, guint rank, int *out);
gboolean     gi_in_list          (const char *base, const char * const *list, gsize n);
char        *gi_lhs_name         (const char *code, gint64 index);
gint64       gi_lhs_name_count   (const char *code);

/* napkin-import-graph-axes.c: axis classes */
Class       *gi_cls              (G *g, int c);
int          gi_new_class        (G *g, gint64 size);
int          gi_find             (G *g, int c);
void         gi_hint             (G *g, int c, const char *name, int prio);
gboolean     gi_unite            (G *g, Value *v, int a, int b);
gboolean     gi_split            (G *g, Value *v, int c, GArray *kids);
void         gi_expand           (G *g, int c, GArray *atoms);
int          gi_composite        (G *g, GArray *kids);
gboolean     gi_related          (G *g, int a, int b);
int          gi_alias            (G *g, int c);
gint64       gi_dim_size         (G *g, Value *v, guint i);
void         gi_fresh_dims       (G *g, Value *v);
void         gi_copy_dims        (Value *dst, Value *src);
gboolean     gi_broadcast        (G *g, Value *v, Value *a, Value *b);
gboolean     gi_check_shape      (G *g, Value *v);
gboolean     gi_reshape          (G *g, Value *v, Value *a);
gboolean     gi_restrict_dim     (G *g, Value *v, Value *a, int dim, gint64 start, gint64 end, gboolean drop);

/* napkin-import-graph-ops.c: pass 1 */
gboolean     gi_parse_shape      (G *g, Value *v, json_object *shape);
gboolean     gi_need             (G *g, Value *v, Value *a, guint rank_at_least);
void         gi_set_src          (G *g, Value *v, guint i, Value *a);
void         gi_pass1_call       (G *g, Value *v);
void         gi_add_rename       (G *g, Value *v, guint operand, int from, int to);

/* napkin-import-graph-patterns.c */
void         gi_find_constants   (G *g);
void         gi_find_patterns    (G *g);
void         gi_sweep            (G *g);
void         gi_find_lazy        (G *g);
gboolean     gi_mask_of          (G *g, Value *v, MaskInfo *out);
gboolean     gi_scalar_of        (G *g, json_object *a, double *out);
Value       *gi_strip_views      (G *g, Value *v);

/* napkin-import-graph-emit.c: pass 2 */
char       **gi_atom_names       (G *g, Value *v);
const char  *gi_axis_of_dim      (G *g, Value *v, int dim);
Value       *gi_src              (G *g, Value *v, guint i);
const char  *gi_emit_node        (G *g, Value *v, NapkinNode *node, const char *stem, const char *in0,
                                  const char *in1);
NapkinNode  *gi_map_node         (NapkinMapFn fn, const char *label);
char       **gi_stored_order     (G *g, const char *in, char **fallback);
const char  *gi_rename_axis      (G *g, Value *v, const char *in, char **axes, const char *from, const char *to,
                                  const char *stem);
const char  *gi_operand          (G *g, Value *v, guint i);
void         gi_pass2_value      (G *g, Value *v);
void         gi_emit_inputs      (G *g);

G_END_DECLS
