/* Accounting allocator: counts the bytes a rank holds per category (current and peak),
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
    size_t current[VP_MEM_CATEGORIES];
    size_t peak[VP_MEM_CATEGORIES];
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

const char *vp_mem_category_name(vp_mem_category cat) {
    static const char *const names[VP_MEM_CATEGORIES] = {
        "activations", "params", "grads", "optimizer", "workspace", "in_flight", "host"};
    return (unsigned)cat < VP_MEM_CATEGORIES ? names[cat] : "?";
}

void vp_mem_charge_to(vp_mem *mem, vp_mem_category cat, size_t bytes) {
    VP_ASSERT((unsigned)cat < VP_MEM_CATEGORIES);
    mem->current[cat] += bytes;
    if (mem->current[cat] > mem->peak[cat])
        mem->peak[cat] = mem->current[cat];
}

void vp_mem_uncharge_from(vp_mem *mem, vp_mem_category cat, size_t bytes) {
    VP_ASSERT((unsigned)cat < VP_MEM_CATEGORIES);
    mem->current[cat] = bytes > mem->current[cat] ? 0 : mem->current[cat] - bytes;
}

size_t vp_mem_current_of(const vp_mem *mem, vp_mem_category cat) {
    VP_ASSERT((unsigned)cat < VP_MEM_CATEGORIES);
    return mem->current[cat];
}

size_t vp_mem_peak_of(const vp_mem *mem, vp_mem_category cat) {
    VP_ASSERT((unsigned)cat < VP_MEM_CATEGORIES);
    return mem->peak[cat];
}

void vp_mem_charge(vp_mem *mem, size_t bytes) {
    vp_mem_charge_to(mem, VP_MEM_ACTIVATIONS, bytes);
}

void vp_mem_uncharge(vp_mem *mem, size_t bytes) {
    vp_mem_uncharge_from(mem, VP_MEM_ACTIVATIONS, bytes);
}

size_t vp_mem_current(const vp_mem *mem) {
    return mem->current[VP_MEM_ACTIVATIONS];
}

size_t vp_mem_peak(const vp_mem *mem) {
    return mem->peak[VP_MEM_ACTIVATIONS];
}
