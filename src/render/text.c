/* Handing a renderer's text to its caller. */
#include <stdlib.h>

#include "render/render_internal.h"

vp_status vp__render_finish(vp__buf *b, vp_status rc, char **out, vp_error *err) {
    *out = NULL;
    if (rc != VP_OK) {
        vp__buf_free(b);
        return rc;
    }
    *out = vp__buf_take(b);
    return *out ? VP_OK : vp__fail(err, VP_ENOMEM, "render: out of memory");
}
