/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-lower"

#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-ir.h"
#include "napkin-validate.h"

G_DEFINE_QUARK (napkin-lower-error-quark, napkin_lower_error)

/* Loops nested deeper than this are refused (docs/codegen.md, "Walking the diagram
 * without recursion"): the printers and the interpreter walk loop bodies recursively. */
#define MAX_FRAMES 64
/* Streamed contractions and reductions that open their loop inside another's: each
 * one is a level of recursion in emit_compute; everything else is walked without it. */
#define MAX_NESTED_STREAMS 64

/* ---- memory ---------------------------------------------------------------------------- */

static void
stmt_free (gpointer data)
{
  NapkinIrStmt *stmt = data;

  if (stmt == NULL)
    return;
  g_clear_pointer (&stmt->body, g_ptr_array_unref);
  g_free (stmt);
}

static void
buffer_free (gpointer data)
{
  NapkinIrBuffer *buffer = data;

  g_free (buffer->name);
  g_free (buffer);
}

static void
kernel_free (gpointer data)
{
  NapkinIrKernel *kernel = data;

  g_free (kernel->name);
  g_clear_pointer (&kernel->body, g_ptr_array_unref);
  g_free (kernel);
}

void
napkin_ir_program_free (NapkinIrProgram *program)
{
  if (program == NULL)
    return;
  g_clear_object (&program->diagram);
  g_clear_pointer (&program->buffers, g_ptr_array_unref);
  g_clear_pointer (&program->kernels, g_ptr_array_unref);
  g_clear_pointer (&program->home, g_array_unref);
  g_free (program);
}

int
napkin_ir_value_buffer (const NapkinIrProgram *program,
                        int                    node)
{
  g_return_val_if_fail (program != NULL, -1);

  if (program->home == NULL || node < 0 || (guint) node >= program->home->len)
    return -1;
  return g_array_index (program->home, int, node);
}

const NapkinIrBuffer *
napkin_ir_buffer (const NapkinIrProgram *program,
                  int                    id)
{
  g_return_val_if_fail (program != NULL, NULL);
  g_return_val_if_fail (id >= 0 && (guint) id < program->buffers->len, NULL);
  return g_ptr_array_index (program->buffers, id);
}

gint64
napkin_ir_buffer_elements (const NapkinIrBuffer *buffer)
{
  gint64 n = 1;

  for (guint i = 0; i < buffer->n_axes; i++)
    n *= buffer->extent[i];
  return n;
}

const char *
napkin_compute_op_to_string (NapkinComputeOp op)
{
  static const char *names[] = {
    "map", "rearrange", "contract", "reduce", "row-max", "row-sumexp", "softmax", "row-mean",
    "row-rstd", "normalize", "online-stats", "online-acc", "divide", "scale", "mask",
  };

  G_STATIC_ASSERT (G_N_ELEMENTS (names) == NAPKIN_N_COMPUTES);
  g_return_val_if_fail (op < NAPKIN_N_COMPUTES, NULL);
  return names[op];
}

/* ---- the lowering state ------------------------------------------------------------------ */

typedef struct
{
  GPtrArray     *stmts;
  gboolean       is_loop;
  NapkinLoopKind kind;
  guint          axis;
  gint64         tile;
  int            depth;     /* chain index whose level tiles of this frame take; -1: hbm */
  GHashTable    *memo;      /* node + 1 → buffer + 1 computed in this frame */
} Frame;

typedef struct
{
  NapkinDiagram   *d;
  NapkinIrProgram *prog;
  NapkinLowerFlags flags;
  guint            n_nodes;
  guint            n_axes;
  int             *group_of;    /* node → top region index, or -1 */
  int             *home;        /* node → device-memory buffer holding its value */
  guint8          *dep;         /* n_nodes × n_axes: the node's value varies with that axis */
  int              region;      /* current group's top region, -1 for a plain operation */
  int              plain_node;  /* plain operation being lowered: its value goes straight home */
  GPtrArray       *chain;       /* const NapkinRegion *, outer to inner */
  GArray          *chain_index; /* int region indices */
  int              kernel;
  Frame           *frames;      /* the open frames, innermost last */
  guint            n_frames;
  guint            frames_size;
  guint            nested_streams;
  GError         **error;
  gboolean         failed;
} Lower;

static void
fail (Lower      *L,
      int         code,
      const char *format,
      ...) G_GNUC_PRINTF (3, 4);

static void
fail (Lower      *L,
      int         code,
      const char *format,
      ...)
{
  va_list args;

  if (L->failed)
    return;
  L->failed = TRUE;
  va_start (args, format);
  if (L->error != NULL)
    *L->error = g_error_new_valist (NAPKIN_LOWER_ERROR, code, format, args);
  va_end (args);
}

static const char *
axis_name (Lower *L,
           guint  axis)
{
  return napkin_diagram_axis (L->d, axis)->name;
}

static gint64
axis_size (Lower *L,
           guint  axis)
{
  return napkin_diagram_axis_size (L->d, axis);
}

static const NapkinNode *
node_at (Lower *L,
         guint  n)
{
  return napkin_diagram_node (L->d, n);
}

static const NapkinTensorType *
type_of (Lower *L,
         guint  n)
{
  return napkin_diagram_node_type (L->d, n);
}

static NapkinIrStmt *
stmt_new (NapkinStmtKind kind)
{
  NapkinIrStmt *stmt = g_new0 (NapkinIrStmt, 1);

  stmt->kind = kind;
  stmt->dst = -1;
  stmt->node = -1;
  stmt->region = -1;
  for (guint i = 0; i < G_N_ELEMENTS (stmt->src); i++)
    stmt->src[i] = -1;
  return stmt;
}

static Frame *
top (Lower *L)
{
  return &L->frames[L->n_frames - 1];
}

static void
emit (Lower        *L,
      NapkinIrStmt *stmt)
{
  g_ptr_array_add (top (L)->stmts, stmt);
}

static void
push_frame (Lower         *L,
            NapkinLoopKind kind,
            guint          axis,
            gint64         tile,
            int            depth)
{
  Frame *f;

  /* Grows freely; emit_value refuses nesting beyond MAX_FRAMES before it can matter. */
  if (L->n_frames == L->frames_size)
    {
      L->frames_size = MAX (2 * L->frames_size, 16);
      L->frames = g_renew (Frame, L->frames, L->frames_size);
    }
  f = &L->frames[L->n_frames++];
  memset (f, 0, sizeof *f);
  f->stmts = g_ptr_array_new_with_free_func (stmt_free);
  f->is_loop = TRUE;
  f->kind = kind;
  f->axis = axis;
  f->tile = tile;
  f->depth = depth;
  f->memo = g_hash_table_new (NULL, NULL);
}

/* Closes the top frame into a loop statement appended to the frame below. */
static void
pop_frame (Lower *L)
{
  Frame *f = top (L);
  NapkinIrStmt *loop = stmt_new (NAPKIN_STMT_LOOP);

  g_assert (L->n_frames > 1 && f->is_loop);
  loop->loop = f->kind;
  loop->axis = f->axis;
  loop->tile = f->tile;
  loop->region = f->depth >= 0 ? g_array_index (L->chain_index, int, f->depth) : -1;
  loop->level = f->depth >= 0 ? ((const NapkinRegion *) g_ptr_array_index (L->chain, f->depth))->level
                              : NAPKIN_LEVEL_HBM;
  loop->body = f->stmts;
  g_hash_table_unref (f->memo);
  L->n_frames--;
  emit (L, loop);
}

/* Is the axis cut by an enclosing loop of the given kind (-1: any)? */
static gboolean
axis_narrowed (Lower *L,
               guint  axis,
               int    kind)
{
  for (guint i = 0; i < L->n_frames; i++)
    if (L->frames[i].is_loop && L->frames[i].axis == axis && (kind < 0 || (int) L->frames[i].kind == kind))
      return TRUE;
  return FALSE;
}

