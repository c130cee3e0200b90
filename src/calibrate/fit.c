/* Calibration: the accelerator-and-framework constants fitted to measured runs.
 *
 * Each constant enters as a variable x the step time is (piecewise) linear in: the
 * matrix multiplies' time multiplier (base gemm_efficiency / fitted), the scale of the
 * memory-bound traffic, communication's time multiplier, the per-layer overhead in 10 us
 * and the per-chunk overhead in 100 us, the attention kernels' time multiplier. The time
 * constants are fitted by Levenberg-Marquardt on r_i = log(predicted / measured
 * throughput), each x pulled towards the base's value with a weight that makes one prior
 * spread cost as much as a 2% misfit of one run (the spread between software versions
 * anchors.md reports), so runs that cannot tell a constant apart leave it near the base.
 * The Jacobian is taken by forward differences, each run re-timed on the schedule built
 * for it once with the base accelerator. Memory, linear in its two constants (a constant
 * per GPU and a fraction of the allocated bytes), is fitted in closed form on the peaks
 * the runs measured, relative to them, with the same pull. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "calibrate/calibrate_internal.h"

#define GIB 1073741824.0
#define NOISE 0.02 /* one run's misfit that one prior spread is worth */

/* ---- the constants ---------------------------------------------------------------------- */

typedef struct constant_def {
    const char *name, *what;
    double scale; /* prior spread of x */
    bool memory;  /* fitted on memory peaks */
} constant_def;

static const constant_def defs[VP_FIT_COUNT] = {
    {"gemm", "matrix-multiply efficiency", 0.25, false},
    {"memory", "memory-bound traffic (x base)", 1.0, false},
    {"comm", "communication efficiency", 0.3, false},
    {"layer", "per-layer overhead, us", 3, false},
    {"chunk", "per-chunk overhead, us", 3, false},
    {"attention", "attention efficiency (F)", 0.3, false},
    {"context", "memory per GPU, GiB", 0.5, true},
    {"fragmentation", "memory per allocated byte", 0.05, true},
};

const char *vp_calibrate_constant_name(int k) {
    return k >= 0 && k < VP_FIT_COUNT ? defs[k].name : NULL;
}

vp_status vp_calibrate_constants_parse(const char *list, unsigned *bits, vp_error *err) {
    *bits = 0;
    for (const char *at = list; *at;) {
        size_t n = strcspn(at, ",");
        int k = 0;
        while (k < VP_FIT_COUNT && (strlen(defs[k].name) != n || strncmp(at, defs[k].name, n)))
            k++;
        if (k == VP_FIT_COUNT) {
            char word[64];
            snprintf(word, sizeof word, "%.*s", (int)(n < sizeof word ? n : 0), at);
            vp__nearest near = {.word = word};
            for (k = 0; k < VP_FIT_COUNT; k++)
                vp__nearest_offer(&near, defs[k].name);
            return vp__fail(err, VP_EINVAL, "unknown constant '%.*s'%s", (int)n, at,
                            vp__did_you_mean(near.best, "known: gemm, memory, comm, layer, chunk, "
                                                        "attention, context, fragmentation")
                                .text);
        }
        *bits |= 1u << k;
        at += n + (at[n] == ',');
    }
    return *bits ? VP_OK : vp__fail(err, VP_EINVAL, "no constant named to fit");
}

/* The variable of constant k for g, fitted from base. */
static double x_of(const vp_gpu *base, const vp_gpu *g, int k) {
    switch (k) {
    case VP_FIT_GEMM:
        return base->gemm_efficiency / g->gemm_efficiency;
    case VP_FIT_MEMORY_BOUND:
        return base->act_traffic_f > 0 ? g->act_traffic_f / base->act_traffic_f : 1;
    case VP_FIT_COMM:
        return base->comm_efficiency / g->comm_efficiency;
    case VP_FIT_LAYER:
        return g->layer_overhead / 1e-5;
    case VP_FIT_CHUNK:
        return g->chunk_overhead / 1e-4;
    case VP_FIT_ATTENTION:
        return base->attn_efficiency_f / g->attn_efficiency_f;
    case VP_FIT_CONTEXT:
        return g->context_bytes / GIB;
    default:
        return g->frag_fraction;
    }
}

