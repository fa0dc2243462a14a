/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <string.h>
#include <sys/wait.h>

#include <json-c/json.h>

#include <glib.h>
#include <glib/gstdio.h>

/* Runs napkin-cli as a user would and checks exit codes and output. */

typedef struct
{
  int   status;
  char *out;
  char *err;
} Result;

static void
result_clear (Result *r)
{
  g_free (r->out);
  g_free (r->err);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Result, result_clear)

static void
run_cli (Result      *r,
         const char  *first,
         ...)
{
  g_autoptr(GPtrArray) args = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;
  const char *cli = g_getenv ("NAPKIN_CLI");
  const char *arg;
  va_list ap;
  int wait_status;

  g_assert_nonnull (cli);
  g_ptr_array_add (args, (char *) cli);
  va_start (ap, first);
  for (arg = first; arg != NULL; arg = va_arg (ap, const char *))
    g_ptr_array_add (args, (char *) arg);
  va_end (ap);
  g_ptr_array_add (args, NULL);

  g_assert_true (g_spawn_sync (NULL, (char **) args->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               &r->out, &r->err, &wait_status, &error));
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (wait_status));
  r->status = WEXITSTATUS (wait_status);
}

static char *
example (const char *name)
{
  return g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), name, NULL);
}

/* The catalogue's files are numbered; find one by the name after the number. */
static char *
bad (const char *name)
{
  g_autofree char *dir = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "bad", NULL);
  g_autofree char *suffix = g_strdup_printf ("-%s.napkin", name);
  g_autoptr(GDir) listing = g_dir_open (dir, 0, NULL);
  const char *file;

  while ((file = g_dir_read_name (listing)) != NULL)
    if (g_str_has_suffix (file, suffix) && strlen (file) == strlen (suffix) + 2)
      return g_build_filename (dir, file, NULL);
  g_error ("no bad input named %s", name);
}

