/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The editor in the desktop's style and to assistive technologies, under Xvfb:
 * dark paper and the dark code scheme with ADW_DEBUG_COLOR_SCHEME=prefer-dark,
 * switched live; an accessible label on every icon-only control; the canvas's
 * description of what it draws (docs/editor.md, "Dark style" and "Accessibility").
 * With NAPKIN_SCREENSHOT_DIR=DIR the dark screenshots are saved there
 * (docs/editor-dark-*.png). */
#include "config.h"

#include <locale.h>
#include <string.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>

#include "napkin-app-test.h"
#include "napkin-canvas.h"
#include "napkin-code-view.h"
#include "napkin-edit.h"
#include "napkin-file.h"
#include "napkin-render.h"

static NapkinApplication *app;
static char *tmpdir;

static NapkinWindow *
open_window (const char *name)
{
  NapkinWindow *window = open_example_sized (app, name, 1280, 860);

  iterate (50);
  return window;
}

static void
save (GdkTexture *texture,
      const char *name)
{
  const char *dir = g_getenv ("NAPKIN_SCREENSHOT_DIR");
  g_autofree char *path = g_build_filename (dir ? dir : tmpdir, name, NULL);

  g_assert_true (gdk_texture_save_to_png (texture, path));
}

typedef struct
{
  int      width;
  int      height;
  guint8  *pixels;   /* B G R A (native-endian ARGB) */
} Pixels;

static Pixels
download (GdkTexture *texture)
{
  Pixels p = { gdk_texture_get_width (texture), gdk_texture_get_height (texture), NULL };

  p.pixels = g_malloc ((gsize) p.width * p.height * 4);
  gdk_texture_download (texture, p.pixels, p.width * 4);
  return p;
}

/* Mean luminance (0 black … 1 white, Rec. 709 weights) of the pixels within
 * `band` of the edges: what is left of the background once content is drawn. */
static double
border_luminance (const Pixels *p,
                  int           band)
{
  double sum = 0;
  guint n = 0;

  for (int y = 0; y < p->height; y++)
    for (int x = 0; x < p->width; x++)
      {
        const guint8 *px = p->pixels + 4 * ((gsize) y * p->width + x);

        if (x >= band && x < p->width - band && y >= band && y < p->height - band)
          continue;
        sum += (0.2126 * px[2] + 0.7152 * px[1] + 0.0722 * px[0]) / 255.0;
        n++;
      }
  return sum / n;
}

static guint
count_near (const Pixels *p,
            const char   *hex)
{
  return napkin_app_test_count_near (p->pixels, p->width, p->height, hex, 16);
}

static GtkWidget *
find_type (GtkWidget *root,
           GType      type)
{
  if (G_TYPE_CHECK_INSTANCE_TYPE (root, type))
    return root;
  for (GtkWidget *child = gtk_widget_get_first_child (root); child; child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_type (child, type);

      if (found)
        return found;
    }
  return NULL;
}

static gboolean
code_settled (NapkinCodeView *view)
{
  for (guint i = 0; i < 1000 && !napkin_code_view_is_settled (view); i++)
    iterate (10);
  return napkin_code_view_is_settled (view);
}

/* ---- dark style ------------------------------------------------------------------------- */

