/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

#include "napkin-backward.h"
#include "napkin-diagram.h"

G_BEGIN_DECLS

#define NAPKIN_TYPE_BACKWARD_DIALOG (napkin_backward_dialog_get_type ())
G_DECLARE_FINAL_TYPE (NapkinBackwardDialog, napkin_backward_dialog, NAPKIN, BACKWARD_DIALOG, GtkWindow)

/* Edit ▸ Backward Diagram ▸ Choose Gradients… (docs/training.md): a check button for each
 * input of `forward` (named "gradient-NAME"; those with no gradient insensitive, saying
 * why), all that can have one checked, and what becomes of the softmax probabilities.
 * Build emits "build" (const char * const *wrt, NapkinBackwardChoice choice) and closes;
 * with no input checked it says so and stays. */
NapkinBackwardDialog *napkin_backward_dialog_new (GtkWindow     *parent,
                                                  NapkinDiagram *forward);

G_END_DECLS
