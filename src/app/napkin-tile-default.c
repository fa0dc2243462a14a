/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-tile-default"

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "napkin-derive.h"
#include "napkin-edit.h"
#include "napkin-tile-default.h"
#include "napkin-tune.h"
#include "napkin-validate.h"

/* A search of a few hundred relabelings: tens of milliseconds on a small diagram. */
#define MAX_EVALUATIONS 1200

/* A copy with only the regions that share an operation with `name` (itself, the
 * regions around it and inside it): the search then tunes those marks only. */
static NapkinDiagram *
isolate (NapkinDiagram *diagram,
         const char    *name)
{
  NapkinDiagram *copy = napkin_diagram_copy (diagram);
  g_autoptr(NapkinHistory) history = napkin_history_new (copy);
  int r = napkin_diagram_find_region (copy, name);
  g_autoptr(GPtrArray) doomed = g_ptr_array_new_with_free_func (g_free);
  const NapkinRegion *region;

  if (r < 0)
    return copy;
  region = napkin_diagram_region (copy, r);
  for (guint o = 0; o < napkin_diagram_n_regions (copy); o++)
    {
      const NapkinRegion *other = napkin_diagram_region (copy, o);
      gboolean shares = FALSE;

      for (guint i = 0; i < other->nodes->len && !shares; i++)
        shares = napkin_region_has_node (region, g_ptr_array_index (other->nodes, i));
      if (!shares)
        g_ptr_array_add (doomed, g_strdup (other->name));
    }
  for (guint i = 0; i < doomed->len; i++)
    napkin_edit_remove_region (history, g_ptr_array_index (doomed, i), NULL);
  return copy;
}

/* Where no tiling fits: a tensor-core sized tile, at most the axis. */
static gint64
guess (NapkinDiagram  *diagram,
       NapkinLevel     level,
       const char     *axis,
       NapkinMarkKind  kind)
{
  int a = napkin_diagram_find_axis (diagram, axis);
  gint64 size = a >= 0 ? napkin_diagram_axis_size (diagram, a) : 1;
  gint64 want;

  if (kind == NAPKIN_MARK_STREAM)
    want = level == NAPKIN_LEVEL_REGISTERS ? 16 : 64;
  else
    want = level == NAPKIN_LEVEL_REGISTERS ? 64 : 128;
  return MAX (1, MIN (size, want));
}

/* The best candidate's specs for `region`, without the "REGION." prefix. */
static GStrv
search (NapkinDiagram *copy,
        const char    *region,
        NapkinArch    *arch)
{
  NapkinTuneOptions options = { 1, MAX_EVALUATIONS, FALSE, 0 };
  g_autoptr(NapkinTuneResult) result = NULL;
  g_autoptr(GStrvBuilder) specs = g_strv_builder_new ();
  g_autofree char *prefix = g_strconcat (region, ".", NULL);
  const NapkinTuneCandidate *best;

  if (arch == NULL || !napkin_diagram_validate (copy, NULL))
    return NULL;
  result = napkin_tune (copy, arch, &options, NULL);
  if (result == NULL || result->best == NULL || result->best->len == 0 || result->relabeled != NULL)
    return NULL;
  best = g_ptr_array_index (result->best, 0);
  for (guint i = 0; best->specs && best->specs[i]; i++)
    if (g_str_has_prefix (best->specs[i], prefix))
      g_strv_builder_add (specs, best->specs[i] + strlen (prefix));
  return g_strv_builder_end (specs);
}

/* "AXIS=KIND:TILE" → the tile when the spec is about `axis`, else 0. */
static gint64
spec_tile (const char *spec,
           const char *axis)
{
  gsize n = strlen (axis);
  const char *colon;

  if (strncmp (spec, axis, n) != 0 || spec[n] != '=' || (colon = strchr (spec, ':')) == NULL)
    return 0;
  return g_ascii_strtoll (colon + 1, NULL, 10);
}

