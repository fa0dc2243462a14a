/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <stdio.h>

#include "napkin-cli.h"
#include "napkin-error.h"
#include "napkin-json-private.h"
#include "napkin-text.h"

static json_object *
flops_to_json (const NapkinFlops *flops)
{
  json_object *obj = json_object_new_object ();

  json_object_object_add (obj, "total", json_object_new_int64 (flops->tensor + flops->cuda + flops->sfu));
  json_object_object_add (obj, "tensor", json_object_new_int64 (flops->tensor));
  json_object_object_add (obj, "cuda", json_object_new_int64 (flops->cuda));
  json_object_object_add (obj, "sfu", json_object_new_int64 (flops->sfu));
  return obj;
}

static json_object *
type_to_json (NapkinDiagram          *diagram,
              const NapkinTensorType *type)
{
  json_object *obj = json_object_new_object ();
  json_object *axes = json_object_new_array ();
  gint64 elements = 0;

  for (guint i = 0; i < type->n_axes; i++)
    json_object_array_add (axes, json_object_new_string (napkin_diagram_axis (diagram, type->axes[i])->name));
  json_object_object_add (obj, "axes", axes);
  json_object_object_add (obj, "dtype", json_object_new_string (napkin_dtype_to_string (type->dtype)));
  napkin_diagram_type_elements (diagram, type, &elements);
  json_object_object_add (obj, "elements", json_object_new_int64 (elements));
  json_object_object_add (obj, "bytes", json_object_new_int64 (elements * napkin_dtype_bytes (type->dtype)));
  return obj;
}

static json_object *
info_to_json (NapkinDiagram *diagram,
              const char    *path)
{
  json_object *root = json_object_new_object ();
  json_object *array;
  NapkinFlops total;

  json_object_object_add (root, "file", json_object_new_string (path));
  if (napkin_diagram_get_title (diagram))
    json_object_object_add (root, "title", json_object_new_string (napkin_diagram_get_title (diagram)));

  array = json_object_new_array ();
  for (guint i = 0; i < napkin_diagram_n_axes (diagram); i++)
    {
      json_object *obj = json_object_new_object ();

      json_object_object_add (obj, "name", json_object_new_string (napkin_diagram_axis (diagram, i)->name));
      json_object_object_add (obj, "size", json_object_new_int64 (napkin_diagram_axis (diagram, i)->size));
      json_object_array_add (array, obj);
    }
  json_object_object_add (root, "axes", array);

  array = json_object_new_array ();
  for (guint i = 0; i < napkin_diagram_n_tensors (diagram); i++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (diagram, i);
      json_object *obj = json_object_new_object ();
      json_object *axes = json_object_new_array ();
      gint64 elements = 1;

      for (guint a = 0; tensor->axes[a]; a++)
        {
          json_object_array_add (axes, json_object_new_string (tensor->axes[a]));
          elements *= napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, tensor->axes[a]));
        }
      json_object_object_add (obj, "name", json_object_new_string (tensor->name));
      json_object_object_add (obj, "axes", axes);
      json_object_object_add (obj, "dtype", json_object_new_string (napkin_dtype_to_string (tensor->dtype)));
      json_object_object_add (obj, "elements", json_object_new_int64 (elements));
      json_object_object_add (obj, "bytes", json_object_new_int64 (elements * napkin_dtype_bytes (tensor->dtype)));
      json_object_array_add (array, obj);
    }
  json_object_object_add (root, "tensors", array);

  array = json_object_new_array ();
  for (guint i = 0; i < napkin_diagram_n_nodes (diagram); i++)
    {
      const NapkinNode *node = napkin_diagram_node (diagram, i);
      json_object *obj = json_object_new_object ();
      NapkinFlops flops;

      napkin_diagram_node_flops (diagram, i, &flops);
      json_object_object_add (obj, "id", json_object_new_string (node->id));
      json_object_object_add (obj, "kind", json_object_new_string (napkin_op_kind_to_string (node->kind)));
      if (node->label)
        json_object_object_add (obj, "label", json_object_new_string (node->label));
      json_object_object_add (obj, "output", type_to_json (diagram, napkin_diagram_node_type (diagram, i)));
      json_object_object_add (obj, "flops", flops_to_json (&flops));
      json_object_array_add (array, obj);
    }
  json_object_object_add (root, "operations", array);

  array = json_object_new_array ();
  for (guint i = 0; i < napkin_diagram_n_regions (diagram); i++)
    {
      const NapkinRegion *region = napkin_diagram_region (diagram, i);
      json_object *obj = json_object_new_object ();
      json_object *nodes = json_object_new_array ();
      json_object *marks = json_object_new_object ();

      json_object_object_add (obj, "name", json_object_new_string (region->name));
      json_object_object_add (obj, "level", json_object_new_string (napkin_level_to_string (region->level)));
      for (guint n = 0; n < region->nodes->len; n++)
        json_object_array_add (nodes, json_object_new_string (g_ptr_array_index (region->nodes, n)));
      json_object_object_add (obj, "nodes", nodes);
      for (guint m = 0; m < region->marks->len; m++)
        {
          const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, m);
          json_object *mo = json_object_new_object ();

          json_object_object_add (mo, "mark", json_object_new_string (napkin_mark_to_string (mark->kind)));
          if (mark->kind != NAPKIN_MARK_WHOLE)
            json_object_object_add (mo, "tile", json_object_new_int64 (mark->tile));
          json_object_object_add (marks, mark->axis, mo);
        }
      json_object_object_add (obj, "marks", marks);
      json_object_object_add (obj, "stages", json_object_new_int (region->stages));
      json_object_array_add (array, obj);
    }
  json_object_object_add (root, "regions", array);

  napkin_diagram_total_flops (diagram, &total);
  json_object_object_add (root, "flops", flops_to_json (&total));
  return root;
}

