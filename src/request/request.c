/* The door (request.h): a request checked, run by its command, and answered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/door.h"

void vp_request_init(vp_request *req, const char *command) {
    memset(req, 0, sizeof *req);
    for (int i = 0; i < vp__n_options; i++) { /* each option's "not given", as the table says */
        const vp__option *o = &vp__options[i];
        char *at = (char *)req + o->offset;
        if (o->kind == VP__INT || o->kind == VP__CHOICE)
            *(int *)at = (int)o->unset;
        else if (o->kind == VP__NUMBER)
            *(double *)at = o->unset;
    }
    if (command && !strcmp(command, "schedule"))
        req->output = "-";
}

void vp__run_release(vp__run *run) {
    if (run->costs.release)
        run->costs.release(run->costs.ctx);
    free(run->dev);
    free(run->layers);
    free(run->offload_shares);
}

/* An option req gives that cmd does not take. */
static vp_status check_taken(const vp__run *run, vp_error *err) {
    for (int i = 0; i < vp__n_options; i++) {
        const vp__option *o = &vp__options[i];
        if (!(o->commands & (1u << run->cmd)) && vp__option_given(run->req, o))
            return vp__fail(err, VP_EINVAL, "%s takes no %s", vp__command_name(run->cmd),
                            VP__NAME(run, o->key));
    }
    return VP_OK;
}

static vp_status (*const commands[VP__COMMANDS])(vp__run *, vp_error *) = {
    [VP__LIST] = vp__list,         [VP__SIMULATE] = vp__simulate_cmd,
    [VP__COMPARE] = vp__compare,   [VP__RENDER] = vp__render,
    [VP__SCHEDULE] = vp__schedule, [VP__VALIDATE] = vp__validate,
    [VP__PLAN] = vp__plan,         [VP__BLOCK] = vp__block,
    [VP__MODEL] = vp__model,       [VP__CALIBRATE] = vp__calibrate,
};

/* The command line's message: line and column in it, the status's when empty. */
static void fold_position(vp_error *err) {
    char message[sizeof err->message + 32];
    if (err->line > 0)
        snprintf(message, sizeof message, "%d:%d: %s", err->line, err->column, err->message);
    else
        snprintf(message, sizeof message, "%s",
                 err->message[0] ? err->message : vp_status_str(err->status));
    memcpy(err->message, message, sizeof err->message - 1);
    err->message[sizeof err->message - 1] = '\0';
    err->line = err->column = 0;
}

vp_status vp_request_run(const char *command, const vp_request *req, vp_reply **reply,
                         vp_error *err) {
    vp_error own = {0};
    err = err ? err : &own;
    *reply = NULL;
    int cmd = vp__command_find(command);
    if (cmd < 0)
        return vp__unknown_command(command, err);
    vp__run run = {.req = req, .cmd = (vp__command)cmd, .spelling = (int)req->spelling};
    if (!(run.reply = calloc(1, sizeof *run.reply)))
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = check_taken(&run, err);
    if (rc == VP_OK)
        rc = commands[cmd](&run, err);
    vp__progress_clear(&run);
    vp__run_release(&run);
    if (rc != VP_OK) {
        vp_reply_free(run.reply);
        fold_position(err);
        return rc;
    }
    *reply = run.reply;
    return VP_OK;
}

vp_status vp_request_call_with(const char *command, const vp_schedule *s, const char *options,
                               vp_cost_reader read_costs, char **text, vp_error *err) {
    vp_request req;
    vp_reply *reply = NULL;
    *text = NULL;
    vp_status rc = vp_request_from_json(command, options, &req, err);
    req.schedule = s;
    req.read_costs = read_costs;
    if (rc == VP_OK && s && req.operand[0])
        rc = vp__fail(err, VP_EINVAL, "give the schedule or option 'operand', not both");
    if (rc == VP_OK)
        rc = vp_request_run(command, &req, &reply, err);
    if (rc == VP_OK)
        rc = vp_reply_json(reply, text, err);
    vp_reply_free(reply);
    vp_request_release(&req);
    return rc;
}

vp_status vp_request_call(const char *command, const char *options, char **reply, vp_error *err) {
    return vp_request_call_with(command, NULL, options, NULL, reply, err);
}

vp_status vp_request_call_schedule(const char *command, const vp_schedule *s, const char *options,
                                   char **reply, vp_error *err) {
    *reply = NULL;
    if (!s)
        return vp__fail(err, VP_EINVAL, "no schedule given");
    return vp_request_call_with(command, s, options, NULL, reply, err);
}
