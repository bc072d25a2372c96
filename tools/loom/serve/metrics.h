#pragma once
// GET /metrics: the scheduler's counters in Prometheus' text format.
#include <string>

#include "tools/loom/serve/slot_scheduler.h"

namespace loom::serve {

std::string prometheus_metrics(const SlotSchedulerMetrics &m);

}  // namespace loom::serve
