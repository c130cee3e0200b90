/* Fuzz target for the data reader (vp_data_parse: plain text, or a Bible Retrieval
 * System file of LZW windows). Any bytes are either refused with a message or become a
 * corpus whose two parts add up to the decoded text; its windows are then drawn for a
 * few sequence lengths and must be shifted copies (targets = tokens moved by one), and
 * its digest (vp_data_digest) is a function of the text and its split.
 *
 * The corpus (fuzz/corpus/data/) holds plain texts, a one-window Bible data file cut from
 * /usr/lib/bible.data (bible-kjv-text), and damaged copies of it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vpipe/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Draws rows windows of seq_len bytes from one part and checks them. */
static void check_windows(const vp_data *d, bool validation, int seq_len) {
    enum { ROWS = 3 };
    uint8_t tokens[ROWS * 64], targets[ROWS * 64];
    size_t have = validation ? vp_data_val_bytes(d) : vp_data_train_bytes(d);
    vp_error err = {0};
    vp_batch batch = {ROWS, seq_len, tokens, targets};
    vp_status st = vp_data_batch(d, validation, 7, 11, &batch, &err);
    if ((st == VP_OK) != (have >= (size_t)seq_len + 1) || (st != VP_OK && !err.message[0]))
        abort(); /* refused exactly when the part is shorter than a window, with a reason */
    for (int r = 0; st == VP_OK && r < ROWS; r++)
        if (memcmp(tokens + r * seq_len + 1, targets + r * seq_len, (size_t)seq_len - 1) != 0)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vp_data *d = NULL;
    vp_error err = {0};
    if (vp_data_parse(data, size, "fuzz.data", 0.25, &d, &err) != VP_OK) {
        if (d || err.message[0] == '\0')
            abort(); /* every refusal explains itself and returns nothing */
        return 0;
    }
    size_t train = vp_data_train_bytes(d), val = vp_data_val_bytes(d);
    if (train + val == 0 || train < val)
        abort(); /* the validation part is the last quarter */
    if (!(size >= 4 && memcmp(data, "EC02", 4) == 0) && train + val != size)
        abort(); /* plain text is taken as it is */
    /* the digest identifies the text and its split: the same bytes digest alike, and the
     * plain text split otherwise (another training part) digests otherwise */
    vp_data *again = NULL, *split = NULL;
    if (vp_data_parse(data, size, "fuzz.data", 0.25, &again, &err) != VP_OK ||
        vp_data_digest(again) != vp_data_digest(d) ||
        vp_data_parse(data, size, "fuzz.data", 0.5, &split, &err) != VP_OK ||
        (vp_data_train_bytes(split) != train && vp_data_digest(split) == vp_data_digest(d)))
        abort();
    vp_data_free(again);
    vp_data_free(split);
    const int lengths[] = {1, 2, 16, 64};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        check_windows(d, false, lengths[i]);
        check_windows(d, true, lengths[i]);
    }
    vp_data_free(d);
    return 0;
}
