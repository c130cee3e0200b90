/* A program that uses an installed vpipe: checks that the library's version is the
 * headers', prints the simulation report of V-Half at p=4, m=8 through the string API
 * (what `vpipe simulate v-half -p 4 -m 8 --json` prints), and with WITH_RUNTIME also
 * allocates through the runtime's accounting allocator. Frees the report with vp_free.
 * Exits 1 on any failure. */
#include <stdio.h>
#include <string.h>

#include <vpipe/vpipe.h>

static int failed(const char *what, const vp_error *err) {
    fprintf(stderr, "consumer: %s: %s\n", what, err ? err->message : "failed");
    return 1;
}

int main(void) {
    if (strcmp(vp_version(), VP_VERSION_STRING) != 0)
        return failed("the library's version is not the headers'", NULL);
#ifdef WITH_RUNTIME
    vp_mem *mem = vp_mem_new();
    void *block = mem ? vp_mem_alloc(mem, 4096) : NULL;
    int charged = block && vp_mem_peak(mem) >= 4096;
    if (block)
        vp_mem_release(mem, block, 4096);
    vp_mem_free(mem);
    if (!charged)
        return failed("the runtime's allocator", NULL);
#endif
    vp_error err = {0};
    vp_schedule *s = NULL;
    char *report = NULL;
    if (vp_request_schedule("{\"family\": \"v-half\", \"p\": 4, \"m\": 8}", &s, &err) != VP_OK)
        return failed("vp_request_schedule", &err);
    vp_status st = vp_request_simulate(s, NULL, &report, &err);
    vp_schedule_free(s);
    if (st != VP_OK)
        return failed("vp_request_simulate", &err);
    fputs(report, stdout);
    vp_free(report);
    return 0;
}
