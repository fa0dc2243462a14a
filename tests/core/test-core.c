/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include "napkin-clipboard.h"
#include "napkin-describe.h"
#include "napkin-edit.h"
#include "napkin-error.h"
#include "napkin-expr.h"
#include "napkin-file.h"
#include "napkin-validate.h"

static const char *examples[] = {
  "matmul.napkin", "matmul-tiled.napkin", "matmul-nested.napkin", "softmax.napkin",
  "layernorm.napkin", "mlp.napkin", "attention.napkin", "flash-attention.napkin",
  "attention-causal-gqa.napkin", "attention-sliding-window.napkin", "attention-decode.napkin",
};

static char *
example_path (const char *name)
{
  const char *dir = g_getenv ("NAPKIN_EXAMPLES_DIR");

  g_assert_nonnull (dir);
  return g_build_filename (dir, name, NULL);
}

static NapkinDiagram *
load_example (const char *name)
{
  g_autofree char *path = example_path (name);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);

  g_assert_no_error (error);
  g_assert_nonnull (diagram);
  return diagram;
}

static guint
problems_of (NapkinDiagram *diagram)
{
  g_autoptr(GPtrArray) problems = napkin_diagram_check (diagram);

  return problems->len;
}

static char *
save (NapkinDiagram *diagram)
{
  return napkin_diagram_save_to_data (diagram, NULL);
}

static void
test_types (void)
{
  NapkinDtype dtype;
  NapkinLevel level;

  g_assert_cmpuint (napkin_dtype_bytes (NAPKIN_DTYPE_FP32), ==, 4);
  g_assert_cmpuint (napkin_dtype_bytes (NAPKIN_DTYPE_TF32), ==, 4);
  g_assert_cmpuint (napkin_dtype_bytes (NAPKIN_DTYPE_FP16), ==, 2);
  g_assert_cmpuint (napkin_dtype_bytes (NAPKIN_DTYPE_BF16), ==, 2);
  g_assert_cmpuint (napkin_dtype_bytes (NAPKIN_DTYPE_FP8_E4M3), ==, 1);
  g_assert_cmpuint (napkin_dtype_bytes (NAPKIN_DTYPE_FP8_E5M2), ==, 1);
  g_assert_cmpuint (napkin_dtype_bytes (NAPKIN_DTYPE_INT8), ==, 1);
  g_assert_true (napkin_dtype_from_string ("fp8-e5m2", &dtype));
  g_assert_cmpint (dtype, ==, NAPKIN_DTYPE_FP8_E5M2);
  g_assert_false (napkin_dtype_from_string ("fp64", &dtype));
  g_assert_true (napkin_level_from_string ("registers", &level));
  g_assert_cmpint (level, ==, NAPKIN_LEVEL_REGISTERS);
  g_assert_cmpint (NAPKIN_LEVEL_HBM, <, NAPKIN_LEVEL_SMEM);

  g_assert_true (napkin_name_is_valid ("q_1"));
  g_assert_false (napkin_name_is_valid ("1q"));
  g_assert_false (napkin_name_is_valid ("a*/b"));
  g_assert_false (napkin_name_is_valid (""));
}

static void
test_examples_valid (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (examples); i++)
    {
      g_autoptr(NapkinDiagram) diagram = load_example (examples[i]);
      g_autoptr(GPtrArray) problems = napkin_diagram_check (diagram);

      g_assert_cmpuint (problems->len, ==, 0);
      g_assert_nonnull (napkin_diagram_topo_order (diagram));
    }
}

static void
test_flops (void)
{
  g_autoptr(NapkinDiagram) mm = load_example ("matmul.napkin");
  g_autoptr(NapkinDiagram) att = load_example ("attention.napkin");
  g_autoptr(NapkinDiagram) sm = load_example ("softmax.napkin");
  NapkinFlops flops;
  gint64 m = 4096, n = 4096, k = 4096;
  gint64 b = 4, h = 16, q = 4096, x = 4096, d = 128;

  /* matmul: 2·m·n·k on the tensor cores, nothing else */
  g_assert_true (napkin_diagram_total_flops (mm, &flops));
  g_assert_cmpint (flops.tensor, ==, 2 * m * n * k);
  g_assert_cmpint (flops.cuda, ==, 0);

  /* attention: two products of 2·b·h·q·k·d each, a scale per score, softmax 4 + 1 exp per score */
  g_assert_true (napkin_diagram_total_flops (att, &flops));
  g_assert_cmpint (flops.tensor, ==, 4 * b * h * q * x * d);
  g_assert_cmpint (flops.cuda, ==, b * h * q * x * (1 + 4));
  g_assert_cmpint (flops.sfu, ==, b * h * q * x);

  g_assert_true (napkin_diagram_total_flops (sm, &flops));
  g_assert_cmpint (flops.cuda, ==, 4 * G_GINT64_CONSTANT (16384) * 16384);
}

static void
test_types_inferred (void)
{
  g_autoptr(NapkinDiagram) att = load_example ("attention.napkin");
  int qk = napkin_diagram_find_node (att, "qk");
  int pv = napkin_diagram_find_node (att, "pv");
  g_autofree char *qk_type = napkin_diagram_type_to_string (att, napkin_diagram_node_type (att, qk));
  g_autofree char *pv_type = napkin_diagram_type_to_string (att, napkin_diagram_node_type (att, pv));

  g_assert_cmpstr (qk_type, ==, "[b,h,q,k] fp16");
  g_assert_cmpstr (pv_type, ==, "[b,h,q,d] fp16");
}

static void
test_roundtrip (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (examples); i++)
    {
      g_autoptr(NapkinDiagram) first = load_example (examples[i]);
      g_autofree char *saved = save (first);
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinDiagram) second = napkin_diagram_load_from_data (saved, -1, NAPKIN_LOAD_VALIDATE, &error);
      g_autofree char *again = NULL;

      g_assert_no_error (error);
      again = save (second);
      g_assert_cmpstr (saved, ==, again);
    }
}

