/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Limits (docs/security.md §3): absurd sizes are refused with a clear error
 * naming the place, or handled in bounded time; no arithmetic overflows (the
 * sanitizer build runs this with UBSan). */
#define G_LOG_DOMAIN "napkin-test"

#include "config.h"

#include <stdio.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-validate.h"

/* Generous: the same work takes about a second in a plain build; quadratic work
 * would take hours. Sanitizers (full stacks at every malloc) slow it 30 times. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifdef SANITIZED
/* There the point is memory errors, not speed: a tenth of the sizes. */
#define TIME_LIMIT_S 600.0
#define SCALE        10
#else
#define TIME_LIMIT_S 60.0
#define SCALE        1
#endif

/* Linear, not quadratic: the work for n items takes about 10 times that for n/10;
 * quadratic work takes 100 times. A ratio holds on a slow or busy machine. */
static void
assert_linear (const char *what,
               double      small_s,
               double      large_s)
{
  g_test_message ("%s: %.3f s for n/10, %.3f s for n (ratio %.1f; linear is about 10)",
                  what, small_s, large_s, large_s / MAX (small_s, 1e-3));
  g_assert_cmpfloat (large_s, <, 30 * MAX (small_s, 0.01));
  g_assert_cmpfloat (large_s, <, TIME_LIMIT_S);
}

static GString *
doc_begin (const char *axes)
{
  GString *s = g_string_new ("{\"format\": \"napkin\", \"version\": 1, \"axes\": [");

  g_string_append (s, axes);
  g_string_append (s, "], ");
  return s;
}

/* Loads (structure only), then returns the first problem's message, or NULL. */
static char *
load_and_check (const char  *text,
                gsize        length,
                GError     **load_error,
                double      *seconds)
{
  g_autoptr(GTimer) timer = g_timer_new ();
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;
  char *message = NULL;

  diagram = napkin_diagram_load_from_data (text, length, NAPKIN_LOAD_DEFAULT, load_error);
  if (diagram != NULL && !napkin_diagram_validate (diagram, &error))
    message = g_strdup (error->message);
  if (diagram != NULL && message == NULL)
    message = g_strdup ("");
  *seconds = g_timer_elapsed (timer, NULL);
  return message;
}

static void
assert_problem (const char *text,
                const char *expected_start)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *message = NULL;
  double seconds;

  message = load_and_check (text, strlen (text), &error, &seconds);
  g_assert_no_error (error);
  g_assert_nonnull (message);
  if (!g_str_has_prefix (message, expected_start))
    g_error ("expected “%s…”, got “%s”", expected_start, message);
}

/* 8 axes of 2^40: their product needs 320 bits. */
static void
test_product_overflow (void)
{
  g_autoptr(GString) s = g_string_new ("{\"format\": \"napkin\", \"version\": 1, \"axes\": [");

  for (int i = 0; i < 8; i++)
    g_string_append_printf (s, "%s{\"name\": \"a%d\", \"size\": 1099511627776}", i ? ", " : "", i);
  g_string_append (s, "], \"tensors\": [{\"name\": \"X\", \"axes\": [\"a0\", \"a1\", \"a2\", \"a3\", \"a4\", "
                      "\"a5\", \"a6\", \"a7\"], \"dtype\": \"fp32\"}], \"nodes\": ["
                      "{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\"}, "
                      "{\"id\": \"r\", \"kind\": \"map\", \"fn\": \"relu\"}, "
                      "{\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"X\"}], "
                      "\"wires\": [{\"from\": \"x\", \"to\": \"r\"}, {\"from\": \"r\", \"to\": \"y\"}]}");
  assert_problem (s->str, "Tensor “X” has more elements than 64 bits can count (JSON path: tensors[0])");
}

/* 2^61 elements fit in 64 bits, 2^61 × 4 bytes do not. */
static void
test_bytes_overflow (void)
{
  const char *text =
    "{\"format\": \"napkin\", \"version\": 1, "
    "\"axes\": [{\"name\": \"a\", \"size\": 1099511627776}, {\"name\": \"b\", \"size\": 2097152}], "
    "\"tensors\": [{\"name\": \"X\", \"axes\": [\"a\", \"b\"], \"dtype\": \"fp32\"}], "
    "\"nodes\": [{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\"}, "
    "{\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"X\"}], \"wires\": [{\"from\": \"x\", \"to\": \"y\"}]}";

  assert_problem (text, "Tensor “X” has more bytes than 64 bits can count (JSON path: tensors[0])");
}

