/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-codegen.h"

G_BEGIN_DECLS

const char *_napkin_cuda_ctype        (NapkinDtype             dtype);
/* Prints a strong skeleton for a recognised kernel and records it in the module;
 * FALSE leaves the kernel to the generic printer. */
gboolean    _napkin_cuda_try_skeleton (const NapkinIrProgram  *program,
                                       const NapkinIrKernel   *kernel,
                                       NapkinCudaModule       *module,
                                       const int              *slot,
                                       const char             *prefix,
                                       guint                   index,
                                       GString                *out,
                                       char                  **note);

G_END_DECLS
