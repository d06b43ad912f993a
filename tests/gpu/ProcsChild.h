// The ranks' side of gpu_procs_tests: scenarios that one process per GPU runs when the test
// binary starts copies of itself (`gpu_procs_tests --child SCENARIO ARGS...`, under the launcher,
// so RANK, WORLD_SIZE, LOCAL_RANK and COLLC_RENDEZVOUS are set). Each prints one line per case,
// "PASS name", "FAIL name: why" or "SKIP name: why", and exits 0 unless a case failed; the
// parent test reads those lines.
#ifndef COLLC_TESTS_GPU_PROCSCHILD_H
#define COLLC_TESTS_GPU_PROCSCHILD_H

#include <string>
#include <vector>

namespace collc::procstest {

/// Runs scenario args[0] with its arguments; returns the process exit status.
int runChild(const std::vector<std::string>& args);

} // namespace collc::procstest

#endif // COLLC_TESTS_GPU_PROCSCHILD_H