static gint64
current_extent (Lower *L,
                guint  axis)
{
  for (int i = L->n_frames - 1; i >= 0; i--)
    if (L->frames[i].is_loop && L->frames[i].axis == axis)
      return L->frames[i].tile;
  return axis_size (L, axis);
}

static NapkinLevel
frame_level (Lower *L)
{
  int depth = top (L)->depth;

  if (depth < 0)
    return NAPKIN_LEVEL_HBM;
  return ((const NapkinRegion *) g_ptr_array_index (L->chain, depth))->level;
}

static int
add_buffer (Lower            *L,
            NapkinBufRole     role,
            NapkinLevel       level,
            NapkinDtype       dtype,
            const guint      *axes,
            guint             n_axes,
            int               node,
            const char       *what)
{
  NapkinIrBuffer *b = g_new0 (NapkinIrBuffer, 1);

  b->id = L->prog->buffers->len;
  b->name = g_strdup_printf ("b%u", b->id);
  b->role = role;
  b->level = level;
  b->dtype = dtype;
  b->n_axes = n_axes;
  b->tensor = -1;
  b->node = node;
  b->what = what;
  b->kernel = role == NAPKIN_BUF_TILE ? L->kernel : -1;
  for (guint i = 0; i < n_axes; i++)
    {
      b->axes[i] = axes[i];
      b->extent[i] = role == NAPKIN_BUF_TILE ? current_extent (L, axes[i]) : axis_size (L, axes[i]);
    }
  g_ptr_array_add (L->prog->buffers, b);
  return b->id;
}

/* A buffer for values the current group computes: a tile declared in the current
 * frame, or (plain operations) device-memory scratch. */
static int
new_value (Lower       *L,
           const guint *axes,
           guint        n_axes,
           int          node,
           const char  *what)
{
  int id;
  NapkinIrStmt *decl;

  if (L->region < 0 && node == L->plain_node && strcmp (what, "value") == 0)
    return L->home[node];
  if (L->region < 0)
    return add_buffer (L, NAPKIN_BUF_SCRATCH, NAPKIN_LEVEL_HBM, NAPKIN_DTYPE_FP32, axes, n_axes, node, what);

  id = add_buffer (L, NAPKIN_BUF_TILE, frame_level (L), NAPKIN_DTYPE_FP32, axes, n_axes, node, what);
  decl = stmt_new (NAPKIN_STMT_DECL);
  decl->dst = id;
  emit (L, decl);
  return id;
}

static void
emit_fill (Lower *L,
           int    buf,
           double value)
{
  NapkinIrStmt *fill = stmt_new (NAPKIN_STMT_FILL);

  fill->dst = buf;
  fill->value = value;
  emit (L, fill);
}

static void
emit_copy (Lower *L,
           int    dst,
           int    src)
{
  NapkinIrStmt *copy = stmt_new (NAPKIN_STMT_COPY);

  copy->dst = dst;
  copy->src[0] = src;
  emit (L, copy);
}

/* The buffer of node n's value in the innermost open frame that has one. A hash
 * per frame: a region of 100 000 operations made a list scan quadratic. */
static int
memo_find (Lower *L,
           guint  node)
{
  for (int i = L->n_frames - 1; i >= 0; i--)
    {
      gpointer buf = g_hash_table_lookup (L->frames[i].memo, GUINT_TO_POINTER (node + 1));

      if (buf != NULL)
        return GPOINTER_TO_INT (buf) - 1;
    }
  return -1;
}

static void
memo_add (Lower *L,
          guint  node,
          int    buf)
{
  g_hash_table_insert (top (L)->memo, GUINT_TO_POINTER (node + 1), GINT_TO_POINTER (buf + 1));
}

static gboolean
in_group (Lower *L,
          int    n)
{
  return n >= 0 && L->region >= 0 && L->group_of[n] == L->region;
}

/* The deepest chain index whose region holds node n, or -1. */
static int
node_depth (Lower *L,
            guint  n)
{
  int depth = -1;

  for (guint c = 0; c < L->chain->len; c++)
    if (napkin_region_has_node (g_ptr_array_index (L->chain, c), node_at (L, n)->id))
      depth = c;
  return depth;
}

/* The axes a statement of node n sums over: its inputs' axes its output lacks. */
static guint
reduced_axes (Lower *L,
              guint  n,
              guint *out)
{
  const NapkinTensorType *t = type_of (L, n);
  const NapkinNode *node = node_at (L, n);
  guint count = 0;

  for (guint p = 0; p < napkin_op_n_inputs (node); p++)
    {
      const NapkinTensorType *in = type_of (L, napkin_diagram_input_source (L->d, n, p));

      for (guint i = 0; i < in->n_axes; i++)
        {
          gboolean seen = napkin_tensor_type_has_axis (t, in->axes[i]);

          for (guint k = 0; k < count && !seen; k++)
            seen = out[k] == in->axes[i];
          if (!seen)
            out[count++] = in->axes[i];
        }
    }
  return count;
}

static gboolean
check_not_split (Lower       *L,
                 guint        n,
                 const guint *axes,
                 guint        n_axes)
{
  for (guint i = 0; i < n_axes; i++)
    for (guint f = 0; f < L->n_frames; f++)
      if (L->frames[f].is_loop && L->frames[f].axis == axes[i] && L->frames[f].kind != NAPKIN_LOOP_STREAM)
        {
          const NapkinRegion *r = g_ptr_array_index (L->chain, L->frames[f].depth);

          fail (L, NAPKIN_LOWER_ERROR_UNSUPPORTED,
                "regions.%s.marks.%s: the region cuts axis %s into parallel groups, but operation “%s” "
                "sums over it; a split reduction needs a second pass the lowering does not generate "
                "(mark %s stream or whole)",
                r->name, axis_name (L, axes[i]), axis_name (L, axes[i]), node_at (L, n)->id,
                axis_name (L, axes[i]));
          return FALSE;
        }
  return TRUE;
}

/* The nested region r's parallel marks over axes of the result: warp loops. FALSE
 * where one cuts an axis the statement sums over (reported). */
static gboolean
open_warp_loops (Lower                *L,
                 guint                 n,
                 const NapkinRegion   *r,
                 int                   c,
                 const guint          *red,
                 guint                 n_red,
                 const NapkinIrBuffer *dbuf,
                 guint                *opened)
{
  for (guint m = 0; m < r->marks->len; m++)
    {
      const NapkinMark *mark = &g_array_index (r->marks, NapkinMark, m);
      int axis_index = napkin_diagram_find_axis (L->d, mark->axis);
      gboolean in_dst = FALSE;

      if (mark->kind != NAPKIN_MARK_PARALLEL || axis_index < 0)
        continue;
      for (guint k = 0; k < n_red; k++)
        if (red[k] == (guint) axis_index)
          {
            fail (L, NAPKIN_LOWER_ERROR_UNSUPPORTED,
                  "regions.%s.marks.%s: axis %s is cut into parallel groups, but operation “%s” "
                  "sums over it (mark it stream or whole)",
                  r->name, mark->axis, mark->axis, node_at (L, n)->id);
            return FALSE;
          }
      for (guint k = 0; k < dbuf->n_axes; k++)
        in_dst |= dbuf->axes[k] == (guint) axis_index;
      if (!in_dst || mark->tile >= current_extent (L, axis_index))
        continue;
      push_frame (L, NAPKIN_LOOP_WARP, axis_index, mark->tile, c);
      (*opened)++;
    }
  return TRUE;
}

/* The nested region r's stream marks over axes the statement sums over: register
 * chunk loops, the result filled first where it did not accumulate yet. FALSE where
 * the operation has no chunked form (reported). */