static void
test_dark (void)
{
  AdwStyleManager *manager = adw_style_manager_get_default ();
  NapkinWindow *window;
  NapkinCanvas *canvas;
  GtkWidget *code, *source;
  g_autoptr(GdkTexture) canvas_shot = NULL, code_shot = NULL, window_shot = NULL, light_shot = NULL;
  Pixels p;
  double lum;

  /* The environment asks for dark (ADW_DEBUG_COLOR_SCHEME=prefer-dark). */
  g_assert_true (adw_style_manager_get_dark (manager));
  window = open_window ("matmul-nested");
  canvas = napkin_window_get_canvas (window);
  code = napkin_window_get_code_view (window);
  g_assert_true (napkin_canvas_get_dark (canvas));
  g_assert_cmpstr (napkin_code_view_get_scheme_id (NAPKIN_CODE_VIEW (code)), ==, "Adwaita-dark");

  /* The canvas: dark paper, every level of the drawing in its dark-paper colour. */
  canvas_shot = shoot (GTK_WIDGET (canvas));
  save (canvas_shot, "editor-dark-canvas.png");
  p = download (canvas_shot);
  lum = border_luminance (&p, 6);
  g_test_message ("canvas border luminance %.3f", lum);
  g_assert_cmpfloat (lum, <, 0.2);
  for (NapkinLevel level = NAPKIN_LEVEL_HBM; level <= NAPKIN_N_LEVELS; level++)
    {
      guint n = count_near (&p, napkin_render_paper_hex (level, TRUE));

      g_test_message ("%s: %u pixels", napkin_render_paper_hex (level, TRUE), n);
      if (level != NAPKIN_LEVEL_L2)   /* matmul-nested has no L2 region */
        g_assert_cmpuint (n, >, level == NAPKIN_LEVEL_HBM ? 200 : 40);
    }
  g_free (p.pixels);

  /* The code view, with its kernel generated. */
  gtk_stack_set_visible_child (GTK_STACK (gtk_widget_get_parent (code)), code);
  g_assert_true (code_settled (NAPKIN_CODE_VIEW (code)));
  iterate (300);
  source = find_type (code, g_type_from_name ("GtkSourceView"));
  g_assert_nonnull (source);
  code_shot = shoot (gtk_widget_get_parent (source));
  save (code_shot, "editor-dark-code.png");
  p = download (code_shot);
  lum = border_luminance (&p, 6);
  g_test_message ("code view border luminance %.3f", lum);
  g_assert_cmpfloat (lum, <, 0.2);
  g_free (p.pixels);

  window_shot = shoot (GTK_WIDGET (window));
  save (window_shot, "editor-dark-window.png");

  /* Live: forced light, the canvas and the code follow at once; back to the
   * desktop's dark. */
  adw_style_manager_set_color_scheme (manager, ADW_COLOR_SCHEME_FORCE_LIGHT);
  iterate (100);
  g_assert_false (napkin_canvas_get_dark (canvas));
  g_assert_cmpstr (napkin_code_view_get_scheme_id (NAPKIN_CODE_VIEW (code)), ==, "Adwaita");
  light_shot = shoot (GTK_WIDGET (canvas));
  p = download (light_shot);
  g_assert_cmpfloat (border_luminance (&p, 6), >, 0.9);
  g_assert_cmpuint (count_near (&p, napkin_render_level_hex (NAPKIN_LEVEL_HBM)), >, 200);
  g_free (p.pixels);
  adw_style_manager_set_color_scheme (manager, ADW_COLOR_SCHEME_DEFAULT);
  iterate (100);
  g_assert_true (napkin_canvas_get_dark (canvas));
  g_assert_cmpstr (napkin_code_view_get_scheme_id (NAPKIN_CODE_VIEW (code)), ==, "Adwaita-dark");

  close_window (window);
}

/* Exports stay on white paper in a dark style. */
static void
test_export_stays_light (void)
{
  g_autofree char *path = example_path ("matmul-nested");
  g_autofree char *png = g_build_filename (tmpdir, "export.png", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, &error);
  g_autoptr(GdkTexture) texture = NULL;
  Pixels p;

  g_assert_no_error (error);
  g_assert_true (adw_style_manager_get_dark (adw_style_manager_get_default ()));
  g_assert_true (napkin_render_export (diagram, png, NAPKIN_EXPORT_PNG, 1, &error));
  g_assert_no_error (error);
  texture = gdk_texture_new_from_filename (png, &error);
  g_assert_no_error (error);
  p = download (texture);
  g_assert_cmpfloat (border_luminance (&p, 4), >, 0.9);
  g_free (p.pixels);
}

/* ---- accessibility ---------------------------------------------------------------------- */

/* A button showing only an icon: a GtkButton in icon mode or holding only an image,
 * a GtkMenuButton with an icon and no label. */
static gboolean
icon_only (GtkWidget *widget)
{
  GtkWidget *child;

  if (GTK_IS_MENU_BUTTON (widget))
    return gtk_menu_button_get_icon_name (GTK_MENU_BUTTON (widget)) != NULL
           && gtk_menu_button_get_label (GTK_MENU_BUTTON (widget)) == NULL;
  if (!GTK_IS_BUTTON (widget))
    return FALSE;
  if (gtk_button_get_icon_name (GTK_BUTTON (widget)) != NULL)
    return TRUE;
  child = gtk_button_get_child (GTK_BUTTON (widget));
  return child != NULL && GTK_IS_IMAGE (child) && gtk_button_get_label (GTK_BUTTON (widget)) == NULL;
}

static gboolean
has_label (GtkWidget *widget)
{
  return gtk_test_accessible_has_property (GTK_ACCESSIBLE (widget), GTK_ACCESSIBLE_PROPERTY_LABEL)
         || gtk_test_accessible_has_relation (GTK_ACCESSIBLE (widget), GTK_ACCESSIBLE_RELATION_LABELLED_BY);
}

/* Walks the tree: the icon-only controls found, and the unlabelled ones' names. A
 * menu button's inner toggle is its own business: the menu button is the control. */
