#pragma once
// GET /metrics: the scheduler's counters in Prometheus' text format.
#include <string>

#include "tools/loom/serve/scheduler.h"

namespace loom::serve {

std::string prometheus_metrics(const SchedulerMetrics &m);

}  // namespace loom::serve