/* A mask's fields survive a save and a load, an unknown field beside them too; its
 * type is its input's and its cost one compare per element. */
static void
test_mask_fields (void)
{
  g_autoptr(NapkinDiagram) d = load_example ("attention-sliding-window.napkin");
  int n = napkin_diagram_find_node (d, "mask");
  NapkinNode *node = napkin_item_copy (NAPKIN_ITEM_NODE, napkin_diagram_node (d, n));
  g_autofree char *saved = NULL;
  g_autoptr(GString) edited = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) back = NULL;
  g_autofree char *again = NULL;
  const NapkinNode *m;
  NapkinFlops flops;

  g_assert_cmpint (node->mask, ==, NAPKIN_MASK_WINDOW);
  g_assert_cmpint (node->left, ==, 4096);
  g_assert_cmpint (node->right, ==, 0);
  node->offset = 7;
  node->right = -1;
  napkin_diagram_replace_item (d, NAPKIN_ITEM_NODE, n, node);
  g_assert_cmpuint (problems_of (d), ==, 0);

  saved = save (d);
  edited = g_string_new (saved);
  g_assert_cmpuint (g_string_replace (edited, "\"mask\": \"window\"", "\"mask\": \"window\", \"hint\": 3", 1), ==, 1);
  back = napkin_diagram_load_from_data (edited->str, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  m = napkin_diagram_node (back, napkin_diagram_find_node (back, "mask"));
  g_assert_cmpint (m->mask, ==, NAPKIN_MASK_WINDOW);
  g_assert_cmpstr (m->rows, ==, "q");
  g_assert_cmpstr (m->axis, ==, "k");
  g_assert_cmpint (m->offset, ==, 7);
  g_assert_cmpint (m->left, ==, 4096);
  g_assert_cmpint (m->right, ==, -1);
  again = save (back);
  g_assert_nonnull (strstr (again, "\"hint\": 3"));

  /* [b, h, g, q, k] in, the same out; one compare per element */
  {
    g_autofree char *t = napkin_diagram_type_to_string (back, napkin_diagram_node_type (back, napkin_diagram_find_node (back, "mask")));

    g_assert_cmpstr (t, ==, "[b,h,g,q,k] fp16");
  }
  g_assert_true (napkin_diagram_node_flops (back, napkin_diagram_find_node (back, "mask"), &flops));
  g_assert_cmpint (flops.cuda, ==, (gint64) 1 * 8 * 4 * 8192 * 8192);
  g_assert_cmpint (flops.tensor, ==, 0);

  /* the semantics of docs/file-format.md */
  g_assert_true (napkin_mask_keeps (NAPKIN_MASK_CAUSAL, 3, 3, 0, -1, 0));
  g_assert_false (napkin_mask_keeps (NAPKIN_MASK_CAUSAL, 3, 4, 0, -1, 0));
  g_assert_true (napkin_mask_keeps (NAPKIN_MASK_CAUSAL, 0, 4095, 4095, -1, 0));
  g_assert_true (napkin_mask_keeps (NAPKIN_MASK_WINDOW, 10, 7, 0, 3, 1));
  g_assert_false (napkin_mask_keeps (NAPKIN_MASK_WINDOW, 10, 6, 0, 3, 1));
  g_assert_true (napkin_mask_keeps (NAPKIN_MASK_WINDOW, 10, 11, 0, 3, 1));
  g_assert_false (napkin_mask_keeps (NAPKIN_MASK_WINDOW, 10, 12, 0, 3, 1));
  g_assert_true (napkin_mask_keeps (NAPKIN_MASK_WINDOW, 10, 0, 0, -1, 1));
}