static void
walk (GtkWidget *widget,
      guint     *n_icon_only,
      GString   *unlabelled)
{
  if (icon_only (widget))
    {
      (*n_icon_only)++;
      if (!has_label (widget))
        g_string_append_printf (unlabelled, " %s(%s)", G_OBJECT_TYPE_NAME (widget),
                                GTK_IS_BUTTON (widget) && gtk_button_get_icon_name (GTK_BUTTON (widget))
                                ? gtk_button_get_icon_name (GTK_BUTTON (widget))
                                : GTK_IS_MENU_BUTTON (widget) ? gtk_menu_button_get_icon_name (GTK_MENU_BUTTON (widget))
                                : gtk_widget_get_name (widget));
    }
  if (GTK_IS_MENU_BUTTON (widget) || GTK_IS_WINDOW_CONTROLS (widget))
    return;
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child; child = gtk_widget_get_next_sibling (child))
    walk (child, n_icon_only, unlabelled);
}

static void
test_icon_buttons_labelled (void)
{
  NapkinWindow *window = open_window ("flash-attention");
  g_autoptr(GString) unlabelled = g_string_new (NULL);
  GtkWidget *pages[] = {
    napkin_window_get_analysis_pane (window), napkin_window_get_code_view (window),
    napkin_window_get_run_panel (window),
  };
  guint n_icon_only = 0;

  /* Every page of the side stack, shown once, so that all are built. */
  for (guint i = 0; i < G_N_ELEMENTS (pages); i++)
    if (pages[i] != NULL && GTK_IS_STACK (gtk_widget_get_parent (pages[i])))
      {
        gtk_stack_set_visible_child (GTK_STACK (gtk_widget_get_parent (pages[i])), pages[i]);
        iterate (50);
      }
  walk (GTK_WIDGET (window), &n_icon_only, unlabelled);
  g_test_message ("%u icon-only controls", n_icon_only);
  if (unlabelled->len > 0)
    g_error ("icon-only controls without an accessible label:%s", unlabelled->str);
  /* The header bar's ten, the analysis export, the run history's clear, and the
   * inspector's axis deletes (flash-attention has several). */
  g_assert_cmpuint (n_icon_only, >=, 13);
  close_window (window);
}

static void
test_canvas_description (void)
{
  NapkinWindow *window = open_window ("matmul-nested");
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  g_autofree char *text = napkin_canvas_dup_description (canvas);
  g_autofree char *wrong = NULL;
  g_autofree char *after = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_true (gtk_test_accessible_has_role (GTK_ACCESSIBLE (canvas), GTK_ACCESSIBLE_ROLE_IMG));
  g_assert_cmpstr (text, ==, "Diagram: 1 operation, 3 tensors, 2 regions (shared memory, registers)");
  wrong = gtk_test_accessible_check_property (GTK_ACCESSIBLE (canvas), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, text);
  g_assert_null (wrong);
  g_assert_true (gtk_test_accessible_has_property (GTK_ACCESSIBLE (canvas), GTK_ACCESSIBLE_PROPERTY_LABEL));

  /* Updated on change: one region fewer. */
  g_assert_true (napkin_edit_remove_region (napkin_window_get_history (window), "warp", &error));
  g_assert_no_error (error);
  iterate (20);
  after = napkin_canvas_dup_description (canvas);
  g_assert_cmpstr (after, ==, "Diagram: 1 operation, 3 tensors, 1 region (shared memory)");
  g_clear_pointer (&wrong, g_free);
  wrong = gtk_test_accessible_check_property (GTK_ACCESSIBLE (canvas), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, after);
  g_assert_null (wrong);
  napkin_window_close_without_asking (window);
  iterate (20);
}

int
main (int    argc,
      char **argv)
{
  /* What the test's environment sets (tests/app/meson.build), for direct runs too. */
  g_setenv ("ADW_DEBUG_COLOR_SCHEME", "prefer-dark", FALSE);
  /* GTK's test accessibility backend keeps the properties where the test reads
   * them; with GTK_A11Y=none widgets have no accessible context at all. */
  g_setenv ("GTK_A11Y", "test", TRUE);
  if (!napkin_app_test_init (&argc, &argv, "napkin-style-XXXXXX", &tmpdir))
    return g_test_run ();
  app = napkin_app_test_register (G_APPLICATION_HANDLES_OPEN);

  g_test_add_func ("/style/dark/canvas-and-code", test_dark);
  g_test_add_func ("/style/dark/export-stays-light", test_export_stays_light);
  g_test_add_func ("/a11y/icon-buttons-labelled", test_icon_buttons_labelled);
  g_test_add_func ("/a11y/canvas-description", test_canvas_description);
  return napkin_app_test_run (app, tmpdir);
}