/* Sets constant k of g to variable x (clamped into its range), fitted from base. */
static double set_x(const vp_gpu *base, vp_gpu *g, int k, double x) {
    double lo[VP_FIT_COUNT] = {base->gemm_efficiency,
                               0,
                               base->comm_efficiency,
                               0,
                               0,
                               fmax(base->attn_efficiency_f, base->attn_efficiency_b),
                               0,
                               0};
    double hi[VP_FIT_COUNT] = {50, 50, 50, 1000, 1000, 50, 1024, 2};
    x = fmin(fmax(x, lo[k]), hi[k]);
    switch (k) {
    case VP_FIT_GEMM:
        g->gemm_efficiency = base->gemm_efficiency / x;
        break;
    case VP_FIT_MEMORY_BOUND:
        g->act_traffic_f = base->act_traffic_f * x;
        g->act_traffic_b = base->act_traffic_b * x;
        break;
    case VP_FIT_COMM:
        g->comm_efficiency = base->comm_efficiency / x;
        break;
    case VP_FIT_LAYER:
        g->layer_overhead = x * 1e-5;
        break;
    case VP_FIT_CHUNK:
        g->chunk_overhead = x * 1e-4;
        break;
    case VP_FIT_ATTENTION:
        g->attn_efficiency_f = base->attn_efficiency_f / x;
        g->attn_efficiency_b = base->attn_efficiency_b / x;
        break;
    case VP_FIT_CONTEXT:
        g->context_bytes = x * GIB;
        break;
    default:
        g->frag_fraction = x;
    }
    return x;
}

/* The value printed for constant k of g. */
static double shown(const vp_gpu *g, int k) {
    double v[VP_FIT_COUNT] = {g->gemm_efficiency,      g->act_traffic_f,
                              g->comm_efficiency,      g->layer_overhead * 1e6,
                              g->chunk_overhead * 1e6, g->attn_efficiency_f,
                              g->context_bytes / GIB,  g->frag_fraction};
    return v[k];
}

/* ---- the runs --------------------------------------------------------------------------- */

typedef struct prepared {
    int run;
    vp__run_ready ready;
    vp_schedule *sched;
    double measured; /* tokens/s per GPU */
    bool has_memory;
    double measured_memory;
    vp_peak_kind kind;
} prepared;

/* A run's figures at one accelerator: throughput, and at its peak rank the allocated
 * bytes and what the process adds beside them (for the memory fit). */
typedef struct priced {
    double tokens, allocated, beside;
} priced;

typedef struct fit {
    const vp_run_set *set;
    vp_gpu base;
    prepared *p;
    int n;
} fit;

static vp_status price_at(const fit *F, int i, const vp_gpu *g, priced *out, vp_error *err) {
    const prepared *pr = &F->p[i];
    vp_price_setup su = {
        .arch = &pr->ready.arch, .gpu = g, .work = &pr->ready.work, .split = VP_SPLIT_EVEN};
    vp_price_result *r = NULL;
    vp_status rc = vp_price_schedule(&su, pr->sched, &r, err);
    if (rc != VP_OK)
        return rc;
    const vp_rank_memory *m = &r->memory[r->memory_max_rank];
    out->tokens = r->tokens_per_s_per_gpu;
    out->allocated = m->allocated;
    out->beside = m->comm + m->reserve;
    vp_price_result_free(r);
    return VP_OK;
}

