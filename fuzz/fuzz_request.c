/* Fuzz target for the request readers of the string API: the options of a command as a
 * JSON object (vp_request_from_json) and the counts of --layers-per-stage
 * (vp_request_counts). The input's first line names the command (anything: an unknown one
 * must be refused), the rest is the options. A refusal must explain itself; an accepted
 * request gives only options its command takes, each within its bounds.
 *
 * The corpus (fuzz/corpus/request/) holds valid and invalid options of every command. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request/door.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An accepted option within its bounds. */
static void check_value(const vp_request *req, const vp__option *o) {
    const char *at = (const char *)req + o->offset;
    double x = o->kind == VP__INT      ? *(const int *)at
               : o->kind == VP__LONG   ? (double)*(const long *)at
               : o->kind == VP__NUMBER ? *(const double *)at
                                       : 0;
    if ((o->kind == VP__INT || o->kind == VP__LONG || o->kind == VP__NUMBER) &&
        !(x >= o->lo && x <= o->hi))
        abort();
    if (o->kind == VP__CHOICE) {
        int n = 0, k = *(const int *)at;
        while (o->choices[n])
            n++;
        if (k < 0 || k >= n)
            abort();
    }
}

static void read_options(const char *command, const char *options) {
    vp_request req;
    vp_error err = {0};
    if (vp_request_from_json(command, options, &req, &err) != VP_OK) {
        if (err.message[0] == '\0')
            abort();
        return;
    }
    int cmd = vp__command_find(command);
    for (int i = 0; i < vp__n_options; i++) {
        const vp__option *o = &vp__options[i];
        if (!vp__option_given(&req, o))
            continue;
        if (!((o->commands >> cmd) & 1))
            abort();
        check_value(&req, o);
    }
    vp_request_release(&req);
}

static void read_counts(const char *text) {
    int *counts = NULL, n = 0;
    vp_error err = {0};
    vp_status rc = vp_request_counts(text, &counts, &n, &err);
    if (rc != VP_OK && err.message[0] == '\0')
        abort();
    for (int k = 0; rc == VP_OK && k < n; k++)
        if (counts[k] < 0 || counts[k] > 1 << 20)
            abort();
    vp_free(counts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0'; /* the readers read C strings: an embedded NUL ends the text */
    char *options = strchr(text, '\n');
    if (options)
        *options++ = '\0';
    read_options(text, options ? options : "");
    read_counts(options ? options : text);
    free(text);
    return 0;
}