/* Each tensor fits, but 2·m·n·k FLOPs (2^64) do not. */
static void
test_flops_overflow (void)
{
  const char *text =
    "{\"format\": \"napkin\", \"version\": 1, \"axes\": [{\"name\": \"m\", \"size\": 2097152}, "
    "{\"name\": \"n\", \"size\": 2097152}, {\"name\": \"k\", \"size\": 2097152}], "
    "\"tensors\": [{\"name\": \"A\", \"axes\": [\"m\", \"k\"], \"dtype\": \"int8\"}, "
    "{\"name\": \"B\", \"axes\": [\"k\", \"n\"], \"dtype\": \"int8\"}, "
    "{\"name\": \"C\", \"axes\": [\"m\", \"n\"], \"dtype\": \"int8\"}], "
    "\"nodes\": [{\"id\": \"a\", \"kind\": \"input\", \"tensor\": \"A\"}, "
    "{\"id\": \"b\", \"kind\": \"input\", \"tensor\": \"B\"}, "
    "{\"id\": \"mm\", \"kind\": \"contract\", \"out\": [\"m\", \"n\"]}, "
    "{\"id\": \"c\", \"kind\": \"output\", \"tensor\": \"C\"}], "
    "\"wires\": [{\"from\": \"a\", \"to\": \"mm\", \"port\": 0}, {\"from\": \"b\", \"to\": \"mm\", \"port\": 1}, "
    "{\"from\": \"mm\", \"to\": \"c\"}]}";
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;
  NapkinFlops flops;

  assert_problem (text, "The contraction “mm” is too large: its size overflows 64 bits (JSON path: nodes[2])");

  diagram = napkin_diagram_load_from_data (text, -1, NAPKIN_LOAD_DEFAULT, &error);
  g_assert_no_error (error);
  g_assert_false (napkin_diagram_total_flops (diagram, &flops));
}

/* Overrides from the command line go through the same limits. */
static void
test_override_limits (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "matmul-tiled.napkin", NULL);
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;
  const char *bad_axes[] = {
    "m=1099511627777", "m=99999999999999999999999", "m=0", "m=-1", "m=1e9", "m=", "m", "=5",
    "m=0x10", "m= 5", "nosuch=5",
  };
  const char *bad_tiles[] = {
    "block.m=1099511627777", "block.m=parallel:0", "block.m=stream:-5", "block.m=bogus:5",
    "block=5", "nosuch.m=5", "block.nosuch=5", "block.m=18446744073709551617",
  };

  diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);

  for (guint i = 0; i < G_N_ELEMENTS (bad_axes); i++)
    {
      g_assert_false (napkin_diagram_override_axis (diagram, bad_axes[i], &error));
      g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE);
      g_assert_nonnull (strstr (error->message, "--axis"));
      g_clear_error (&error);
    }
  for (guint i = 0; i < G_N_ELEMENTS (bad_tiles); i++)
    {
      g_assert_false (napkin_diagram_override_tile (diagram, bad_tiles[i], &error));
      g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE);
      g_assert_nonnull (strstr (error->message, "--tile"));
      g_clear_error (&error);
    }

  /* The largest allowed size is accepted, and the model then refuses, not wraps. */
  g_assert_true (napkin_diagram_override_axis (diagram, "m=1099511627776", &error));
  g_assert_true (napkin_diagram_override_axis (diagram, "n=1099511627776", &error));
  g_assert_true (napkin_diagram_override_axis (diagram, "k=1099511627776", &error));
  g_assert_no_error (error);
  g_assert_false (napkin_diagram_validate (diagram, &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "64 bits"));
}

