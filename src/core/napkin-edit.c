/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include <math.h>

#include "napkin-edit.h"
#include "napkin-expr.h"
#include "napkin-error.h"

G_GNUC_PRINTF (2, 3)
static gboolean
refuse (GError    **error,
        const char *format,
        ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);

  g_set_error_literal (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE, message);
  return FALSE;
}

static gboolean
find_or_refuse (NapkinDiagram  *diagram,
                NapkinItemKind  kind,
                const char     *key,
                int            *index,
                GError        **error)
{
  static const char *what[] = { "axis", "tensor", "operation", "wire", "region" };

  *index = napkin_diagram_find (diagram, kind, key);
  if (*index < 0)
    return refuse (error, "no %s “%s”", what[kind], key ? key : "");
  return TRUE;
}

static gboolean
check_size (gint64       size,
            const char  *what,
            GError     **error)
{
  if (size < 1 || size > NAPKIN_MAX_AXIS_SIZE)
    return refuse (error, "%s must be from 1 to %" G_GINT64_FORMAT ", not %" G_GINT64_FORMAT,
                   what, NAPKIN_MAX_AXIS_SIZE, size);
  return TRUE;
}

static gboolean
check_axes (NapkinDiagram  *diagram,
            char          **axes,
            GError        **error)
{
  guint n = axes ? g_strv_length (axes) : 0;

  if (n > NAPKIN_MAX_RANK)
    return refuse (error, "at most %d axes per tensor", NAPKIN_MAX_RANK);
  for (guint i = 0; i < n; i++)
    {
      if (napkin_diagram_find_axis (diagram, axes[i]) < 0)
        return refuse (error, "no axis “%s”", axes[i]);
      for (guint j = 0; j < i; j++)
        if (g_strcmp0 (axes[i], axes[j]) == 0)
          return refuse (error, "axis “%s” appears twice", axes[i]);
    }
  return TRUE;
}

static gboolean
check_node_fields (NapkinDiagram     *diagram,
                   const NapkinNode  *node,
                   GError           **error)
{
  if (!napkin_name_is_valid (node->id))
    return refuse (error, "“%s” is not a name: use letters, digits and _", node->id ? node->id : "");
  if ((guint) node->kind >= NAPKIN_N_OPS)
    return refuse (error, "unknown operation kind");
  if (!isfinite (node->x) || !isfinite (node->y))
    return refuse (error, "position must be finite");
  if (node->label != NULL && !g_utf8_validate (node->label, -1, NULL))
    return refuse (error, "label is not valid UTF-8");
  if (!(node->exp_fma >= 0 && node->exp_fma <= 1))
    return refuse (error, "the fraction of exponentials on the FMA units must be between 0 and 1");
  if (node->exp_fma > 0 && node->kind != NAPKIN_OP_SOFTMAX
      && !(node->kind == NAPKIN_OP_MAP && node->fn == NAPKIN_FN_EXP))
    return refuse (error, "exponentials on the FMA units apply to a softmax or an exp map only");

  switch (node->kind)
    {
    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_OUTPUT:
      if (napkin_diagram_find_tensor (diagram, node->tensor) < 0)
        return refuse (error, "no tensor “%s”", node->tensor ? node->tensor : "");
      break;
    case NAPKIN_OP_CONTRACT:
    case NAPKIN_OP_REARRANGE:
      if (node->out == NULL)
        return refuse (error, "a %s needs its output axes", napkin_op_kind_to_string (node->kind));
      return check_axes (diagram, node->out, error);
    case NAPKIN_OP_MAP:
      if ((guint) node->fn >= NAPKIN_N_FNS)
        return refuse (error, "unknown map function");
      if (!isfinite (node->alpha))
        return refuse (error, "alpha must be finite");
      if (node->alpha_expr != NULL)
        {
          g_autoptr(GError) local = NULL;
          double value;

          /* an expression of the axes' sizes: it must name axes the diagram has */
          if (!napkin_diagram_eval_expr (diagram, node->alpha_expr, &value, &local))
            return refuse (error, "%s", local->message);
        }
      return check_axes (diagram, node->out, error);
    case NAPKIN_OP_REDUCE:
    case NAPKIN_OP_SOFTMAX:
    case NAPKIN_OP_NORMALIZE:
      if (napkin_diagram_find_axis (diagram, node->axis) < 0)
        return refuse (error, "no axis “%s”", node->axis ? node->axis : "");
      if (node->kind == NAPKIN_OP_NORMALIZE && !(node->eps > 0 && node->eps < 1))
        return refuse (error, "eps must be between 0 and 1");
      break;
    case NAPKIN_OP_MASK:
      if ((guint) node->mask >= NAPKIN_N_MASKS)
        return refuse (error, "unknown mask");
      if (node->mask == NAPKIN_MASK_TENSOR)
        break;
      if (napkin_diagram_find_axis (diagram, node->axis) < 0)
        return refuse (error, "no axis “%s”", node->axis ? node->axis : "");
      if (napkin_diagram_find_axis (diagram, node->rows) < 0)
        return refuse (error, "no rows axis “%s”", node->rows ? node->rows : "");
      if (g_strcmp0 (node->axis, node->rows) == 0)
        return refuse (error, "rows and axis must differ (queries and keys)");
      if (node->left < -1 || node->right < -1)
        return refuse (error, "a window side is 0 or more, or -1 for no bound");
      if (node->offset < -NAPKIN_MAX_AXIS_SIZE || node->offset > NAPKIN_MAX_AXIS_SIZE
          || node->left > NAPKIN_MAX_AXIS_SIZE || node->right > NAPKIN_MAX_AXIS_SIZE)
        return refuse (error, "mask offset or window side out of range");
      break;
    case NAPKIN_N_OPS:
    default:
      g_assert_not_reached ();
    }

  return TRUE;
}