static gboolean
open_chunk_loops (Lower              *L,
                  guint               n,
                  NapkinComputeOp     op,
                  gboolean            simple,
                  const NapkinRegion *r,
                  int                 c,
                  const guint        *red,
                  guint               n_red,
                  int                 dst,
                  gboolean           *accumulate,
                  guint              *opened)
{
  for (guint m = 0; m < r->marks->len; m++)
    {
      const NapkinMark *mark = &g_array_index (r->marks, NapkinMark, m);
      int axis_index = napkin_diagram_find_axis (L->d, mark->axis);
      gboolean reduced = FALSE;

      if (mark->kind != NAPKIN_MARK_STREAM || axis_index < 0)
        continue;
      for (guint k = 0; k < n_red; k++)
        reduced |= red[k] == (guint) axis_index;
      if (!reduced || mark->tile >= current_extent (L, axis_index))
        continue;
      if (!simple)
        {
          fail (L, NAPKIN_LOWER_ERROR_UNSUPPORTED,
                "regions.%s.marks.%s: operation “%s” (%s) needs its whole row along %s inside the "
                "nested region; mark it whole there",
                r->name, mark->axis, node_at (L, n)->id, napkin_compute_op_to_string (op), mark->axis);
          return FALSE;
        }
      if (op == NAPKIN_COMPUTE_REDUCE && node_at (L, n)->reduce == NAPKIN_REDUCE_MEAN)
        {
          fail (L, NAPKIN_LOWER_ERROR_UNSUPPORTED,
                "regions.%s.marks.%s: a mean streamed in a nested region is not lowered yet",
                r->name, mark->axis);
          return FALSE;
        }
      if (!*accumulate)
        {
          emit_fill (L, dst, op == NAPKIN_COMPUTE_REDUCE && node_at (L, n)->reduce == NAPKIN_REDUCE_MAX
                             ? -INFINITY : 0.0);
          *accumulate = TRUE;
        }
      push_frame (L, NAPKIN_LOOP_STREAM, axis_index, mark->tile, c);
      (*opened)++;
    }
  return TRUE;
}

/* Close the nested loops; a pseudo-frame (no loop) splices its statements. */
static void
close_leaf_frames (Lower *L,
                   guint  opened)
{
  while (opened-- > 0)
    {
      Frame *f = top (L);

      if (f->is_loop)
        pop_frame (L);
      else
        {
          GPtrArray *stmts = f->stmts;

          g_hash_table_unref (f->memo);
          L->n_frames--;
          for (guint i = 0; i < stmts->len; i++)
            g_ptr_array_add (top (L)->stmts, g_ptr_array_steal_index (stmts, 0)), i--;
          g_ptr_array_unref (stmts);
        }
    }
}

/* Appends a compute statement for node n, wrapped in the loops of the nested
 * regions that hold n below the current frame (warp tiles, register chunks). */
static void
emit_leaf (Lower           *L,
           guint            n,
           NapkinComputeOp  op,
           int              dst,
           const int       *srcs,
           guint            n_srcs,
           gboolean         accumulate,
           guint            axis,
           double           value)
{
  int depth = L->region >= 0 ? node_depth (L, n) : -1;
  guint opened = 0;
  int local[4] = { -1, -1, -1, -1 };
  const NapkinIrBuffer *dbuf = napkin_ir_buffer (L->prog, dst);
  NapkinIrStmt *stmt;

  gboolean simple = op == NAPKIN_COMPUTE_MAP || op == NAPKIN_COMPUTE_CONTRACT || op == NAPKIN_COMPUTE_REDUCE
                    || op == NAPKIN_COMPUTE_MASK;

  for (guint i = 0; i < n_srcs; i++)
    local[i] = srcs[i];

  for (int c = top (L)->depth + 1; L->region >= 0 && c <= depth; c++)
    {
      const NapkinRegion *r = g_ptr_array_index (L->chain, c);
      guint red[NAPKIN_MAX_RANK * 2];
      guint n_red = reduced_axes (L, n, red);

      if (!napkin_region_has_node (r, node_at (L, n)->id))
        continue;
      /* Row statistics, the online softmax and finishing steps split over warps by
       * their rows only; their row axis must stay whole in the nested region. */
      if (!simple)
        {
          n_red = 0;
          if (op != NAPKIN_COMPUTE_SCALE)
            red[n_red++] = axis;
        }
      if (!open_warp_loops (L, n, r, c, red, n_red, dbuf, &opened)
          || !open_chunk_loops (L, n, op, simple, r, c, red, n_red, dst, &accumulate, &opened))
        return;

      if (top (L)->depth < c)
        {
          /* No loop of this region applies: its tiles still live at its level. */
          push_frame (L, NAPKIN_LOOP_WARP, 0, 0, c);
          top (L)->is_loop = FALSE;
          opened++;
        }

      /* Operands move down to this region's level (the statistics that the online
       * softmax updates in place stay where they are). */
      for (guint i = 0; simple && i < n_srcs; i++)
        {
          const NapkinIrBuffer *sb = napkin_ir_buffer (L->prog, local[i]);
          guint axes[NAPKIN_MAX_RANK];
          int tile;

          memcpy (axes, sb->axes, sizeof axes);
          tile = new_value (L, axes, sb->n_axes, sb->node, "operand");
          emit_copy (L, tile, local[i]);
          local[i] = tile;
        }
    }

  stmt = stmt_new (NAPKIN_STMT_COMPUTE);
  stmt->op = op;
  stmt->node = n;
  stmt->dst = dst;
  for (guint i = 0; i < n_srcs; i++)
    stmt->src[i] = local[i];
  stmt->accumulate = accumulate;
  stmt->axis = axis;
  stmt->value = value;
  emit (L, stmt);
  close_leaf_frames (L, opened);
}

static int emit_value (Lower *L, guint n);

/* The statistics axes of a row operation of node n over `axis`: its input's other axes. */
static guint
row_axes (Lower *L,
          guint  src_node,
          guint  axis,
          guint *out)
{
  const NapkinTensorType *t = type_of (L, src_node);
  guint count = 0;

  for (guint i = 0; i < t->n_axes; i++)
    if (t->axes[i] != axis)
      out[count++] = t->axes[i];
  return count;
}

/* The streamed axis among `axes` that the outermost region holding n streams and
 * that no loop cuts yet, or -1. */
static int
streamed_axis (Lower       *L,
               guint        n,
               const guint *axes,
               guint        n_axes,
               gint64      *chunk,
               int         *depth)
{
  for (guint c = 0; c < L->chain->len; c++)
    {
      const NapkinRegion *r = g_ptr_array_index (L->chain, c);

      if (!napkin_region_has_node (r, node_at (L, n)->id) || (int) c <= top (L)->depth - 1)
        continue;
      for (guint i = 0; i < n_axes; i++)
        {
          gint64 tile = 0;

          if (napkin_region_mark (r, axis_name (L, axes[i]), &tile) == NAPKIN_MARK_STREAM
              && !axis_narrowed (L, axes[i], -1) && tile < axis_size (L, axes[i]))
            {
              *chunk = tile;
              *depth = c;
              return axes[i];
            }
        }
      /* Only the outermost region holding n opens stream loops here; nested ones
       * split the chunk in emit_leaf. */
      return -1;
    }
  return -1;
}

