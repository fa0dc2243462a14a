/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-arch-editor"

#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>

#include "napkin-arch-editor.h"

typedef enum
{
  FIGURE_DOUBLE,
  FIGURE_UINT,
} FigureType;

/* One editable figure: where it lives in NapkinArch, the unit it is shown in
 * (value shown = stored / scale), and the path of its source in the JSON. */
typedef struct
{
  const char *path;
  const char *label;
  const char *unit;
  FigureType  type;
  gsize       offset;
  double      scale;
  double      max;
  guint       digits;
  const char *source_path;
} Figure;

#define OFF(field) G_STRUCT_OFFSET (NapkinArch, field)

static const Figure figures[] = {
  { "sms", N_("Streaming multiprocessors"), "", FIGURE_UINT, OFF (sms), 1, 1024, 0, "sms" },
  { "clock", N_("Clock"), "GHz", FIGURE_DOUBLE, OFF (clock_hz), 1e9, 10, 3, "clock_mhz" },
  { "tensor_clock", N_("Tensor-core clock"), "GHz", FIGURE_DOUBLE, OFF (tensor_clock_hz), 1e9, 10, 3,
    "tensor_clock_mhz" },
  { "levels.hbm.bandwidth", N_("Device-memory bandwidth"), "TB/s", FIGURE_DOUBLE,
    OFF (levels[NAPKIN_LEVEL_HBM].bandwidth), 1e12, 1000, 3, "levels.hbm.bandwidth_bytes_per_s" },
  { "levels.l2.bandwidth", N_("L2 bandwidth"), "TB/s", FIGURE_DOUBLE, OFF (levels[NAPKIN_LEVEL_L2].bandwidth),
    1e12, 1000, 3, "levels.l2.bandwidth_bytes_per_clock" },
  { "levels.smem.bandwidth", N_("Shared-memory bandwidth"), "TB/s", FIGURE_DOUBLE,
    OFF (levels[NAPKIN_LEVEL_SMEM].bandwidth), 1e12, 10000, 3, "levels.smem.bandwidth_bytes_per_clock" },
  { "levels.l2.capacity", N_("L2 capacity"), "MiB", FIGURE_DOUBLE, OFF (levels[NAPKIN_LEVEL_L2].capacity_bytes),
    1048576, 4096, 1, "levels.l2.capacity_bytes" },
  { "levels.smem.capacity", N_("Shared memory per SM"), "KiB", FIGURE_DOUBLE,
    OFF (levels[NAPKIN_LEVEL_SMEM].capacity_bytes), 1024, 4096, 0, "levels.smem.capacity_bytes" },
  { "smem_max_per_block", N_("Shared memory per block"), "KiB", FIGURE_DOUBLE, OFF (smem_max_per_block), 1024,
    4096, 0, "levels.smem.max_per_block_bytes" },
  { "registers_per_sm", N_("Registers per SM"), "", FIGURE_UINT, OFF (registers_per_sm), 1, 1 << 22, 0,
    "registers_per_sm" },
  { "max_warps_per_sm", N_("Warps per SM"), "", FIGURE_UINT, OFF (max_warps_per_sm), 1, 1024, 0,
    "max_threads_per_sm" },
  { "tensor.fp16", N_("Tensor cores, fp16"), N_("FLOP/SM/clock"), FIGURE_DOUBLE,
    OFF (tensor_per_sm_clock[NAPKIN_TENSOR_FP16]), 1, 1 << 20, 0, "tensor.fp16" },
  { "tensor.bf16", N_("Tensor cores, bf16"), N_("FLOP/SM/clock"), FIGURE_DOUBLE,
    OFF (tensor_per_sm_clock[NAPKIN_TENSOR_BF16]), 1, 1 << 20, 0, "tensor.bf16" },
  { "tensor.tf32", N_("Tensor cores, tf32"), N_("FLOP/SM/clock"), FIGURE_DOUBLE,
    OFF (tensor_per_sm_clock[NAPKIN_TENSOR_TF32]), 1, 1 << 20, 0, "tensor.tf32" },
  { "tensor.fp8", N_("Tensor cores, fp8"), N_("FLOP/SM/clock"), FIGURE_DOUBLE,
    OFF (tensor_per_sm_clock[NAPKIN_TENSOR_FP8]), 1, 1 << 20, 0, "tensor.fp8" },
  { "tensor.int8", N_("Tensor cores, int8"), N_("OP/SM/clock"), FIGURE_DOUBLE,
    OFF (tensor_per_sm_clock[NAPKIN_TENSOR_INT8]), 1, 1 << 20, 0, "tensor.int8" },
  { "cuda.fp32", N_("CUDA cores, fp32"), N_("FLOP/SM/clock"), FIGURE_DOUBLE, OFF (cuda_fp32_per_sm_clock), 1,
    1 << 16, 0, "cuda.fp32" },
  { "cuda.fp16", N_("CUDA cores, fp16"), N_("FLOP/SM/clock"), FIGURE_DOUBLE, OFF (cuda_fp16_per_sm_clock), 1,
    1 << 16, 0, "cuda.fp16" },
  { "sfu", N_("Special functions"), N_("op/SM/clock"), FIGURE_DOUBLE, OFF (sfu_per_sm_clock), 1, 1 << 12, 0,
    "sfu" },
  { "launch_overhead", N_("Launch overhead"), "µs", FIGURE_DOUBLE, OFF (launch_overhead_s), 1e-6, 1000, 2,
    "launch_overhead_s" },
};