static void
push (NapkinHistory *history,
      NapkinCommand *command)
{
  if (napkin_command_get_length (command) > 0)
    napkin_history_push (history, command);
  g_object_unref (command);
}

/* Records one item's change as a command: `changed` (owned) replaces the item at index. */
static void
replace_item (NapkinHistory  *history,
              NapkinItemKind  kind,
              guint           index,
              const char     *label,
              gpointer        changed)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  NapkinCommand *command = napkin_command_new (label);

  napkin_command_add (command, kind, index, napkin_diagram_get_item (diagram, kind, index), changed);
  napkin_item_free (kind, changed);
  push (history, command);
}

gboolean
napkin_edit_add_node (NapkinHistory     *history,
                      const NapkinNode  *node,
                      GError           **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  NapkinCommand *command;

  if (!check_node_fields (diagram, node, error))
    return FALSE;
  if (napkin_diagram_find_node (diagram, node->id) >= 0)
    return refuse (error, "an operation “%s” already exists", node->id);
  if (napkin_diagram_n_nodes (diagram) >= NAPKIN_MAX_NODES)
    return refuse (error, "at most %d operations", NAPKIN_MAX_NODES);

  command = napkin_command_new ("Add operation");
  napkin_command_add (command, NAPKIN_ITEM_NODE, napkin_diagram_n_nodes (diagram), NULL, node);
  push (history, command);
  return TRUE;
}

/* Removal entries are added from the highest index down so that each recorded
 * index is still right when the command runs forwards. */
static void
remove_wires_of (NapkinDiagram *diagram,
                 NapkinCommand *command,
                 const char    *id)
{
  for (guint w = napkin_diagram_n_wires (diagram); w > 0; w--)
    {
      const NapkinWire *wire = napkin_diagram_wire (diagram, w - 1);

      if (g_strcmp0 (wire->from, id) == 0 || g_strcmp0 (wire->to, id) == 0)
        napkin_command_add (command, NAPKIN_ITEM_WIRE, w - 1, wire, NULL);
    }
}

gboolean
napkin_edit_remove_node (NapkinHistory  *history,
                         const char     *id,
                         GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  NapkinCommand *command;
  int index;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_NODE, id, &index, error))
    return FALSE;

  command = napkin_command_new ("Delete operation");
  remove_wires_of (diagram, command, id);

  /* Regions lose the node; a region left empty goes too. */
  for (guint r = napkin_diagram_n_regions (diagram); r > 0; r--)
    {
      const NapkinRegion *region = napkin_diagram_region (diagram, r - 1);
      NapkinRegion *copy;

      if (!napkin_region_has_node (region, id))
        continue;
      if (region->nodes->len == 1)
        {
          napkin_command_add (command, NAPKIN_ITEM_REGION, r - 1, region, NULL);
          continue;
        }
      copy = napkin_item_copy (NAPKIN_ITEM_REGION, region);
      napkin_region_remove_node (copy, id);
      napkin_command_add (command, NAPKIN_ITEM_REGION, r - 1, region, copy);
      napkin_item_free (NAPKIN_ITEM_REGION, copy);
    }

  /* and so does the gpus region */
  if (napkin_diagram_get_gpus (diagram) != NULL
      && napkin_region_has_node (napkin_diagram_get_gpus (diagram)->region, id))
    {
      const NapkinGpusRegion *gpus = napkin_diagram_get_gpus (diagram);

      if (gpus->region->nodes->len == 1)
        napkin_command_add_gpus (command, gpus, NULL);
      else
        {
          g_autoptr(NapkinGpusRegion) copy = napkin_gpus_region_copy (gpus, TRUE);

          napkin_region_remove_node (copy->region, id);
          napkin_command_add_gpus (command, gpus, copy);
        }
    }

  napkin_command_add (command, NAPKIN_ITEM_NODE, index, napkin_diagram_node (diagram, index), NULL);
  push (history, command);
  return TRUE;
}

gboolean
napkin_edit_move_node (NapkinHistory  *history,
                       const char     *id,
                       double          x,
                       double          y,
                       GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  const NapkinNode *node;
  NapkinNode *moved;
  int index;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_NODE, id, &index, error))
    return FALSE;
  if (!isfinite (x) || !isfinite (y) || fabs (x) > 1e9 || fabs (y) > 1e9)
    return refuse (error, "position out of range");

  node = napkin_diagram_node (diagram, index);
  if (node->x == x && node->y == y)
    return TRUE;

  moved = napkin_item_copy (NAPKIN_ITEM_NODE, node);
  moved->x = x;
  moved->y = y;
  replace_item (history, NAPKIN_ITEM_NODE, index, "Move", moved);
  return TRUE;
}

