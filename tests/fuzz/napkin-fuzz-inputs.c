/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-fuzz"

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "napkin-arch.h"
#include "napkin-file.h"
#include "napkin-fuzz-inputs.h"
#include "napkin-import.h"
#include "napkin-model.h"
#include "napkin-text.h"
#include "napkin-validate.h"

#define broken(...) G_STMT_START { g_printerr ("napkin-fuzz: invariant broken: " __VA_ARGS__); \
                                   g_printerr ("\n"); abort (); } G_STMT_END

/* The longest error a hostile input may make: its quotes are cut (napkin-text.h). */
#define MAX_MESSAGE 4096

/* Exactly the bytes, no NUL after them (ASan sees a read past the end), and a
 * pointer even for none. */
static char *
bytes (const guint8 *data,
       gsize         size)
{
  char *copy = g_malloc (MAX (size, 1));

  memcpy (copy, data, size);
  return copy;
}

/* Lines a terminal prints as they are (the graph importer's refusals are one line
 * each), of a bounded length. */
static void
check_error (const GError *error)
{
  if (error == NULL || error->message == NULL || *error->message == '\0')
    broken ("a failure without an error message");
  for (const char *line = error->message; line != NULL;)
    {
      const char *end = strchr (line, '\n');
      gsize length = end ? (gsize) (end - line) : strlen (line);

      if (napkin_text_find_unsafe (line, length) >= 0)
        broken ("error message holds a control or bidi character or bytes that are not UTF-8: %s", error->message);
      line = end ? end + 1 : NULL;
    }
  if (strlen (error->message) > MAX_MESSAGE)
    broken ("error message of %zu bytes: %.200s…", strlen (error->message), error->message);
}

/* An imported diagram is one the loader takes back, as the file would be written. */
static void
check_imported (NapkinDiagram *diagram)
{
  g_autoptr(NapkinDiagram) back = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;
  gsize length;

  if (!napkin_diagram_validate (diagram, &error))
    broken ("an import made an invalid diagram: %s", error->message);
  text = napkin_diagram_save_to_data (diagram, &length);
  back = napkin_diagram_load_from_data (text, length, NAPKIN_LOAD_VALIDATE, &error);
  if (back == NULL)
    broken ("an import made a diagram the loader refuses: %s", error->message);
}

void
napkin_fuzz_einsum (const guint8 *data,
                    gsize         size)
{
  g_autofree char *text = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;

  /* as napkin_import_file hands it over: UTF-8 without NUL */
  if (memchr (data, '\0', size) != NULL || !g_utf8_validate ((const char *) data, size, NULL))
    return;
  text = g_strndup ((const char *) data, size);
  diagram = napkin_import_einsum (text, "fuzz.einsum", &error);
  if (diagram == NULL)
    check_error (error);
  else
    check_imported (diagram);
}

void
napkin_fuzz_graph (const guint8 *data,
                   gsize         size)
{
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;
  /* exactly the bytes, no NUL after them: ASan sees a read past the end */
  g_autofree char *copy = bytes (data, size);

  diagram = napkin_import_graph (copy, size, "fuzz.json", &error);
  if (diagram == NULL)
    check_error (error);
  else
    check_imported (diagram);
}

/* A small diagram every profile prices: matmul with a tiled region. */
static NapkinDiagram *
priced_diagram (void)
{
  static NapkinDiagram *diagram;

  if (diagram == NULL)
    {
      g_autofree char *path = g_build_filename (NAPKIN_SOURCE_DATADIR, "examples", "matmul-tiled.napkin", NULL);

      diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, NULL);
      if (diagram == NULL)
        broken ("cannot load %s", path);
    }
  return diagram;
}

void
napkin_fuzz_profile (const guint8 *data,
                     gsize         size)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *copy = bytes (data, size);
  NapkinArch *arch = napkin_arch_load_from_data (copy, size, &error);
  NapkinAnalyzeOptions options = { 0 };
  NapkinAnalysis *analysis;
  json_object *json;

  if (arch == NULL)
    {
      check_error (error);
      return;
    }
  /* what loads is what the model may divide by */
  if (!napkin_arch_check (arch, &error))
    broken ("a profile loads but fails the model's check: %s", error->message);
  /* its save loads back */
  json = napkin_arch_to_json (arch);
  {
    const char *text = json_object_to_json_string (json);
    NapkinArch *back = napkin_arch_load_from_data (text, -1, &error);

    if (back == NULL)
      broken ("a profile's save does not load: %s", error->message);
    napkin_arch_unref (back);
  }
  json_object_put (json);
  for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
    {
      NapkinTensorClass used;

      napkin_arch_best_path (arch, c, TRUE, &used);
      napkin_arch_best_path (arch, c, FALSE, &used);
    }
  analysis = napkin_analyze (priced_diagram (), arch, &options, &error);
  if (analysis == NULL)
    check_error (error);
  g_clear_pointer (&analysis, napkin_analysis_free);
  napkin_arch_unref (arch);
}