struct _NapkinArchEditor
{
  GtkWindow       parent_instance;

  GtkLabel       *base_label;
  GtkEntry       *name_entry;
  GtkLabel       *error_label;
  GtkGrid        *grid;

  NapkinArch     *base;
  GtkSpinButton  *spins[G_N_ELEMENTS (figures)];
};

G_DEFINE_FINAL_TYPE (NapkinArchEditor, napkin_arch_editor, GTK_TYPE_WINDOW)

enum {
  APPLIED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

static double
figure_get (const NapkinArch *arch,
            const Figure     *f)
{
  const guint8 *p = (const guint8 *) arch + f->offset;

  return f->type == FIGURE_UINT ? (double) *(const guint *) p : *(const double *) p;
}

static void
figure_set (NapkinArch   *arch,
            const Figure *f,
            double        value)
{
  guint8 *p = (guint8 *) arch + f->offset;

  if (f->type == FIGURE_UINT)
    *(guint *) p = (guint) llround (value);
  else
    *(double *) p = value;
}

/* The base profile's id without an earlier what-if suffix. */
static char *
what_if_id (const NapkinArch *base)
{
  const char *id = base->id;

  if (g_str_has_suffix (id, "-what-if"))
    return g_strdup (id);
  return g_strdup_printf ("%s-what-if", id);
}

NapkinArch *
napkin_arch_editor_apply (NapkinArchEditor  *self,
                          GError           **error)
{
  g_autofree char *id = NULL;
  g_autoptr(NapkinArch) arch = NULL;
  const char *name;

  g_return_val_if_fail (NAPKIN_IS_ARCH_EDITOR (self), NULL);

  id = what_if_id (self->base);
  name = gtk_editable_get_text (GTK_EDITABLE (self->name_entry));
  arch = napkin_arch_copy (self->base, id, *name ? name : NULL);
  for (guint i = 0; i < G_N_ELEMENTS (figures); i++)
    {
      const Figure *f = &figures[i];
      double shown = gtk_spin_button_get_value (self->spins[i]);
      double old = figure_get (self->base, f) / f->scale;

      if (fabs (shown - old) <= 1e-9 * MAX (1.0, fabs (old)))
        continue;   /* unchanged: keeps its exact value and its source */
      figure_set (arch, f, shown * f->scale);
      {
        g_autofree char *source = g_strdup_printf ("what-if: edited in Napkin (%s had %g %s)", self->base->id, old,
                                                   f->unit);

        napkin_arch_set_source (arch, f->source_path, source);
      }
    }
  /* a thread limit follows the warp limit, the register file the registers */
  arch->max_threads_per_sm = arch->max_warps_per_sm * 32;
  arch->levels[NAPKIN_LEVEL_REGISTERS].capacity_bytes = arch->registers_per_sm * 4.0;
  if (!napkin_arch_check (arch, error))
    return NULL;
  /* kept beside calibrated profiles: later sessions and napkin-cli --arch find it */
  {
    g_autofree char *dir = g_build_filename (g_get_user_data_dir (), "napkin", "archs", NULL);
    g_autofree char *file = g_strconcat (id, ".json", NULL);
    g_autofree char *path = g_build_filename (dir, file, NULL);

    if (g_mkdir_with_parents (dir, 0755) != 0)
      {
        g_set_error (error, NAPKIN_ARCH_ERROR, NAPKIN_ARCH_ERROR_IO, _("%s: cannot create the folder: %s"), dir,
                     g_strerror (errno));
        return NULL;
      }
    if (!napkin_arch_save (arch, path, error))
      return NULL;
    g_free (arch->path);
    arch->path = g_steal_pointer (&path);
  }
  napkin_arch_registry_add (napkin_arch_registry_get_default (), arch);
  g_signal_emit (self, signals[APPLIED], 0, arch);
  return arch;   /* the registry holds it */
}

static void
apply_action (GtkWidget  *widget,
              const char *action_name,
              GVariant   *parameter)
{
  NapkinArchEditor *self = NAPKIN_ARCH_EDITOR (widget);
  g_autoptr(GError) error = NULL;

  if (napkin_arch_editor_apply (self, &error) == NULL)
    {
      gtk_label_set_text (self->error_label, error->message);
      gtk_widget_set_visible (GTK_WIDGET (self->error_label), TRUE);
      return;
    }
  gtk_window_destroy (GTK_WINDOW (self));
}

GtkSpinButton *
napkin_arch_editor_get_field (NapkinArchEditor *self,
                              const char       *path)
{
  g_return_val_if_fail (NAPKIN_IS_ARCH_EDITOR (self), NULL);

  for (guint i = 0; i < G_N_ELEMENTS (figures); i++)
    if (g_str_equal (figures[i].path, path))
      return self->spins[i];
  return NULL;
}

static void
napkin_arch_editor_dispose (GObject *object)
{
  NapkinArchEditor *self = NAPKIN_ARCH_EDITOR (object);

  gtk_widget_dispose_template (GTK_WIDGET (self), NAPKIN_TYPE_ARCH_EDITOR);
  g_clear_pointer (&self->base, napkin_arch_unref);
  G_OBJECT_CLASS (napkin_arch_editor_parent_class)->dispose (object);
}

static void
napkin_arch_editor_class_init (NapkinArchEditorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = napkin_arch_editor_dispose;

  /* applied (NapkinArch *arch): the new profile, owned by the default registry */
  signals[APPLIED] = g_signal_new ("applied", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                   G_TYPE_NONE, 1, G_TYPE_POINTER);

  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/napkin/Napkin/ui/napkin-arch-editor.ui");
  gtk_widget_class_bind_template_child (widget_class, NapkinArchEditor, base_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinArchEditor, name_entry);
  gtk_widget_class_bind_template_child (widget_class, NapkinArchEditor, error_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinArchEditor, grid);
  gtk_widget_class_install_action (widget_class, "editor.apply", NULL, apply_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "window.close", NULL);
}

static void
napkin_arch_editor_init (NapkinArchEditor *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
}

NapkinArchEditor *
napkin_arch_editor_new (GtkWindow  *parent,
                        NapkinArch *base)
{
  NapkinArchEditor *self;
  g_autofree char *intro = NULL;
  g_autofree char *name = NULL;

  g_return_val_if_fail (base != NULL, NULL);

  self = g_object_new (NAPKIN_TYPE_ARCH_EDITOR, "transient-for", parent, NULL);
  self->base = napkin_arch_ref (base);
  intro = g_strdup_printf (_("A copy of %s whose figures you can change. The analysis and the plots follow "
                             "when you apply it; changed figures are marked as what-if in the profile, "
                             "which is saved for napkin-cli and later sessions."),
                           base->name ? base->name : base->id);
  gtk_label_set_text (self->base_label, intro);
  name = g_str_has_suffix (base->id, "-what-if") ? g_strdup (base->name)
         : g_strdup_printf (_("%s (what-if)"), base->name ? base->name : base->id);
  gtk_editable_set_text (GTK_EDITABLE (self->name_entry), name);

  for (guint i = 0; i < G_N_ELEMENTS (figures); i++)
    {
      const Figure *f = &figures[i];
      GtkWidget *label = gtk_label_new (_(f->label));
      GtkWidget *unit = gtk_label_new (*f->unit ? _(f->unit) : "");
      GtkAdjustment *adj = gtk_adjustment_new (figure_get (base, f) / f->scale, 0, f->max,
                                               pow (10, -(double) f->digits), 1, 0);
      GtkWidget *spin = gtk_spin_button_new (adj, 1, f->digits);

      gtk_label_set_xalign (GTK_LABEL (label), 0);
      gtk_widget_set_hexpand (label, TRUE);
      gtk_label_set_xalign (GTK_LABEL (unit), 0);
      gtk_widget_add_css_class (unit, "dim-label");
      gtk_widget_set_name (spin, f->path);
      gtk_spin_button_set_numeric (GTK_SPIN_BUTTON (spin), TRUE);
      gtk_widget_set_tooltip_text (spin, napkin_arch_get_source (base, f->source_path));
      gtk_grid_attach (self->grid, label, 0, i, 1, 1);
      gtk_grid_attach (self->grid, spin, 1, i, 1, 1);
      gtk_grid_attach (self->grid, unit, 2, i, 1, 1);
      self->spins[i] = GTK_SPIN_BUTTON (spin);
    }
  return self;
}