gboolean
napkin_edit_update_node (NapkinHistory     *history,
                         const NapkinNode  *node,
                         GError           **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  const NapkinNode *old;
  NapkinCommand *command;
  int index;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_NODE, node->id, &index, error)
      || !check_node_fields (diagram, node, error))
    return FALSE;

  old = napkin_diagram_node (diagram, index);
  command = napkin_command_new ("Change operation");

  /* Fewer inputs than before (e.g. a binary map made unary): drop orphaned wires. */
  for (guint w = napkin_diagram_n_wires (diagram); w > 0; w--)
    {
      const NapkinWire *wire = napkin_diagram_wire (diagram, w - 1);

      if (g_strcmp0 (wire->to, node->id) == 0 && wire->port >= napkin_op_n_inputs (node))
        napkin_command_add (command, NAPKIN_ITEM_WIRE, w - 1, wire, NULL);
      else if (g_strcmp0 (wire->from, node->id) == 0 && node->kind == NAPKIN_OP_OUTPUT)
        napkin_command_add (command, NAPKIN_ITEM_WIRE, w - 1, wire, NULL);
    }
  napkin_command_add (command, NAPKIN_ITEM_NODE, index, old, node);
  push (history, command);
  return TRUE;
}

gboolean
napkin_edit_connect (NapkinHistory  *history,
                     const char     *from,
                     const char     *to,
                     guint           port,
                     GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  NapkinCommand *command;
  NapkinWire wire = { (char *) from, (char *) to, port, NULL };
  int f, t, existing;
  const NapkinNode *target;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_NODE, from, &f, error)
      || !find_or_refuse (diagram, NAPKIN_ITEM_NODE, to, &t, error))
    return FALSE;

  target = napkin_diagram_node (diagram, t);
  if (port >= napkin_op_n_inputs (target))
    return refuse (error, "“%s” has no input %u", to, port);
  if (napkin_diagram_node (diagram, f)->kind == NAPKIN_OP_OUTPUT)
    return refuse (error, "“%s” is an output: nothing can be wired from it", from);
  if (f == t)
    return refuse (error, "an operation cannot feed itself");

  existing = napkin_diagram_wire_for_port (diagram, t, port);
  command = napkin_command_new ("Connect");
  if (existing >= 0)
    napkin_command_add (command, NAPKIN_ITEM_WIRE, existing, napkin_diagram_wire (diagram, existing), &wire);
  else
    napkin_command_add (command, NAPKIN_ITEM_WIRE, napkin_diagram_n_wires (diagram), NULL, &wire);
  push (history, command);
  return TRUE;
}

gboolean
napkin_edit_disconnect (NapkinHistory  *history,
                        const char     *to,
                        guint           port,
                        GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  NapkinCommand *command;
  int t, w;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_NODE, to, &t, error))
    return FALSE;
  w = napkin_diagram_wire_for_port (diagram, t, port);
  if (w < 0)
    return refuse (error, "input %u of “%s” is not connected", port, to);

  command = napkin_command_new ("Disconnect");
  napkin_command_add (command, NAPKIN_ITEM_WIRE, w, napkin_diagram_wire (diagram, w), NULL);
  push (history, command);
  return TRUE;
}

gboolean
napkin_edit_add_axis (NapkinHistory  *history,
                      const char     *name,
                      gint64          size,
                      GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  NapkinAxis axis = { (char *) name, size, NULL };
  NapkinCommand *command;

  if (!napkin_name_is_valid (name))
    return refuse (error, "“%s” is not a name: use letters, digits and _", name ? name : "");
  if (napkin_diagram_find_axis (diagram, name) >= 0)
    return refuse (error, "an axis “%s” already exists", name);
  if (!check_size (size, "axis size", error))
    return FALSE;
  if (napkin_diagram_n_axes (diagram) >= NAPKIN_MAX_AXES)
    return refuse (error, "at most %d axes", NAPKIN_MAX_AXES);  /* else the file would not load */

  command = napkin_command_new ("Add axis");
  napkin_command_add (command, NAPKIN_ITEM_AXIS, napkin_diagram_n_axes (diagram), NULL, &axis);
  push (history, command);
  return TRUE;
}

gboolean
napkin_edit_set_axis_size (NapkinHistory  *history,
                           const char     *name,
                           gint64          size,
                           GError        **error)
{
  return napkin_edit_set_axis_size_noting (history, name, size, NULL, error);
}

gboolean
napkin_edit_set_axis_size_noting (NapkinHistory  *history,
                                  const char     *name,
                                  gint64          size,
                                  char          **note,
                                  GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  g_autoptr(NapkinDiagram) resized = NULL;
  g_autoptr(GString) notes = g_string_new (NULL);
  g_autofree char *spec = NULL;
  const NapkinAxis *axis;
  NapkinAxis *changed;
  NapkinCommand *command;
  int index;

  if (note != NULL)
    *note = NULL;
  if (!find_or_refuse (diagram, NAPKIN_ITEM_AXIS, name, &index, error)
      || !check_size (size, "axis size", error))
    return FALSE;

  axis = napkin_diagram_axis (diagram, index);
  if (axis->size == size)
    return TRUE;

  changed = napkin_item_copy (NAPKIN_ITEM_AXIS, axis);
  changed->size = size;
  command = napkin_command_new ("Set axis size");
  napkin_command_add (command, NAPKIN_ITEM_AXIS, index, axis, changed);
  napkin_item_free (NAPKIN_ITEM_AXIS, changed);
  /* the regions' tiles against the new size, in the same step: a resized diagram is
   * re-tiled where a tile no longer fits, and says so (docs/editor.md) */
  resized = napkin_diagram_copy (diagram);
  spec = g_strdup_printf ("%s=%" G_GINT64_FORMAT, name, size);
  if (napkin_diagram_override_axis (resized, spec, NULL))
    for (guint r = 0; r < napkin_diagram_n_regions (diagram); r++)
      {
        NapkinRegion *fitted = napkin_region_refit (resized, napkin_diagram_region (diagram, r), notes);

        if (fitted == NULL)
          continue;
        napkin_command_add (command, NAPKIN_ITEM_REGION, r, napkin_diagram_region (diagram, r), fitted);
        napkin_item_free (NAPKIN_ITEM_REGION, fitted);
      }
  push (history, command);
  if (note != NULL && notes->len > 0)
    *note = g_strdup (notes->str);
  return TRUE;
}

