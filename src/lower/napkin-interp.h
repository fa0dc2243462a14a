/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-ir.h"

G_BEGIN_DECLS

/* The values of a diagram's device-memory tensors, one array of doubles per tensor
 * (row-major in the tensor's axis order). The interpreter reads inputs from it and
 * writes outputs into it. */
typedef struct
{
  NapkinDiagram *diagram;
  guint          n_tensors;
  double       **values;
  gint64        *elements;
} NapkinTensorSet;

/* Seeded uniform values in [-1, 1) times the tensor's napkin_input_scale, rounded to
 * each tensor's type; never zeros. A "rotate_half" constant holds its matrix instead,
 * as the runner fills it. */
NapkinTensorSet *napkin_tensor_set_new_random (NapkinDiagram          *diagram,
                                               guint64                 seed);
void             napkin_tensor_set_free       (NapkinTensorSet        *set);

/* What an input's uniform draws are multiplied by, as a model's initialisation scales
 * its weights (docs/model.md, "Inputs of a run"): 1/√K for an operand a contraction
 * sums over K, so that products stay O(1) — the runner and the interpreter fill with
 * the same scales. 1 for everything else (and for int8 inputs, drawn as integers). */
double           napkin_input_scale           (NapkinDiagram          *diagram,
                                               guint                   tensor);

/* Runs every kernel of the program on the CPU in float64, rounding what it stores
 * in device memory to the stored type. Tiles start as NaN and every access is
 * checked against the tile's box, so a lowering that reads what it never wrote, or
 * outside a tile, fails here with the kernel and buffer named. */
gboolean         napkin_ir_interpret          (const NapkinIrProgram  *program,
                                               NapkinTensorSet        *set,
                                               GError                **error);

/* The same in float64 throughout: nothing is rounded to a stored type and casts keep
 * their value, so that a derivative can be checked against finite differences of the
 * forward (docs/training.md). */
gboolean         napkin_ir_interpret_float64  (const NapkinIrProgram  *program,
                                               NapkinTensorSet        *set,
                                               GError                **error);

/* What the interpreter needs for a program: memory in bytes (float64 for every
 * element: the program's tensor set, its device-memory buffers, every tile at its
 * largest) and work in element steps (each statement's elements, times its loops'
 * trips). FALSE when a count overflows 64 bits. */
gboolean         napkin_ir_interpret_cost     (const NapkinIrProgram  *program,
                                               gint64                 *bytes,
                                               gint64                 *steps);

/* The most the CPU check (codegen --check) spends: above either, a diagram is
 * refused with its sizes named, rather than running for minutes or exhausting memory. */
#define NAPKIN_INTERP_MAX_BYTES  (G_GINT64_CONSTANT (1) << 30)
#define NAPKIN_INTERP_MAX_STEPS  G_GINT64_CONSTANT (1000000000)

/* Whether interpreting the programs, one after another, each with its own tensor set
 * (kept to the end), stays within those limits; if not, an error
 * (NAPKIN_LOWER_ERROR_TOO_LARGE) with the memory, the steps and the largest tensor. */
gboolean         napkin_ir_interpret_check_limits (const NapkinIrProgram *const *programs,
                                                   guint                         n_programs,
                                                   GError                      **error);

/* ‖a − b‖∞ / ‖b‖∞ over one tensor; +∞ when a holds NaN. */
double           napkin_tensor_set_rel_error  (const NapkinTensorSet  *a,
                                               const NapkinTensorSet  *b,
                                               guint                   tensor);
/* Relative-error bound for results stored in a type. */
double           napkin_dtype_tolerance       (NapkinDtype             dtype);
double           napkin_round_to_dtype        (double                  value,
                                               NapkinDtype             dtype);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinTensorSet, napkin_tensor_set_free)

G_END_DECLS
