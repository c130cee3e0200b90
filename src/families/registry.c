/* The family registry: every generator vpipe knows, in presentation order. */
#include <string.h>

#include "families/families_internal.h"

static const vp_family families[] = {
    {"gpipe", "all forwards, then all backwards", "p >= 1, m >= 1", vp__build_gpipe, 1},
    {"1f1b", "one forward, one backward (PipeDream-flush)", "p >= 1, m >= 1", vp__build_1f1b, 1},
    {"1f1b-r", "1F1B with full recomputation (1F1B-R): each F keeps only its stage's input",
     "p >= 1, m >= 1", vp__build_1f1br, 1},
    {"interleaved", "interleaved 1F1B, v chunks per device on a loop placement",
     "p >= 1, m >= 1, v >= 1 (-v, default 2)", vp__build_interleaved, 1},
    {"zb-h1", "Zero Bubble H1: 1F1B memory, W deferred into the bubbles", "p >= 1, m >= 1",
     vp__build_zbh1, 1},
    {"zb-h2", "Zero Bubble H2: deeper warm-up, parallelogram, ~zero bubble", "p >= 1, m >= 1",
     vp__build_zbh2, 1},
    {"zb-1p", "Zero Bubble auto (greedy), memory limit p units", "p >= 1, m >= 1, limit >= 1 unit",
     vp__build_zb1p, 0},
    {"zb-2p", "Zero Bubble auto (greedy), memory limit 2p units", "p >= 1, m >= 1, limit >= 1 unit",
     vp__build_zb2p, 0},
    {"zb-v", "Zero Bubble V: V placement, cost-aware greedy, limit p units", "p >= 1, m >= 1",
     vp__build_zbv, 0},
    {"v-min", "V-Min block (offsets 1,1): about 1/3 of 1F1B's memory", "p >= 2, m >= 1",
     vp__build_vmin, 0},
    {"v-half", "V-Half block (offsets 2,1): half of 1F1B's memory", "p >= 2, m >= 1",
     vp__build_vhalf, 0},
    {"v-zb", "V-ZB block (offsets 4,2): 1F1B's memory, zero bubble", "p >= 2, m >= 1",
     vp__build_vzb, 0},
    {"1f1b-v", "1F1B on the V placement (full backwards): about 2/3 of 1F1B's memory",
     "p >= 2, m >= 1", vp__build_1f1bv, 0},
    {"dualpipe", "DualPipe: two model copies in opposite directions, overlapped F&B",
     "p >= 2 even, m >= 2p even", vp__build_dualpipe, 1},
    {"dualpipev", "DualPipeV: DualPipe folded onto the V placement, one model copy",
     "p >= 2, m >= 2p", vp__build_dualpipev, 1},
};

int vp_family_count(void) {
    return (int)(sizeof families / sizeof families[0]);
}

const vp_family *vp_family_at(int i) {
    return i >= 0 && i < vp_family_count() ? &families[i] : NULL;
}

const vp_family *vp_family_find(const char *name) {
    for (int i = 0; i < vp_family_count(); i++)
        if (!strcmp(families[i].name, name))
            return &families[i];
    return NULL;
}

const vp_family *vp_family_nearest(const char *word) {
    vp__nearest near = {.word = word};
    for (int i = 0; i < vp_family_count(); i++)
        vp__nearest_offer(&near, families[i].name);
    return near.best ? vp_family_find(near.best) : NULL;
}

vp_spec vp_spec_make(int p, int m) {
    vp_spec spec = {.p = p,
                    .m = m,
                    .costs = vp_costs_default(),
                    .mem = vp_memcfg_default(),
                    .time_limit_s = VP_PLAN_TIME_LIMIT_S};
    return spec;
}

double vp_spec_max_ops(const vp_spec *spec) {
    double stages = (double)spec->p * (spec->v > 2 ? spec->v : 2);
    return ((spec->recompute != VP_RECOMPUTE_NONE ? 4.0 : 3.0) +
            (spec->offload.policy != VP_OFFLOAD_NONE ? 2.0 : 0.0)) *
               stages * (double)spec->m +
           (spec->vocab_parallel ? 4.0 * spec->p * (double)spec->m : 0.0);
}

