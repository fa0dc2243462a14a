/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-fuzz"

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-fuzz-one.h"
#include "napkin-validate.h"
#ifdef NAPKIN_FUZZ_PERF
#include "napkin-model.h"
#endif
#ifdef NAPKIN_FUZZ_LOWER
#include "napkin-interp.h"
#include "napkin-ir.h"
#endif
#ifdef NAPKIN_FUZZ_RENDER
#include "napkin-render.h"
#endif
#ifdef NAPKIN_FUZZ_CODEGEN
#include "napkin-codegen.h"
#endif

/* abort (), not g_error (): libFuzzer keeps the input of a SIGABRT, not of a SIGTRAP. */
#define broken(...) G_STMT_START { g_printerr ("napkin-fuzz: invariant broken: " __VA_ARGS__); \
                                   g_printerr ("\n"); abort (); } G_STMT_END

/* Text that reaches a terminal or a dialog must be UTF-8 without control characters,
 * or a file could rewrite the user's terminal (escape sequences) or forge lines. */
static void
check_message (const char *message)
{
  if (message == NULL || *message == '\0')
    broken ("empty error message");
  if (!g_utf8_validate (message, -1, NULL))
    broken ("error message is not UTF-8: %s", message);
  for (const char *p = message; *p; p++)
    if ((guchar) *p < 0x20 || *p == 0x7f)
      broken ("error message holds control character 0x%02x: %s", (guchar) *p, message);
}

static void
check_text (const char *what,
            const char *text)
{
  if (text == NULL || !g_utf8_validate (text, -1, NULL))
    broken ("%s is not UTF-8 text", what);
}

/* The later layers, where they are built: each answers a valid diagram or refuses it
 * with an error; none may crash, overflow or print what it was not given. */
static void
check_layers (NapkinDiagram *diagram)
{
#ifdef NAPKIN_FUZZ_PERF
  {
    NapkinArchRegistry *registry = napkin_arch_registry_get_default ();

    for (guint i = 0; i < napkin_arch_registry_count (registry); i++)
      {
        NapkinAnalyzeOptions options = { 0 };
        g_autoptr(NapkinAnalysis) analysis = NULL;
        g_autoptr(GError) error = NULL;

        analysis = napkin_analyze (diagram, napkin_arch_registry_get (registry, i), &options, &error);
        if (analysis == NULL)
          {
            if (error == NULL)
              broken ("napkin_analyze failed without an error");
            check_message (error->message);
            continue;
          }
        {
          json_object *json = napkin_analysis_to_json (analysis);

          check_text ("the analysis as JSON", json_object_to_json_string (json));
          json_object_put (json);
        }
        for (guint e = 0; analysis->errors && e < analysis->errors->len; e++)
          check_message (g_ptr_array_index (analysis->errors, e));
        for (guint w = 0; analysis->warnings && w < analysis->warnings->len; w++)
          check_message (g_ptr_array_index (analysis->warnings, w));
      }
  }
#endif

#ifdef NAPKIN_FUZZ_LOWER
  for (guint plain = 0; plain < 2; plain++)
    {
      g_autoptr(NapkinIrProgram) program = NULL;
      g_autoptr(GError) error = NULL;

      program = napkin_ir_lower (diagram, plain ? NAPKIN_LOWER_PLAIN : NAPKIN_LOWER_DEFAULT, &error);
      if (program == NULL)
        {
          if (error == NULL)
            broken ("napkin_ir_lower failed without an error");
          check_message (error->message);
          continue;
        }
#ifdef NAPKIN_FUZZ_CODEGEN
      {
        g_autofree char *pseudo = napkin_codegen_pseudocode (program);
        g_autoptr(NapkinCudaModule) module = NULL;

        check_text ("the pseudocode", pseudo);
        /* The module takes the program. */
        module = napkin_codegen_cuda (g_steal_pointer (&program), NAPKIN_CODEGEN_DEFAULT, NULL, &error);
        if (module == NULL)
          {
            if (error == NULL)
              broken ("napkin_codegen_cuda failed without an error");
            check_message (error->message);
          }
        else
          check_text ("the CUDA source", module->source);
      }
#endif
    }
#endif

#ifdef NAPKIN_FUZZ_RENDER
  {
    g_autofree char *tikz = napkin_render_to_tikz (diagram);
    cairo_surface_t *surface = cairo_recording_surface_create (CAIRO_CONTENT_COLOR_ALPHA, NULL);
    cairo_t *cr = cairo_create (surface);
    NapkinRenderOptions options = { NULL, 0, -1, -1, NULL };

    check_text ("the TikZ export", tikz);
    napkin_render_draw (cr, diagram, &options);
    if (cairo_status (cr) != CAIRO_STATUS_SUCCESS)
      broken ("drawing failed: %s", cairo_status_to_string (cairo_status (cr)));
    cairo_destroy (cr);
    cairo_surface_destroy (surface);
  }
#endif
}

