/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-inspector"

#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gi18n.h>

#include "napkin-edit.h"
#include "napkin-inspector.h"
#include "napkin-expr.h"
#include "napkin-validate.h"
#include "napkin-tile-default.h"

struct _NapkinInspector
{
  GtkWidget     parent_instance;

  GtkLabel     *heading;
  GtkGrid      *grid;

  NapkinCanvas *canvas;
  gulong        selection_id;
  int           row;
  char         *error;
  guint         rebuild_id;

  /* Rebuilding must not move the user (docs/editor.md, "The inspector"): what the
   * grid shows, its editors, what was typed and not applied (by widget name), the
   * refusals shown, and a field to focus when the grid is next built. */
  char         *shown;
  GPtrArray    *fields;
  GHashTable   *pending;
  GHashTable   *pending_errors;
  char         *focus_request;
  gboolean      rebuilding;
};

G_DEFINE_FINAL_TYPE (NapkinInspector, napkin_inspector, GTK_TYPE_WIDGET)

typedef enum
{
  FIELD_LABEL,
  FIELD_OUT,
  FIELD_AXIS,
  FIELD_FN,
  FIELD_ALPHA,
  FIELD_REDUCE,
  FIELD_NORM,
  FIELD_EPS,
  FIELD_NODE_DTYPE,
  FIELD_TENSOR_AXES,
  FIELD_TENSOR_DTYPE,
  FIELD_AXIS_SIZE,
  FIELD_REGION_LEVEL,
  FIELD_REGION_STAGES,
  FIELD_MARK_KIND,
  FIELD_MARK_TILE,
  FIELD_NEW_AXIS,
  FIELD_TENSOR_NAME,
  FIELD_MASK,
  FIELD_ROWS,
  FIELD_OFFSET,
  FIELD_LEFT,
  FIELD_RIGHT,
  FIELD_EXP_FMA,
  FIELD_GPUS_AXIS,
  FIELD_GPUS_COUNT,
  FIELD_GPUS_PLACEMENT,
  FIELD_GPUS_CHUNKS,
  FIELD_GPUS_CHUNK_AXIS,
} Field;

static NapkinHistory *
history (NapkinInspector *self)
{
  return self->canvas ? napkin_canvas_get_history (self->canvas) : NULL;
}

static NapkinDiagram *
diagram (NapkinInspector *self)
{
  NapkinHistory *h = history (self);

  return h ? napkin_history_get_diagram (h) : NULL;
}

static void
clear_grid (NapkinInspector *self)
{
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
  GtkWidget *focus = root != NULL ? gtk_root_get_focus (root) : NULL;
  GtkWidget *child;

  /* A field with the keyboard focus is let go before it goes: GTK 4.8 kept the window's
   * pointer to a removed focus widget, and the next focus change read the finalized
   * widget (Gtk-CRITICAL gtk_widget_is_ancestor after another document was opened
   * while a field had the focus). The rebuild puts the focus back where it belongs. */
  if (focus != NULL && gtk_widget_is_ancestor (focus, GTK_WIDGET (self->grid)))
    gtk_root_set_focus (root, NULL);
  g_ptr_array_set_size (self->fields, 0);
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->grid))) != NULL)
    gtk_grid_remove (self->grid, child);
  self->row = 0;
}

static void
add_section (NapkinInspector *self,
             const char      *title)
{
  GtkWidget *label = gtk_label_new (title);

  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_widget_add_css_class (label, "heading");
  gtk_widget_set_margin_top (label, self->row > 0 ? 12 : 0);
  gtk_grid_attach (self->grid, label, 0, self->row++, 2, 1);
}

static void
add_text (NapkinInspector *self,
          const char      *text,
          const char      *css_class)
{
  GtkWidget *label = gtk_label_new (text);

  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_label_set_wrap (GTK_LABEL (label), TRUE);
  gtk_label_set_selectable (GTK_LABEL (label), TRUE);
  gtk_label_set_max_width_chars (GTK_LABEL (label), 36);
  if (css_class)
    gtk_widget_add_css_class (label, css_class);
  gtk_grid_attach (self->grid, label, 0, self->row++, 2, 1);
}

/* Row titles are mnemonics; names may hold underscores. */
static char *
escape_mnemonic (const char *text)
{
  g_auto(GStrv) parts = g_strsplit (text, "_", -1);

  return g_strjoinv ("__", parts);
}

/* A row: a title, an editor and, below them, where a refusal is shown. */
static void
add_row (NapkinInspector *self,
         const char      *title,
         GtkWidget       *editor,
         const char      *name)
{
  GtkWidget *label = gtk_label_new_with_mnemonic (title);
  GtkWidget *error = gtk_label_new (NULL);

  gtk_label_set_xalign (GTK_LABEL (label), 1);
  gtk_widget_add_css_class (label, "dim-label");
  gtk_label_set_mnemonic_widget (GTK_LABEL (label), editor);
  gtk_widget_set_hexpand (editor, TRUE);
  gtk_widget_set_name (editor, name);
  if (g_object_get_data (G_OBJECT (editor), "napkin-field") != NULL || GTK_IS_EDITABLE (editor))
    g_ptr_array_add (self->fields, editor);
  gtk_grid_attach (self->grid, label, 0, self->row, 1, 1);
  gtk_grid_attach (self->grid, editor, 1, self->row++, 1, 1);

  gtk_label_set_xalign (GTK_LABEL (error), 0);
  gtk_label_set_wrap (GTK_LABEL (error), TRUE);
  gtk_label_set_max_width_chars (GTK_LABEL (error), 30);
  gtk_widget_add_css_class (error, "error");
  gtk_widget_set_visible (error, FALSE);
  gtk_grid_attach (self->grid, error, 1, self->row++, 1, 1);
  g_object_set_data (G_OBJECT (editor), "napkin-error", error);
}

static void
show_result (NapkinInspector *self,
             GtkWidget       *editor,
             gboolean         ok,
             const GError    *error)
{
  GtkWidget *label = g_object_get_data (G_OBJECT (editor), "napkin-error");

  g_clear_pointer (&self->error, g_free);
  if (!ok && error != NULL)
    self->error = g_strdup (error->message);
  if (label != NULL)
    {
      gtk_label_set_text (GTK_LABEL (label), self->error ? self->error : "");
      gtk_widget_set_visible (label, self->error != NULL);
    }
  if (!ok)
    gtk_widget_add_css_class (editor, "error");
  else
    gtk_widget_remove_css_class (editor, "error");
}

static gboolean
parse_int64 (const char  *text,
             gint64      *out,
             const char  *what,
             GError     **error)
{
  char *end = NULL;
  gint64 v;

  errno = 0;
  v = g_ascii_strtoll (text, &end, 10);
  while (end && g_ascii_isspace (*end))
    end++;
  if (errno == ERANGE && end != text && *end == '\0')
    {
      /* a whole number, too large for any size */
      g_autofree char *max = g_strdup_printf ("%" G_GINT64_FORMAT, NAPKIN_MAX_AXIS_SIZE);

      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, _("%s: %s is too large: sizes go up to %s"), what, text,
                   max);
      return FALSE;
    }
  if (errno != 0 || end == text || *end != '\0')
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, _("%s: “%s” is not a whole number"), what, text);
      return FALSE;
    }
  *out = v;
  return TRUE;
}

static gboolean
parse_double (const char  *text,
              double      *out,
              const char  *what,
              GError     **error)
{
  char *end = NULL;
  double v;

  errno = 0;
  v = g_ascii_strtod (text, &end);
  if (errno != 0 || end == text || *end != '\0')
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, _("%s: “%s” is not a number"), what, text);
      return FALSE;
    }
  *out = v;
  return TRUE;
}

/* A map's factor: a number, or an expression of the axes' sizes ("1/sqrt(d)", "1/√d")
 * that then follows them (docs/editor.md, "Scale factors"). */
