/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Code injection (docs/security.md §2): a file whose free text holds quotes,
 * backslashes, newlines, comment ends, #include, format directives, shell and TeX
 * commands, terminal escapes and bidi controls loads, and that text is escaped
 * wherever it is printed; the same text as a name is refused with a clear error.
 * Each hostile string carries the marker PWNED: after removing comments, generated
 * code must not contain it anywhere, and the code must still compile. */
#define _GNU_SOURCE
#define G_LOG_DOMAIN "napkin-test"

#include "config.h"

#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <json-c/json.h>

#include "napkin-describe.h"
#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-validate.h"
#ifdef NAPKIN_TEST_CODEGEN
#include "napkin-codegen.h"
#include "napkin-ir.h"
#endif
#ifdef NAPKIN_TEST_RENDER
#include "napkin-render.h"
#endif

static const char *hostile[] = {
  "quote \" and ' PWNED \"",
  "back\\slash PWNED \\",
  "new\nline PWNED\n#include <stdlib.h>\nint pwned = system (\"id\");\n",
  "*/ PWNED (); /*",
  "// PWNED \\\nint pwned;",
  "#include \"/etc/passwd\" PWNED",
  "%s%n%x%p PWNED %%",
  "$(touch /tmp/PWNED) `id` ; rm -rf ~ | cat && PWNED",
  "\x1b]0;PWNED\x07\x1b[2J\x1b[31m",
  "\xe2\x80\xae PWNED \xe2\x81\xa6 bidi \xe2\x81\xa9",
  "}\\immediate\\write18{PWNED}\\input{/etc/passwd}% PWNED",
  "</text><script>PWNED</script><![CDATA[",
  "tab\tand\rcarriage PWNED\r\n",
  "?\?/ PWNED trigraph ?\?/",
  "line sep \xe2\x80\xa8 PWNED \xe2\x80\xa9",
  "\x7f\xc2\x80\xc2\x9b PWNED C1 controls",
  "R\"x( PWNED )x\"",
};

/* An example's JSON with every free-text field replaced by `text`. */
static char *
example_with_text (const char *example,
                   const char *text)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), example, NULL);
  json_object *root = json_object_from_file (path);
  json_object *nodes;
  char *result;

  g_assert_nonnull (root);
  json_object_object_add (root, "title", json_object_new_string (text));
  json_object_object_add (root, "description", json_object_new_string (text));
  json_object_object_get_ex (root, "nodes", &nodes);
  for (size_t i = 0; i < json_object_array_length (nodes); i++)
    json_object_object_add (json_object_array_get_idx (nodes, i), "label", json_object_new_string (text));
  /* An unknown field from a "newer version", hostile in name and value: kept as is. */
  json_object_object_add (root, text, json_object_new_string (text));

  result = g_strdup (json_object_to_json_string_ext (root, JSON_C_TO_STRING_PLAIN));
  json_object_put (root);
  return result;
}

static void
assert_printable (const char *what,
                  const char *text)
{
  g_assert_true (g_utf8_validate (text, -1, NULL));
  for (const char *p = text; *p; p++)
    if ((guchar) *p < 0x20 && *p != '\n' && *p != '\t')  /* ESC, BEL, CR, BS: DEL is inert */
      g_error ("%s holds control character 0x%02x at byte %zu: …%.80s", what, (guchar) *p,
               (gsize) (p - text), p > text + 40 ? p - 40 : text);
}

static void
test_free_text_round_trip (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (hostile); i++)
    {
      g_autofree char *text = example_with_text ("flash-attention.napkin", hostile[i]);
      g_autoptr(NapkinDiagram) diagram = NULL;
      g_autoptr(NapkinDiagram) again = NULL;
      g_autoptr(GError) error = NULL;
      g_autofree char *saved = NULL;
      json_object *extra;
      json_object *value;

      diagram = napkin_diagram_load_from_data (text, -1, NAPKIN_LOAD_VALIDATE, &error);
      g_assert_no_error (error);
      g_assert_cmpstr (napkin_diagram_get_title (diagram), ==, hostile[i]);
      g_assert_cmpstr (napkin_diagram_get_description (diagram), ==, hostile[i]);
      for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
        g_assert_cmpstr (napkin_diagram_node (diagram, n)->label, ==, hostile[i]);

      /* Saved as JSON: escaped there, and read back to the same text. */
      saved = napkin_diagram_save_to_data (diagram, NULL);
      g_assert_true (g_utf8_validate (saved, -1, NULL));
      again = napkin_diagram_load_from_data (saved, -1, NAPKIN_LOAD_VALIDATE, &error);
      g_assert_no_error (error);
      g_assert_cmpstr (napkin_diagram_get_title (again), ==, hostile[i]);
      g_assert_cmpstr (napkin_diagram_node (again, 0)->label, ==, hostile[i]);
      extra = napkin_diagram_get_extra (again);
      g_assert_true (json_object_object_get_ex (extra, hostile[i], &value));
      g_assert_cmpstr (json_object_get_string (value), ==, hostile[i]);
    }
}