/* A chain x → op1 → … → opN → y; `reverse` lists it backwards, `cycle` feeds it from a loop. */
static GString *
chain (guint    n,
       gboolean reverse,
       gboolean cycle)
{
  GString *s = doc_begin ("{\"name\": \"m\", \"size\": 16}");

  g_string_append (s, "\"tensors\": [{\"name\": \"X\", \"axes\": [\"m\"], \"dtype\": \"fp32\"}], \"nodes\": [");
  g_string_append (s, "{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\"}");
  if (cycle)
    g_string_append (s, ", {\"id\": \"loop\", \"kind\": \"map\", \"fn\": \"add\"}");
  for (guint k = 1; k <= n; k++)
    {
      guint i = reverse ? n + 1 - k : k;
      g_string_append_printf (s, ", {\"id\": \"n%u\", \"kind\": \"map\", \"fn\": \"relu\"}", i);
    }
  g_string_append (s, ", {\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"X\"}], \"wires\": [");
  if (cycle)
    g_string_append (s, "{\"from\": \"x\", \"to\": \"loop\", \"port\": 0}, "
                        "{\"from\": \"loop\", \"to\": \"loop\", \"port\": 1}, "
                        "{\"from\": \"loop\", \"to\": \"n1\"}");
  else
    g_string_append (s, "{\"from\": \"x\", \"to\": \"n1\"}");
  for (guint i = 2; i <= n; i++)
    g_string_append_printf (s, ", {\"from\": \"n%u\", \"to\": \"n%u\"}", i - 1, i);
  g_string_append_printf (s, ", {\"from\": \"n%u\", \"to\": \"y\"}]}", n);
  return s;
}

static void
test_many_operations (void)
{
  /* The most operations a file may hold: loads and validates in linear time. */
  g_autoptr(GString) small = chain (NAPKIN_MAX_NODES / 10 / SCALE - 2, TRUE, FALSE);
  g_autoptr(GString) s = chain (NAPKIN_MAX_NODES / SCALE - 2, TRUE, FALSE);
  g_autoptr(GError) error = NULL;
  g_autofree char *small_message = NULL;
  g_autofree char *message = NULL;
  double small_s, seconds;

  small_message = load_and_check (small->str, small->len, &error, &small_s);
  message = load_and_check (s->str, s->len, &error, &seconds);
  g_assert_no_error (error);
  g_assert_cmpstr (small_message, ==, "");
  g_assert_cmpstr (message, ==, "");
  g_test_message ("%d operations (%zu bytes) loaded and validated in %.2f s", NAPKIN_MAX_NODES / SCALE, s->len,
                  seconds);
  assert_linear ("load and validate a chain", small_s, seconds);
}

static void
test_too_many_operations (void)
{
  /* 10^6 operations, written tightly to stay under the 64 MiB cap: refused with the
   * limit after one parse. */
  g_autoptr(GString) s = g_string_new ("{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"m\",\"size\":16}],"
                                       "\"tensors\":[{\"name\":\"X\",\"axes\":[\"m\"],\"dtype\":\"fp32\"}],\"nodes\":[");
  g_autoptr(GError) error = NULL;
  g_autofree char *message = NULL;
  double seconds;

#ifdef SANITIZED
  g_test_skip ("parsing 45 MB with a full stack per malloc takes many minutes; the plain build runs it");
  return;
#endif
  for (guint i = 0; i < 1000000; i++)
    g_string_append_printf (s, "%s{\"id\":\"n%u\",\"kind\":\"input\",\"tensor\":\"X\"}", i ? "," : "", i);
  g_string_append (s, "]}");
  g_assert_cmpuint (s->len, <, NAPKIN_MAX_FILE_SIZE);

  message = load_and_check (s->str, s->len, &error, &seconds);
  g_assert_null (message);
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT);
  g_assert_cmpstr (error->message, ==, "The list of operations: 1000000 operations; at most 100000 are supported "
                   "(JSON path: nodes)");
  g_test_message ("10^6 operations (%zu bytes) refused in %.2f s", s->len, seconds);
  g_assert_cmpfloat (seconds, <, TIME_LIMIT_S);
}

