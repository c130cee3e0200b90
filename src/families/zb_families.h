/* Builders of the Zero Bubble families (zb.c, zb_auto.c, zbv.c), for the registry. */
#ifndef VPIPE_ZB_FAMILIES_H
#define VPIPE_ZB_FAMILIES_H

#include "families/families_internal.h"

vp_status vp__build_zbh1(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_zbh2(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_zb1p(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_zb2p(const vp_spec *spec, vp_schedule **out, vp_error *err);
vp_status vp__build_zbv(const vp_spec *spec, vp_schedule **out, vp_error *err);

#endif