typedef struct
{
  const char *field;      /* where the hostile text goes */
  const char *path;       /* what the error's words must say */
} NameCase;

static void
test_names_refused (void)
{
  /* Names become identifiers in CUDA and pseudocode: only [A-Za-z_][A-Za-z0-9_]*. */
  static const NameCase cases[] = {
    { "axes[0].name", "is not a name" },
    { "tensors[0].name", "is not a name" },
    { "nodes[0].id", "is not a name" },
    { "regions[0].name", "is not a name" },
    { "wires[0].from", ": dangling wire: no operation “" },
    { "nodes[0].tensor", ": unknown tensor “" },
    { "regions[0].level", ": unknown value “" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (hostile); i++)
    for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
      {
        g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "matmul-tiled.napkin", NULL);
        json_object *root = json_object_from_file (path);
        g_auto(GStrv) parts = g_strsplit (cases[c].field, ".", 2);
        g_autofree char *array = g_strndup (parts[0], strchr (parts[0], '[') - parts[0]);
        json_object *items, *item;
        g_autoptr(NapkinDiagram) diagram = NULL;
        g_autoptr(GError) error = NULL;

        json_object_object_get_ex (root, array, &items);
        item = json_object_array_get_idx (items, 0);
        json_object_object_add (item, parts[1], json_object_new_string (hostile[i]));

        diagram = napkin_diagram_load_from_data (json_object_to_json_string (root), -1,
                                                 NAPKIN_LOAD_DEFAULT, &error);
        json_object_put (root);
        g_assert_null (diagram);
        g_assert_nonnull (error);
        g_assert_true (error->domain == NAPKIN_DOCUMENT_ERROR);
        assert_printable ("the error", error->message);
        /* Every hostile byte is shown escaped: no raw newline, escape or quote breaks out. */
        g_assert_null (strchr (error->message, '\n'));
        /* the place in words, the JSON path last (docs/file-format.md): a hostile name
         * quoted in the words cannot forge it */
        {
          g_autofree char *json_path = napkin_error_path (error->message);
          g_autofree char *words = napkin_error_summary (error->message);

          g_assert_cmpstr (json_path, ==, cases[c].field);
          if (strstr (words, cases[c].path) == NULL)
            g_error ("%s = %s: expected “…%s…”, got “%s”", cases[c].field, hostile[i], cases[c].path,
                     error->message);
        }
      }
}

