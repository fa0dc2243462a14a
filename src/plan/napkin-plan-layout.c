/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plan"

#include "config.h"

#include <string.h>

#include "napkin-plan-private.h"

/* Roles and layout (docs/plan.md, "Roles and layout"): how a value lies in device memory
 * and which part each axis plays in a product. The partition, the GEMM, rows, element-wise
 * and attention recognisers all read a value's layout and a product's roles here. */

const NapkinTensor *
_napkin_plan_stored_tensor (NapkinDiagram *d,
                            int            node)
{
  const NapkinNode *n = napkin_diagram_node (d, node);
  guint n_consumers;
  const guint *consumers;

  if (n->kind == NAPKIN_OP_INPUT)
    return napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, n->tensor));
  consumers = napkin_diagram_consumers (d, node, &n_consumers);
  for (guint c = 0; c < n_consumers; c++)
    {
      const NapkinNode *cn = napkin_diagram_node (d, consumers[c]);

      if (cn->kind == NAPKIN_OP_OUTPUT)
        return napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, cn->tensor));
    }
  return NULL;
}

NapkinDtype
_napkin_plan_value_dtype (NapkinPlanner *p,
                          int            node)
{
  const NapkinTensor *t;

  if (p->options != NULL && p->options->has_dtype)
    return p->options->dtype;
  t = _napkin_plan_stored_tensor (p->d, node);
  return t != NULL ? t->dtype : _napkin_plan_dtype (p, node);
}

gboolean
_napkin_plan_value_layout (NapkinPlanner    *p,
                           int               node,
                           NapkinPlanLayout *l)
{
  const NapkinTensor *t = _napkin_plan_stored_tensor (p->d, node);

  memset (l, 0, sizeof *l);
  l->tensor = t;
  if (t != NULL)
    {
      for (guint i = 0; t->axes[i] != NULL && i < NAPKIN_MAX_RANK; i++)
        {
          int a = napkin_diagram_find_axis (p->d, t->axes[i]);

          if (a < 0)
            return FALSE;
          l->axes[l->n++] = a;
        }
      l->dtype = t->dtype;
    }
  else
    {
      const NapkinTensorType *type = napkin_diagram_node_type (p->d, node);

      if (type == NULL || !type->valid)
        return FALSE;
      l->n = type->n_axes;
      memcpy (l->axes, type->axes, sizeof (guint) * type->n_axes);
      l->dtype = type->dtype;
    }
  if (p->options != NULL && p->options->has_dtype)
    l->dtype = p->options->dtype;
  return TRUE;
}

int
_napkin_plan_axes_position (const guint *axes,
                            guint        n,
                            guint        axis)
{
  for (guint i = 0; i < n; i++)
    if (axes[i] == axis)
      return (int) i;
  return -1;
}

gint64
_napkin_plan_layout_stride (NapkinDiagram          *d,
                            const NapkinPlanLayout *l,
                            guint                   axis)
{
  gint64 s = 1;

  for (int i = (int) l->n - 1; i >= 0; i--)
    {
      if (l->axes[i] == axis)
        return s;
      s *= napkin_diagram_axis_size (d, l->axes[i]);
    }
  return 0;
}

int
_napkin_plan_layout_run (const NapkinPlanLayout *l,
                         const guint            *group,
                         guint                   n)
{
  int first;

  if (n == 0)
    return -2;
  first = _napkin_plan_axes_position (l->axes, l->n, group[0]);
  if (first < 0)
    return -1;
  for (guint i = 1; i < n; i++)
    if (_napkin_plan_axes_position (l->axes, l->n, group[i]) != first + (int) i)
      return -1;
  return first;
}

NapkinPlanRole
_napkin_plan_product_role (const NapkinTensorType *x,
                           const NapkinTensorType *y,
                           const NapkinTensorType *result,
                           guint                   axis)
{
  gboolean in_x = napkin_tensor_type_has_axis (x, axis), in_y = napkin_tensor_type_has_axis (y, axis);
  gboolean in_result = napkin_tensor_type_has_axis (result, axis);

  if (in_x && in_y)
    return in_result ? NAPKIN_PLAN_ROLE_BATCH : NAPKIN_PLAN_ROLE_CONTRACTED;
  if (in_x || in_y)
    return !in_result ? NAPKIN_PLAN_ROLE_SUMMED_ALONE : in_x ? NAPKIN_PLAN_ROLE_ROW : NAPKIN_PLAN_ROLE_COLUMN;
  return NAPKIN_PLAN_ROLE_NONE;
}