static gboolean
parse_factor (NapkinDiagram  *d,
              const char     *text,
              NapkinNode     *node,
              GError        **error)
{
  g_autoptr(GError) local = NULL;
  g_autofree char *trimmed = g_strstrip (g_strdup (text));
  double value;

  g_clear_pointer (&node->alpha_expr, g_free);
  if (napkin_expr_is_number (trimmed, &value))
    {
      node->alpha = value;
      return TRUE;
    }
  if (!napkin_diagram_eval_expr (d, trimmed, &value, &local))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   _("Factor: “%s” is not a number or an expression of axis sizes: %s"), trimmed, local->message);
      return FALSE;
    }
  node->alpha = value;
  node->alpha_expr = g_steal_pointer (&trimmed);
  return TRUE;
}

/* "b, h , q" → { "b", "h", "q" }; "m=4096" stays whole (an axis defined in place). */
static char **
split_axes (const char *text)
{
  g_auto(GStrv) parts = NULL;
  GPtrArray *axes = g_ptr_array_new ();
  g_autofree char *tight = NULL;
  GString *s = g_string_new (NULL);

  /* "m = 4096" is one item */
  for (const char *p = text; *p; p++)
    {
      if (*p == ' ')
        {
          const char *q = p;

          while (*q == ' ')
            q++;
          if (*q == '=' || (s->len > 0 && s->str[s->len - 1] == '='))
            continue;
        }
      g_string_append_c (s, *p);
    }
  tight = g_string_free (s, FALSE);
  parts = g_strsplit_set (tight, ", ", -1);
  for (guint i = 0; parts[i]; i++)
    if (*parts[i])
      g_ptr_array_add (axes, g_strdup (parts[i]));
  g_ptr_array_add (axes, NULL);
  return (char **) g_ptr_array_free (axes, FALSE);
}

/* A new axis size; a region tile it no longer holds is re-cut in the same undo step,
 * and the window says which. */
static gboolean
set_axis_size (NapkinInspector  *self,
               const char       *name,
               gint64            size,
               GError          **error)
{
  g_autofree char *note = NULL;

  if (!napkin_edit_set_axis_size_noting (history (self), name, size, &note, error))
    return FALSE;
  if (note != NULL)
    gtk_widget_activate_action (GTK_WIDGET (self), "win.notify", "s", note);
  return TRUE;
}

/* Items written NAME=SIZE define the axis (or set its size) first; the list then
 * holds the names only. Part of the caller's undo group. */
static gboolean
define_axes (NapkinInspector  *self,
             char            **axes,
             GError          **error)
{
  NapkinHistory *h = history (self);

  for (guint i = 0; axes[i]; i++)
    {
      char *eq = strchr (axes[i], '=');
      gint64 size;

      if (eq == NULL)
        continue;
      *eq = '\0';
      if (!parse_int64 (eq + 1, &size, axes[i], error))
        return FALSE;
      if (napkin_diagram_find_axis (diagram (self), axes[i]) >= 0)
        {
          if (!set_axis_size (self, axes[i], size, error))
            return FALSE;
        }
      else if (!napkin_edit_add_axis (h, axes[i], size, error))
        return FALSE;
    }
  return TRUE;
}

/* The canvas's placeholder axis of an empty diagram's first operation, once the
 * user's own axes have replaced it. */
static void
drop_placeholder (NapkinInspector *self)
{
  const char *axis = self->canvas ? napkin_canvas_get_placeholder_axis (self->canvas) : NULL;
  g_autofree char *name = g_strdup (axis);

  if (name != NULL && napkin_diagram_find_axis (diagram (self), name) >= 0)
    napkin_edit_remove_axis (history (self), name, NULL);
}

static char *
join_axes (char **axes)
{
  return axes ? g_strjoinv (", ", axes) : g_strdup ("");
}

/* ---------------------------------------------------------------- applying */

static gboolean
apply_node_field (NapkinInspector *self,
                  const char      *id,
                  Field            field,
                  const char      *text,
                  guint            choice,
                  GError         **error)
{
  NapkinDiagram *d = diagram (self);
  int index = napkin_diagram_find_node (d, id);
  NapkinNode *node;
  gboolean ok = TRUE;

  if (index < 0)
    return TRUE;

  if (field == FIELD_NODE_DTYPE)
    return napkin_edit_set_node_dtype (history (self), id, choice > 0, choice > 0 ? choice - 1 : 0, error);

  node = napkin_item_copy (NAPKIN_ITEM_NODE, napkin_diagram_node (d, index));
  switch (field)
    {
    case FIELD_LABEL:
      g_free (node->label);
      node->label = *text ? g_strdup (text) : NULL;
      break;
    case FIELD_OUT:
      g_strfreev (node->out);
      node->out = split_axes (text);
      ok = define_axes (self, node->out, error);
      if (node->kind == NAPKIN_OP_MAP && node->out[0] == NULL)
        g_clear_pointer (&node->out, g_strfreev);
      break;
    case FIELD_AXIS:
      g_free (node->axis);
      node->axis = g_strdup (text);
      break;
    case FIELD_FN:
      node->fn = choice;
      break;
    case FIELD_ALPHA:
      ok = parse_factor (d, text, node, error);
      break;
    case FIELD_REDUCE:
      node->reduce = choice;
      break;
    case FIELD_NORM:
      node->norm = choice;
      break;
    case FIELD_EPS:
      ok = parse_double (text, &node->eps, "eps", error);
      break;
    case FIELD_EXP_FMA:
      /* the fraction of exponentials on the FMA units (docs/file-format.md); the edit
       * layer refuses one outside [0, 1] */
      ok = parse_double (text, &node->exp_fma, _("Exponentials on FMA"), error);
      break;
    case FIELD_MASK:
      node->mask = choice;
      break;
    case FIELD_ROWS:
      g_free (node->rows);
      node->rows = g_strdup (text);
      break;
    case FIELD_OFFSET:
      ok = parse_int64 (text, &node->offset, _("Offset"), error);
      break;
    case FIELD_LEFT:
    case FIELD_RIGHT:
      /* empty: unbounded on that side */
      if (*text == '\0')
        *(field == FIELD_LEFT ? &node->left : &node->right) = -1;
      else
        ok = parse_int64 (text, field == FIELD_LEFT ? &node->left : &node->right,
                          field == FIELD_LEFT ? _("Left") : _("Right"), error);
      break;
    case FIELD_NODE_DTYPE:
    case FIELD_TENSOR_AXES:
    case FIELD_TENSOR_DTYPE:
    case FIELD_AXIS_SIZE:
    case FIELD_REGION_LEVEL:
    case FIELD_REGION_STAGES:
    case FIELD_MARK_KIND:
    case FIELD_MARK_TILE:
    case FIELD_NEW_AXIS:
    case FIELD_TENSOR_NAME:
    default:
      g_assert_not_reached ();
    }
  if (ok)
    ok = napkin_edit_update_node (history (self), node, error);
  napkin_item_free (NAPKIN_ITEM_NODE, node);
  return ok;
}

/* ---- the gpus region (docs/multi-gpu.md): each field one napkin_edit_set_gpus ---- */