static void
test_long_cycle (void)
{
  /* A cycle ahead of a long chain listed backwards: found in linear time. */
  g_autoptr(GString) small = chain (NAPKIN_MAX_NODES / 10 / SCALE - 3, TRUE, TRUE);
  g_autoptr(GString) s = chain (NAPKIN_MAX_NODES / SCALE - 3, TRUE, TRUE);
  g_autoptr(GError) error = NULL;
  g_autofree char *small_message = NULL;
  g_autofree char *message = NULL;
  double small_s, seconds;

  small_message = load_and_check (small->str, small->len, &error, &small_s);
  message = load_and_check (s->str, s->len, &error, &seconds);
  g_assert_no_error (error);
  g_assert_cmpstr (small_message, ==, "The map “loop” is part of a cycle: a diagram flows one way (JSON path: nodes[1])");
  g_assert_cmpstr (message, ==, "The map “loop” is part of a cycle: a diagram flows one way (JSON path: nodes[1])");
  g_test_message ("cycle among %d operations found in %.2f s", NAPKIN_MAX_NODES / SCALE, seconds);
  assert_linear ("find a cycle", small_s, seconds);
}

static void
test_many_axes (void)
{
  g_autoptr(GString) axes = g_string_new (NULL);
  g_autoptr(GString) s = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;

  for (guint i = 0; i <= NAPKIN_MAX_AXES; i++)
    g_string_append_printf (axes, "%s{\"name\": \"a%u\", \"size\": 2}", i ? ", " : "", i);
  s = doc_begin (axes->str);
  g_string_append (s, "\"nodes\": []}");

  diagram = napkin_diagram_load_from_data (s->str, s->len, NAPKIN_LOAD_DEFAULT, &error);
  g_assert_null (diagram);
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT);
  g_assert_cmpstr (error->message, ==, "The list of axes: 1025 axes; at most 1024 are supported (JSON path: axes)");
}

/* Regions over one operation, as many as allowed, each streaming: every pair is
 * reported as an overlap, in bounded time and memory. */
static GString *
regions (guint n)
{
  GString *s = chain (1, FALSE, FALSE);

  g_string_truncate (s, s->len - 1);
  g_string_append (s, ", \"regions\": [");
  for (guint i = 0; i < n; i++)
    g_string_append_printf (s, "%s{\"name\": \"r%u\", \"level\": \"smem\", \"nodes\": [\"n1\"], "
                               "\"marks\": {\"m\": {\"stream\": 4}}}", i ? ", " : "", i);
  g_string_append (s, "]}");
  return s;
}

static void
test_many_regions (void)
{
  g_autoptr(GString) s = regions (NAPKIN_MAX_REGIONS);
  g_autoptr(GString) too_many = regions (NAPKIN_MAX_REGIONS + 1);
  g_autoptr(GError) error = NULL;
  g_autofree char *message = NULL;
  g_autofree char *none = NULL;
  double seconds;

  message = load_and_check (s->str, s->len, &error, &seconds);
  g_assert_no_error (error);
  g_assert_cmpstr (message, ==, "Regions “r0” and “r1” hold the same operations at the same level (JSON path: regions[1])");
  g_test_message ("%d overlapping regions checked in %.2f s", NAPKIN_MAX_REGIONS, seconds);
  g_assert_cmpfloat (seconds, <, TIME_LIMIT_S);

  none = load_and_check (too_many->str, too_many->len, &error, &seconds);
  g_assert_null (none);
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT);
  g_assert_cmpstr (error->message, ==, "The list of regions: 257 regions; at most 256 are supported (JSON path: regions)");
}

static void
test_deep_nesting (void)
{
  /* JSON nested 10^5 deep: refused by the parser's depth limit, no stack overflow. */
  g_autoptr(GString) s = g_string_new ("{\"format\": \"napkin\", \"version\": 1, \"x\": ");
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;

  for (guint i = 0; i < 100000; i++)
    g_string_append_c (s, '[');
  for (guint i = 0; i < 100000; i++)
    g_string_append_c (s, ']');
  g_string_append_c (s, '}');

  diagram = napkin_diagram_load_from_data (s->str, s->len, NAPKIN_LOAD_DEFAULT, &error);
  g_assert_null (diagram);
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_PARSE);
  g_assert_true (g_str_has_prefix (error->message, "The file is not a Napkin diagram: it is not valid JSON (line 1, column "));
  g_assert_nonnull (strstr (error->message, "nesting too deep"));
}

