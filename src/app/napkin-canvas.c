/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-canvas"

#include "config.h"

#include <math.h>
#include <string.h>

#include <adwaita.h>
#include <glib/gi18n.h>

#include "napkin-canvas-private.h"
#include "napkin-clipboard.h"
#include "napkin-edit.h"
#include "napkin-render.h"
#include "napkin-validate.h"
#include "napkin-shard.h"
#include "napkin-tile-default.h"

#define MIN_ZOOM 0.1
#define MAX_ZOOM 6.0
/* The smallest strand label a first screen shows, in pixels. */
#define READABLE_LABEL_PX 9.0

typedef enum
{
  MODE_NONE,
  MODE_MOVE,
  MODE_CONNECT,
  MODE_RUBBER,
  MODE_RESIZE,
  MODE_PAN,
} DragMode;

typedef struct
{
  char  *id;
  double x;
  double y;
} MovedNode;

struct _NapkinCanvas
{
  GtkWidget      parent_instance;

  NapkinHistory *history;
  NapkinDiagram *diagram;
  gulong         changed_id;
  GPtrArray     *problems;
  GPtrArray     *analysis_problems;   /* the model's: infeasible regions (analysis pane) */

  double         zoom;
  double         origin_x;      /* document point at the widget's top-left */
  double         origin_y;
  gboolean       needs_fit;
  gboolean       fit_whole;     /* this document's first view fits all of it (an import) */

  GHashTable    *selected;      /* node id → NULL */
  char          *selected_region;
  char          *selected_wire_to;
  guint          selected_wire_port;

  gboolean       region_tool;
  NapkinLevel    region_level;
  NapkinArch    *arch;          /* tiles of new regions and marks (tune's choice) */
  char          *placeholder_axis;  /* the axis made for an empty diagram's first operation */

  /* A wire begun by a click on a port, finished by a click on another (keyboard
   * and accessibility users, and anyone who does not like to drag). */
  gboolean       pending_wire;
  GtkWidget     *context_menu;
  double         menu_x;        /* document point of the last context menu */
  double         menu_y;

  /* The drag in progress, in document coordinates. */
  DragMode       mode;
  double         start_x;
  double         start_y;
  double         cur_x;
  double         cur_y;
  GArray        *moved;         /* MovedNode */
  gboolean       dragged;
  char          *connect_node;  /* where the wire starts */
  int            connect_port;  /* -1: from the output; else from that input */
  int            feedback_node; /* the port under the pointer, cached */
  int            feedback_port;
  char          *feedback_problem;
  char          *resize_region;
  NapkinRect     resize_rect;
  double         pan_origin_x;
  double         pan_origin_y;
  double         zoom_start;
  double         pointer_x;     /* widget coordinates, for zooming around it */
  double         pointer_y;
  gboolean       pointer_inside;

  /* The diagram's picture as last drawn, and what it was drawn from: frames that
   * change only an overlay (rubber band, connect line, resize) reuse it. */
  GdkTexture    *picture;
  GBytes        *picture_key;

  gboolean       dark;          /* dark paper, following the style manager */
  char          *description;   /* what is drawn, for assistive technologies */
};

G_DEFINE_FINAL_TYPE (NapkinCanvas, napkin_canvas, GTK_TYPE_WIDGET)

enum {
  SELECTION_CHANGED,
  MESSAGE,
  N_SIGNALS
};

enum {
  PROP_0,
  PROP_ZOOM,
  N_PROPS
};

static guint signals[N_SIGNALS];
static GParamSpec *properties[N_PROPS];

static void
widget_to_doc (NapkinCanvas *self,
               double        x,
               double        y,
               double       *doc_x,
               double       *doc_y)
{
  *doc_x = x / self->zoom + self->origin_x;
  *doc_y = y / self->zoom + self->origin_y;
}

void
_napkin_canvas_doc_to_widget (NapkinCanvas *self,
                              double        doc_x,
                              double        doc_y,
                              double       *x,
                              double       *y)
{
  *x = (doc_x - self->origin_x) * self->zoom;
  *y = (doc_y - self->origin_y) * self->zoom;
}

static void
emit_selection_changed (NapkinCanvas *self)
{
  gtk_widget_queue_draw (GTK_WIDGET (self));
  g_signal_emit (self, signals[SELECTION_CHANGED], 0);
}

static void
emit_message (NapkinCanvas *self,
              const char   *message)
{
  g_signal_emit (self, signals[MESSAGE], 0, message);
}

static void
clear_selection_quietly (NapkinCanvas *self)
{
  g_hash_table_remove_all (self->selected);
  g_clear_pointer (&self->selected_region, g_free);
  g_clear_pointer (&self->selected_wire_to, g_free);
}

/* ---------------------------------------------------------------- model */

/* What is drawn, in words, for screen readers (the canvas is one image to them):
 * "Diagram: 4 operations, 2 tensors, 1 region (shared memory)". */
static char *
describe (NapkinDiagram *diagram,
          GPtrArray     *problems)
{
  static const char *levels[NAPKIN_N_LEVELS] = {
    N_("device memory"), N_("L2 cache"), N_("shared memory"), N_("registers"),
  };
  guint n_nodes = diagram ? napkin_diagram_n_nodes (diagram) : 0;
  guint n_regions = diagram ? napkin_diagram_n_regions (diagram) : 0;
  guint tensors = 0;
  GString *s;

  if (diagram == NULL || n_nodes == 0)
    return g_strdup (_("Diagram: empty"));
  s = g_string_new (NULL);
  for (guint n = 0; n < n_nodes; n++)
    {
      NapkinOpKind kind = napkin_diagram_node (diagram, n)->kind;

      tensors += kind == NAPKIN_OP_INPUT || kind == NAPKIN_OP_OUTPUT;
    }
  /* TRANSLATORS: the start of the canvas's description for screen readers */
  g_string_append (s, _("Diagram: "));
  g_string_append_printf (s, ngettext ("%u operation", "%u operations", n_nodes - tensors), n_nodes - tensors);
  g_string_append (s, ", ");
  g_string_append_printf (s, ngettext ("%u tensor", "%u tensors", tensors), tensors);
  g_string_append (s, ", ");
  g_string_append_printf (s, ngettext ("%u region", "%u regions", n_regions), n_regions);
  for (guint r = 0; r < n_regions; r++)
    g_string_append_printf (s, "%s%s", r == 0 ? " (" : ", ", _(levels[napkin_diagram_region (diagram, r)->level]));
  if (n_regions > 0)
    g_string_append (s, ")");
  if (problems != NULL && problems->len > 0)
    {
      g_string_append (s, ", ");
      g_string_append_printf (s, ngettext ("%u problem", "%u problems", problems->len), problems->len);
    }
  return g_string_free (s, FALSE);
}

static void
update_description (NapkinCanvas *self)
{
  g_autofree char *text = describe (self->diagram, self->problems);

  if (g_strcmp0 (text, self->description) == 0)
    return;
  g_free (self->description);
  self->description = g_steal_pointer (&text);
  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL, _("Diagram"),
                                  GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, self->description, -1);
}

char *
napkin_canvas_dup_description (NapkinCanvas *self)
{
  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), NULL);

  return g_strdup (self->description);
}

gboolean
napkin_canvas_get_dark (NapkinCanvas *self)
{
  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), FALSE);

  return self->dark;
}

/* Dark paper in a dark style, switched live (docs/editor.md, "Dark style"). */
static void
style_changed_cb (NapkinCanvas    *self,
                  GParamSpec      *pspec,
                  AdwStyleManager *manager)
{
  gboolean dark = adw_style_manager_get_dark (manager);

  if (dark == self->dark)
    return;
  self->dark = dark;
  gtk_widget_queue_draw (GTK_WIDGET (self));
  (void) pspec;
}

/* The gpus region is selected as a region, by its name (docs/multi-gpu.md). */
static gboolean
gpus_selected (NapkinCanvas *self)
{
  const NapkinGpusRegion *gpus = self->diagram ? napkin_diagram_get_gpus (self->diagram) : NULL;

  return gpus != NULL && self->selected_region != NULL
         && g_strcmp0 (gpus->region->name, self->selected_region) == 0;
}

static gboolean
is_gpus_name (NapkinCanvas *self,
              const char   *name)
{
  const NapkinGpusRegion *gpus = self->diagram ? napkin_diagram_get_gpus (self->diagram) : NULL;

  return gpus != NULL && name != NULL && g_strcmp0 (gpus->region->name, name) == 0;
}

static void
diagram_changed_cb (NapkinCanvas  *self,
                    NapkinDiagram *diagram)
{
  GHashTableIter iter;
  gpointer key;
  gboolean lost = FALSE;

  g_assert (NAPKIN_IS_CANVAS (self));

  g_clear_pointer (&self->problems, g_ptr_array_unref);
  self->problems = napkin_diagram_check (diagram);

  /* Forget selected items that an edit or an undo removed. */
  g_hash_table_iter_init (&iter, self->selected);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    if (napkin_diagram_find_node (diagram, key) < 0)
      {
        g_hash_table_iter_remove (&iter);
        lost = TRUE;
      }
  if (self->selected_region && napkin_diagram_find_region (diagram, self->selected_region) < 0
      && !is_gpus_name (self, self->selected_region))
    {
      g_clear_pointer (&self->selected_region, g_free);
      lost = TRUE;
    }
  if (self->selected_wire_to)
    {
      int t = napkin_diagram_find_node (diagram, self->selected_wire_to);

      if (t < 0 || napkin_diagram_wire_for_port (diagram, t, self->selected_wire_port) < 0)
        {
          g_clear_pointer (&self->selected_wire_to, g_free);
          lost = TRUE;
        }
    }

  update_description (self);
  gtk_widget_queue_draw (GTK_WIDGET (self));
  /* Listeners (the inspector) refresh on this too, so always tell them. */
  g_signal_emit (self, signals[SELECTION_CHANGED], 0);
  (void) lost;
}

NapkinHistory *
napkin_canvas_get_history (NapkinCanvas *self)
{
  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), NULL);

  return self->history;
}

void
napkin_canvas_set_history (NapkinCanvas  *self,
                           NapkinHistory *history)
{
  g_return_if_fail (NAPKIN_IS_CANVAS (self));
  g_return_if_fail (history == NULL || NAPKIN_IS_HISTORY (history));

  if (self->history == history)
    return;

  if (self->diagram != NULL)
    g_clear_signal_handler (&self->changed_id, self->diagram);
  g_clear_object (&self->diagram);
  g_clear_object (&self->history);
  g_clear_pointer (&self->problems, g_ptr_array_unref);
  g_clear_object (&self->picture);
  g_clear_pointer (&self->picture_key, g_bytes_unref);
  g_clear_pointer (&self->placeholder_axis, g_free);
  self->pending_wire = FALSE;
  self->mode = MODE_NONE;
  clear_selection_quietly (self);

  if (history != NULL)
    {
      self->history = g_object_ref (history);
      self->diagram = g_object_ref (napkin_history_get_diagram (history));
      self->changed_id = g_signal_connect_object (self->diagram, "changed",
                                                  G_CALLBACK (diagram_changed_cb), self,
                                                  G_CONNECT_SWAPPED);
      self->problems = napkin_diagram_check (self->diagram);
      self->needs_fit = TRUE;
      self->fit_whole = FALSE;
      gtk_widget_queue_allocate (GTK_WIDGET (self));
    }
  update_description (self);
  emit_selection_changed (self);
}

void
napkin_canvas_set_analysis_problems (NapkinCanvas *self,
                                     GPtrArray    *problems)
{
  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  if (problems == self->analysis_problems)
    return;
  if ((problems == NULL || problems->len == 0)
      && (self->analysis_problems == NULL || self->analysis_problems->len == 0))
    return;
  if (problems != NULL)
    g_ptr_array_ref (problems);
  g_clear_pointer (&self->analysis_problems, g_ptr_array_unref);
  self->analysis_problems = problems;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

gboolean
napkin_canvas_is_region_flagged (NapkinCanvas *self,
                                 const char   *name)
{
  int index;

  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), FALSE);

  index = self->diagram ? napkin_diagram_find_region (self->diagram, name) : -1;
  for (guint i = 0; index >= 0 && self->analysis_problems && i < self->analysis_problems->len; i++)
    {
      const NapkinProblem *p = g_ptr_array_index (self->analysis_problems, i);

      if (p->kind == NAPKIN_ITEM_REGION && p->index == (guint) index)
        return TRUE;
    }
  return FALSE;
}

