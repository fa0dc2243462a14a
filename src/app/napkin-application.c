/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-application"

#include "config.h"

#include <stdio.h>

#include <glib/gi18n.h>

#include "napkin-application.h"
#include "napkin-autosave.h"
#include "napkin-file.h"

struct _NapkinApplication
{
  AdwApplication parent_instance;

  char          *screenshot;
  int            status;

  /* crash recovery (docs/security.md §4) */
  gboolean       recover_all;       /* --recover-all: recover every snapshot without asking */
  gboolean       recovery_done;     /* offered once per process */
  gboolean       no_recovery;       /* --screenshot: draws and quits, asks nothing */
  GQueue         to_ask;            /* NapkinAutosaveEntry, one question at a time */

  /* Quit: every window with unsaved changes asked in turn; nothing closes before
   * all have answered, and Cancel anywhere stops the quit (docs/editor.md). */
  GPtrArray     *quitting;          /* NapkinWindow, those still to ask; NULL when not quitting */
  GPtrArray     *quit_all;          /* every window, closed at the end */
};

G_DEFINE_FINAL_TYPE (NapkinApplication, napkin_application, ADW_TYPE_APPLICATION)

static NapkinWindow *
active_napkin_window (NapkinApplication *self)
{
  GtkWindow *window = gtk_application_get_active_window (GTK_APPLICATION (self));

  return NAPKIN_IS_WINDOW (window) ? NAPKIN_WINDOW (window) : NULL;
}

int
napkin_application_get_status (NapkinApplication *self)
{
  g_return_val_if_fail (NAPKIN_IS_APPLICATION (self), 1);

  return self->status;
}

NapkinWindow *
napkin_application_open_file (NapkinApplication *self,
                              GFile             *file,
                              NapkinWindow      *reuse)
{
  g_autoptr(GError) error = NULL;
  NapkinWindow *window;
  GList *windows;

  g_return_val_if_fail (NAPKIN_IS_APPLICATION (self), NULL);
  g_return_val_if_fail (G_IS_FILE (file), NULL);

  /* A file that is already open comes to the front instead of opening twice. */
  windows = gtk_application_get_windows (GTK_APPLICATION (self));
  for (GList *l = windows; l; l = l->next)
    if (NAPKIN_IS_WINDOW (l->data) && napkin_window_get_file (l->data)
        && g_file_equal (napkin_window_get_file (l->data), file))
      {
        gtk_window_present (l->data);
        return l->data;
      }

  if (reuse != NULL && napkin_window_is_pristine (reuse))
    window = reuse;
  else
    {
      NapkinWindow *errors_to = reuse ? reuse : active_napkin_window (self);
      g_autofree char *path = g_file_get_path (file);
      g_autoptr(NapkinDiagram) probe = NULL;

      /* Check before making a window: a broken file must leave the open
       * documents as they were and say why where the user is looking. */
      probe = path ? napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, &error) : NULL;
      if (probe == NULL && errors_to != NULL)
        {
          g_autofree char *name = g_file_get_parse_name (file);
          g_autofree char *message = g_strdup_printf (_("Could not open “%s”: %s"), name,
                                                      error ? error->message : _("not a local file"));

          napkin_window_show_error (errors_to, message);
          return NULL;
        }
      g_clear_error (&error);
      window = napkin_window_new (GTK_APPLICATION (self));
      if (probe != NULL)
        {
          g_autofree char *uri = g_file_get_uri (file);

          napkin_window_set_document (window, probe, file);
          gtk_recent_manager_add_item (gtk_recent_manager_get_default (), uri);
          gtk_window_present (GTK_WINDOW (window));
          return window;
        }
    }

  if (!napkin_window_load_file (window, file, &error) && napkin_window_get_history (window) == NULL)
    napkin_window_load_default (window);
  gtk_window_present (GTK_WINDOW (window));
  return error == NULL ? window : NULL;
}

static void
screenshot_done_cb (GObject      *object,
                    GAsyncResult *result,
                    gpointer      user_data)
{
  g_autoptr(NapkinApplication) self = user_data;
  g_autoptr(GError) error = NULL;

  if (!napkin_window_screenshot_finish (NAPKIN_WINDOW (object), result, &error))
    {
      g_printerr ("napkin: --screenshot: %s\n", error->message);
      self->status = 1;
    }
  g_application_quit (G_APPLICATION (self));
}