/* Does an expression of axis sizes read `name`? */
static gboolean
expr_uses (const char *text,
           const char *name)
{
  g_autoptr(NapkinExpr) expr = text ? napkin_expr_parse (text, NULL) : NULL;
  g_auto(GStrv) names = expr ? napkin_expr_names (expr) : NULL;

  return names != NULL && g_strv_contains ((const char *const *) names, name);
}

gboolean
napkin_edit_remove_axis (NapkinHistory  *history,
                         const char     *name,
                         GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  NapkinCommand *command;
  int index;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_AXIS, name, &index, error))
    return FALSE;
  for (guint t = 0; t < napkin_diagram_n_tensors (diagram); t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (diagram, t);

      if (tensor->axes && g_strv_contains ((const char *const *) tensor->axes, name))
        return refuse (error, "axis “%s” is used by tensor %s: remove it from the tensor first", name, tensor->name);
    }
  for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
    {
      const NapkinNode *node = napkin_diagram_node (diagram, n);

      if ((node->out && g_strv_contains ((const char *const *) node->out, name)) || g_strcmp0 (node->axis, name) == 0
          || g_strcmp0 (node->rows, name) == 0 || expr_uses (node->alpha_expr, name))
        return refuse (error, "axis “%s” is used by operation “%s”: change the operation first", name, node->id);
    }

  command = napkin_command_new ("Delete axis");
  for (guint r = napkin_diagram_n_regions (diagram); r > 0; r--)
    {
      const NapkinRegion *region = napkin_diagram_region (diagram, r - 1);
      NapkinRegion *copy;
      gboolean marked = FALSE;

      for (guint m = 0; m < region->marks->len; m++)
        marked |= g_strcmp0 (g_array_index (region->marks, NapkinMark, m).axis, name) == 0;
      if (!marked)
        continue;
      copy = napkin_item_copy (NAPKIN_ITEM_REGION, region);
      for (guint m = copy->marks->len; m > 0; m--)
        if (g_strcmp0 (g_array_index (copy->marks, NapkinMark, m - 1).axis, name) == 0)
          {
            g_free (g_array_index (copy->marks, NapkinMark, m - 1).axis);   /* the copy's own string */
            g_array_remove_index (copy->marks, m - 1);
          }
      napkin_command_add (command, NAPKIN_ITEM_REGION, r - 1, region, copy);
      napkin_item_free (NAPKIN_ITEM_REGION, copy);
    }
  if (napkin_diagram_get_gpus (diagram) != NULL)
    {
      const NapkinGpusRegion *gpus = napkin_diagram_get_gpus (diagram);
      g_autoptr(NapkinGpusRegion) copy = napkin_gpus_region_copy (gpus, TRUE);
      NapkinRegion *region = copy->region;
      gboolean changed = FALSE;

      for (guint m = region->marks->len; m > 0; m--)
        if (g_strcmp0 (g_array_index (region->marks, NapkinMark, m - 1).axis, name) == 0)
          {
            g_free (g_array_index (region->marks, NapkinMark, m - 1).axis);
            g_array_remove_index (region->marks, m - 1);
            changed = TRUE;
          }
      if (g_strcmp0 (copy->chunk_axis, name) == 0)
        {
          g_clear_pointer (&copy->chunk_axis, g_free);
          copy->chunks = 0;
          changed = TRUE;
        }
      if (changed)
        napkin_command_add_gpus (command, gpus, copy);
    }
  napkin_command_add (command, NAPKIN_ITEM_AXIS, index, napkin_diagram_axis (diagram, index), NULL);
  push (history, command);
  return TRUE;
}

gboolean
napkin_edit_rename_tensor (NapkinHistory  *history,
                           const char     *name,
                           const char     *new_name,
                           GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  const NapkinTensor *tensor;
  NapkinTensor *renamed;
  NapkinCommand *command;
  int index;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_TENSOR, name, &index, error))
    return FALSE;
  if (g_strcmp0 (name, new_name) == 0)
    return TRUE;
  if (!napkin_name_is_valid (new_name))
    return refuse (error, "“%s” is not a name: use letters, digits and _, starting with a letter or _",
                   new_name ? new_name : "");
  if (napkin_diagram_find_tensor (diagram, new_name) >= 0)
    return refuse (error, "a tensor “%s” already exists", new_name);

  tensor = napkin_diagram_tensor (diagram, index);
  command = napkin_command_new ("Rename tensor");
  renamed = napkin_item_copy (NAPKIN_ITEM_TENSOR, tensor);
  g_free (renamed->name);
  renamed->name = g_strdup (new_name);
  napkin_command_add (command, NAPKIN_ITEM_TENSOR, index, tensor, renamed);
  napkin_item_free (NAPKIN_ITEM_TENSOR, renamed);
  for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
    {
      const NapkinNode *node = napkin_diagram_node (diagram, n);
      NapkinNode *changed;

      if (g_strcmp0 (node->tensor, name) != 0)
        continue;
      changed = napkin_item_copy (NAPKIN_ITEM_NODE, node);
      g_free (changed->tensor);
      changed->tensor = g_strdup (new_name);
      if (changed->label == NULL || g_strcmp0 (changed->label, name) == 0)
        {
          g_free (changed->label);
          changed->label = g_strdup (new_name);
        }
      napkin_command_add (command, NAPKIN_ITEM_NODE, n, node, changed);
      napkin_item_free (NAPKIN_ITEM_NODE, changed);
    }
  if (napkin_diagram_get_gpus (diagram) != NULL
      && napkin_gpus_region_placement (napkin_diagram_get_gpus (diagram), name) != NULL)
    {
      const NapkinGpusRegion *gpus = napkin_diagram_get_gpus (diagram);
      g_autoptr(NapkinGpusRegion) copy = napkin_gpus_region_copy (gpus, TRUE);

      for (guint i = 0; i < copy->placements->len; i++)
        {
          NapkinPlacement *p = &g_array_index (copy->placements, NapkinPlacement, i);

          if (g_strcmp0 (p->tensor, name) == 0)
            {
              g_free (p->tensor);
              p->tensor = g_strdup (new_name);
            }
        }
      napkin_command_add_gpus (command, gpus, copy);
    }
  push (history, command);
  return TRUE;
}

