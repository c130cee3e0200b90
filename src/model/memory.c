/* Accounting allocator: counts the activation bytes a rank holds (current and peak),
 * and keeps freed buffers for reuse. The same buffer sizes come back every microbatch,
 * and returning them to the system made the kernel zero fresh pages on every pass (a
 * tenth of a training step). Cached buffers are not counted: they are free memory. */
#include <stdlib.h>

#include "base/internal.h"
#include "vpipe/model.h"

typedef struct {
    void *p;
    size_t bytes; /* as requested: a buffer adopted from a caller may be no larger */
} cached;

struct vp_mem {
    size_t current;
    size_t peak;
    cached *cache;
    int n_cache, cap_cache;
};

static size_t rounded(size_t bytes) {
    return bytes ? (bytes + 63) / 64 * 64 : 64;
}

vp_mem *vp_mem_new(void) {
    return vp__calloc(1, sizeof(vp_mem));
}

void vp_mem_free(vp_mem *mem) {
    if (!mem)
        return;
    for (int i = 0; i < mem->n_cache; i++)
        free(mem->cache[i].p);
    free(mem->cache);
    free(mem);
}

void *vp_mem_alloc_uncharged(vp_mem *mem, size_t bytes) {
    for (int i = mem->n_cache - 1; i >= 0; i--) {
        if (mem->cache[i].bytes == bytes) {
            void *p = mem->cache[i].p;
            mem->cache[i] = mem->cache[--mem->n_cache];
            return p;
        }
    }
    return aligned_alloc(64, rounded(bytes));
}

void *vp_mem_alloc(vp_mem *mem, size_t bytes) {
    void *p = vp_mem_alloc_uncharged(mem, bytes);
    if (p)
        vp_mem_charge(mem, bytes);
    return p;
}

void vp_mem_release(vp_mem *mem, void *p, size_t bytes) {
    if (!p)
        return;
    vp_mem_uncharge(mem, bytes);
    if (vp__grow((void **)&mem->cache, &mem->cap_cache, mem->n_cache + 1, sizeof(cached))) {
        free(p);
        return;
    }
    mem->cache[mem->n_cache++] = (cached){p, bytes};
}

void vp_mem_charge(vp_mem *mem, size_t bytes) {
    mem->current += bytes;
    if (mem->current > mem->peak)
        mem->peak = mem->current;
}

void vp_mem_uncharge(vp_mem *mem, size_t bytes) {
    mem->current = bytes > mem->current ? 0 : mem->current - bytes;
}

size_t vp_mem_current(const vp_mem *mem) {
    return mem->current;
}

size_t vp_mem_peak(const vp_mem *mem) {
    return mem->peak;
}
