/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-backward-dialog"

#include "config.h"

#include <glib/gi18n.h>

#include "napkin-backward-dialog.h"
#include "napkin-grad.h"

struct _NapkinBackwardDialog
{
  GtkWindow    parent_instance;

  GtkBox      *inputs_box;
  GtkDropDown *softmax_choice;
  GtkLabel    *error_label;

  GPtrArray   *names;     /* char *: the input tensors, in the order of the buttons */
  GPtrArray   *buttons;   /* GtkCheckButton * */
};

G_DEFINE_FINAL_TYPE (NapkinBackwardDialog, napkin_backward_dialog, GTK_TYPE_WINDOW)

enum {
  BUILD,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

static void
build_action (GtkWidget  *widget,
              const char *action_name,
              GVariant   *parameter)
{
  NapkinBackwardDialog *self = NAPKIN_BACKWARD_DIALOG (widget);
  g_autoptr(GPtrArray) wrt = g_ptr_array_new ();
  /* the drop-down's rows, in order */
  static const NapkinBackwardChoice choices[] = { NAPKIN_BACKWARD_CHEAPER, NAPKIN_BACKWARD_STORE,
                                                  NAPKIN_BACKWARD_RECOMPUTE };
  guint at = gtk_drop_down_get_selected (self->softmax_choice);

  for (guint i = 0; i < self->buttons->len; i++)
    if (gtk_check_button_get_active (g_ptr_array_index (self->buttons, i)))
      g_ptr_array_add (wrt, g_ptr_array_index (self->names, i));
  if (wrt->len == 0)
    {
      gtk_label_set_text (self->error_label, _("Check at least one input: the backward diagram holds the gradients "
                                               "of the inputs checked."));
      gtk_widget_set_visible (GTK_WIDGET (self->error_label), TRUE);
      return;
    }
  g_ptr_array_add (wrt, NULL);
  g_signal_emit (self, signals[BUILD], 0, (const char * const *) wrt->pdata,
                 choices[at < G_N_ELEMENTS (choices) ? at : 0]);
  gtk_window_destroy (GTK_WINDOW (self));
}

static void
napkin_backward_dialog_dispose (GObject *object)
{
  NapkinBackwardDialog *self = NAPKIN_BACKWARD_DIALOG (object);

  gtk_widget_dispose_template (GTK_WIDGET (self), NAPKIN_TYPE_BACKWARD_DIALOG);
  g_clear_pointer (&self->names, g_ptr_array_unref);
  g_clear_pointer (&self->buttons, g_ptr_array_unref);
  G_OBJECT_CLASS (napkin_backward_dialog_parent_class)->dispose (object);
}

static void
napkin_backward_dialog_class_init (NapkinBackwardDialogClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = napkin_backward_dialog_dispose;

  /* build (const char * const *wrt, NapkinBackwardChoice choice): the inputs checked */
  signals[BUILD] = g_signal_new ("build", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                 G_TYPE_NONE, 2, G_TYPE_POINTER, G_TYPE_INT);

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/napkin/Napkin/ui/napkin-backward-dialog.ui");
  gtk_widget_class_bind_template_child (widget_class, NapkinBackwardDialog, inputs_box);
  gtk_widget_class_bind_template_child (widget_class, NapkinBackwardDialog, softmax_choice);
  gtk_widget_class_bind_template_child (widget_class, NapkinBackwardDialog, error_label);
  gtk_widget_class_install_action (widget_class, "backward.build", NULL, build_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "window.close", NULL);
}

static void
napkin_backward_dialog_init (NapkinBackwardDialog *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  self->names = g_ptr_array_new_with_free_func (g_free);
  self->buttons = g_ptr_array_new ();
}

NapkinBackwardDialog *
napkin_backward_dialog_new (GtkWindow     *parent,
                            NapkinDiagram *forward)
{
  NapkinBackwardDialog *self;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (forward), NULL);

  self = g_object_new (NAPKIN_TYPE_BACKWARD_DIALOG, "transient-for", parent, NULL);
  for (guint v = 0; v < napkin_diagram_n_nodes (forward); v++)
    {
      const NapkinNode *node = napkin_diagram_node (forward, v);
      g_autofree char *why = NULL;
      g_autofree char *widget_name = NULL;
      GtkWidget *button;
      gboolean seen = FALSE;

      if (node->kind != NAPKIN_OP_INPUT || node->tensor == NULL)
        continue;
      for (guint i = 0; i < self->names->len && !seen; i++)
        seen = g_str_equal (g_ptr_array_index (self->names, i), node->tensor);
      if (seen)
        continue;
      button = gtk_check_button_new_with_label (node->tensor);
      widget_name = g_strdup_printf ("gradient-%s", node->tensor);
      gtk_widget_set_name (button, widget_name);
      if (napkin_grad_input_has_gradient (forward, node->tensor, &why))
        gtk_check_button_set_active (GTK_CHECK_BUTTON (button), TRUE);
      else
        {
          gtk_widget_set_sensitive (button, FALSE);
          gtk_widget_set_tooltip_text (button, why);
        }
      gtk_box_append (self->inputs_box, button);
      g_ptr_array_add (self->names, g_strdup (node->tensor));
      g_ptr_array_add (self->buttons, button);
    }
  return self;
}