/* A softmax or normalisation needs its whole row: no loop may cut its axis. */
static gboolean
check_row_op (Lower *L,
              guint  n)
{
  const NapkinNode *node = node_at (L, n);
  guint x = napkin_diagram_find_axis (L->d, node->axis);

  if (axis_narrowed (L, x, -1))
    {
      fail (L, NAPKIN_LOWER_ERROR_UNSUPPORTED,
            "nodes.%s: %s “%s” needs the whole axis %s, which a loop cuts here",
            node->id, napkin_op_kind_to_string (node->kind), node->id, node->axis);
      return FALSE;
    }
  if (L->region >= 0)
    for (guint c = 0; c < L->chain->len; c++)
      {
        const NapkinRegion *r = g_ptr_array_index (L->chain, c);

        gint64 tile = 0;

        /* a stream of one chunk (the whole axis) cuts nothing: the row is whole */
        if (napkin_region_has_node (r, node->id)
            && napkin_region_mark (r, node->axis, &tile) == NAPKIN_MARK_STREAM && tile < axis_size (L, x))
          {
            fail (L, NAPKIN_LOWER_ERROR_UNSUPPORTED,
                  "regions.%s.marks.%s: %s “%s” streams over %s only as the online softmax "
                  "of a contraction in the same region",
                  r->name, node->axis, napkin_op_kind_to_string (node->kind), node->id, node->axis);
            return FALSE;
          }
      }
  return TRUE;
}

/* The checks emit_compute makes for a contraction or reduction before it emits its
 * inputs. TRUE with *stream = -1 when its inputs are emitted where it stands; TRUE
 * with *stream set when it opens a stream loop for them. */
static gboolean
check_reduction (Lower *L,
                 guint  n,
                 int   *stream)
{
  const NapkinNode *node = node_at (L, n);
  guint red[NAPKIN_MAX_RANK * 2];
  guint n_red = reduced_axes (L, n, red);
  gint64 chunk = 0;
  int depth = -1;

  if (!check_not_split (L, n, red, n_red))
    return FALSE;
  *stream = L->region >= 0 ? streamed_axis (L, n, red, n_red, &chunk, &depth) : -1;
  if (*stream >= 0)
    return TRUE;
  for (guint k = 0; k < n_red; k++)
    if (axis_narrowed (L, red[k], NAPKIN_LOOP_STREAM))
      {
        fail (L, NAPKIN_LOWER_ERROR_UNSUPPORTED,
              "nodes.%s: operation “%s” sums over %s inside a loop over chunks of %s",
              node->id, node->id, axis_name (L, red[k]), axis_name (L, red[k]));
        return FALSE;
      }
  return TRUE;
}

/* Emits node n's inputs into src[]; FALSE where one fails. */
static gboolean
emit_inputs (Lower *L,
             guint  n,
             int   *src)
{
  for (guint p = 0; p < napkin_op_n_inputs (node_at (L, n)); p++)
    if ((src[p] = emit_value (L, napkin_diagram_input_source (L->d, n, p))) < 0)
      return FALSE;
  return TRUE;
}

/* The online softmax (docs/codegen.md): a contraction whose input `online_port` is a
 * softmax over the streamed axis x keeps a running max and sum, and rescales its
 * accumulator dst chunk by chunk. */
static int
emit_online_softmax (Lower  *L,
                     guint   n,
                     int     online_port,
                     guint   x,
                     gint64  chunk,
                     int     depth,
                     int     dst)
{
  guint sm = napkin_diagram_input_source (L->d, n, online_port);
  guint scores = napkin_diagram_input_source (L->d, sm, 0);
  guint other = napkin_diagram_input_source (L->d, n, 1 - online_port);
  guint saxes[NAPKIN_MAX_RANK];
  guint n_saxes = row_axes (L, scores, x, saxes);
  int m = new_value (L, saxes, n_saxes, sm, "running max");
  int l = new_value (L, saxes, n_saxes, sm, "running sum");
  int c = new_value (L, saxes, n_saxes, sm, "rescale");
  int s_buf, o_buf;
  int ops[4];

  emit_fill (L, m, -INFINITY);
  emit_fill (L, l, 0.0);
  push_frame (L, NAPKIN_LOOP_STREAM, x, chunk, depth);
  if ((s_buf = emit_value (L, scores)) < 0 || (o_buf = emit_value (L, other)) < 0)
    return -1;
  ops[0] = s_buf, ops[1] = l, ops[2] = c;
  emit_leaf (L, sm, NAPKIN_COMPUTE_ONLINE_STATS, m, ops, 3, TRUE, x, 0);
  ops[0] = s_buf, ops[1] = o_buf, ops[2] = m, ops[3] = c;
  emit_leaf (L, n, NAPKIN_COMPUTE_ONLINE_ACC, dst, ops, 4, TRUE, x, 0);
  pop_frame (L);
  emit_leaf (L, n, NAPKIN_COMPUTE_DIVIDE, dst, &l, 1, FALSE, x, 0);
  return dst;
}

/* A contraction or reduction: where it stands, or in a stream loop over the axis
 * its outermost region streams (with the online softmax where a softmax feeds it). */
static int
emit_reduction (Lower *L,
                guint  n)
{
  const NapkinNode *node = node_at (L, n);
  const NapkinTensorType *t = type_of (L, n);
  guint axes[NAPKIN_MAX_RANK];
  int src[2] = { -1, -1 };
  guint n_inputs = napkin_op_n_inputs (node);
  int dst;
  guint red[NAPKIN_MAX_RANK * 2];
  guint n_red = reduced_axes (L, n, red);
  gint64 chunk = 0;
  int depth = -1;
  int x = L->region >= 0 ? streamed_axis (L, n, red, n_red, &chunk, &depth) : -1;
  NapkinComputeOp op = node->kind == NAPKIN_OP_CONTRACT ? NAPKIN_COMPUTE_CONTRACT : NAPKIN_COMPUTE_REDUCE;
  gboolean is_max = node->kind == NAPKIN_OP_REDUCE && node->reduce == NAPKIN_REDUCE_MAX;
  double mean_scale = 1.0;
  int online_port = -1;
  int stream;

  memcpy (axes, t->axes, sizeof axes);
  if (!check_reduction (L, n, &stream))
    return -1;
  g_assert (stream == x);
  if (node->kind == NAPKIN_OP_REDUCE && node->reduce == NAPKIN_REDUCE_MEAN)
    mean_scale = 1.0 / (double) axis_size (L, red[0]);

  if (x < 0)
    {
      if (!emit_inputs (L, n, src))
        return -1;
      dst = new_value (L, axes, t->n_axes, n, "value");
      emit_leaf (L, n, op, dst, src, n_inputs, FALSE, red[0], 1.0);
      if (mean_scale != 1.0)
        emit_leaf (L, n, NAPKIN_COMPUTE_SCALE, dst, NULL, 0, FALSE, 0, mean_scale);
      return dst;
    }

  for (guint p = 0; node->kind == NAPKIN_OP_CONTRACT && p < 2; p++)
    {
      int s = napkin_diagram_input_source (L->d, n, p);
      const NapkinNode *sn = node_at (L, s);

      if (in_group (L, s) && sn->kind == NAPKIN_OP_SOFTMAX
          && napkin_diagram_find_axis (L->d, sn->axis) == x)
        online_port = p;
    }

  dst = new_value (L, axes, t->n_axes, n, online_port >= 0 ? "output accumulator" : "accumulator");
  emit_fill (L, dst, is_max ? -INFINITY : 0.0);

  if (online_port >= 0)
    return emit_online_softmax (L, n, online_port, x, chunk, depth, dst);

  push_frame (L, NAPKIN_LOOP_STREAM, x, chunk, depth);
  if (!emit_inputs (L, n, src))
    return -1;
  emit_leaf (L, n, op, dst, src, n_inputs, TRUE, red[0], 1.0);
  if (L->failed)
    return -1;
  pop_frame (L);
  if (mean_scale != 1.0)
    emit_leaf (L, n, NAPKIN_COMPUTE_SCALE, dst, NULL, 0, FALSE, 0, mean_scale);
  return dst;
}

