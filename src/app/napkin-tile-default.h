/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-arch.h"
#include "napkin-diagram.h"
#include "napkin-history.h"

G_BEGIN_DECLS

/* Tiles chosen the way `tune` would choose them (docs/editor.md, "Smart defaults"),
 * for a mark the user has just made parallel or streamed, and the marks a new region
 * starts with. Both search a copy of the diagram that keeps only the regions nested
 * with this one, so that the answer comes in a few milliseconds. */

/* The tile for `axis` of `region` marked `kind` (parallel or stream); when no tiling
 * fits the architecture, a tensor-core sized guess (at most the axis). */
gint64    napkin_tile_default_for_mark (NapkinDiagram  *diagram,
                                        const char     *region,
                                        const char     *axis,
                                        NapkinMarkKind  kind,
                                        NapkinArch     *arch);
/* Marks for a region just drawn around operations: the axes the region's
 * contractions sum over are streamed, the other axes its results carry are cut
 * into parallel groups (axes reduced by a softmax, normalization or reduction stay
 * whole), with tune's tiles and stages. `tune` --tile specs relative to the region
 * ("m=parallel:128", "stages=3"); empty when nothing fits or nothing can be marked. */
GStrv     napkin_tile_default_marks    (NapkinDiagram  *diagram,
                                        const char     *region,
                                        NapkinArch     *arch);

/* Sets those specs on the document's region (each its own edit: group them). */
gboolean  napkin_tile_default_apply    (NapkinHistory      *history,
                                        const char         *region,
                                        const char *const  *specs,
                                        GError            **error);

G_END_DECLS
