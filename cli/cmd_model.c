/* vpipe model list | show NAME|FILE: the models and accelerators pricing knows, and one
 * model's dimensions, parameters, saved bytes and FLOPs per pass. */
#include <stddef.h>

#include "cli.h"

static const cli_opt model_opts[] = {
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, json),
     .help = "list: {\"models\": [...], \"gpus\": [...]}; show: the model with its\n"
             "parts' parameters, saved tensors and FLOPs per pass"},
};
static const cli_group model_group = CLI_GROUP("output", model_opts);

static const cli_use uses[] = {
    {&cli_real_group, 0},
    {&cli_recompute_group, offsetof(vp_request, recompute)},
    {&model_group, 0},
};

const cli_command cli_cmd_model = {
    .name = "model",
    .summary = "the real models and accelerators pricing knows; one model in detail",
    .usage = "list [--json]\n"
             "       vpipe model show NAME|FILE [--seq S --mbs B --tp T --sp --flash\n"
             "                                   --recompute R] [--json]",
    .about = "list: the model presets (--model NAME on simulate, compare, render, schedule\n"
             "and plan) with their parameter counts, and the accelerator presets (--gpu).\n"
             "show: a model's dimensions and parameter count, and per part (a transformer\n"
             "layer, the embedding, the final norm + head + loss) its parameters, the bytes\n"
             "one microbatch saves for B (M_B) and for W (M_W), the FLOPs of F, B and W and\n"
             "what recomputation adds, at the given sequence, microbatch and TP setting; then\n"
             "the tensors a layer saves. NAME is a preset, a Hugging Face config.json or\n"
             "vpipe:L,W,H,S (vpipe's own GPT). --gpu accepts a JSON file:\n"
             "  {\"base\": \"a100-80gb\", \"gemm_edge\": 64}  (a preset, keys overridden)\n"
             "  or every key: name, peak_tflops, memory_gib, hbm_tb_s, intra_node_gb_s,\n"
             "  inter_node_gb_s, intra_node_latency_us, inter_node_latency_us,\n"
             "  gpus_per_node, p2p_gb_s (optional) and the speed of a pass: gemm_efficiency,\n"
             "  gemm_edge, act_traffic_f, act_traffic_b (matrix multiplies at a fraction of\n"
             "  peak that grows with their sizes, other kernels at the HBM bandwidth), or\n"
             "  efficiency (one fraction of peak for every pass; overrides a base's model).\n"
             "  `vpipe model list --json` prints the presets so.\n",
    .epilog = "--gpu, --tp-overlap, --pp-overlap, --reserve and --dp-overlap price a pipeline\n"
              "(vpipe simulate FAMILY --model ...): show refuses them, and list takes nothing\n"
              "but --json.\n",
    CLI_USES(uses),
    .operand = "list|show NAME",
    .operand_offset = offsetof(vp_request, operand),
    .operands = 2,
    .request = true,
};