/* The accelerator every run names (or base when given), checked alike. */
static vp_status choose_base(const vp_calibrate_request *req, vp_gpu *out, vp_error *err) {
    const vp_run_set *set = req->runs;
    const char *named = NULL;
    for (int i = 0; i < set->n; i++) {
        const vp_run *r = &set->runs[i];
        if (r->why_not[0])
            return vp__fail(err, VP_EUNSUPPORTED, "%s:%d: %s", set->name, r->line, r->why_not);
        if (!r->gpu[0])
            continue;
        if (named && strcmp(named, r->gpu))
            return vp__fail(err, VP_EINVAL,
                            "%s:%d: gpu %s, but an earlier run names %s: a calibration fits "
                            "one accelerator",
                            set->name, r->line, r->gpu, named);
        named = r->gpu;
    }
    if (req->base) {
        *out = *req->base;
    } else if (!named) {
        return vp__fail(err, VP_EINVAL,
                        "%s names no accelerator: fill the gpu column or give a base (--gpu)",
                        set->name);
    } else {
        vp__run_ready probe; /* resolves the name as a run does (paths from the file) */
        vp_status rc = vp__run_resolve(set, 0, NULL, &probe, err);
        if (rc != VP_OK)
            return rc;
        *out = probe.gpu;
    }
    if (out->efficiency > 0)
        return vp__fail(err, VP_EINVAL,
                        "accelerator %s prices every pass at one efficiency: calibration fits "
                        "the kernel model (a preset, or a file without \"efficiency\")",
                        out->name);
    return VP_OK;
}

/* The most model FLOPs a run can run at, as a share of g's 16-bit peak: 1, or its FP8
 * recipe's peak over it (the multiplies' ceiling; every other pass is slower). */
static double mfu_ceiling(const vp_gpu *g, vp_fp8 fp8) {
    double peak = fp8 == VP_FP8_OFF     ? g->peak_flops
                  : fp8 == VP_FP8_MXFP8 ? g->mxfp8_peak_flops
                                        : g->fp8_peak_flops;
    return peak / g->peak_flops;
}

/* Resolves, chooses and builds every run once with the base; a measured throughput that
 * would run the model's FLOPs beyond the accelerator's peak is refused. */
static vp_status prepare(fit *F, vp_error *err) {
    F->p = vp__calloc((size_t)F->set->n, sizeof *F->p);
    if (!F->p)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; i < F->set->n; i++) {
        const vp_run *run = &F->set->runs[i];
        prepared *pr = &F->p[F->n];
        vp_run_price price;
        vp_status rc = vp__run_choose(F->set, i, &F->base, &pr->ready, &price, err);
        vp_price_setup su = {.arch = &pr->ready.arch,
                             .gpu = &F->base,
                             .work = &pr->ready.work,
                             .split = VP_SPLIT_EVEN};
        vp_spec spec = vp_spec_make(pr->ready.p, pr->ready.m);
        spec.v = pr->ready.v;
        vp_price_result *r = NULL;
        if (rc == VP_OK)
            rc = vp_price_family(&su, pr->ready.family, &spec, &r, &pr->sched, err);
        vp_price_result_free(r);
        if (rc != VP_OK)
            return rc;
        F->n++; /* release() frees its schedule from here on */
        pr->run = i;
        pr->measured = run->tokens_per_s_per_gpu
                           ? run->tokens_per_s_per_gpu
                           : price.tokens_per_s_per_gpu * price.step_time_s / run->step_time_s;
        double mfu = price.mfu * pr->measured / price.tokens_per_s_per_gpu;
        double most = mfu_ceiling(&F->base, run->fp8);
        if (mfu > most)
            return vp__fail(err, VP_EINVAL,
                            "%s:%d: %.6g tokens/s per GPU would run %s's FLOPs at %.3g times "
                            "%s's 16-bit peak (the most is %.3g): check the run's model and "
                            "configuration, and that step_time_s is seconds a step",
                            F->set->name, run->line, pr->measured, pr->ready.arch.name, mfu,
                            F->base.name, most);
        pr->has_memory = run->peak_mem_gib > 0;
        pr->measured_memory = run->peak_mem_gib * GIB;
        pr->kind = run->mem_kind;
    }
    return VP_OK;
}

static void release(fit *F) {
    for (int i = 0; i < F->n; i++)
        vp_schedule_free(F->p[i].sched);
    free(F->p);
}

/* ---- least squares ------------------------------------------------------------------------ */

/* Solves A x = b (k x k, row-major, k <= VP_FIT_COUNT) by Gaussian elimination with
 * partial pivoting; A and b are destroyed. Returns false when A is singular. */