static void
test_region_nesting (void)
{
  /* Levels nest three deep at most (l2 > smem > registers): a fourth is refused. */
  g_autoptr(GString) s = chain (1, FALSE, FALSE);

  g_string_truncate (s, s->len - 1);
  g_string_append (s, ", \"regions\": ["
                      "{\"name\": \"a\", \"level\": \"l2\", \"nodes\": [\"n1\"]}, "
                      "{\"name\": \"b\", \"level\": \"smem\", \"nodes\": [\"n1\"]}, "
                      "{\"name\": \"c\", \"level\": \"registers\", \"nodes\": [\"n1\"]}, "
                      "{\"name\": \"d\", \"level\": \"registers\", \"nodes\": [\"n1\"]}]}");
  assert_problem (s->str, "Regions “c” and “d” hold the same operations at the same level (JSON path: regions[3])");
}

static void
test_file_size (void)
{
  g_autofree char *dir = g_dir_make_tmp ("napkin-limits-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "huge.napkin", NULL);
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *big = NULL;
  FILE *f;

  /* In memory: refused before parsing. */
  big = g_malloc (NAPKIN_MAX_FILE_SIZE + 2);
  memset (big, ' ', NAPKIN_MAX_FILE_SIZE + 1);
  big[NAPKIN_MAX_FILE_SIZE + 1] = '\0';
  diagram = napkin_diagram_load_from_data (big, NAPKIN_MAX_FILE_SIZE + 1, NAPKIN_LOAD_DEFAULT, &error);
  g_assert_null (diagram);
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT);
  g_clear_error (&error);
  g_clear_pointer (&big, g_free);

  /* A 16 GiB (sparse) file: refused after reading at most the limit. */
  f = fopen (path, "w");
  g_assert_nonnull (f);
  g_assert_cmpint (fseek (f, (long) 16 * 1024 * 1024 * 1024, SEEK_SET), ==, 0);
  fputc ('}', f);
  fclose (f);
  diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, &error);
  g_assert_null (diagram);
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT);
  g_assert_nonnull (strstr (error->message, "larger than 67108864 bytes"));
  g_clear_error (&error);
  g_remove (path);

  /* A device that never ends: not a regular file, refused before reading. */
  if (g_file_test ("/dev/zero", G_FILE_TEST_EXISTS))
    {
      diagram = napkin_diagram_load_from_file ("/dev/zero", NAPKIN_LOAD_DEFAULT, &error);
      g_assert_null (diagram);
      g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO);
      g_assert_cmpstr (error->message, ==, "could not read “/dev/zero”: it is a device, not a regular file");
      g_clear_error (&error);
    }

  /* A folder. */
  diagram = napkin_diagram_load_from_file (dir, NAPKIN_LOAD_DEFAULT, &error);
  g_assert_null (diagram);
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO);
  g_assert_nonnull (strstr (error->message, dir));
  g_rmdir (dir);
}

/* A chain of `n` maps whose labels are `label` bytes each, compact JSON. */
static char *
labelled_chain (guint  n,
                gsize  label,
                gsize *length)
{
  g_autoptr(GString) s = doc_begin ("{\"name\": \"r\", \"size\": 64}");
  g_autofree char *text = g_strnfill (label, 'l');

  g_string_append (s, "\"tensors\": [{\"name\": \"X\", \"axes\": [\"r\"], \"dtype\": \"fp16\"}, "
                      "{\"name\": \"Y\", \"axes\": [\"r\"], \"dtype\": \"fp16\"}], \"nodes\": ["
                      "{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\"}, "
                      "{\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\"}");
  for (guint i = 0; i < n; i++)
    g_string_append_printf (s, ", {\"id\": \"n%u\", \"kind\": \"map\", \"fn\": \"exp\", \"label\": \"%s\"}", i, text);
  g_string_append (s, "], \"wires\": [");
  for (guint i = 0; i <= n; i++)
    g_string_append_printf (s, "%s{\"from\": \"%s%u\", \"to\": \"%s%u\", \"port\": 0}", i ? ", " : "",
                            i == 0 ? "x" : "n", i == 0 ? 0 : i - 1, i == n ? "y" : "n", i == n ? 0 : i);
  g_string_append (s, "]}");
  /* the ids of x and y are printed with a number: fix them */
  {
    g_autofree char *x0 = g_strdup ("\"from\": \"x0\"");
    g_autofree char *y0 = g_strdup ("\"to\": \"y0\"");
    char *at;

    if ((at = strstr (s->str, x0)) != NULL)
      memcpy (at, "\"from\": \"x\" ", strlen (x0));
    if ((at = strstr (s->str, y0)) != NULL)
      memcpy (at, "\"to\": \"y\" ", strlen (y0));
  }
  *length = s->len;
  return g_string_free (g_steal_pointer (&s), FALSE);
}

