// The faults suite's report: its tables on stdout, each row as it comes,
// and the same rows as JSON (--json).
#pragma once

#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/faults_detect.h"
#include "bench/faults_env.h"
#include "bench/faults_healthy.h"

namespace mwbench {
namespace faults {

// What the run is and how part 1 measures, then part 1's table header.
// `partition` null: the partition kind does not run.
void printDetectHeader(const BenchOptions& opt, const std::string& machine, const Partition* partition);
void printKind(const KindResult& r);
// How part 2 measures, then its table header.
void printHealthyHeader(std::size_t bytes);
// Rep n (1-based).
void printRep(int n, const Rep& r);
void printHealthySummary(const std::vector<Rep>& reps, std::size_t bytes);

bool writeJson(const std::string& path, const BenchOptions& opt, const std::string& machine,
               const std::vector<KindResult>& kinds, const std::vector<Rep>& reps);

}  // namespace faults
}  // namespace mwbench