static void
maybe_screenshot (NapkinApplication *self,
                  NapkinWindow      *window)
{
  if (self->screenshot == NULL || window == NULL)
    return;
  napkin_window_screenshot_async (window, self->screenshot, screenshot_done_cb, g_object_ref (self));
  g_clear_pointer (&self->screenshot, g_free);
}

/* ---------------------------------------------------------------- crash recovery */

static void ask_next (NapkinApplication *self);

/* Opens a snapshot's document as modified, in the active window if that one is
 * untouched, else in a new one; this process becomes the snapshot's owner. */
static NapkinWindow *
recover_entry (NapkinApplication          *self,
               const NapkinAutosaveEntry  *entry,
               GError                    **error)
{
  g_autofree char *dir = napkin_autosave_default_dir ();
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GFile) file = NULL;
  g_autoptr(GError) claim_error = NULL;
  NapkinWindow *window = active_napkin_window (self);

  diagram = napkin_autosave_load (dir, entry, error);
  if (diagram == NULL)
    return NULL;
  /* Not fatal: the document is recovered either way; at worst another Napkin
   * started later offers it too. */
  if (!napkin_autosave_claim (dir, entry, &claim_error))
    g_message ("%s", claim_error->message);
  file = entry->path ? g_file_new_for_path (entry->path) : NULL;
  if (window == NULL || !napkin_window_is_pristine (window))
    window = NULL;
  /* The same file already open and unchanged (`napkin FILE` after a crash): the
   * recovered edits go there rather than into a second window on that file. */
  for (GList *l = gtk_application_get_windows (GTK_APPLICATION (self)); l && file; l = l->next)
    if (NAPKIN_IS_WINDOW (l->data) && napkin_window_get_file (l->data)
        && g_file_equal (napkin_window_get_file (l->data), file)
        && !napkin_history_get_modified (napkin_window_get_history (l->data)))
      window = l->data;
  if (window == NULL)
    window = napkin_window_new (GTK_APPLICATION (self));
  napkin_window_recover (window, diagram, file, entry->id);
  gtk_window_present (GTK_WINDOW (window));
  return window;
}

static void
failed_response_cb (AdwMessageDialog  *dialog,
                    const char        *response,
                    NapkinApplication *self)
{
  NapkinAutosaveEntry *entry = g_object_get_data (G_OBJECT (dialog), "napkin-entry");

  if (g_str_equal (response, "discard"))
    {
      g_autofree char *dir = napkin_autosave_default_dir ();
      g_autoptr(GError) error = NULL;

      if (!napkin_autosave_remove (dir, entry->id, &error))
        g_message ("%s", error->message);
    }
  ask_next (self);
}

static const char *
entry_name (const NapkinAutosaveEntry *entry)
{
  return entry->title && *entry->title ? entry->title : _("Untitled Diagram");
}

static void
recovery_response_cb (AdwMessageDialog  *dialog,
                      const char        *response,
                      NapkinApplication *self)
{
  NapkinAutosaveEntry *entry = g_object_get_data (G_OBJECT (dialog), "napkin-entry");
  g_autofree char *dir = napkin_autosave_default_dir ();
  g_autoptr(GError) error = NULL;

  if (g_str_equal (response, "recover"))
    {
      if (recover_entry (self, entry, &error) == NULL)
        {
          GtkWindow *parent = gtk_application_get_active_window (GTK_APPLICATION (self));
          AdwMessageDialog *failed;

          failed = ADW_MESSAGE_DIALOG (adw_message_dialog_new (parent, _("Could Not Recover"), NULL));
          adw_message_dialog_format_body (failed, _("The unsaved changes to “%s” cannot be read: %s"),
                                          entry_name (entry), error->message);
          adw_message_dialog_add_responses (failed, "keep", _("_Keep for Later"), "discard", _("_Discard"), NULL);
          adw_message_dialog_set_response_appearance (failed, "discard", ADW_RESPONSE_DESTRUCTIVE);
          adw_message_dialog_set_close_response (failed, "keep");
          g_object_set_data_full (G_OBJECT (failed), "napkin-entry",
                                  g_object_steal_data (G_OBJECT (dialog), "napkin-entry"),
                                  (GDestroyNotify) napkin_autosave_entry_free);
          g_signal_connect_object (failed, "response", G_CALLBACK (failed_response_cb), self, 0);
          gtk_window_present (GTK_WINDOW (failed));
          return;
        }
    }
  else if (g_str_equal (response, "discard"))
    {
      if (!napkin_autosave_remove (dir, entry->id, &error))
        g_message ("%s", error->message);
    }
  /* "later": the snapshot stays and is offered at the next start. */
  ask_next (self);
}

