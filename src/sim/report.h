/* The simulation report as a JSON object, for the modules above sim that extend it (the
 * planner's report), and the one format every report is written in. Internal. */
#ifndef VPIPE_SIM_REPORT_H
#define VPIPE_SIM_REPORT_H

#include <jansson.h>

#include "vpipe/sim.h"

/* The object vp_sim_json writes; new reference, NULL when memory runs out. */
json_t *vp__sim_report(const vp_schedule *s, const vp_sim *sim, const vp_costs *costs);

/* Writes report (consumed, NULL allowed) as a report's text: indented by two spaces, reals
 * to 10 significant digits, a final newline; into a new *text the caller frees with
 * free(). VP_ENOMEM (report NULL or the text); *text is NULL on failure. */
vp_status vp__report_text(json_t *report, char **text, vp_error *err);

#endif