static gboolean
apply_gpus_field (NapkinInspector *self,
                  Field            field,
                  const char      *axis,
                  const char      *text,
                  guint            choice,
                  GError         **error)
{
  NapkinDiagram *d = diagram (self);
  g_autoptr(NapkinGpusRegion) gpus = NULL;
  const char *label = _("Change GPUs region");
  gint64 v;

  if (napkin_diagram_get_gpus (d) == NULL)
    return TRUE;
  gpus = napkin_gpus_region_copy (napkin_diagram_get_gpus (d), TRUE);
  switch (field)
    {
    case FIELD_GPUS_AXIS:
      /* one parallel axis: the choice, or none (0) */
      for (guint m = 0; m < gpus->region->marks->len; m++)
        {
          NapkinMark *mark = &g_array_index (gpus->region->marks, NapkinMark, m);

          if (mark->kind == NAPKIN_MARK_PARALLEL)
            mark->kind = NAPKIN_MARK_WHOLE;
        }
      if (choice > 0 && choice <= napkin_diagram_n_axes (d))
        napkin_region_set_mark (gpus->region, napkin_diagram_axis (d, choice - 1)->name, NAPKIN_MARK_PARALLEL, 0);
      label = _("Change parallel axis");
      break;
    case FIELD_GPUS_COUNT:
      if (*text == '\0')
        v = 0;
      else if (!parse_int64 (text, &v, _("GPUs"), error))
        return FALSE;
      if (v < 0 || v > 1024)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, _("GPUs: from 1 to 1024 (empty: chosen by the analysis)"));
          return FALSE;
        }
      gpus->gpus = v;
      label = _("Change GPU count");
      break;
    case FIELD_GPUS_PLACEMENT:
      {
        int t = napkin_diagram_find_tensor (d, axis);
        const NapkinTensor *tensor = t >= 0 ? napkin_diagram_tensor (d, t) : NULL;
        const char *split = tensor != NULL && choice > 0 && tensor->axes != NULL
                            && choice <= g_strv_length (tensor->axes) ? tensor->axes[choice - 1] : NULL;
        gboolean found = FALSE;

        for (guint i = 0; i < gpus->placements->len; i++)
          {
            NapkinPlacement *p = &g_array_index (gpus->placements, NapkinPlacement, i);

            if (g_strcmp0 (p->tensor, axis) != 0)
              continue;
            g_free (p->split);
            p->split = g_strdup (split);
            found = TRUE;
          }
        if (!found)
          {
            NapkinPlacement p = { g_strdup (axis), g_strdup (split) };

            g_array_append_val (gpus->placements, p);
          }
        label = _("Change placement");
        break;
      }
    case FIELD_GPUS_CHUNKS:
      if (*text == '\0')
        v = 0;
      else if (!parse_int64 (text, &v, _("Chunks"), error))
        return FALSE;
      if (v <= 1)
        {
          gpus->chunks = 0;
          g_clear_pointer (&gpus->chunk_axis, g_free);
        }
      else if (gpus->chunk_axis == NULL)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, _("Choose the axis cut into chunks first"));
          return FALSE;
        }
      else
        gpus->chunks = v;
      label = _("Change overlap");
      break;
    case FIELD_GPUS_CHUNK_AXIS:
      g_clear_pointer (&gpus->chunk_axis, g_free);
      if (choice > 0 && choice <= napkin_diagram_n_axes (d))
        {
          gpus->chunk_axis = g_strdup (napkin_diagram_axis (d, choice - 1)->name);
          if (gpus->chunks < 2)
            gpus->chunks = 4;   /* the overlap papers' usual start */
        }
      else
        gpus->chunks = 0;
      label = _("Change overlap");
      break;
    default:
      g_assert_not_reached ();
    }
  return napkin_edit_set_gpus (history (self), gpus, label, error);
}

static gboolean
apply (NapkinInspector *self,
       GtkWidget       *editor,
       const char      *text,
       guint            choice,
       GError         **error)
{
  Field field = GPOINTER_TO_INT (g_object_get_data (G_OBJECT (editor), "napkin-field"));
  const char *key = g_object_get_data (G_OBJECT (editor), "napkin-key");
  const char *node_id = g_object_get_data (G_OBJECT (editor), "napkin-node");
  const char *axis = g_object_get_data (G_OBJECT (editor), "napkin-axis");
  NapkinHistory *h = history (self);
  gint64 v;

  if (node_id != NULL)
    {
      int n = napkin_diagram_find_node (diagram (self), node_id);

      if (n >= 0 && napkin_diagram_node (diagram (self), n)->tensor != NULL)
        key = napkin_diagram_node (diagram (self), n)->tensor;
    }

  switch (field)
    {
    case FIELD_LABEL:
    case FIELD_OUT:
    case FIELD_AXIS:
    case FIELD_FN:
    case FIELD_ALPHA:
    case FIELD_REDUCE:
    case FIELD_NORM:
    case FIELD_EPS:
    case FIELD_NODE_DTYPE:
    case FIELD_MASK:
    case FIELD_ROWS:
    case FIELD_OFFSET:
    case FIELD_LEFT:
    case FIELD_RIGHT:
    case FIELD_EXP_FMA:
      return apply_node_field (self, key, field, text, choice, error);

    case FIELD_TENSOR_NAME:
      return napkin_edit_rename_tensor (h, key, text, error);
    case FIELD_TENSOR_AXES:
      {
        g_auto(GStrv) axes = split_axes (text);
        int t = napkin_diagram_find_tensor (diagram (self), key);
        const char *placeholder = self->canvas ? napkin_canvas_get_placeholder_axis (self->canvas) : NULL;
        gboolean had_placeholder = t >= 0 && placeholder != NULL
                                   && g_strv_contains ((const char *const *) napkin_diagram_tensor (diagram (self), t)->axes,
                                                       placeholder);

        return define_axes (self, axes, error)
               && napkin_edit_set_tensor_axes (h, key, (const char *const *) axes, error)
               && (!had_placeholder || (drop_placeholder (self), TRUE));
      }
    case FIELD_TENSOR_DTYPE:
      return napkin_edit_set_tensor_dtype (h, key, choice, error);
    case FIELD_AXIS_SIZE:
      return parse_int64 (text, &v, key, error) && set_axis_size (self, key, v, error);
    case FIELD_REGION_LEVEL:
      return napkin_edit_set_region_level (h, key, choice, error);
    case FIELD_REGION_STAGES:
      return parse_int64 (text, &v, _("Stages"), error)
             && napkin_edit_set_region_stages (h, key, (guint) CLAMP (v, 0, G_MAXUINT), error);
    case FIELD_MARK_KIND:
    case FIELD_MARK_TILE:
      {
        const NapkinRegion *region;
        int r = napkin_diagram_find_region (diagram (self), key);
        NapkinMarkKind kind;
        gint64 tile = 0;
        GtkWidget *kind_w = g_object_get_data (G_OBJECT (editor), "napkin-kind-widget");
        GtkWidget *tile_w = g_object_get_data (G_OBJECT (editor), "napkin-tile-widget");

        if (r < 0)
          return TRUE;
        region = napkin_diagram_region (diagram (self), r);
        kind = gtk_drop_down_get_selected (GTK_DROP_DOWN (kind_w));
        napkin_region_mark (region, axis, &tile);
        if (kind != NAPKIN_MARK_WHOLE)
          {
            const char *t = gtk_editable_get_text (GTK_EDITABLE (tile_w));

            if (*t == '\0' && tile == 0)
              {
                /* a new mark: the tile tune would choose (docs/editor.md, "Smart defaults") */
                tile = napkin_tile_default_for_mark (diagram (self), key, axis, kind,
                                                     napkin_canvas_get_arch (self->canvas));
                t = "";
              }
            if (*t != '\0' && !parse_int64 (t, &tile, _("Tile size"), error))
              return FALSE;
          }
        return napkin_edit_set_mark (h, key, axis, kind, tile, error);
      }
    case FIELD_GPUS_AXIS:
    case FIELD_GPUS_COUNT:
    case FIELD_GPUS_PLACEMENT:
    case FIELD_GPUS_CHUNKS:
    case FIELD_GPUS_CHUNK_AXIS:
      return apply_gpus_field (self, field, axis, text, choice, error);
    case FIELD_NEW_AXIS:
      {
        g_auto(GStrv) parts = g_strsplit (text, "=", 2);

        if (parts[0] == NULL || parts[1] == NULL)
          {
            g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                         _("write the new axis as NAME=SIZE, e.g. k=4096"));
            return FALSE;
          }
        g_strstrip (parts[0]);
        return parse_int64 (parts[1], &v, parts[0], error) && napkin_edit_add_axis (h, parts[0], v, error);
      }
    default:
      g_assert_not_reached ();
    }
}