static void
test_nul_and_bad_utf8 (void)
{
  /* The label's value, or (key) a field name put before it. json-c let a \u0000 in a
   * field name through, cutting the name there (and saved it cut), and turned a lone
   * surrogate into U+FFFD: the scan before json-c refuses both, naming the place. */
  static const struct { const char *json; gboolean key; const char *expected; } cases[] = {
    { "\"a\\u0000b\"", FALSE, "The label of the input “a”: \\u0000 (a NUL character) is not allowed in text (JSON path: nodes[0].label)" },
    { "\"\xff\xfe\"", FALSE, "The label of the input “a”: not valid UTF-8 text (JSON path: nodes[0].label)" },
    { "\"\xc0\xaf\"", FALSE, "The label of the input “a”: not valid UTF-8 text (JSON path: nodes[0].label)" },            /* overlong '/' */
    { "\"\xed\xa0\x80\"", FALSE, "The label of the input “a”: not valid UTF-8 text (JSON path: nodes[0].label)" },        /* a surrogate */
    { "\"\\ud800\"", FALSE,
      "The label of the input “a”: \\uD800 is half of a surrogate pair without its other half, not a character (JSON path: nodes[0].label)" },
    { "\"\\udc00x\"", FALSE,
      "The label of the input “a”: \\uDC00 is half of a surrogate pair without its other half, not a character (JSON path: nodes[0].label)" },
    { "\"\\ud800\\u0041\"", FALSE,
      "The label of the input “a”: \\uD800 is half of a surrogate pair without its other half, not a character (JSON path: nodes[0].label)" },
    { "\"a\tb\"", FALSE, "The label of the input “a”: a raw control character (U+0009); JSON writes it as \\t (JSON path: nodes[0].label)" },
    { "\"x\\u0000y\": 1, \"k\"", TRUE,
      "The input “a”: a field name holds \\u0000 (a NUL character), which is not allowed (JSON path: nodes[0])" },
    { "\"\\udbff\": 1, \"k\"", TRUE,
      "The input “a”: a field name holds \\uDBFF, half of a surrogate pair without its other half, not a character (JSON path: nodes[0])" },
    { "\"\xff\": 1, \"k\"", TRUE, "The input “a”: a field name is not valid UTF-8 text (JSON path: nodes[0])" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "matmul.napkin", NULL);
      g_autofree char *contents = NULL;
      g_autoptr(GString) text = NULL;
      g_autoptr(NapkinDiagram) diagram = NULL;
      g_autoptr(GError) error = NULL;
      char *label;

      g_assert_true (g_file_get_contents (path, &contents, NULL, NULL));
      text = g_string_new (contents);
      label = strstr (text->str, "\"label\": \"A\"");
      g_assert_nonnull (label);
      if (cases[i].key)
        {
          /* "KEY": 1, "k": "A" */
          g_string_erase (text, label - text->str, 7);
          g_string_insert (text, label - text->str, cases[i].json);
        }
      else
        {
          g_string_erase (text, label - text->str + 9, 3);
          g_string_insert (text, label - text->str + 9, cases[i].json);
        }

      diagram = napkin_diagram_load_from_data (text->str, text->len, NAPKIN_LOAD_DEFAULT, &error);
      g_assert_null (diagram);
      g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_FORMAT);
      g_assert_cmpstr (error->message, ==, cases[i].expected);
    }

  /* A NUL after the document used to end it silently: what followed was ignored. */
  {
    g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "fuzz", "regressions",
                                              "nul-after-document.napkin", NULL);
    g_autofree char *contents = NULL;
    g_autoptr(NapkinDiagram) diagram = NULL;
    g_autoptr(GError) error = NULL;
    gsize length;

    g_assert_true (g_file_get_contents (path, &contents, &length, NULL));
    g_assert_cmpuint (strlen (contents), <, length);
    diagram = napkin_diagram_load_from_data (contents, length, NAPKIN_LOAD_DEFAULT, &error);
    g_assert_null (diagram);
    g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_PARSE);
    g_assert_cmpstr (error->message, ==, "The file is not a Napkin diagram: it is not valid JSON: there is text after the end of its JSON document");
  }
}

/* Removes C and C++ comments, keeping string and character literals, so that what is
 * left is what the compiler reads as code. */
static char *
strip_comments (const char *code)
{
  GString *out = g_string_new (NULL);
  const char *p = code;

  while (*p)
    {
      if (p[0] == '/' && p[1] == '*')
        {
          const char *end = strstr (p + 2, "*/");

          g_assert_nonnull (end);  /* an unterminated comment would be a bug too */
          p = end + 2;
          g_string_append_c (out, ' ');
        }
      else if (p[0] == '/' && p[1] == '/')
        {
          /* A backslash before the newline continues a // comment: follow it. */
          while (*p && !(*p == '\n' && p[-1] != '\\'))
            p++;
        }
      else if (*p == '"' || *p == '\'')
        {
          char quote = *p;

          g_string_append_c (out, *p++);
          while (*p && *p != quote)
            {
              if (*p == '\\' && p[1])
                g_string_append_c (out, *p++);
              g_string_append_c (out, *p++);
            }
          if (*p)
            g_string_append_c (out, *p++);
        }
      else
        g_string_append_c (out, *p++);
    }
  return g_string_free (out, FALSE);
}

static void
assert_no_user_text (const char *what,
                     const char *code)
{
  g_autofree char *stripped = strip_comments (code);

  if (strstr (stripped, "PWNED") != NULL || strstr (stripped, "pwned") != NULL)
    g_error ("user text outside comments in the %s:\n%s", what, strstr (stripped, "PWNED"));
  g_assert_true (g_utf8_validate (code, -1, NULL));
}