static void
test_unknown_fields_kept (void)
{
  g_autofree char *path = example_path ("matmul-tiled.napkin");
  g_autofree char *text = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autofree char *saved = NULL;
  g_autoptr(GString) edited = NULL;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  edited = g_string_new (text);
  /* A field at the root, in a node, in a region and in the view, as a newer version might add. */
  g_string_replace (edited, "\"version\": 1,", "\"version\": 1, \"future_root\": {\"a\": [1, 2]},", 1);
  g_string_replace (edited, "\"kind\": \"contract\",", "\"kind\": \"contract\", \"future_node\": true,", 1);
  g_string_replace (edited, "\"level\": \"smem\",", "\"level\": \"smem\", \"future_region\": \"x\",", 1);
  g_string_replace (edited, "\"zoom\": 1,", "\"zoom\": 1, \"future_view\": 3,", 1);

  diagram = napkin_diagram_load_from_data (edited->str, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  saved = save (diagram);
  g_assert_nonnull (strstr (saved, "\"future_root\": {"));
  g_assert_nonnull (strstr (saved, "\"future_node\": true"));
  g_assert_nonnull (strstr (saved, "\"future_region\": \"x\""));
  g_assert_nonnull (strstr (saved, "\"future_view\": 3"));

  /* ... and survive an edit and its undo. */
  {
    g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
    g_autofree char *after = NULL;

    g_assert_true (napkin_edit_move_node (history, "mm", 10, 20, &error));
    g_assert_true (napkin_history_undo (history));
    after = save (diagram);
    g_assert_cmpstr (after, ==, saved);
  }
}

static void
test_save_atomic (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("flash-attention.napkin");
  g_autofree char *dir = g_dir_make_tmp ("napkin-test-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "fa.napkin", NULL);
  g_autofree char *missing = g_build_filename (dir, "no-such-dir", "fa.napkin", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) reloaded = NULL;
  g_autofree char *a = NULL, *b = NULL;
  GDir *listing;
  const char *name;
  guint n_files = 0;

  g_assert_true (napkin_diagram_save_to_file (diagram, path, &error));
  g_assert_no_error (error);
  reloaded = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  a = save (diagram);
  b = save (reloaded);
  g_assert_cmpstr (a, ==, b);

  g_assert_false (napkin_diagram_save_to_file (diagram, missing, &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO);

  /* No temporary file is left behind; a backup of the previous version may be. */
  listing = g_dir_open (dir, 0, NULL);
  while ((name = g_dir_read_name (listing)) != NULL)
    {
      g_autofree char *full = g_build_filename (dir, name, NULL);

      g_assert_true (g_str_has_prefix (name, "fa.napkin"));
      g_assert_false (strstr (name, ".tmp") || strstr (name, "XXXXXX"));
      g_unlink (full);
      n_files++;
    }
  g_dir_close (listing);
  g_assert_cmpuint (n_files, >=, 1);
  g_rmdir (dir);
}

/* Every file of tests/bad fails with exactly the message start in expected.tsv. */
static void
test_bad_catalogue (void)
{
  g_autofree char *dir = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "bad", NULL);
  g_autofree char *tsv_path = g_build_filename (dir, "expected.tsv", NULL);
  g_autofree char *tsv = NULL;
  g_auto(GStrv) lines = NULL;
  guint n_cases = 0;

  g_assert_true (g_file_get_contents (tsv_path, &tsv, NULL, NULL));
  lines = g_strsplit (tsv, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    {
      g_auto(GStrv) fields = NULL;
      g_autofree char *path = NULL;
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinDiagram) diagram = NULL;

      if (lines[i][0] == '\0' || lines[i][0] == '#')
        continue;
      fields = g_strsplit (lines[i], "\t", 3);
      g_assert_cmpuint (g_strv_length (fields), ==, 3);
      path = g_build_filename (dir, fields[0], NULL);

      diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);
      g_assert_null (diagram);
      g_assert_nonnull (error);
      g_assert_true (error->domain == NAPKIN_DOCUMENT_ERROR);
      /* words first, the JSON path only on the details line (docs/file-format.md) */
      {
        g_autofree char *words = napkin_error_summary (error->message);
        g_autofree char *json_path = napkin_error_path (error->message);

        if (!g_str_has_prefix (words, fields[1]))
          g_error ("%s: expected “%s…”, got “%s”", fields[0], fields[1], error->message);
        g_assert_cmpstr (json_path ? json_path : "-", ==, fields[2]);
        /* no path in the words: "nodes[2]" means nothing to a user */
        g_assert_null (strstr (words, "nodes["));
        g_assert_null (strstr (words, "regions["));
        g_assert_null (strstr (words, "$:"));
      }
      n_cases++;
    }

  g_assert_cmpuint (n_cases, >=, 30);
}

static void
test_load_leaves_nothing_on_error (void)
{
  g_autoptr(GError) error = NULL;

  /* Structure errors deep in the file: no diagram, no leak (checked under ASan). */
  g_assert_null (napkin_diagram_load_from_data ("{\"format\": \"napkin\", \"version\": 1, \"axes\": "
                                                "[{\"name\": \"m\", \"size\": 4}], \"nodes\": "
                                                "[{\"id\": \"a\", \"kind\": \"input\", \"tensor\": \"T\"}]}",
                                                -1, NAPKIN_LOAD_DEFAULT, &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_REFERENCE);
  g_assert_cmpstr (error->message, ==, "The tensor of the input “a”: unknown tensor “T” (JSON path: nodes[0].tensor)");
}

static void
test_overrides (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul-tiled.napkin");
  g_autoptr(GError) error = NULL;
  const NapkinRegion *block;
  gint64 tile;

  g_assert_true (napkin_diagram_override_axis (diagram, "k=1024", &error));
  g_assert_cmpint (napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, "k")), ==, 1024);
  g_assert_true (napkin_diagram_override_tile (diagram, "block.m=64", &error));
  g_assert_true (napkin_diagram_override_tile (diagram, "block.k=parallel:32", &error));
  block = napkin_diagram_region (diagram, 0);
  g_assert_cmpint (napkin_region_mark (block, "m", &tile), ==, NAPKIN_MARK_PARALLEL);
  g_assert_cmpint (tile, ==, 64);
  g_assert_cmpint (napkin_region_mark (block, "k", &tile), ==, NAPKIN_MARK_PARALLEL);
  g_assert_cmpint (tile, ==, 32);

  g_assert_false (napkin_diagram_override_axis (diagram, "zz=4", &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE);
  g_assert_cmpstr (error->message, ==, "--axis zz=4: the diagram has no axis “zz”");
  g_clear_error (&error);
  g_assert_false (napkin_diagram_override_axis (diagram, "m=-1", &error));
  g_assert_cmpstr (error->message, ==, "--axis: size “-1” must be an integer from 1 to 1099511627776");
  g_clear_error (&error);
  g_assert_false (napkin_diagram_override_tile (diagram, "block.q=4", &error));
  g_assert_cmpstr (error->message, ==, "--tile block.q=4: the diagram has no axis “q”");
  g_clear_error (&error);
  g_assert_false (napkin_diagram_override_tile (diagram, "nope.m=4", &error));
  g_assert_cmpstr (error->message, ==, "--tile nope.m=4: the diagram has no region “nope”");
  g_clear_error (&error);
  g_assert_false (napkin_diagram_override_tile (diagram, "block.m", &error));
  g_assert_true (g_str_has_prefix (error->message, "--tile block.m: expected REGION.AXIS=SIZE"));
}

/* ---- undo ------------------------------------------------------------------------------ */

static char *
random_node_id (NapkinDiagram *diagram)
{
  guint n = napkin_diagram_n_nodes (diagram);

  if (n == 0)
    return NULL;
  return g_strdup (napkin_diagram_node (diagram, g_test_rand_int_range (0, n))->id);
}

/* One random edit of any kind; edits the core refuses are fine (they must change nothing). */
static gboolean
random_edit (NapkinHistory *history,
             guint          serial)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  g_autoptr(GError) error = NULL;
  g_autofree char *id = random_node_id (diagram);
  g_autofree char *other = random_node_id (diagram);
  g_autofree char *before = save (diagram);
  guint n_axes = napkin_diagram_n_axes (diagram);
  const char *axis = napkin_diagram_axis (diagram, g_test_rand_int_range (0, n_axes))->name;
  const char *region = napkin_diagram_n_regions (diagram) > 0
                       ? napkin_diagram_region (diagram, g_test_rand_int_range (0, napkin_diagram_n_regions (diagram)))->name
                       : NULL;
  gboolean ok = FALSE;

  switch (g_test_rand_int_range (0, 13))
    {
    case 0:
      ok = id && napkin_edit_move_node (history, id, g_test_rand_int_range (-500, 500), g_test_rand_double (), &error);
      break;
    case 1:
      {
        g_autofree char *new_id = g_strdup_printf ("added%u", serial);
        g_autoptr(NapkinNode) node = NULL;

        node = napkin_node_new (new_id, NAPKIN_OP_MAP);
        node->fn = g_test_rand_bit () ? NAPKIN_FN_EXP : NAPKIN_FN_ADD;
        node->label = g_strdup ("random \"map\" */");
        ok = napkin_edit_add_node (history, node, &error);
        break;
      }
    case 2:
      ok = id && napkin_edit_remove_node (history, id, &error);
      break;
    case 3:
      ok = id && other && napkin_edit_connect (history, other, id, g_test_rand_int_range (0, 2), &error);
      break;
    case 4:
      ok = id && napkin_edit_disconnect (history, id, g_test_rand_int_range (0, 2), &error);
      break;
    case 5:
      ok = napkin_edit_set_axis_size (history, axis, g_test_rand_int_range (-2, 9000), &error);
      break;
    case 6:
      ok = napkin_diagram_n_tensors (diagram) > 0
           && napkin_edit_set_tensor_dtype (history, napkin_diagram_tensor (diagram, 0)->name,
                                            g_test_rand_int_range (0, NAPKIN_N_DTYPES), &error);
      break;
    case 7:
      ok = region && napkin_edit_set_mark (history, region, axis, g_test_rand_int_range (0, NAPKIN_N_MARKS),
                                           g_test_rand_int_range (0, 300), &error);
      break;
    case 8:
      ok = region && napkin_edit_set_region_rect (history, region, 1, 2, g_test_rand_int_range (-5, 400), 50, &error);
      break;
    case 9:
      ok = region && napkin_edit_remove_region (history, region, &error);
      break;
    case 10:
      {
        g_autofree char *name = g_strdup_printf ("r%u", serial);
        NapkinRegion *r = napkin_region_new (name, g_test_rand_int_range (0, NAPKIN_N_LEVELS));

        if (id)
          napkin_region_add_node (r, id);
        napkin_region_set_mark (r, axis, NAPKIN_MARK_STREAM, g_test_rand_int_range (1, 64));
        ok = napkin_edit_add_region (history, r, &error);
        napkin_item_free (NAPKIN_ITEM_REGION, r);
        break;
      }
    case 11:
      ok = id && napkin_edit_set_node_dtype (history, id, g_test_rand_bit (),
                                             g_test_rand_int_range (0, NAPKIN_N_DTYPES), &error);
      break;
    case 12:
      {
        /* A gesture of several edits, one undo step. */
        napkin_history_begin_group (history, "gesture");
        if (id)
          napkin_edit_move_node (history, id, 5, 5, NULL);
        napkin_edit_set_axis_size (history, axis, 64, NULL);
        if (other)
          napkin_edit_move_node (history, other, 7, 7, NULL);
        napkin_history_end_group (history);
        ok = TRUE;
        break;
      }
    default:
      g_assert_not_reached ();
    }

  if (!ok)
    {
      g_autofree char *after = save (diagram);

      /* A refused edit changes nothing. */
      g_assert_cmpstr (before, ==, after);
    }
  return ok;
}