/* A save never makes a file the loader refuses (docs/security.md, "Saves"): a
 * diagram whose indentation would take it past 64 MiB is saved compact and loads back;
 * one that is too large even so is refused, the file left as it was. tune --write
 * once turned a 63.7 MB compact file into 73.8 MB that nothing would open. */
static void
test_save_within_limit (void)
{
  g_autofree char *dir = g_dir_make_tmp ("napkin-save-limit-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "big.napkin", NULL);
  g_autofree char *backup = g_strconcat (path, "~", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *saved = NULL;
  gsize length, saved_length;

  if (!g_test_slow () && SCALE > 1)
    {
      g_test_skip ("64 MB files under the sanitizers: run with -m slow");
      return;
    }
  /* compact about 58 MB, pretty-printed past 64 MiB */
  g_autofree char *text = labelled_chain (90000, 560, &length);
  g_autoptr(NapkinDiagram) diagram = napkin_diagram_load_from_data (text, length, NAPKIN_LOAD_DEFAULT, &error);
  g_autofree char *after = NULL;
  g_autofree char *description = NULL;
  gsize after_length;

  g_assert_no_error (error);
  g_assert_cmpuint (length, <, NAPKIN_MAX_FILE_SIZE);
  g_assert_true (napkin_diagram_save_to_file (diagram, path, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (path, &saved, &saved_length, NULL));
  g_test_message ("compact %zu bytes, saved %zu bytes", length, saved_length);
  g_assert_cmpuint (saved_length, <=, NAPKIN_MAX_FILE_SIZE);
  /* written compact: one line, where indentation would have passed the limit */
  g_assert_true (memchr (saved, '\n', saved_length) == saved + saved_length - 1);
  {
    g_autoptr(NapkinDiagram) back = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, &error);

    g_assert_no_error (error);
    g_assert_cmpuint (napkin_diagram_n_nodes (back), ==, 90002);
  }

  /* past the limit even compact: refused, the file untouched, no temporary file */
  description = g_strnfill (16 * 1024 * 1024, 'd');
  napkin_diagram_set_description (diagram, description);
  g_assert_false (napkin_diagram_save_to_file (diagram, path, &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT);
  g_assert_nonnull (strstr (error->message, "more than the 67108864 Napkin reads back"));
  g_assert_true (g_file_get_contents (path, &after, &after_length, NULL));
  g_assert_cmpuint (after_length, ==, saved_length);
  g_assert_true (memcmp (after, saved, saved_length) == 0);
  {
    g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
    const char *name;

    while ((name = g_dir_read_name (d)) != NULL)
      g_assert_true (g_str_equal (name, "big.napkin") || g_str_equal (name, "big.napkin~"));
  }
  g_remove (backup);
  g_remove (path);
  g_assert_cmpint (g_rmdir (dir), ==, 0);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/security/limits/product-overflow", test_product_overflow);
  g_test_add_func ("/security/limits/bytes-overflow", test_bytes_overflow);
  g_test_add_func ("/security/limits/flops-overflow", test_flops_overflow);
  g_test_add_func ("/security/limits/overrides", test_override_limits);
  g_test_add_func ("/security/limits/many-operations", test_many_operations);
  g_test_add_func ("/security/limits/too-many-operations", test_too_many_operations);
  g_test_add_func ("/security/limits/long-cycle", test_long_cycle);
  g_test_add_func ("/security/limits/many-axes", test_many_axes);
  g_test_add_func ("/security/limits/many-regions", test_many_regions);
  g_test_add_func ("/security/limits/deep-nesting", test_deep_nesting);
  g_test_add_func ("/security/limits/region-nesting", test_region_nesting);
  g_test_add_func ("/security/limits/file-size", test_file_size);
  g_test_add_func ("/security/limits/save-within-limit", test_save_within_limit);

  return g_test_run ();
}
