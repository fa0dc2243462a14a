/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <stdio.h>
#include <string.h>

#include "napkin-cli.h"
#include "napkin-file.h"
#include "napkin-codegen.h"
#include "napkin-error.h"
#include "napkin-interp.h"

/* The CPU interpreter on seeded inputs: relabeled vs plain, per output. */
static int
check_equivalence (const char      *path,
                   NapkinDiagram   *diagram,
                   NapkinIrProgram *program)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinIrProgram) plain = napkin_ir_lower (diagram, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, &error);
  g_autoptr(NapkinTensorSet) a = NULL;
  g_autoptr(NapkinTensorSet) b = NULL;
  NapkinFlops flops;
  gboolean ok = TRUE;

  napkin_diagram_total_flops (diagram, &flops);
  if (flops.tensor + flops.cuda + flops.sfu > G_GINT64_CONSTANT (4000000000))
    {
      fprintf (stderr, "%s: %" G_GINT64_FORMAT " FLOPs is too much for the CPU interpreter; shrink the axes "
               "with --axis NAME=SIZE (and the tiles with --tile)\n", path, flops.tensor + flops.cuda + flops.sfu);
      return NAPKIN_CLI_FAILED;
    }
  if (plain == NULL)
    {
      fprintf (stderr, _("%s: cannot lower the plain diagram: %s\n"), path, error->message);
      return NAPKIN_CLI_FAILED;
    }
  {
    const NapkinIrProgram *both[] = { program, plain };

    if (!napkin_ir_interpret_check_limits (both, G_N_ELEMENTS (both), &error))
      {
        fprintf (stderr, "%s: %s\n", path, error->message);
        return NAPKIN_CLI_FAILED;
      }
  }
  a = napkin_tensor_set_new_random (diagram, 1234);
  b = napkin_tensor_set_new_random (diagram, 1234);
  if (!napkin_ir_interpret (program, a, &error) || !napkin_ir_interpret (plain, b, &error))
    {
      fprintf (stderr, _("%s: interpreter: %s\n"), path, error->message);
      return NAPKIN_CLI_FAILED;
    }
  for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
    {
      const NapkinNode *node = napkin_diagram_node (diagram, n);
      int t;
      double err, bound;

      if (node->kind != NAPKIN_OP_OUTPUT)
        continue;
      t = napkin_diagram_find_tensor (diagram, node->tensor);
      err = napkin_tensor_set_rel_error (a, b, t);
      bound = napkin_dtype_tolerance (napkin_diagram_tensor (diagram, t)->dtype);
      printf ("%s: %s: relabeled vs plain, relative error %.3g (bound %.3g for %s): %s\n", path, node->tensor, err,
              bound, napkin_dtype_to_string (napkin_diagram_tensor (diagram, t)->dtype), err <= bound ? "ok" : "DIFFERENT");
      ok &= err <= bound;
    }
  return ok ? NAPKIN_CLI_OK : NAPKIN_CLI_FAILED;
}

