/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The menu's Backward Diagram under Xvfb (docs/training.md): on the FlashAttention
 * example it opens a new window whose document is the backward diagram — valid, with the
 * gradients d_Q, d_K, d_V of its inputs, no regions — drawn (a screenshot of it is not
 * blank), and the forward's window keeps its document untouched; "Cheaper on the
 * Selected GPU" prices storing and recomputing the softmax and says which it took in a
 * toast, "Recomputed" stores no probabilities. A diagram without outputs opens nothing
 * and says why in the banner. */
#include "config.h"

#include "napkin-app-test.h"
#include "napkin-backward-dialog.h"
#include "napkin-file.h"
#include "napkin-validate.h"

static NapkinApplication *app;
static char *tmpdir;

static NapkinWindow *
other_window (NapkinWindow *window)
{
  for (GList *l = gtk_application_get_windows (GTK_APPLICATION (app)); l != NULL; l = l->next)
    if (l->data != window && NAPKIN_IS_WINDOW (l->data))
      return l->data;
  return NULL;
}

/* The backward's window, once it opens (up to `ms`), or NULL. */
static NapkinWindow *
wait_for_other_window (NapkinWindow *window,
                       guint         ms)
{
  NapkinWindow *other = NULL;

  for (guint i = 0; i < ms / 10 && other == NULL; i++)
    {
      iterate (10);
      other = other_window (window);
    }
  return other;
}

static void
test_flash_attention (void)
{
  NapkinWindow *window = open_example_sized (app, "flash-attention", 1200, 800);
  g_autofree char *before = napkin_diagram_save_to_data (diagram_of (window), NULL);
  g_autofree char *after = NULL;
  g_autofree char *path = g_build_filename (tmpdir, "backward.png", NULL);
  g_autoptr(GdkTexture) shot = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) colours = g_hash_table_new (NULL, NULL);
  g_autofree guint8 *pixels = NULL;
  NapkinWindow *backward = NULL;
  NapkinDiagram *d;
  int w, h;

  g_assert_null (other_window (window));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.backward", "s", "auto"));
  backward = wait_for_other_window (window, 5000);
  g_assert_nonnull (backward);
  gtk_test_widget_wait_for_draw (GTK_WIDGET (backward));

  d = diagram_of (backward);
  g_assert_true (napkin_diagram_validate (d, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (napkin_diagram_n_regions (d), ==, 0);
  for (guint i = 0; i < 4; i++)
    g_assert_cmpint (napkin_diagram_find_tensor (d, (const char *[]) { "d_Q", "d_K", "d_V", "d_O" }[i]), >=, 0);
  g_assert_cmpuint (napkin_diagram_n_nodes (d), >, napkin_diagram_n_nodes (diagram_of (window)) + 8);
  g_assert_true (g_str_has_suffix (napkin_diagram_get_title (d), "backward"));
  /* the model's choice, said: both times and which was kept (the pane's GPU) */
  g_assert_nonnull (napkin_window_get_last_toast (backward));
  g_assert_nonnull (strstr (napkin_window_get_last_toast (backward), "softmax probabilities stored"));
  g_assert_nonnull (strstr (napkin_window_get_last_toast (backward), "ms predicted;"));
  g_assert_cmpint ((napkin_diagram_find_tensor (d, "saved_sm") >= 0), ==,
                   g_str_has_suffix (napkin_window_get_last_toast (backward), "stored."));
  after = napkin_diagram_save_to_data (diagram_of (window), NULL);
  g_assert_cmpstr (before, ==, after);

  napkin_app_test_screenshot (backward, path);
  shot = gdk_texture_new_from_filename (path, &error);
  g_assert_no_error (error);
  w = gdk_texture_get_width (shot);
  h = gdk_texture_get_height (shot);
  g_assert_cmpint (w, >=, 400);
  g_assert_cmpint (h, >=, 300);
  pixels = g_malloc ((gsize) w * h * 4);
  gdk_texture_download (shot, pixels, w * 4);
  for (int i = 0; i < w * h; i += 7)
    g_hash_table_add (colours, GUINT_TO_POINTER (((guint32 *) pixels)[i] & 0xffffff));
  /* not blank: text, strands and widgets give many colours */
  g_assert_cmpuint (g_hash_table_size (colours), >, 100);
  g_remove (path);

  close_window (backward);
  close_window (window);
}

static void
test_refused (void)
{
  static const char json[] =
    "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"m\",\"size\":4}],"
    "\"tensors\":[{\"name\":\"X\",\"axes\":[\"m\"],\"dtype\":\"fp32\"}],"
    "\"nodes\":[{\"id\":\"x\",\"kind\":\"input\",\"tensor\":\"X\"},{\"id\":\"e\",\"kind\":\"map\",\"fn\":\"exp\"}],"
    "\"wires\":[{\"from\":\"x\",\"to\":\"e\",\"port\":0}]}";
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_DEFAULT, &error);
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));

  g_assert_no_error (error);
  napkin_window_set_document (window, d, NULL);
  napkin_app_test_present (window, 900, 600);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.backward", "s", "store"));
  iterate (100);
  g_assert_null (other_window (window));
  g_assert_nonnull (napkin_window_get_banner_text (window));
  g_assert_nonnull (strstr (napkin_window_get_banner_text (window), "no outputs"));
  close_window (window);
}

