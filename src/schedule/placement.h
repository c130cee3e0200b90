/* The stage -> device rule of each regular placement (schedule.h's vp_placement_kind), the
 * one place that knows it: construction fills the map from it, the validator checks a
 * map read from a file against the placement it declares. */
#ifndef VPIPE_SCHEDULE_PLACEMENT_H
#define VPIPE_SCHEDULE_PLACEMENT_H

#include "vpipe/schedule.h"

/* The number of stages placement pl needs on p devices given S (a multiple of p for the
 * loop), or 0 when S does not fit it; S itself for the custom placement. */
static inline int vp__placement_stages(vp_placement_kind pl, int p, int S) {
    switch (pl) {
    case VP_PLACE_SINGLE:
        return p;
    case VP_PLACE_LOOP:
        return S % p == 0 ? S : 0;
    case VP_PLACE_V:
    case VP_PLACE_BIDIR:
        return 2 * p;
    default:
        return S;
    }
}

/* What vp__placement_stages asks of S, as a phrase ("= p", "a multiple of p", "= 2p"). */
static inline const char *vp__placement_rule(vp_placement_kind pl) {
    return pl == VP_PLACE_SINGLE ? "= p" : pl == VP_PLACE_LOOP ? "a multiple of p" : "= 2p";
}

/* The device of stage st (0 <= st < S, S fitting the placement) under placement pl on p
 * devices; -1 for the custom placement, which has no rule. */
static inline int vp__placement_device(vp_placement_kind pl, int p, int st) {
    switch (pl) {
    case VP_PLACE_SINGLE:
        return st;
    case VP_PLACE_LOOP:
        return st % p;
    case VP_PLACE_V:
        return st < p ? st : 2 * p - 1 - st;
    case VP_PLACE_BIDIR:
        return st < p ? st : 2 * p - 1 - st;
    default:
        return -1;
    }
}

#endif
