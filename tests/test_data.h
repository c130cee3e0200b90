/* The text the runtime tests train on (a tenth held out for validation): `data`, loaded
 * by `setup` and freed by `teardown`, the group fixtures of cmocka_run_group_tests. */
#ifndef VP_TEST_DATA_H
#define VP_TEST_DATA_H

#include <stdio.h>

#include "vpipe/runtime.h"

static vp_data *data;

static int setup(void **state) {
    (void)state;
    vp_error err = {0};
    if (vp_data_load("/usr/share/common-licenses/GPL-3", 0.1, &data, &err) != VP_OK) {
        fprintf(stderr, "%s\n", err.message);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    vp_data_free(data);
    return 0;
}

#endif
