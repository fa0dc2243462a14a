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
  for (guint i = 0; i < 500 && backward == NULL; i++)
    {
      iterate (10);
      backward = other_window (window);
    }
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
  for (guint i = 0; i < 500 && backward == NULL; i++)
    {
      iterate (10);
      backward = other_window (window);
    }
  g_assert_nonnull (backward);
  d = diagram_of (backward);
  g_assert_true (napkin_diagram_validate (d, NULL));
  g_assert_cmpint (napkin_diagram_find_tensor (d, "saved_sm"), <, 0);
  g_assert_cmpint (napkin_diagram_find (d, NAPKIN_ITEM_NODE, "sm_re"), >=, 0);
  g_assert_cmpint (napkin_diagram_find_tensor (d, "d_Q"), >=, 0);
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
  return napkin_app_test_run (app, tmpdir);
}
