/* Internal declarations shared by the family generators and the registry. */
#ifndef VPIPE_FAMILIES_INTERNAL_H
#define VPIPE_FAMILIES_INTERNAL_H

#include "base/internal.h"
#include "vpipe/families.h"

/* One builder per family (src/families/<family>.c). Each checks the spec against its
 * constraints (VP_EINVAL naming the constraint) and returns a schedule that validates. */
vp_status vp__build_gpipe(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_1f1b(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_1f1br(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_interleaved(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_zbh1(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_zbh2(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_zb1p(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_zb2p(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_zbv(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_vmin(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_vhalf(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_vzb(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_1f1bv(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_dualpipe(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_dualpipev(const vp_spec *spec, vp_schedule **out, vp_error *err);

/* Replaces *s by its recomputing version under mode (vp_schedule_recompute); on failure
 * *s is freed and NULL. */
vp_status vp__recompute_in_place(vp_schedule **s, vp_recompute mode, vp_error *err);

/* Replaces *s by its version offloading as spec->offload says, under spec's costs and
 * memory model (freeing the old one; NULL on failure). */
vp_status vp__offload_in_place(vp_schedule **s, const vp_spec *spec, vp_error *err);

/* The cost model of spec's V shape (p devices, 2p stages on the V placement) under its
 * costs and memory model (caller frees); vp__spec_cost_model's errors. */
vp_status vp__vshape_costs(const vp_spec *spec, vp_cost_model **out, vp_error *err);

/* 1 when no V block whose repeated block holds cap chunk activations can rank before best
 * (ties lost) under cm at p devices and m microbatches: the V search's lower bounds
 * (vsearch.c), so such a block need not be built. */
int vp__vblock_cannot_beat(const vp_cost_model *cm, int p, int m, int cap,
                           const vp_vgrid_metrics *best, vp_vrank rank);

/* The figures vp_vgrid_measure would give s (any schedule of cm's shape): those of
 * vp_simulate under cm. vp_simulate's errors. */
vp_status vp__sim_metrics(const vp_schedule *s, const vp_cost_model *cm, vp_vgrid_metrics *out,
                          vp_error *err);

/* 1 when no V schedule of p devices and m microbatches under cm whose peak is at most limit
 * units can rank before best (a tie in the first figure lost unless ranking by makespan):
 * the V search's lower bounds (vsearch.c) at the most chunk activations the limit holds on
 * device 0. */
int vp__vlimit_cannot_beat(const vp_cost_model *cm, int p, int m, double limit,
                           const vp_vgrid_metrics *best, vp_vrank rank);

/* Checks p >= 1 and m >= 1 for family name. */
vp_status vp__check_pm(const char *name, const vp_spec *spec, vp_error *err);

/* A new cost model of the spec's costs and memory model for schedules of shape (m does
 * not matter). Caller frees with vp_cost_model_free. */
vp_status vp__spec_cost_model(const vp_spec *spec, vp_shape shape, vp_cost_model **out,
                              vp_error *err);

#endif