static void
print_text (NapkinDiagram *diagram,
            const char    *path)
{
  g_autofree char *title = napkin_text_shown (napkin_diagram_get_title (diagram), -1, 0);
  g_autofree char *shown_path = napkin_text_shown (path, -1, 0);
  NapkinFlops total;

  printf ("%s%s%s\n", shown_path, napkin_diagram_get_title (diagram) ? ": " : "", title);

  printf ("\nAxes\n");
  for (guint i = 0; i < napkin_diagram_n_axes (diagram); i++)
    printf ("  %-12s %" G_GINT64_FORMAT "\n", napkin_diagram_axis (diagram, i)->name,
            napkin_diagram_axis (diagram, i)->size);

  printf ("\nTensors in device memory\n");
  for (guint i = 0; i < napkin_diagram_n_tensors (diagram); i++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (diagram, i);
      g_autofree char *axes = g_strjoinv (",", tensor->axes);

      printf ("  %-12s [%s] %s\n", tensor->name, axes, napkin_dtype_to_string (tensor->dtype));
    }

  printf ("\nOperations\n");
  for (guint i = 0; i < napkin_diagram_n_nodes (diagram); i++)
    {
      const NapkinNode *node = napkin_diagram_node (diagram, i);
      g_autofree char *type = napkin_diagram_type_to_string (diagram, napkin_diagram_node_type (diagram, i));
      NapkinFlops flops;

      napkin_diagram_node_flops (diagram, i, &flops);
      printf ("  %-12s %-10s -> %-28s %15" G_GINT64_FORMAT " FLOPs\n", node->id,
              napkin_op_kind_to_string (node->kind), type, flops.tensor + flops.cuda + flops.sfu);
    }

  if (napkin_diagram_n_regions (diagram) > 0)
    printf ("\nRegions\n");
  for (guint i = 0; i < napkin_diagram_n_regions (diagram); i++)
    {
      const NapkinRegion *region = napkin_diagram_region (diagram, i);
      g_autoptr(GString) marks = g_string_new (NULL);

      for (guint m = 0; m < region->marks->len; m++)
        {
          const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, m);

          if (mark->kind == NAPKIN_MARK_WHOLE)
            g_string_append_printf (marks, " %s:whole", mark->axis);
          else
            g_string_append_printf (marks, " %s:%s(%" G_GINT64_FORMAT ")", mark->axis,
                                    napkin_mark_to_string (mark->kind), mark->tile);
        }
      printf ("  %-12s %-9s %u operations,%s\n", region->name, napkin_level_to_string (region->level),
              region->nodes->len, marks->str);
    }

  napkin_diagram_total_flops (diagram, &total);
  printf ("\nFLOPs: %" G_GINT64_FORMAT " (tensor cores %" G_GINT64_FORMAT ", CUDA cores %" G_GINT64_FORMAT
          ", special functions %" G_GINT64_FORMAT ")\n",
          total.tensor + total.cuda + total.sfu, total.tensor, total.cuda, total.sfu);
}

int
napkin_cli_info (int    argc,
                 char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  gboolean as_json = FALSE;
  g_autofree char *format = NULL;
  const GOptionEntry entries[] = {
    NAPKIN_CLI_FORMAT_ENTRIES (format, as_json),
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  int rc;

  context = napkin_cli_context_new ("info", "FILE",
                                    "Show a diagram's axes, tensors, operations (with their output types "
                                    "and FLOPs), regions and total FLOPs.",
                                    entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 2)
    return napkin_cli_usage_error ("info", _("expected exactly one FILE"));
  if (!napkin_cli_text_or_json ("info", format, &as_json))
    return NAPKIN_CLI_USAGE;

  if ((rc = napkin_cli_load_or_report ("info", argv[1], &overrides, &diagram)) != NAPKIN_CLI_OK)
    return rc;

  if (as_json)
    {
      g_autoptr(json_object) root = info_to_json (diagram, argv[1]);

      printf ("%s\n", json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY
                                                              | JSON_C_TO_STRING_SPACED
                                                              | JSON_C_TO_STRING_NOSLASHESCAPE));
    }
  else
    print_text (diagram, argv[1]);

  return NAPKIN_CLI_OK;
}