static void
check_diagram (NapkinDiagram *diagram)
{
  g_autoptr(GPtrArray) problems = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) reloaded = NULL;
  g_autoptr(GError) reload_error = NULL;
  g_autofree char *saved = NULL;
  g_autofree char *saved_again = NULL;
  gsize saved_len, saved_again_len;
  NapkinFlops total;
  gboolean valid;

  problems = napkin_diagram_check (diagram);
  for (guint i = 0; i < problems->len; i++)
    {
      const NapkinProblem *problem = g_ptr_array_index (problems, i);

      check_message (problem->message);
      /* words, with the path kept apart (docs/file-format.md, "Error messages") */
      if (problem->path == NULL || *problem->path == '\0')
        broken ("problem without a path: %s", problem->message);
      check_message (problem->path);
      if (g_str_has_prefix (problem->message, problem->path))
        broken ("problem message starts with its JSON path %s: %s", problem->path, problem->message);
      if ((guint) problem->kind >= NAPKIN_N_ITEM_KINDS
          || problem->index >= napkin_diagram_count (diagram, problem->kind))
        broken ("problem points at a missing item: %s", problem->message);
    }

  /* An empty diagram has no problem to mark on the canvas, but is not valid. */
  valid = napkin_diagram_validate (diagram, &error);
  if (valid != (problems->len == 0 && napkin_diagram_n_nodes (diagram) > 0))
    broken ("validate says %d but check found %u problems", valid, problems->len);
  if (error != NULL)
    check_message (error->message);

  /* The model: must answer or refuse, never overflow (UBSan watches the arithmetic). */
  napkin_diagram_total_flops (diagram, &total);
  for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
    {
      const NapkinTensorType *type = napkin_diagram_node_type (diagram, n);
      g_autofree char *text = napkin_diagram_type_to_string (diagram, type);
      gint64 elements;

      check_text ("a node's type", text);
      if (type->valid)
        napkin_diagram_type_elements (diagram, type, &elements);
    }
  napkin_diagram_topo_order (diagram);

  /* Whatever loads saves to a document that loads again to the same bytes. */
  saved = napkin_diagram_save_to_data (diagram, &saved_len);
  if (strlen (saved) != saved_len || !g_utf8_validate (saved, saved_len, NULL))
    broken ("saved document is not UTF-8 text");
  reloaded = napkin_diagram_load_from_data (saved, saved_len, NAPKIN_LOAD_DEFAULT, &reload_error);
  if (reloaded == NULL)
    broken ("a loaded diagram saved to a document that does not load: %s\n%s",
             reload_error->message, saved);
  saved_again = napkin_diagram_save_to_data (reloaded, &saved_again_len);
  if (saved_len != saved_again_len || memcmp (saved, saved_again, saved_len) != 0)
    broken ("save, load, save is not stable:\n%s\n----\n%s", saved, saved_again);

  if (valid != napkin_diagram_validate (reloaded, NULL))
    broken ("validity changed across a save and reload");

  if (valid)
    check_layers (diagram);
}

void
napkin_fuzz_one (const guint8 *data,
                 gsize         size)
{
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *copy = NULL;

  /* Exactly `size` bytes with no terminator after them, as a file read gives
   * them: ASan then catches any read past the end. */
  copy = g_malloc (MAX (size, 1));
  memcpy (copy, data, size);

  diagram = napkin_diagram_load_from_data (copy, (gssize) size, NAPKIN_LOAD_DEFAULT, &error);
  if (diagram == NULL)
    {
      if (error == NULL || error->domain != NAPKIN_DOCUMENT_ERROR)
        broken ("load failed without a document error");
      check_message (error->message);
      return;
    }
  if (error != NULL)
    broken ("load succeeded and set an error");

  check_diagram (diagram);
}
