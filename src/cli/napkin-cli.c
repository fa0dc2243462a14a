/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-cli"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <locale.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "napkin-cli.h"

static const NapkinCliCommand commands[] = {
  { "validate", "FILE...", "Check diagrams; one error line per invalid file", napkin_cli_validate },
  { "import", "FILE", "A diagram from einsum text or a PyTorch module's exported graph (-o OUT)", napkin_cli_import },
  { "grad", "FILE", "The backward diagram: gradients of the inputs (-o OUT, --wrt NAME,...)", napkin_cli_grad },
  { "info", "FILE", "Axes, tensors, operations, regions and FLOPs of a diagram", napkin_cli_info },
  { "codegen", "FILE", "CUDA, standalone .cu or paper-style pseudocode of a relabeled diagram", napkin_cli_codegen },
  { "run", "FILE", "Compile, run, check and time a diagram on the local GPU", napkin_cli_run },
  { "calibrate", "", "Measure the local GPU's ceilings and save a measured architecture profile", napkin_cli_calibrate },
  { "archs", "", "GPU architectures the performance model knows", napkin_cli_archs },
  { "analyze", "FILE", "Predicted transfers, footprint, occupancy, time and bound on a GPU", napkin_cli_analyze },
  { "compare", "FILE", "Predicted time, bound and throughput across GPUs and element types", napkin_cli_compare },
  { "plan", "FILE", "The kernel plan: each kernel's path, tiles, stages, fused operations, footprint", napkin_cli_plan },
  { "tune", "FILE", "Search tile and stream sizes, ranked by predicted time", napkin_cli_tune },
#ifdef NAPKIN_HAVE_RENDER
  { "render", "FILE -o OUT", "Draw a diagram to SVG, PDF, PNG or TikZ, as the editor shows it", napkin_cli_render },
#endif
};

static void
print_usage (FILE *out)
{
  fprintf (out, _("Usage: napkin-cli COMMAND [OPTION…] ARGS\n\n"
                "Napkin %s: draw a GPU algorithm as a diagram, model it, generate it.\n\n"
                "Commands:\n"), PACKAGE_VERSION);
  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    fprintf (out, "  %-10s %-10s %s\n", commands[i].name, commands[i].args, commands[i].summary);
  fprintf (out, _("\nEvery command that reads a FILE takes --axis NAME=SIZE and --tile REGION.AXIS=SIZE.\n"
                "Run napkin-cli COMMAND --help for its options.\n"
                "Exit status: 0 success, 1 invalid input or failed work, 2 bad usage.\n"));
}

int
main (int    argc,
      char **argv)
{
  napkin_cli_guard_output ();
  setlocale (LC_ALL, "");
  /* Messages in the user's language (LANGUAGE, LC_MESSAGES); NAPKIN_LOCALEDIR points at
   * a build tree's catalogues. --format json switches them back to English
   * (napkin_cli_format_resolve). */
  bindtextdomain (GETTEXT_PACKAGE, g_getenv ("NAPKIN_LOCALEDIR") ? g_getenv ("NAPKIN_LOCALEDIR") : LOCALEDIR);
  bind_textdomain_codeset (GETTEXT_PACKAGE, "UTF-8");
  /* Help reads "napkin-cli [OPTION…] COMMAND ARGS", not the command's name twice. */
  g_set_prgname ("napkin-cli");

  if (argc < 2)
    {
      print_usage (stderr);
      return NAPKIN_CLI_USAGE;
    }

  if (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0 || strcmp (argv[1], "help") == 0)
    {
      print_usage (stdout);
      return NAPKIN_CLI_OK;
    }
  if (strcmp (argv[1], "--version") == 0)
    {
      printf ("napkin-cli %s\n", PACKAGE_VERSION);
      return NAPKIN_CLI_OK;
    }

  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (argv[1], commands[i].name) == 0)
      {
        int status = commands[i].run (argc - 1, argv + 1);

        /* What a command printed may not have reached a full disk or a closed pipe:
         * never exit 0 on a truncated output. */
        if (fflush (stdout) != 0 || ferror (stdout))
          {
            fprintf (stderr, _("napkin-cli %s: could not write the output: %s\n"), argv[1],
                     errno != 0 ? g_strerror (errno) : "write error");
            return NAPKIN_CLI_FAILED;
          }
        return status;
      }

  fprintf (stderr, _("napkin-cli: unknown command “%s”\n\n"), argv[1]);
  print_usage (stderr);
  return NAPKIN_CLI_USAGE;
}
