/* Hopper (sm_90a) tile primitives (docs/plan.md, "GEMM tile primitives"): mbarriers,
 * TMA tensor copies of rank 2 and 3 into 128-byte swizzled shared memory and back,
 * wgmma shared-memory descriptors, and the fences between them. Printed before every
 * kernel that uses them; the guard keeps one copy per module. */
#ifndef NAPKIN_TILE_SM90
#define NAPKIN_TILE_SM90

/* wgmma shared-memory matrix descriptor, 128-byte swizzle: start address, leading and
 * stride byte offsets (K-major: lbo unused, sbo between 8-row groups; MN-major: lbo
 * between 64-element column blocks, sbo between 8-row groups along K). */
__device__ __forceinline__ unsigned long long
napkin_sm90_desc (unsigned addr, unsigned lbo, unsigned sbo)
{
  return (unsigned long long) ((addr & 0x3FFFF) >> 4) | ((unsigned long long) ((lbo & 0x3FFFF) >> 4) << 16)
         | ((unsigned long long) ((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void
napkin_sm90_bar_init (unsigned bar, unsigned count)
{
  asm volatile ("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r" (bar), "r" (count) : "memory");
}

__device__ __forceinline__ void
napkin_sm90_bar_wait (unsigned bar, unsigned parity)
{
  unsigned done = 0;

  while (!done)
    asm volatile ("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                  : "=r" (done) : "r" (bar), "r" (parity) : "memory");
}

__device__ __forceinline__ void
napkin_sm90_bar_arrive (unsigned bar)
{
  asm volatile ("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r" (bar) : "memory");
}

/* Arrives and announces the bytes the stage's copies will bring. A box that runs past
 * the tensor's edge still delivers all its bytes (the outside as zeros), so the count
 * is always the full boxes. */
__device__ __forceinline__ void
napkin_sm90_bar_expect (unsigned bar, unsigned bytes)
{
  asm volatile ("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r" (bar), "r" (bytes) : "memory");
}

__device__ __forceinline__ void
napkin_sm90_tma_load (unsigned dst, const NapkinTensorMap *map, int c0, int c1, unsigned bar)
{
  asm volatile ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                :: "r" (dst), "l" (map), "r" (c0), "r" (c1), "r" (bar) : "memory");
}

__device__ __forceinline__ void
napkin_sm90_tma_load (unsigned dst, const NapkinTensorMap *map, int c0, int c1, int c2, unsigned bar)
{
  asm volatile ("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                :: "r" (dst), "l" (map), "r" (c0), "r" (c1), "r" (c2), "r" (bar) : "memory");
}

/* The same copy delivered to every block of the cluster in `mask` (bit r: rank r), at the
 * same offset of each one's shared memory, each one's mbarrier at `bar` counting the bytes. */
__device__ __forceinline__ void
napkin_sm90_tma_load_mc (unsigned dst, const NapkinTensorMap *map, int c0, int c1, unsigned bar, unsigned short mask)
{
  asm volatile ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                " [%0], [%1, {%2, %3}], [%4], %5;"
                :: "r" (dst), "l" (map), "r" (c0), "r" (c1), "r" (bar), "h" (mask) : "memory");
}

__device__ __forceinline__ void
napkin_sm90_tma_load_mc (unsigned dst, const NapkinTensorMap *map, int c0, int c1, int c2, unsigned bar,
                         unsigned short mask)
{
  asm volatile ("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                " [%0], [%1, {%2, %3, %4}], [%5], %6;"
                :: "r" (dst), "l" (map), "r" (c0), "r" (c1), "r" (c2), "r" (bar), "h" (mask) : "memory");
}

/* Arrives on the mbarrier at `bar` in the shared memory of the cluster's block `rank`.
 * The default (CTA-scope) release, as for a local arrival: the stage it frees was only
 * read, by wgmmas already waited for; a cluster-scope release stalled the consumer warp
 * on every chunk (1.7× slower GEMMs on an H200, docs/perf-notes.md). */
__device__ __forceinline__ void
napkin_sm90_bar_arrive_cluster (unsigned bar, unsigned rank)
{
  asm volatile ("{ .reg .b32 remote; mapa.shared::cluster.u32 remote, %0, %1;"
                " mbarrier.arrive.shared::cluster.b64 _, [remote]; }"
                :: "r" (bar), "r" (rank) : "memory");
}

/* Every thread of every block of the cluster: the blocks' mbarriers are initialised
 * before any copy or arrival reaches them, and none leaves while another may still
 * arrive on its barriers. */
__device__ __forceinline__ void
napkin_sm90_cluster_sync (void)
{
  asm volatile ("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/* Shared memory to global through a tensor map; the copy engine clips at the edges. */
__device__ __forceinline__ void
napkin_sm90_tma_store (const NapkinTensorMap *map, int c0, int c1, unsigned src)
{
  asm volatile ("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                :: "l" (map), "r" (c0), "r" (c1), "r" (src) : "memory");
}

__device__ __forceinline__ void
napkin_sm90_tma_store (const NapkinTensorMap *map, int c0, int c1, int c2, unsigned src)
{
  asm volatile ("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];"
                :: "l" (map), "r" (c0), "r" (c1), "r" (c2), "r" (src) : "memory");
}

/* A named barrier over one warpgroup (ids from 1: 0 is __syncthreads). */
__device__ __forceinline__ void
napkin_sm90_wg_sync (int id)
{
  asm volatile ("bar.sync %0, 128;" :: "r" (id) : "memory");
}

/* Two adjacent fp32 values into shared memory, as fp32 or converted to 16 bits. */
__device__ __forceinline__ void
napkin_sm90_sts2 (unsigned addr, float a, float b, const float *)
{
  asm volatile ("st.shared.v2.f32 [%0], {%1, %2};" :: "r" (addr), "f" (a), "f" (b) : "memory");
}

__device__ __forceinline__ void
napkin_sm90_sts2 (unsigned addr, float a, float b, const napkin_bf16 *p)
{
  asm volatile ("st.shared.b32 [%0], %1;" :: "r" (addr), "r" (napkin_pack2 (p, a, b)) : "memory");
}

__device__ __forceinline__ void
napkin_sm90_sts2 (unsigned addr, float a, float b, const napkin_f16 *p)
{
  asm volatile ("st.shared.b32 [%0], %1;" :: "r" (addr), "r" (napkin_pack2 (p, a, b)) : "memory");
}

__device__ __forceinline__ void
napkin_sm90_lds4 (unsigned addr, float *v)
{
  asm volatile ("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                : "=f" (v[0]), "=f" (v[1]), "=f" (v[2]), "=f" (v[3]) : "r" (addr) : "memory");
}

/* The byte address of 16-byte chunk `chunk` of row `row` in a 128-byte-swizzled tile
 * (1024-byte aligned): chunk q of row r sits at q ^ (r % 8). */
__device__ __forceinline__ unsigned
napkin_sm90_swz (unsigned base, int row, unsigned byte)
{
  return base + row * 128 + ((((byte >> 4) ^ (row & 7)) & 7) << 4) + (byte & 15);
}

#endif
