/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The file format's JSON Schema (data/napkin.schema.json) and its validator: every
 * example matches it, bad files break the rule their message names, and the validator
 * refuses keywords it does not implement. */
#include "config.h"

#include <string.h>

#include "napkin-error.h"
#include "napkin-json-private.h"
#include "napkin-schema.h"

static json_object *
schema (void)
{
  g_autoptr(GError) error = NULL;
  json_object *s = napkin_schema_load_default (&error);

  g_assert_no_error (error);
  g_assert_nonnull (s);
  return s;
}

static void
test_schema_subset (void)
{
  g_autoptr(json_object) s = schema ();
  g_autofree char *why = napkin_schema_check (s);
  g_autoptr(json_object) other = json_tokener_parse ("{ \"type\": \"object\", \"properties\": "
                                                     "{ \"a\": { \"if\": { \"const\": 1 } } } }");
  g_autofree char *refused = napkin_schema_check (other);

  g_assert_null (why);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (s, "$schema")), ==,
                   "https://json-schema.org/draft/2020-12/schema");
  g_assert_cmpstr (refused, ==, "#/properties/a: the keyword “if” is not in the subset Napkin implements");
}

static void
test_schema_examples (void)
{
  g_autoptr(json_object) s = schema ();
  const char *dir = g_getenv ("NAPKIN_EXAMPLES_DIR");
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  guint n = 0;

  g_assert_nonnull (d);
  while ((name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_autoptr(json_object) doc = NULL;
      g_autoptr(GError) error = NULL;

      if (!g_str_has_suffix (name, ".napkin"))
        continue;
      doc = json_object_from_file (path);
      g_assert_nonnull (doc);
      if (!napkin_schema_validate (s, doc, &error))
        g_error ("%s: %s", name, error->message);
      {
        g_autofree char *text = NULL;
        gsize length;

        g_assert_true (g_file_get_contents (path, &text, &length, NULL));
        if (!napkin_schema_validate_text (s, text, length, &error))
          g_error ("%s as text: %s", name, error->message);
      }
      n++;
    }
  g_assert_cmpuint (n, >=, 14);
}

/* Bad files of tests/bad/ and the rule each breaks, with the instance's place. */
static void
test_schema_bad (void)
{
  static const struct { const char *file, *message; } cases[] = {
    { "12-axis-size-zero.napkin",
      "Against the file format's schema, rule #/properties/axes/items/properties/size/minimum: 0 is below the "
      "minimum 1 (JSON path: axes[0].size)" },
    { "22-tensor-unknown-dtype.napkin",
      "Against the file format's schema, rule #/$defs/dtype/enum: \"fp64\" is not one of \"fp32\", \"tf32\", "
      "\"fp16\", \"bf16\", \"fp8-e4m3\", \"fp8-e5m2\", \"int8\" (JSON path: tensors[1].dtype)" },
    { "18-axis-bad-name.napkin",
      "Against the file format's schema, rule #/$defs/name/pattern: \"m n\" does not match "
      "^[A-Za-z_][A-Za-z0-9_]*$ (JSON path: axes[0].name)" },
    { "11-missing-axes.napkin", "Against the file format's schema, rule #/required: missing field “axes” (JSON path: $)" },
    { "16-axis-size-fraction.napkin",
      "Against the file format's schema, rule #/properties/axes/items/properties/size/type: expected \"integer\", "
      "found 4096.5 (JSON path: axes[0].size)" },
    { "21-tensor-axis-twice.napkin",
      "Against the file format's schema, rule #/properties/tensors/items/properties/axes/uniqueItems: \"m\" is "
      "listed twice (JSON path: tensors[0].axes[1])" },
    { "52-tile-zero.napkin",
      "Against the file format's schema, rule #/properties/regions/items/properties/marks/additionalProperties/oneOf: "
      "{\"stream\":0} matches 0 of the 4 allowed forms, not exactly one (JSON path: regions[0].marks.k)" },
    { "69-eps-out-of-range.napkin",
      "Against the file format's schema, rule #/properties/nodes/items/properties/eps/exclusiveMaximum: 2 is not "
      "below 1 (JSON path: nodes[3].eps)" },
  };
  g_autoptr(json_object) s = schema ();

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "bad", cases[i].file, NULL);
      g_autoptr(json_object) doc = json_object_from_file (path);
      g_autoptr(GError) error = NULL;

      g_autofree char *text = NULL;
      gsize length;

      g_assert_nonnull (doc);
      g_assert_false (napkin_schema_validate (s, doc, &error));
      g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_SCHEMA);
      g_assert_cmpstr (error->message, ==, cases[i].message);
      /* the same from the text, member by member */
      g_clear_error (&error);
      g_assert_true (g_file_get_contents (path, &text, &length, NULL));
      g_assert_false (napkin_schema_validate_text (s, text, length, &error));
      g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_SCHEMA);
      g_assert_cmpstr (error->message, ==, cases[i].message);
    }
}

/* JSON Schema's numbers: 4096.0 is an integer; unknown fields stay allowed. */
static void
test_schema_numbers (void)
{
  g_autoptr(json_object) s = schema ();
  g_autoptr(json_object) doc = json_tokener_parse (
    "{ \"format\": \"napkin\", \"version\": 1.0, \"axes\": [ { \"name\": \"m\", \"size\": 4096.0, \"later\": true } ],"
    "  \"nodes\": [], \"from_the_future\": { \"x\": 1 } }");
  g_autoptr(GError) error = NULL;

  g_assert_true (napkin_schema_validate (s, doc, &error));
  g_assert_no_error (error);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/schema/subset", test_schema_subset);
  g_test_add_func ("/schema/examples", test_schema_examples);
  g_test_add_func ("/schema/bad", test_schema_bad);
  g_test_add_func ("/schema/numbers", test_schema_numbers);
  return g_test_run ();
}