static bool solve(int k, double *A, double *b, double *x) {
    for (int c = 0; c < k; c++) {
        int piv = c;
        for (int r = c + 1; r < k; r++)
            piv = fabs(A[r * k + c]) > fabs(A[piv * k + c]) ? r : piv;
        if (fabs(A[piv * k + c]) < 1e-300)
            return false;
        for (int j = 0; j < k; j++) {
            double t = A[c * k + j];
            A[c * k + j] = A[piv * k + j];
            A[piv * k + j] = t;
        }
        double t = b[c];
        b[c] = b[piv];
        b[piv] = t;
        for (int r = c + 1; r < k; r++) {
            double f = A[r * k + c] / A[c * k + c];
            for (int j = c; j < k; j++)
                A[r * k + j] -= f * A[c * k + j];
            b[r] -= f * b[c];
        }
    }
    for (int c = k - 1; c >= 0; c--) {
        double s = b[c];
        for (int j = c + 1; j < k; j++)
            s -= A[c * k + j] * x[j];
        x[c] = s / A[c * k + c];
    }
    return true;
}

/* The time constants being fitted: their indices, current and prior values. */
typedef struct params {
    int k, idx[VP_FIT_COUNT];
    double x[VP_FIT_COUNT], prior[VP_FIT_COUNT];
} params;

static void apply(const fit *F, const params *P, vp_gpu *g) {
    *g = F->base;
    for (int j = 0; j < P->k; j++)
        set_x(&F->base, g, P->idx[j], P->x[j]);
}

/* Residuals r[n] (log predicted over measured throughput) at P, and the cost with the
 * prior's pull. */
static vp_status residuals(const fit *F, const params *P, double *r, double *cost, vp_error *err) {
    vp_gpu g;
    apply(F, P, &g);
    *cost = 0;
    for (int i = 0; i < F->n; i++) {
        priced pc;
        vp_status rc = price_at(F, i, &g, &pc, err);
        if (rc != VP_OK)
            return rc;
        r[i] = log(pc.tokens / F->p[i].measured);
        *cost += r[i] * r[i] / (NOISE * NOISE);
    }
    for (int j = 0; j < P->k; j++) {
        double d = (P->x[j] - P->prior[j]) / defs[P->idx[j]].scale;
        *cost += d * d;
    }
    return VP_OK;
}

/* The Jacobian J[n][k] of the residuals at P (forward differences), r given. */
static vp_status jacobian(const fit *F, const params *P, const double *r, double *J,
                          double *scratch, vp_error *err) {
    for (int j = 0; j < P->k; j++) {
        params Q = *P;
        double h = 1e-3 * fmax(defs[P->idx[j]].scale, fabs(P->x[j]));
        vp_gpu g = F->base;
        Q.x[j] = set_x(&F->base, &g, P->idx[j], P->x[j] + h);
        if (Q.x[j] == P->x[j]) /* at the upper bound: step down */
            Q.x[j] = set_x(&F->base, &g, P->idx[j], P->x[j] - h);
        double cost;
        vp_status rc = residuals(F, &Q, scratch, &cost, err);
        if (rc != VP_OK)
            return rc;
        double step = Q.x[j] - P->x[j];
        for (int i = 0; i < F->n; i++)
            J[i * P->k + j] = step != 0 ? (scratch[i] - r[i]) / step : 0;
    }
    return VP_OK;
}

/* The normal equations of the rows not equal to skip (-1: all) at P:
 * A = J'J / s^2 + diag(1/scale^2), g = J'r / s^2 + (x - prior)/scale^2. */
static void normal(const params *P, const double *J, const double *r, int n, int skip, double *A,
                   double *g) {
    int k = P->k;
    for (int a = 0; a < k; a++) {
        double scale = defs[P->idx[a]].scale;
        g[a] = (P->x[a] - P->prior[a]) / (scale * scale);
        for (int b = 0; b < k; b++)
            A[a * k + b] = a == b ? 1 / (scale * scale) : 0;
    }
    for (int i = 0; i < n; i++) {
        if (i == skip)
            continue;
        for (int a = 0; a < k; a++) {
            g[a] += J[i * k + a] * r[i] / (NOISE * NOISE);
            for (int b = 0; b < k; b++)
                A[a * k + b] += J[i * k + a] * J[i * k + b] / (NOISE * NOISE);
        }
    }
}