gint64
napkin_tile_default_for_mark (NapkinDiagram  *diagram,
                              const char     *region,
                              const char     *axis,
                              NapkinMarkKind  kind,
                              NapkinArch     *arch)
{
  g_autoptr(NapkinDiagram) copy = NULL;
  g_autoptr(NapkinHistory) history = NULL;
  g_auto(GStrv) specs = NULL;
  int r;
  gint64 fallback;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), 1);
  g_return_val_if_fail (kind == NAPKIN_MARK_PARALLEL || kind == NAPKIN_MARK_STREAM, 1);

  r = napkin_diagram_find_region (diagram, region);
  if (r < 0)
    return 1;
  fallback = guess (diagram, napkin_diagram_region (diagram, r)->level, axis, kind);
  copy = isolate (diagram, region);
  history = napkin_history_new (copy);
  if (!napkin_edit_set_mark (history, region, axis, kind, fallback, NULL))
    return fallback;
  specs = search (copy, region, arch);
  for (guint i = 0; specs && specs[i]; i++)
    {
      gint64 tile = spec_tile (specs[i], axis);

      if (tile > 0)
        return tile;
    }
  return fallback;
}

static gboolean
region_has_problem (NapkinDiagram *d,
                    const char    *name)
{
  g_autoptr(GPtrArray) problems = napkin_diagram_check (d);
  int r = napkin_diagram_find_region (d, name);

  for (guint i = 0; i < problems->len; i++)
    {
      const NapkinProblem *p = g_ptr_array_index (problems, i);

      if (p->kind == NAPKIN_ITEM_REGION && (int) p->index == r)
        return TRUE;
    }
  return FALSE;
}

/* The plan's own kernel for exactly the operations of `name`, if it makes one (docs/plan.md,
 * "Deriving a diagram"): its marks, tiles and stages, as a region drawn around them by
 * the plan. The diagram is derived without its drawn regions, so the kernel is the one
 * the plan would run for those operations. NULL when no derived kernel holds exactly
 * them (the search below decides then). */
static GStrv
plan_marks (NapkinDiagram *diagram,
            const char    *name,
            NapkinArch    *arch)
{
  g_autoptr(NapkinDiagram) copy = NULL;
  g_autoptr(NapkinHistory) history = NULL;
  g_autoptr(NapkinDerivation) dr = NULL;
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  NapkinTuneOptions options = { 1, MAX_EVALUATIONS, FALSE, 0 };
  const NapkinRegion *region;
  int r = napkin_diagram_find_region (diagram, name);

  if (arch == NULL || r < 0)
    return NULL;
  region = napkin_diagram_region (diagram, r);
  copy = napkin_diagram_copy (diagram);
  history = napkin_history_new (copy);
  for (guint i = 0; i < napkin_diagram_n_regions (copy); i++)
    g_ptr_array_add (names, g_strdup (napkin_diagram_region (copy, i)->name));
  for (guint i = 0; i < names->len; i++)
    if (!napkin_edit_remove_region (history, g_ptr_array_index (names, i), NULL))
      return NULL;
  if (!napkin_diagram_validate (copy, NULL) || (dr = napkin_derive (copy, arch, &options, NULL)) == NULL)
    return NULL;
  for (guint k = 0; k < dr->kernels->len; k++)
    {
      const NapkinDeriveKernel *dk = g_ptr_array_index (dr->kernels, k);
      g_autoptr(GStrvBuilder) specs = NULL;

      if (dk->specs == NULL || dk->nodes == NULL || g_strv_length (dk->nodes) != region->nodes->len)
        continue;
      for (guint i = 0; i < region->nodes->len; i++)
        if (!g_strv_contains ((const char *const *) dk->nodes, g_ptr_array_index (region->nodes, i)))
          goto next;
      specs = g_strv_builder_new ();
      for (guint i = 0; dk->specs[i]; i++)
        {
          const char *dot = strchr (dk->specs[i], '.');

          if (dot != NULL)
            g_strv_builder_add (specs, dot + 1);
        }
      return g_strv_builder_end (specs);
    next:
      ;
    }
  return NULL;
}

