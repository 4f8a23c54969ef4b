// The phase of each forward call of an inference trace (attention.h's AttentionPhase): prefill, decode or
// mixed, from the call's shape where it has one (query rows against cached keys), else from its kernels:
// a serving engine's kernel named for its phase, a split-KV combine or cuDNN's short decode tile marking
// its main kernel a decode kernel (so the trace's other fused calls are prefills), the launch and time of
// one kernel that runs both phases, and the keys a paged cache gathered for the call (attnprof record).
#pragma once

#include "analysis/attention.h"
#include "analysis/trace_index.h"

namespace attnprof {

// Sets view.calls[i].phase where the trace tells it; leaves every phase None in training traces (any
// backward call) and where no call decodes.
void label_phases(const TraceIndex& index, AttentionView& view);

}  // namespace attnprof