#ifdef NAPKIN_TEST_CODEGEN
static const char *codegen_examples[] = {
  "matmul.napkin", "matmul-tiled.napkin", "softmax.napkin", "layernorm.napkin",
  "mlp.napkin", "attention.napkin", "flash-attention.napkin",
};

static gboolean
compile_with_nvcc (const char  *source,
                   char       **log)
{
  const char *nvcc = g_file_test (NAPKIN_TEST_NVCC, G_FILE_TEST_IS_EXECUTABLE)
                     ? NAPKIN_TEST_NVCC : NULL;
  g_autofree char *dir = g_dir_make_tmp ("napkin-inject-XXXXXX", NULL);
  g_autofree char *cu = g_build_filename (dir, "bench.cu", NULL);
  g_autofree char *ptx = g_build_filename (dir, "bench.ptx", NULL);
  g_autoptr(GError) error = NULL;
  int status = -1;

  if (nvcc == NULL)
    return TRUE;
  g_assert_true (g_file_set_contents (cu, source, -1, NULL));
  {
    const char *argv[] = { nvcc, "-arch=sm_80", "-ptx", "-o", ptx, cu, NULL };

    g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, log, &status, &error);
  }
  g_assert_no_error (error);
  g_unlink (cu);
  g_unlink (ptx);
  g_rmdir (dir);
  return g_spawn_check_wait_status (status, NULL);
}

static void
test_cuda (void)
{
  guint compiled = 0;

  for (guint i = 0; i < G_N_ELEMENTS (hostile); i++)
    for (guint e = 0; e < G_N_ELEMENTS (codegen_examples); e++)
      {
        g_autofree char *text = example_with_text (codegen_examples[e], hostile[i]);
        g_autoptr(NapkinDiagram) diagram = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(NapkinCudaModule) module = NULL;
        g_autoptr(NapkinCudaModule) reference = NULL;
        g_autofree char *pseudo = NULL;
        g_autofree char *standalone = NULL;
        NapkinIrProgram *program;

        diagram = napkin_diagram_load_from_data (text, -1, NAPKIN_LOAD_VALIDATE, &error);
        g_assert_no_error (error);

        program = napkin_ir_lower (diagram, NAPKIN_LOWER_DEFAULT, &error);
        g_assert_no_error (error);
        pseudo = napkin_codegen_pseudocode (program);
        assert_no_user_text ("pseudocode", pseudo);
        module = napkin_codegen_cuda (program, NAPKIN_CODEGEN_DEFAULT, NULL, &error);
        g_assert_no_error (error);
        assert_no_user_text ("CUDA module", module->source);

        program = napkin_ir_lower (diagram, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, &error);
        g_assert_no_error (error);
        reference = napkin_codegen_cuda (program, NAPKIN_CODEGEN_GENERIC_ONLY, "napkin_ref_", &error);
        g_assert_no_error (error);

        standalone = napkin_codegen_standalone (module, reference, napkin_diagram_get_title (diagram));
        assert_no_user_text ("standalone .cu", standalone);

        /* It still compiles: the escaping kept every comment closed. Each hostile
         * string once (on the attention example), to bound the time nvcc takes. */
        if (strcmp (codegen_examples[e], "flash-attention.napkin") == 0)
          {
            g_autofree char *log = NULL;

            if (napkin_nvrtc_available ())
              {
                g_autoptr(GBytes) cubin = napkin_nvrtc_compile (module->source, "sm_80", &log, &error);

                if (cubin == NULL)
                  g_error ("NVRTC rejected the module for hostile text %u: %s\n%s", i,
                           error ? error->message : "", log ? log : "");
                compiled++;
              }
            g_clear_pointer (&log, g_free);
            if (!compile_with_nvcc (standalone, &log))
              g_error ("nvcc rejected the standalone .cu for hostile text %u:\n%s", i, log);
          }
      }

  g_test_message ("%u modules compiled by NVRTC%s", compiled,
                  g_file_test (NAPKIN_TEST_NVCC, G_FILE_TEST_IS_EXECUTABLE)
                  ? ", standalone .cu files by nvcc" : "; no nvcc here");
}
#endif