GStrv
napkin_tile_default_marks (NapkinDiagram *diagram,
                           const char    *name,
                           NapkinArch    *arch)
{
  g_autoptr(NapkinDiagram) copy = NULL;
  g_autoptr(NapkinHistory) history = NULL;
  g_autoptr(GStrvBuilder) specs = g_strv_builder_new ();
  g_autoptr(GPtrArray) streamed = g_ptr_array_new ();
  const NapkinRegion *region;
  g_auto(GStrv) found = NULL;
  guint marked = 0;
  int r;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);

  if ((r = napkin_diagram_find_region (diagram, name)) < 0 || napkin_diagram_topo_order (diagram) == NULL)
    return g_strv_builder_end (specs);
  /* the operations the plan runs as one kernel of its own: its tiles (attention keys
   * streamed in chunks, not whole) */
  found = plan_marks (diagram, name, arch);
  if (found != NULL && found[0] != NULL)
    return g_steal_pointer (&found);
  g_clear_pointer (&found, g_strfreev);
  copy = isolate (diagram, name);
  history = napkin_history_new (copy);
  region = napkin_diagram_region (copy, napkin_diagram_find_region (copy, name));

  for (guint a = 0; a < napkin_diagram_n_axes (copy); a++)
    {
      const char *axis = napkin_diagram_axis (copy, a)->name;
      guint n_contractions;
      NapkinMarkKind kind;

      if (!napkin_region_uses_axis (copy, region, a) || napkin_region_reduces_axis (copy, region, axis))
        continue;
      /* a lone product streams what it sums (a GEMM's k); with several products the
       * sums are not streamable one by one, so they stay whole */
      if (napkin_region_sums_axis (copy, region, a, &n_contractions))
        {
          if (n_contractions != 1)
            continue;
          kind = NAPKIN_MARK_STREAM;
          g_ptr_array_add (streamed, (gpointer) axis);
        }
      else
        kind = NAPKIN_MARK_PARALLEL;
      if (napkin_edit_set_mark (history, name, axis, kind, guess (copy, region->level, axis, kind), NULL))
        marked++;
      region = napkin_diagram_region (copy, napkin_diagram_find_region (copy, name));
    }
  if (marked == 0)
    return g_strv_builder_end (specs);
  if (region_has_problem (copy, name))
    {
      for (guint i = 0; i < streamed->len; i++)
        napkin_edit_set_mark (history, name, g_ptr_array_index (streamed, i), NAPKIN_MARK_WHOLE, 0, NULL);
      if (region_has_problem (copy, name))
        return g_strv_builder_end (specs);
    }

  found = search (copy, name, arch);
  if (found != NULL && found[0] != NULL)
    return g_steal_pointer (&found);
  /* nothing fits on this architecture (or none is chosen): the guesses */
  region = napkin_diagram_region (copy, napkin_diagram_find_region (copy, name));
  for (guint m = 0; m < region->marks->len; m++)
    {
      const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, m);

      if (mark->kind != NAPKIN_MARK_WHOLE)
        {
          g_autofree char *spec = g_strdup_printf ("%s=%s:%" G_GINT64_FORMAT, mark->axis,
                                                   napkin_mark_to_string (mark->kind), mark->tile);

          g_strv_builder_add (specs, spec);
        }
    }
  return g_strv_builder_end (specs);
}

gboolean
napkin_tile_default_apply (NapkinHistory      *history,
                           const char         *region,
                           const char *const  *specs,
                           GError            **error)
{
  for (guint i = 0; specs && specs[i]; i++)
    {
      g_auto(GStrv) parts = g_strsplit (specs[i], "=", 2);
      g_auto(GStrv) value = NULL;
      NapkinMarkKind kind;
      gboolean ok;

      if (parts[0] == NULL || parts[1] == NULL)
        continue;
      if (g_str_equal (parts[0], "stages"))
        ok = napkin_edit_set_region_stages (history, region, (guint) g_ascii_strtoull (parts[1], NULL, 10), error);
      else if (g_str_equal (parts[0], "threads"))
        ok = napkin_edit_set_region_threads (history, region, (guint) g_ascii_strtoull (parts[1], NULL, 10), error);
      else
        {
          value = g_strsplit (parts[1], ":", 2);
          if (value[0] == NULL || !napkin_mark_from_string (value[0], &kind))
            continue;
          ok = napkin_edit_set_mark (history, region, parts[0], kind,
                                     value[1] ? g_ascii_strtoll (value[1], NULL, 10) : 0, error);
        }
      if (!ok)
        return FALSE;
    }
  return TRUE;
}
