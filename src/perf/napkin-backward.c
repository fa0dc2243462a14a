/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The backward diagram with the store-or-recompute choice priced (docs/training.md,
 * "Recompute or store"): the grad layer builds either; the model, above it, says which
 * costs less on an architecture. */
#define G_LOG_DOMAIN "napkin-perf"

#include "config.h"

#include <glib/gi18n-lib.h>

#include "napkin-backward.h"
#include "napkin-grad.h"
#include "napkin-model.h"

/* The ids of the forward's softmax operations and of the casts of their results (an fp32
 * softmax cast back to 16 bits, as Qwen2 and Llama write it: stored, the cast would keep
 * the probabilities in device memory all the same), NULL-terminated. */
static GPtrArray *
softmax_ids (NapkinDiagram *d)
{
  GPtrArray *ids = g_ptr_array_new ();

  for (guint v = 0; v < napkin_diagram_n_nodes (d); v++)
    if (napkin_diagram_node (d, v)->kind == NAPKIN_OP_SOFTMAX)
      {
        guint at = v, n_consumers;
        const guint *consumers;

        g_ptr_array_add (ids, napkin_diagram_node (d, v)->id);
        for (;;)
          {
            const NapkinNode *c;

            consumers = napkin_diagram_consumers (d, at, &n_consumers);
            if (n_consumers != 1)
              break;
            c = napkin_diagram_node (d, consumers[0]);
            if (c->kind != NAPKIN_OP_MAP || c->fn != NAPKIN_FN_CAST)
              break;
            g_ptr_array_add (ids, c->id);
            at = consumers[0];
          }
      }
  g_ptr_array_add (ids, NULL);
  return ids;
}

/* Forward and backward together (the backward diagram holds both), or −1 where the
 * model cannot price it. */
static double
predicted_s (NapkinDiagram *d,
             NapkinArch    *arch)
{
  NapkinAnalyzeOptions options = { FALSE, NAPKIN_DTYPE_FP16, TRUE };
  g_autoptr(NapkinAnalysis) a = napkin_analyze (d, arch, &options, NULL);

  return a != NULL && a->feasible ? a->predicted_time_s : -1.0;
}

NapkinDiagram *
napkin_backward_diagram (NapkinDiagram        *forward,
                         const char * const   *wrt,
                         NapkinBackwardChoice  choice,
                         NapkinArch           *arch,
                         GString              *notes,
                         GString              *summary,
                         GError              **error)
{
  g_autoptr(GPtrArray) ids = softmax_ids (forward);
  g_autoptr(NapkinDiagram) stored = NULL;
  g_autoptr(NapkinDiagram) recomputed = NULL;
  double t_stored, t_recomputed;
  gboolean recompute;

  g_return_val_if_fail (choice != NAPKIN_BACKWARD_CHEAPER || arch != NULL, NULL);

  if (choice == NAPKIN_BACKWARD_STORE || ids->len == 1)
    {
      if (choice != NAPKIN_BACKWARD_STORE && summary != NULL)
        g_string_append (summary, _("No softmax to recompute: every value the backward reads is stored."));
      return napkin_grad_diagram (forward, wrt, notes, error);
    }
  recomputed = napkin_grad_diagram_recompute (forward, wrt, (const char * const *) ids->pdata, notes, error);
  if (recomputed == NULL || choice == NAPKIN_BACKWARD_RECOMPUTE)
    return g_steal_pointer (&recomputed);
  stored = napkin_grad_diagram (forward, wrt, NULL, error);
  if (stored == NULL)
    return NULL;
  t_stored = predicted_s (stored, arch);
  t_recomputed = predicted_s (recomputed, arch);
  recompute = t_recomputed >= 0 && (t_stored < 0 || t_recomputed < t_stored);
  if (summary != NULL)
    g_string_append_printf (summary, _("On %s, forward and backward with the softmax probabilities stored: %.4g ms, "
                                       "recomputed: %.4g ms predicted; %s."),
                            arch->name ? arch->name : arch->id, t_stored * 1e3, t_recomputed * 1e3,
                            recompute ? _("recomputed") : _("stored"));
  return recompute ? g_steal_pointer (&recomputed) : g_steal_pointer (&stored);
}
