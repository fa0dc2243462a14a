/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>
#include <json-c/json.h>

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* Runs the current diagram on the local GPU through napkin-runner (a child
 * process, NapkinRunJob) with progress and Cancel, and shows the result next to
 * the model's prediction: a table and a predicted-vs-measured bar chart per
 * level. Every finished run (faults and timeouts included) is added to the
 * document's history of runs ("runs" in the file, napkin-runs.h). */

#define NAPKIN_TYPE_RUN_PANEL (napkin_run_panel_get_type ())
G_DECLARE_FINAL_TYPE (NapkinRunPanel, napkin_run_panel, NAPKIN, RUN_PANEL, GtkWidget)

GtkWidget   *napkin_run_panel_new              (void);
void         napkin_run_panel_set_diagram      (NapkinRunPanel     *self,
                                                NapkinDiagram      *diagram);
/* Tests put a test double in place of napkin-runner (tests/runner/fake-runner.sh). */
void         napkin_run_panel_set_runner       (NapkinRunPanel     *self,
                                                const char * const *command);
void         napkin_run_panel_set_timeout      (NapkinRunPanel     *self,
                                                guint               seconds);
/* Starts a run (the run.start action); does nothing while one runs. */
/* The architecture id chosen in the header: a run that finds no GPU shows its
 * prediction for it. */
void         napkin_run_panel_set_arch_id      (NapkinRunPanel     *self,
                                                const char         *arch_id);
void         napkin_run_panel_run              (NapkinRunPanel     *self);
void         napkin_run_panel_cancel           (NapkinRunPanel     *self);
gboolean     napkin_run_panel_get_running      (NapkinRunPanel     *self);
/* The run on show (borrowed), or NULL. */
json_object *napkin_run_panel_get_shown_run    (NapkinRunPanel     *self);
/* The status line: progress, or how the last run ended. */
const char  *napkin_run_panel_get_status       (NapkinRunPanel     *self);
/* The results table as text, one "quantity\tpredicted\tmeasured" line per row. */
char        *napkin_run_panel_dup_table_text   (NapkinRunPanel     *self);

G_END_DECLS