/* A softmax or normalisation: its row statistics, then the finishing step. */
static int
emit_row_op (Lower *L,
             guint  n)
{
  const NapkinNode *node = node_at (L, n);
  const NapkinTensorType *t = type_of (L, n);
  guint axes[NAPKIN_MAX_RANK];
  guint x = napkin_diagram_find_axis (L->d, node->axis);
  guint in = napkin_diagram_input_source (L->d, n, 0);
  guint saxes[NAPKIN_MAX_RANK];
  guint n_saxes = row_axes (L, in, x, saxes);
  int s, a, b, ops[3], dst;

  memcpy (axes, t->axes, sizeof axes);
  if (!check_row_op (L, n) || (s = emit_value (L, in)) < 0)
    return -1;

  if (node->kind == NAPKIN_OP_SOFTMAX)
    {
      a = new_value (L, saxes, n_saxes, n, "row max");
      ops[0] = s;
      emit_leaf (L, n, NAPKIN_COMPUTE_ROW_MAX, a, ops, 1, FALSE, x, 0);
      b = new_value (L, saxes, n_saxes, n, "row sum");
      ops[0] = s, ops[1] = a;
      emit_leaf (L, n, NAPKIN_COMPUTE_ROW_SUMEXP, b, ops, 2, FALSE, x, 0);
      dst = new_value (L, axes, t->n_axes, n, "value");
      ops[0] = s, ops[1] = a, ops[2] = b;
      emit_leaf (L, n, NAPKIN_COMPUTE_SOFTMAX, dst, ops, 3, FALSE, x, 0);
      return dst;
    }

  a = -1;
  if (node->norm == NAPKIN_NORM_LAYERNORM)
    {
      a = new_value (L, saxes, n_saxes, n, "row mean");
      ops[0] = s;
      emit_leaf (L, n, NAPKIN_COMPUTE_ROW_MEAN, a, ops, 1, FALSE, x, 0);
    }
  b = new_value (L, saxes, n_saxes, n, "row 1/std");
  ops[0] = s, ops[1] = a;
  emit_leaf (L, n, NAPKIN_COMPUTE_ROW_RSTD, b, ops, 2, FALSE, x, node->eps);
  dst = new_value (L, axes, t->n_axes, n, "value");
  ops[0] = s, ops[1] = a, ops[2] = b;
  emit_leaf (L, n, NAPKIN_COMPUTE_NORMALIZE, dst, ops, 3, FALSE, x, 0);
  return dst;
}

static int
emit_compute (Lower *L,
              guint  n)
{
  const NapkinNode *node = node_at (L, n);
  const NapkinTensorType *t = type_of (L, n);
  guint axes[NAPKIN_MAX_RANK];
  int src[2] = { -1, -1 };
  int dst;

  switch (node->kind)
    {
    case NAPKIN_OP_MAP:
    case NAPKIN_OP_REARRANGE:
    case NAPKIN_OP_MASK:
      break;

    case NAPKIN_OP_CONTRACT:
    case NAPKIN_OP_REDUCE:
      return emit_reduction (L, n);

    case NAPKIN_OP_SOFTMAX:
    case NAPKIN_OP_NORMALIZE:
      return emit_row_op (L, n);

    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_OUTPUT:
    case NAPKIN_N_OPS:
    default:
      g_assert_not_reached ();
    }

  /* Element-wise: a map, a rearrangement or a mask. */
  memcpy (axes, t->axes, sizeof axes);
  if (!emit_inputs (L, n, src))
    return -1;
  dst = new_value (L, axes, t->n_axes, n, "value");
  if (node->kind == NAPKIN_OP_MASK)
    /* Element-wise by global coordinates (docs/codegen.md), so a tile masks itself
     * wherever it sits and the online softmax streams through it. */
    emit_leaf (L, n, NAPKIN_COMPUTE_MASK, dst, src, napkin_op_n_inputs (node), FALSE,
               node->axis ? (guint) napkin_diagram_find_axis (L->d, node->axis) : 0, 0);
  else
    emit_leaf (L, n, node->kind == NAPKIN_OP_MAP ? NAPKIN_COMPUTE_MAP : NAPKIN_COMPUTE_REARRANGE,
               dst, src, napkin_op_n_inputs (node), FALSE, 0, node->alpha);
  return dst;
}

/* One operation of the walk in emit_value, with the frames its hoisting set aside. */
typedef struct
{
  guint  node;
  guint  port;       /* the next input to visit */
  guint  n_saved;
  Frame *saved;
} Visit;

/* Hoists out of stream loops over axes the value of node n does not depend on: the
 * frames above are set aside until unhoist. */
static void
hoist (Lower *L,
       Visit *v)
{
  guint target = L->n_frames - 1;

  while (target > 0 && L->frames[target].is_loop && L->frames[target].kind == NAPKIN_LOOP_STREAM
         && !L->dep[v->node * L->n_axes + L->frames[target].axis])
    target--;
  v->n_saved = L->n_frames - target - 1;
  v->saved = v->n_saved > 0 ? g_memdup2 (&L->frames[target + 1], v->n_saved * sizeof (Frame)) : NULL;
  L->n_frames = target + 1;
}

static void
unhoist (Lower *L,
         Visit *v)
{
  if (v->n_saved > 0)
    {
      /* The frames were there before: the array is large enough. */
      g_assert (L->n_frames + v->n_saved <= L->frames_size);
      memcpy (&L->frames[L->n_frames], v->saved, v->n_saved * sizeof (Frame));
      L->n_frames += v->n_saved;
    }
  g_clear_pointer (&v->saved, g_free);
  v->n_saved = 0;
}

/* The value of node n computed where it stands once its inputs are known. */
static int
emit_here (Lower *L,
           guint  n)
{
  if (!in_group (L, n))
    {
      int home = L->home[n];
      const NapkinTensorType *t;
      guint axes[NAPKIN_MAX_RANK];
      int buf;

      g_assert (home >= 0);
      if (L->region < 0)
        return home;
      /* Tiles keep the node's axis order; the copy maps by coordinates. */
      t = type_of (L, n);
      memcpy (axes, t->axes, sizeof axes);
      buf = new_value (L, axes, t->n_axes, n, "input tile");
      emit_copy (L, buf, home);
      return buf;
    }
  return emit_compute (L, n);
}

/* Starts the visit of node n: hoists it and either emits it at once (a value from
 * outside the group, or a reduction that opens a stream loop for its inputs) or
 * pushes it on the walk to emit its inputs first. Returns its buffer when done. */
static int
visit_begin (Lower  *L,
             GArray *walk,
             guint   n)
{
  const NapkinNode *node = node_at (L, n);
  Visit v = { n, 0, 0, NULL };
  gboolean expand = FALSE;
  int stream = -1;
  int buf = -1;

  if (L->n_frames > MAX_FRAMES)
    {
      fail (L, NAPKIN_LOWER_ERROR_UNSUPPORTED,
            "nodes.%s: loops nest more than %d deep here; the lowering stops at that depth",
            node->id, MAX_FRAMES);
      return -1;
    }
  hoist (L, &v);
  if (in_group (L, n))
    switch (node->kind)
      {
      case NAPKIN_OP_MAP:
      case NAPKIN_OP_REARRANGE:
        expand = TRUE;
        break;
      case NAPKIN_OP_SOFTMAX:
      case NAPKIN_OP_NORMALIZE:
        expand = check_row_op (L, n);
        break;
      case NAPKIN_OP_CONTRACT:
      case NAPKIN_OP_REDUCE:
        expand = check_reduction (L, n, &stream) && stream < 0;
        break;
      case NAPKIN_OP_INPUT:
      case NAPKIN_OP_OUTPUT:
      case NAPKIN_N_OPS:
      default:
        break;
      }

  if (expand)
    {
      g_array_append_val (walk, v);
      return -1;
    }
  if (!L->failed)
    {
      if (stream >= 0 && ++L->nested_streams > MAX_NESTED_STREAMS)
        fail (L, NAPKIN_LOWER_ERROR_UNSUPPORTED,
              "nodes.%s: more than %d streamed contractions or reductions open their loops inside "
              "one another; the lowering stops at that depth",
              node->id, MAX_NESTED_STREAMS);
      else
        buf = emit_here (L, n);
      if (stream >= 0)
        L->nested_streams--;
    }
  if (buf >= 0 && !L->failed)
    memo_add (L, n, buf);
  unhoist (L, &v);
  return L->failed ? -1 : buf;
}

