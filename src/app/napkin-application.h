/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <adwaita.h>

#include "napkin-window.h"

G_BEGIN_DECLS

#define NAPKIN_TYPE_APPLICATION (napkin_application_get_type ())
G_DECLARE_FINAL_TYPE (NapkinApplication, napkin_application, NAPKIN, APPLICATION, AdwApplication)

NapkinApplication *napkin_application_new        (void);
/* Opens file in `reuse` when that window is untouched, else in a new window. A file
 * that fails to load shows its error in `reuse` (or the active window). */
NapkinWindow      *napkin_application_open_file  (NapkinApplication *self,
                                                  GFile             *file,
                                                  NapkinWindow      *reuse);
/* Once per process: offers to recover each document autosaved by a Napkin that has
 * since ended without saving it (a dialog each), or with --recover-all recovers
 * them all without asking. Returns how many were recovered without asking. */
guint              napkin_application_offer_recovery (NapkinApplication *self);
/* While Quit asks the windows with unsaved changes, one after the other. */
gboolean           napkin_application_is_quitting (NapkinApplication *self);
/* Non-zero when --screenshot failed. */
int                napkin_application_get_status (NapkinApplication *self);

G_END_DECLS