/* Softmax Probabilities Recomputed: the backward makes P again (sm_re) and stores none. */
static void
test_recompute (void)
{
  NapkinWindow *window = open_example_sized (app, "flash-attention", 1000, 700);
  NapkinWindow *backward = NULL;
  NapkinDiagram *d;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.backward", "s", "recompute"));
  backward = wait_for_other_window (window, 5000);
  g_assert_nonnull (backward);
  d = diagram_of (backward);
  g_assert_true (napkin_diagram_validate (d, NULL));
  g_assert_cmpint (napkin_diagram_find_tensor (d, "saved_sm"), <, 0);
  g_assert_cmpint (napkin_diagram_find (d, NAPKIN_ITEM_NODE, "sm_re"), >=, 0);
  g_assert_cmpint (napkin_diagram_find_tensor (d, "d_Q"), >=, 0);
  close_window (backward);
  close_window (window);
}

static NapkinBackwardDialog *
open_dialog (void)
{
  for (guint i = 0; i < 500; i++)
    {
      GListModel *tops = gtk_window_get_toplevels ();   /* GTK's own list */

      for (guint j = 0; j < g_list_model_get_n_items (tops); j++)
        {
          g_autoptr(GObject) w = g_list_model_get_item (tops, j);

          if (NAPKIN_IS_BACKWARD_DIALOG (w) && gtk_widget_get_mapped (GTK_WIDGET (w)))
            return NAPKIN_BACKWARD_DIALOG (w);
        }
      iterate (10);
    }
  g_error ("the Backward Diagram dialog did not open");
  return NULL;
}

/* Choose Gradients…: a check button for each input (an int8 one insensitive, saying why),
 * all checked; unchecking K and picking Recomputed gives a backward without d_K that
 * recomputes P; with nothing checked, Build says so and the dialog stays. */
