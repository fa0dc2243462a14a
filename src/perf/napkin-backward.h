/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-arch.h"
#include "napkin-diagram.h"

G_BEGIN_DECLS

/* Storing or recomputing the softmax probabilities in a backward diagram
 * (docs/training.md, "Recompute or store"). */
typedef enum
{
  NAPKIN_BACKWARD_STORE,       /* every value the backward reads is stored */
  NAPKIN_BACKWARD_RECOMPUTE,   /* every softmax made again in the backward */
  NAPKIN_BACKWARD_CHEAPER,     /* whichever of the two the model prices lower */
} NapkinBackwardChoice;

/* The backward diagram of `forward` (napkin_grad_diagram_recompute) with the softmaxes
 * stored or recomputed as `choice` says; for NAPKIN_BACKWARD_CHEAPER both are built and
 * priced, forward and backward together, on `arch`, and the cheaper kept (storing on a
 * tie, or where neither can be priced). `summary` (may be NULL) gets one sentence on what
 * was chosen and the two predictions. */
NapkinDiagram *napkin_backward_diagram (NapkinDiagram        *forward,
                                        const char * const   *wrt,
                                        NapkinBackwardChoice  choice,
                                        NapkinArch           *arch,
                                        GString              *notes,
                                        GString              *summary,
                                        GError              **error);

G_END_DECLS
