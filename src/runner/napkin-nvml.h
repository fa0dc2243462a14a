/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* NVML, opened with dlopen ("libnvidia-ml.so.1") at run time (like the CUDA driver),
 * for the GPU's energy counter. Only what the runner needs. */
typedef struct
{
  void  *handle;
  void  *device;
  char   name[96];
  int  (*Shutdown)                  (void);
  int  (*DeviceGetTotalEnergyConsumption) (void *, unsigned long long *);
} NapkinNvml;

/* Opens NVML and the device with this index; FALSE with the reason when there is no
 * NVML or the GPU has no energy counter (before Volta). */
gboolean napkin_nvml_open       (NapkinNvml          *nvml,
                                 guint                index,
                                 char               **message);
/* The device's energy counter since the driver loaded, in millijoules. */
gboolean napkin_nvml_energy_mj  (NapkinNvml          *nvml,
                                 unsigned long long  *mj);
void     napkin_nvml_close      (NapkinNvml          *nvml);

G_END_DECLS