static void
ask_next (NapkinApplication *self)
{
  g_autoptr(NapkinAutosaveEntry) entry = g_queue_pop_head (&self->to_ask);
  g_autoptr(GDateTime) when = NULL;
  g_autofree char *time = NULL;
  AdwMessageDialog *dialog;
  GtkWindow *parent;

  if (entry == NULL)
    return;
  when = g_date_time_new_from_unix_local (entry->time);
  time = when ? g_date_time_format (when, "%x %X") : g_strdup ("?");
  parent = gtk_application_get_active_window (GTK_APPLICATION (self));
  dialog = ADW_MESSAGE_DIALOG (adw_message_dialog_new (parent, _("Recover Unsaved Changes?"), NULL));
  if (entry->path != NULL)
    adw_message_dialog_format_body (dialog, _("Napkin stopped while “%s” (%s) had unsaved changes. "
                                              "They were autosaved at %s."),
                                    entry_name (entry), entry->path, time);
  else
    adw_message_dialog_format_body (dialog, _("Napkin stopped while “%s”, never saved, had changes. "
                                              "They were autosaved at %s."),
                                    entry_name (entry), time);
  adw_message_dialog_add_responses (dialog, "later", _("_Not Now"), "discard", _("_Discard"),
                                    "recover", _("_Recover"), NULL);
  adw_message_dialog_set_response_appearance (dialog, "discard", ADW_RESPONSE_DESTRUCTIVE);
  adw_message_dialog_set_response_appearance (dialog, "recover", ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (dialog, "recover");
  adw_message_dialog_set_close_response (dialog, "later");
  g_object_set_data_full (G_OBJECT (dialog), "napkin-entry", g_steal_pointer (&entry),
                          (GDestroyNotify) napkin_autosave_entry_free);
  g_signal_connect_object (dialog, "response", G_CALLBACK (recovery_response_cb), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

guint
napkin_application_offer_recovery (NapkinApplication *self)
{
  g_autofree char *dir = NULL;
  g_autoptr(GPtrArray) entries = NULL;
  guint recovered = 0;

  g_return_val_if_fail (NAPKIN_IS_APPLICATION (self), 0);

  if (self->recovery_done || self->no_recovery)
    return 0;
  self->recovery_done = TRUE;
  dir = napkin_autosave_default_dir ();
  entries = napkin_autosave_list_recoverable (dir);
  for (guint i = 0; i < entries->len; i++)
    {
      if (self->recover_all)
        {
          g_autoptr(GError) error = NULL;

          if (recover_entry (self, entries->pdata[i], &error) != NULL)
            recovered++;
          else
            g_printerr ("napkin: --recover-all: %s\n", error->message);
        }
      else
        g_queue_push_tail (&self->to_ask, g_steal_pointer (&entries->pdata[i]));
    }
  ask_next (self);
  return recovered;
}

static void
napkin_application_activate (GApplication *app)
{
  NapkinApplication *self = NAPKIN_APPLICATION (app);
  NapkinWindow *window;

  /* --recover-all: the recovered documents instead of the example. */
  if (self->recover_all && napkin_application_offer_recovery (self) > 0)
    return;
  /* No file: the bundled FlashAttention example. */
  window = napkin_window_new (GTK_APPLICATION (app));
  napkin_window_load_default (window);
  gtk_window_present (GTK_WINDOW (window));
  maybe_screenshot (self, window);
  napkin_application_offer_recovery (self);
}

static void
napkin_application_open (GApplication  *app,
                         GFile        **files,
                         int            n_files,
                         const char    *hint)
{
  NapkinApplication *self = NAPKIN_APPLICATION (app);
  NapkinWindow *first = NULL;

  for (int i = 0; i < n_files; i++)
    {
      NapkinWindow *window = napkin_application_open_file (self, files[i], NULL);

      if (window == NULL && active_napkin_window (self) == NULL)
        {
          /* Nothing else is open: show the error over the default example. */
          g_autoptr(GError) error = NULL;

          window = napkin_window_new (GTK_APPLICATION (app));
          napkin_window_load_default (window);
          napkin_window_load_file (window, files[i], &error);
          gtk_window_present (GTK_WINDOW (window));
        }
      if (first == NULL)
        first = window;
    }
  maybe_screenshot (self, first ? first : active_napkin_window (self));
  napkin_application_offer_recovery (self);
}

static int
napkin_application_handle_local_options (GApplication *app,
                                         GVariantDict *options)
{
  NapkinApplication *self = NAPKIN_APPLICATION (app);
  const char *screenshot = NULL;

  if (g_variant_dict_contains (options, "version"))
    {
      printf ("napkin %s\n", PACKAGE_VERSION);
      return 0;
    }
  if (g_variant_dict_lookup (options, "screenshot", "^&ay", &screenshot))
    {
      /* A screenshot run is its own process: never hand over to a running one. */
      self->screenshot = g_strdup (screenshot);
      self->no_recovery = TRUE;
      g_application_set_flags (app, g_application_get_flags (app) | G_APPLICATION_NON_UNIQUE);
    }
  if (g_variant_dict_contains (options, "recover-all"))
    {
      /* Its own process too: a running Napkin would only raise a window. */
      self->recover_all = TRUE;
      g_application_set_flags (app, g_application_get_flags (app) | G_APPLICATION_NON_UNIQUE);
    }
  return -1;
}

static void quit_ask_next (NapkinApplication *self);

static void
quit_answer_cb (GObject      *object,
                GAsyncResult *result,
                gpointer      user_data)
{
  g_autoptr(NapkinApplication) self = user_data;
  NapkinWindowAnswer value = napkin_window_ask_save_finish (NAPKIN_WINDOW (object), result, NULL);

  if (self->quitting == NULL)
    return;
  if (value == NAPKIN_WINDOW_CANCELLED)
    {
      /* keep working: nothing was closed */
      g_clear_pointer (&self->quitting, g_ptr_array_unref);
      g_clear_pointer (&self->quit_all, g_ptr_array_unref);
      return;
    }
  quit_ask_next (self);
}

static void
quit_ask_next (NapkinApplication *self)
{
  g_autoptr(GPtrArray) all = NULL;

  while (self->quitting->len > 0)
    {
      g_autoptr(NapkinWindow) window = g_ptr_array_steal_index (self->quitting, 0);
      NapkinHistory *history = napkin_window_get_history (window);

      if (history != NULL && napkin_history_get_modified (history))
        {
          napkin_window_ask_save_async (window, quit_answer_cb, g_object_ref (self));
          return;
        }
    }
  /* every question answered: now close them all */
  g_clear_pointer (&self->quitting, g_ptr_array_unref);
  all = g_steal_pointer (&self->quit_all);
  for (guint i = 0; i < all->len; i++)
    {
      GtkWindow *window = g_ptr_array_index (all, i);

      if (NAPKIN_IS_WINDOW (window))
        napkin_window_close_without_asking (NAPKIN_WINDOW (window));
      else
        gtk_window_close (window);
    }
}

static void
quit_action (GSimpleAction *action,
             GVariant      *parameter,
             gpointer       user_data)
{
  NapkinApplication *self = user_data;

  if (self->quitting != NULL)
    return;   /* a question is on screen already */
  self->quitting = g_ptr_array_new_with_free_func (g_object_unref);
  self->quit_all = g_ptr_array_new_with_free_func (g_object_unref);
  for (GList *l = gtk_application_get_windows (GTK_APPLICATION (self)); l; l = l->next)
    {
      g_ptr_array_add (self->quit_all, g_object_ref (l->data));
      if (NAPKIN_IS_WINDOW (l->data))
        g_ptr_array_add (self->quitting, g_object_ref (l->data));
    }
  quit_ask_next (self);
}

gboolean
napkin_application_is_quitting (NapkinApplication *self)
{
  g_return_val_if_fail (NAPKIN_IS_APPLICATION (self), FALSE);

  return self->quitting != NULL;
}

/* Another window, as at start (the bundled example); Ctrl+N is the blank diagram. */
static void
new_window_action (GSimpleAction *action,
                   GVariant      *parameter,
                   gpointer       user_data)
{
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (user_data));

  napkin_window_load_default (window);
  gtk_window_present (GTK_WINDOW (window));
}

static void
about_action (GSimpleAction *action,
              GVariant      *parameter,
              gpointer       user_data)
{
  GtkApplication *app = user_data;
  const char *developers[] = { "The Napkin authors", NULL };
  GtkWidget *about;

  about = adw_about_window_new ();
  gtk_window_set_transient_for (GTK_WINDOW (about), gtk_application_get_active_window (app));
  adw_about_window_set_application_name (ADW_ABOUT_WINDOW (about), _("Napkin"));
  adw_about_window_set_application_icon (ADW_ABOUT_WINDOW (about), APP_ID);
  adw_about_window_set_version (ADW_ABOUT_WINDOW (about), PACKAGE_VERSION);
  adw_about_window_set_comments (ADW_ABOUT_WINDOW (about),
                                 _("Draw a GPU algorithm as a string diagram, relabel it onto memory levels, "
                                   "model it and generate CUDA. After “FlashAttention on a Napkin” "
                                   "(Abbott and Zardini, 2025)."));
  adw_about_window_set_license_type (ADW_ABOUT_WINDOW (about), GTK_LICENSE_GPL_3_0);
  adw_about_window_set_developers (ADW_ABOUT_WINDOW (about), developers);
  adw_about_window_set_translator_credits (ADW_ABOUT_WINDOW (about), _("translator-credits"));
  gtk_window_present (GTK_WINDOW (about));
}

static const GActionEntry app_actions[] = {
  { "quit", quit_action },
  { "new-window", new_window_action },
  { "about", about_action },
};

static void
napkin_application_startup (GApplication *app)
{
  static const char *quit_accels[] = { "<Control>q", NULL };
  static const char *new_window_accels[] = { "<Control><Shift>n", NULL };
  g_autoptr(GtkCssProvider) css = gtk_css_provider_new ();
  const char *theme = g_getenv ("GTK_THEME");

  G_APPLICATION_CLASS (napkin_application_parent_class)->startup (app);

  g_action_map_add_action_entries (G_ACTION_MAP (app), app_actions, G_N_ELEMENTS (app_actions), app);
  gtk_application_set_accels_for_action (GTK_APPLICATION (app), "app.quit", quit_accels);
  gtk_application_set_accels_for_action (GTK_APPLICATION (app), "app.new-window", new_window_accels);

  /* GTK_THEME=Adwaita:dark makes GTK's widgets dark but not libadwaita's style manager,
   * which the canvas, the code view and the plots follow: it is told (docs/editor.md,
   * "Dark style"), and so is a :light theme */
  if (theme != NULL && g_str_has_suffix (theme, ":dark"))
    adw_style_manager_set_color_scheme (adw_style_manager_get_default (), ADW_COLOR_SCHEME_FORCE_DARK);
  else if (theme != NULL && g_str_has_suffix (theme, ":light"))
    adw_style_manager_set_color_scheme (adw_style_manager_get_default (), ADW_COLOR_SCHEME_FORCE_LIGHT);
  gtk_css_provider_load_from_resource (css, "/io/github/napkin/Napkin/ui/style.css");
  gtk_style_context_add_provider_for_display (gdk_display_get_default (), GTK_STYLE_PROVIDER (css),
                                              GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
}

static void
napkin_application_finalize (GObject *object)
{
  NapkinApplication *self = NAPKIN_APPLICATION (object);

  g_clear_pointer (&self->screenshot, g_free);
  g_clear_pointer (&self->quitting, g_ptr_array_unref);
  g_clear_pointer (&self->quit_all, g_ptr_array_unref);
  g_queue_clear_full (&self->to_ask, (GDestroyNotify) napkin_autosave_entry_free);
  G_OBJECT_CLASS (napkin_application_parent_class)->finalize (object);
}

static void
napkin_application_class_init (NapkinApplicationClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GApplicationClass *app_class = G_APPLICATION_CLASS (klass);

  object_class->finalize = napkin_application_finalize;
  app_class->activate = napkin_application_activate;
  app_class->open = napkin_application_open;
  app_class->startup = napkin_application_startup;
  app_class->handle_local_options = napkin_application_handle_local_options;
}

static void
napkin_application_init (NapkinApplication *self)
{
  static const GOptionEntry entries[] = {
    { "screenshot", 0, 0, G_OPTION_ARG_FILENAME, NULL,
      N_("Draw the window once, save it as a PNG and quit"), N_("FILE.png") },
    { "version", 0, 0, G_OPTION_ARG_NONE, NULL, N_("Print the version and quit"), NULL },
    { "recover-all", 0, 0, G_OPTION_ARG_NONE, NULL,
      N_("Recover every document autosaved before a crash, without asking"), NULL },
    { NULL }
  };

  g_application_add_main_option_entries (G_APPLICATION (self), entries);
  g_application_set_option_context_parameter_string (G_APPLICATION (self), _("[FILE…]"));
}

NapkinApplication *
napkin_application_new (void)
{
  return g_object_new (NAPKIN_TYPE_APPLICATION,
                       "application-id", APP_ID,
                       "flags", G_APPLICATION_HANDLES_OPEN,
                       "resource-base-path", "/io/github/napkin/Napkin",
                       NULL);
}