gboolean
napkin_edit_add_tensor (NapkinHistory       *history,
                        const NapkinTensor  *tensor,
                        GError             **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  NapkinCommand *command;

  if (!napkin_name_is_valid (tensor->name))
    return refuse (error, "“%s” is not a name: use letters, digits and _", tensor->name ? tensor->name : "");
  if (napkin_diagram_find_tensor (diagram, tensor->name) >= 0)
    return refuse (error, "a tensor “%s” already exists", tensor->name);
  if ((guint) tensor->dtype >= NAPKIN_N_DTYPES || !check_axes (diagram, tensor->axes, error))
    return tensor->dtype < NAPKIN_N_DTYPES ? FALSE : refuse (error, "unknown element type");

  command = napkin_command_new ("Add tensor");
  napkin_command_add (command, NAPKIN_ITEM_TENSOR, napkin_diagram_n_tensors (diagram), NULL, tensor);
  push (history, command);
  return TRUE;
}

gboolean
napkin_edit_set_tensor_dtype (NapkinHistory  *history,
                              const char     *name,
                              NapkinDtype     dtype,
                              GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  const NapkinTensor *tensor;
  NapkinTensor *changed;
  int index;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_TENSOR, name, &index, error))
    return FALSE;
  if ((guint) dtype >= NAPKIN_N_DTYPES)
    return refuse (error, "unknown element type");

  tensor = napkin_diagram_tensor (diagram, index);
  if (tensor->dtype == dtype)
    return TRUE;

  changed = napkin_item_copy (NAPKIN_ITEM_TENSOR, tensor);
  changed->dtype = dtype;
  replace_item (history, NAPKIN_ITEM_TENSOR, index, "Change element type", changed);
  return TRUE;
}

gboolean
napkin_edit_set_node_dtype (NapkinHistory  *history,
                            const char     *id,
                            gboolean        has_dtype,
                            NapkinDtype     dtype,
                            GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  const NapkinNode *node;
  NapkinNode *changed;
  int index;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_NODE, id, &index, error))
    return FALSE;
  if (has_dtype && (guint) dtype >= NAPKIN_N_DTYPES)
    return refuse (error, "unknown element type");

  node = napkin_diagram_node (diagram, index);
  if (node->has_dtype == has_dtype && (!has_dtype || node->dtype == dtype))
    return TRUE;

  changed = napkin_item_copy (NAPKIN_ITEM_NODE, node);
  changed->has_dtype = has_dtype;
  changed->dtype = has_dtype ? dtype : 0;
  replace_item (history, NAPKIN_ITEM_NODE, index, "Change element type", changed);
  return TRUE;
}

static gboolean
check_region_fields (NapkinDiagram       *diagram,
                     const NapkinRegion  *region,
                     GError             **error)
{
  if (!napkin_name_is_valid (region->name))
    return refuse (error, "“%s” is not a name: use letters, digits and _", region->name ? region->name : "");
  if ((guint) region->level >= NAPKIN_N_LEVELS || region->level == NAPKIN_LEVEL_HBM)
    return refuse (error, "a region is at l2, smem or registers");
  if (region->stages < 1 || region->stages > 8)
    return refuse (error, "stages must be from 1 to 8");
  if (region->threads > 1024)
    return refuse (error, "threads must be from 1 to 1024 (or 0: chosen by the model)");
  for (guint i = 0; i < region->nodes->len; i++)
    if (napkin_diagram_find_node (diagram, g_ptr_array_index (region->nodes, i)) < 0)
      return refuse (error, "no operation “%s”", (const char *) g_ptr_array_index (region->nodes, i));
  for (guint i = 0; i < region->marks->len; i++)
    {
      const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, i);

      if (napkin_diagram_find_axis (diagram, mark->axis) < 0)
        return refuse (error, "no axis “%s”", mark->axis);
      if (mark->kind != NAPKIN_MARK_WHOLE && !check_size (mark->tile, "tile size", error))
        return FALSE;
    }
  return TRUE;
}

