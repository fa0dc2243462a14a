/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include "napkin-codegen-private.h"

gboolean
_napkin_cuda_try_skeleton (const NapkinIrProgram *program,
                           const NapkinIrKernel  *kernel,
                           NapkinCudaModule      *module,
                           const int             *slot,
                           const char            *prefix,
                           guint                  index,
                           GString               *out)
{
  return FALSE;
}