/* One user edit, one undo step, even where it takes several (an axis defined in
 * the axes list, then the list). */
static gboolean
apply_grouped (NapkinInspector  *self,
               GtkWidget        *editor,
               const char       *text,
               guint             choice,
               GError          **error)
{
  NapkinHistory *h = history (self);
  gboolean ok;

  if (h == NULL)
    return TRUE;
  napkin_history_begin_group (h, _("Edit"));
  ok = apply (self, editor, text, choice, error);
  if (ok)
    napkin_history_end_group (h);
  else
    napkin_history_cancel_group (h);
  return ok;
}

static gboolean
entry_is_changed (GtkWidget *entry)
{
  return g_strcmp0 (gtk_editable_get_text (GTK_EDITABLE (entry)),
                    g_object_get_data (G_OBJECT (entry), "napkin-original")) != 0;
}

static void
commit_entry (NapkinInspector *self,
              GtkEntry        *entry)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *text = g_strdup (gtk_editable_get_text (GTK_EDITABLE (entry)));
  const char *name = gtk_widget_get_name (GTK_WIDGET (entry));
  gboolean ok;

  g_object_ref (entry);
  ok = apply_grouped (self, GTK_WIDGET (entry), g_strstrip (text), 0, &error);
  /* A successful edit rebuilds the pane later, the focus where it was; a refusal
   * stays on screen, and in the field through rebuilds, until it is changed. */
  show_result (self, GTK_WIDGET (entry), ok, error);
  if (ok)
    {
      g_hash_table_remove (self->pending, name);
      g_hash_table_remove (self->pending_errors, name);
      if (g_object_get_data (G_OBJECT (entry), "napkin-clear-on-apply") != NULL)
        gtk_editable_set_text (GTK_EDITABLE (entry), "");
      g_object_set_data_full (G_OBJECT (entry), "napkin-original",
                              g_strdup (gtk_editable_get_text (GTK_EDITABLE (entry))), g_free);
    }
  else
    {
      g_hash_table_insert (self->pending, g_strdup (name), g_strdup (gtk_editable_get_text (GTK_EDITABLE (entry))));
      g_hash_table_insert (self->pending_errors, g_strdup (name), g_strdup (error ? error->message : ""));
    }
  g_object_unref (entry);
}

/* Enter applies and keeps the focus in the field. */
static void
entry_activate_cb (GtkEntry        *entry,
                   NapkinInspector *self)
{
  commit_entry (self, entry);
}

/* Tab (or a click elsewhere) applies what was typed, as Enter does. */
static void
entry_leave_cb (GtkEventControllerFocus *focus,
                NapkinInspector         *self)
{
  GtkWidget *entry = gtk_event_controller_get_widget (GTK_EVENT_CONTROLLER (focus));

  if (self->rebuilding || self->canvas == NULL || gtk_widget_get_root (entry) == NULL || !entry_is_changed (entry))
    return;
  commit_entry (self, GTK_ENTRY (entry));
}

static void
dropdown_selected_cb (GtkDropDown     *dropdown,
                      GParamSpec      *pspec,
                      NapkinInspector *self)
{
  g_autoptr(GError) error = NULL;
  gboolean ok;

  if (self->rebuilding)
    return;
  g_object_ref (dropdown);
  ok = apply_grouped (self, GTK_WIDGET (dropdown), "", gtk_drop_down_get_selected (dropdown), &error);
  show_result (self, GTK_WIDGET (dropdown), ok, error);
  g_object_unref (dropdown);
}

static GtkWidget *
field_entry (NapkinInspector *self,
             Field            field,
             const char      *key,
             const char      *text)
{
  GtkWidget *entry = gtk_entry_new ();
  GtkEventController *focus = gtk_event_controller_focus_new ();

  gtk_editable_set_text (GTK_EDITABLE (entry), text ? text : "");
  g_object_set_data_full (G_OBJECT (entry), "napkin-original", g_strdup (text ? text : ""), g_free);
  g_object_set_data (G_OBJECT (entry), "napkin-field", GINT_TO_POINTER (field));
  g_object_set_data_full (G_OBJECT (entry), "napkin-key", g_strdup (key), g_free);
  g_signal_connect (entry, "activate", G_CALLBACK (entry_activate_cb), self);
  g_signal_connect (focus, "leave", G_CALLBACK (entry_leave_cb), self);
  gtk_widget_add_controller (entry, focus);
  return entry;
}

static GtkWidget *
field_dropdown (NapkinInspector   *self,
                Field              field,
                const char        *key,
                const char *const *items,
                guint              selected)
{
  GtkWidget *dropdown = gtk_drop_down_new_from_strings (items);

  gtk_drop_down_set_selected (GTK_DROP_DOWN (dropdown), selected);
  g_object_set_data (G_OBJECT (dropdown), "napkin-field", GINT_TO_POINTER (field));
  g_object_set_data_full (G_OBJECT (dropdown), "napkin-key", g_strdup (key), g_free);
  g_signal_connect (dropdown, "notify::selected", G_CALLBACK (dropdown_selected_cb), self);
  return dropdown;
}

/* ---------------------------------------------------------------- building */

static const char *const *
dtype_names (gboolean with_inherit)
{
  static const char *names[NAPKIN_N_DTYPES + 2];
  static const char *inherit_names[NAPKIN_N_DTYPES + 2];

  if (names[0] == NULL)
    {
      inherit_names[0] = _("as input");
      for (guint i = 0; i < NAPKIN_N_DTYPES; i++)
        names[i] = inherit_names[i + 1] = napkin_dtype_to_string (i);
    }
  return with_inherit ? inherit_names : names;
}

/* exp on sfu | fma (docs/file-format.md): the fraction of the exponentials computed by
 * a polynomial on the FMA units, 0 for all on the SFU */
static void
add_exp_fma_row (NapkinInspector  *self,
                 const NapkinNode *node)
{
  char text[G_ASCII_DTOSTR_BUF_SIZE];

  g_ascii_dtostr (text, sizeof text, node->exp_fma);
  add_row (self, _("E_xp on FMA (fraction, 0: SFU)"), field_entry (self, FIELD_EXP_FMA, node->id, text),
           "field-exp-fma");
}

