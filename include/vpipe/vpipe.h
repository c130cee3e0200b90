/* vpipe: pipeline-parallel schedules with controllable activation memory.
 *
 * The umbrella header: include it and get the whole API. Modules, each one folder under
 * src/ and one header here, every one depending only on those before it:
 *   base.h      status codes, errors, version, files                       (libc)
 *   schedule.h  the schedule value and its validator                       base
 *   sim.h       costs, memory model, simulator                             schedule
 *   block.h     the building-block framework, V blocks                     sim
 *   families.h  the named schedule generators                              block
 *   plan.h      the memory-budget planner                                  families
 *   io.h        vpipe JSON and PyTorch CSV                                 schedule
 *   price.h     real models and accelerators: bytes per rank, seconds      families
 *   render.h    terminal, SVG and Chrome-trace pictures                    sim
 *   hybrid.h    the DP x TP x PP x microbatch x schedule x recompute       price, plan, io
 *               planner and its exports
 *   calibrate.h measured runs (RUNS.csv): their prices, the accuracy,      price
 *               and accelerator constants fitted to them
 *   request.h   the one front door: every command as a typed request or   hybrid, calibrate,
 *               JSON, answered with the command line's bytes               block, render
 *   model.h     the transformer, its sizes, allocator and optimiser        base
 *   data.h      byte-level text data                                       base
 *   checkpoint.h  durable training state                                   model
 *   runtime.h   training: the single-rank reference and the pipeline       sim, render,
 *                                                                          model, data,
 *                                                                          checkpoint
 *   profile.h   measured pass costs, planning from them, preparing a run   runtime, request
 * See base.h for the conventions every module follows.
 */
#ifndef VPIPE_VPIPE_H
#define VPIPE_VPIPE_H

#include "vpipe/base.h"
#include "vpipe/block.h"
#include "vpipe/calibrate.h"
#include "vpipe/checkpoint.h"
#include "vpipe/data.h"
#include "vpipe/families.h"
#include "vpipe/hybrid.h"
#include "vpipe/io.h"
#include "vpipe/model.h"
#include "vpipe/plan.h"
#include "vpipe/price.h"
#include "vpipe/profile.h"
#include "vpipe/render.h"
#include "vpipe/request.h"
#include "vpipe/runtime.h"
#include "vpipe/schedule.h"
#include "vpipe/sim.h"

#endif
