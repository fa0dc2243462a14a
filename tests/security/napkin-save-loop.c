/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Helper for /security/save/kill-during-save: saves two documents over FILE in turn,
 * forever, printing the number of each finished save. The test SIGKILLs it at random
 * moments and checks that FILE is always one of the two, complete.
 * Usage: napkin-save-loop FILE A.napkin B.napkin */
#define G_LOG_DOMAIN "napkin-save-loop"

#include "config.h"

#include <stdio.h>

#include "napkin-file.h"

int
main (int    argc,
      char **argv)
{
  g_autoptr(NapkinDiagram) a = NULL;
  g_autoptr(NapkinDiagram) b = NULL;
  g_autoptr(GError) error = NULL;

  if (argc != 4)
    {
      fprintf (stderr, "usage: napkin-save-loop FILE A.napkin B.napkin\n");
      return 2;
    }

  a = napkin_diagram_load_from_file (argv[2], NAPKIN_LOAD_DEFAULT, &error);
  if (a != NULL)
    b = napkin_diagram_load_from_file (argv[3], NAPKIN_LOAD_DEFAULT, &error);
  if (b == NULL)
    {
      fprintf (stderr, "napkin-save-loop: %s\n", error->message);
      return 1;
    }

  for (guint64 i = 0;; i++)
    {
      if (!napkin_diagram_save_to_file (i % 2 ? b : a, argv[1], &error))
        {
          fprintf (stderr, "napkin-save-loop: %s\n", error->message);
          return 1;
        }
      /* One line per finished save: the parent counts them. */
      printf ("%" G_GUINT64_FORMAT "\n", i);
      fflush (stdout);
    }
}