gboolean
napkin_edit_add_region (NapkinHistory       *history,
                        const NapkinRegion  *region,
                        GError             **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  NapkinCommand *command;

  if (!check_region_fields (diagram, region, error))
    return FALSE;
  if (napkin_diagram_find_region (diagram, region->name) >= 0
      || (napkin_diagram_get_gpus (diagram) != NULL
          && g_strcmp0 (napkin_diagram_get_gpus (diagram)->region->name, region->name) == 0))
    return refuse (error, "a region “%s” already exists", region->name);
  if (napkin_diagram_n_regions (diagram) >= NAPKIN_MAX_REGIONS)
    return refuse (error, "at most %d regions", NAPKIN_MAX_REGIONS);  /* else the file would not load */

  command = napkin_command_new ("Add region");
  napkin_command_add (command, NAPKIN_ITEM_REGION, napkin_diagram_n_regions (diagram), NULL, region);
  push (history, command);
  return TRUE;
}

gboolean
napkin_edit_remove_region (NapkinHistory  *history,
                           const char     *name,
                           GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  NapkinCommand *command;
  int index;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_REGION, name, &index, error))
    return FALSE;

  command = napkin_command_new ("Delete region");
  napkin_command_add (command, NAPKIN_ITEM_REGION, index, napkin_diagram_region (diagram, index), NULL);
  push (history, command);
  return TRUE;
}

/* Changes one region through a callback on a copy; records only real changes. */
static gboolean
change_region (NapkinHistory  *history,
               const char     *name,
               const char     *label,
               gboolean      (*change) (NapkinRegion *, gconstpointer, GError **),
               gconstpointer   data,
               GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  NapkinRegion *changed;
  NapkinCommand *command;
  int index;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_REGION, name, &index, error))
    return FALSE;

  changed = napkin_item_copy (NAPKIN_ITEM_REGION, napkin_diagram_region (diagram, index));
  if (!change (changed, data, error) || !check_region_fields (diagram, changed, error))
    {
      napkin_item_free (NAPKIN_ITEM_REGION, changed);
      return FALSE;
    }

  command = napkin_command_new (label);
  napkin_command_add (command, NAPKIN_ITEM_REGION, index, napkin_diagram_region (diagram, index), changed);
  napkin_item_free (NAPKIN_ITEM_REGION, changed);
  push (history, command);
  return TRUE;
}

static gboolean
set_rect (NapkinRegion  *region,
          gconstpointer  data,
          GError       **error)
{
  const double *r = data;

  for (guint i = 0; i < 4; i++)
    if (!isfinite (r[i]) || fabs (r[i]) > 1e9)
      return refuse (error, "region rectangle out of range");
  if (r[2] < 0 || r[3] < 0)
    return refuse (error, "width and height must not be negative");

  region->has_rect = TRUE;
  region->x = r[0];
  region->y = r[1];
  region->width = r[2];
  region->height = r[3];
  return TRUE;
}

gboolean
napkin_edit_set_region_rect (NapkinHistory  *history,
                             const char     *name,
                             double          x,
                             double          y,
                             double          width,
                             double          height,
                             GError        **error)
{
  double r[4] = { x, y, width, height };

  return change_region (history, name, "Resize region", set_rect, r, error);
}

static gboolean
set_nodes (NapkinRegion  *region,
           gconstpointer  data,
           GError       **error)
{
  const char *const *ids = data;

  napkin_region_clear_nodes (region);
  for (guint i = 0; ids && ids[i]; i++)
    {
      if (!napkin_region_add_node (region, ids[i]))
        return refuse (error, "operation “%s” is listed twice", ids[i]);
    }
  return TRUE;
}

gboolean
napkin_edit_set_region_nodes (NapkinHistory      *history,
                              const char         *name,
                              const char *const  *ids,
                              GError            **error)
{
  return change_region (history, name, "Change region", set_nodes, ids, error);
}

static gboolean
set_level (NapkinRegion  *region,
           gconstpointer  data,
           GError       **error)
{
  region->level = *(const NapkinLevel *) data;
  return TRUE;
}

gboolean
napkin_edit_set_region_level (NapkinHistory  *history,
                              const char     *name,
                              NapkinLevel     level,
                              GError        **error)
{
  return change_region (history, name, "Change level", set_level, &level, error);
}

static gboolean
set_stages (NapkinRegion  *region,
            gconstpointer  data,
            GError       **error)
{
  region->stages = *(const guint *) data;
  return TRUE;
}

static gboolean
set_threads (NapkinRegion  *region,
             gconstpointer  data,
             GError       **error)
{
  region->threads = *(const guint *) data;
  return TRUE;
}

gboolean
napkin_edit_set_region_threads (NapkinHistory  *history,
                                const char     *name,
                                guint           threads,
                                GError        **error)
{
  return change_region (history, name, "Change threads", set_threads, &threads, error);
}

gboolean
napkin_edit_set_region_stages (NapkinHistory  *history,
                               const char     *name,
                               guint           stages,
                               GError        **error)
{
  return change_region (history, name, "Change stages", set_stages, &stages, error);
}

typedef struct
{
  const char     *axis;
  NapkinMarkKind  kind;
  gint64          tile;
} MarkArgs;

static gboolean
set_mark (NapkinRegion  *region,
          gconstpointer  data,
          GError       **error)
{
  const MarkArgs *args = data;

  if ((guint) args->kind >= NAPKIN_N_MARKS)
    return refuse (error, "unknown mark");
  if (args->kind != NAPKIN_MARK_WHOLE && !check_size (args->tile, "tile size", error))
    return FALSE;
  napkin_region_set_mark (region, args->axis, args->kind, args->kind == NAPKIN_MARK_WHOLE ? 0 : args->tile);
  return TRUE;
}