/* One damped step from P: P + delta (clamped), delta solving (A + mu diag A) delta = -g. */
static params step_from(const fit *F, const params *P, const double *A, const double *g, double mu,
                        int k) {
    double M[VP_FIT_COUNT * VP_FIT_COUNT], b[VP_FIT_COUNT], d[VP_FIT_COUNT];
    for (int a = 0; a < k; a++) {
        b[a] = -g[a];
        for (int c = 0; c < k; c++)
            M[a * k + c] = A[a * k + c] + (a == c ? mu * A[a * k + a] : 0);
    }
    params Q = *P;
    if (!solve(k, M, b, d))
        return Q;
    vp_gpu scratch = F->base;
    for (int a = 0; a < k; a++)
        Q.x[a] = set_x(&F->base, &scratch, P->idx[a], P->x[a] + d[a]);
    return Q;
}

/* Levenberg-Marquardt from P's prior; leaves J and r at the solution. */
static vp_status minimise(const fit *F, params *P, double *J, double *r, double *scratch,
                          int *iterations, vp_error *err) {
    double cost, A[VP_FIT_COUNT * VP_FIT_COUNT], g[VP_FIT_COUNT], mu = 1e-3;
    vp_status rc = residuals(F, P, r, &cost, err);
    for (*iterations = 0; rc == VP_OK && *iterations < 30; (*iterations)++) {
        rc = jacobian(F, P, r, J, scratch, err);
        if (rc != VP_OK)
            break;
        normal(P, J, r, F->n, -1, A, g);
        bool improved = false;
        double tried = cost;
        for (int tries = 0; tries < 8 && rc == VP_OK && !improved; tries++) {
            params Q = step_from(F, P, A, g, mu, P->k);
            rc = residuals(F, &Q, scratch, &tried, err);
            improved = rc == VP_OK && tried < cost;
            if (improved) {
                *P = Q;
                memcpy(r, scratch, (size_t)F->n * sizeof *r);
                mu = fmax(mu / 4, 1e-7);
            } else {
                mu *= 8;
            }
        }
        if (rc != VP_OK || !improved)
            break;
        double gain = cost - tried;
        cost = tried;
        if (gain < 1e-6 * (1 + cost))
            break;
    }
    if (rc == VP_OK) { /* r and J at the solution, for the errors and leave-one-out */
        rc = residuals(F, P, r, &cost, err);
        if (rc == VP_OK)
            rc = jacobian(F, P, r, J, scratch, err);
    }
    return rc;
}

/* ---- the fit ------------------------------------------------------------------------------ */

static int count_bits(unsigned bits) {
    int n = 0;
    for (; bits; bits &= bits - 1)
        n++;
    return n;
}

/* The constants to fit, checked against what the runs measured. */
static vp_status constants_asked(const vp_calibrate_request *req, const fit *F, unsigned *out,
                                 vp_error *err) {
    unsigned time = 0, memory = 0;
    int peaks = 0;
    for (int i = 0; i < F->n; i++)
        peaks += F->p[i].has_memory && F->p[i].kind != VP_MEM_ALLOCATED;
    for (int k = 0; k < VP_FIT_COUNT; k++)
        *(defs[k].memory ? &memory : &time) |= (req->fit ? req->fit : ~0u) & (1u << k);
    if (!req->fit) {
        time &= ~(1u << VP_FIT_ATTENTION);
        memory = peaks ? memory : 0;
    }
    if (req->fit && count_bits(time) > F->n)
        return vp__fail(err, VP_EINVAL,
                        "%d runs cannot fit %d time constants: measure more runs, or ask for "
                        "fewer constants",
                        F->n, count_bits(time));
    if (req->fit && count_bits(memory) > peaks)
        return vp__fail(err, VP_EINVAL,
                        "%d runs with a measured peak (peak_mem_gib, mem_kind process or "
                        "reserved) cannot fit %d memory constants",
                        peaks, count_bits(memory));
    *out = time | memory;
    return VP_OK;
}

/* Posterior standard deviations of P's variables from A (normal equations at the
 * solution), into sd[k] (x units). */
