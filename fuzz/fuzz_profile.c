/* Fuzz target for the profile reader (vp_profile_read_json, the --cost-file format). Any
 * bytes are either refused with a message or read into a profile whose model passes
 * vp_model_config_check and whose times are finite and >= 0; such a profile writes back
 * and re-reads to the same numbers, bit for bit.
 *
 * The corpus (fuzz/corpus/profile/) holds profiles as `vpipe profile` writes them and
 * damaged variants (missing and mistyped fields, negative and huge numbers, another
 * version, an oversized model). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vpipe/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool times_ok(const vp_profile *pr) {
    for (int k = 0; k < VP_PART_COUNT; k++) {
        const double t[3] = {pr->f[k], pr->b[k], pr->w[k]};
        for (int i = 0; i < 3; i++)
            if (!isfinite(t[i]) || t[i] < 0)
                return false;
    }
    return isfinite(pr->c) && pr->c >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vp_profile pr;
    vp_error err = {0};
    if (vp_profile_read_json((const char *)data, size, &pr, &err) != VP_OK) {
        if (err.message[0] == '\0')
            abort(); /* every refusal explains itself */
        return 0;
    }
    if (!times_ok(&pr) || vp_model_config_check(&pr.model, NULL) != VP_OK)
        abort();
    char *text = vp_profile_write_json(&pr);
    vp_profile back;
    if (!text || vp_profile_read_json(text, strlen(text), &back, &err) != VP_OK ||
        memcmp(&back.model, &pr.model, sizeof pr.model) != 0 || back.c != pr.c)
        abort();
    for (int k = 0; k < VP_PART_COUNT; k++)
        if (back.f[k] != pr.f[k] || back.b[k] != pr.b[k] || back.w[k] != pr.w[k])
            abort();
    free(text);
    return 0;
}