vp_status vp_spec_check_size(const vp_spec *spec, vp_error *err) {
    long limit = spec->max_ops > 0 ? spec->max_ops : VP_MAX_OPS_DEFAULT;
    double ops = vp_spec_max_ops(spec);
    if (ops <= (double)limit)
        return VP_OK;
    return vp__fail(err, VP_ELIMIT,
                    "p=%d, m=%d may need up to %.3g ops, over the limit of %ld (about %.0f GB "
                    "to build and simulate); raise the limit (--max-ops) if the machine has "
                    "the memory",
                    spec->p, spec->m, ops, limit, ops * 50 / 1e9);
}

vp_status vp__check_pm(const char *name, const vp_spec *spec, vp_error *err) {
    if (spec->p < 1)
        return vp__fail(err, VP_EINVAL, "%s needs p >= 1 (got %d)", name, spec->p);
    if (spec->m < 1)
        return vp__fail(err, VP_EINVAL, "%s needs m >= 1 (got %d)", name, spec->m);
    return VP_OK;
}

vp_status vp__recompute_in_place(vp_schedule **s, vp_recompute mode, vp_error *err) {
    vp_schedule *r = NULL;
    vp_status rc = vp_schedule_recompute(*s, mode, &r, err);
    vp_schedule_free(*s);
    *s = r;
    return rc;
}

vp_status vp__offload_in_place(vp_schedule **s, const vp_spec *spec, vp_error *err) {
    vp_schedule *o = NULL;
    vp_status rc = vp_schedule_offload(*s, &spec->costs, &spec->mem, &spec->offload, &o, err);
    vp_schedule_free(*s);
    *s = o;
    return rc;
}

vp_status vp__spec_cost_model(const vp_spec *spec, vp_shape shape, vp_cost_model **out,
                              vp_error *err) {
    vp_schedule *s = NULL;
    vp_status rc = vp_schedule_new("shape", shape, &s, err);
    if (rc == VP_OK)
        rc = vp_cost_model_new(s, &spec->costs, &spec->mem, out, err);
    vp_schedule_free(s);
    return rc;
}

/* Replaces *s by its vocabulary-parallel version under the spec's costs. */
static vp_status vocab_in_place(vp_schedule **s, const vp_spec *spec, vp_error *err) {
    vp_cost_model *cm = NULL;
    vp_schedule *v = NULL;
    vp_status rc = vp_cost_model_new(*s, &spec->costs, &spec->mem, &cm, err);
    if (rc == VP_OK)
        rc = vp_vocab_place(*s, cm, &v, err);
    vp_cost_model_free(cm);
    vp_schedule_free(*s);
    *s = v;
    return rc;
}

vp_status vp_spec_finish(const vp_spec *spec, vp_schedule **s, vp_error *err) {
    vp_status rc = VP_OK;
    if (spec->recompute != VP_RECOMPUTE_NONE)
        rc = vp__recompute_in_place(s, spec->recompute, err);
    if (rc == VP_OK && spec->vocab_parallel)
        rc = vocab_in_place(s, spec, err);
    if (rc == VP_OK && spec->offload.policy != VP_OFFLOAD_NONE)
        rc = vp__offload_in_place(s, spec, err);
    if (rc != VP_OK) {
        vp_schedule_free(*s);
        *s = NULL;
    }
    return rc;
}

vp_status vp_family_build(const char *name, const vp_spec *spec, vp_schedule **out, vp_error *err) {
    *out = NULL;
    const vp_family *f = vp_family_find(name);
    if (!f) {
        const vp_family *near = vp_family_nearest(name);
        return vp__fail(err, VP_EINVAL, "unknown family '%s'%s", name,
                        vp__did_you_mean(near ? near->name : NULL, "vpipe list").text);
    }
    vp_status rc = vp_spec_check_size(spec, err);
    if (rc == VP_OK)
        rc = f->build(spec, out, err);
    if (rc == VP_OK)
        rc = vp_spec_finish(spec, out, err);
    if (rc != VP_OK) {
        vp_schedule_free(*out);
        *out = NULL;
        return rc;
    }
    rc = vp_schedule_validate(*out, err);
    if (rc != VP_OK) {
        vp_schedule_free(*out);
        *out = NULL;
    }
    return rc;
}