static void
test_choose_gradients (void)
{
  static const char json[] =
    "{\"format\":\"napkin\",\"version\":1,\"axes\":[{\"name\":\"q\",\"size\":64},{\"name\":\"k\",\"size\":64},"
    "{\"name\":\"d\",\"size\":16}],"
    "\"tensors\":[{\"name\":\"Q\",\"axes\":[\"q\",\"d\"],\"dtype\":\"fp16\"},"
    "{\"name\":\"K\",\"axes\":[\"k\",\"d\"],\"dtype\":\"fp16\"},"
    "{\"name\":\"V\",\"axes\":[\"k\",\"d\"],\"dtype\":\"fp16\"},"
    "{\"name\":\"M\",\"axes\":[\"q\",\"k\"],\"dtype\":\"int8\"},"
    "{\"name\":\"O\",\"axes\":[\"q\",\"d\"],\"dtype\":\"fp16\"}],"
    "\"nodes\":[{\"id\":\"q\",\"kind\":\"input\",\"tensor\":\"Q\"},{\"id\":\"kk\",\"kind\":\"input\",\"tensor\":\"K\"},"
    "{\"id\":\"v\",\"kind\":\"input\",\"tensor\":\"V\"},{\"id\":\"m\",\"kind\":\"input\",\"tensor\":\"M\"},"
    "{\"id\":\"s\",\"kind\":\"contract\",\"out\":[\"q\",\"k\"]},"
    "{\"id\":\"mk\",\"kind\":\"mask\",\"mask\":\"tensor\",\"axis\":\"k\"},"
    "{\"id\":\"sm\",\"kind\":\"softmax\",\"axis\":\"k\"},"
    "{\"id\":\"pv\",\"kind\":\"contract\",\"out\":[\"q\",\"d\"]},"
    "{\"id\":\"o\",\"kind\":\"output\",\"tensor\":\"O\"}],"
    "\"wires\":[{\"from\":\"q\",\"to\":\"s\",\"port\":0},{\"from\":\"kk\",\"to\":\"s\",\"port\":1},"
    "{\"from\":\"s\",\"to\":\"mk\",\"port\":0},{\"from\":\"m\",\"to\":\"mk\",\"port\":1},"
    "{\"from\":\"mk\",\"to\":\"sm\"},{\"from\":\"sm\",\"to\":\"pv\",\"port\":0},"
    "{\"from\":\"v\",\"to\":\"pv\",\"port\":1},{\"from\":\"pv\",\"to\":\"o\"}]}";
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) fwd = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_DEFAULT, &error);
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));
  NapkinWindow *backward = NULL;
  NapkinBackwardDialog *dialog;
  GtkWidget *k, *m, *q, *v, *build;
  NapkinDiagram *d;

  g_assert_no_error (error);
  napkin_window_set_document (window, fwd, NULL);
  napkin_app_test_present (window, 1000, 700);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.backward-choose", NULL));
  dialog = open_dialog ();
  q = find_named (GTK_WIDGET (dialog), "gradient-Q");
  k = find_named (GTK_WIDGET (dialog), "gradient-K");
  v = find_named (GTK_WIDGET (dialog), "gradient-V");
  m = find_named (GTK_WIDGET (dialog), "gradient-M");
  build = find_named (GTK_WIDGET (dialog), "build");
  g_assert_nonnull (q);
  g_assert_nonnull (k);
  g_assert_nonnull (v);
  g_assert_nonnull (m);
  g_assert_nonnull (build);
  g_assert_true (gtk_check_button_get_active (GTK_CHECK_BUTTON (k)));
  /* the int8 mask has no gradient: unchecked, insensitive, and the tooltip says why */
  g_assert_false (gtk_check_button_get_active (GTK_CHECK_BUTTON (m)));
  g_assert_false (gtk_widget_get_sensitive (m));
  g_assert_nonnull (strstr (gtk_widget_get_tooltip_text (m), "int8"));
  if (g_getenv ("NAPKIN_SCREENSHOT_DIR"))
    {
      g_autoptr(GdkTexture) shot = (gtk_test_widget_wait_for_draw (GTK_WIDGET (dialog)), shoot (GTK_WIDGET (dialog)));
      g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_SCREENSHOT_DIR"), "backward-dialog.png", NULL);

      g_assert_true (gdk_texture_save_to_png (shot, path));
    }

  /* nothing checked: Build says so, the dialog stays, no window opens */
  gtk_check_button_set_active (GTK_CHECK_BUTTON (q), FALSE);
  gtk_check_button_set_active (GTK_CHECK_BUTTON (k), FALSE);
  gtk_check_button_set_active (GTK_CHECK_BUTTON (v), FALSE);
  g_assert_true (gtk_widget_activate (build));
  /* a button's activation clicks 250 ms later (slowly under AddressSanitizer): poll */
  for (guint i = 0; i < 3000 && !gtk_widget_get_visible (find_named (GTK_WIDGET (dialog), "error")); i++)
    iterate (10);
  g_assert_true (gtk_widget_get_visible (find_named (GTK_WIDGET (dialog), "error")));
  g_assert_null (other_window (window));
  g_assert_true (gtk_widget_get_mapped (GTK_WIDGET (dialog)));

  /* Q and V, recomputed */
  g_assert_true (gtk_widget_activate (q));
  g_assert_true (gtk_widget_activate (v));
  g_assert_true (gtk_check_button_get_active (GTK_CHECK_BUTTON (q)));
  gtk_drop_down_set_selected (GTK_DROP_DOWN (find_named (GTK_WIDGET (dialog), "softmax-choice")), 2);
  g_assert_true (gtk_widget_activate (build));
  backward = wait_for_other_window (window, 30000);
  g_assert_nonnull (backward);
  d = diagram_of (backward);
  g_assert_true (napkin_diagram_validate (d, NULL));
  g_assert_cmpint (napkin_diagram_find_tensor (d, "d_Q"), >=, 0);
  g_assert_cmpint (napkin_diagram_find_tensor (d, "d_V"), >=, 0);
  g_assert_cmpint (napkin_diagram_find_tensor (d, "d_K"), <, 0);
  g_assert_cmpint (napkin_diagram_find_tensor (d, "d_M"), <, 0);
  g_assert_cmpint (napkin_diagram_find (d, NAPKIN_ITEM_NODE, "sm_re"), >=, 0);
  g_assert_cmpint (napkin_diagram_find_tensor (d, "saved_sm"), <, 0);
  close_window (backward);
  close_window (window);
}

int
main (int    argc,
      char **argv)
{
  if (!napkin_app_test_init (&argc, &argv, "napkin-backward-XXXXXX", &tmpdir))
    return g_test_run ();
  app = napkin_app_test_register (G_APPLICATION_DEFAULT_FLAGS);

  g_test_add_func ("/backward/flash-attention", test_flash_attention);
  g_test_add_func ("/backward/recompute", test_recompute);
  g_test_add_func ("/backward/refused", test_refused);
  g_test_add_func ("/backward/choose-gradients", test_choose_gradients);
  return napkin_app_test_run (app, tmpdir);
}
