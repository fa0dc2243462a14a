/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-runner"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <string.h>

#include "napkin-shard-slice.h"

gboolean
napkin_shard_slice_init (NapkinShardSlice  *slice,
                         const gint64      *dims,
                         guint              rank,
                         guint              dim,
                         guint              parts,
                         char             **message)
{
  g_return_val_if_fail (slice != NULL && message != NULL, FALSE);

  *message = NULL;
  if (dim >= rank || parts == 0)
    {
      *message = g_strdup_printf (_("split dimension %u of a rank-%u tensor into %u parts"), dim, rank, parts);
      return FALSE;
    }
  if (dims[dim] % parts != 0)
    {
      *message = g_strdup_printf (_("dimension %u (size %lld) does not split evenly across %u GPUs"),
                                  dim, (long long) dims[dim], parts);
      return FALSE;
    }
  slice->outer = 1;
  slice->inner = 1;
  for (guint i = 0; i < dim; i++)
    slice->outer *= dims[i];
  for (guint i = dim + 1; i < rank; i++)
    slice->inner *= dims[i];
  slice->total = dims[dim];
  slice->part = dims[dim] / parts;
  return TRUE;
}

gint64
napkin_shard_slice_elements (const NapkinShardSlice *slice)
{
  return slice->outer * slice->part * slice->inner;
}

gint64
napkin_shard_slice_index (const NapkinShardSlice *slice,
                          guint                   piece,
                          gint64                  e)
{
  gint64 row = slice->part * slice->inner;
  gint64 o = e / row, r = e % row;

  return o * slice->total * slice->inner + (gint64) piece * slice->part * slice->inner + r;
}

/* Runs of part·inner elements are contiguous on both sides: one memcpy per outer index. */
void
napkin_shard_slice_extract (const NapkinShardSlice *slice,
                            guint                   piece,
                            const void             *whole,
                            void                   *out,
                            gsize                   elem_bytes)
{
  gsize run = (gsize) (slice->part * slice->inner) * elem_bytes;

  for (gint64 o = 0; o < slice->outer; o++)
    memcpy ((char *) out + o * run,
            (const char *) whole + (gsize) napkin_shard_slice_index (slice, piece, o * slice->part * slice->inner) * elem_bytes,
            run);
}

void
napkin_shard_slice_place (const NapkinShardSlice *slice,
                          guint                   piece,
                          const void             *in,
                          void                   *whole,
                          gsize                   elem_bytes)
{
  gsize run = (gsize) (slice->part * slice->inner) * elem_bytes;

  for (gint64 o = 0; o < slice->outer; o++)
    memcpy ((char *) whole + (gsize) napkin_shard_slice_index (slice, piece, o * slice->part * slice->inner) * elem_bytes,
            (const char *) in + o * run, run);
}

gboolean
napkin_shard_all_to_all_init (NapkinShardAllToAll *a2a,
                              const gint64        *local_dims,
                              guint                rank,
                              guint                from,
                              guint                to,
                              guint                parts,
                              char               **message)
{
  gint64 after[16];

  g_return_val_if_fail (a2a != NULL && message != NULL, FALSE);

  *message = NULL;
  if (rank > G_N_ELEMENTS (after) || from >= rank || to >= rank || from == to)
    {
      *message = g_strdup_printf (_("all-to-all from dimension %u to dimension %u of a rank-%u tensor"), from, to, rank);
      return FALSE;
    }
  if (!napkin_shard_slice_init (&a2a->pack, local_dims, rank, to, parts, message))
    return FALSE;
  memcpy (after, local_dims, rank * sizeof (gint64));
  after[from] = local_dims[from] * parts;
  after[to] = local_dims[to] / parts;
  if (!napkin_shard_slice_init (&a2a->unpack, after, rank, from, parts, message))
    return FALSE;
  a2a->chunk = napkin_shard_slice_elements (&a2a->pack);
  g_assert (a2a->chunk == napkin_shard_slice_elements (&a2a->unpack));
  return TRUE;
}

guint
napkin_shard_slice_unit (const NapkinShardSlice *slice,
                         gsize                   elem_bytes)
{
  gint64 bytes = slice->inner * (gint64) elem_bytes;

  return bytes % 16 == 0 ? 16 : bytes % 4 == 0 ? 4 : bytes % 2 == 0 ? 2 : 1;
}

/* napkin_shard_slice_index on the device; extract reads whole → piece, place the reverse. */
static const char cuda_source[] =
  "#define NAPKIN_SLICE_KERNELS(N, T)\\\n"
  "extern \"C\" __global__ void napkin_slice_extract_u##N (T *dst, const T *src, long outer, long total, long part,\\\n"
  "                                                    long inner, int piece)\\\n"
  "{\\\n"
  "  const long n = outer * part * inner, row = part * inner;\\\n"
  "  for (long e = blockIdx.x * (long) blockDim.x + threadIdx.x; e < n; e += (long) gridDim.x * blockDim.x) {\\\n"
  "    const long o = e / row, r = e % row;\\\n"
  "    dst[e] = src[o * total * inner + (long) piece * row + r];\\\n"
  "  }\\\n"
  "}\\\n"
  "extern \"C\" __global__ void napkin_slice_place_u##N (T *dst, const T *src, long outer, long total, long part,\\\n"
  "                                                  long inner, int piece)\\\n"
  "{\\\n"
  "  const long n = outer * part * inner, row = part * inner;\\\n"
  "  for (long e = blockIdx.x * (long) blockDim.x + threadIdx.x; e < n; e += (long) gridDim.x * blockDim.x) {\\\n"
  "    const long o = e / row, r = e % row;\\\n"
  "    dst[o * total * inner + (long) piece * row + r] = src[e];\\\n"
  "  }\\\n"
  "}\n"
  "NAPKIN_SLICE_KERNELS (1, unsigned char)\n"
  "NAPKIN_SLICE_KERNELS (2, unsigned short)\n"
  "NAPKIN_SLICE_KERNELS (4, unsigned int)\n"
  "NAPKIN_SLICE_KERNELS (16, uint4)\n";

const char *
napkin_shard_slice_cuda_source (void)
{
  return cuda_source;
}
