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

/* The attention's and the MLP's variants, each only when the model has it: head_dim
 * (when not hidden / heads), "mla" {q_lora, kv_lora, qk_nope, qk_rope, v_head}, "window"
 * {tokens, period, layers}, "moe" {experts, top_k, expert_ffn, shared_experts,
 * dense_layers, capacity, active_params, and with group-limited routing expert_groups and
 * group_top_k}. */
static void variants_object(json_t *o, const vp_arch *a) {
    if (a->head_dim)
        json_object_set_new(o, "head_dim", json_integer(a->head_dim));
    if (a->kv_lora > 0) {
        json_t *m = json_object();
        const char *n[] = {"q_lora", "kv_lora", "qk_nope", "qk_rope", "v_head"};
        int v[] = {a->q_lora, a->kv_lora, a->qk_nope, a->qk_rope, a->v_head};
        set_ints(m, n, v, 5);
        json_object_set_new(o, "mla", m);
    }
    if (a->window > 0) {
        json_t *w = json_object();
        const char *n[] = {"tokens", "period", "layers"};
        int v[] = {a->window, a->window_period, a->window_layers};
        set_ints(w, n, v, 3);
        json_object_set_new(o, "window", w);
    }
    if (a->experts > 0) {
        json_t *e = json_object();
        const char *n[] = {"experts", "top_k", "expert_ffn", "shared_experts", "dense_layers"};
        int v[] = {a->experts, a->top_k, a->expert_ffn, a->shared_experts, a->dense_layers};
        set_ints(e, n, v, 5);
        json_object_set_new(e, "capacity", json_real(a->capacity));
        json_object_set_new(e, "active_params", json_real(vp_arch_active_params(a)));
        if (a->expert_groups > 0) {
            const char *g[] = {"expert_groups", "group_top_k"};
            int gv[] = {a->expert_groups, a->group_top_k};
            set_ints(e, g, gv, 2);
        }
        json_object_set_new(o, "moe", e);
    }
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
    json_object_set_new(o, "ffn_kind", json_string(vp_ffn_kind_name(a->ffn_kind)));
    json_object_set_new(o, "norm", json_string(a->norm == VP_NORM_LAYER ? "layernorm" : "rmsnorm"));
    json_object_set_new(o, "tied", json_boolean(a->tied));
    json_object_set_new(o, "bias", json_boolean(a->bias));
    json_object_set_new(o, "dropout", json_boolean(a->dropout));
    json_object_set_new(o, "learned_positions", json_boolean(a->learned_positions));
    json_object_set_new(o, "impl", json_string(a->impl == VP_IMPL_VPIPE ? "vpipe" : "megatron"));
    json_object_set_new(o, "params", json_real(vp_arch_params(a)));
    variants_object(o, a);
    return o;
}

static const char *const keep_names[] = {"F-B", "F-W", "B-W"};

/* One piece under w: its facts and the tensors it saves. */
static json_t *part_object(const vp_arch *a, const vp_workload *w, vp_price_part part,
                           unsigned kind) {
    vp_price_facts f;
    vp__piece_facts(a, w, part, kind, &f);
    json_t *o = json_object(), *saved = json_array();
    const char *names[] = {"params",  "act_bytes", "keep_bytes", "flops_f",
                           "flops_b", "flops_w",   "flops_r"};
    double values[] = {f.params,  f.act_bytes, f.keep_bytes, f.flops_f,
                       f.flops_b, f.flops_w,   f.flops_r};
    set_reals(o, names, values, 7);
    int n = vp__piece_tensors(a, w, part, kind, NULL, 0);
    vp_saved_tensor *t = vp__calloc((size_t)n + 1, sizeof *t);
    if (!t) {
        json_decref(o);
        json_decref(saved);
        return NULL;
    }
    vp__piece_tensors(a, w, part, kind, t, n);
    for (int i = 0; i < n; i++)
        json_array_append_new(saved, json_pack("{s:s,s:f,s:s}", "name", t[i].name, "bytes",
                                               t[i].bytes, "keep", keep_names[t[i].keep]));
    free(t);
    json_object_set_new(o, "saved", saved);
    return o;
}

/* With more than one kind of layer, "layer_kinds": per kind, its MLP ("dense" or
 * "moe"), attention ("full" or "window"), how many layers are of it, and its facts. */
static void kinds_object(json_t *o, const vp_arch *a, const vp_workload *w) {
    int counts[VP__KINDS], kinds = 0;
    vp__kind_counts(a, 0, a->layers, counts);
    for (int k = 0; k < VP__KINDS; k++)
        kinds += counts[k] > 0;
    if (kinds < 2)
        return;
    json_t *list = json_array();
    for (unsigned k = 0; k < VP__KINDS; k++) {
        if (!counts[k])
            continue;
        json_t *one = part_object(a, w, VP_PRICE_LAYER, k);
        json_object_set_new(one, "mlp", json_string(k & VP__MOE ? "moe" : "dense"));
        json_object_set_new(one, "attention", json_string(k & VP__WINDOW ? "window" : "full"));
        json_object_set_new(one, "layers", json_integer(counts[k]));
        json_array_append_new(list, one);
    }
    json_object_set_new(o, "layer_kinds", list);
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
        const char *ints[] = {"seq", "mbs", "tp", "cp", "ep", "etp"};
        int ivals[] = {work->seq, work->mbs, work->tp, work->cp, work->ep, work->etp};
        set_ints(w, ints, ivals, 6);
        json_object_set_new(w, "sp", json_boolean(work->sp));
        json_object_set_new(w, "flash", json_boolean(work->flash));
        json_object_set_new(w, "recompute", json_string(vp_recompute_name(work->recompute)));
        if (work->framework != VP_FRAMEWORK_MEGATRON)
            json_object_set_new(w, "framework", json_string(vp_framework_name(work->framework)));
        if (work->recompute_modules) {
            char names[96];
            json_object_set_new(w, "recompute_modules",
                                json_string(vp_recompute_modules_text(work->recompute_modules,
                                                                      names, sizeof names)));
        }
        json_object_set_new(w, "fp8", json_string(vp_fp8_name(work->fp8)));
        json_object_set_new(o, "workload", w);
        const char *part_names[] = {"layer", "embedding", "head"};
        for (int k = VP_PRICE_LAYER; k <= VP_PRICE_HEAD; k++)
            json_object_set_new(parts, part_names[k],
                                part_object(arch, work, (vp_price_part)k, vp__main_kind(arch)));
        json_object_set_new(o, "parts", parts);
        kinds_object(o, arch, work);
    }
    *out = dump(o);
    return *out ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
}