#ifdef NAPKIN_TEST_RENDER
static void
assert_tex_safe (const char *tikz)
{
  int depth = 0;

  g_assert_null (strstr (tikz, "\\write18"));
  g_assert_null (strstr (tikz, "\\input"));
  g_assert_null (strstr (tikz, "\\immediate"));
  g_assert_null (strstr (tikz, "\n\n"));  /* a blank line is \par: it ends a node's text */
  assert_printable ("the TikZ", tikz);
  /* Napkin's own % comments come before the picture; inside it, none. */
  tikz = strstr (tikz, "\\begin{tikzpicture}");
  g_assert_nonnull (tikz);
  for (const char *p = tikz; *p; p++)
    {
      if (*p == '\\' && p[1] != '\0')
        {
          p++;  /* an escaped character, or the first letter of a command */
          continue;
        }
      if (*p == '%')
        g_error ("unescaped %% starts a TeX comment: %s", p);
      depth += *p == '{' ? 1 : *p == '}' ? -1 : 0;
      g_assert_cmpint (depth, >=, 0);
    }
  g_assert_cmpint (depth, ==, 0);
}

static void
test_render (void)
{
  g_autofree char *dir = g_dir_make_tmp ("napkin-inject-XXXXXX", NULL);
  g_autofree char *svg_path = g_build_filename (dir, "out.svg", NULL);

  for (guint i = 0; i < G_N_ELEMENTS (hostile); i++)
    {
      g_autofree char *text = example_with_text ("flash-attention.napkin", hostile[i]);
      g_autoptr(NapkinDiagram) diagram = NULL;
      g_autoptr(GError) error = NULL;
      g_autofree char *tikz = NULL;
      g_autofree char *svg = NULL;

      diagram = napkin_diagram_load_from_data (text, -1, NAPKIN_LOAD_VALIDATE, &error);
      g_assert_no_error (error);

      tikz = napkin_render_to_tikz (diagram);
      assert_tex_safe (tikz);

      g_assert_true (napkin_render_export (diagram, svg_path, NAPKIN_EXPORT_SVG, 1.0, &error));
      g_assert_no_error (error);
      g_assert_true (g_file_get_contents (svg_path, &svg, NULL, NULL));
      g_assert_null (strstr (svg, "<script"));
      g_assert_null (strstr (svg, "PWNED"));   /* Cairo writes text as glyph outlines */
      g_unlink (svg_path);
    }
  g_rmdir (dir);
}
#endif

/* The command line prints titles, labels and errors to a terminal: no escapes. */
static void
test_cli (void)
{
  g_autofree char *cli = g_build_filename (g_getenv ("NAPKIN_BUILD_DIR"), "src", "cli", "napkin-cli", NULL);
  g_autofree char *dir = g_dir_make_tmp ("napkin-inject-XXXXXX", NULL);
  g_autofree char *file = g_build_filename (dir, "hostile.napkin", NULL);
  const char *commands[][3] = {
    { "validate", NULL }, { "info", NULL }, { "info", "--json" }, { "codegen", NULL },
    { "codegen", "--pseudocode" }, { "perf", NULL },
  };

  if (!g_file_test (cli, G_FILE_TEST_IS_EXECUTABLE))
    {
      g_test_skip ("napkin-cli is not built");
      return;
    }

  for (guint i = 0; i < G_N_ELEMENTS (hostile); i++)
    {
      g_autofree char *text = example_with_text ("matmul-tiled.napkin", hostile[i]);

      g_assert_true (g_file_set_contents (file, text, -1, NULL));
      for (guint c = 0; c < G_N_ELEMENTS (commands); c++)
        {
          const char *argv[] = { cli, commands[c][0], file, commands[c][1], NULL };
          g_autofree char *out = NULL;
          g_autofree char *err = NULL;
          g_autoptr(GError) error = NULL;
          int status;

          g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
          g_assert_no_error (error);
          if (strstr (err, "unknown command") != NULL)
            continue;  /* that layer is not built */
          assert_printable ("napkin-cli's output", out);
          assert_printable ("napkin-cli's errors", err);
        }
    }
  g_unlink (file);
  g_rmdir (dir);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/security/injection/free-text-round-trip", test_free_text_round_trip);
  g_test_add_func ("/security/injection/names-refused", test_names_refused);
  g_test_add_func ("/security/injection/nul-and-bad-utf8", test_nul_and_bad_utf8);
#ifdef NAPKIN_TEST_CODEGEN
  g_test_add_func ("/security/injection/cuda", test_cuda);
#endif
#ifdef NAPKIN_TEST_RENDER
  g_test_add_func ("/security/injection/render", test_render);
#endif
  g_test_add_func ("/security/injection/cli", test_cli);

  return g_test_run ();
}