const char *
_napkin_canvas_node_mark (NapkinCanvas *self,
                          const char   *id)
{
  int index = self->diagram ? napkin_diagram_find_node (self->diagram, id) : -1;

  for (guint i = 0; index >= 0 && self->analysis_problems && i < self->analysis_problems->len; i++)
    {
      const NapkinProblem *p = g_ptr_array_index (self->analysis_problems, i);

      if (p->kind == NAPKIN_ITEM_NODE && p->index == (guint) index)
        return p->message;
    }
  return NULL;
}

/* ---------------------------------------------------------------- view */

double
napkin_canvas_get_zoom (NapkinCanvas *self)
{
  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), 1.0);

  return self->zoom;
}

/* Zooms keeping the document point under (wx, wy) in place. */
static void
zoom_around (NapkinCanvas *self,
             double        zoom,
             double        wx,
             double        wy)
{
  double dx, dy;

  zoom = CLAMP (zoom, MIN_ZOOM, MAX_ZOOM);
  if (zoom == self->zoom)
    return;
  widget_to_doc (self, wx, wy, &dx, &dy);
  self->zoom = zoom;
  self->origin_x = dx - wx / zoom;
  self->origin_y = dy - wy / zoom;
  gtk_widget_queue_draw (GTK_WIDGET (self));
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ZOOM]);
}

void
napkin_canvas_set_zoom (NapkinCanvas *self,
                        double        zoom)
{
  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  zoom_around (self, zoom, gtk_widget_get_width (GTK_WIDGET (self)) / 2.0,
               gtk_widget_get_height (GTK_WIDGET (self)) / 2.0);
}

void
napkin_canvas_zoom_to_fit (NapkinCanvas *self)
{
  int width, height;
  NapkinCanvasView view;

  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  width = gtk_widget_get_width (GTK_WIDGET (self));
  height = gtk_widget_get_height (GTK_WIDGET (self));
  if (self->diagram == NULL || width <= 1 || height <= 1)
    {
      self->needs_fit = TRUE;
      return;
    }
  self->needs_fit = FALSE;

  /* the benchmark fits its views with the same function */
  napkin_render_fit_view (self->diagram, width, height, MIN_ZOOM, 1.5, &view);
  self->zoom = view.zoom;
  self->origin_x = view.origin_x;
  self->origin_y = view.origin_y;
  gtk_widget_queue_draw (GTK_WIDGET (self));
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ZOOM]);
}

/* ---------------------------------------------------------------- selection */

char **
napkin_canvas_dup_selected_nodes (NapkinCanvas *self)
{
  GPtrArray *ids = g_ptr_array_new ();

  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), NULL);

  /* In diagram order, so that results do not depend on hashing. */
  if (self->diagram != NULL)
    for (guint n = 0; n < napkin_diagram_n_nodes (self->diagram); n++)
      {
        const char *id = napkin_diagram_node (self->diagram, n)->id;

        if (g_hash_table_contains (self->selected, id))
          g_ptr_array_add (ids, g_strdup (id));
      }
  g_ptr_array_add (ids, NULL);
  return (char **) g_ptr_array_free (ids, FALSE);
}

/* The gpus region with a new rectangle, one undo step. */
static gboolean
set_gpus_rect (NapkinCanvas     *self,
               const NapkinRect *rect,
               GError          **error)
{
  g_autoptr(NapkinGpusRegion) copy = napkin_gpus_region_copy (napkin_diagram_get_gpus (self->diagram), TRUE);

  copy->region->has_rect = TRUE;
  copy->region->x = rect->x;
  copy->region->y = rect->y;
  copy->region->width = rect->width;
  copy->region->height = rect->height;
  return napkin_edit_set_gpus (self->history, copy, _("Resize GPUs region"), error);
}

const char *
napkin_canvas_get_selected_region (NapkinCanvas *self)
{
  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), NULL);

  return self->selected_region;
}

gboolean
napkin_canvas_get_selected_wire (NapkinCanvas  *self,
                                 const char   **to,
                                 guint         *port)
{
  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), FALSE);

  if (self->selected_wire_to == NULL)
    return FALSE;
  *to = self->selected_wire_to;
  *port = self->selected_wire_port;
  return TRUE;
}

void
napkin_canvas_select_node (NapkinCanvas *self,
                           const char   *id,
                           gboolean      extend)
{
  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  if (!extend)
    clear_selection_quietly (self);
  g_clear_pointer (&self->selected_region, g_free);
  g_clear_pointer (&self->selected_wire_to, g_free);
  if (id != NULL)
    g_hash_table_add (self->selected, g_strdup (id));
  emit_selection_changed (self);
}

void
napkin_canvas_select_region (NapkinCanvas *self,
                             const char   *name)
{
  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  clear_selection_quietly (self);
  self->selected_region = g_strdup (name);
  emit_selection_changed (self);
}

static void
select_wire (NapkinCanvas *self,
             guint         w)
{
  const NapkinWire *wire = napkin_diagram_wire (self->diagram, w);

  clear_selection_quietly (self);
  self->selected_wire_to = g_strdup (wire->to);
  self->selected_wire_port = wire->port;
  emit_selection_changed (self);
}

void
napkin_canvas_select_all (NapkinCanvas *self)
{
  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  clear_selection_quietly (self);
  if (self->diagram != NULL)
    for (guint n = 0; n < napkin_diagram_n_nodes (self->diagram); n++)
      g_hash_table_add (self->selected, g_strdup (napkin_diagram_node (self->diagram, n)->id));
  emit_selection_changed (self);
}

void
napkin_canvas_clear_selection (NapkinCanvas *self)
{
  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  clear_selection_quietly (self);
  emit_selection_changed (self);
}

/* ---------------------------------------------------------------- edits */

static char *
unique_name (NapkinDiagram  *diagram,
             NapkinItemKind  kind,
             const char     *stem)
{
  for (guint i = 1;; i++)
    {
      char *name = g_strdup_printf ("%s%u", stem, i);

      if (napkin_diagram_find (diagram, kind, name) < 0)
        return name;
      g_free (name);
    }
}

/* Axis names for a new operation: the diagram's, adding one when it has none. */
static const char *
ensure_axis (NapkinCanvas  *self,
             guint          index,
             GError       **error)
{
  if (napkin_diagram_n_axes (self->diagram) == 0)
    {
      if (!napkin_edit_add_axis (self->history, "i", 1024, error))
        return NULL;
      g_free (self->placeholder_axis);
      self->placeholder_axis = g_strdup ("i");
    }
  index = MIN (index, napkin_diagram_n_axes (self->diagram) - 1);
  return napkin_diagram_axis (self->diagram, index)->name;
}

static const char *
kind_stem (NapkinOpKind kind)
{
  switch (kind)
    {
    case NAPKIN_OP_INPUT: return "in";
    case NAPKIN_OP_OUTPUT: return "out";
    case NAPKIN_OP_CONTRACT: return "contract";
    case NAPKIN_OP_MAP: return "map";
    case NAPKIN_OP_REDUCE: return "reduce";
    case NAPKIN_OP_SOFTMAX: return "softmax";
    case NAPKIN_OP_NORMALIZE: return "norm";
    case NAPKIN_OP_REARRANGE: return "rearrange";
    case NAPKIN_OP_MASK: return "mask";
    case NAPKIN_N_OPS:
    default: return "op";
    }
}

char *
napkin_canvas_add_node (NapkinCanvas  *self,
                        NapkinOpKind   kind,
                        double         x,
                        double         y,
                        GError       **error)
{
  g_autofree char *id = NULL;
  NapkinNode *node;
  const char *axis;
  gboolean ok = FALSE;

  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), NULL);
  g_return_val_if_fail (self->history != NULL, NULL);
  g_return_val_if_fail (kind < NAPKIN_N_OPS, NULL);

  napkin_history_begin_group (self->history, _("Add operation"));

  id = unique_name (self->diagram, NAPKIN_ITEM_NODE, kind_stem (kind));
  node = napkin_node_new (id, kind);
  node->x = round (x);
  node->y = round (y);
  axis = ensure_axis (self, 0, error);
  if (axis == NULL)
    goto out;

  /* Defaults that make a valid operation of this kind; the inspector edits them. */
  switch (kind)
    {
    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_OUTPUT:
      {
        g_autofree char *tensor_name = unique_name (self->diagram, NAPKIN_ITEM_TENSOR,
                                                    kind == NAPKIN_OP_INPUT ? "X" : "Y");
        char *axes[] = { (char *) axis, NULL };
        NapkinTensor tensor = { tensor_name, axes, NAPKIN_DTYPE_FP16, NULL };

        if (!napkin_edit_add_tensor (self->history, &tensor, error))
          goto out;
        node->tensor = g_strdup (tensor_name);
        node->label = g_strdup (tensor_name);
        break;
      }
    case NAPKIN_OP_CONTRACT:
      /* its output axes follow from its wires (connect_in) */
      node->out = g_new0 (char *, 1);
      break;
    case NAPKIN_OP_REARRANGE:
      node->out = g_new0 (char *, 2);
      node->out[0] = g_strdup (axis);
      break;
    case NAPKIN_OP_MAP:
      node->fn = NAPKIN_FN_EXP;
      node->alpha = 1.0;
      break;
    case NAPKIN_OP_REDUCE:
    case NAPKIN_OP_SOFTMAX:
    case NAPKIN_OP_NORMALIZE:
      node->axis = g_strdup (axis);
      node->eps = 1e-5;
      break;
    case NAPKIN_OP_MASK:
      {
        /* causal over two distinct axes: rows (queries) then keys; connecting its
         * input picks the scores' last two axes (connect_in) */
        if (napkin_diagram_n_axes (self->diagram) < 2)
          {
            g_autofree char *name = unique_name (self->diagram, NAPKIN_ITEM_AXIS, "j");

            if (!napkin_edit_add_axis (self->history, name, 1024, error))
              goto out;
          }
        node->mask = NAPKIN_MASK_CAUSAL;
        node->rows = g_strdup (napkin_diagram_axis (self->diagram, 0)->name);
        node->axis = g_strdup (napkin_diagram_axis (self->diagram, 1)->name);
        node->label = g_strdup (_("causal"));
        break;
      }
    case NAPKIN_N_OPS:
    default:
      g_assert_not_reached ();
    }

  ok = napkin_edit_add_node (self->history, node, error);

out:
  if (ok)
    napkin_history_end_group (self->history);
  else
    napkin_history_cancel_group (self->history);
  napkin_item_free (NAPKIN_ITEM_NODE, node);
  if (!ok)
    return NULL;
  napkin_canvas_select_node (self, id, FALSE);
  return g_steal_pointer (&id);
}

/* Is the rectangle (x, y, w, h) clear of every glyph, with room for labels? */
static gboolean
place_is_free (NapkinCanvas *self,
               double        x,
               double        y,
               double        w,
               double        h,
               const char   *except)
{
  for (guint n = 0; n < napkin_diagram_n_nodes (self->diagram); n++)
    {
      NapkinRect r;

      if (g_strcmp0 (napkin_diagram_node (self->diagram, n)->id, except) == 0)
        continue;
      napkin_render_node_rect (self->diagram, n, &r);
      if (!(x + w < r.x - 40 || x > r.x + r.width + 40 || y + h < r.y - 36 || y > r.y + r.height + 30))
        return FALSE;
    }
  return TRUE;
}

/* Scrolls (never zooms) so that the document rectangle is in view, with a margin. */
static void
scroll_into_view (NapkinCanvas     *self,
                  const NapkinRect *rect)
{
  double width = gtk_widget_get_width (GTK_WIDGET (self)) / self->zoom;
  double height = gtk_widget_get_height (GTK_WIDGET (self)) / self->zoom;
  double margin = 40 / self->zoom;
  double ox = self->origin_x, oy = self->origin_y;

  if (width <= 1 || height <= 1)
    return;
  if (rect->x - margin < ox)
    ox = rect->x - margin;
  else if (rect->x + rect->width + margin > ox + width)
    ox = MIN (rect->x - margin, rect->x + rect->width + margin - width);
  if (rect->y - margin < oy)
    oy = rect->y - margin;
  else if (rect->y + rect->height + margin > oy + height)
    oy = MIN (rect->y - margin, rect->y + rect->height + margin - height);
  if (ox != self->origin_x || oy != self->origin_y)
    {
      self->origin_x = ox;
      self->origin_y = oy;
      gtk_widget_queue_draw (GTK_WIDGET (self));
    }
}