static void
test_validate_examples (void)
{
  g_autofree char *dir = g_strdup (g_getenv ("NAPKIN_EXAMPLES_DIR"));
  g_autoptr(GDir) listing = g_dir_open (dir, 0, NULL);
  const char *name;
  guint n = 0;

  while ((name = g_dir_read_name (listing)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_auto(Result) r = { 0 };

      if (!g_str_has_suffix (name, ".napkin"))
        continue;
      run_cli (&r, "validate", path, NULL);
      g_assert_cmpint (r.status, ==, 0);
      g_assert_true (g_str_has_suffix (r.out, ": valid\n"));
      n++;
    }
  g_assert_cmpuint (n, >=, 8);
}

static void
test_validate_mixed (void)
{
  g_autofree char *good = example ("matmul.napkin");
  g_autofree char *broken = bad ("stream-softmax");
  g_autofree char *cycle = bad ("cycle");
  g_auto(Result) r = { 0 };
  g_auto(GStrv) lines = NULL;

  run_cli (&r, "validate", good, broken, cycle, NULL);
  g_assert_cmpint (r.status, ==, 1);
  lines = g_strsplit (r.out, "\n", -1);
  /* One line per file, in order; the invalid ones name the place. */
  g_assert_cmpuint (g_strv_length (lines), ==, 4);
  g_assert_true (g_str_has_suffix (lines[0], "matmul.napkin: valid"));
  g_assert_nonnull (strstr (lines[1], ": invalid: In region “rows”, operation “sm” (softmax over c) cannot stream"));
  g_assert_nonnull (strstr (lines[1], " (JSON path: regions[0].marks.c)"));
  g_assert_nonnull (strstr (lines[2], ": invalid: The normalization “ln” is part of a cycle"));
  g_assert_nonnull (strstr (lines[2], " (JSON path: nodes[3])"));
}

static void
test_usage_errors (void)
{
  g_autofree char *good = example ("matmul-tiled.napkin");
  g_auto(Result) a = { 0 };
  g_auto(Result) b = { 0 };
  g_auto(Result) c = { 0 };
  g_auto(Result) d = { 0 };
  g_auto(Result) e = { 0 };

  run_cli (&a, NULL, NULL);
  g_assert_cmpint (a.status, ==, 2);
  run_cli (&b, "frobnicate", NULL);
  g_assert_cmpint (b.status, ==, 2);
  g_assert_nonnull (strstr (b.err, "unknown command “frobnicate”"));
  run_cli (&c, "validate", NULL);
  g_assert_cmpint (c.status, ==, 2);
  run_cli (&d, "validate", "--axis", "m=zero", good, NULL);
  g_assert_cmpint (d.status, ==, 2);
  g_assert_nonnull (strstr (d.err, "--axis: size “zero” must be an integer"));
  run_cli (&e, "info", "--tile", "block.q=64", good, NULL);
  g_assert_cmpint (e.status, ==, 2);
  g_assert_nonnull (strstr (e.err, "the diagram has no axis “q”"));
}

static void
test_help (void)
{
  g_auto(Result) a = { 0 };
  g_auto(Result) b = { 0 };

  run_cli (&a, "--help", NULL);
  g_assert_cmpint (a.status, ==, 0);
  g_assert_nonnull (strstr (a.out, "validate"));
  g_assert_nonnull (strstr (a.out, "info"));
  run_cli (&b, "info", "--help", NULL);
  g_assert_cmpint (b.status, ==, 0);
  g_assert_nonnull (strstr (b.out, "--axis=NAME=SIZE"));
  g_assert_nonnull (strstr (b.out, "--tile=REGION.AXIS=SIZE"));
  g_assert_nonnull (strstr (b.out, "--json"));
}

static json_object *
info_json (const char *file,
           const char *override)
{
  g_autofree char *path = example (file);
  g_auto(Result) r = { 0 };
  json_object *root;

  if (override)
    run_cli (&r, "info", "--json", "--axis", override, path, NULL);
  else
    run_cli (&r, "info", "--json", path, NULL);
  g_assert_cmpint (r.status, ==, 0);
  root = json_tokener_parse (r.out);
  g_assert_nonnull (root);
  return root;
}

static gint64
flops_of (json_object *root,
          const char  *key)
{
  json_object *flops, *value;

  g_assert_true (json_object_object_get_ex (root, "flops", &flops));
  g_assert_true (json_object_object_get_ex (flops, key, &value));
  return json_object_get_int64 (value);
}

static void
test_info_flops (void)
{
  json_object *mm = info_json ("matmul.napkin", NULL);
  json_object *mm_small = info_json ("matmul.napkin", "k=128");
  json_object *att = info_json ("flash-attention.napkin", NULL);
  json_object *mlp = info_json ("mlp.napkin", NULL);
  gint64 t = 8192, e = 4096, f = 16384;

  /* 2·m·n·k, checkable by hand */
  g_assert_cmpint (flops_of (mm, "total"), ==, G_GINT64_CONSTANT (2) * 4096 * 4096 * 4096);
  g_assert_cmpint (flops_of (mm_small, "total"), ==, G_GINT64_CONSTANT (2) * 4096 * 4096 * 128);
  /* attention: 4·b·h·q·k·d on the tensor cores */
  g_assert_cmpint (flops_of (att, "tensor"), ==, G_GINT64_CONSTANT (4) * 4 * 16 * 4096 * 4096 * 128);
  /* MLP: two linears of 2·t·e·f, and 8 FLOPs plus one special function per GELU */
  g_assert_cmpint (flops_of (mlp, "tensor"), ==, 4 * t * e * f);
  g_assert_cmpint (flops_of (mlp, "cuda"), ==, 8 * t * f);
  g_assert_cmpint (flops_of (mlp, "sfu"), ==, t * f);

  json_object_put (mm);
  json_object_put (mm_small);
  json_object_put (att);
  json_object_put (mlp);
}

static void
test_info_text (void)
{
  g_autofree char *path = example ("flash-attention.napkin");
  g_auto(Result) r = { 0 };

  run_cli (&r, "info", path, NULL);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_nonnull (strstr (r.out, "block        smem      4 operations, b:parallel(1) h:parallel(1) "
                                   "q:parallel(128) k:stream(128) d:whole"));
  g_assert_nonnull (strstr (r.out, "FLOPs: 556198264832"));
}

/* A softmax over the first axis plans the strided rows kernel (docs/plan.md, "Rows over
 * any axis"), not the generic lowering. */
static void
test_plan_strided_rows (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("napkin-cli-XXXXXX", &error);
  g_autofree char *einsum = g_build_filename (dir, "s0.einsum", NULL);
  g_autofree char *napkin = g_build_filename (dir, "s0.napkin", NULL);
  g_auto(Result) imported = { 0 };
  g_auto(Result) r = { 0 };

  g_assert_no_error (error);
  g_assert_true (g_file_set_contents (einsum, "r=4096 c=8192\ndtype fp16\nX[r,c] -> y = softmax(r)\n", -1, NULL));
  run_cli (&imported, "import", einsum, "-o", napkin, NULL);
  g_assert_cmpint (imported.status, ==, 0);
  run_cli (&r, "plan", napkin, "--arch", "h200", NULL);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_nonnull (strstr (r.out, "y — rows on simt"));
  g_assert_nonnull (strstr (r.out, "strided softmax over r"));
  g_assert_null (strstr (r.out, "generic"));
  g_remove (napkin);
  g_remove (einsum);
  g_rmdir (dir);
}

/* An einsum import whose attention adds T5's bias [h, q, k] and masks padding [b, k]
 * (docs/plan.md, "Score operands"): `plan` names one attention kernel, on wgmma, that
 * reads both operands; no region is drawn. */
static void
test_plan_attention_bias (void)
{
  g_autofree char *einsum = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "import",
                                              "attention-bias.einsum", NULL);
  g_autofree char *dir = g_dir_make_tmp ("napkin-cli-XXXXXX", NULL);
  g_autofree char *file = g_build_filename (dir, "bias.napkin", NULL);
  g_auto(Result) imp = { 0 };
  g_auto(Result) r = { 0 };
  json_object *root, *kernels, *k, *scores;

  run_cli (&imp, "import", einsum, "-o", file, NULL);
  g_assert_cmpint (imp.status, ==, 0);
  run_cli (&r, "plan", file, "--arch", "h100", "--format", "json", NULL);
  g_assert_cmpint (r.status, ==, 0);
  root = json_tokener_parse (r.out);
  g_assert_nonnull (root);
  kernels = json_object_object_get (root, "kernels");
  g_assert_cmpuint (json_object_array_length (kernels), ==, 1);
  k = json_object_array_get_idx (kernels, 0);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (k, "kind")), ==, "attention");
  g_assert_cmpstr (json_object_get_string (json_object_object_get (k, "path")), ==, "wgmma");
  scores = json_object_object_get (k, "scores");
  g_assert_cmpuint (json_object_array_length (scores), ==, 2);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (json_object_array_get_idx (scores, 0), "operand")),
                   ==, "pos");
  g_assert_cmpstr (json_object_get_string (json_object_object_get (json_object_array_get_idx (scores, 1), "kind")),
                   ==, "keep");
  json_object_put (root);
  g_remove (file);
  g_rmdir (dir);
}

