/* Fuzz target for the block reader: any input is either rejected with a message or read
 * into a block that writes back and re-reads to the same block; a block read is then
 * pushed through the framework (collision check, smallest interval for small blocks,
 * repeat, validation, lifespans), which must answer with a status, never crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vpipe/block.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_block(const vp_block *a, const vp_block *b) {
    if (a->p != b->p || a->S != b->S || a->placement != b->placement ||
        a->mb_per_copy != b->mb_per_copy || a->T != b->T || a->n != b->n)
        return 0;
    if (memcmp(a->stage_device, b->stage_device, (size_t)a->S * sizeof *a->stage_device))
        return 0;
    for (int i = 0; i < a->n; i++) {
        const vp_block_pass *x = &a->pass[i], *y = &b->pass[i];
        if (x->kind != y->kind || x->stage != y->stage || x->mb != y->mb || x->start != y->start ||
            x->dur != y->dur)
            return 0;
    }
    return 1;
}

static void exercise(vp_block *b) {
    vp_error err = {0};
    if (!(b->T > 0) && (b->n > 64 || vp_block_min_interval(b, &b->T, &err) != VP_OK))
        return;
    if (vp_block_collisions(b, b->T, NULL, &err) != VP_OK)
        return;
    vp_schedule *s = NULL;
    if (vp_block_repeat(b, 3, NULL, &s, &err) == VP_OK) {
        (void)vp_schedule_validate(s, &err);
        vp_schedule_free(s);
    }
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    vp_block_lifespan *ls = NULL;
    if (vp_block_cost_model(b, &costs, &mem, &cm, &err) == VP_OK &&
        vp_block_lifespan_new(b, cm, 0, &ls, &err) == VP_OK)
        vp_block_lifespan_free(ls);
    vp_cost_model_free(cm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vp_block *b = NULL;
    vp_error err = {0};
    if (vp_block_read_json((const char *)data, size, NULL, NULL, &b, &err) != VP_OK) {
        if (err.message[0] == '\0')
            abort(); /* every rejection explains itself */
        return 0;
    }
    char *text = NULL;
    vp_block *back = NULL;
    if (vp_block_write_json(b, NULL, &text, &err) != VP_OK ||
        vp_block_read_json(text, strlen(text), NULL, NULL, &back, &err) != VP_OK ||
        !same_block(b, back))
        abort();
    free(text);
    vp_block_free(back);
    exercise(b);
    vp_block_free(b);
    return 0;
}
