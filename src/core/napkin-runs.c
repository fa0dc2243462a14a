/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include "napkin-runs.h"

json_object *
napkin_diagram_get_runs (NapkinDiagram *self)
{
  json_object *extra;
  json_object *runs;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);

  extra = napkin_diagram_get_extra (self);
  if (extra == NULL || !json_object_is_type (extra, json_type_object))
    return NULL;
  runs = json_object_object_get (extra, "runs");
  return json_object_is_type (runs, json_type_array) ? runs : NULL;
}

guint
napkin_diagram_n_runs (NapkinDiagram *self)
{
  json_object *runs = napkin_diagram_get_runs (self);

  return runs ? json_object_array_length (runs) : 0;
}

/* A new root extra with every key of the old one but "runs" (values shared). */
static json_object *
extra_without_runs (NapkinDiagram *self)
{
  json_object *old = napkin_diagram_get_extra (self);
  json_object *extra = json_object_new_object ();

  if (old != NULL && json_object_is_type (old, json_type_object))
    {
      json_object_object_foreach (old, key, value)
        if (g_strcmp0 (key, "runs") != 0)
          json_object_object_add (extra, key, json_object_get (value));
    }
  return extra;
}

void
napkin_diagram_add_run (NapkinDiagram *self,
                        json_object   *result)
{
  json_object *old_runs;
  json_object *runs;
  json_object *extra;
  guint n, first;

  g_return_if_fail (NAPKIN_IS_DIAGRAM (self));
  g_return_if_fail (json_object_is_type (result, json_type_object));

  old_runs = napkin_diagram_get_runs (self);
  n = old_runs ? json_object_array_length (old_runs) : 0;
  first = n + 1 > NAPKIN_RUNS_MAX ? n + 1 - NAPKIN_RUNS_MAX : 0;
  runs = json_object_new_array ();
  for (guint i = first; i < n; i++)
    json_object_array_add (runs, json_object_get (json_object_array_get_idx (old_runs, i)));
  json_object_array_add (runs, json_object_get (result));

  extra = extra_without_runs (self);
  json_object_object_add (extra, "runs", runs);
  napkin_diagram_set_extra (self, extra);
  json_object_put (extra);
}

void
napkin_diagram_clear_runs (NapkinDiagram *self)
{
  json_object *extra;

  g_return_if_fail (NAPKIN_IS_DIAGRAM (self));

  if (napkin_diagram_get_extra (self) == NULL)
    return;
  extra = extra_without_runs (self);
  napkin_diagram_set_extra (self, json_object_object_length (extra) > 0 ? extra : NULL);
  json_object_put (extra);
}
