/* Fuzz target for the checkpoint readers. Any bytes are either refused with a message or
 * restored into a stage of the fixed tiny model below (then the header describes that
 * run). Random bytes rarely carry a valid checksum, so each input is also tried with its
 * length field and checksum made right, which takes it past the integrity checks to the
 * header and stage-record checks. The same bytes go to the meta.json parser.
 *
 * The corpus (fuzz/corpus/checkpoint/) holds part files of this model in format version 3
 * (one slice: the whole model; two slices, of the stages [0, 1) and [1, 1)), damaged
 * copies of them (another run's data among them), files of versions 1, 2 and 4, and
 * commit records; the part files were written by vp_checkpoint_save and
 * vp_checkpoint_write_part with tiny_options() below (no data: its length and digest 0). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static vp_checkpoint_run tiny_options(void) {
    vp_train_options o;
    vp_train_options_default(&o);
    o.model = (vp_model_config){
        .n_layer = 1, .width = 4, .n_head = 1, .seq_len = 2, .microbatch = 1, .vocab = 4};
    return vp__checkpoint_run(&o, NULL);
}

static void try_restore(const uint8_t *bytes, size_t size, const vp_checkpoint_run *o,
                        vp_stage *stage) {
    vp_error err = {0};
    vp_checkpoint_info info;
    const vp_checkpoint_part part = {0, 1, &stage, 1};
    if (vp_checkpoint_restore(bytes, size, "fuzz.ckpt", o, &part, &err) != VP_OK) {
        if (err.message[0] == '\0')
            abort(); /* every refusal explains itself */
        return;
    }
    if (vp_checkpoint_parse(bytes, size, "fuzz.ckpt", &info, &err) != VP_OK)
        abort(); /* what restores, parses */
    if (info.step < 0 || info.n_slices < 1 || info.part < 0 || info.part >= info.n_parts ||
        info.run.model.width != o->model.width)
        abort();
    size_t n;
    const float *p = vp_stage_params(stage, &n);
    for (size_t i = 0; i < n; i++)
        if (!(p[i] == p[i]))
            abort(); /* a restored stage holds no NaN */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static vp_checkpoint_run o;
    static vp_mem *mem;
    static vp_stage *stage;
    if (!stage) {
        o = tiny_options();
        mem = vp_mem_new();
        vp_stage_options opt = {.n_slots = 1, .seed = o.seed};
        if (!mem || vp_stage_new(&o.model, (vp_stage_range){0, 1, true, true, 0, 0}, &opt, mem,
                                 &stage, NULL) != VP_OK)
            abort();
    }
    try_restore(data, size, &o, stage);
    if (size >= 168) { /* header and checksum */
        uint8_t *fixed = malloc(size);
        if (!fixed)
            return 0;
        memcpy(fixed, data, size);
        for (int i = 0; i < 8; i++)
            fixed[16 + i] = (uint8_t)((uint64_t)size >> (8 * i));
        uint64_t h = vp_digest(fixed, size - 8, VP_DIGEST_INIT);
        for (int i = 0; i < 8; i++)
            fixed[size - 8 + i] = (uint8_t)(h >> (8 * i));
        try_restore(fixed, size, &o, stage);
        free(fixed);
    }
    vp_checkpoint_meta meta;
    vp_error err = {0};
    if (vp_checkpoint_meta_parse((const char *)data, size, "meta.json", &meta, &err) != VP_OK) {
        if (err.message[0] == '\0')
            abort();
    } else if (meta.step < 0 || meta.n_parts < 1 || meta.shape.p < 1 || meta.shape.dp < 1) {
        abort();
    }
    return 0;
}