static void deviations(const params *P, const double *A, double *sd) {
    int k = P->k;
    for (int j = 0; j < k; j++) {
        double M[VP_FIT_COUNT * VP_FIT_COUNT], e[VP_FIT_COUNT] = {0}, col[VP_FIT_COUNT];
        memcpy(M, A, sizeof(double) * (size_t)(k * k));
        e[j] = 1;
        sd[j] = solve(k, M, e, col) && col[j] > 0 ? sqrt(col[j]) : INFINITY;
    }
}

/* Standard deviation of constant k in the printed units from sd_x at x. */
static double shown_sd(const vp_gpu *base, int k, double x, double sd_x) {
    switch (k) {
    case VP_FIT_GEMM:
        return base->gemm_efficiency / (x * x) * sd_x;
    case VP_FIT_MEMORY_BOUND:
        return base->act_traffic_f * sd_x;
    case VP_FIT_COMM:
        return base->comm_efficiency / (x * x) * sd_x;
    case VP_FIT_LAYER:
        return 10 * sd_x;
    case VP_FIT_CHUNK:
        return 100 * sd_x;
    case VP_FIT_ATTENTION:
        return base->attn_efficiency_f / (x * x) * sd_x;
    default:
        return sd_x;
    }
}

/* The time constants: fit, deviations, and every run's fitted and left-out figures. */
static vp_status fit_time(const fit *F, unsigned asked, vp_calibration *c, vp_error *err) {
    params P = {0};
    for (int k = 0; k < VP_FIT_COUNT; k++)
        if ((asked & (1u << k)) && !defs[k].memory) {
            P.idx[P.k] = k;
            P.x[P.k] = P.prior[P.k] = x_of(&F->base, &F->base, k);
            P.k++;
        }
    double *J = vp__calloc((size_t)F->n * (P.k + 2), sizeof *J);
    double *r = J ? J + (size_t)F->n * P.k : NULL, *scratch = r ? r + F->n : NULL;
    if (!J)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = P.k ? minimise(F, &P, J, r, scratch, &c->iterations, err)
                       : residuals(F, &P, r, &(double){0}, err);
    double A[VP_FIT_COUNT * VP_FIT_COUNT], g[VP_FIT_COUNT], sd[VP_FIT_COUNT];
    if (rc == VP_OK) {
        char name[sizeof c->gpu.name];
        memcpy(name, c->gpu.name, sizeof name);
        apply(F, &P, &c->gpu);
        memcpy(c->gpu.name, name, sizeof name);
        normal(&P, J, r, F->n, -1, A, g);
        deviations(&P, A, sd);
        for (int j = 0; j < P.k; j++) {
            int k = P.idx[j];
            c->sd[k] = shown_sd(&F->base, k, P.x[j], sd[j]);
            c->pinned |= sd[j] < 0.3 * defs[k].scale ? 1u << k : 0;
        }
    }
    for (int i = 0; i < F->n && rc == VP_OK; i++) {
        vp_calibration_run *cr = &c->runs[i];
        cr->run = F->p[i].run;
        cr->measured = F->p[i].measured;
        cr->fitted = F->p[i].measured * exp(r[i]);
        cr->error = exp(r[i]) - 1;
        /* the fit without run i: one Gauss-Newton step from the full fit, whose gradient
           (zero inside the bounds) loses exactly run i's share */
        normal(&P, J, r, F->n, i, A, g);
        for (int a = 0; a < P.k; a++)
            g[a] = -J[i * P.k + a] * r[i] / (NOISE * NOISE);
        params Q = step_from(F, &P, A, g, 0, P.k);
        vp_gpu left;
        apply(F, &Q, &left);
        priced pc;
        rc = price_at(F, i, &left, &pc, err);
        cr->loo_error = rc == VP_OK ? pc.tokens / F->p[i].measured - 1 : 0;
    }
    free(J);
    return rc;
}

/* Memory of run i as a line in the memory variables: fitted = a + q . x, where a holds
 * the tensors (allocated), what the process adds beside them (communication buffers, the
 * reserve) and the constants not fitted, and q the coefficients of the fitted ones (the
 * context per GPU for a process peak, the allocated bytes for the fraction unless the run
 * measured allocated bytes only). */