gboolean
napkin_edit_set_mark (NapkinHistory  *history,
                      const char     *region,
                      const char     *axis,
                      NapkinMarkKind  kind,
                      gint64          tile,
                      GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  MarkArgs args = { axis, kind, tile };
  int a;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_AXIS, axis, &a, error))
    return FALSE;
  return change_region (history, region, "Change mark", set_mark, &args, error);
}

/* For the editor's inspector (docs/editor.md): a device tensor's axes, in memory order. */
gboolean
napkin_edit_set_tensor_axes (NapkinHistory      *history,
                             const char         *name,
                             const char *const  *axes,
                             GError            **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  const NapkinTensor *tensor;
  NapkinTensor *changed;
  int index;

  if (!find_or_refuse (diagram, NAPKIN_ITEM_TENSOR, name, &index, error)
      || !check_axes (diagram, (char **) axes, error))
    return FALSE;
  if (axes == NULL || axes[0] == NULL)
    return refuse (error, "tensor “%s” needs at least one axis", name);

  tensor = napkin_diagram_tensor (diagram, index);
  if (g_strv_equal ((const char *const *) tensor->axes, axes))
    return TRUE;

  changed = napkin_item_copy (NAPKIN_ITEM_TENSOR, tensor);
  g_strfreev (changed->axes);
  changed->axes = g_strdupv ((char **) axes);
  replace_item (history, NAPKIN_ITEM_TENSOR, index, "Change tensor axes", changed);
  return TRUE;
}

/* ---- the gpus region (docs/multi-gpu.md) ------------------------------------------- */

/* What the file format refuses, refused before it is recorded; whether the diagram can
 * run on N GPUs (a divisible axis, operations that keep the parallel axis) is the
 * shard plan's to say, as the model reports any problem of a drawing. */
static gboolean
check_gpus_fields (NapkinDiagram          *diagram,
                   const NapkinGpusRegion *gpus,
                   GError                **error)
{
  const NapkinRegion *region = gpus->region;
  guint parallel = 0;

  if (!napkin_name_is_valid (region->name))
    return refuse (error, "“%s” is not a name: use letters, digits and _", region->name ? region->name : "");
  if (napkin_diagram_find_region (diagram, region->name) >= 0)
    return refuse (error, "a region “%s” already exists", region->name);
  if (region->nodes->len == 0)
    return refuse (error, "a gpus region holds at least one operation");
  for (guint i = 0; i < region->nodes->len; i++)
    {
      const char *id = g_ptr_array_index (region->nodes, i);
      int n = napkin_diagram_find_node (diagram, id);

      if (n < 0)
        return refuse (error, "no operation “%s”", id);
      if (napkin_diagram_node (diagram, n)->kind == NAPKIN_OP_INPUT
          || napkin_diagram_node (diagram, n)->kind == NAPKIN_OP_OUTPUT)
        return refuse (error, "inputs and outputs stay in device memory: “%s” cannot be in the gpus region", id);
    }
  for (guint i = 0; i < region->marks->len; i++)
    {
      const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, i);

      if (napkin_diagram_find_axis (diagram, mark->axis) < 0)
        return refuse (error, "no axis “%s”", mark->axis);
      if (mark->kind == NAPKIN_MARK_STREAM)
        return refuse (error, "a mark of a gpus region is parallel (across every GPU) or whole");
      parallel += mark->kind == NAPKIN_MARK_PARALLEL;
    }
  if (parallel > 1)
    return refuse (error, "a gpus region splits one axis across the GPUs");
  if (gpus->gpus > 1024)
    return refuse (error, "the GPU count must be from 1 to 1024");
  for (guint i = 0; i < gpus->placements->len; i++)
    {
      const NapkinPlacement *p = &g_array_index (gpus->placements, NapkinPlacement, i);
      int t = napkin_diagram_find_tensor (diagram, p->tensor);
      const NapkinTensor *tensor;

      if (t < 0)
        return refuse (error, "no tensor “%s”", p->tensor ? p->tensor : "");
      tensor = napkin_diagram_tensor (diagram, t);
      if (p->split != NULL
          && (tensor->axes == NULL || !g_strv_contains ((const char *const *) tensor->axes, p->split)))
        return refuse (error, "“%s” is not an axis of tensor “%s”", p->split, p->tensor);
      for (guint j = 0; j < i; j++)
        if (g_strcmp0 (g_array_index (gpus->placements, NapkinPlacement, j).tensor, p->tensor) == 0)
          return refuse (error, "tensor “%s” is placed twice", p->tensor);
    }
  if (gpus->chunks != 0 && (gpus->chunks < 2 || gpus->chunks > 64))
    return refuse (error, "overlap chunks must be from 2 to 64");
  if (gpus->chunks != 0 && napkin_diagram_find_axis (diagram, gpus->chunk_axis) < 0)
    return refuse (error, "no axis “%s”", gpus->chunk_axis ? gpus->chunk_axis : "");
  if (region->has_rect)
    {
      const double r[4] = { region->x, region->y, region->width, region->height };

      for (guint i = 0; i < 4; i++)
        if (!isfinite (r[i]) || fabs (r[i]) > 1e9)
          return refuse (error, "region rectangle out of range");
      if (r[2] < 0 || r[3] < 0)
        return refuse (error, "width and height must not be negative");
    }
  return TRUE;
}