static void
build_node (NapkinInspector *self,
            guint            n)
{
  NapkinDiagram *d = diagram (self);
  const NapkinNode *node = napkin_diagram_node (d, n);
  const NapkinTensorType *type = napkin_diagram_node_type (d, n);
  g_autofree char *heading = g_strdup_printf (_("Operation “%s” (%s)"), node->id, napkin_op_kind_to_string (node->kind));

  gtk_label_set_text (self->heading, heading);
  /* an input or output is its tensor: its name is the tensor's, used in the pane,
   * the code and the file */
  if (node->kind != NAPKIN_OP_INPUT && node->kind != NAPKIN_OP_OUTPUT)
    add_row (self, _("_Label"), field_entry (self, FIELD_LABEL, node->id, node->label), "field-label");

  switch (node->kind)
    {
    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_OUTPUT:
      {
        int t = napkin_diagram_find_tensor (d, node->tensor);

        if (t >= 0)
          {
            const NapkinTensor *tensor = napkin_diagram_tensor (d, t);
            g_autofree char *axes = join_axes (tensor->axes);
            GtkWidget *axes_entry = field_entry (self, FIELD_TENSOR_AXES, tensor->name, axes);
            GtkWidget *name_entry = field_entry (self, FIELD_TENSOR_NAME, tensor->name, tensor->name);
            GtkWidget *dtype = field_dropdown (self, FIELD_TENSOR_DTYPE, tensor->name, dtype_names (FALSE),
                                               tensor->dtype);

            /* the node names the tensor when the edit is applied: a rename applied by
             * Tab rebuilds the pane later, and what is typed before that must still
             * reach the renamed tensor */
            g_object_set_data_full (G_OBJECT (name_entry), "napkin-node", g_strdup (node->id), g_free);
            g_object_set_data_full (G_OBJECT (axes_entry), "napkin-node", g_strdup (node->id), g_free);
            g_object_set_data_full (G_OBJECT (dtype), "napkin-node", g_strdup (node->id), g_free);
            add_row (self, _("_Name"), name_entry, "field-name");
            gtk_widget_set_tooltip_text (axes_entry, _("Axis names in memory order, e.g. “m, k”; "
                                                       "“m=4096” defines an axis here"));
            add_row (self, _("_Axes"), axes_entry, "field-tensor-axes");
            add_row (self, _("_Element type"), dtype, "field-tensor-dtype");
          }
        break;
      }
    case NAPKIN_OP_CONTRACT:
    case NAPKIN_OP_REARRANGE:
    case NAPKIN_OP_MAP:
      {
        g_autofree char *out = join_axes (node->out);

        if (node->kind == NAPKIN_OP_MAP)
          {
            static const char *fns[NAPKIN_N_FNS + 1];

            for (guint i = 0; i < NAPKIN_N_FNS; i++)
              fns[i] = napkin_fn_info (i)->name;
            add_row (self, _("_Function"), field_dropdown (self, FIELD_FN, node->id, fns, node->fn), "field-fn");
            if (node->fn == NAPKIN_FN_SCALE || node->fn == NAPKIN_FN_SHIFT)
              {
                char alpha[G_ASCII_DTOSTR_BUF_SIZE];
                GtkWidget *entry;

                g_ascii_dtostr (alpha, sizeof alpha, node->alpha);
                entry = field_entry (self, FIELD_ALPHA, node->id, node->alpha_expr ? node->alpha_expr : alpha);
                gtk_widget_set_tooltip_text (entry, _("A number, or an expression of axis sizes such as 1/sqrt(d) "
                                                      "that follows them"));
                add_row (self, node->fn == NAPKIN_FN_SHIFT ? _("_Constant") : _("_Factor"), entry, "field-alpha");
                if (node->alpha_expr != NULL)
                  {
                    /* the value the model and the code use now */
                    g_autofree char *value = g_strdup_printf (_("= %.6g at the axes' sizes now"), node->alpha);

                    add_text (self, value, "dim-label");
                  }
              }
            if (node->fn == NAPKIN_FN_EXP)
              add_exp_fma_row (self, node);
          }
        add_row (self, node->kind == NAPKIN_OP_MAP ? _("_Output axes (optional)") : _("_Output axes"),
                 field_entry (self, FIELD_OUT, node->id, out), "field-out");
        break;
      }
    case NAPKIN_OP_REDUCE:
    case NAPKIN_OP_SOFTMAX:
    case NAPKIN_OP_NORMALIZE:
      if (node->kind == NAPKIN_OP_REDUCE)
        {
          static const char *ops[NAPKIN_N_REDUCES + 1];

          for (guint i = 0; i < NAPKIN_N_REDUCES; i++)
            ops[i] = napkin_reduce_to_string (i);
          add_row (self, _("_Reduction"), field_dropdown (self, FIELD_REDUCE, node->id, ops, node->reduce),
                   "field-reduce");
        }
      if (node->kind == NAPKIN_OP_NORMALIZE)
        {
          static const char *norms[NAPKIN_N_NORMS + 1];
          char eps[G_ASCII_DTOSTR_BUF_SIZE];

          for (guint i = 0; i < NAPKIN_N_NORMS; i++)
            norms[i] = napkin_norm_to_string (i);
          add_row (self, _("_Normalization"), field_dropdown (self, FIELD_NORM, node->id, norms, node->norm),
                   "field-norm");
          g_ascii_dtostr (eps, sizeof eps, node->eps);
          add_row (self, "_eps", field_entry (self, FIELD_EPS, node->id, eps), "field-eps");
        }
      add_row (self, _("O_ver axis"), field_entry (self, FIELD_AXIS, node->id, node->axis), "field-axis");
      if (node->kind == NAPKIN_OP_SOFTMAX)
        add_exp_fma_row (self, node);
      break;
    case NAPKIN_OP_MASK:
      {
        static const char *masks[NAPKIN_N_MASKS + 1];
        g_autofree char *offset = g_strdup_printf ("%" G_GINT64_FORMAT, node->offset);

        for (guint i = 0; i < NAPKIN_N_MASKS; i++)
          masks[i] = napkin_mask_to_string (i);
        add_row (self, _("_Mask"), field_dropdown (self, FIELD_MASK, node->id, masks, node->mask), "field-mask");
        if (node->mask == NAPKIN_MASK_TENSOR)
          break;
        add_row (self, _("_Rows (queries)"), field_entry (self, FIELD_ROWS, node->id, node->rows), "field-rows");
        add_row (self, _("_Keys axis"), field_entry (self, FIELD_AXIS, node->id, node->axis), "field-axis");
        add_row (self, _("_Offset"), field_entry (self, FIELD_OFFSET, node->id, offset), "field-offset");
        if (node->mask == NAPKIN_MASK_WINDOW)
          {
            g_autofree char *left = node->left >= 0 ? g_strdup_printf ("%" G_GINT64_FORMAT, node->left) : g_strdup ("");
            g_autofree char *right = node->right >= 0 ? g_strdup_printf ("%" G_GINT64_FORMAT, node->right) : g_strdup ("");

            add_row (self, _("_Left (keys back, empty: all)"), field_entry (self, FIELD_LEFT, node->id, left),
                     "field-left");
            add_row (self, _("Ri_ght (keys ahead, empty: all)"), field_entry (self, FIELD_RIGHT, node->id, right),
                     "field-right");
          }
        break;
      }
    case NAPKIN_N_OPS:
    default:
      break;
    }

  if (node->kind != NAPKIN_OP_INPUT && node->kind != NAPKIN_OP_OUTPUT)
    add_row (self, _("_Element type"),
             field_dropdown (self, FIELD_NODE_DTYPE, node->id, dtype_names (TRUE),
                             node->has_dtype ? node->dtype + 1 : 0),
             "field-dtype");

  if (type != NULL && type->valid)
    {
      g_autofree char *s = napkin_diagram_type_to_string (d, type);
      g_autofree char *text = g_strdup_printf (_("Result: %s"), s);

      add_text (self, text, "dim-label");
    }
}

