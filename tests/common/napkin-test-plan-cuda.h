/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-codegen.h"
#include "napkin-plan.h"

G_BEGIN_DECLS

/* The plan of `diagram` for `arch`, and a CUDA module whose source is the prelude and
 * the plan's rows and element-wise kernels as their printers print them (kernels
 * named PREFIX0, PREFIX1, … by plan index; other kernels are left out). The module's
 * `args` give each slot's IR buffer. NULL with an error when a step fails. */
NapkinCudaModule *napkin_test_plan_cuda (NapkinDiagram *diagram,
                                         NapkinArch    *arch,
                                         const char    *prefix,
                                         NapkinPlan   **plan_out,
                                         GError       **error);

G_END_DECLS