static void
scroll_node_into_view (NapkinCanvas *self,
                       const char   *id)
{
  int n = napkin_diagram_find_node (self->diagram, id);
  NapkinRect r;

  if (n < 0)
    return;
  napkin_render_node_rect (self->diagram, n, &r);
  /* the label above and the element type below */
  r.y -= 20;
  r.height += 40;
  scroll_into_view (self, &r);
}

void
napkin_canvas_show_whole (NapkinCanvas *self)
{
  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  self->fit_whole = TRUE;
  if (!self->needs_fit)
    napkin_canvas_zoom_to_fit (self);
}

void
napkin_canvas_select_nodes (NapkinCanvas       *self,
                            const char * const *ids)
{
  NapkinRect all = { 0 };
  gboolean any = FALSE;

  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  clear_selection_quietly (self);
  g_clear_pointer (&self->selected_region, g_free);
  g_clear_pointer (&self->selected_wire_to, g_free);
  for (guint i = 0; ids != NULL && ids[i] != NULL; i++)
    {
      int n = self->diagram ? napkin_diagram_find_node (self->diagram, ids[i]) : -1;
      NapkinRect r;

      if (n < 0)
        continue;
      g_hash_table_add (self->selected, g_strdup (ids[i]));
      napkin_render_node_rect (self->diagram, n, &r);
      if (any)
        {
          double x1 = MAX (all.x + all.width, r.x + r.width), y1 = MAX (all.y + all.height, r.y + r.height);

          all.x = MIN (all.x, r.x);
          all.y = MIN (all.y, r.y);
          all.width = x1 - all.x;
          all.height = y1 - all.y;
        }
      else
        all = r;
      any = TRUE;
    }
  emit_selection_changed (self);
  if (any)
    {
      /* the labels above and the element types below */
      all.y -= 20;
      all.height += 40;
      scroll_into_view (self, &all);
    }
}

/* Free space near (x, y): down first (a column of operations), then right. */
static void
find_free_place (NapkinCanvas *self,
                 double       *x,
                 double       *y,
                 double        step_x,
                 double        step_y)
{
  double x0 = *x, y0 = *y;

  for (guint tries = 0; tries < 60; tries++)
    {
      if (place_is_free (self, *x, *y, 60, 50, NULL))
        return;
      *y += step_y;
      if (tries % 6 == 5)
        {
          *y = y0;
          *x += step_x;
        }
    }
  *x = x0;
  *y = y0;
}

static gboolean menu_key (NapkinCanvas *self);
static gboolean connect_in (NapkinCanvas *self, NapkinHistory *history, const char *from, const char *to,
                            guint port, gboolean *replaced, GError **error);
static char *trial_connect (NapkinCanvas *self, const char *from, const char *to, guint port);

char *
napkin_canvas_add_node_at_center (NapkinCanvas  *self,
                                  NapkinOpKind   kind,
                                  GError       **error)
{
  g_auto(GStrv) selected = NULL;
  g_autofree char *id = NULL;
  g_autofree char *source = NULL;
  double x, y;

  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), NULL);
  g_return_val_if_fail (self->history != NULL, NULL);

  selected = napkin_canvas_dup_selected_nodes (self);
  if (selected[0] != NULL && selected[1] == NULL && kind != NAPKIN_OP_INPUT)
    {
      int n = napkin_diagram_find_node (self->diagram, selected[0]);

      if (n >= 0 && napkin_diagram_node (self->diagram, n)->kind != NAPKIN_OP_OUTPUT)
        source = g_strdup (selected[0]);
    }

  if (source != NULL)
    {
      NapkinRect r;

      /* right of its source, far enough for the wire's strand labels between them */
      napkin_render_node_rect (self->diagram, napkin_diagram_find_node (self->diagram, source), &r);
      x = round (r.x + r.width + 150);
      y = round (r.y);
      find_free_place (self, &x, &y, 110, 90);
    }
  else
    {
      double wx = gtk_widget_get_width (GTK_WIDGET (self)) / 2.0;
      double wy = gtk_widget_get_height (GTK_WIDGET (self)) / 2.0;

      /* at the pointer when it is over the canvas, else in the middle of the view */
      if (self->pointer_inside)
        {
          wx = self->pointer_x;
          wy = self->pointer_y;
        }
      widget_to_doc (self, wx, wy, &x, &y);
      x = round (x - 30);
      y = round (y - 20);
      find_free_place (self, &x, &y, 100, 90);
    }

  napkin_history_begin_group (self->history, _("Add operation"));
  id = napkin_canvas_add_node (self, kind, x, y, error);
  /* a failed add cancelled the whole group already */
  if (id == NULL)
    return NULL;
  if (source != NULL)
    {
      g_autofree char *problem = trial_connect (self, source, id, 0);

      /* wired from the selection when that makes a valid wire */
      if (problem == NULL)
        connect_in (self, self->history, source, id, 0, NULL, NULL);
    }
  napkin_history_end_group (self->history);
  napkin_canvas_select_node (self, id, FALSE);
  scroll_node_into_view (self, id);
  return g_steal_pointer (&id);
}

gboolean
napkin_canvas_delete_selection (NapkinCanvas  *self,
                                GError       **error)
{
  g_auto(GStrv) ids = NULL;
  gboolean ok = TRUE;

  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), FALSE);

  if (self->history == NULL)
    return TRUE;

  if (gpus_selected (self))
    return napkin_edit_set_gpus (self->history, NULL, _("Delete GPUs region"), error);
  if (self->selected_region != NULL)
    {
      g_autofree char *name = g_strdup (self->selected_region);

      return napkin_edit_remove_region (self->history, name, error);
    }
  if (self->selected_wire_to != NULL)
    {
      g_autofree char *to = g_strdup (self->selected_wire_to);

      return napkin_edit_disconnect (self->history, to, self->selected_wire_port, error);
    }

  ids = napkin_canvas_dup_selected_nodes (self);
  if (ids[0] == NULL)
    return TRUE;
  napkin_history_begin_group (self->history, _("Delete"));
  for (guint i = 0; ids[i] && ok; i++)
    ok = napkin_edit_remove_node (self->history, ids[i], error);
  if (ok)
    napkin_history_end_group (self->history);
  else
    napkin_history_cancel_group (self->history);
  return ok;
}

static char *
add_region_for (NapkinCanvas       *self,
                NapkinLevel         level,
                const char *const  *ids,
                GError            **error)
{
  g_autofree char *name = NULL;
  NapkinRegion *region;
  gboolean ok;

  if (ids == NULL || ids[0] == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                           _("Select the operations the region should hold first"));
      return NULL;
    }
  name = unique_name (self->diagram, NAPKIN_ITEM_REGION,
                      level == NAPKIN_LEVEL_REGISTERS ? "regs" : level == NAPKIN_LEVEL_L2 ? "l2_" : "block");
  region = napkin_region_new (name, level);
  /* inputs and outputs live in device memory: a selection that holds them means the
   * operations between them */
  for (guint i = 0; ids[i]; i++)
    {
      int n = napkin_diagram_find_node (self->diagram, ids[i]);
      NapkinOpKind kind = n >= 0 ? napkin_diagram_node (self->diagram, n)->kind : NAPKIN_OP_INPUT;

      if (kind != NAPKIN_OP_INPUT && kind != NAPKIN_OP_OUTPUT)
        napkin_region_add_node (region, ids[i]);
    }
  if (region->nodes->len == 0)
    {
      napkin_item_free (NAPKIN_ITEM_REGION, region);
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                           _("Inputs and outputs stay in device memory: select the operations between them"));
      return NULL;
    }
  napkin_history_begin_group (self->history, _("Add region"));
  ok = napkin_edit_add_region (self->history, region, error);
  napkin_item_free (NAPKIN_ITEM_REGION, region);
  /* marks to start from: what the region's operations suggest, with tune's tiles */
  if (ok)
    {
      g_auto(GStrv) specs = napkin_tile_default_marks (self->diagram, name, self->arch);

      napkin_tile_default_apply (self->history, name, (const char *const *) specs, NULL);
    }
  napkin_history_end_group (self->history);
  if (!ok)
    return NULL;
  napkin_canvas_select_region (self, name);
  {
    NapkinRect rect;

    napkin_render_region_rect (self->diagram, napkin_diagram_find_region (self->diagram, name), &rect);
    scroll_into_view (self, &rect);
  }
  return g_steal_pointer (&name);
}

char *
napkin_canvas_add_region (NapkinCanvas  *self,
                          NapkinLevel    level,
                          GError       **error)
{
  g_auto(GStrv) ids = NULL;

  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), NULL);
  g_return_val_if_fail (self->history != NULL, NULL);

  ids = napkin_canvas_dup_selected_nodes (self);
  return add_region_for (self, level, (const char *const *) ids, error);
}

/* The first axis that the shard plan accepts split over two GPUs, trying the axes of
 * the operations' results in order: a start the inspector changes. */
static char *
guess_parallel_axis (NapkinDiagram          *diagram,
                     const NapkinGpusRegion *gpus)
{
  g_autoptr(GPtrArray) tried = g_ptr_array_new ();
  char *first = NULL;

  for (guint i = 0; i < gpus->region->nodes->len; i++)
    {
      int n = napkin_diagram_find_node (diagram, g_ptr_array_index (gpus->region->nodes, i));
      const NapkinTensorType *type = n >= 0 ? napkin_diagram_node_type (diagram, n) : NULL;

      for (guint a = 0; type != NULL && type->valid && a < type->n_axes; a++)
        {
          const char *axis = napkin_diagram_axis (diagram, type->axes[a])->name;

          if (g_ptr_array_find_with_equal_func (tried, axis, g_str_equal, NULL))
            continue;
          g_ptr_array_add (tried, (gpointer) axis);
          if (first == NULL)
            first = g_strdup (axis);
          {
            g_autoptr(NapkinDiagram) trial = napkin_diagram_copy_without_extras (diagram);
            g_autoptr(NapkinGpusRegion) candidate = napkin_gpus_region_copy (gpus, FALSE);
            g_autoptr(NapkinShardPlan) plan = NULL;

            napkin_region_set_mark (candidate->region, axis, NAPKIN_MARK_PARALLEL, 0);
            napkin_diagram_set_gpus (trial, g_steal_pointer (&candidate));
            plan = napkin_shard_plan_build (trial, NULL, 2, NULL);
            if (plan != NULL)
              {
                g_free (first);
                return g_strdup (axis);
              }
          }
        }
    }
  return first;
}

char *
napkin_canvas_add_gpus_region (NapkinCanvas  *self,
                               GError       **error)
{
  g_auto(GStrv) ids = NULL;
  g_autoptr(NapkinGpusRegion) gpus = NULL;
  g_autofree char *name = NULL;
  g_autofree char *axis = NULL;

  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), NULL);
  g_return_val_if_fail (self->history != NULL, NULL);

  if (napkin_diagram_get_gpus (self->diagram) != NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                           _("The diagram has a GPUs region already: a diagram has at most one"));
      return NULL;
    }
  ids = napkin_canvas_dup_selected_nodes (self);
  if (ids[0] == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                           _("Select the operations the region should hold first"));
      return NULL;
    }
  name = unique_name (self->diagram, NAPKIN_ITEM_REGION, "gpus");
  gpus = napkin_gpus_region_new (name);
  gpus->gpus = 2;
  for (guint i = 0; ids[i]; i++)
    {
      int n = napkin_diagram_find_node (self->diagram, ids[i]);
      NapkinOpKind kind = n >= 0 ? napkin_diagram_node (self->diagram, n)->kind : NAPKIN_OP_INPUT;

      if (kind != NAPKIN_OP_INPUT && kind != NAPKIN_OP_OUTPUT)
        napkin_region_add_node (gpus->region, ids[i]);
    }
  if (gpus->region->nodes->len == 0)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                           _("Inputs and outputs stay in device memory: select the operations between them"));
      return NULL;
    }
  axis = guess_parallel_axis (self->diagram, gpus);
  if (axis != NULL)
    napkin_region_set_mark (gpus->region, axis, NAPKIN_MARK_PARALLEL, 0);
  if (!napkin_edit_set_gpus (self->history, gpus, _("Add GPUs region"), error))
    return NULL;
  napkin_canvas_select_region (self, name);
  {
    NapkinRect rect;

    if (napkin_render_gpus_rect (self->diagram, &rect))
      scroll_into_view (self, &rect);
  }
  return g_steal_pointer (&name);
}