/* A buffer holding node n's values over the current ranges of its axes.
 *
 * Emitting a value emits its inputs first. That was a recursion between emit_value
 * and emit_compute, one level per operation: a chain of 4 000 maps in one region
 * overflowed the stack. The walk is now an explicit stack of visits, in the order
 * the recursion took; only a contraction or reduction that opens a stream loop for
 * its inputs still recurses, at most MAX_NESTED_STREAMS deep. */
static int
emit_value (Lower *L,
            guint  n)
{
  g_autoptr(GArray) walk = NULL;
  int buf;

  if (L->failed)
    return -1;
  if ((buf = memo_find (L, n)) >= 0)
    return buf;

  walk = g_array_new (FALSE, FALSE, sizeof (Visit));
  buf = visit_begin (L, walk, n);
  while (walk->len > 0 && !L->failed)
    {
      Visit *v = &g_array_index (walk, Visit, walk->len - 1);
      const NapkinNode *node = node_at (L, v->node);

      if (v->port < napkin_op_n_inputs (node))
        {
          int s = napkin_diagram_input_source (L->d, v->node, v->port++);

          /* v moves if the walk grows: it is not used after this. */
          if (memo_find (L, s) < 0)
            visit_begin (L, walk, s);
          continue;
        }

      /* Every input has its buffer: the compute finds them in the memo. */
      buf = emit_compute (L, v->node);
      if (buf >= 0 && !L->failed)
        memo_add (L, v->node, buf);
      unhoist (L, v);
      g_array_set_size (walk, walk->len - 1);
    }

  /* On failure, frames set aside go back so that the caller frees them. */
  while (walk->len > 0)
    {
      unhoist (L, &g_array_index (walk, Visit, walk->len - 1));
      g_array_set_size (walk, walk->len - 1);
    }
  return L->failed ? -1 : buf;
}

/* ---- groups, homes, kernels -------------------------------------------------------------- */

/* Does region a contain region b (validated: nested or disjoint)? */
static gboolean
region_contains (const NapkinRegion *a,
                 const NapkinRegion *b)
{
  if (b->nodes->len > a->nodes->len || a == b)
    return FALSE;
  for (guint i = 0; i < b->nodes->len; i++)
    if (!napkin_region_has_node (a, g_ptr_array_index (b->nodes, i)))
      return FALSE;
  return b->nodes->len < a->nodes->len || b->level > a->level;
}

static gboolean
setup_groups (Lower *L)
{
  guint n_regions = L->flags & NAPKIN_LOWER_PLAIN ? 0 : napkin_diagram_n_regions (L->d);

  for (guint n = 0; n < L->n_nodes; n++)
    L->group_of[n] = -1;

  for (guint r = 0; r < n_regions; r++)
    {
      const NapkinRegion *region = napkin_diagram_region (L->d, r);
      gboolean is_top = TRUE;

      for (guint o = 0; o < n_regions; o++)
        if (region_contains (napkin_diagram_region (L->d, o), region))
          is_top = FALSE;
      if (!is_top)
        continue;
      for (guint i = 0; i < region->nodes->len; i++)
        L->group_of[napkin_diagram_find_node (L->d, g_ptr_array_index (region->nodes, i))] = r;
    }
  return TRUE;
}

static void
compute_deps (Lower *L)
{
  const guint *topo = napkin_diagram_topo_order (L->d);

  for (guint i = 0; i < L->n_nodes; i++)
    {
      guint n = topo[i];
      const NapkinNode *node = node_at (L, n);
      const NapkinTensorType *t = type_of (L, n);
      guint8 *dep = &L->dep[n * L->n_axes];

      for (guint a = 0; a < t->n_axes; a++)
        dep[t->axes[a]] = 1;
      if (node->kind == NAPKIN_OP_INPUT)
        continue;
      for (guint p = 0; p < napkin_op_n_inputs (node); p++)
        {
          int s = napkin_diagram_input_source (L->d, n, p);

          /* Values from another kernel sit in device memory whole: only their own axes count. */
          for (guint a = 0; a < L->n_axes; a++)
            if (L->group_of[s] >= 0 && L->group_of[s] == L->group_of[n])
              dep[a] |= L->dep[s * L->n_axes + a];
            else
              {
                const NapkinTensorType *st = type_of (L, s);

                for (guint k = 0; k < st->n_axes; k++)
                  dep[st->axes[k]] = 1;
                break;
              }
        }
    }
}

static int
tensor_buffer (Lower        *L,
               int           tensor,
               NapkinBufRole role,
               GHashTable   *seen)
{
  gpointer key = GINT_TO_POINTER ((tensor + 1) * 2 + (role == NAPKIN_BUF_OUTPUT));
  gpointer v = g_hash_table_lookup (seen, key);
  const NapkinTensor *tensor_item = napkin_diagram_tensor (L->d, tensor);
  guint axes[NAPKIN_MAX_RANK];
  guint n_axes = 0;
  int id;

  if (v != NULL)
    return GPOINTER_TO_INT (v) - 1;
  for (guint a = 0; tensor_item->axes[a] && n_axes < NAPKIN_MAX_RANK; a++)
    axes[n_axes++] = napkin_diagram_find_axis (L->d, tensor_item->axes[a]);
  id = add_buffer (L, role, NAPKIN_LEVEL_HBM, tensor_item->dtype, axes, n_axes, -1,
                   role == NAPKIN_BUF_INPUT ? "input" : "output");
  ((NapkinIrBuffer *) g_ptr_array_index (L->prog->buffers, id))->tensor = tensor;
  g_hash_table_insert (seen, key, GINT_TO_POINTER (id + 1));
  return id;
}

/* Whether node n is an output wired straight from an input. */
static gboolean
is_input_copy (Lower *L,
               guint  n)
{
  int src;

  if (node_at (L, n)->kind != NAPKIN_OP_OUTPUT)
    return FALSE;
  src = napkin_diagram_input_source (L->d, n, 0);
  return src >= 0 && node_at (L, (guint) src)->kind == NAPKIN_OP_INPUT;
}

static void
setup_homes (Lower      *L,
             GHashTable *seen)
{
  for (guint n = 0; n < L->n_nodes; n++)
    L->home[n] = -1;

  for (guint n = 0; n < L->n_nodes; n++)
    {
      const NapkinNode *node = node_at (L, n);

      if (node->kind == NAPKIN_OP_INPUT)
        L->home[n] = tensor_buffer (L, napkin_diagram_find_tensor (L->d, node->tensor), NAPKIN_BUF_INPUT, seen);
    }

  for (guint n = 0; n < L->n_nodes; n++)
    {
      const NapkinNode *node = node_at (L, n);
      guint n_consumers;
      const guint *consumers = napkin_diagram_consumers (L->d, n, &n_consumers);
      gboolean crosses = FALSE;

      if (node->kind == NAPKIN_OP_INPUT || node->kind == NAPKIN_OP_OUTPUT)
        continue;
      for (guint c = 0; c < n_consumers; c++)
        {
          const NapkinNode *consumer = node_at (L, consumers[c]);

          if (consumer->kind == NAPKIN_OP_OUTPUT && L->home[n] < 0)
            L->home[n] = tensor_buffer (L, napkin_diagram_find_tensor (L->d, consumer->tensor),
                                        NAPKIN_BUF_OUTPUT, seen);
          else if (consumer->kind != NAPKIN_OP_OUTPUT
                   && (L->group_of[n] < 0 || L->group_of[n] != L->group_of[consumers[c]]))
            crosses = TRUE;
        }
      if (L->home[n] < 0 && (crosses || L->group_of[n] < 0))
        {
          const NapkinTensorType *t = type_of (L, n);
          NapkinDtype dtype = L->flags & NAPKIN_LOWER_FP32_SCRATCH ? NAPKIN_DTYPE_FP32 : t->dtype;

          L->home[n] = add_buffer (L, NAPKIN_BUF_SCRATCH, NAPKIN_LEVEL_HBM, dtype, t->axes, t->n_axes, n, "value");
        }
    }

  /* An output wired straight from an input is written by a copy kernel of its own
   * (lower_input_copy): the output operation's home is its tensor, which the plan's
   * copy kernel stores into (napkin_ir_value_buffer). */
  for (guint n = 0; n < L->n_nodes; n++)
    if (is_input_copy (L, n))
      L->home[n] = tensor_buffer (L, napkin_diagram_find_tensor (L->d, node_at (L, n)->tensor), NAPKIN_BUF_OUTPUT,
                                  seen);
}

