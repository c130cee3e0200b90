/* Running a request command: the library decides and answers, the command line writes
 * the answer (see cli.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* Writes the reply's parts in order; stops at the first that cannot be written. */
static int write_reply(const vp_reply *reply) {
    for (int i = 0; i < reply->n_parts; i++) {
        const vp_reply_part *part = &reply->parts[i];
        if (part->kind == VP_REPLY_NOTE) {
            cli_progress_clear();
            fputs(part->text, stderr);
            continue;
        }
        int rc = cli_write(part->kind == VP_REPLY_FILE ? part->path : "-", part->text, part->len);
        if (rc)
            return rc;
    }
    return reply->exit_code;
}

int cli_request_run(const char *command, vp_request *req) {
    req->spelling = VP_SPELL_FLAGS;
    req->color_terminal = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
    req->read_costs = vp_profile_cost_reader;
    req->progress = cli_progress_line;
    req->probe = cli_probe;
    vp_reply *reply = NULL;
    vp_error err = {0};
    if (vp_request_run(command, req, &reply, &err) != VP_OK)
        return cli_error(vp_status_exit_code(err.status), "%s", err.message);
    int rc = write_reply(reply);
    vp_reply_free(reply);
    return rc;
}