void
napkin_canvas_set_arch (NapkinCanvas *self,
                        NapkinArch   *arch)
{
  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  if (arch != NULL)
    napkin_arch_ref (arch);
  g_clear_pointer (&self->arch, napkin_arch_unref);
  self->arch = arch;
}

const char *
napkin_canvas_get_placeholder_axis (NapkinCanvas *self)
{
  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), NULL);

  return self->placeholder_axis;
}

NapkinArch *
napkin_canvas_get_arch (NapkinCanvas *self)
{
  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), NULL);

  return self->arch;
}

void
napkin_canvas_set_region_tool (NapkinCanvas *self,
                               gboolean      active,
                               NapkinLevel   level)
{
  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  self->region_tool = active;
  self->region_level = level;
  if (active)
    gtk_widget_set_cursor_from_name (GTK_WIDGET (self), "crosshair");
  else
    gtk_widget_set_cursor (GTK_WIDGET (self), NULL);
}

void
napkin_canvas_copy (NapkinCanvas *self)
{
  g_auto(GStrv) ids = NULL;
  g_autofree char *data = NULL;

  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  if (self->diagram == NULL)
    return;
  ids = napkin_canvas_dup_selected_nodes (self);
  if (ids[0] == NULL)
    return;
  data = napkin_diagram_copy_nodes (self->diagram, (const char *const *) ids, NULL);
  gdk_clipboard_set_text (gtk_widget_get_clipboard (GTK_WIDGET (self)), data);
}

static void
paste_text_cb (GObject      *object,
               GAsyncResult *result,
               gpointer      user_data)
{
  g_autoptr(NapkinCanvas) self = user_data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) new_ids = NULL;
  g_autofree char *text = gdk_clipboard_read_text_finish (GDK_CLIPBOARD (object), result, &error);

  if (text == NULL || self->history == NULL)
    return;
  if (!napkin_edit_paste (self->history, text, -1, 30, 30, &new_ids, &error))
    {
      g_autofree char *message = g_strdup_printf (_("Cannot paste: %s"), error->message);

      emit_message (self, message);
      return;
    }
  clear_selection_quietly (self);
  for (guint i = 0; new_ids && i < new_ids->len; i++)
    g_hash_table_add (self->selected, g_strdup (g_ptr_array_index (new_ids, i)));
  emit_selection_changed (self);
}

void
napkin_canvas_paste (NapkinCanvas *self)
{
  g_return_if_fail (NAPKIN_IS_CANVAS (self));

  gdk_clipboard_read_text_async (gtk_widget_get_clipboard (GTK_WIDGET (self)), NULL,
                                 paste_text_cb, g_object_ref (self));
}

/* ---------------------------------------------------------------- connect feedback */

static guint
count_node_problems (GPtrArray *problems,
                     guint      node)
{
  guint count = 0;

  for (guint i = 0; problems && i < problems->len; i++)
    {
      const NapkinProblem *p = g_ptr_array_index (problems, i);

      count += p->kind == NAPKIN_ITEM_NODE && p->index == node;
    }
  return count;
}

/* After a wire reaches `to`, what its new input tells about it (docs/editor.md,
 * "Smart defaults"): a contraction's output axes, an unwired output's tensor, the
 * axis of a softmax, normalization or reduction, a rearrangement's order. */
static void
adapt_target (NapkinCanvas  *self,
              NapkinHistory *history,
              const char    *to,
              gboolean       was_free)
{
  NapkinDiagram *d = napkin_history_get_diagram (history);
  int t = napkin_diagram_find_node (d, to);
  const NapkinNode *node;
  int src;
  const NapkinTensorType *in;
  NapkinTensorType in_copy;
  g_autoptr(GPtrArray) problems = NULL;
  gboolean troubled = FALSE;

  if (t < 0)
    return;
  problems = napkin_diagram_check (d);
  troubled = count_node_problems (problems, t) > 0;
  /* read after the check: it may rebuild the diagram's caches, types and items included */
  node = napkin_diagram_node (d, t);
  src = napkin_diagram_input_source (d, t, 0);
  in = src >= 0 ? napkin_diagram_node_type (d, src) : NULL;
  if (in != NULL)
    {
      in_copy = *in;   /* edits below change the diagram and its caches */
      in = &in_copy;
    }

  switch (node->kind)
    {
    case NAPKIN_OP_OUTPUT:
      {
        int ti = napkin_diagram_find_tensor (d, node->tensor);
        guint users = 0;
        g_autoptr(GStrvBuilder) axes = g_strv_builder_new ();
        g_auto(GStrv) names = NULL;
        g_autofree char *tensor = g_strdup (node->tensor);

        for (guint n = 0; n < napkin_diagram_n_nodes (d); n++)
          users += g_strcmp0 (napkin_diagram_node (d, n)->tensor, node->tensor) == 0;
        /* an output that was waiting for its wire, writing a tensor of its own */
        if (!was_free || users != 1 || ti < 0 || in == NULL || !in->valid || in->n_axes == 0)
          break;
        for (guint i = 0; i < in->n_axes; i++)
          g_strv_builder_add (axes, napkin_diagram_axis (d, in->axes[i])->name);
        names = g_strv_builder_end (axes);
        napkin_edit_set_tensor_axes (history, tensor, (const char *const *) names, NULL);
        napkin_edit_set_tensor_dtype (history, tensor, in->dtype, NULL);
        break;
      }

    case NAPKIN_OP_CONTRACT:
      {
        g_auto(GStrv) out = napkin_diagram_infer_contract_out (d, t);

        if (out != NULL && (troubled || node->out == NULL || node->out[0] == NULL)
            && !g_strv_equal ((const char *const *) out, (const char *const *) node->out))
          {
            g_autoptr(NapkinNode) changed = napkin_item_copy (NAPKIN_ITEM_NODE, node);

            g_strfreev (changed->out);
            changed->out = g_steal_pointer (&out);
            napkin_edit_update_node (history, changed, NULL);
          }
        break;
      }

    case NAPKIN_OP_REDUCE:
    case NAPKIN_OP_SOFTMAX:
    case NAPKIN_OP_NORMALIZE:
      /* its first wire (the axis it was made with is only a placeholder), or one
       * whose tensor lacks its axis: over the last (contiguous) axis, where rows are
       * reduced (docs/editor.md, "Smart defaults") */
      if ((troubled || was_free) && in != NULL && in->valid && in->n_axes > 0
          && g_strcmp0 (node->axis, napkin_diagram_axis (d, in->axes[in->n_axes - 1])->name) != 0)
        {
          g_autoptr(NapkinNode) changed = napkin_item_copy (NAPKIN_ITEM_NODE, node);

          g_free (changed->axis);
          changed->axis = g_strdup (napkin_diagram_axis (d, in->axes[in->n_axes - 1])->name);
          napkin_edit_update_node (history, changed, NULL);
        }
      break;

    case NAPKIN_OP_MASK:
      if (troubled && node->mask != NAPKIN_MASK_TENSOR && in != NULL && in->valid && in->n_axes >= 2)
        {
          g_autoptr(NapkinNode) changed = napkin_item_copy (NAPKIN_ITEM_NODE, node);

          /* scores [… q, k]: rows the queries, axis the keys */
          g_free (changed->rows);
          g_free (changed->axis);
          changed->rows = g_strdup (napkin_diagram_axis (d, in->axes[in->n_axes - 2])->name);
          changed->axis = g_strdup (napkin_diagram_axis (d, in->axes[in->n_axes - 1])->name);
          napkin_edit_update_node (history, changed, NULL);
        }
      break;

    case NAPKIN_OP_REARRANGE:
      if (troubled && in != NULL && in->valid && in->n_axes > 0)
        {
          g_autoptr(NapkinNode) changed = napkin_item_copy (NAPKIN_ITEM_NODE, node);

          /* a transpose: the input's axes the other way round */
          g_strfreev (changed->out);
          changed->out = g_new0 (char *, in->n_axes + 1);
          for (guint i = 0; i < in->n_axes; i++)
            changed->out[i] = g_strdup (napkin_diagram_axis (d, in->axes[in->n_axes - 1 - i])->name);
          napkin_edit_update_node (history, changed, NULL);
        }
      break;

    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_MAP:
    case NAPKIN_N_OPS:
    default:
      break;
    }
}

/* The wire and what it implies for its target, as one undo step. */
static gboolean
connect_in (NapkinCanvas   *self,
            NapkinHistory  *history,
            const char     *from,
            const char     *to,
            guint           port,
            gboolean       *replaced,
            GError        **error)
{
  NapkinDiagram *d = napkin_history_get_diagram (history);
  int t = napkin_diagram_find_node (d, to);
  gboolean was_free = t >= 0 && napkin_diagram_wire_for_port (d, t, port) < 0;
  gboolean ok;

  if (replaced != NULL)
    *replaced = t >= 0 && !was_free;
  napkin_history_begin_group (history, _("Connect"));
  ok = napkin_edit_connect (history, from, to, port, error);
  if (ok)
    adapt_target (self, history, to, was_free);
  napkin_history_end_group (history);
  return ok;
}

/* Tries the wire on a copy: NULL when it fits, else why not (the core's words). */
static char *
trial_connect (NapkinCanvas *self,
               const char   *from,
               const char   *to,
               guint         port)
{
  g_autoptr(NapkinDiagram) copy = napkin_diagram_copy (self->diagram);
  g_autoptr(NapkinHistory) history = napkin_history_new (copy);
  g_autoptr(GPtrArray) problems = NULL;
  g_autoptr(GError) error = NULL;
  int t = napkin_diagram_find_node (copy, to);

  if (!connect_in (self, history, from, to, port, NULL, &error))
    return g_strdup (error->message);
  if (napkin_diagram_topo_order (copy) == NULL)
    return g_strdup (_("this wire would make a cycle"));
  problems = napkin_diagram_check (copy);
  if (count_node_problems (problems, t) > count_node_problems (self->problems, t))
    for (guint i = 0; i < problems->len; i++)
      {
        const NapkinProblem *p = g_ptr_array_index (problems, i);

        if (p->kind == NAPKIN_ITEM_NODE && (int) p->index == t)
          return g_strdup (p->message);
      }
  return NULL;
}

gboolean
napkin_canvas_connect (NapkinCanvas  *self,
                       const char    *from,
                       const char    *to,
                       guint          port,
                       GError       **error)
{
  g_autofree char *problem = NULL;
  g_autofree char *from_id = g_strdup (from);
  g_autofree char *to_id = g_strdup (to);

  g_return_val_if_fail (NAPKIN_IS_CANVAS (self), FALSE);
  g_return_val_if_fail (self->history != NULL, FALSE);

  problem = trial_connect (self, from_id, to_id, port);
  if (problem != NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, _("Not connected: %s"), problem);
      return FALSE;
    }
  return connect_in (self, self->history, from_id, to_id, port, NULL, error);
}

/* The wire a connect drag would make if released at (x, y): from → to.port. */
static gboolean
connect_target (NapkinCanvas *self,
                double        x,
                double        y,
                const char  **from,
                const char  **to,
                guint        *port,
                int          *node,
                int          *node_port)
{
  NapkinHit hit = napkin_render_hit (self->diagram, x, y, 6 / self->zoom);

  if (self->connect_port < 0 && hit.kind == NAPKIN_HIT_INPUT_PORT)
    {
      *from = self->connect_node;
      *to = napkin_diagram_node (self->diagram, hit.index)->id;
      *port = hit.port;
    }
  else if (self->connect_port >= 0 && (hit.kind == NAPKIN_HIT_OUTPUT_PORT || hit.kind == NAPKIN_HIT_NODE))
    {
      *from = napkin_diagram_node (self->diagram, hit.index)->id;
      *to = self->connect_node;
      *port = self->connect_port;
    }
  else if (self->connect_port < 0 && hit.kind == NAPKIN_HIT_NODE)
    {
      /* Dropped on a glyph: its first free input. */
      const NapkinNode *n = napkin_diagram_node (self->diagram, hit.index);
      guint n_in = napkin_op_n_inputs (n);
      guint p = 0;

      if (n_in == 0)
        return FALSE;
      while (p + 1 < n_in && napkin_diagram_input_source (self->diagram, hit.index, p) >= 0)
        p++;
      *from = self->connect_node;
      *to = n->id;
      *port = p;
    }
  else
    return FALSE;

  *node = hit.index;
  *node_port = (int) *port;
  return g_strcmp0 (*from, *to) != 0;
}

