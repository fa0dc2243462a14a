/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

#include "napkin-derive.h"

G_BEGIN_DECLS

/* A whole-diagram derivation (docs/plan.md, "Deriving a diagram") as the Suggest
 * popover shows it: the predicted total against every operation its own kernel, and
 * one row per kernel with its predicted and unfused times, its operations, its tiles
 * in words and why it was cut there. */

#define NAPKIN_TYPE_DERIVATION_VIEW (napkin_derivation_view_get_type ())
G_DECLARE_FINAL_TYPE (NapkinDerivationView, napkin_derivation_view, NAPKIN, DERIVATION_VIEW, GtkBox)

GtkWidget  *napkin_derivation_view_new            (void);
/* Shows `derivation` (borrowed: the caller keeps it while shown); NULL empties the view. */
void        napkin_derivation_view_set_derivation (NapkinDerivationView   *self,
                                                   const NapkinDerivation *derivation);
/* The totals line shown. */
const char *napkin_derivation_view_get_totals     (NapkinDerivationView   *self);
/* The rows shown: one a kernel. */
guint       napkin_derivation_view_get_n_rows     (NapkinDerivationView   *self);

G_END_DECLS
