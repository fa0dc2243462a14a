/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

#include "napkin-arch.h"
#include "napkin-derive.h"
#include "napkin-history.h"
#include "napkin-tune.h"

G_BEGIN_DECLS

/* "Suggest tiles" (docs/editor.md): the relabelings napkin_tune ranks best for the
 * document and an architecture (with regions it proposes when the document has
 * none), searched in a worker thread on the document as JSON, listed with their
 * predicted time, throughput, bound, footprint and speed-up; the selected one is
 * previewed ("preview" signal, for the analysis pane) and Apply sets it as one
 * undo step. */

#define NAPKIN_TYPE_TILE_SUGGESTIONS (napkin_tile_suggestions_get_type ())
G_DECLARE_FINAL_TYPE (NapkinTileSuggestions, napkin_tile_suggestions, NAPKIN, TILE_SUGGESTIONS, GtkPopover)

GtkWidget                 *napkin_tile_suggestions_new            (void);
/* Starts a search (cancelling one under way) for the history's diagram as it is
 * now; has_dtype FALSE: the element types as drawn. */
void                       napkin_tile_suggestions_search         (NapkinTileSuggestions *self,
                                                                   NapkinHistory         *history,
                                                                   NapkinArch            *arch,
                                                                   gboolean               has_dtype,
                                                                   NapkinDtype            dtype);
gboolean                   napkin_tile_suggestions_is_searching   (NapkinTileSuggestions *self);
/* The list shown, fastest first, and the tiles the speed-ups are over: the
 * document's own, or the first tiles of the regions the model proposed for a
 * document without any (NULL when infeasible or nothing was found). */
guint                      napkin_tile_suggestions_get_n_items    (NapkinTileSuggestions *self);
const NapkinTuneCandidate *napkin_tile_suggestions_get_item       (NapkinTileSuggestions *self,
                                                                   guint                  index);
const NapkinTuneCandidate *napkin_tile_suggestions_get_current    (NapkinTileSuggestions *self);
/* A diagram without regions that derives to several kernels shows its derivation
 * (napkin_derive, as `napkin-cli tune` does) instead of the list, and Apply sets
 * every kernel's region as one undo step; NULL when the list shows. */
const NapkinDerivation    *napkin_tile_suggestions_get_derivation (NapkinTileSuggestions *self);
/* Why nothing is listed (the search's error), or NULL. */
const char                *napkin_tile_suggestions_get_error      (NapkinTileSuggestions *self);
/* The status line above the list. */
const char                *napkin_tile_suggestions_get_status     (NapkinTileSuggestions *self);
/* Selects a row as a click does; -1 selects none. */
void                       napkin_tile_suggestions_select         (NapkinTileSuggestions *self,
                                                                   int                    index);
int                        napkin_tile_suggestions_get_selected   (NapkinTileSuggestions *self);
/* Applies the selected row to the document as one undo step (the Apply button). */
gboolean                   napkin_tile_suggestions_apply          (NapkinTileSuggestions *self,
                                                                   GError               **error);
/* Measure: runs the best `count` (the button: NAPKIN_TILE_SUGGESTIONS_MEASURE_K) on
 * the local GPU through napkin-runner (NapkinRunJob, a child process), one after
 * the other; the Measured column fills in with the median time and its ratio to
 * the prediction, or how the run ended ("fault", "timeout", …). */
#define NAPKIN_TILE_SUGGESTIONS_MEASURE_K 3
void                       napkin_tile_suggestions_measure        (NapkinTileSuggestions *self,
                                                                   guint                  count);
gboolean                   napkin_tile_suggestions_is_measuring   (NapkinTileSuggestions *self);
/* Seconds, or NAN when not measured (yet). */
double                     napkin_tile_suggestions_get_measured   (NapkinTileSuggestions *self,
                                                                   guint                  index);
/* Tests put a test double in place of napkin-runner. */
void                       napkin_tile_suggestions_set_runner     (NapkinTileSuggestions *self,
                                                                   const char * const    *command);
/* "block.m=parallel:128" specs in words, one region a line. */
char                      *napkin_tile_suggestions_describe       (const NapkinTuneCandidate *candidate);

G_END_DECLS