static void
test_undo_random (void)
{
  guint n_accepted = 0, n_tried = 0;

  for (guint e = 0; e < G_N_ELEMENTS (examples); e++)
    for (guint round = 0; round < 8; round++)
      {
        g_autoptr(NapkinDiagram) diagram = load_example (examples[e]);
        g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
        g_autofree char *original = save (diagram);
        g_autofree char *edited = NULL;
        g_autofree char *undone = NULL;
        g_autofree char *redone = NULL;
        guint n_edits = g_test_rand_int_range (1, 60);

        for (guint i = 0; i < n_edits; i++, n_tried++)
          n_accepted += random_edit (history, i);
        edited = save (diagram);

        while (napkin_history_undo (history))
          ;
        undone = save (diagram);
        g_assert_cmpstr (undone, ==, original);
        g_assert_false (napkin_history_can_undo (history));

        while (napkin_history_redo (history))
          ;
        redone = save (diagram);
        g_assert_cmpstr (redone, ==, edited);
      }

  /* The sequences really edit: most random edits are accepted, some refused. */
  g_test_message ("%u of %u random edits accepted", n_accepted, n_tried);
  g_assert_cmpuint (n_accepted, >, n_tried / 3);
  g_assert_cmpuint (n_accepted, <, n_tried);
}

static void
test_undo_group (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul-tiled.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
  g_autoptr(GError) error = NULL;
  const NapkinNode *node;

  napkin_history_begin_group (history, "Move two");
  g_assert_true (napkin_edit_move_node (history, "a", 1, 1, &error));
  g_assert_true (napkin_edit_move_node (history, "b", 2, 2, &error));
  g_assert_false (napkin_history_can_undo (history));
  napkin_history_end_group (history);

  g_assert_cmpuint (napkin_history_get_depth (history), ==, 1);
  g_assert_cmpstr (napkin_history_get_undo_label (history), ==, "Move two");
  g_assert_true (napkin_history_undo (history));
  node = napkin_diagram_node (diagram, napkin_diagram_find_node (diagram, "a"));
  g_assert_cmpfloat (node->x, ==, 40);
  node = napkin_diagram_node (diagram, napkin_diagram_find_node (diagram, "b"));
  g_assert_cmpfloat (node->x, ==, 40);
  g_assert_false (napkin_history_can_undo (history));
}