static void
build_region (NapkinInspector *self,
              const char      *name)
{
  NapkinDiagram *d = diagram (self);
  int r = napkin_diagram_find_region (d, name);
  const NapkinRegion *region;
  static const char *levels[NAPKIN_N_LEVELS + 1];
  static const char *marks[NAPKIN_N_MARKS + 1];
  g_autofree char *heading = NULL;
  g_autofree char *stages = NULL;

  if (r < 0)
    return;
  region = napkin_diagram_region (d, r);
  levels[0] = _("Device memory");
  levels[1] = _("L2 cache");
  levels[2] = _("Shared memory");
  levels[3] = _("Registers");
  marks[0] = _("whole");
  marks[1] = _("parallel (g)");
  marks[2] = _("stream (s)");

  heading = g_strdup_printf (_("Region “%s”"), region->name);
  gtk_label_set_text (self->heading, heading);
  add_row (self, _("_Level"), field_dropdown (self, FIELD_REGION_LEVEL, region->name, levels, region->level),
           "region-level");
  stages = g_strdup_printf ("%u", region->stages);
  add_row (self, _("_Stages"), field_entry (self, FIELD_REGION_STAGES, region->name, stages), "region-stages");

  add_section (self, _("Axes in this region"));
  for (guint a = 0; a < napkin_diagram_n_axes (d); a++)
    {
      const NapkinAxis *axis = napkin_diagram_axis (d, a);
      GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
      GtkWidget *kind_w, *tile_w;
      g_autofree char *title = g_strdup_printf ("%s (%" G_GINT64_FORMAT ")", axis->name, axis->size);
      g_autofree char *kind_name = g_strdup_printf ("mark-%s-kind", axis->name);
      g_autofree char *tile_name = g_strdup_printf ("mark-%s-tile", axis->name);
      g_autofree char *tile_text = NULL;
      NapkinMarkKind kind;
      gint64 tile = 0;

      kind = napkin_region_mark (region, axis->name, &tile);
      tile_text = kind == NAPKIN_MARK_WHOLE ? g_strdup ("") : g_strdup_printf ("%" G_GINT64_FORMAT, tile);
      kind_w = field_dropdown (self, FIELD_MARK_KIND, region->name, marks, kind);
      tile_w = field_entry (self, FIELD_MARK_TILE, region->name, tile_text);
      gtk_editable_set_width_chars (GTK_EDITABLE (tile_w), 6);
      gtk_widget_set_sensitive (tile_w, kind != NAPKIN_MARK_WHOLE);
      gtk_widget_set_name (kind_w, kind_name);
      gtk_widget_set_name (tile_w, tile_name);
      for (guint i = 0; i < 2; i++)
        {
          GObject *w = G_OBJECT (i ? tile_w : kind_w);

          g_object_set_data_full (w, "napkin-axis", g_strdup (axis->name), g_free);
          g_object_set_data (w, "napkin-kind-widget", kind_w);
          g_object_set_data (w, "napkin-tile-widget", tile_w);
        }
      gtk_box_append (GTK_BOX (box), kind_w);
      gtk_box_append (GTK_BOX (box), tile_w);
      {
        g_autofree char *escaped = escape_mnemonic (title);

        add_row (self, escaped, box, "mark-row");
      }
      /* The refusal shows under the pair, whichever of the two was edited. */
      g_object_set_data (G_OBJECT (kind_w), "napkin-error", g_object_get_data (G_OBJECT (box), "napkin-error"));
      g_object_set_data (G_OBJECT (tile_w), "napkin-error", g_object_get_data (G_OBJECT (box), "napkin-error"));
    }

  /* the tile sizes above, ranked by the model (the window's win.suggest-tiles) */
  {
    GtkWidget *suggest = gtk_button_new_with_mnemonic (_("Suggest _Tiles…"));

    gtk_widget_set_name (suggest, "region-suggest-tiles");
    gtk_widget_set_tooltip_text (suggest, _("Rank the tile sizes of every region by predicted time (Ctrl+T)"));
    gtk_actionable_set_action_name (GTK_ACTIONABLE (suggest), "win.suggest-tiles");
    gtk_widget_set_halign (suggest, GTK_ALIGN_START);
    gtk_widget_set_margin_top (suggest, 12);
    gtk_grid_attach (self->grid, suggest, 0, self->row++, 2, 1);
  }
}

/* Dropdown items: `first`, then each of the diagram's axes (NULL-terminated, owned). */
static char **
axis_items (NapkinDiagram *d,
            const char    *first)
{
  GPtrArray *items = g_ptr_array_new ();

  g_ptr_array_add (items, g_strdup (first));
  for (guint a = 0; a < napkin_diagram_n_axes (d); a++)
    g_ptr_array_add (items, g_strdup (napkin_diagram_axis (d, a)->name));
  g_ptr_array_add (items, NULL);
  return (char **) g_ptr_array_free (items, FALSE);
}

static void
build_gpus (NapkinInspector *self)
{
  NapkinDiagram *d = diagram (self);
  const NapkinGpusRegion *gpus = napkin_diagram_get_gpus (d);
  const NapkinRegion *region = gpus->region;
  g_auto(GStrv) axes = axis_items (d, _("none"));
  g_auto(GStrv) chunk_axes = axis_items (d, _("no overlap"));
  g_autofree char *heading = g_strdup_printf (_("GPUs region “%s”"), region->name);
  g_autofree char *count = gpus->gpus > 0 ? g_strdup_printf ("%u", gpus->gpus) : g_strdup ("");
  g_autofree char *chunks = gpus->chunks >= 2 ? g_strdup_printf ("%u", gpus->chunks) : g_strdup ("");
  guint parallel = 0, chunk_axis = 0;
  GtkWidget *w;

  for (guint m = 0; m < region->marks->len; m++)
    {
      const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, m);

      if (mark->kind == NAPKIN_MARK_PARALLEL)
        parallel = napkin_diagram_find_axis (d, mark->axis) + 1;
    }
  if (gpus->chunk_axis != NULL)
    chunk_axis = napkin_diagram_find_axis (d, gpus->chunk_axis) + 1;

  gtk_label_set_text (self->heading, heading);
  add_text (self, _("Its operations run split across the GPUs along the parallel axis; "
                    "the analysis derives the collectives."), "dim-label");
  add_row (self, _("_Parallel axis"), field_dropdown (self, FIELD_GPUS_AXIS, region->name,
                                                      (const char *const *) axes, parallel), "gpus-axis");
  w = field_entry (self, FIELD_GPUS_COUNT, region->name, count);
  gtk_entry_set_placeholder_text (GTK_ENTRY (w), _("chosen by the analysis"));
  add_row (self, _("_GPUs"), w, "gpus-count");

  add_section (self, _("Placements"));
  for (guint n = 0; n < napkin_diagram_n_nodes (d); n++)
    {
      const NapkinNode *node = napkin_diagram_node (d, n);
      int t = node->tensor ? napkin_diagram_find_tensor (d, node->tensor) : -1;
      const NapkinTensor *tensor = t >= 0 ? napkin_diagram_tensor (d, t) : NULL;
      const NapkinPlacement *placement;
      g_autoptr(GPtrArray) items = NULL;
      g_autofree char *name = NULL;
      g_autofree char *title = NULL;
      guint selected = 0;

      if ((node->kind != NAPKIN_OP_INPUT && node->kind != NAPKIN_OP_OUTPUT) || tensor == NULL)
        continue;
      placement = napkin_gpus_region_placement (gpus, tensor->name);
      items = g_ptr_array_new_with_free_func (g_free);
      g_ptr_array_add (items, g_strdup (_("replicated")));
      for (guint a = 0; tensor->axes && tensor->axes[a]; a++)
        {
          g_ptr_array_add (items, g_strdup_printf (_("split %s"), tensor->axes[a]));
          if (placement != NULL && g_strcmp0 (placement->split, tensor->axes[a]) == 0)
            selected = a + 1;
        }
      g_ptr_array_add (items, NULL);
      w = field_dropdown (self, FIELD_GPUS_PLACEMENT, region->name, (const char *const *) items->pdata, selected);
      g_object_set_data_full (G_OBJECT (w), "napkin-axis", g_strdup (tensor->name), g_free);
      name = g_strdup_printf ("gpus-placement-%s", tensor->name);
      title = g_strdup_printf ("%s (%s)", tensor->name, node->kind == NAPKIN_OP_INPUT ? _("input") : _("output"));
      {
        g_autofree char *escaped = escape_mnemonic (title);

        add_row (self, escaped, w, name);
      }
    }

  add_section (self, _("Overlap with compute"));
  add_row (self, _("Chunk _axis"), field_dropdown (self, FIELD_GPUS_CHUNK_AXIS, region->name,
                                                   (const char *const *) chunk_axes, chunk_axis), "gpus-chunk-axis");
  w = field_entry (self, FIELD_GPUS_CHUNKS, region->name, chunks);
  gtk_widget_set_sensitive (w, gpus->chunk_axis != NULL);
  add_row (self, _("_Chunks"), w, "gpus-chunks");
}