/* napkin-cli grad (docs/training.md): -o writes a diagram that validates, --wrt keeps
 * only the gradients named, a name that is no input is a usage error naming it, an
 * operation without a derivative fails naming it, and so does a diagram without outputs;
 * --recompute softmax stores no probabilities and makes them again, auto prices both on
 * --arch and says which it took, and a name that is no operation is a usage error. */
static void
test_grad (void)
{
  g_autofree char *attention = example ("attention.napkin");
  g_autofree char *dir = g_dir_make_tmp ("napkin-grad-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (dir, "backward.napkin", NULL);
  g_autofree char *cast = g_build_filename (dir, "cast.napkin", NULL);
  g_autofree char *none = g_build_filename (dir, "none.napkin", NULL);
  g_autofree char *text = NULL;
  g_auto(Result) r = { 0 };
  g_auto(Result) v = { 0 };
  g_auto(Result) w = { 0 };
  g_auto(Result) bad_name = { 0 };
  g_auto(Result) c = { 0 };
  g_auto(Result) n = { 0 };
  g_auto(Result) re = { 0 };
  g_auto(Result) choice = { 0 };
  g_auto(Result) bad_re = { 0 };
  g_auto(Result) lone_arch = { 0 };

  run_cli (&r, "grad", attention, "-o", out, NULL);
  g_assert_cmpint (r.status, ==, 0);
  run_cli (&v, "validate", out, NULL);
  g_assert_cmpint (v.status, ==, 0);
  g_assert_true (g_file_get_contents (out, &text, NULL, NULL));
  g_assert_nonnull (strstr (text, "\"d_Q\""));
  g_assert_nonnull (strstr (text, "\"d_V\""));
  g_assert_nonnull (strstr (text, "\"d_O\""));
  g_assert_null (strstr (text, "\"regions\": [\n    {"));
  g_clear_pointer (&text, g_free);

  run_cli (&w, "grad", attention, "--wrt", "V", NULL);
  g_assert_cmpint (w.status, ==, 0);
  g_assert_nonnull (strstr (w.out, "\"d_V\""));
  g_assert_null (strstr (w.out, "\"d_Q\""));
  g_assert_null (strstr (w.out, "\"d_K\""));

  g_assert_nonnull (strstr (w.out, "\"saved_sm\""));

  run_cli (&re, "grad", attention, "--recompute", "softmax", NULL);
  g_assert_cmpint (re.status, ==, 0);
  g_assert_null (strstr (re.out, "\"saved_sm\""));
  g_assert_nonnull (strstr (re.out, "\"sm_re\""));
  g_assert_nonnull (strstr (re.out, "\"qk_re\""));

  run_cli (&choice, "grad", attention, "--recompute", "auto", "--arch", "h200", NULL);
  g_assert_cmpint (choice.status, ==, 0);
  g_assert_nonnull (strstr (choice.err, "--recompute=auto: On "));
  g_assert_nonnull (strstr (choice.err, "H200"));
  g_assert_nonnull (strstr (choice.err, "stored"));
  g_assert_nonnull (strstr (choice.out, "\"d_Q\""));

  run_cli (&bad_re, "grad", attention, "--recompute", "q_in", NULL);
  g_assert_cmpint (bad_re.status, ==, 2);
  g_assert_nonnull (strstr (bad_re.err, "“q_in”"));
  run_cli (&lone_arch, "grad", attention, "--arch", "h200", NULL);
  g_assert_cmpint (lone_arch.status, ==, 2);

  run_cli (&bad_name, "grad", attention, "--wrt", "Q,nope", NULL);
  g_assert_cmpint (bad_name.status, ==, 2);
  g_assert_nonnull (strstr (bad_name.err, "“nope”"));
  g_assert_cmpstr (bad_name.out, ==, "");

  g_assert_true (g_file_set_contents (cast,
    "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"m\",\"size\":4}],"
    "\"tensors\":[{\"name\":\"X\",\"axes\":[\"m\"],\"dtype\":\"fp32\"},{\"name\":\"Y\",\"axes\":[\"m\"],\"dtype\":\"int8\"}],"
    "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\"},{\"id\":\"quantize\",\"kind\":\"map\",\"fn\":\"cast\",\"dtype\":\"int8\"},"
    "{\"id\":\"y\",\"kind\":\"output\",\"tensor\":\"Y\"}],"
    "\"wires\":[{\"from\":\"x\",\"to\":\"quantize\",\"port\":0},{\"from\":\"quantize\",\"to\":\"y\",\"port\":0}]}", -1, NULL));
  run_cli (&c, "grad", cast, NULL);
  g_assert_cmpint (c.status, ==, 1);
  g_assert_nonnull (strstr (c.err, "“quantize”"));
  g_assert_nonnull (strstr (c.err, "nodes[1]"));

  g_assert_true (g_file_set_contents (none,
    "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"m\",\"size\":4}],"
    "\"tensors\":[{\"name\":\"X\",\"axes\":[\"m\"],\"dtype\":\"fp32\"}],"
    "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\"},{\"id\":\"e\",\"kind\":\"map\",\"fn\":\"exp\"}],"
    "\"wires\":[{\"from\":\"x\",\"to\":\"e\",\"port\":0}]}", -1, NULL));
  run_cli (&n, "grad", none, NULL);
  g_assert_cmpint (n.status, ==, 1);
  g_assert_nonnull (strstr (n.err, "no outputs"));

  g_remove (out);
  g_remove (cast);
  g_remove (none);
  g_rmdir (dir);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/cli/validate/examples", test_validate_examples);
  g_test_add_func ("/cli/validate/mixed", test_validate_mixed);
  g_test_add_func ("/cli/usage-errors", test_usage_errors);
  g_test_add_func ("/cli/help", test_help);
  g_test_add_func ("/cli/info/flops", test_info_flops);
  g_test_add_func ("/cli/info/text", test_info_text);
  g_test_add_func ("/cli/plan/strided-rows", test_plan_strided_rows);
  g_test_add_func ("/cli/plan/attention-bias", test_plan_attention_bias);
  g_test_add_func ("/cli/grad", test_grad);

  return g_test_run ();
}