static void
update_connect_feedback (NapkinCanvas *self)
{
  const char *from, *to;
  guint port;
  int node, node_port;

  if (!connect_target (self, self->cur_x, self->cur_y, &from, &to, &port, &node, &node_port))
    {
      self->feedback_node = -1;
      g_clear_pointer (&self->feedback_problem, g_free);
      return;
    }
  if (node == self->feedback_node && node_port == self->feedback_port)
    return;
  self->feedback_node = node;
  self->feedback_port = node_port;
  g_free (self->feedback_problem);
  self->feedback_problem = trial_connect (self, from, to, port);
}

const char *
_napkin_canvas_get_connect_problem (NapkinCanvas *self)
{
  return self->feedback_problem;
}

/* ---------------------------------------------------------------- drag */

static void
begin_move (NapkinCanvas *self)
{
  g_array_set_size (self->moved, 0);
  for (guint n = 0; n < napkin_diagram_n_nodes (self->diagram); n++)
    {
      const NapkinNode *node = napkin_diagram_node (self->diagram, n);
      gboolean in_region = FALSE;

      if (gpus_selected (self))
        in_region = napkin_region_has_node (napkin_diagram_get_gpus (self->diagram)->region, node->id);
      else if (self->selected_region != NULL)
        {
          int r = napkin_diagram_find_region (self->diagram, self->selected_region);

          in_region = r >= 0 && napkin_region_has_node (napkin_diagram_region (self->diagram, r), node->id);
        }
      if (in_region || g_hash_table_contains (self->selected, node->id))
        {
          MovedNode m = { g_strdup (node->id), node->x, node->y };

          g_array_append_val (self->moved, m);
        }
    }
  self->mode = MODE_MOVE;
}

void
_napkin_canvas_drag_begin (NapkinCanvas    *self,
                           double           x,
                           double           y,
                           GdkModifierType  state)
{
  gboolean extend = (state & (GDK_SHIFT_MASK | GDK_CONTROL_MASK)) != 0;
  NapkinHit hit;

  if (self->pending_wire && self->diagram != NULL)
    {
      double dx, dy;

      /* the second click of a click-click wire: it ends where a release would */
      self->pending_wire = FALSE;
      widget_to_doc (self, x, y, &dx, &dy);
      self->mode = MODE_CONNECT;
      self->dragged = TRUE;
      _napkin_canvas_drag_end (self, (dx - self->start_x) * self->zoom, (dy - self->start_y) * self->zoom);
      self->mode = MODE_NONE;
      return;
    }
  self->mode = MODE_NONE;
  self->dragged = FALSE;
  if (self->diagram == NULL)
    return;

  gtk_widget_grab_focus (GTK_WIDGET (self));
  widget_to_doc (self, x, y, &self->start_x, &self->start_y);
  self->cur_x = self->start_x;
  self->cur_y = self->start_y;
  hit = self->region_tool ? (NapkinHit) { NAPKIN_HIT_NONE, -1, 0 }
                          : napkin_render_hit (self->diagram, self->start_x, self->start_y, 3 / self->zoom);

  switch (hit.kind)
    {
    case NAPKIN_HIT_OUTPUT_PORT:
    case NAPKIN_HIT_INPUT_PORT:
      g_free (self->connect_node);
      self->connect_node = g_strdup (napkin_diagram_node (self->diagram, hit.index)->id);
      self->connect_port = hit.kind == NAPKIN_HIT_OUTPUT_PORT ? -1 : (int) hit.port;
      self->feedback_node = -1;
      g_clear_pointer (&self->feedback_problem, g_free);
      self->mode = MODE_CONNECT;
      break;

    case NAPKIN_HIT_NODE:
      {
        const char *id = napkin_diagram_node (self->diagram, hit.index)->id;

        if (extend && g_hash_table_contains (self->selected, id))
          {
            g_hash_table_remove (self->selected, id);
            emit_selection_changed (self);
            break;
          }
        if (!g_hash_table_contains (self->selected, id))
          napkin_canvas_select_node (self, id, extend);
        begin_move (self);
        break;
      }

    case NAPKIN_HIT_REGION_HANDLE:
    case NAPKIN_HIT_REGION:
      {
        const char *name = napkin_diagram_region (self->diagram, hit.index)->name;

        napkin_canvas_select_region (self, name);
        g_free (self->resize_region);
        self->resize_region = g_strdup (name);
        napkin_render_region_rect (self->diagram, hit.index, &self->resize_rect);
        if (hit.kind == NAPKIN_HIT_REGION_HANDLE)
          self->mode = MODE_RESIZE;
        else
          begin_move (self);
        break;
      }

    case NAPKIN_HIT_GPUS_HANDLE:
    case NAPKIN_HIT_GPUS:
      {
        const char *name = napkin_diagram_get_gpus (self->diagram)->region->name;

        napkin_canvas_select_region (self, name);
        g_free (self->resize_region);
        self->resize_region = g_strdup (name);
        napkin_render_gpus_rect (self->diagram, &self->resize_rect);
        if (hit.kind == NAPKIN_HIT_GPUS_HANDLE)
          self->mode = MODE_RESIZE;
        else
          begin_move (self);
        break;
      }

    case NAPKIN_HIT_WIRE:
      select_wire (self, hit.index);
      break;

    case NAPKIN_HIT_NONE:
    default:
      if (!extend)
        napkin_canvas_clear_selection (self);
      self->mode = MODE_RUBBER;
      break;
    }

  if (self->mode == MODE_MOVE)
    napkin_history_begin_group (self->history, _("Move"));
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
_napkin_canvas_drag_update (NapkinCanvas *self,
                            double        dx,
                            double        dy)
{
  if (self->mode == MODE_NONE || self->diagram == NULL)
    return;

  if (fabs (dx) + fabs (dy) > 2)
    self->dragged = TRUE;
  self->cur_x = self->start_x + dx / self->zoom;
  self->cur_y = self->start_y + dy / self->zoom;

  switch (self->mode)
    {
    case MODE_MOVE:
      for (guint i = 0; i < self->moved->len; i++)
        {
          const MovedNode *m = &g_array_index (self->moved, MovedNode, i);

          napkin_edit_move_node (self->history, m->id, round (m->x + dx / self->zoom),
                                 round (m->y + dy / self->zoom), NULL);
        }
      /* A region with its own rectangle (resized by hand) moves with its operations. */
      if (gpus_selected (self) && napkin_diagram_get_gpus (self->diagram)->region->has_rect)
        {
          NapkinRect moved = self->resize_rect;

          moved.x = round (self->resize_rect.x + dx / self->zoom);
          moved.y = round (self->resize_rect.y + dy / self->zoom);
          set_gpus_rect (self, &moved, NULL);
        }
      else if (self->selected_region != NULL)
        {
          int r = napkin_diagram_find_region (self->diagram, self->selected_region);

          if (r >= 0 && napkin_diagram_region (self->diagram, r)->has_rect)
            napkin_edit_set_region_rect (self->history, self->selected_region,
                                         round (self->resize_rect.x + dx / self->zoom),
                                         round (self->resize_rect.y + dy / self->zoom),
                                         self->resize_rect.width, self->resize_rect.height, NULL);
        }
      break;
    case MODE_CONNECT:
      update_connect_feedback (self);
      break;
    case MODE_PAN:
      self->origin_x = self->pan_origin_x - dx / self->zoom;
      self->origin_y = self->pan_origin_y - dy / self->zoom;
      break;
    case MODE_RUBBER:
    case MODE_RESIZE:
    case MODE_NONE:
    default:
      break;
    }
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
finish_rubber_band (NapkinCanvas *self)
{
  double x0 = MIN (self->start_x, self->cur_x), x1 = MAX (self->start_x, self->cur_x);
  double y0 = MIN (self->start_y, self->cur_y), y1 = MAX (self->start_y, self->cur_y);
  g_autoptr(GPtrArray) ids = g_ptr_array_new ();

  for (guint n = 0; n < napkin_diagram_n_nodes (self->diagram); n++)
    {
      NapkinRect r;

      napkin_render_node_rect (self->diagram, n, &r);
      if (r.x >= x0 && r.x + r.width <= x1 && r.y >= y0 && r.y + r.height <= y1)
        g_ptr_array_add (ids, napkin_diagram_node (self->diagram, n)->id);
    }

  if (self->region_tool)
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *name = NULL;

      g_ptr_array_add (ids, NULL);
      name = add_region_for (self, self->region_level, (const char *const *) ids->pdata, &error);
      if (name == NULL)
        emit_message (self, error->message);
      return;
    }

  for (guint i = 0; i < ids->len; i++)
    g_hash_table_add (self->selected, g_strdup (g_ptr_array_index (ids, i)));
  emit_selection_changed (self);
}

void
_napkin_canvas_drag_end (NapkinCanvas *self,
                         double        dx,
                         double        dy)
{
  DragMode mode = self->mode;

  if (mode == MODE_NONE || self->diagram == NULL)
    return;
  _napkin_canvas_drag_update (self, dx, dy);
  self->mode = MODE_NONE;

  switch (mode)
    {
    case MODE_MOVE:
      napkin_history_end_group (self->history);
      g_array_set_size (self->moved, 0);
      break;

    case MODE_CONNECT:
      {
        const char *from, *to;
        guint port;
        int node, node_port;
        g_autoptr(GError) error = NULL;
        g_autofree char *from_id = NULL, *to_id = NULL;

        if (connect_target (self, self->cur_x, self->cur_y, &from, &to, &port, &node, &node_port))
          {
            gboolean replaced = FALSE;

            from_id = g_strdup (from);
            to_id = g_strdup (to);
            update_connect_feedback (self);
            if (self->feedback_problem != NULL)
              {
                /* what the canvas showed red is refused: no wire, none replaced */
                g_autofree char *message = g_strdup_printf (_("Not connected: %s"), self->feedback_problem);

                emit_message (self, message);
              }
            else if (!connect_in (self, self->history, from_id, to_id, port, &replaced, &error))
              emit_message (self, error->message);
            else if (replaced)
              {
                g_autofree char *message = g_strdup_printf (_("The wire from “%s” replaced the one into “%s”"),
                                                            from_id, to_id);

                emit_message (self, message);
              }
          }
        else if (!self->dragged)
          {
            /* a click on a port: the wire follows the pointer until a click on
             * another port finishes it (Esc or a click elsewhere cancels it) */
            self->pending_wire = TRUE;
            self->mode = MODE_CONNECT;
            gtk_widget_queue_draw (GTK_WIDGET (self));
            return;
          }
        g_clear_pointer (&self->feedback_problem, g_free);
        self->feedback_node = -1;
        break;
      }

    case MODE_RUBBER:
      if (self->dragged)
        finish_rubber_band (self);
      break;

    case MODE_RESIZE:
      {
        double w = MAX (60, self->resize_rect.width + (self->cur_x - self->start_x));
        double h = MAX (40, self->resize_rect.height + (self->cur_y - self->start_y));
        g_autoptr(GError) error = NULL;

        if (self->dragged && is_gpus_name (self, self->resize_region))
          {
            NapkinRect resized = { self->resize_rect.x, self->resize_rect.y, round (w), round (h) };

            if (!set_gpus_rect (self, &resized, &error))
              emit_message (self, error->message);
          }
        else if (self->dragged
                 && !napkin_edit_set_region_rect (self->history, self->resize_region, self->resize_rect.x,
                                                  self->resize_rect.y, round (w), round (h), &error))
          emit_message (self, error->message);
        break;
      }

    case MODE_PAN:
    case MODE_NONE:
    default:
      break;
    }
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
drag_begin_cb (NapkinCanvas   *self,
               double          x,
               double          y,
               GtkGestureDrag *drag)
{
  GdkModifierType state = gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (drag));

  _napkin_canvas_drag_begin (self, x, y, state);
  if (self->mode == MODE_NONE)
    gtk_gesture_set_state (GTK_GESTURE (drag), GTK_EVENT_SEQUENCE_DENIED);
  else
    gtk_gesture_set_state (GTK_GESTURE (drag), GTK_EVENT_SEQUENCE_CLAIMED);
}

static void
drag_update_cb (NapkinCanvas   *self,
                double          dx,
                double          dy,
                GtkGestureDrag *drag)
{
  _napkin_canvas_drag_update (self, dx, dy);
}

static void
drag_end_cb (NapkinCanvas   *self,
             double          dx,
             double          dy,
             GtkGestureDrag *drag)
{
  _napkin_canvas_drag_end (self, dx, dy);
}

static void
pan_begin_cb (NapkinCanvas   *self,
              double          x,
              double          y,
              GtkGestureDrag *drag)
{
  self->pending_wire = FALSE;
  self->mode = MODE_PAN;
  self->pan_origin_x = self->origin_x;
  self->pan_origin_y = self->origin_y;
  self->start_x = self->cur_x = 0;
  self->start_y = self->cur_y = 0;
  gtk_widget_set_cursor_from_name (GTK_WIDGET (self), "grabbing");
}

static void
pan_update_cb (NapkinCanvas   *self,
               double          dx,
               double          dy,
               GtkGestureDrag *drag)
{
  if (self->mode != MODE_PAN)
    return;
  self->origin_x = self->pan_origin_x - dx / self->zoom;
  self->origin_y = self->pan_origin_y - dy / self->zoom;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
pan_end_cb (NapkinCanvas   *self,
            double          dx,
            double          dy,
            GtkGestureDrag *drag)
{
  pan_update_cb (self, dx, dy, drag);
  self->mode = MODE_NONE;
  napkin_canvas_set_region_tool (self, self->region_tool, self->region_level);
}

static gboolean
scroll_cb (NapkinCanvas             *self,
           double                    dx,
           double                    dy,
           GtkEventControllerScroll *scroll)
{
  GdkModifierType state = gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (scroll));

  if (state & GDK_CONTROL_MASK)
    {
      double px = gtk_widget_get_width (GTK_WIDGET (self)) / 2.0;
      double py = gtk_widget_get_height (GTK_WIDGET (self)) / 2.0;

      /* Zoom around the pointer. */
      if (self->pointer_inside)
        {
          px = self->pointer_x;
          py = self->pointer_y;
        }
      zoom_around (self, self->zoom * pow (1.1, -dy), px, py);
      return TRUE;
    }

  self->origin_x += dx * 30 / self->zoom;
  self->origin_y += dy * 30 / self->zoom;
  if (state & GDK_SHIFT_MASK)
    {
      self->origin_x += dy * 30 / self->zoom;
      self->origin_y -= dy * 30 / self->zoom;
    }
  gtk_widget_queue_draw (GTK_WIDGET (self));
  return TRUE;
}

static void
zoom_begin_cb (NapkinCanvas     *self,
               GdkEventSequence *sequence,
               GtkGestureZoom   *gesture)
{
  self->zoom_start = self->zoom;
}

static void
zoom_scale_changed_cb (NapkinCanvas   *self,
                       double          scale,
                       GtkGestureZoom *gesture)
{
  double cx, cy;

  if (!gtk_gesture_get_bounding_box_center (GTK_GESTURE (gesture), &cx, &cy))
    {
      cx = gtk_widget_get_width (GTK_WIDGET (self)) / 2.0;
      cy = gtk_widget_get_height (GTK_WIDGET (self)) / 2.0;
    }
  zoom_around (self, self->zoom_start * scale, cx, cy);
}

gboolean
_napkin_canvas_drop_string (NapkinCanvas *self,
                            const char   *payload,
                            double        x,
                            double        y)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *id = NULL;
  NapkinOpKind kind;
  double dx, dy;

  if (self->history == NULL || payload == NULL || !g_str_has_prefix (payload, NAPKIN_CANVAS_PALETTE_PREFIX)
      || !napkin_op_kind_from_string (payload + strlen (NAPKIN_CANVAS_PALETTE_PREFIX), &kind))
    return FALSE;
  widget_to_doc (self, x, y, &dx, &dy);
  id = napkin_canvas_add_node (self, kind, dx - 20, dy - 20, &error);
  if (id == NULL)
    {
      emit_message (self, error->message);
      return FALSE;
    }
  return TRUE;
}