/* Stores of node n's value: into its home and into every further output. */
static void
emit_stores (Lower *L,
             guint  n,
             int    value,
             GHashTable *seen)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (L->d, n, &n_consumers);

  if (L->home[n] >= 0 && L->home[n] != value)
    emit_copy (L, L->home[n], value);
  for (guint c = 0; c < n_consumers; c++)
    {
      const NapkinNode *consumer = node_at (L, consumers[c]);
      int out;

      if (consumer->kind != NAPKIN_OP_OUTPUT)
        continue;
      out = tensor_buffer (L, napkin_diagram_find_tensor (L->d, consumer->tensor), NAPKIN_BUF_OUTPUT, seen);
      if (out != L->home[n])
        emit_copy (L, out, value);
    }
}

static NapkinIrKernel *
kernel_new (Lower *L,
            int    region,
            int    node)
{
  NapkinIrKernel *k = g_new0 (NapkinIrKernel, 1);

  k->name = g_strdup_printf ("napkin_k%u", L->prog->kernels->len);
  k->region = region;
  k->node = node;
  k->body = g_ptr_array_new_with_free_func (stmt_free);
  return k;
}

static void
root_frame (Lower *L,
            int    depth)
{
  Frame *f = &L->frames[0];

  memset (f, 0, sizeof *f);
  f->stmts = g_ptr_array_new_with_free_func (stmt_free);
  f->depth = depth;
  f->memo = g_hash_table_new (NULL, NULL);
  L->n_frames = 1;
}

static gboolean
lower_plain (Lower      *L,
             guint       n,
             GHashTable *seen)
{
  int value;
  GPtrArray *stmts;

  L->region = -1;
  L->plain_node = n;
  g_ptr_array_set_size (L->chain, 0);
  g_array_set_size (L->chain_index, 0);
  L->kernel = L->prog->kernels->len;
  root_frame (L, -1);
  value = emit_compute (L, n);
  if (value < 0)
    {
      g_ptr_array_unref (L->frames[0].stmts);
      g_hash_table_unref (L->frames[0].memo);
      return FALSE;
    }
  g_assert (value == L->home[n]);
  stmts = L->frames[0].stmts;
  emit_stores (L, n, value, seen);

  /* Every statement at the root needs all of the one before: one kernel each. */
  for (guint i = 0; i < stmts->len; i++)
    {
      NapkinIrKernel *k = kernel_new (L, -1, n);

      g_ptr_array_add (k->body, g_ptr_array_steal_index (stmts, i));
      i--;
      g_ptr_array_add (L->prog->kernels, k);
    }
  g_ptr_array_unref (stmts);
  g_hash_table_unref (L->frames[0].memo);
  L->n_frames = 0;
  return TRUE;
}

/* The kernel of an output wired straight from an input: no operation computes its
 * value, so nothing else would store it. One copy over the whole tensor, converting
 * the element type and the axis order by coordinates, as every store does. */
static void
lower_input_copy (Lower *L,
                  guint  n)
{
  NapkinIrKernel *k;
  NapkinIrStmt *copy = stmt_new (NAPKIN_STMT_COPY);

  copy->dst = L->home[n];
  copy->src[0] = L->home[napkin_diagram_input_source (L->d, n, 0)];
  g_assert (copy->dst >= 0 && copy->src[0] >= 0);
  k = kernel_new (L, -1, n);
  g_ptr_array_add (k->body, copy);
  g_ptr_array_add (L->prog->kernels, k);
}

static gboolean
lower_region (Lower      *L,
              int         r,
              GHashTable *seen)
{
  const NapkinRegion *region = napkin_diagram_region (L->d, r);
  NapkinIrKernel *k;
  guint n_grid = 0;

  L->region = r;
  L->plain_node = -1;
  g_ptr_array_set_size (L->chain, 0);
  g_array_set_size (L->chain_index, 0);
  g_ptr_array_add (L->chain, (gpointer) region);
  g_array_append_val (L->chain_index, r);

  /* Nested regions, outer to inner: they must form one chain. */
  for (;;)
    {
      const NapkinRegion *last = g_ptr_array_index (L->chain, L->chain->len - 1);
      int next = -1;

      for (guint o = 0; o < napkin_diagram_n_regions (L->d); o++)
        {
          const NapkinRegion *cand = napkin_diagram_region (L->d, o);
          gboolean direct = region_contains (last, cand);

          for (guint q = 0; direct && q < napkin_diagram_n_regions (L->d); q++)
            if (q != o && region_contains (last, napkin_diagram_region (L->d, q))
                && region_contains (napkin_diagram_region (L->d, q), cand))
              direct = FALSE;
          if (!direct)
            continue;
          if (next >= 0)
            {
              fail (L, NAPKIN_LOWER_ERROR_UNSUPPORTED,
                    "regions.%s: two regions (“%s”, “%s”) sit side by side inside it; the lowering "
                    "handles one nested region per level",
                    last->name, napkin_diagram_region (L->d, next)->name, cand->name);
              return FALSE;
            }
          next = o;
        }
      if (next < 0)
        break;
      g_ptr_array_add (L->chain, (gpointer) napkin_diagram_region (L->d, next));
      g_array_append_val (L->chain_index, next);
    }

  L->kernel = L->prog->kernels->len;
  k = kernel_new (L, r, -1);
  root_frame (L, 0);

  for (guint m = 0; m < region->marks->len; m++)
    {
      const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, m);
      int axis = napkin_diagram_find_axis (L->d, mark->axis);

      if (mark->kind != NAPKIN_MARK_PARALLEL || axis < 0)
        continue;
      push_frame (L, NAPKIN_LOOP_GRID, axis, mark->tile, 0);
      n_grid++;
    }

  for (guint i = 0; i < region->nodes->len && !L->failed; i++)
    {
      guint n = napkin_diagram_find_node (L->d, g_ptr_array_index (region->nodes, i));
      guint n_consumers;
      const guint *consumers = napkin_diagram_consumers (L->d, n, &n_consumers);
      gboolean sink = FALSE;
      int value;

      for (guint c = 0; c < n_consumers; c++)
        sink |= L->group_of[consumers[c]] != r;
      if (!sink)
        continue;
      value = emit_value (L, n);
      if (value >= 0)
        emit_stores (L, n, value, seen);
    }

  while (!L->failed && n_grid-- > 0)
    pop_frame (L);

  if (L->failed)
    {
      while (L->n_frames > 0)
        {
          g_ptr_array_unref (L->frames[L->n_frames - 1].stmts);
          g_hash_table_unref (L->frames[L->n_frames - 1].memo);
          L->n_frames--;
        }
      kernel_free (k);
      return FALSE;
    }

  g_ptr_array_extend_and_steal (k->body, L->frames[0].stmts);
  g_hash_table_unref (L->frames[0].memo);
  L->n_frames = 0;
  g_ptr_array_add (L->prog->kernels, k);
  return TRUE;
}