static void
build_wire (NapkinInspector *self,
            const char      *to,
            guint            port)
{
  NapkinDiagram *d = diagram (self);
  int t = napkin_diagram_find_node (d, to);
  int f = t >= 0 ? napkin_diagram_input_source (d, t, port) : -1;
  const NapkinNode *source;
  const NapkinTensorType *type;
  g_autofree char *heading = NULL;

  if (f < 0)
    return;
  source = napkin_diagram_node (d, f);
  heading = g_strdup_printf (_("Wire %s → %s (input %u)"), source->id, to, port + 1);
  gtk_label_set_text (self->heading, heading);
  type = napkin_diagram_node_type (d, f);
  if (type != NULL && type->valid)
    {
      g_autofree char *s = napkin_diagram_type_to_string (d, type);

      add_text (self, s, "monospace");
    }

  /* A wire carries its source's result: its axes are edited there. */
  if (source->kind == NAPKIN_OP_INPUT)
    {
      int ti = napkin_diagram_find_tensor (d, source->tensor);

      if (ti >= 0)
        {
          const NapkinTensor *tensor = napkin_diagram_tensor (d, ti);
          g_autofree char *axes = join_axes (tensor->axes);

          add_row (self, _("_Axes"), field_entry (self, FIELD_TENSOR_AXES, tensor->name, axes), "field-tensor-axes");
        }
    }
  else if (source->kind == NAPKIN_OP_CONTRACT || source->kind == NAPKIN_OP_REARRANGE
           || source->kind == NAPKIN_OP_MAP)
    {
      g_autofree char *out = join_axes (source->out);

      add_row (self, _("_Axes"), field_entry (self, FIELD_OUT, source->id, out), "field-out");
    }
}

static void
remove_axis_cb (GtkButton       *button,
                NapkinInspector *self)
{
  g_autoptr(GError) error = NULL;
  const char *axis = g_object_get_data (G_OBJECT (button), "napkin-key");
  gboolean ok;

  if (history (self) == NULL)
    return;
  g_object_ref (button);
  ok = napkin_edit_remove_axis (history (self), axis, &error);
  show_result (self, GTK_WIDGET (button), ok, error);
  g_object_unref (button);
}

static void
build_axes (NapkinInspector *self)
{
  NapkinDiagram *d = diagram (self);

  add_section (self, _("Axis sizes"));
  for (guint a = 0; a < napkin_diagram_n_axes (d); a++)
    {
      const NapkinAxis *axis = napkin_diagram_axis (d, a);
      g_autofree char *size = g_strdup_printf ("%" G_GINT64_FORMAT, axis->size);
      g_autofree char *name = g_strdup_printf ("axis-%s", axis->name);

      g_autofree char *escaped = escape_mnemonic (axis->name);

      {
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 4);
        GtkWidget *entry = field_entry (self, FIELD_AXIS_SIZE, axis->name, size);
        GtkWidget *remove = gtk_button_new_from_icon_name ("user-trash-symbolic");
        g_autofree char *remove_name = g_strdup_printf ("axis-%s-delete", axis->name);
        g_autofree char *tip = g_strdup_printf (_("Delete axis %s (only while nothing uses it)"), axis->name);

        gtk_widget_set_hexpand (entry, TRUE);
        gtk_widget_set_name (entry, name);
        gtk_widget_set_name (remove, remove_name);
        gtk_widget_set_tooltip_text (remove, tip);
        gtk_accessible_update_property (GTK_ACCESSIBLE (remove), GTK_ACCESSIBLE_PROPERTY_LABEL, tip, -1);
        gtk_widget_add_css_class (remove, "flat");
        g_object_set_data_full (G_OBJECT (remove), "napkin-key", g_strdup (axis->name), g_free);
        g_object_set_data (G_OBJECT (remove), "napkin-entry", entry);
        g_signal_connect (remove, "clicked", G_CALLBACK (remove_axis_cb), self);
        gtk_box_append (GTK_BOX (box), entry);
        gtk_box_append (GTK_BOX (box), remove);
        add_row (self, escaped, box, "axis-row");
        g_ptr_array_add (self->fields, entry);
        g_ptr_array_add (self->fields, remove);
        gtk_label_set_mnemonic_widget (GTK_LABEL (gtk_grid_get_child_at (self->grid, 0, self->row - 2)), entry);
        g_object_set_data (G_OBJECT (entry), "napkin-error", g_object_get_data (G_OBJECT (box), "napkin-error"));
        g_object_set_data (G_OBJECT (remove), "napkin-error", g_object_get_data (G_OBJECT (box), "napkin-error"));
      }
    }
  {
    GtkWidget *entry = field_entry (self, FIELD_NEW_AXIS, NULL, "");

    g_object_set_data (G_OBJECT (entry), "napkin-clear-on-apply", GINT_TO_POINTER (TRUE));
    gtk_entry_set_placeholder_text (GTK_ENTRY (entry), _("name=size, e.g. k=4096"));
    add_row (self, _("_New axis"), entry, "axis-new");
  }
}

static void
build_problems (NapkinInspector *self)
{
  g_autoptr(GPtrArray) problems = napkin_diagram_check (diagram (self));

  if (problems->len == 0)
    return;
  add_section (self, g_dngettext (GETTEXT_PACKAGE, "Problem", "Problems", problems->len));
  for (guint i = 0; i < problems->len && i < 20; i++)
    {
      add_text (self, ((NapkinProblem *) g_ptr_array_index (problems, i))->message, "error");
      gtk_widget_set_name (gtk_grid_get_child_at (self->grid, 0, self->row - 1), "problem");
    }
}

/* What the grid shows, so that a rebuild knows whether it shows the same thing. */
static char *
shown_key (NapkinInspector *self)
{
  g_auto(GStrv) ids = NULL;
  const char *region, *to;
  guint port;

  if (diagram (self) == NULL)
    return g_strdup ("");
  ids = napkin_canvas_dup_selected_nodes (self->canvas);
  region = napkin_canvas_get_selected_region (self->canvas);
  if (ids[0] != NULL)
    {
      g_autofree char *joined = g_strjoinv (",", ids);

      return g_strconcat ("nodes:", joined, NULL);
    }
  if (region != NULL)
    return g_strconcat ("region:", region, NULL);
  if (napkin_canvas_get_selected_wire (self->canvas, &to, &port))
    return g_strdup_printf ("wire:%s:%u", to, port);
  return g_strdup ("diagram");
}

static GtkWidget *
field_named (NapkinInspector *self,
             const char      *name)
{
  for (guint i = 0; i < self->fields->len; i++)
    if (g_strcmp0 (gtk_widget_get_name (g_ptr_array_index (self->fields, i)), name) == 0)
      return g_ptr_array_index (self->fields, i);
  return NULL;
}

/* The field that has the keyboard focus, if it is one of the grid's. */
static GtkWidget *
focused_field (NapkinInspector *self)
{
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
  GtkWidget *focus = root ? gtk_root_get_focus (root) : NULL;

  for (GtkWidget *w = focus; w != NULL && w != GTK_WIDGET (self); w = gtk_widget_get_parent (w))
    if (g_ptr_array_find (self->fields, w, NULL))
      return w;
  return NULL;
}

static void build_grid (NapkinInspector *self);