static gboolean
drop_cb (NapkinCanvas  *self,
         const GValue  *value,
         double         x,
         double         y,
         GtkDropTarget *target)
{
  return G_VALUE_HOLDS_STRING (value) && _napkin_canvas_drop_string (self, g_value_get_string (value), x, y);
}

static void
motion_cb (NapkinCanvas             *self,
           double                    x,
           double                    y,
           GtkEventControllerMotion *motion)
{
  self->pointer_x = x;
  self->pointer_y = y;
  self->pointer_inside = TRUE;
  if (self->pending_wire && self->diagram != NULL)
    {
      widget_to_doc (self, x, y, &self->cur_x, &self->cur_y);
      update_connect_feedback (self);
      gtk_widget_queue_draw (GTK_WIDGET (self));
    }
}

static void
leave_cb (NapkinCanvas             *self,
          GtkEventControllerMotion *motion)
{
  self->pointer_inside = FALSE;
}

static gboolean
key_pressed_cb (NapkinCanvas          *self,
                guint                  keyval,
                guint                  keycode,
                GdkModifierType        state,
                GtkEventControllerKey *key)
{
  double step = 60 / self->zoom;
  double mx = 0, my = 0;

  /* Arrows move the selected operations (Shift: finely), else pan. */
  switch (keyval)
    {
    case GDK_KEY_Left: mx = -1; break;
    case GDK_KEY_Right: mx = 1; break;
    case GDK_KEY_Up: my = -1; break;
    case GDK_KEY_Down: my = 1; break;
    default: break;
    }
  if ((mx != 0 || my != 0) && self->history != NULL && g_hash_table_size (self->selected) > 0)
    {
      g_auto(GStrv) ids = napkin_canvas_dup_selected_nodes (self);
      double d = (state & GDK_SHIFT_MASK) ? 1 : 10;

      napkin_history_begin_group (self->history, _("Move"));
      for (guint i = 0; ids[i]; i++)
        {
          const NapkinNode *node = napkin_diagram_node (self->diagram, napkin_diagram_find_node (self->diagram, ids[i]));

          napkin_edit_move_node (self->history, ids[i], node->x + mx * d, node->y + my * d, NULL);
        }
      napkin_history_end_group (self->history);
      return TRUE;
    }

  if (keyval == GDK_KEY_Menu || (keyval == GDK_KEY_F10 && (state & GDK_SHIFT_MASK)))
    return menu_key (self);

  switch (keyval)
    {
    case GDK_KEY_Escape:
      if (self->pending_wire)
        {
          self->pending_wire = FALSE;
          self->mode = MODE_NONE;
          g_clear_pointer (&self->feedback_problem, g_free);
          self->feedback_node = -1;
          gtk_widget_queue_draw (GTK_WIDGET (self));
        }
      else if (self->region_tool)
        napkin_canvas_set_region_tool (self, FALSE, self->region_level);
      else
        napkin_canvas_clear_selection (self);
      return TRUE;
    case GDK_KEY_Left:
      self->origin_x -= step;
      break;
    case GDK_KEY_Right:
      self->origin_x += step;
      break;
    case GDK_KEY_Up:
      self->origin_y -= step;
      break;
    case GDK_KEY_Down:
      self->origin_y += step;
      break;
    default:
      return FALSE;
    }
  gtk_widget_queue_draw (GTK_WIDGET (self));
  return TRUE;
}

gboolean
_napkin_canvas_key_pressed (NapkinCanvas    *self,
                            guint            keyval,
                            GdkModifierType  state)
{
  return key_pressed_cb (self, keyval, 0, state, NULL);
}

static gboolean
query_tooltip_cb (NapkinCanvas *self,
                  int           x,
                  int           y,
                  gboolean      keyboard,
                  GtkTooltip   *tooltip)
{
  double dx, dy;
  NapkinHit hit;
  NapkinItemKind kind;
  g_autoptr(GString) text = NULL;

  if (self->diagram == NULL || keyboard)
    return FALSE;
  widget_to_doc (self, x, y, &dx, &dy);
  hit = napkin_render_hit (self->diagram, dx, dy, 3 / self->zoom);
  switch (hit.kind)
    {
    case NAPKIN_HIT_NODE:
    case NAPKIN_HIT_INPUT_PORT:
    case NAPKIN_HIT_OUTPUT_PORT:
      kind = NAPKIN_ITEM_NODE;
      break;
    case NAPKIN_HIT_WIRE:
      kind = NAPKIN_ITEM_WIRE;
      break;
    case NAPKIN_HIT_REGION:
    case NAPKIN_HIT_REGION_HANDLE:
      kind = NAPKIN_ITEM_REGION;
      break;
    case NAPKIN_HIT_NONE:
    default:
      return FALSE;
    }

  text = g_string_new (NULL);
  if (kind == NAPKIN_ITEM_NODE)
    {
      const NapkinTensorType *type = napkin_diagram_node_type (self->diagram, hit.index);
      const NapkinNode *node = napkin_diagram_node (self->diagram, hit.index);

      g_string_append_printf (text, "%s (%s)", node->id, napkin_op_kind_to_string (node->kind));
      if (type != NULL && type->valid)
        {
          g_autofree char *s = napkin_diagram_type_to_string (self->diagram, type);

          g_string_append_printf (text, " → %s", s);
        }
    }
  for (guint i = 0; self->problems && i < self->problems->len; i++)
    {
      const NapkinProblem *p = g_ptr_array_index (self->problems, i);

      if (p->kind == kind && (int) p->index == hit.index)
        g_string_append_printf (text, "%s%s", text->len ? "\n" : "", p->message);
    }
  /* and the model's (an infeasible region on this architecture) */
  for (guint i = 0; self->analysis_problems && i < self->analysis_problems->len; i++)
    {
      const NapkinProblem *p = g_ptr_array_index (self->analysis_problems, i);

      if (p->kind == kind && (int) p->index == hit.index)
        g_string_append_printf (text, "%s%s", text->len ? "\n" : "", p->message);
    }
  if (text->len == 0)
    return FALSE;
  gtk_tooltip_set_text (tooltip, text->str);
  return TRUE;
}

/* ---------------------------------------------------------------- context menu */

static void
menu_add_kinds (GMenu *menu)
{
  static const struct { const char *kind; const char *label; } kinds[] = {
    { "input", N_("_Input") }, { "output", N_("_Output") }, { "contract", N_("_Contraction") },
    { "map", N_("_Map") }, { "reduce", N_("_Reduce") }, { "softmax", N_("_Softmax") },
    { "normalize", N_("_Normalize") }, { "rearrange", N_("R_earrange") },
  };

  for (guint i = 0; i < G_N_ELEMENTS (kinds); i++)
    {
      g_autoptr(GMenuItem) item = g_menu_item_new (_(kinds[i].label), NULL);

      g_menu_item_set_action_and_target (item, "canvas.add-here", "s", kinds[i].kind);
      g_menu_append_item (menu, item);
    }
}

static void
menu_add_wraps (GMenu *menu)
{
  GMenu *wraps = g_menu_new ();

  g_menu_append (wraps, _("Wrap in _Shared-Memory Region"), "canvas.wrap::smem");
  g_menu_append (wraps, _("Wrap in Re_gister Region"), "canvas.wrap::registers");
  g_menu_append (wraps, _("Wrap in _L2 Region"), "canvas.wrap::l2");
  g_menu_append (wraps, _("Split Across _GPUs"), "canvas.wrap::gpus");
  g_menu_append_section (menu, NULL, G_MENU_MODEL (wraps));
  g_object_unref (wraps);
}

/* What a right click at (x, y) offers, for what is there (selected first, as file
 * managers do): operations, a wire, a region or the paper. */
