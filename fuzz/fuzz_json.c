/* Fuzz target for the vpipe JSON schedule reader: any input must be either rejected with
 * an error or read into a schedule that validates or is rejected by the validator, and
 * whatever was read must write back and re-read to an equal schedule. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vpipe/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vp_schedule *s = NULL;
    vp_error err = {0};
    if (vp_json_read((const char *)data, size, &s, &err) != VP_OK) {
        if (err.message[0] == '\0')
            abort(); /* every rejection explains itself */
        return 0;
    }
    (void)vp_schedule_validate(s, &err);
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
