/* The stage object's layout, shared by stage.c, optim.c, train.c and the tests. */
#ifndef VPIPE_MODEL_STAGE_INTERNAL_H
#define VPIPE_MODEL_STAGE_INTERNAL_H

#include "model/kernels.h"
#include "vpipe/model.h"

/* One parameter tensor in the flat arrays. */
typedef struct vp__tensor {
    long offset, count;
    bool decay; /* weight decay applies (matrices and embeddings) */
} vp__tensor;

/* A slot's state: empty; after F (or R); after B; after a drop, waiting for R (the full
 * recomputation's keeps only its input, the selective one all but the probabilities). */
enum { VP__SLOT_EMPTY, VP__SLOT_ACT, VP__SLOT_STASH, VP__SLOT_INPUT_ONLY, VP__SLOT_NO_CORE };

/* Where a slot's offloaded tensors are (offload.c): all on the device; copied to host (the
 * device still holds them); away (only on host); reserved again on the device, the copy
 * back pending. */
enum { VP__OFF_NONE, VP__OFF_COPIED, VP__OFF_AWAY, VP__OFF_RESERVED };

/* One offloaded tensor: the slot's field holding it, its size, its host copy. */
typedef struct vp__off {
    void **field;
    size_t bytes;
    void *host;
} vp__off;

/* What one microbatch holds on this stage between passes. */
typedef struct vp__slot {
    int state;
    float *input;          /* after a full drop, not first: [N,C] the stage's input */
    vp__block_act *blocks; /* [n_local] */
    uint8_t *tokens;       /* first: [N] */
    float *emb_dout;       /* first, after B: [N,C] */
    uint8_t *targets;      /* last: [N] */
    float *xf, *lnf;       /* last: [N,C] final-norm input and output */
    float *meanf, *rstdf;  /* last: [N] */
    float *probs;          /* last: [N,V] probabilities, dlogits after B */
    float *partf;          /* last: [2C] final-norm weight-gradient sums */
    int off_state;         /* VP__OFF_* */
    int n_off;             /* offloaded tensors, off[0..n_off) (malloc'd; NULL when none) */
    vp__off *off;
    vp_mem *host; /* the host pool their copies are in */
    /* a vocabulary stage: tokens (above) from EF until EB; from S until T: */
    float *vh;         /* [N,C] the last stage's output */
    float *vlogits;    /* [N,Vk] the shard's logits, their gradient in T */
    float *vstats;     /* [VP_VOCAB_STATS * N] the shard's softmax statistics */
    uint8_t *vtargets; /* [N] */
} vp__slot;

/* Byte sizes of one block's buffers for dims d. */
typedef struct {
    size_t nc, n, qkv, probs, h, part;
} vp__block_bytes;

static inline vp__block_bytes vp__block_bytes_of(vp__dims d) {
    size_t f = sizeof(float), N = (size_t)d.B * (size_t)d.T, C = (size_t)d.C;
    return (vp__block_bytes){
        f * N * C,     f * N,
        f * N * 3 * C, f * (size_t)d.B * (size_t)d.NH * (size_t)d.T * (size_t)d.T,
        f * N * 4 * C, f * 4 * C};
}

/* Releases what slot mb's offload holds on the host (discarding it). */
void vp__slot_offload_discard(vp__slot *sl);

struct vp_stage {
    vp_model_config cfg;
    int l0, l1, n_local;
    bool first, last;
    int vocab_shards; /* vocabulary parallelism (vp_stage_range) */
    int vocab_shard;  /* 1 + the shard of a vocabulary stage, else 0 */
    int v0, v1;       /* a vocabulary stage's rows */
    vp__dims d;
    vp_stage_sizes sizes;
    float *params, *grads;  /* [n_params] each */
    vp_shard held;          /* the elements whose AdamW moments the stage holds */
    float *adam_m, *adam_v; /* [held.hi - held.lo], element i at i - held.lo */
    long n_params;
    vp__tensor *tensors;
    int n_tensors;
    float *wte, *wpe, *lnfw, *lnfb, *headw;      /* parameter views (NULL if absent) */
    float *dwte, *dwpe, *dlnfw, *dlnfb, *dheadw; /* gradient views */
    vp__block_params *bp, *bg;                   /* [n_local] parameter, gradient views */
    float *work;
    vp__slot *slots;
    int n_slots;
    vp_mem *mem;
    bool charged; /* parameters, gradients, moments and scratch are charged to mem */
};

#endif