static void memory_line(const vp_gpu *g, const priced *pc, vp_peak_kind kind, const int *idx, int k,
                        double *a, double *q) {
    bool process = kind == VP_MEM_PROCESS, allocated = kind == VP_MEM_ALLOCATED;
    double ctx = process ? g->context_bytes : 0, frag = allocated ? 0 : g->frag_fraction;
    for (int j = 0; j < k; j++) {
        if (idx[j] == VP_FIT_CONTEXT) {
            q[j] = process ? GIB : 0;
            ctx = 0;
        } else {
            q[j] = allocated ? 0 : pc->allocated;
            frag = 0;
        }
    }
    *a = pc->allocated * (1 + frag) + ctx + (process ? pc->beside : 0);
}

/* Solves the memory variables without row skip (-1: all) into x[k]. */
static void memory_solve(const double *Q, const double *t, int rows, int skip, const int *idx,
                         int k, const double *prior, double *x) {
    double A[4] = {0}, b[2];
    for (int a = 0; a < k; a++) {
        double s = defs[idx[a]].scale;
        A[a * k + a] = 1 / (s * s);
        b[a] = prior[a] / (s * s);
    }
    for (int i = 0; i < rows; i++)
        for (int a = 0; a < k && i != skip; a++) {
            b[a] += Q[i * 2 + a] * t[i] / (NOISE * NOISE);
            for (int c = 0; c < k; c++)
                A[a * k + c] += Q[i * 2 + a] * Q[i * 2 + c] / (NOISE * NOISE);
        }
    if (!solve(k, A, b, x))
        memcpy(x, prior, sizeof *x * (size_t)k);
}

/* The memory constants: fitted in closed form, then every peak fitted and left out. */
static vp_status fit_memory(const fit *F, unsigned asked, vp_calibration *c, vp_error *err) {
    int idx[2], k = 0, rows = 0;
    double prior[2], x[2], *Q = vp__calloc((size_t)F->n * 3 + 1, sizeof *Q);
    double *t = Q ? Q + 2 * F->n : NULL;
    int *which = vp__calloc((size_t)F->n + 1, sizeof *which); /* run of each memory row */
    if (!Q || !which) {
        free(Q);
        free(which);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    for (int kk = VP_FIT_CONTEXT; kk <= VP_FIT_FRAGMENTATION; kk++)
        if (asked & (1u << kk)) {
            prior[k] = x_of(&F->base, &c->gpu, kk);
            idx[k++] = kk;
        }
    vp_status rc = VP_OK;
    priced *pc = vp__calloc((size_t)F->n + 1, sizeof *pc);
    if (!pc)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; i < F->n && rc == VP_OK; i++) {
        if (!F->p[i].has_memory)
            continue;
        rc = price_at(F, i, &c->gpu, &pc[i], err);
        double a, q[2];
        memory_line(&c->gpu, &pc[i], F->p[i].kind, idx, k, &a, q);
        for (int j = 0; j < k; j++)
            Q[rows * 2 + j] = q[j] / F->p[i].measured_memory;
        t[rows] = (F->p[i].measured_memory - a) / F->p[i].measured_memory;
        which[rows++] = i;
    }
    if (rc == VP_OK && k) {
        memory_solve(Q, t, rows, -1, idx, k, prior, x);
        for (int j = 0; j < k; j++)
            x[j] = set_x(&F->base, &c->gpu, idx[j], x[j]);
    }
    for (int row = 0; row < rows && rc == VP_OK; row++) {
        int i = which[row];
        vp_calibration_run *cr = &c->runs[i];
        double a, q[2], left[2];
        memory_line(&c->gpu, &pc[i], F->p[i].kind, idx, 0, &a, q);
        cr->has_memory = true;
        cr->measured_memory = F->p[i].measured_memory;
        cr->fitted_memory = a;
        cr->memory_error = a / cr->measured_memory - 1;
        double loo = a;
        if (k) {
            memory_solve(Q, t, rows, row, idx, k, prior, left);
            vp_gpu g = c->gpu;
            for (int j = 0; j < k; j++)
                set_x(&F->base, &g, idx[j], left[j]);
            memory_line(&g, &pc[i], F->p[i].kind, idx, 0, &loo, q);
        }
        cr->loo_memory_error = loo / cr->measured_memory - 1;
        c->memory_runs++;
    }
    for (int j = 0; j < k && rows; j++) { /* pinned when the peaks shrink the spread */
        double info = 0;
        for (int row = 0; row < rows; row++)
            info += Q[row * 2 + j] * Q[row * 2 + j] / (NOISE * NOISE);
        double s = defs[idx[j]].scale, sd = 1 / sqrt(info + 1 / (s * s));
        c->sd[idx[j]] = sd;
        c->pinned |= sd < 0.3 * s ? 1u << idx[j] : 0;
    }
    free(pc);
    free(Q);
    free(which);
    return rc;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Means, medians and worsts of the errors; the fitted accelerator's expected error. */
static vp_status summarise(vp_calibration *c, const vp_run_set *set, vp_error *err) {
    double *loo = vp__calloc((size_t)c->n + 1, sizeof *loo);
    if (!loo)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; i < c->n; i++) {
        const vp_calibration_run *r = &c->runs[i];
        loo[i] = fabs(r->loo_error);
        c->fit_mean += fabs(r->error) / c->n;
        c->fit_worst = fmax(c->fit_worst, fabs(r->error));
        c->loo_mean += loo[i] / c->n;
        c->loo_worst = fmax(c->loo_worst, loo[i]);
        if (r->has_memory) {
            c->memory_fit_mean += fabs(r->memory_error) / c->memory_runs;
            c->memory_loo_mean += fabs(r->loo_memory_error) / c->memory_runs;
            c->memory_loo_worst = fmax(c->memory_loo_worst, fabs(r->loo_memory_error));
        }
    }
    qsort(loo, (size_t)c->n, sizeof *loo, by_value);
    c->loo_median = c->n % 2 ? loo[c->n / 2] : (loo[c->n / 2 - 1] + loo[c->n / 2]) / 2;
    free(loo);
    vp_expected_error *e = &c->gpu.expected;
    *e = (vp_expected_error){.step_mean = c->loo_mean,
                             .step_worst = c->loo_worst,
                             .memory_mean = c->memory_loo_mean,
                             .memory_worst = c->memory_loo_worst,
                             .runs = c->n,
                             .memory_runs = c->memory_runs};
    const char *file = strrchr(set->name, '/');
    snprintf(e->basis, sizeof e->basis, "calibration on %d runs of %.40s (leave-one-out)", c->n,
             file ? file + 1 : set->name);
    return VP_OK;
}

