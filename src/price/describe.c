/* Descriptions as JSON: a model (with its parts under a workload). */
#include <jansson.h>
#include <stdlib.h>

#include "base/internal.h"
#include "price/price_internal.h"

/* obj as a string (new, caller frees), NULL when memory runs out; releases obj. */
static char *dump(json_t *obj) {
    char *text = obj ? json_dumps(obj, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(obj);
    return text;
}

static void set_ints(json_t *o, const char *const *names, const int *values, int n) {
    for (int i = 0; i < n; i++)
        json_object_set_new(o, names[i], json_integer(values[i]));
}

static void set_reals(json_t *o, const char *const *names, const double *values, int n) {
    for (int i = 0; i < n; i++)
        json_object_set_new(o, names[i], json_real(values[i]));
}

static json_t *arch_object(const vp_arch *a) {
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(a->name));
    const char *ints[] = {"layers", "hidden",        "heads",      "kv_heads",
                          "ffn",    "max_positions", "dtype_bytes"};
    int ivals[] = {a->layers, a->hidden,        a->heads,      a->kv_heads,
                   a->ffn,    a->max_positions, a->dtype_bytes};
    set_ints(o, ints, ivals, 7);
    json_object_set_new(o, "vocab", json_integer(a->vocab));
    json_object_set_new(o, "ffn_kind", json_string(a->ffn_kind == VP_FFN_GELU ? "gelu" : "swiglu"));
    json_object_set_new(o, "norm", json_string(a->norm == VP_NORM_LAYER ? "layernorm" : "rmsnorm"));
    json_object_set_new(o, "tied", json_boolean(a->tied));
    json_object_set_new(o, "bias", json_boolean(a->bias));
    json_object_set_new(o, "dropout", json_boolean(a->dropout));
    json_object_set_new(o, "learned_positions", json_boolean(a->learned_positions));
    json_object_set_new(o, "impl", json_string(a->impl == VP_IMPL_VPIPE ? "vpipe" : "megatron"));
    json_object_set_new(o, "params", json_real(vp_arch_params(a)));
    return o;
}

static const char *const keep_names[] = {"F-B", "F-W", "B-W"};

/* One part under w: its facts and the tensors it saves. */
static json_t *part_object(const vp_arch *a, const vp_workload *w, vp_price_part part) {
    vp_price_facts f;
    vp__part_facts(a, w, part, &f);
    json_t *o = json_object(), *saved = json_array();
    const char *names[] = {"params",  "act_bytes", "keep_bytes", "flops_f",
                           "flops_b", "flops_w",   "flops_r"};
    double values[] = {f.params,  f.act_bytes, f.keep_bytes, f.flops_f,
                       f.flops_b, f.flops_w,   f.flops_r};
    set_reals(o, names, values, 7);
    int n = vp_price_tensors(a, w, part, NULL, 0);
    vp_saved_tensor *t = vp__calloc((size_t)n + 1, sizeof *t);
    if (!t) {
        json_decref(o);
        json_decref(saved);
        return NULL;
    }
    vp_price_tensors(a, w, part, t, n);
    for (int i = 0; i < n; i++)
        json_array_append_new(saved, json_pack("{s:s,s:f,s:s}", "name", t[i].name, "bytes",
                                               t[i].bytes, "keep", keep_names[t[i].keep]));
    free(t);
    json_object_set_new(o, "saved", saved);
    return o;
}

vp_status vp_arch_json(const vp_arch *arch, const vp_workload *work, char **out, vp_error *err) {
    *out = NULL;
    vp_price_setup setup = {.arch = arch, .work = work};
    vp_status rc = work ? vp_price_check(&setup, err) : vp_arch_check(arch, err);
    if (rc != VP_OK)
        return rc;
    json_t *o = arch_object(arch);
    if (work) {
        json_t *w = json_object(), *parts = json_object();
        const char *ints[] = {"seq", "mbs", "tp"};
        int ivals[] = {work->seq, work->mbs, work->tp};
        set_ints(w, ints, ivals, 3);
        json_object_set_new(w, "sp", json_boolean(work->sp));
        json_object_set_new(w, "flash", json_boolean(work->flash));
        json_object_set_new(w, "recompute", json_string(vp_recompute_name(work->recompute)));
        json_object_set_new(o, "workload", w);
        const char *part_names[] = {"layer", "embedding", "head"};
        for (int k = VP_PRICE_LAYER; k <= VP_PRICE_HEAD; k++)
            json_object_set_new(parts, part_names[k], part_object(arch, work, (vp_price_part)k));
        json_object_set_new(o, "parts", parts);
    }
    *out = dump(o);
    return *out ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
}