GMenuModel *
_napkin_canvas_context_menu (NapkinCanvas *self,
                             double        x,
                             double        y)
{
  GMenu *menu = g_menu_new ();
  NapkinHit hit;

  if (self->diagram == NULL)
    return G_MENU_MODEL (menu);
  widget_to_doc (self, x, y, &self->menu_x, &self->menu_y);
  hit = napkin_render_hit (self->diagram, self->menu_x, self->menu_y, 3 / self->zoom);
  switch (hit.kind)
    {
    case NAPKIN_HIT_NODE:
    case NAPKIN_HIT_INPUT_PORT:
    case NAPKIN_HIT_OUTPUT_PORT:
      {
        const char *id = napkin_diagram_node (self->diagram, hit.index)->id;
        GMenu *edit = g_menu_new ();

        if (!g_hash_table_contains (self->selected, id))
          napkin_canvas_select_node (self, id, FALSE);
        menu_add_wraps (menu);
        g_menu_append (edit, _("Cu_t"), "edit.cut");
        g_menu_append (edit, _("_Copy"), "edit.copy");
        g_menu_append (edit, _("_Delete"), "canvas.delete");
        g_menu_append_section (menu, NULL, G_MENU_MODEL (edit));
        g_object_unref (edit);
        break;
      }
    case NAPKIN_HIT_WIRE:
      select_wire (self, hit.index);
      g_menu_append (menu, _("_Delete Wire"), "canvas.delete");
      break;
    case NAPKIN_HIT_REGION:
    case NAPKIN_HIT_REGION_HANDLE:
      napkin_canvas_select_region (self, napkin_diagram_region (self->diagram, hit.index)->name);
      g_menu_append (menu, _("Suggest _Tiles…"), "win.suggest-tiles");
      g_menu_append (menu, _("_Delete Region"), "canvas.delete");
      break;
    case NAPKIN_HIT_GPUS:
    case NAPKIN_HIT_GPUS_HANDLE:
      napkin_canvas_select_region (self, napkin_diagram_get_gpus (self->diagram)->region->name);
      g_menu_append (menu, _("_Delete Region"), "canvas.delete");
      break;
    case NAPKIN_HIT_NONE:
    default:
      {
        GMenu *add = g_menu_new ();
        GMenu *view = g_menu_new ();

        menu_add_kinds (add);
        g_menu_append_submenu (menu, _("_Add Operation Here"), G_MENU_MODEL (add));
        g_menu_append (view, _("_Paste"), "edit.paste");
        g_menu_append (view, _("Select _All"), "edit.select-all");
        g_menu_append (view, _("_Zoom to Fit"), "view.zoom-fit");
        g_menu_append_section (menu, NULL, G_MENU_MODEL (view));
        g_object_unref (add);
        g_object_unref (view);
        break;
      }
    }
  return G_MENU_MODEL (menu);
}

static void
popup_context_menu (NapkinCanvas *self,
                    double        x,
                    double        y)
{
  g_autoptr(GMenuModel) model = _napkin_canvas_context_menu (self, x, y);

  if (self->context_menu == NULL)
    {
      self->context_menu = gtk_popover_menu_new_from_model (NULL);
      gtk_widget_set_parent (self->context_menu, GTK_WIDGET (self));
      gtk_popover_set_has_arrow (GTK_POPOVER (self->context_menu), FALSE);
      gtk_widget_set_halign (self->context_menu, GTK_ALIGN_START);
    }
  gtk_popover_menu_set_menu_model (GTK_POPOVER_MENU (self->context_menu), model);
  gtk_popover_set_pointing_to (GTK_POPOVER (self->context_menu), &(GdkRectangle) { (int) x, (int) y, 1, 1 });
  gtk_popover_popup (GTK_POPOVER (self->context_menu));
}

GtkWidget *
_napkin_canvas_get_context_menu (NapkinCanvas *self)
{
  return self->context_menu;
}

static void
secondary_pressed_cb (NapkinCanvas    *self,
                      int              n_press,
                      double           x,
                      double           y,
                      GtkGestureClick *click)
{
  gtk_widget_grab_focus (GTK_WIDGET (self));
  popup_context_menu (self, x, y);
  gtk_gesture_set_state (GTK_GESTURE (click), GTK_EVENT_SEQUENCE_CLAIMED);
}

/* Shift+F10 and the Menu key: the menu of the selection, or of the pointer's place. */
static gboolean
menu_key (NapkinCanvas *self)
{
  g_auto(GStrv) ids = napkin_canvas_dup_selected_nodes (self);
  double x = gtk_widget_get_width (GTK_WIDGET (self)) / 2.0, y = gtk_widget_get_height (GTK_WIDGET (self)) / 2.0;

  if (self->diagram == NULL)
    return FALSE;
  if (ids[0] != NULL)
    {
      NapkinRect r;

      napkin_render_node_rect (self->diagram, napkin_diagram_find_node (self->diagram, ids[0]), &r);
      _napkin_canvas_doc_to_widget (self, r.x + r.width / 2, r.y + r.height / 2, &x, &y);
    }
  else if (self->pointer_inside)
    {
      x = self->pointer_x;
      y = self->pointer_y;
    }
  popup_context_menu (self, x, y);
  return TRUE;
}

static void
canvas_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  NapkinCanvas *self = NAPKIN_CANVAS (widget);
  g_autoptr(GError) error = NULL;

  if (self->history == NULL)
    return;
  if (g_str_equal (action_name, "canvas.delete"))
    {
      if (!napkin_canvas_delete_selection (self, &error))
        emit_message (self, error->message);
    }
  else if (g_str_equal (action_name, "canvas.wrap"))
    {
      NapkinLevel level = NAPKIN_LEVEL_SMEM;
      g_autofree char *name = NULL;

      if (g_str_equal (g_variant_get_string (parameter, NULL), "gpus"))
        name = napkin_canvas_add_gpus_region (self, &error);
      else
        {
          napkin_level_from_string (g_variant_get_string (parameter, NULL), &level);
          name = napkin_canvas_add_region (self, level, &error);
        }
      if (name == NULL)
        emit_message (self, error->message);
    }
  else if (g_str_equal (action_name, "canvas.add-here"))
    {
      NapkinOpKind kind;
      g_autofree char *id = NULL;

      if (!napkin_op_kind_from_string (g_variant_get_string (parameter, NULL), &kind))
        return;
      id = napkin_canvas_add_node (self, kind, round (self->menu_x), round (self->menu_y), &error);
      if (id == NULL)
        emit_message (self, error->message);
    }
}

/* ---------------------------------------------------------------- drawing */

/* Everything the picture depends on besides the diagram's contents (its
 * generation): the view, the widget's size and scale, the selection, the problems. */
static GBytes *
picture_key (NapkinCanvas              *self,
             const NapkinRenderOptions *options,
             int                        width,
             int                        height,
             int                        scale)
{
  GByteArray *key = g_byte_array_new ();
  guint64 generation = napkin_diagram_get_generation (self->diagram);
  double view[3] = { self->zoom, self->origin_x, self->origin_y };
  int ints[7] = { width, height, scale, options->selected_region, options->selected_wire, options->dark,
                  options->selected_gpus };

  g_byte_array_append (key, (const guint8 *) &generation, sizeof generation);
  g_byte_array_append (key, (const guint8 *) view, sizeof view);
  g_byte_array_append (key, (const guint8 *) ints, sizeof ints);
  g_byte_array_append (key, (const guint8 *) options->selected_nodes,
                       options->n_selected_nodes * sizeof (gboolean));
  for (guint i = 0; options->problems != NULL && i < options->problems->len; i++)
    {
      const NapkinProblem *problem = g_ptr_array_index (options->problems, i);
      guint item[2] = { problem->kind, problem->index };

      g_byte_array_append (key, (const guint8 *) item, sizeof item);
    }
  return g_byte_array_free_to_bytes (key);
}

/* The diagram drawn by src/render into an image surface of the widget's device
 * pixels, the same drawing the benchmark times, handed to GTK as a texture that
 * takes the pixels. They are not cleared first: the paper covers them. */
static GdkTexture *
draw_picture (NapkinCanvas              *self,
              const NapkinRenderOptions *options,
              int                        width,
              int                        height,
              int                        scale)
{
  NapkinCanvasView view = { self->zoom, self->origin_x, self->origin_y };
  int stride = cairo_format_stride_for_width (CAIRO_FORMAT_ARGB32, width * scale);
  gsize size = (gsize) stride * height * scale;
  guchar *pixels = g_malloc (size);
  cairo_surface_t *surface;
  g_autoptr(GBytes) bytes = NULL;
  cairo_t *cr;

  surface = cairo_image_surface_create_for_data (pixels, CAIRO_FORMAT_ARGB32, width * scale, height * scale, stride);
  cr = cairo_create (surface);
  cairo_scale (cr, scale, scale);   /* not a device scale: text is placed in device pixels */
  napkin_render_draw_view (cr, self->diagram, options, &view, width, height);
  cairo_destroy (cr);
  cairo_surface_finish (surface);
  cairo_surface_destroy (surface);
  bytes = g_bytes_new_take (pixels, size);
  return gdk_memory_texture_new (width * scale, height * scale, GDK_MEMORY_DEFAULT, bytes, stride);
}

