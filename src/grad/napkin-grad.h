/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* The backward diagram (docs/training.md): a diagram → diagram transform by reverse-mode
 * differentiation. The result holds the forward operations, the row statistics the
 * backward reads, and the backward ones; the values the backward reads are named
 * outputs (`saved_<id>`), each output O of the forward gets its gradient as an input
 * `d_O` (none for a loss of no axes: its gradient is 1), and each input X asked for gets
 * an output `d_X`. Regions are dropped: the plan decides the backward's kernels. */

#define NAPKIN_GRAD_ERROR (napkin_grad_error_quark ())

typedef enum
{
  NAPKIN_GRAD_ERROR_INVALID,            /* the forward diagram does not validate */
  NAPKIN_GRAD_ERROR_NO_OUTPUTS,         /* nothing to differentiate */
  NAPKIN_GRAD_ERROR_UNKNOWN_INPUT,      /* a name asked for is not an input; names it */
  NAPKIN_GRAD_ERROR_NOT_RECOMPUTABLE,   /* a name asked to recompute is not such an operation; names it */
  NAPKIN_GRAD_ERROR_NOT_DIFFERENTIABLE, /* an operation or input without a derivative; names it */
  NAPKIN_GRAD_ERROR_FAILED,             /* the result does not validate (a defect of this file) */
} NapkinGradError;

GQuark         napkin_grad_error_quark (void);

/* The backward diagram of `forward` with respect to the input tensors named in `wrt`
 * (NULL: every floating-point input). `notes` (may be NULL) gets a sentence for each
 * input left out by default (an int8 input has no gradient). The result is laid out
 * (napkin_import_layout) and validates. */
NapkinDiagram *napkin_grad_diagram     (NapkinDiagram       *forward,
                                        const char * const  *wrt,
                                        GString             *notes,
                                        GError             **error);

/* Whether the input tensor `name` of `forward` can have a gradient (a floating-point
 * tensor that is not a constant the runner makes); if not, why (a sentence, to free). */
gboolean       napkin_grad_input_has_gradient (NapkinDiagram  *forward,
                                               const char     *name,
                                               char          **why);

/* The same, with the values of the forward operations named in `recompute` (node ids;
 * NULL or empty: none) recomputed by the backward rather than stored: the backward gets
 * its own copy of the operations that make each, back through maps, masks, softmaxes and
 * rearranges to the first contraction (whose operands it reads as stored values) — so
 * that attention's probabilities come from Q and K again, as FlashAttention's backward
 * does, and the forward's attention keeps no extra reader that would split its kernel
 * (docs/training.md, "Recompute or store"). A name that is not an operation, or names an
 * input or an output, is NAPKIN_GRAD_ERROR_NOT_RECOMPUTABLE. */
NapkinDiagram *napkin_grad_diagram_recompute (NapkinDiagram       *forward,
                                              const char * const  *wrt,
                                              const char * const  *recompute,
                                              GString             *notes,
                                              GError             **error);

G_END_DECLS
