/* The reply: what a command answers, part by part (request.h), and its JSON form. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "request/door.h"

static vp_status add(vp__run *run, vp_reply_kind kind, const char *path, char *text,
                     vp_error *err) {
    vp_reply *r = run->reply;
    char *where = path ? strdup(path) : NULL;
    vp_reply_part *grown = text && (where || !path)
                               ? realloc(r->parts, ((size_t)r->n_parts + 1) * sizeof *r->parts)
                               : NULL;
    if (!grown) {
        free(text);
        free(where);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    r->parts = grown;
    r->parts[r->n_parts++] = (vp_reply_part){kind, where, text, strlen(text)};
    return VP_OK;
}

vp_status vp__say(vp__run *run, char *text, vp_error *err) {
    return add(run, VP_REPLY_STDOUT, NULL, text, err);
}

/* VP_EINVAL when the output at path, one of the request's, would write over a file the
 * request reads or over another of its outputs. */
static vp_status check_output(const vp__run *run, const char *path, vp_error *err) {
    const vp_request *q = run->req;
    static const char *const keys[] = {"output", "svg", "trace"};
    const char *outputs[] = {q->output, q->svg, q->trace};
    for (int k = 0; k < 3; k++)
        for (int j = k + 1; j < 3; j++)
            if ((outputs[k] == path || outputs[j] == path) && vp_file_same(outputs[k], outputs[j]))
                return vp__fail(err, VP_EINVAL,
                                "%s and %s name the same file %s: each writes its own",
                                VP__NAME(run, keys[k]), VP__NAME(run, keys[j]), outputs[k]);
    const char *inputs[] = {q->operand[0], q->operand[1], q->cost_file, q->memory_model,
                            q->model,      q->gpu,        q->runs};
    struct stat st;
    int k = 0;
    while (k < 3 && outputs[k] != path)
        k++;
    const char *what = k < 3 ? VP__NAME(run, keys[k]) : "the output";
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
        if (inputs[i] && stat(inputs[i], &st) == 0 && S_ISREG(st.st_mode) &&
            vp_file_same(inputs[i], path))
            return vp__fail(err, VP_EINVAL,
                            "%s %s would write over the input %s: name another file", what, path,
                            inputs[i]);
    return VP_OK;
}

vp_status vp__write(vp__run *run, const char *path, char *text, vp_error *err) {
    if (!strcmp(path, "-"))
        return add(run, VP_REPLY_STDOUT, NULL, text, err);
    vp_status rc = check_output(run, path, err);
    if (rc != VP_OK) {
        free(text);
        return rc;
    }
    return add(run, VP_REPLY_FILE, path, text, err);
}

vp_status vp__note(vp__run *run, char *text, vp_error *err) {
    return add(run, VP_REPLY_NOTE, NULL, text, err);
}

vp_status vp__say_buf(vp__run *run, vp__buf *b, vp_error *err) {
    return vp__say(run, vp__buf_take(b), err);
}

char *vp__printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return text;
}

void vp__progress(const vp__run *run, const char *fmt, ...) {
    if (!run->req->progress)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    run->req->progress(run->req->user, line);
}

void vp__progress_clear(const vp__run *run) {
    if (run->req->progress)
        run->req->progress(run->req->user, NULL);
}

vp_status vp__probe(const vp__run *run, const char *path, bool dir, vp_error *err) {
    vp_status rc = dir || !strcmp(path, "-") ? VP_OK : check_output(run, path, err);
    return rc == VP_OK && run->req->probe ? run->req->probe(run->req->user, path, dir, err) : rc;
}

json_t *vp__json_take(char *text) {
    json_t *json = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return json;
}

vp_status vp__say_json(vp__run *run, json_t *json, vp_error *err) {
    char *text = json ? json_dumps(json, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
    json_decref(json);
    char *line = text ? vp__printf("%s\n", text) : NULL;
    free(text);
    if (!line)
        return vp__fail(err, VP_ENOMEM, "cannot build the JSON output (out of memory)");
    return vp__say(run, line, err);
}

void vp_reply_free(vp_reply *reply) {
    if (!reply)
        return;
    for (int i = 0; i < reply->n_parts; i++) {
        free(reply->parts[i].path);
        free(reply->parts[i].text);
    }
    free(reply->parts);
    free(reply);
}

vp_status vp_reply_json(const vp_reply *reply, char **text, vp_error *err) {
    *text = NULL;
    json_t *files = json_array(), *notes = json_array();
    vp__buf out = {0};
    bool bad = false; /* a text that is not UTF-8 (or no memory) */
    for (int i = 0; i < reply->n_parts; i++) {
        const vp_reply_part *p = &reply->parts[i];
        if (p->kind == VP_REPLY_STDOUT) {
            vp__buf_add(&out, p->text, p->len);
            continue;
        }
        json_t *t = json_stringn(p->text, p->len);
        bad |= !t;
        if (t && p->kind == VP_REPLY_NOTE)
            json_array_append_new(notes, t);
        else if (t)
            json_array_append_new(files, json_pack("{s:s, s:o}", "path", p->path, "text", t));
    }
    size_t len = out.len;
    char *so = vp__buf_take(&out);
    json_t *stdout_json = so ? json_stringn(so, len) : NULL;
    free(so);
    bad |= !stdout_json;
    json_t *root = json_pack("{s:o?, s:o?, s:o?, s:i}", "stdout", stdout_json, "files", files,
                             "notes", notes, "exit", reply->exit_code);
    if (root && !bad)
        *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (*text)
        return VP_OK;
    return vp__fail(err, bad ? VP_EINVAL : VP_ENOMEM,
                    bad ? "the answer is not UTF-8 text" : "out of memory");
}