static gboolean
rebuild (gpointer user_data)
{
  NapkinInspector *self = user_data;
  g_autofree char *key = shown_key (self);
  g_autofree char *focus_name = NULL;
  GtkWidget *focus;
  int cursor = -1, sel_start = 0, sel_end = 0;
  gboolean select = FALSE;

  self->rebuild_id = 0;
  if (g_strcmp0 (key, self->shown) != 0)
    {
      /* something else is shown: what was typed for the other thing is gone */
      g_hash_table_remove_all (self->pending);
      g_hash_table_remove_all (self->pending_errors);
    }
  else
    {
      /* typed, not applied yet: kept through the rebuild */
      for (guint i = 0; i < self->fields->len; i++)
        {
          GtkWidget *w = g_ptr_array_index (self->fields, i);

          if (GTK_IS_ENTRY (w) && entry_is_changed (w))
            g_hash_table_insert (self->pending, g_strdup (gtk_widget_get_name (w)),
                                 g_strdup (gtk_editable_get_text (GTK_EDITABLE (w))));
        }
      focus = focused_field (self);
      if (focus != NULL)
        {
          focus_name = g_strdup (gtk_widget_get_name (focus));
          if (GTK_IS_EDITABLE (focus))
            {
              cursor = gtk_editable_get_position (GTK_EDITABLE (focus));
              gtk_editable_get_selection_bounds (GTK_EDITABLE (focus), &sel_start, &sel_end);
            }
        }
    }
  if (self->focus_request != NULL)
    {
      g_free (focus_name);
      focus_name = g_steal_pointer (&self->focus_request);
      cursor = -1;
      select = TRUE;
    }
  g_free (self->shown);
  self->shown = g_steal_pointer (&key);

  self->rebuilding = TRUE;
  clear_grid (self);
  g_clear_pointer (&self->error, g_free);
  build_grid (self);

  /* what was typed and refused is still there, with its refusal */
  {
    GHashTableIter iter;
    gpointer name, text;

    g_hash_table_iter_init (&iter, self->pending);
    while (g_hash_table_iter_next (&iter, &name, &text))
      {
        GtkWidget *w = field_named (self, name);
        const char *message = g_hash_table_lookup (self->pending_errors, name);

        if (w == NULL || !GTK_IS_EDITABLE (w))
          continue;
        gtk_editable_set_text (GTK_EDITABLE (w), text);
        if (message != NULL && *message)
          {
            g_autoptr(GError) error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_INVALID_DATA, message);

            show_result (self, w, FALSE, error);
          }
      }
  }
  /* the focus stays in the field being typed in */
  if (focus_name != NULL && (focus = field_named (self, focus_name)) != NULL)
    {
      if (GTK_IS_ENTRY (focus) && !select)
        {
          gtk_entry_grab_focus_without_selecting (GTK_ENTRY (focus));
          /* the selection too: Tab selects a field's text, so that typing replaces it */
          if (sel_end > sel_start)
            gtk_editable_select_region (GTK_EDITABLE (focus), sel_start, sel_end);
          else if (cursor >= 0)
            gtk_editable_set_position (GTK_EDITABLE (focus), cursor);
        }
      else
        gtk_widget_grab_focus (focus);
    }
  self->rebuilding = FALSE;
  return G_SOURCE_REMOVE;
}

static void
build_grid (NapkinInspector *self)
{
  g_auto(GStrv) ids = NULL;
  const char *region, *to;
  guint port;

  if (diagram (self) == NULL)
    {
      gtk_label_set_text (self->heading, _("No document"));
      return;
    }

  ids = napkin_canvas_dup_selected_nodes (self->canvas);
  region = napkin_canvas_get_selected_region (self->canvas);
  if (ids[0] != NULL && ids[1] == NULL)
    build_node (self, napkin_diagram_find_node (diagram (self), ids[0]));
  else if (ids[0] != NULL)
    {
      g_autofree char *heading = g_strdup_printf (_("%u operations selected"), g_strv_length (ids));

      gtk_label_set_text (self->heading, heading);
      add_text (self, _("Draw a region around them from the Region menu (Ctrl+R for shared memory)."), "dim-label");
    }
  else if (region != NULL && napkin_diagram_get_gpus (diagram (self)) != NULL
           && g_strcmp0 (napkin_diagram_get_gpus (diagram (self))->region->name, region) == 0)
    build_gpus (self);
  else if (region != NULL)
    build_region (self, region);
  else if (napkin_canvas_get_selected_wire (self->canvas, &to, &port))
    build_wire (self, to, port);
  else
    {
      NapkinDiagram *d = diagram (self);

      gtk_label_set_text (self->heading, napkin_diagram_get_title (d) ? napkin_diagram_get_title (d) : _("Diagram"));
      if (napkin_diagram_get_description (d))
        add_text (self, napkin_diagram_get_description (d), "dim-label");
    }
  build_axes (self);
  build_problems (self);
}

void
napkin_inspector_focus_field (NapkinInspector *self,
                              const char      *name)
{
  g_return_if_fail (NAPKIN_IS_INSPECTOR (self));

  g_free (self->focus_request);
  self->focus_request = g_strdup (name);
  if (self->rebuild_id == 0)
    self->rebuild_id = g_idle_add_full (G_PRIORITY_DEFAULT_IDLE, rebuild, self, NULL);
}

static void
selection_changed_cb (NapkinInspector *self,
                      NapkinCanvas    *canvas)
{
  /* Coalesced: a drag changes the diagram on every motion event. */
  if (self->rebuild_id == 0)
    self->rebuild_id = g_idle_add_full (G_PRIORITY_DEFAULT_IDLE, rebuild, self, NULL);
}

void
napkin_inspector_set_canvas (NapkinInspector *self,
                             NapkinCanvas    *canvas)
{
  g_return_if_fail (NAPKIN_IS_INSPECTOR (self));
  g_return_if_fail (canvas == NULL || NAPKIN_IS_CANVAS (canvas));

  if (self->canvas != NULL)
    g_clear_signal_handler (&self->selection_id, self->canvas);
  g_set_object (&self->canvas, canvas);
  if (canvas != NULL)
    self->selection_id = g_signal_connect_object (canvas, "selection-changed",
                                                  G_CALLBACK (selection_changed_cb), self,
                                                  G_CONNECT_SWAPPED);
  g_clear_handle_id (&self->rebuild_id, g_source_remove);
  g_clear_pointer (&self->shown, g_free);
  rebuild (self);
}

const char *
napkin_inspector_get_error (NapkinInspector *self)
{
  g_return_val_if_fail (NAPKIN_IS_INSPECTOR (self), NULL);

  return self->error;
}

static void
napkin_inspector_dispose (GObject *object)
{
  NapkinInspector *self = NAPKIN_INSPECTOR (object);
  GtkWidget *child;

  g_clear_handle_id (&self->rebuild_id, g_source_remove);
  if (self->canvas != NULL)
    g_clear_signal_handler (&self->selection_id, self->canvas);
  g_clear_object (&self->canvas);
  /* the grid's editors go with it: no focus-out applies during teardown */
  self->rebuilding = TRUE;
  if (self->fields != NULL)
    g_ptr_array_set_size (self->fields, 0);
  gtk_widget_dispose_template (GTK_WIDGET (self), NAPKIN_TYPE_INSPECTOR);
  /* The scrolled window is not a bound child: unparent it by hand. */
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    gtk_widget_unparent (child);
  G_OBJECT_CLASS (napkin_inspector_parent_class)->dispose (object);
}

static void
napkin_inspector_finalize (GObject *object)
{
  NapkinInspector *self = NAPKIN_INSPECTOR (object);

  g_clear_pointer (&self->error, g_free);
  g_clear_pointer (&self->shown, g_free);
  g_clear_pointer (&self->focus_request, g_free);
  g_clear_pointer (&self->fields, g_ptr_array_unref);
  g_clear_pointer (&self->pending, g_hash_table_unref);
  g_clear_pointer (&self->pending_errors, g_hash_table_unref);
  G_OBJECT_CLASS (napkin_inspector_parent_class)->finalize (object);
}

static void
napkin_inspector_class_init (NapkinInspectorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = napkin_inspector_dispose;
  object_class->finalize = napkin_inspector_finalize;

  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/napkin/Napkin/ui/napkin-inspector.ui");
  gtk_widget_class_bind_template_child (widget_class, NapkinInspector, heading);
  gtk_widget_class_bind_template_child (widget_class, NapkinInspector, grid);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "napkin-inspector");
}

static void
napkin_inspector_init (NapkinInspector *self)
{
  self->fields = g_ptr_array_new ();
  self->pending = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  self->pending_errors = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  gtk_widget_init_template (GTK_WIDGET (self));
}

GtkWidget *
napkin_inspector_new (void)
{
  return g_object_new (NAPKIN_TYPE_INSPECTOR, NULL);
}
