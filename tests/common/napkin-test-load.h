/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-plan.h"
#include "napkin-test-attention.h"
#include "napkin-test-diagrams.h"

G_BEGIN_DECLS

/* Loaders the layers' tests share; each asserts that it worked. */

/* The profile `id` of the default registry (the registry's, not a new reference). */
NapkinArch    *napkin_test_arch              (const char *id);
/* A validated document from its JSON text. */
NapkinDiagram *napkin_test_load_json         (const char *json);
/* The bundled example `file` ("matmul.napkin", NAPKIN_EXAMPLES_DIR), validated. */
NapkinDiagram *napkin_test_load_example      (const char *file);
/* The GEMM and attention cases of napkin-test-diagrams.h and napkin-test-attention.h. */
NapkinDiagram *napkin_test_load_gemm         (const NapkinTestGemmDiagram *c);
NapkinDiagram *napkin_test_load_attention    (const NapkinTestAttention   *c);
/* The kernel plan of `d` on the profile `arch_id`. */
NapkinPlan    *napkin_test_plan              (NapkinDiagram *d,
                                              const char    *arch_id);

G_END_DECLS