static void
count_changed (NapkinDiagram *diagram,
               guint         *count)
{
  (*count)++;
}

static void
test_changed_once_per_command (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("layernorm.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
  g_autoptr(GError) error = NULL;
  guint count = 0;

  g_signal_connect (diagram, "changed", G_CALLBACK (count_changed), &count);
  /* Removing ln drops two wires and shrinks a region: one command, one signal. */
  g_assert_true (napkin_edit_remove_node (history, "ln", &error));
  g_assert_cmpuint (count, ==, 1);
  g_assert_cmpuint (napkin_diagram_n_wires (diagram), ==, 4);
  g_assert_cmpuint (napkin_diagram_region (diagram, 0)->nodes->len, ==, 2);
  g_assert_true (napkin_history_undo (history));
  g_assert_cmpuint (count, ==, 2);
  g_assert_cmpuint (napkin_diagram_n_wires (diagram), ==, 6);
}

/* A resize below a region's tile re-cuts the tile in the same undo step, and says so;
 * `--axis` does the same in place. */
static void
test_edit_resize_refits (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul-tiled.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
  g_autoptr(NapkinDiagram) overridden = load_example ("matmul-tiled.napkin");
  g_autoptr(GString) notes = g_string_new (NULL);
  g_autofree char *note = NULL;
  g_autoptr(GError) error = NULL;
  const NapkinRegion *region;
  gint64 tile = 0;

  g_assert_true (napkin_edit_set_axis_size_noting (history, "m", 100, &note, &error));
  g_assert_no_error (error);
  region = napkin_diagram_region (diagram, 0);
  g_assert_cmpint (napkin_region_mark (region, "m", &tile), ==, NAPKIN_MARK_PARALLEL);
  g_assert_cmpint (tile, ==, 100);
  g_assert_cmpstr (note, ==, "Region “block”: its tile m=128 is larger than the axis (100); re-tiled to 100.");
  g_assert_true (napkin_diagram_validate (diagram, &error));
  g_assert_true (napkin_history_undo (history));
  region = napkin_diagram_region (diagram, 0);
  g_assert_cmpint (napkin_region_mark (region, "m", &tile), ==, NAPKIN_MARK_PARALLEL);
  g_assert_cmpint (tile, ==, 128);
  g_assert_cmpint (napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, "m")), ==, 4096);
  /* a size the tile still fits: no note */
  g_clear_pointer (&note, g_free);
  g_assert_true (napkin_edit_set_axis_size_noting (history, "m", 2048, &note, &error));
  g_assert_null (note);

  g_assert_true (napkin_diagram_override_axis (overridden, "n=64", &error));
  g_assert_cmpuint (napkin_diagram_refit_tiles (overridden, notes), ==, 1);
  g_assert_nonnull (strstr (notes->str, "re-tiled to 64"));
  g_assert_true (napkin_diagram_validate (overridden, &error));
  g_assert_no_error (error);
}

static void
test_edit_refusals (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul-tiled.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinNode) dup = napkin_node_new ("mm", NAPKIN_OP_SOFTMAX);

  g_assert_false (napkin_edit_set_axis_size (history, "m", 0, &error));
  g_assert_cmpstr (error->message, ==, "axis size must be from 1 to 1099511627776, not 0");
  g_clear_error (&error);
  g_assert_false (napkin_edit_set_mark (history, "block", "k", NAPKIN_MARK_STREAM, -4, &error));
  g_assert_cmpstr (error->message, ==, "tile size must be from 1 to 1099511627776, not -4");
  g_clear_error (&error);
  dup->axis = g_strdup ("k");
  g_assert_false (napkin_edit_add_node (history, dup, &error));
  g_assert_cmpstr (error->message, ==, "an operation “mm” already exists");
  g_clear_error (&error);
  g_assert_false (napkin_edit_connect (history, "c", "mm", 0, &error));
  g_assert_cmpstr (error->message, ==, "“c” is an output: nothing can be wired from it");
  g_clear_error (&error);
  g_assert_false (napkin_edit_connect (history, "a", "mm", 2, &error));
  g_assert_cmpstr (error->message, ==, "“mm” has no input 2");
  g_assert_false (napkin_history_can_undo (history));
  g_assert_false (napkin_history_get_modified (history));
}

static void
test_modified (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);

  g_assert_false (napkin_history_get_modified (history));
  g_assert_true (napkin_edit_move_node (history, "a", 3, 4, NULL));
  g_assert_true (napkin_history_get_modified (history));
  napkin_history_set_saved (history);
  g_assert_false (napkin_history_get_modified (history));
  g_assert_true (napkin_history_undo (history));
  g_assert_true (napkin_history_get_modified (history));
  g_assert_true (napkin_history_redo (history));
  g_assert_false (napkin_history_get_modified (history));
  /* Undo past the save, then a new edit: the saved state can never come back. */
  g_assert_true (napkin_history_undo (history));
  g_assert_true (napkin_edit_move_node (history, "b", 9, 9, NULL));
  g_assert_true (napkin_history_get_modified (history));
  g_assert_true (napkin_history_undo (history));
  g_assert_true (napkin_history_get_modified (history));
}