int
napkin_cli_codegen (int    argc,
                    char **argv)
{
  NapkinCliOverrides overrides = { NULL, NULL };
  g_autofree char *target = NULL;
  g_autofree char *output = NULL;
  g_autofree char *arch = NULL;
  gboolean generic = FALSE, plain = FALSE, check = FALSE;
  const GOptionEntry entries[] = {
    { "target", 't', 0, G_OPTION_ARG_STRING, &target,
      "cuda (kernels), standalone (.cu with main(), builds with nvcc), pseudo, or pytorch (the diagram's "
      "reference as plain PyTorch) (default: cuda)", "TARGET" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write to this file instead of standard output", "OUT" },
    { "generic", 0, 0, G_OPTION_ARG_NONE, &generic, "Generic lowering only (no tile primitives)", NULL },
    { "arch", 0, 0, G_OPTION_ARG_STRING, &arch,
      "Architecture id (napkin-cli archs: h100, a100, …) or compute target (sm_80, sm_90a); default h100. "
      "The kernel plan for that GPU decides each kernel's path", "ID" },
    { "plain", 0, 0, G_OPTION_ARG_NONE, &plain, "Ignore the regions: every operation through device memory", NULL },
    { "check", 0, 0, G_OPTION_ARG_NONE, &check,
      "Instead of printing, run the relabeled and the plain loop nests in the CPU interpreter and compare "
      "(use --axis for small sizes)", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;
  int rc;
  g_autoptr(NapkinIrProgram) program = NULL;
  g_autofree char *text = NULL;
  g_autofree char *sm = NULL;
  g_autoptr(NapkinPlan) plan = NULL;
  NapkinPlanOptions plan_options = { 0 };
  NapkinArch *profile = NULL;

  context = napkin_cli_context_new ("codegen", "FILE",
                                    "Lower a relabeled diagram to its loop nest and print it as CUDA or as "
                                    "the paper's pseudocode.",
                                    entries, &overrides);
  if (!napkin_cli_parse (context, &argc, &argv))
    return NAPKIN_CLI_USAGE;
  if (argc != 2)
    return napkin_cli_usage_error ("codegen", _("expected exactly one FILE"));
  if (target == NULL)
    target = g_strdup ("cuda");
  if (!g_str_equal (target, "cuda") && !g_str_equal (target, "pseudo") && !g_str_equal (target, "standalone")
      && !g_str_equal (target, "pytorch"))
    return napkin_cli_usage_error ("codegen", _("--target must be cuda, standalone, pseudo or pytorch, not “%s”"),
                                   target);
  /* the PyTorch reference depends on no GPU */
  if (!g_str_equal (target, "pytorch"))
    {
      if ((profile = napkin_cli_lookup_arch ("codegen", arch)) == NULL)
        return NAPKIN_CLI_USAGE;
      sm = napkin_plan_target_for_arch (profile);
    }

  if ((rc = napkin_cli_load_or_report ("codegen", argv[1], &overrides, &diagram)) != NAPKIN_CLI_OK)
    return rc;

  if (g_str_equal (target, "pytorch"))
    {
      /* the diagram's meaning alone: no lowering, no plan */
      if ((text = napkin_codegen_pytorch (diagram, &error)) == NULL)
        {
          fprintf (stderr, "%s: cannot print PyTorch: %s\n", argv[1], error->message);
          return NAPKIN_CLI_FAILED;
        }
      goto write;
    }

  /* Code to run only for what the model calls feasible: analyze, plan and codegen
   * give one verdict and one exit status (docs/cli.md). */
  if (!plain && !check && !g_str_equal (target, "pseudo"))
    {
      g_autofree char *infeasible = napkin_cli_infeasible_reason (diagram, profile, FALSE, NAPKIN_DTYPE_FP32);

      if (infeasible != NULL)
        {
          fprintf (stderr, _("%s: INFEASIBLE on %s: %s\n"), argv[1], profile->id, infeasible);
          return NAPKIN_CLI_FAILED;
        }
    }

  /* the plan first: its diagram (the plan's own regions, casts folded) is what runs */
  if (!plain)
    {
      plan_options.generic_only = generic;
      plan = napkin_plan_build (diagram, profile, &plan_options, &error);
      if (plan == NULL)
        {
          fprintf (stderr, _("%s: cannot plan: %s\n"), argv[1], error->message);
          return NAPKIN_CLI_FAILED;
        }
    }
  program = napkin_ir_lower (plan != NULL ? plan->diagram : diagram, plain ? NAPKIN_LOWER_PLAIN : NAPKIN_LOWER_DEFAULT,
                             &error);
  if (program == NULL)
    {
      fprintf (stderr, _("%s: cannot lower: %s\n"), argv[1], error->message);
      return NAPKIN_CLI_FAILED;
    }

  if (check)
    return check_equivalence (argv[1], diagram, program);

  if (g_str_equal (target, "pseudo"))
    text = napkin_codegen_pseudocode (program);
  else
    {
      g_autoptr(NapkinCudaModule) module = napkin_codegen_cuda_planned (g_steal_pointer (&program), plan,
                                                                        generic ? NAPKIN_CODEGEN_GENERIC_ONLY
                                                                                : napkin_codegen_flags_for_arch (sm),
                                                                        NULL, &error);

      if (module == NULL)
        {
          fprintf (stderr, _("%s: cannot generate CUDA: %s\n"), argv[1], error->message);
          return NAPKIN_CLI_FAILED;
        }
      if (g_str_equal (target, "cuda"))
        text = g_strdup (module->source);
      else
        {
          g_autoptr(NapkinIrProgram) ref_prog = napkin_ir_lower (diagram, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH,
                                                                 &error);
          g_autoptr(NapkinCudaModule) ref = ref_prog
                                              ? napkin_codegen_cuda (g_steal_pointer (&ref_prog),
                                                                     NAPKIN_CODEGEN_GENERIC_ONLY, "napkin_ref_", &error)
                                              : NULL;

          if (ref == NULL)
            {
              fprintf (stderr, _("%s: cannot generate the reference: %s\n"), argv[1], error->message);
              return NAPKIN_CLI_FAILED;
            }
          text = napkin_codegen_standalone (module, ref, napkin_diagram_get_title (diagram));
        }
    }

write:
  if (output == NULL)
    {
      fputs (text, stdout);
      return NAPKIN_CLI_OK;
    }
  if (!napkin_file_write_atomic (output, text, strlen (text), &error))
    {
      fprintf (stderr, "napkin-cli codegen: %s\n", error->message);
      return NAPKIN_CLI_FAILED;
    }
  return NAPKIN_CLI_OK;
}
