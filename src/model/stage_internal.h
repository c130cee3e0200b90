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
    /* a vocabulary stage: tokens (above) from EF until EB; from S until T: */
    float *vh;         /* [N,C] the last stage's output */
    float *vlogits;    /* [N,Vk] the shard's logits, their gradient in T */
    float *vstats;     /* [VP_VOCAB_STATS * N] the shard's softmax statistics */
    uint8_t *vtargets; /* [N] */
} vp__slot;

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