/* Whether an edit would change nothing (then nothing is recorded). */
static gboolean
gpus_equal (const NapkinGpusRegion *a,
            const NapkinGpusRegion *b)
{
  const NapkinRegion *ra, *rb;

  if (a == NULL || b == NULL)
    return a == b;
  ra = a->region;
  rb = b->region;
  if (g_strcmp0 (ra->name, rb->name) != 0 || a->gpus != b->gpus || a->chunks != b->chunks
      || a->comm_sms != b->comm_sms || g_strcmp0 (a->chunk_axis, b->chunk_axis) != 0 || ra->has_rect != rb->has_rect
      || (ra->has_rect && (ra->x != rb->x || ra->y != rb->y || ra->width != rb->width || ra->height != rb->height))
      || ra->nodes->len != rb->nodes->len || ra->marks->len != rb->marks->len
      || a->placements->len != b->placements->len)
    return FALSE;
  for (guint i = 0; i < ra->nodes->len; i++)
    if (g_strcmp0 (g_ptr_array_index (ra->nodes, i), g_ptr_array_index (rb->nodes, i)) != 0)
      return FALSE;
  for (guint i = 0; i < ra->marks->len; i++)
    {
      const NapkinMark *ma = &g_array_index (ra->marks, NapkinMark, i);
      const NapkinMark *mb = &g_array_index (rb->marks, NapkinMark, i);

      if (g_strcmp0 (ma->axis, mb->axis) != 0 || ma->kind != mb->kind)
        return FALSE;
    }
  for (guint i = 0; i < a->placements->len; i++)
    {
      const NapkinPlacement *pa = &g_array_index (a->placements, NapkinPlacement, i);
      const NapkinPlacement *pb = &g_array_index (b->placements, NapkinPlacement, i);

      if (g_strcmp0 (pa->tensor, pb->tensor) != 0 || g_strcmp0 (pa->split, pb->split) != 0)
        return FALSE;
    }
  return TRUE;
}

gboolean
napkin_edit_set_gpus (NapkinHistory          *history,
                      const NapkinGpusRegion *gpus,
                      const char             *label,
                      GError                **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  const NapkinGpusRegion *old = napkin_diagram_get_gpus (diagram);
  NapkinCommand *command;

  if (gpus == NULL && old == NULL)
    return refuse (error, "the diagram has no gpus region");
  if (gpus != NULL && !check_gpus_fields (diagram, gpus, error))
    return FALSE;
  if (gpus_equal (old, gpus))
    return TRUE;

  command = napkin_command_new (label ? label : gpus == NULL ? "Delete GPUs region" : "Change GPUs region");
  napkin_command_add_gpus (command, old, gpus);
  push (history, command);
  return TRUE;
}

/* ---- relabeling like another diagram ---------------------------------------------- */

static gboolean
differs (const NapkinRegion *a,
         const NapkinRegion *b,
         const char         *axis)
{
  gint64 ta = 0, tb = 0;
  NapkinMarkKind ka = napkin_region_mark (a, axis, &ta);
  NapkinMarkKind kb = napkin_region_mark (b, axis, &tb);

  return ka != kb || (ka != NAPKIN_MARK_WHOLE && ta != tb);
}

gboolean
napkin_edit_relabel_like (NapkinHistory  *history,
                          NapkinDiagram  *target,
                          GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);

  /* regions the target lacks go (a derivation that lets the plan fuse what they kept apart) */
  for (int r = (int) napkin_diagram_n_regions (diagram) - 1; r >= 0; r--)
    {
      g_autofree char *name = g_strdup (napkin_diagram_region (diagram, (guint) r)->name);

      if (napkin_diagram_find_region (target, name) < 0 && !napkin_edit_remove_region (history, name, error))
        return FALSE;
    }
  for (guint r = 0; r < napkin_diagram_n_regions (target); r++)
    {
      const NapkinRegion *want = napkin_diagram_region (target, r);
      int index = napkin_diagram_find_region (diagram, want->name);
      const NapkinRegion *have;

      if (index < 0)
        {
          if (!napkin_edit_add_region (history, want, error))
            return FALSE;
          continue;
        }
      have = napkin_diagram_region (diagram, index);
      if (have->level != want->level && !napkin_edit_set_region_level (history, want->name, want->level, error))
        return FALSE;
      have = napkin_diagram_region (diagram, napkin_diagram_find_region (diagram, want->name));
      if (have->stages != want->stages && !napkin_edit_set_region_stages (history, want->name, want->stages, error))
        return FALSE;
      have = napkin_diagram_region (diagram, napkin_diagram_find_region (diagram, want->name));
      if (have->threads != want->threads
          && !napkin_edit_set_region_threads (history, want->name, want->threads, error))
        return FALSE;
      /* every axis marked on either side (an edit replaces the region: look it up each time) */
      {
        g_autoptr(GPtrArray) axes = g_ptr_array_new_with_free_func (g_free);

        for (guint m = 0; m < want->marks->len; m++)
          g_ptr_array_add (axes, g_strdup (g_array_index (want->marks, NapkinMark, m).axis));
        for (guint m = 0; m < have->marks->len; m++)
          g_ptr_array_add (axes, g_strdup (g_array_index (have->marks, NapkinMark, m).axis));
        for (guint m = 0; m < axes->len; m++)
          {
            const char *axis = g_ptr_array_index (axes, m);
            NapkinMarkKind kind;
            gint64 tile = 0;

            have = napkin_diagram_region (diagram, napkin_diagram_find_region (diagram, want->name));
            if (!differs (have, want, axis))
              continue;
            kind = napkin_region_mark (want, axis, &tile);
            if (!napkin_edit_set_mark (history, want->name, axis, kind, tile, error))
              return FALSE;
          }
      }
    }
  return TRUE;
}