static void
napkin_canvas_snapshot (GtkWidget   *widget,
                        GtkSnapshot *snapshot)
{
  NapkinCanvas *self = NAPKIN_CANVAS (widget);
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget);
  int scale = gtk_widget_get_scale_factor (widget);
  g_autofree gboolean *selected = NULL;
  NapkinRenderOptions options = { NULL, 0, -1, -1, NULL };
  g_autoptr(GPtrArray) merged = NULL;
  g_autoptr(GBytes) key = NULL;
  cairo_t *cr;

  if (self->diagram == NULL || width <= 0 || height <= 0)
    {
      cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));
      if (self->dark)
        cairo_set_source_rgb (cr, 0x1e / 255.0, 0x1e / 255.0, 0x1e / 255.0);
      else
        cairo_set_source_rgb (cr, 0.995, 0.993, 0.985);
      cairo_paint (cr);
      cairo_destroy (cr);
      return;
    }

  options.n_selected_nodes = napkin_diagram_n_nodes (self->diagram);
  selected = g_new0 (gboolean, options.n_selected_nodes + 1);
  for (guint n = 0; n < options.n_selected_nodes; n++)
    selected[n] = g_hash_table_contains (self->selected, napkin_diagram_node (self->diagram, n)->id);
  options.selected_nodes = selected;
  options.dark = self->dark;
  options.selected_region = self->selected_region
                            ? napkin_diagram_find_region (self->diagram, self->selected_region) : -1;
  options.selected_gpus = gpus_selected (self);
  if (self->selected_wire_to != NULL)
    {
      int t = napkin_diagram_find_node (self->diagram, self->selected_wire_to);

      options.selected_wire = t >= 0 ? napkin_diagram_wire_for_port (self->diagram, t, self->selected_wire_port) : -1;
    }
  options.problems = self->problems;
  if (self->analysis_problems != NULL && self->analysis_problems->len > 0)
    {
      /* the validator's problems and the model's, marked alike */
      merged = g_ptr_array_new ();
      for (guint i = 0; self->problems && i < self->problems->len; i++)
        g_ptr_array_add (merged, g_ptr_array_index (self->problems, i));
      for (guint i = 0; i < self->analysis_problems->len; i++)
        g_ptr_array_add (merged, g_ptr_array_index (self->analysis_problems, i));
      options.problems = merged;
    }

  /* All of the diagram goes through src/render so that exports match the canvas;
   * it is redrawn only when something it shows changed. */
  key = picture_key (self, &options, width, height, scale);
  if (self->picture == NULL || self->picture_key == NULL || !g_bytes_equal (key, self->picture_key))
    {
      g_clear_object (&self->picture);
      self->picture = draw_picture (self, &options, width, height, scale);
      g_clear_pointer (&self->picture_key, g_bytes_unref);
      self->picture_key = g_steal_pointer (&key);
    }
  gtk_snapshot_append_texture (snapshot, self->picture, &GRAPHENE_RECT_INIT (0, 0, width, height));

  if (!((self->mode == MODE_RUBBER && self->dragged) || self->mode == MODE_CONNECT || self->mode == MODE_RESIZE))
    return;

  /* The drag's overlay, over the picture. */
  cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));
  cairo_save (cr);
  cairo_scale (cr, self->zoom, self->zoom);
  cairo_translate (cr, -self->origin_x, -self->origin_y);

  if (self->mode == MODE_RUBBER && self->dragged)
    {
      cairo_rectangle (cr, MIN (self->start_x, self->cur_x), MIN (self->start_y, self->cur_y),
                       fabs (self->cur_x - self->start_x), fabs (self->cur_y - self->start_y));
      if (self->region_tool)
        {
          double r, g, b;

          napkin_render_level_rgb (self->region_level, &r, &g, &b);
          cairo_set_source_rgba (cr, r, g, b, 0.15);
          cairo_fill_preserve (cr);
          cairo_set_source_rgba (cr, r, g, b, 0.9);
        }
      else
        {
          cairo_set_source_rgba (cr, 0.21, 0.52, 0.89, 0.12);
          cairo_fill_preserve (cr);
          cairo_set_source_rgba (cr, 0.21, 0.52, 0.89, 0.8);
        }
      cairo_set_line_width (cr, 1 / self->zoom);
      cairo_stroke (cr);
    }
  else if (self->mode == MODE_CONNECT)
    {
      int n = napkin_diagram_find_node (self->diagram, self->connect_node);
      double px, py;

      if (n >= 0 && napkin_render_port_point (self->diagram, n, self->connect_port, &px, &py))
        {
          gboolean bad = self->feedback_problem != NULL;

          cairo_move_to (cr, px, py);
          cairo_line_to (cr, self->cur_x, self->cur_y);
          if (bad)
            cairo_set_source_rgb (cr, 0.85, 0.1, 0.1);
          else if (self->feedback_node >= 0)
            cairo_set_source_rgb (cr, 0.15, 0.6, 0.25);
          else
            cairo_set_source_rgb (cr, 0.3, 0.3, 0.3);
          cairo_set_line_width (cr, 2 / self->zoom);
          cairo_stroke (cr);
        }
    }
  else if (self->mode == MODE_RESIZE)
    {
      cairo_rectangle (cr, self->resize_rect.x, self->resize_rect.y,
                       MAX (60, self->resize_rect.width + self->cur_x - self->start_x),
                       MAX (40, self->resize_rect.height + self->cur_y - self->start_y));
      cairo_set_source_rgba (cr, 0.21, 0.52, 0.89, 0.8);
      cairo_set_line_width (cr, 1.5 / self->zoom);
      cairo_stroke (cr);
    }
  cairo_restore (cr);

  /* The connection's problem follows the pointer, in the core's words. */
  if (self->mode == MODE_CONNECT && self->feedback_problem != NULL)
    {
      PangoLayout *layout = pango_cairo_create_layout (cr);
      double wx, wy;
      int tw, th;

      _napkin_canvas_doc_to_widget (self, self->cur_x, self->cur_y, &wx, &wy);
      pango_layout_set_text (layout, self->feedback_problem, -1);
      pango_layout_set_width (layout, 360 * PANGO_SCALE);
      pango_layout_get_pixel_size (layout, &tw, &th);
      cairo_rectangle (cr, wx + 12, wy + 12, tw + 12, th + 8);
      cairo_set_source_rgba (cr, 0.85, 0.1, 0.1, 0.92);
      cairo_fill (cr);
      cairo_move_to (cr, wx + 18, wy + 16);
      cairo_set_source_rgb (cr, 1, 1, 1);
      pango_cairo_show_layout (cr, layout);
      g_object_unref (layout);
    }
  cairo_destroy (cr);
}

/* A document first shown: fitted, but never so small that the strand labels go
 * under 9 px (docs/editor.md, "The first screen"); a diagram too large for that is
 * shown from its top-left corner, where the data flow starts. Ctrl+0 fits it all. */
static void
first_view (NapkinCanvas *self)
{
  double readable = READABLE_LABEL_PX / napkin_render_strand_label_size ();
  NapkinRect bounds;

  napkin_canvas_zoom_to_fit (self);
  if (self->needs_fit || self->zoom >= readable || self->diagram == NULL || self->fit_whole)
    return;
  napkin_render_bounds (self->diagram, &bounds);
  self->zoom = readable;
  self->origin_x = bounds.x - 20 / readable;
  self->origin_y = bounds.y - 20 / readable;
  gtk_widget_queue_draw (GTK_WIDGET (self));
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ZOOM]);
}

static void
napkin_canvas_size_allocate (GtkWidget *widget,
                             int        width,
                             int        height,
                             int        baseline)
{
  NapkinCanvas *self = NAPKIN_CANVAS (widget);

  if (self->needs_fit)
    first_view (self);
  if (self->context_menu != NULL)
    gtk_popover_present (GTK_POPOVER (self->context_menu));
}

static void
napkin_canvas_measure (GtkWidget      *widget,
                       GtkOrientation  orientation,
                       int             for_size,
                       int            *minimum,
                       int            *natural,
                       int            *minimum_baseline,
                       int            *natural_baseline)
{
  *minimum = 200;
  *natural = orientation == GTK_ORIENTATION_HORIZONTAL ? 900 : 600;
}

/* ---------------------------------------------------------------- class */

static void
moved_node_clear (gpointer data)
{
  MovedNode *m = data;

  g_free (m->id);
}

static void
napkin_canvas_dispose (GObject *object)
{
  NapkinCanvas *self = NAPKIN_CANVAS (object);

  napkin_canvas_set_history (self, NULL);
  g_clear_pointer (&self->context_menu, gtk_widget_unparent);
  g_clear_object (&self->picture);
  g_clear_pointer (&self->picture_key, g_bytes_unref);
  G_OBJECT_CLASS (napkin_canvas_parent_class)->dispose (object);
}

static void
napkin_canvas_finalize (GObject *object)
{
  NapkinCanvas *self = NAPKIN_CANVAS (object);

  g_clear_pointer (&self->selected, g_hash_table_unref);
  g_clear_pointer (&self->selected_region, g_free);
  g_clear_pointer (&self->selected_wire_to, g_free);
  g_clear_pointer (&self->moved, g_array_unref);
  g_clear_pointer (&self->connect_node, g_free);
  g_clear_pointer (&self->feedback_problem, g_free);
  g_clear_pointer (&self->resize_region, g_free);
  g_clear_pointer (&self->problems, g_ptr_array_unref);
  g_clear_pointer (&self->analysis_problems, g_ptr_array_unref);
  g_clear_pointer (&self->arch, napkin_arch_unref);
  g_clear_pointer (&self->placeholder_axis, g_free);
  g_clear_pointer (&self->description, g_free);
  G_OBJECT_CLASS (napkin_canvas_parent_class)->finalize (object);
}

static void
napkin_canvas_get_property (GObject    *object,
                            guint       prop_id,
                            GValue     *value,
                            GParamSpec *pspec)
{
  NapkinCanvas *self = NAPKIN_CANVAS (object);

  switch (prop_id)
    {
    case PROP_ZOOM:
      g_value_set_double (value, self->zoom);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
napkin_canvas_set_property (GObject      *object,
                            guint         prop_id,
                            const GValue *value,
                            GParamSpec   *pspec)
{
  NapkinCanvas *self = NAPKIN_CANVAS (object);

  switch (prop_id)
    {
    case PROP_ZOOM:
      napkin_canvas_set_zoom (self, g_value_get_double (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
napkin_canvas_class_init (NapkinCanvasClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = napkin_canvas_dispose;
  object_class->finalize = napkin_canvas_finalize;
  object_class->get_property = napkin_canvas_get_property;
  object_class->set_property = napkin_canvas_set_property;
  widget_class->snapshot = napkin_canvas_snapshot;
  widget_class->size_allocate = napkin_canvas_size_allocate;
  widget_class->measure = napkin_canvas_measure;

  properties[PROP_ZOOM] =
    g_param_spec_double ("zoom", NULL, NULL, MIN_ZOOM, MAX_ZOOM, 1.0,
                         (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));
  g_object_class_install_properties (object_class, N_PROPS, properties);

  signals[SELECTION_CHANGED] =
    g_signal_new ("selection-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[MESSAGE] =
    g_signal_new ("message", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);

  gtk_widget_class_install_action (widget_class, "canvas.delete", NULL, canvas_action);
  gtk_widget_class_install_action (widget_class, "canvas.wrap", "s", canvas_action);
  gtk_widget_class_install_action (widget_class, "canvas.add-here", "s", canvas_action);

  gtk_widget_class_set_css_name (widget_class, "napkin-canvas");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
napkin_canvas_init (NapkinCanvas *self)
{
  GtkGesture *drag, *pan, *zoom;
  GtkEventController *scroll, *key, *motion;
  GtkDropTarget *drop;

  self->zoom = 1.0;
  self->needs_fit = TRUE;
  self->feedback_node = -1;
  self->selected = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  self->moved = g_array_new (FALSE, TRUE, sizeof (MovedNode));
  g_array_set_clear_func (self->moved, moved_node_clear);

  gtk_widget_set_focusable (GTK_WIDGET (self), TRUE);
  gtk_widget_set_hexpand (GTK_WIDGET (self), TRUE);
  gtk_widget_set_vexpand (GTK_WIDGET (self), TRUE);
  gtk_widget_set_overflow (GTK_WIDGET (self), GTK_OVERFLOW_HIDDEN);
  gtk_widget_set_has_tooltip (GTK_WIDGET (self), TRUE);
  g_signal_connect (self, "query-tooltip", G_CALLBACK (query_tooltip_cb), NULL);

  drag = gtk_gesture_drag_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (drag), GDK_BUTTON_PRIMARY);
  g_signal_connect_swapped (drag, "drag-begin", G_CALLBACK (drag_begin_cb), self);
  g_signal_connect_swapped (drag, "drag-update", G_CALLBACK (drag_update_cb), self);
  g_signal_connect_swapped (drag, "drag-end", G_CALLBACK (drag_end_cb), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (drag));

  {
    GtkGesture *secondary = gtk_gesture_click_new ();

    gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (secondary), GDK_BUTTON_SECONDARY);
    g_signal_connect_swapped (secondary, "pressed", G_CALLBACK (secondary_pressed_cb), self);
    gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (secondary));
  }

  pan = gtk_gesture_drag_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (pan), GDK_BUTTON_MIDDLE);
  g_signal_connect_swapped (pan, "drag-begin", G_CALLBACK (pan_begin_cb), self);
  g_signal_connect_swapped (pan, "drag-update", G_CALLBACK (pan_update_cb), self);
  g_signal_connect_swapped (pan, "drag-end", G_CALLBACK (pan_end_cb), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (pan));

  zoom = gtk_gesture_zoom_new ();
  g_signal_connect_swapped (zoom, "begin", G_CALLBACK (zoom_begin_cb), self);
  g_signal_connect_swapped (zoom, "scale-changed", G_CALLBACK (zoom_scale_changed_cb), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (zoom));

  scroll = gtk_event_controller_scroll_new (GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
  g_signal_connect_swapped (scroll, "scroll", G_CALLBACK (scroll_cb), self);
  gtk_widget_add_controller (GTK_WIDGET (self), scroll);

  motion = gtk_event_controller_motion_new ();
  g_signal_connect_swapped (motion, "enter", G_CALLBACK (motion_cb), self);
  g_signal_connect_swapped (motion, "motion", G_CALLBACK (motion_cb), self);
  g_signal_connect_swapped (motion, "leave", G_CALLBACK (leave_cb), self);
  gtk_widget_add_controller (GTK_WIDGET (self), motion);

  key = gtk_event_controller_key_new ();
  g_signal_connect_swapped (key, "key-pressed", G_CALLBACK (key_pressed_cb), self);
  gtk_widget_add_controller (GTK_WIDGET (self), key);

  drop = gtk_drop_target_new (G_TYPE_STRING, GDK_ACTION_COPY);
  g_signal_connect_swapped (drop, "drop", G_CALLBACK (drop_cb), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (drop));

  {
    AdwStyleManager *manager = adw_style_manager_get_default ();

    g_signal_connect_object (manager, "notify::dark", G_CALLBACK (style_changed_cb), self, G_CONNECT_SWAPPED);
    self->dark = adw_style_manager_get_dark (manager);
  }
  update_description (self);
}

GtkWidget *
napkin_canvas_new (void)
{
  return g_object_new (NAPKIN_TYPE_CANVAS, NULL);
}