static void
test_problems_point_at_items (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("softmax.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
  g_autoptr(GPtrArray) problems = NULL;
  const NapkinProblem *problem;

  g_assert_true (napkin_edit_set_mark (history, "rows", "c", NAPKIN_MARK_STREAM, 512, NULL));
  problems = napkin_diagram_check (diagram);
  g_assert_cmpuint (problems->len, ==, 1);
  problem = g_ptr_array_index (problems, 0);
  g_assert_cmpint (problem->kind, ==, NAPKIN_ITEM_REGION);
  g_assert_cmpuint (problem->index, ==, 0);
  g_assert_cmpstr (problem->path, ==, "regions[0].marks.c");

  g_clear_pointer (&problems, g_ptr_array_unref);
  g_assert_true (napkin_edit_disconnect (history, "y", 0, NULL));
  g_assert_true (napkin_history_undo (history));
  g_assert_true (napkin_history_undo (history));
  problems = napkin_diagram_check (diagram);
  g_assert_cmpuint (problems->len, ==, 0);
}

static void
test_copy_paste (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("flash-attention.napkin");
  g_autoptr(NapkinDiagram) other = load_example ("matmul.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
  g_autoptr(NapkinHistory) other_history = napkin_history_new (other);
  const char *all[] = { "q_in", "k_in", "v_in", "qk", "scale", "sm", "pv", "o", NULL };
  g_autofree char *before = save (diagram);
  g_autofree char *clip = napkin_diagram_copy_nodes (diagram, all, NULL);
  g_autoptr(GPtrArray) ids = NULL;
  g_autoptr(GPtrArray) problems = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *after_undo = NULL;
  const NapkinNode *pasted;

  /* Into the same diagram: everything renamed, a valid second copy, one undo step. */
  g_assert_true (napkin_edit_paste (history, clip, -1, 0, 400, &ids, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (ids->len, ==, 8);
  g_assert_cmpstr (g_ptr_array_index (ids, 3), ==, "qk_2");
  g_assert_cmpuint (napkin_diagram_n_nodes (diagram), ==, 16);
  g_assert_cmpuint (napkin_diagram_n_wires (diagram), ==, 14);
  g_assert_cmpuint (napkin_diagram_n_regions (diagram), ==, 2);
  g_assert_cmpstr (napkin_diagram_region (diagram, 1)->name, ==, "block_2");
  g_assert_true (napkin_region_has_node (napkin_diagram_region (diagram, 1), "pv_2"));
  pasted = napkin_diagram_node (diagram, napkin_diagram_find_node (diagram, "qk_2"));
  g_assert_cmpfloat (pasted->y, ==, 100 + 400);
  problems = napkin_diagram_check (diagram);
  g_assert_cmpuint (problems->len, ==, 0);
  g_assert_cmpuint (napkin_history_get_depth (history), ==, 1);
  g_assert_true (napkin_history_undo (history));
  after_undo = save (diagram);
  g_assert_cmpstr (after_undo, ==, before);

  /* Into another diagram whose axis k has another size: the pasted k is renamed. */
  g_clear_pointer (&ids, g_ptr_array_unref);
  g_assert_true (napkin_edit_set_axis_size (other_history, "k", 512, &error));
  g_assert_true (napkin_edit_paste (other_history, clip, -1, 0, 0, &ids, &error));
  g_assert_no_error (error);
  g_assert_cmpint (napkin_diagram_find_axis (other, "k_2"), >=, 0);
  g_assert_cmpint (napkin_diagram_axis_size (other, napkin_diagram_find_axis (other, "k_2")), ==, 4096);
  g_clear_pointer (&problems, g_ptr_array_unref);
  problems = napkin_diagram_check (other);
  g_assert_cmpuint (problems->len, ==, 0);

  /* Garbage on the clipboard: an error, nothing changed. */
  g_assert_false (napkin_edit_paste (other_history, "{not json", -1, 0, 0, NULL, &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_PARSE);
  g_assert_cmpuint (napkin_history_get_depth (other_history), ==, 2);
}


/* Inputs and outputs show their tensor's name: renaming the tensor renames it
 * everywhere, in one undo step. */
static void
test_rename_tensor (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
  g_autoptr(GError) error = NULL;
  g_autofree char *before = save (diagram);
  g_autofree char *after = NULL;
  const NapkinNode *a;

  g_assert_true (napkin_edit_rename_tensor (history, "A", "Q", &error));
  g_assert_no_error (error);
  g_assert_cmpint (napkin_diagram_find_tensor (diagram, "A"), <, 0);
  g_assert_cmpint (napkin_diagram_find_tensor (diagram, "Q"), >=, 0);
  a = napkin_diagram_node (diagram, napkin_diagram_find_node (diagram, "a"));
  g_assert_cmpstr (a->tensor, ==, "Q");
  g_assert_cmpstr (a->label, ==, "Q");
  g_assert_true (napkin_diagram_validate (diagram, NULL));
  /* refused: a clash, a bad name */
  g_assert_false (napkin_edit_rename_tensor (history, "Q", "B", &error));
  g_assert_nonnull (strstr (error->message, "already exists"));
  g_clear_error (&error);
  g_assert_false (napkin_edit_rename_tensor (history, "Q", "2x", &error));
  g_clear_error (&error);
  g_assert_true (napkin_history_undo (history));
  after = save (diagram);
  g_assert_cmpstr (before, ==, after);
}

static void
test_remove_axis (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul-tiled.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
  g_autoptr(GError) error = NULL;
  guint n_axes = napkin_diagram_n_axes (diagram);

  /* in use: refused, naming the user */
  g_assert_false (napkin_edit_remove_axis (history, "k", &error));
  g_assert_nonnull (strstr (error->message, "is used by tensor"));
  g_clear_error (&error);
  g_assert_false (napkin_edit_remove_axis (history, "nope", &error));
  g_clear_error (&error);
  g_assert_true (napkin_edit_add_axis (history, "spare", 8, NULL));
  g_assert_true (napkin_edit_set_mark (history, napkin_diagram_region (diagram, 0)->name, "spare",
                                       NAPKIN_MARK_PARALLEL, 2, NULL));
  g_assert_true (napkin_edit_remove_axis (history, "spare", &error));
  g_assert_no_error (error);
  g_assert_cmpuint (napkin_diagram_n_axes (diagram), ==, n_axes);
  /* its marks went with it */
  g_assert_cmpint (napkin_region_mark (napkin_diagram_region (diagram, 0), "spare", NULL), ==, NAPKIN_MARK_WHOLE);
  g_assert_true (napkin_diagram_validate (diagram, NULL));
  g_assert_true (napkin_history_undo (history));
  g_assert_cmpuint (napkin_diagram_n_axes (diagram), ==, n_axes + 1);
}

static void
test_infer_contract_out (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul.napkin");
  g_auto(GStrv) out = NULL;
  int mm = -1;

  for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
    if (napkin_diagram_node (diagram, n)->kind == NAPKIN_OP_CONTRACT)
      mm = n;
  g_assert_cmpint (mm, >=, 0);
  out = napkin_diagram_infer_contract_out (diagram, mm);
  g_assert_nonnull (out);
  g_assert_cmpstr (out[0], ==, "m");
  g_assert_cmpstr (out[1], ==, "n");
  g_assert_null (out[2]);
}

/* An unconnected contraction leaves itself and what it feeds out of the priced part;
 * the inputs stay. */
static void
test_valid_part (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul-tiled.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
  g_autoptr(NapkinDiagram) part = NULL;
  g_auto(GStrv) nodes = NULL;
  g_auto(GStrv) regions = NULL;
  const char *mm = NULL;

  part = napkin_diagram_copy_valid_part (diagram, &nodes, &regions);
  g_assert_nonnull (part);
  g_assert_cmpuint (g_strv_length (nodes), ==, 0);
  g_assert_cmpuint (napkin_diagram_n_nodes (part), ==, napkin_diagram_n_nodes (diagram));
  g_clear_object (&part);
  g_clear_pointer (&nodes, g_strfreev);
  g_clear_pointer (&regions, g_strfreev);

  for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
    if (napkin_diagram_node (diagram, n)->kind == NAPKIN_OP_CONTRACT)
      mm = napkin_diagram_node (diagram, n)->id;
  g_assert_true (napkin_edit_disconnect (history, mm, 1, NULL));
  g_assert_false (napkin_diagram_validate (diagram, NULL));
  part = napkin_diagram_copy_valid_part (diagram, &nodes, &regions);
  g_assert_nonnull (part);
  g_assert_true (g_strv_contains ((const char *const *) nodes, mm));
  g_assert_cmpint (napkin_diagram_find_node (part, mm), <, 0);
  g_assert_cmpint (napkin_diagram_find_node (part, "a"), >=, 0);
  g_assert_cmpuint (problems_of (part), ==, 0);
}

/* A factor written as an expression of axis sizes (docs/file-format.md, "Expressions"):
 * parsed, printed, evaluated; it follows d through an edit, its undo and --axis; it
 * saves as text and loads back; a number still loads as one; errors name the place. */
static void
test_alpha_expressions (void)
{
  g_autoptr(NapkinDiagram) d = load_example ("attention.napkin");
  g_autoptr(NapkinHistory) history = napkin_history_new (d);
  g_autoptr(NapkinExpr) expr = napkin_expr_parse ("2 * rsqrt(d) - -x^2 / (a + b)", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *printed = NULL;
  g_autofree char *saved = NULL;
  g_autoptr(NapkinDiagram) back = NULL;
  g_auto(GStrv) names = NULL;
  g_autofree char *joined = NULL;
  const NapkinNode *scale;
  gsize length;
  double v;

  g_assert_nonnull (expr);
  names = napkin_expr_names (expr);
  joined = g_strjoinv (",", names);
  g_assert_cmpstr (joined, ==, "d,x,a,b");
  printed = napkin_expr_print (expr, NAPKIN_EXPR_TEXT, NULL, NULL);
  g_assert_cmpstr (printed, ==, "2*rsqrt(d) - -x^2/(a + b)");
  g_clear_pointer (&printed, g_free);
  printed = napkin_expr_print (expr, NAPKIN_EXPR_PYTHON, NULL, NULL);
  g_assert_cmpstr (printed, ==, "2*(1 / math.sqrt(d)) - -x ** 2/(a + b)");
  g_assert_null (napkin_expr_parse ("1/sqrt(d", &error));
  g_assert_nonnull (strstr (error->message, "column 9"));
  g_clear_error (&error);
  g_assert_null (napkin_expr_parse ("foo(d)", &error));
  g_assert_nonnull (strstr (error->message, "unknown function"));
  g_clear_error (&error);
  g_assert_true (napkin_diagram_eval_expr (d, "1/√d", &v, NULL));
  g_assert_cmpfloat (v, ==, 1 / sqrt (128.0));
  g_assert_true (napkin_expr_is_number (" 0.125 ", &v) && v == 0.125);
  g_assert_false (napkin_expr_is_number ("1/8", &v));

  scale = napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"));
  g_assert_cmpstr (scale->alpha_expr, ==, "1/sqrt(d)");
  g_assert_cmpfloat (scale->alpha, ==, 1 / sqrt (128.0));
  g_assert_true (napkin_edit_set_axis_size (history, "d", 64, NULL));
  scale = napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"));
  g_assert_cmpfloat (scale->alpha, ==, 0.125);
  napkin_history_undo (history);
  scale = napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"));
  g_assert_cmpfloat (scale->alpha, ==, 1 / sqrt (128.0));
  g_assert_true (napkin_diagram_override_axis (d, "d=256", NULL));
  scale = napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"));
  g_assert_cmpfloat (scale->alpha, ==, 0.0625);
  /* an axis only an expression reads cannot go either */
  {
    g_autoptr(NapkinNode) changed = napkin_item_copy (NAPKIN_ITEM_NODE, scale);

    g_assert_true (napkin_edit_add_axis (history, "e", 16, NULL));
    g_free (changed->alpha_expr);
    changed->alpha_expr = g_strdup ("1/sqrt(e)");
    g_assert_true (napkin_edit_update_node (history, changed, NULL));
    scale = napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"));
    g_assert_cmpfloat (scale->alpha, ==, 0.25);
    g_assert_false (napkin_edit_remove_axis (history, "e", &error));
    g_assert_nonnull (strstr (error->message, "used by operation “scale”"));
    g_clear_error (&error);
    napkin_history_undo (history);
    napkin_history_undo (history);
  }

  saved = napkin_diagram_save_to_data (d, &length);
  g_assert_nonnull (strstr (saved, "\"alpha\": \"1/sqrt(d)\""));
  back = napkin_diagram_load_from_data (saved, length, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (napkin_diagram_node (back, napkin_diagram_find_node (back, "scale"))->alpha, ==, 0.0625);
  g_clear_object (&back);
  /* an unknown axis, at its JSON path */
  {
    GString *bad = g_string_new (saved);

    g_string_replace (bad, "\"1/sqrt(d)\"", "\"1/sqrt(q2)\"", 1);
    back = napkin_diagram_load_from_data (bad->str, bad->len, NAPKIN_LOAD_VALIDATE, &error);
    g_assert_null (back);
    g_assert_nonnull (strstr (error->message, "unknown axis “q2” in “1/sqrt(q2)”"));
    g_assert_nonnull (strstr (error->message, ".alpha"));
    g_clear_error (&error);
    g_string_replace (bad, "\"1/sqrt(q2)\"", "0.5", 1);
    back = napkin_diagram_load_from_data (bad->str, bad->len, NAPKIN_LOAD_VALIDATE, &error);
    g_assert_no_error (error);
    scale = napkin_diagram_node (back, napkin_diagram_find_node (back, "scale"));
    g_assert_null (scale->alpha_expr);
    g_assert_cmpfloat (scale->alpha, ==, 0.5);
    g_string_free (bad, TRUE);
  }
}

/* A copy for another thread drops unknown fields but keeps a tensor's constant (the
 * rotary's rotate_half matrix is what that tensor holds: docs/import.md), in a JSON
 * object of its own. */
static void
test_copy_keeps_constant (void)
{
  static const char json[] =
    "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"d\",\"size\":4},{\"name\":\"e\",\"size\":4}],"
    "\"tensors\":[{\"name\":\"R\",\"axes\":[\"d\",\"e\"],\"dtype\":\"fp32\",\"constant\":\"rotate_half\",\"note\":1},"
    "{\"name\":\"X\",\"axes\":[\"d\",\"e\"],\"dtype\":\"fp32\",\"note\":2}],"
    "\"nodes\":[{\"id\":\"r\",\"kind\":\"input\",\"tensor\":\"R\"},{\"id\":\"x\",\"kind\":\"output\",\"tensor\":\"X\"}],"
    "\"wires\":[{\"from\":\"r\",\"to\":\"x\",\"port\":0}]}";
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_autoptr(NapkinDiagram) copy = NULL;
  const NapkinTensor *r, *x, *r0;
  json_object *c = NULL;

  g_assert_no_error (error);
  copy = napkin_diagram_copy_without_extras (d);
  r0 = napkin_diagram_tensor (d, (guint) napkin_diagram_find_tensor (d, "R"));
  r = napkin_diagram_tensor (copy, (guint) napkin_diagram_find_tensor (copy, "R"));
  x = napkin_diagram_tensor (copy, (guint) napkin_diagram_find_tensor (copy, "X"));
  g_assert_nonnull (r->extra);
  g_assert_true (r->extra != r0->extra);
  g_assert_true (json_object_object_get_ex (r->extra, "constant", &c));
  g_assert_cmpstr (json_object_get_string (c), ==, "rotate_half");
  g_assert_false (json_object_object_get_ex (r->extra, "note", NULL));
  g_assert_null (x->extra);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/core/types/names-and-bytes", test_types);
  g_test_add_func ("/core/copy/keeps-constant", test_copy_keeps_constant);
  g_test_add_func ("/core/expr/alpha", test_alpha_expressions);
  g_test_add_func ("/core/examples/valid", test_examples_valid);
  g_test_add_func ("/core/examples/flops", test_flops);
  g_test_add_func ("/core/mask/fields", test_mask_fields);
  g_test_add_func ("/core/examples/types", test_types_inferred);
  g_test_add_func ("/core/file/roundtrip", test_roundtrip);
  g_test_add_func ("/core/file/unknown-fields", test_unknown_fields_kept);
  g_test_add_func ("/core/file/save-atomic", test_save_atomic);
  g_test_add_func ("/core/file/bad-catalogue", test_bad_catalogue);
  g_test_add_func ("/core/file/error-frees", test_load_leaves_nothing_on_error);
  g_test_add_func ("/core/diagram/overrides", test_overrides);
  g_test_add_func ("/core/history/random-undo", test_undo_random);
  g_test_add_func ("/core/history/group", test_undo_group);
  g_test_add_func ("/core/history/changed-once", test_changed_once_per_command);
  g_test_add_func ("/core/history/modified", test_modified);
  g_test_add_func ("/core/edit/refusals", test_edit_refusals);
  g_test_add_func ("/core/edit/resize-refits", test_edit_resize_refits);
  g_test_add_func ("/core/validate/problems", test_problems_point_at_items);
  g_test_add_func ("/core/clipboard/copy-paste", test_copy_paste);
  g_test_add_func ("/core/edit/rename-tensor", test_rename_tensor);
  g_test_add_func ("/core/edit/remove-axis", test_remove_axis);
  g_test_add_func ("/core/diagram/infer-contract-out", test_infer_contract_out);
  g_test_add_func ("/core/validate/valid-part", test_valid_part);

  return g_test_run ();
}
