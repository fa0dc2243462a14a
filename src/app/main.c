/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <locale.h>

#include <glib/gi18n.h>

#include "napkin-application.h"

int
main (int    argc,
      char **argv)
{
  g_autoptr(NapkinApplication) app = NULL;
  int status;

  setlocale (LC_ALL, "");
  /* NAPKIN_LOCALEDIR lets tests use the catalogues built in the build tree. */
  bindtextdomain (GETTEXT_PACKAGE, g_getenv ("NAPKIN_LOCALEDIR") ? g_getenv ("NAPKIN_LOCALEDIR") : LOCALEDIR);
  bind_textdomain_codeset (GETTEXT_PACKAGE, "UTF-8");
  textdomain (GETTEXT_PACKAGE);

  app = napkin_application_new ();
  status = g_application_run (G_APPLICATION (app), argc, argv);
  return status != 0 ? status : napkin_application_get_status (app);
}
