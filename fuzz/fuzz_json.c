/* Fuzz target for the vpipe JSON schedule reader: any input must be either rejected with
 * an error or read into a schedule that validates or is rejected by the validator, and
 * whatever was read must write back and re-read to an equal schedule. A valid schedule
 * is simulated (its copies and host memory when it offloads) with finite results. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vpipe/io.h"
#include "vpipe/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vp_schedule *s = NULL;
    vp_error err = {0};
    if (vp_json_read((const char *)data, size, &s, &err) != VP_OK) {
        if (err.message[0] == '\0')
            abort(); /* every rejection explains itself */
        return 0;
    }
    if (vp_schedule_validate(s, &err) == VP_OK && vp_schedule_op_count(s) < 100000) {
        vp_costs costs = vp_costs_default();
        vp_memcfg mem = vp_memcfg_default();
        vp_cost_model *cm = NULL;
        vp_sim *sim = NULL;
        if (vp_cost_model_new(s, &costs, &mem, &cm, &err) != VP_OK ||
            vp_simulate(s, cm, &sim, &err) != VP_OK || !(sim->makespan >= 0) ||
            (sim->host_peak && !(sim->host_peak[0] >= 0)))
            abort(); /* a valid schedule simulates */
        vp_sim_free(sim);
        vp_cost_model_free(cm);
    }
    char *text = NULL;
    vp_schedule *back = NULL;
    if (vp_json_write(s, &text, &err) != VP_OK ||
        vp_json_read(text, strlen(text), &back, &err) != VP_OK || !vp_schedule_equal(s, back))
        abort();
    free(text);
    vp_schedule_free(back);
    vp_schedule_free(s);
    return 0;
}