NapkinIrProgram *
napkin_ir_lower (NapkinDiagram    *diagram,
                 NapkinLowerFlags  flags,
                 GError          **error)
{
  g_autoptr(NapkinIrProgram) prog = NULL;
  g_autoptr(GHashTable) seen = NULL;
  g_autoptr(GError) local = NULL;
  g_autofree int *group_order = NULL;
  g_autofree gboolean *done = NULL;
  g_autofree gboolean *group_done = NULL;
  const guint *topo;
  Lower L = { 0 };
  guint n_regions;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);

  if (!napkin_diagram_validate (diagram, &local))
    {
      g_set_error (error, NAPKIN_LOWER_ERROR, NAPKIN_LOWER_ERROR_INVALID, "%s", local->message);
      return NULL;
    }

  prog = g_new0 (NapkinIrProgram, 1);
  prog->diagram = g_object_ref (diagram);
  prog->buffers = g_ptr_array_new_with_free_func (buffer_free);
  prog->kernels = g_ptr_array_new_with_free_func (kernel_free);
  prog->plain = (flags & NAPKIN_LOWER_PLAIN) != 0;

  L.d = diagram;
  L.prog = prog;
  L.flags = flags;
  L.error = error;
  L.n_nodes = napkin_diagram_n_nodes (diagram);
  L.n_axes = napkin_diagram_n_axes (diagram);
  L.group_of = g_new0 (int, L.n_nodes + 1);
  L.home = g_new0 (int, L.n_nodes + 1);
  L.dep = g_new0 (guint8, (gsize) L.n_nodes * L.n_axes + 1);
  L.chain = g_ptr_array_new ();
  L.chain_index = g_array_new (FALSE, FALSE, sizeof (int));
  L.frames_size = MAX_FRAMES + 16;
  L.frames = g_new0 (Frame, L.frames_size);
  L.plain_node = -1;
  n_regions = napkin_diagram_n_regions (diagram);

  seen = g_hash_table_new (NULL, NULL);
  setup_groups (&L);
  compute_deps (&L);
  setup_homes (&L, seen);
  prog->home = g_array_sized_new (FALSE, FALSE, sizeof (int), L.n_nodes);
  g_array_append_vals (prog->home, L.home, L.n_nodes);

  /* Kernels in an order that respects every wire between groups. A group may start
   * when every source of every member outside the group is done. */
  topo = napkin_diagram_topo_order (diagram);
  done = g_new0 (gboolean, L.n_nodes + 1);
  group_done = g_new0 (gboolean, n_regions + 1);
  for (gboolean progress = TRUE; progress && !L.failed;)
    {
      progress = FALSE;
      for (guint i = 0; i < L.n_nodes && !L.failed; i++)
        {
          guint n = topo[i];
          const NapkinNode *node = node_at (&L, n);
          int g = L.group_of[n];
          gboolean ready = TRUE;

          if (done[n])
            continue;
          if (node->kind == NAPKIN_OP_INPUT || node->kind == NAPKIN_OP_OUTPUT)
            {
              gboolean ok = TRUE;

              for (guint p = 0; p < napkin_op_n_inputs (node); p++)
                ok &= done[napkin_diagram_input_source (diagram, n, p)];
              if (!ok)
                continue;
              if (is_input_copy (&L, n))
                lower_input_copy (&L, n);
              done[n] = progress = TRUE;
              continue;
            }
          if (g < 0)
            {
              for (guint p = 0; p < napkin_op_n_inputs (node); p++)
                ready &= done[napkin_diagram_input_source (diagram, n, p)];
              if (!ready)
                continue;
              {
                guint n_consumers;

                napkin_diagram_consumers (diagram, n, &n_consumers);
                if (n_consumers > 0 && !lower_plain (&L, n, seen))
                  break;
              }
              done[n] = progress = TRUE;
              continue;
            }
          /* A region: every outside source of every member must be done. */
          for (guint m = 0; m < L.n_nodes && ready; m++)
            {
              if (L.group_of[m] != g)
                continue;
              for (guint p = 0; p < napkin_op_n_inputs (node_at (&L, m)); p++)
                {
                  int s = napkin_diagram_input_source (diagram, m, p);

                  if (L.group_of[s] != g && !done[s])
                    ready = FALSE;
                }
            }
          if (!ready)
            continue;
          if (!lower_region (&L, g, seen))
            break;
          for (guint m = 0; m < L.n_nodes; m++)
            if (L.group_of[m] == g)
              done[m] = TRUE;
          group_done[g] = progress = TRUE;
        }
    }

  if (!L.failed)
    for (guint n = 0; n < L.n_nodes; n++)
      if (!done[n])
        {
          int g = L.group_of[n];

          fail (&L, NAPKIN_LOWER_ERROR_UNSUPPORTED,
                "regions.%s: an operation outside the region lies between two of its operations; "
                "a region must be one kernel, so every path between its members stays inside it",
                g >= 0 ? napkin_diagram_region (diagram, g)->name : "?");
          break;
        }

  g_free (L.group_of);
  g_free (L.home);
  g_free (L.dep);
  g_ptr_array_unref (L.chain);
  g_array_unref (L.chain_index);
  g_free (L.frames);

  if (L.failed)
    return NULL;
  return g_steal_pointer (&prog);
}

/* ---- byte counts ------------------------------------------------------------------------- */

static gint64
count_bytes (const NapkinIrProgram *prog,
             GPtrArray             *stmts,
             gint64                *extent,
             gint64                 trips)
{
  gint64 total = 0;

  for (guint i = 0; i < stmts->len; i++)
    {
      const NapkinIrStmt *s = g_ptr_array_index (stmts, i);

      if (s->kind == NAPKIN_STMT_LOOP)
        {
          gint64 saved = extent[s->axis];
          gint64 count = s->tile > 0 ? (saved + s->tile - 1) / s->tile : 1;

          if (s->tile > 0)
            extent[s->axis] = MIN (s->tile, saved);
          total += count_bytes (prog, s->body, extent, trips * count);
          extent[s->axis] = saved;
        }
      else if (s->kind == NAPKIN_STMT_COPY || s->kind == NAPKIN_STMT_COMPUTE)
        {
          const NapkinIrBuffer *dst = napkin_ir_buffer (prog, s->dst);

          if (dst->level == NAPKIN_LEVEL_HBM)
            {
              gint64 n = 1;

              for (guint a = 0; a < dst->n_axes; a++)
                n *= extent[dst->axes[a]];
              total += n * napkin_dtype_bytes (dst->dtype) * trips;
            }
          for (guint k = 0; k < G_N_ELEMENTS (s->src); k++)
            {
              const NapkinIrBuffer *src;
              gint64 n = 1;

              if (s->src[k] < 0)
                continue;
              src = napkin_ir_buffer (prog, s->src[k]);
              if (src->level != NAPKIN_LEVEL_HBM)
                continue;
              for (guint a = 0; a < src->n_axes; a++)
                n *= extent[src->axes[a]];
              total += n * napkin_dtype_bytes (src->dtype) * trips;
            }
        }
    }
  return total;
}

gint64
napkin_ir_hbm_bytes (const NapkinIrProgram *program)
{
  guint n_axes = napkin_diagram_n_axes (program->diagram);
  g_autofree gint64 *extent = g_new0 (gint64, n_axes + 1);
  gint64 total = 0;

  for (guint k = 0; k < program->kernels->len; k++)
    {
      const NapkinIrKernel *kernel = g_ptr_array_index (program->kernels, k);

      for (guint a = 0; a < n_axes; a++)
        extent[a] = napkin_diagram_axis_size (program->diagram, a);
      total += count_bytes (program, kernel->body, extent, 1);
    }
  return total;
}