vp_status vp_calibrate_fit(const vp_calibrate_request *req, vp_calibration **out, vp_error *err) {
    *out = NULL;
    double t0 = vp__now_ms();
    fit F = {.set = req->runs};
    vp_calibration *c = vp__calloc(1, sizeof *c);
    if (!c)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    unsigned asked = 0;
    vp_status rc = choose_base(req, &F.base, err);
    if (rc == VP_OK)
        rc = prepare(&F, err);
    if (rc == VP_OK)
        rc = constants_asked(req, &F, &asked, err);
    if (rc == VP_OK && !(c->runs = vp__calloc((size_t)F.n, sizeof *c->runs)))
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK) {
        c->n = F.n;
        c->base = c->gpu = F.base;
        c->asked = asked;
        snprintf(c->gpu.name, sizeof c->gpu.name, "%.50s%s", req->name ? req->name : F.base.name,
                 req->name ? "" : "-calibrated");
        for (int k = 0; k < VP_FIT_COUNT; k++)
            c->base_value[k] = shown(&F.base, k);
        rc = fit_time(&F, asked, c, err);
    }
    if (rc == VP_OK)
        rc = fit_memory(&F, asked, c, err);
    if (rc == VP_OK)
        rc = summarise(c, req->runs, err);
    release(&F);
    if (rc != VP_OK) {
        vp_calibrate_fit_free(c);
        return rc;
    }
    for (int k = 0; k < VP_FIT_COUNT; k++)
        c->value[k] = shown(&c->gpu, k);
    c->elapsed_s = (vp__now_ms() - t0) / 1e3;
    *out = c;
    return VP_OK;
}

void vp_calibrate_fit_free(vp_calibration *c) {
    if (!c)
        return;
    free(c->runs);
    free(c);
}
