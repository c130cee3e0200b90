/* Fuzz target for the PyTorch CSV reader: any input is either rejected with a message or
 * read into a valid schedule, and whatever was read writes back (compute_only and
 * compute_comms) and re-reads to an equal schedule, and draws in the terminal. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vpipe/render.h"
#include "vpipe/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes s in format, reads it back and aborts unless the two are equal. */
static void round_trip(const vp_schedule *s, vp_torch_csv_format format) {
    char *text = NULL;
    vp_schedule *back = NULL;
    vp_torch_csv_opts o = {format, s->p, s->m};
    if (vp_torch_csv_write(s, format, &text, NULL) != VP_OK ||
        vp_torch_csv_read(text, strlen(text), &o, &back, NULL) != VP_OK)
        abort();
    /* placements whose stage maps coincide read back as the first matching kind */
    if (!memcmp(back->stage_device, s->stage_device, sizeof *s->stage_device * (size_t)s->S))
        back->placement = s->placement;
    if (!vp_schedule_equal(s, back))
        abort();
    free(text);
    vp_schedule_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vp_schedule *s = NULL;
    vp_error err = {0};
    if (vp_torch_csv_read((const char *)data, size, NULL, &s, &err) != VP_OK) {
        if (err.message[0] == '\0' || s != NULL)
            abort(); /* every rejection explains itself and returns nothing */
        return 0;
    }
    if (vp_schedule_validate(s, NULL) != VP_OK)
        abort();
    round_trip(s, VP_TORCH_CSV_COMPUTE_ONLY);
    round_trip(s, VP_TORCH_CSV_COMPUTE_COMMS);
    char notes[256];
    vp_torch_csv_notes(s, notes, sizeof notes);

    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    vp_sim *sim = NULL;
    vp_timeline *tl = NULL;
    if (vp_cost_model_new(s, &costs, &mem, &cm, NULL) != VP_OK ||
        vp_simulate(s, cm, &sim, NULL) != VP_OK || vp_timeline_from_sim(s, sim, &tl, NULL) != VP_OK)
        abort();
    char *text = NULL;
    if (vp_render_ascii(tl, NULL, &text, NULL) != VP_OK)
        abort();
    free(text);
    vp_timeline_free(tl);
    vp_sim_free(sim);
    vp_cost_model_free(cm);
    vp_schedule_free(s);
    return 0;
}
